"""Cycles of zero-length legs are refused at validation with the cycle named (issue 28), and a
flight-plan run's summary and logs stay bounded whatever its length (counts past a cap)."""

from __future__ import annotations

import json

import pytest

from skyswarm.core.schema import ConfigError
from skyswarm.missions.flight_plan import executor, records
from skyswarm.missions.flight_plan.cycles import check_cycles
from skyswarm.missions.flight_plan.plan import Plan
from skyswarm.missions.flight_plan.plan import parse_plan as parse_structure
from tests.missions.test_flight_plan_flying import fly

TAKEOFF = '[[stages]]\nkind = "takeoff"\nlegs = [{kind = "takeoff", altitude_m = 5.0}]\n'
HOLD = "course_deg = 0.0, d1_m = 20.0, d2_m = 10.0, laps = 1"


def plan(legs: str, head: str = "", tail: str = "") -> dict:
    import tomllib

    text = f'{head}\n{TAKEOFF}[[stages]]\nkind = "en-route"\nlegs = [\n{legs}\n]\n{tail}'
    return tomllib.loads(text)


def parse_plan(data: dict, path: str, file: str) -> Plan:
    """The loader's checks: structure, then cycles."""
    plan = parse_structure(data, path, file)
    check_cycles(plan, path, file)
    return plan


def refused(legs: str, head: str = "", tail: str = "") -> str:
    with pytest.raises(ConfigError) as err:
        parse_plan(plan(legs, head, tail), "", "p.toml")
    assert "no cycle of zero-length legs" in str(err.value), err.value
    return str(err.value)


def test_the_issues_a_b_a_cycle_is_named():
    err = refused(
        '{kind = "TF", id = "a", to = [5.0, 0.0], next = "b"},\n'
        '{kind = "TF", id = "b", to = [5.0, 0.0], next = "a"},'
    )
    # the plan's default altitude (10 m) completes the fix
    assert "stages[1].legs[0].next = 'b'" in err
    assert "(a -> b -> a all to the fix [5.0, 0.0, 10.0]" in err


def test_a_leg_jumping_to_itself_and_a_fall_through_cycle():
    assert "a -> a" in refused('{kind = "TF", id = "a", to = [1.0, 2.0], next = "a"},')
    err = refused(
        '{kind = "DF", id = "a", to = [1.0, 2.0, 7.0]},\n'
        '{kind = "TF", id = "b", to = [1.0, 2.0], altitude_m = 7.0, next = "a"},'
    )
    assert "a -> b -> a" in err  # the same fix: to's altitude = altitude_m


def test_branches_pointing_at_each_other_are_a_zero_duration_cycle():
    err = refused(
        '{kind = "branch", id = "x", condition = "c", branches = ["y"], default = "y"},\n'
        '{kind = "branch", id = "y", condition = "c", branches = ["x"], default = "x"},',
        head="[conditions]\nc = 0\n",
    )
    assert "x -> y -> x" in err and "fix" not in err


def test_a_loop_without_a_bound_around_one_fix_is_refused_a_bounded_one_is_not():
    body = 'body = [{kind = "TF", id = "p", to = [3.0, 3.0]}]'
    err = refused(
        f'{{kind = "loop", id = "l", condition = "go", {body}}},', head="[conditions]\ngo = 1\n"
    )
    assert "(p -> end of stages[1].legs[0] -> p all to the fix [3.0, 3.0, 10.0]" in err
    parse_plan(plan(f'{{kind = "loop", id = "l", bound = 3, {body}}},'), "", "p.toml")


def test_real_flights_are_accepted():
    patrol = (
        '{kind = "TF", id = "a", to = [5.0, 0.0], next = "b"},\n'
        '{kind = "TF", id = "b", to = [0.0, 5.0], next = "a"},'
    )
    climb = (  # one point, two altitudes: a vertical leg each way
        '{kind = "TF", id = "a", to = [5.0, 0.0, 10.0], next = "b"},\n'
        '{kind = "TF", id = "b", to = [5.0, 0.0, 20.0], next = "a"},'
    )
    via_hold = (  # a racetrack lap between two visits of one fix
        '{kind = "TF", id = "a", to = [5.0, 0.0], next = "h"},\n'
        f'{{kind = "HF", id = "h", to = [5.0, 0.0], {HOLD.replace(", laps = 1", "")}, next = "a"}},'
    )
    for legs in (patrol, climb, via_hold):
        assert parse_plan(plan(legs), "", "p.toml").stages[1].legs[0].id == "a"


def test_an_emergency_plans_cycle_is_named_by_its_key():
    emergency = (
        '[[emergency]]\nname = "home"\nbelow_endurance_s = 60.0\nlegs = [\n'
        '{kind = "TF", id = "h1", to = [0.0, 0.0], next = "h2"},\n'
        '{kind = "TF", id = "h2", to = [0.0, 0.0], next = "h1"},\n]\n'
    )
    err = refused('{kind = "TF", id = "a", to = [5.0, 0.0]},', tail=emergency)
    assert "emergency[0].legs[0].next = 'h2'" in err and "h1 -> h2 -> h1" in err


PATROL = (
    TAKEOFF + '[[stages]]\nkind = "en-route"\nlegs = [\n'
    '{kind = "TF", id = "a", to = [4.0, 0.0], next = "b"},\n'
    '{kind = "TF", id = "b", to = [0.0, 4.0], next = "a"},\n]\n'
)


def test_summary_and_logs_stay_bounded_with_counts_past_the_cap(tmp_path, monkeypatch):
    # caps of 2 (listed) and 4 (kept): the patrol's 5.7 m legs take ~ 4.5 s each (accelerate,
    # brake), so 20 s fly the takeoff and ~ 4 legs, 40 s ~ 8
    monkeypatch.setattr(records, "MAX_LISTED", 2)
    monkeypatch.setattr(records, "MAX_LOGGED", 4)
    monkeypatch.setattr(executor, "MAX_LOGGED", 4)
    sizes, flown = [], []
    for i, duration in enumerate((20.0, 40.0)):
        f = fly(tmp_path / str(i), PATROL, duration)
        uav = f.summary["metrics"]["uavs"]["1"]
        ex = f.mission.executors[0]
        assert len(uav["legs"]) == 2
        assert uav["legs_not_listed"] == uav["legs_flown"] - 2 > 0
        assert len(ex.records) == 4 and len(ex.leg_ends) == 4 and len(ex.flown) == 4
        assert uav["legs_flown"] == len(ex.records) - 1 + ex.folded.legs  # the current is open
        plan_file = json.loads((f.dir / "flight_plan.json").read_text())
        assert len(plan_file["1"]) == 4
        sizes.append(len((f.dir / "summary.json").read_bytes()))
        flown.append(uav["legs_flown"])
    assert flown[1] >= flown[0] + 3  # twice the flight, more legs ...
    assert abs(sizes[1] - sizes[0]) < 100  # ... and the same summary size (the numbers' digits)
