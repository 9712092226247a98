"""Honest outcomes: every value of summary.json's `outcome`, and the CLI's exit code for each
(0 target reached, 4 plan exhausted, 5 time limit, 6 all agents lost; app/exits.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w
from conftest import ROOT

from skyswarm.app.cli import main
from skyswarm.app.exits import (
    EXIT_ALL_LOST,
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_PLAN_EXHAUSTED,
    EXIT_TIME_LIMIT,
    OUTCOME_EXIT,
)
from skyswarm.core.config import load_scenario, read_toml
from skyswarm.core.simulator import Simulator

CONFIGS = ROOT / "configs"
TWO_AREAS = ROOT / "tests" / "missions" / "configs" / "two_areas.toml"


def run_cli(tmp_path: Path, config: str | Path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "run"
    code = main(["run", str(config), "--quiet", "--out", str(out), *args])
    return code, json.loads((out / "summary.json").read_text())


def with_events(tmp_path: Path, config: Path, events: list[dict], **sections) -> Path:
    data = read_toml(config)
    data["events"] = events
    for name, table in sections.items():
        data.setdefault(name, {}).update(table)
    path = tmp_path / config.name
    path.write_text(tomli_w.dumps(data))  # airframes are named by shipped name: nothing to copy
    return path


def test_exit_codes_are_distinct_and_not_the_reserved_ones() -> None:
    codes = [OUTCOME_EXIT[k] for k in ("plan exhausted", "time limit", "all agents lost")]
    assert len(set(codes)) == 3
    assert not set(codes) & {0, 1, EXIT_BAD_INPUT, EXIT_INTERRUPTED}
    assert OUTCOME_EXIT["target reached"] == 0


def test_target_reached_exits_0(tmp_path: Path) -> None:
    code, summary = run_cli(tmp_path, "drop_test")  # every box lands in 1.92 s
    assert (code, summary["outcome"], summary["stop_reason"]) == (
        0,
        "target reached",
        "mission done",
    )


def test_hover_holding_to_the_end_is_its_target(tmp_path: Path) -> None:
    code, summary = run_cli(tmp_path, "hover", "--duration", "1")
    assert (code, summary["outcome"], summary["stop_reason"]) == (0, "target reached", "duration")


def test_time_limit_exits_5(tmp_path: Path) -> None:
    code, summary = run_cli(tmp_path, "waypoints", "--duration", "1")  # the route takes ~30 s
    assert (code, summary["outcome"]) == (EXIT_TIME_LIMIT, "time limit")
    assert summary["metrics"]["agents_finished"] == 0


def test_hover_that_lost_a_uav_ends_at_the_time_limit(tmp_path: Path) -> None:
    path = with_events(
        tmp_path, CONFIGS / "hover.toml", [{"at_s": 0.5, "action": "kill", "target": 3}]
    )
    code, summary = run_cli(tmp_path, path, "--duration", "1")
    assert (code, summary["outcome"], summary["alive"]) == (EXIT_TIME_LIMIT, "time limit", 3)


def test_all_agents_lost_exits_6(tmp_path: Path) -> None:
    path = with_events(
        tmp_path, CONFIGS / "hover.toml", [{"at_s": 0.5, "action": "kill", "target": "all"}]
    )
    code, summary = run_cli(tmp_path, path, "--duration", "1")
    assert (code, summary["outcome"], summary["alive"]) == (EXIT_ALL_LOST, "all agents lost", 0)


def test_plan_exhausted_exits_4_when_the_survivors_finish(tmp_path: Path) -> None:
    path = with_events(
        tmp_path,
        CONFIGS / "waypoints.toml",
        [{"at_s": 0.5, "action": "kill", "target": 2}],
        waypoints={"points": [[0.0, 0.0, 2.0]]},
    )
    code, summary = run_cli(tmp_path, path)
    assert (code, summary["outcome"]) == (EXIT_PLAN_EXHAUSTED, "plan exhausted")
    assert summary["metrics"]["agents_finished"] == 2 and summary["alive"] == 2


def test_a_stopped_run_says_so() -> None:
    sim = Simulator.from_scenario(load_scenario(CONFIGS / "hover.toml"))
    sim.request_stop()
    sim.run()
    assert (sim.stop_reason, sim.outcome()) == ("stopped", "stopped")


def test_a_hand_stepped_run_reports_stepped_short_of_its_duration_and_time_limit_at_it() -> None:
    # hover.toml's duration cut to 0.05 s = 20 ticks of 2.5 ms. Ten ticks by hand: nothing was
    # asked of the run, so "stepped" (not "stopped": nobody stopped it). Twenty: the duration
    # is reached and hover (a duration_is_target mission) lost no UAV, so "target reached".
    sim = Simulator.from_scenario(
        load_scenario(CONFIGS / "hover.toml", ["simulation.duration_s=0.05"])
    )
    for _ in range(10):
        sim.step()
    assert (sim.stop_reason, sim.outcome()) == ("", "stepped")
    for _ in range(10):
        sim.step()
    assert sim.tick == 20 and sim.outcome() == "target reached"
    sim.close()


def test_a_hand_stepped_waypoint_run_at_its_duration_is_a_time_limit() -> None:
    # 0.05 s is far too short for the course: the mission has no verdict, the time is up.
    sim = Simulator.from_scenario(
        load_scenario(CONFIGS / "waypoints.toml", ["simulation.duration_s=0.05"])
    )
    for _ in range(20):
        sim.step()
    assert sim.outcome() == "time limit"
    sim.close()


def test_a_verdict_given_with_the_stop_is_the_outcome() -> None:
    sim = Simulator.from_scenario(load_scenario(CONFIGS / "waypoints.toml"))
    sim.request_stop(outcome="target reached")
    assert sim.run() == "stopped"
    assert (sim.stop_reason, sim.outcome()) == ("stopped", "target reached")
    with pytest.raises(ValueError, match="'arrived' is none of 'target reached'"):
        sim.request_stop(outcome="arrived")
    sim.close()


@pytest.fixture(scope="module")
def two_areas(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict]:
    tmp = tmp_path_factory.mktemp("two_areas")
    path = with_events(tmp, TWO_AREAS, [{"at_s": 55.0, "action": "kill", "target": 3}])
    return run_cli(tmp, path)


def test_two_areas_one_short_is_plan_exhausted(two_areas) -> None:
    """Four UAVs sweep area 1 fully; one is killed at 55 s while area 2 is swept without
    re-scouting: the leader's plan ends with area 2 at ~90 %, and the outcome says so."""
    code, summary = two_areas
    m = summary["metrics"]
    assert (code, summary["outcome"]) == (EXIT_PLAN_EXHAUSTED, "plan exhausted")
    assert m["coverage_by_area"]["1"] >= 0.99 and m["coverage_by_area"]["2"] < 0.95
    assert m["areas_short"] == [2]
    assert m["sweep_done_s"] is not None and summary["sim_time_s"] < 300.0  # not the limit
