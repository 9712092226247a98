"""Simulated time paced to the wall clock (`skyswarm run --realtime [FACTOR]`), measured.

`Pacer` is a post-tick listener: every `check_s` of simulated time it sleeps until the wall
clock reaches `start + sim_elapsed / factor`, then records how late it is (>= 0: the sleep's
overshoot, or how far a slow tick fell behind). A simulation slower than the pace runs flat out
and catches up when it can; `report()` says how closely the pace was held.

    pacer = Pacer(sim, factor=1.0)
    sim.run()
    print(pacer.report())   # achieved factor, lag mean / p99 / max ms, share of late checks
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator

LATE_S = 0.005  # a check more than 5 ms behind schedule counts as late


class Pacer:
    """Holds `sim` at `factor` x real time (1.0: real time, 2.0: twice as fast)."""

    def __init__(self, sim: Simulator, factor: float = 1.0, check_s: float = 0.01) -> None:
        if not factor > 0:
            raise ValueError(f"realtime factor must be > 0, got {factor}")
        self.sim, self.factor = sim, factor
        self.every = max(1, round(check_s / sim.world.tick_s))
        self._start: tuple[float, float] | None = None  # (wall s, sim s) of the first check
        self.lag: list[float] = []  # s behind schedule at each check, after sleeping
        self.slept_s = 0.0
        sim.add_post_tick(self.post_tick)

    def post_tick(self, world: World) -> None:
        if world.tick % self.every:
            return
        now = time.perf_counter()
        if self._start is None:
            self._start = (now, world.time_s)
            return
        target = self._start[0] + (world.time_s - self._start[1]) / self.factor
        if now < target:
            time.sleep(target - now)
            self.slept_s += target - now
            now = time.perf_counter()
        self.lag.append(now - target)

    def report(self) -> dict[str, Any]:
        """How closely the pace was held: `achieved_factor` (sim s per wall s over the run),
        `pace_error` (achieved / asked - 1), lag behind schedule (ms: mean, 99th percentile,
        max), `late_share` (checks more than 5 ms behind), `idle_share` (wall time slept)."""
        if self._start is None or not self.lag:
            return {"factor": self.factor, "checks": 0}
        lag = np.array(self.lag)
        wall = time.perf_counter() - self._start[0]
        sim_s = self.sim.time_s - self._start[1]
        achieved = sim_s / wall if wall > 0 else float("nan")
        return {
            "factor": self.factor,
            "checks": len(lag),
            "achieved_factor": achieved,
            "pace_error": achieved / self.factor - 1.0,
            "lag_ms_mean": float(lag.mean() * 1e3),
            "lag_ms_p99": float(np.percentile(lag, 99) * 1e3),
            "lag_ms_max": float(lag.max() * 1e3),
            "late_share": float(np.mean(lag > LATE_S)),
            "idle_share": self.slept_s / wall if wall > 0 else 0.0,
        }

    def close(self) -> None:
        if self.post_tick in self.sim.post_tick_listeners:
            self.sim.remove_post_tick(self.post_tick)
