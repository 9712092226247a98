"""Cost of the sensor layer: one tick of a hovering swarm with `ideal` vs `qrsim` sensors.

Prints a table and writes bench/results/sensor_overhead.json. Both presets run side by side in one
process, so the ratio is meaningful even on a shared machine; absolute times are not.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from skyswarm.core.config import WorldConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.sensors import SensorsConfig
from skyswarm.uav.swarm import Swarm

RESULTS = Path(__file__).parent / "results" / "sensor_overhead.json"


def tick_ms(n: int, preset: str, ticks: int) -> float:
    sim = Simulator(world=WorldConfig())
    side = int(np.ceil(np.sqrt(n)))
    pos = np.array([[3.0 * (i % side), 3.0 * (i // side), 10.0] for i in range(n)])
    config = dataclasses.replace(load_uav_config(), sensors=SensorsConfig(preset=preset))
    Swarm(sim, config, range(1, n + 1), pos, np.zeros(n), hovering=True)
    for _ in range(20):
        sim.step()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(ticks):
            sim.step()
        best = min(best, (time.perf_counter() - t) / ticks)
    return 1e3 * best


def main() -> None:
    rows = []
    print(f"{'N':>6} {'ideal ms':>10} {'qrsim ms':>10} {'ratio':>7}")
    for n in (10, 100, 1000):
        ticks = max(20, 4000 // n)
        ideal, qrsim = tick_ms(n, "ideal", ticks), tick_ms(n, "qrsim", ticks)
        rows.append({"n": n, "ideal_ms": ideal, "qrsim_ms": qrsim, "ratio": qrsim / ideal})
        print(f"{n:>6} {ideal:>10.3f} {qrsim:>10.3f} {qrsim / ideal:>7.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
