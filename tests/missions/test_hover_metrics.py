"""missions/hover.py's per-tick metrics (issue 31: the fast hover stack at scale): with every
UAV alive the mission reduces into reused buffers instead of gathering the live rows; its
reward, squared-error sum and largest error are, tick after tick and to the bit, what the
numpy expressions over the live rows give (`np.sum((pos - start) ** 2, axis=1)`, its
`.mean()` and `sqrt(max)`), before and after a UAV dies, in wind."""

from __future__ import annotations

import math

import numpy as np
from conftest import ROOT

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator


def _reference(world, mission, acc: dict) -> None:
    """The mission's accumulation as it was written before the buffers (its post_tick)."""
    if world.time_s < mission.cfg.settle_s:
        return
    alive = mission.swarm.alive
    if not alive.any():
        return
    pos = world.state.position[mission.swarm.rows][alive]
    sq = np.sum((pos - mission.start[alive]) ** 2, axis=1)
    acc["reward"] -= float(sq.mean())
    acc["sq"] += float(sq.mean())
    acc["samples"] += 1
    acc["max"] = max(acc["max"], float(np.sqrt(sq.max())))


def test_the_buffered_metrics_are_the_gathered_ones_to_the_bit() -> None:
    sc = load_scenario(
        ROOT / "configs" / "hover_wind.toml",
        ["agents.count=9", "hover.settle_s=0.05", "simulation.duration_s=2.0"],
    )
    sim = Simulator.from_scenario(sc)
    try:
        mission = sim.mission
        acc = {"reward": 0.0, "sq": 0.0, "samples": 0, "max": 0.0}
        sim.add_post_tick(lambda world: _reference(world, mission, acc))  # (after the mission)
        for tick in range(400):
            if tick == 200:
                sim.kill(mission.swarm.agents[4], "test")
            sim.step()
            got = (mission.reward_sum, mission.sq_sum, mission.samples, mission.max_error_m)
            assert got == (acc["reward"], acc["sq"], acc["samples"], acc["max"]), tick
        assert not mission.swarm.alive.all() and mission.samples > 300
        assert mission.max_error_m > 0.0 and math.isfinite(mission.reward_sum)
    finally:
        sim.close()


def test_the_column_sums_are_numpys_row_sums_where_the_order_shows() -> None:
    """(x + y) + z column by column is np.sum(axis=1) of (n, 3) rows to the bit, with values
    whose sums depend on the order (magnitudes 1e-8 to 1e8 mixed) and NaN / inf rows."""
    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 7, 8, 9, 127, 128, 129, 1000, 4099):
        d = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-8, 9, size=(n, 3))
        d[rng.random(n) < 0.01] = [np.nan, np.inf, 1.0]
        d *= d
        ref = np.sum(d, axis=1)
        got = np.add(d[:, 0], d[:, 1])
        np.add(got, d[:, 2], out=got)
        assert got.tobytes() == ref.tobytes()
