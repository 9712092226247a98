"""Cost of the lidar: a hovering swarm among pillars, with a 32-beam lidar at 10 Hz and without
sensors, on both backends, at 100 and 1,000 UAVs.

Per configuration: the mean tick (ms) without sensors and with the lidar (one scan every 40
ticks, so the mean carries 1/40 of a scan), the time of one scan (all N x 32 rays in one
`World.cast_rays` call, ms) and the rays per second of that call. Prints a table and writes
bench/results/perception.json. Both runs of a row share the process, so the ratio means
something on a shared machine; absolute times do not.

    python bench/perception.py            # the four rows
    python bench/perception.py --quick    # 100 UAVs only
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from skyswarm.core.config import ObstacleConfig, SimulationConfig, WorldConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.sensors import SensorsConfig
from skyswarm.uav.sensors.lidar import Lidar, LidarConfig
from skyswarm.uav.swarm import Swarm

RESULTS = Path(__file__).parent / "results" / "perception.json"
BEAMS, PERIOD_S = 32, 0.1  # 10 Hz


def build(physics: str, n: int, lidar: bool) -> tuple[Simulator, Swarm]:
    """n UAVs hovering 3 m apart at 3 m; 32 pillars (1 x 1 x 8 m) on a checkerboard of 3 m
    cells in the first 8 x 8 cells (a fixed count: the fast backend's tick tests every body
    against every box, which is not what this measures)."""
    side = int(np.ceil(np.sqrt(n)))
    pillars = tuple(
        ObstacleConfig("box", (3.0 * i + 1.5, 3.0 * j + 1.5, 4.0), (1.0, 1.0, 8.0))
        for i in range(8)
        for j in range(8)
        if (i + j) % 2 == 0
    )
    sim = Simulator(SimulationConfig(physics=physics), WorldConfig(obstacles=pillars))
    sim.world.add_ground()
    for p in pillars:
        sim.world.add_box(p.center, p.size)
    pos = np.array([[3.0 * (i % side), 3.0 * (i // side), 3.0] for i in range(n)])
    sensors = SensorsConfig(preset="ideal", control_on="truth", record_hz=0.0)
    if lidar:
        sensors = _with_lidar(sensors)
    config = dataclasses.replace(load_uav_config(), sensors=sensors)
    return sim, Swarm(sim, config, range(1, n + 1), pos, np.zeros(n), hovering=True)


def _with_lidar(sensors: SensorsConfig) -> SensorsConfig:
    """`sensors` with `[uav.sensors.lidar]` on: 32 beams, 10 Hz, the defaults otherwise."""
    from skyswarm.core.schema import Tables

    cfg = LidarConfig(enabled=True, beams=BEAMS, period_s=PERIOD_S)
    return dataclasses.replace(sensors, tables=Tables(lidar=cfg))


def tick_ms(sim: Simulator, ticks: int) -> float:
    for _ in range(40):  # compile, and one scan
        sim.step()
    t = time.perf_counter()
    for _ in range(ticks):
        sim.step()
    return 1e3 * (time.perf_counter() - t) / ticks


def scan_ms(sim: Simulator, swarm: Swarm, repeats: int = 3) -> float:
    """The best of `repeats` casts of the last scan's N x 32 rays in one call, ms."""
    lidar = swarm.sensors.sensor("lidar")
    assert isinstance(lidar, Lidar)
    m = lidar.directions.shape[1]
    origins = np.repeat(lidar.origins, m, axis=0)
    directions = lidar.directions.reshape(-1, 3)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        sim.world.cast_rays(origins, directions, lidar.cfg.max_range_m)
        best = min(best, time.perf_counter() - t)
    return 1e3 * best


def main() -> None:
    sizes = (100,) if "--quick" in sys.argv else (100, 1000)
    rows = []
    head = f"{'physics':>8} {'N':>6} {'tick ms':>9} {'+lidar ms':>10} {'ratio':>6}"
    print(f"{head} {'scan ms':>9} {'Mrays/s':>8}")
    for n in sizes:
        for physics in ("bullet", "fast"):
            ticks = 80 if n <= 100 else 40
            plain = tick_ms(build(physics, n, False)[0], ticks)
            sim, swarm = build(physics, n, True)
            with_lidar = tick_ms(sim, ticks)
            scan = scan_ms(sim, swarm)
            rays_s = n * BEAMS / (scan / 1e3)
            rows.append(
                {"physics": physics, "n": n, "beams": BEAMS, "rate_hz": 1 / PERIOD_S,
                 "tick_ms": plain, "tick_lidar_ms": with_lidar, "scan_ms": scan,
                 "rays_per_s": rays_s}
            )  # fmt: skip
            print(
                f"{physics:>8} {n:>6} {plain:>9.3f} {with_lidar:>10.3f} "
                f"{with_lidar / plain:>6.2f} {scan:>9.2f} {rays_s / 1e6:>8.2f}"
            )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
