"""Cost of the cameras: 16 hovering UAVs among pillars, each with a 64 x 64 depth/RGB/
segmentation camera, rendered offscreen by the `egl` renderer (Mesa llvmpipe here), beside the
same run without sensors.

Per configuration: the mean tick (ms) without sensors and with the cameras (a frame of all 16
every `period` ticks), the time of one sample (all cameras in one atlas, one read-back, decoded
to arrays; ms, best of a few) and the camera frames per second of that sample (16 / its time).
Prints a table and writes bench/results/cameras.json. Both runs of a row share the process, so
the ratio means something on a shared machine; absolute times do not.

    python bench/cameras.py            # 64 x 64 and 128 x 128, a frame every tick and at 10 Hz
    python bench/cameras.py --quick    # 64 x 64, every tick
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import skyswarm.gui.sensor_camera  # noqa: F401  (registers the "egl" renderer)
from skyswarm.core.config import ObstacleConfig, SimulationConfig, WindConfig, WorldConfig
from skyswarm.core.schema import Tables
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.sensors import SensorsConfig
from skyswarm.uav.sensors.camera import Camera, CameraConfig
from skyswarm.uav.swarm import Swarm

RESULTS = Path(__file__).parent / "results" / "cameras.json"
N, TICK_S = 16, 0.0025


def build(camera: CameraConfig | None) -> tuple[Simulator, Swarm]:
    """16 UAVs hovering 3 m apart at 3 m, 16 pillars (1 x 1 x 8 m) among them."""
    pillars = tuple(
        ObstacleConfig("box", (3.0 * i + 1.5, 3.0 * j + 1.5, 4.0), (1.0, 1.0, 8.0))
        for i in range(4)
        for j in range(4)
    )
    world = WorldConfig(obstacles=pillars)
    sim = Simulator(SimulationConfig(physics="fast"), world)
    sim.scenario = SimpleNamespace(world=world, wind=WindConfig())  # type: ignore[assignment]
    pos = np.array([[3.0 * (i % 4), 3.0 * (i // 4), 3.0] for i in range(N)])
    tables = Tables(camera=camera) if camera is not None else Tables()
    sensors = SensorsConfig(preset="ideal", control_on="truth", record_hz=0.0, tables=tables)
    config = dataclasses.replace(load_uav_config(), sensors=sensors)
    yaw = np.linspace(0, 2 * np.pi, N, endpoint=False)  # every camera looks another way
    return sim, Swarm(sim, config, range(1, N + 1), pos, yaw, hovering=True)


def tick_ms(sim: Simulator, ticks: int) -> float:
    for _ in range(40):  # compile, and the first frames
        sim.step()
    t = time.perf_counter()
    for _ in range(ticks):
        sim.step()
    return 1e3 * (time.perf_counter() - t) / ticks


def sample_ms(sim: Simulator, swarm: Swarm, repeats: int = 5) -> float:
    """The best of `repeats` samples of all 16 cameras (render, read back, decode), ms."""
    cam = swarm.sensors.sensor("camera")
    assert isinstance(cam, Camera)
    truth = swarm.sensors._truth()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        cam.sample(sim.tick, truth)
        best = min(best, time.perf_counter() - t)
    return 1e3 * best


def main() -> None:
    quick = "--quick" in sys.argv
    sizes = (64,) if quick else (64, 128)
    periods = (1,) if quick else (1, 40)  # ticks: every tick (400 Hz), 10 Hz
    rows = []
    print(f"{'px':>5} {'Hz':>5} {'tick ms':>8} {'+cams ms':>9} {'ratio':>6} {'sample ms':>10} "
          f"{'frames/s':>9}")  # fmt: skip
    plain = tick_ms(build(None)[0], 200)
    for px in sizes:
        for every in periods:
            cfg = CameraConfig(enabled=True, width=px, height=px, period_s=every * TICK_S)
            sim, swarm = build(cfg)
            with_cams = tick_ms(sim, 200 if every > 1 else 60)
            sample = sample_ms(sim, swarm)
            fps = N / (sample / 1e3)
            rows.append(
                {"n": N, "width": px, "height": px, "rate_hz": 1 / (every * TICK_S),
                 "tick_ms": plain, "tick_cameras_ms": with_cams, "sample_ms": sample,
                 "frames_per_s": fps, "renderer": "egl (llvmpipe)"}
            )  # fmt: skip
            print(f"{px:>5} {1 / (every * TICK_S):>5.0f} {plain:>8.3f} {with_cams:>9.3f} "
                  f"{with_cams / plain:>6.1f} {sample:>10.2f} {fps:>9.0f}")  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
