"""The `move_area` event of flocking coverage, end to end through a scenario's [[events]] table.

configs/flocking_move_area.toml: four UAVs sweep a 26 m x 30 m area (x 7..33 m, lanes north-
south); at 30 s the event moves it 13 m east (x 20..46 m). The flock has swept its first lane
(x ~7..20 m) and part of the second, so the base station's coverage drops from what it knew of
the old rectangle to the part of the new one lying on seen ground, and the leader re-plans lanes
over the new rectangle's unseen cells (the moved half reaches east of anything flown before).
"""

from __future__ import annotations

import csv
from typing import Any

import numpy as np
import pytest
from conftest import ROOT

from skyswarm.core.config import load_scenario, read_toml, validate_scenario
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.missions.coverage import Area, carry_over

CONFIG = ROOT / "configs" / "flocking_move_area.toml"
MOVE_S = 30.0
NEW_EAST_EDGE_M = 46.0  # x of the moved area's east edge: 33 + 26 / 2
OLD_EAST_EDGE_M = 33.0


BEHAVIOUR_S = 0.1  # flocking.behaviour_period_s (default)


def _leader_plan(sim: Simulator) -> tuple[Any, ...]:
    lead = next(u for u in sim.mission.uavs if u.leader is not None)
    return lead.id, lead.leader.plan, lead.known[0].copy()


@pytest.fixture(scope="module")
def moved(tmp_path_factory):
    """The whole run, paused one behaviour period either side of the move to read the leader's
    plan (stopping and resuming a run changes nothing in it): (results, summary, plans), plans
    "before" / "after" holding (leader id, its plan, its knowledge of the area) and "area" the
    moved area."""
    out = tmp_path_factory.mktemp("move_area")
    sim = Simulator.from_scenario(load_scenario(CONFIG), results_dir=out)
    plans: dict[str, Any] = {}
    sim.run(until_s=MOVE_S - BEHAVIOUR_S)
    plans["before"] = _leader_plan(sim)
    sim.run(until_s=MOVE_S + BEHAVIOUR_S)
    plans["after"] = _leader_plan(sim)
    plans["area"] = sim.mission.areas[0]
    sim.run()
    return out, sim.finish(), plans


def _coverage_series(out) -> list[tuple[float, float]]:
    with open(out / "timeseries.csv", encoding="utf-8") as f:
        return [(float(r["time_s"]), float(r["coverage"])) for r in csv.DictReader(f)]


def test_the_event_is_recorded(moved) -> None:
    out, summary, _ = moved
    assert summary["events"] == [
        {"time_s": MOVE_S, "action": "move_area", "targets": [], "area": 1, "center": [33.0, 35.0]}
    ]
    rows = (out / "events.csv").read_text(encoding="utf-8").splitlines()
    assert any(",event," in r and "move_area" in r and "center=[33.0, 35.0]" in r for r in rows)


def test_coverage_carried_over_then_the_moved_area_reaches_the_target(moved) -> None:
    out, summary, _ = moved
    series = _coverage_series(out)
    before = max(c for t, c in series if t < MOVE_S)
    after = next(c for t, c in series if t >= MOVE_S)
    # seed 1: 64.6 % of the old rectangle known before the move; 14.6 % of the new one lies on
    # ground seen before (the overlap x 20..33 m, half the width, partly swept). With avoidance
    # off, 73.8 % and 23.8 %: the safety defaults' barrier slows the four members while they
    # form at take-off (2.83 m apart on the ground), so less is swept by 30 s
    assert before == pytest.approx(0.646, abs=0.01)
    assert after == pytest.approx(0.146, abs=0.01)
    assert summary["outcome"] == "target reached"
    assert summary["metrics"]["coverage_by_area"]["1"] >= 0.99
    # seed 1: 99 % at 63.1 s, 33 s after the move; the time limit is 200 s
    assert summary["metrics"]["time_to_99_s"] <= 70.0
    assert summary["deaths_by_cause"] == {}


def test_the_leader_replans_the_unseen_cells_at_the_move(moved) -> None:
    """The leader drops the rest of its old plan at the move and plans lanes over what its own
    knowledge misses of the moved area. Without the re-plan (Leader.area_moved a no-op) the run
    still ends (99 % at 75.1 s against 63.1 s: the old lanes are in area coordinates and move
    with it, and re-scouting sweeps the rest), so the plan itself tells a re-plan from luck:
    without it the leader is still on lane 1 of its first plan, sweeping."""
    _, _, plans = moved
    lead, before, _ = plans["before"]
    again, after, known = plans["after"]
    area = plans["area"]
    assert lead == again == 1  # nobody died: agent 1 leads throughout
    assert (before.stage, before.lane) == ("sweep", 1)  # seed 1: on the second of two lanes
    assert (after.stage, after.lane) == ("cross", 0) and after.lanes != before.lanes
    assert after.stage_since_s == pytest.approx(MOVE_S)  # re-planned at the event's tick
    half = after.swath_m / 2
    u = area.u_centres[:, None] * np.ones(area.shape)
    v = area.v_centres[None, :] * np.ones(area.shape)
    swept = np.zeros(area.shape, dtype=bool)
    for ln in after.lanes:
        band = np.abs(u - ln.u) <= half
        assert (band & ~known).sum() > 0  # no lane over seen ground only
        lo, hi = sorted((ln.v0, ln.v1))
        swept |= band & (v >= lo) & (v <= hi)
    # every cell the leader does not know lies on a new lane (seed 1: 657 of the 780 cells
    # with the safety defaults, 585 with avoidance off)
    assert (~known).sum() == 657 and not (~known & ~swept).any()


def test_the_flock_flies_the_moved_area(moved) -> None:
    """From the recorded trajectory: nobody flew east of the old area before the move; after it
    the flock sweeps the moved area up to its east edge (the last lane centre is one half swath
    inside it, so the easternmost member flies within a footprint of the edge)."""
    out, _, _ = moved
    traj = read_trajectory(out)
    tick_s = 0.0025
    t = traj["tick"] * tick_s
    x = traj["position"][:, 0]
    assert x[t < MOVE_S].max() < OLD_EAST_EDGE_M
    assert x[t > MOVE_S].max() > NEW_EAST_EDGE_M - 3.0


def test_carry_over_maps_cells_by_their_centres() -> None:
    """A grid moved half its width: the new cells over the old east half keep their values."""
    old = Area(1, (0.0, 0.0), (4.0, 2.0), 0.0, 1.0)  # u across = east, 4 x 2 cells
    grid = np.array([[True, False], [False, True], [True, True], [False, False]])
    new = Area(1, (2.0, 0.0), (4.0, 2.0), 0.0, 1.0)
    moved = carry_over(old, grid, new, False)
    assert moved.tolist() == [[True, True], [False, False], [False, False], [False, False]]
    turned = Area(1, (0.0, 0.0), (4.0, 2.0), 180.0, 1.0)  # the same rectangle, reversed axes
    assert carry_over(old, grid, turned, False).tolist() == grid[::-1, ::-1].tolist()


@pytest.mark.parametrize(
    ("change", "key", "value"),
    [
        ({"area": 7}, "events[0].area", "7"),
        ({"center": [1.0]}, "events[0].center", "[1.0]"),
        ({"heading_deg": "east"}, "events[0].heading_deg", "'east'"),
        ({"radius": 3.0}, "events[0].radius", "3.0"),
    ],
)
def test_bad_move_area_is_one_line_config_error(change, key, value) -> None:
    data = read_toml(CONFIG)
    data["events"] = [{"at_s": MOVE_S, "action": "move_area", "area": 1, "center": [0, 0]}]
    data["events"][0].update(change)
    with pytest.raises(ConfigError) as err:
        validate_scenario(data, str(CONFIG))
    msg = str(err.value)
    assert "\n" not in msg and str(CONFIG) in msg and key in msg and value in msg
