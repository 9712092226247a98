"""Split flocks: a radio range shorter than the flock (configs/flocking_split.toml).

10 UAVs at radio range 20 m (the formation is 29.5 m wide) and 30 UAVs at 60 m (95 m wide):
the far members stop hearing the leader and elect their own (two leaders at once, tracked per
group in `leaders_over_time`), and the parts meet again. Without avoidance the 30-UAV case loses
6 UAVs in collisions (seed 1; the 10-UAV case none, closest pass 2.30 m); with the safety
defaults (avoidance on, docs/safety.md), none.
"""

from __future__ import annotations

import pytest
from conftest import ROOT

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

pytestmark = pytest.mark.slow  # two full coverage runs, ~2-3 min together

CONFIG = ROOT / "configs" / "flocking_split.toml"


def run(overrides: list[str]) -> dict:
    sim = Simulator.from_scenario(load_scenario(CONFIG, overrides))
    sim.run()
    return sim.finish()


def check_split_coverage(summary: dict, uavs: int, limit_s: float) -> None:
    m = summary["metrics"]
    assert m["max_simultaneous_leaders"] >= 2  # the flock did split
    assert summary["deaths_by_cause"] == {} and summary["alive"] == uavs + 1  # + base station
    assert summary["outcome"] == "target reached" and m["coverage"] >= 0.99
    assert m["time_to_99_s"] <= limit_s
    assert m["min_separation_m"] >= 1.0  # closest pass of any two UAVs (the barrier's floor)
    radio = summary["comms"]["channels"]["radio"]
    assert radio["out_of_range"] > 1000  # broadcasts beyond 20 / 60 m are counted


def test_split_flock_covers_without_collision_10_uavs_20m() -> None:
    # seed 1 with the safety defaults on quad_x: 99 % at 189.1 s (seeds 2, 3: 188.1, 189.1 s),
    # closest pass 2.42 m (2.42, 2.46 m; 2026-11-30, after the barrier's credit for a neighbour
    # drawing away lost what the scan shows it shed; 188.1 s and 2.02 m before);
    # 198.1 s on quad_x_simple (183.1 s with the old opt-in
    # avoidance, closest 0.70 m; 230.1 s with the defaults before re-plans flew only unseen cells
    # and edge lanes passed a slot beyond the edge)
    check_split_coverage(run([]), 10, 210.0)


@pytest.mark.xdist_group("flocking_split_30")
def test_split_flock_covers_without_collision_30_uavs_60m(flocking_split_30) -> None:
    # agents.count=30, comms.channels.radio.range_m=60.0 (tests/conftest.py, shared run)
    # With the safety defaults on the full quad_x model: 95 % at 153.1 s, 99 % at 158.1 s
    # (seed 1; seeds 2 and 3: 162.1 / 169.1 s and 156.1 / 162.1 s), no UAV lost, closest pass
    # 1.85 m (1.91, 1.86 m; 2026-11-30, after the barrier's credit for a neighbour drawing away
    # lost what the scan shows it shed; 160.1 s and 1.70 m before it, 150.1 s and 1.84 m before
    # new avoidance tracks started at rest). On quad_x_simple (pinned until 2026-11-25) 169.1 s
    # (184.1, 163.1 s); 132.1 s with the old opt-in avoidance; 324.2 s with the defaults before
    # re-plans flew only unseen cells and edge lanes passed a slot beyond the edge
    # (docs/safety-log.md).
    check_split_coverage(flocking_split_30, 30, 175.0)
    assert flocking_split_30["metrics"]["time_to_95_s"] <= 165.0
