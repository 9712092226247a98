"""Flocking coverage driven by scheduled events: the leader killed at 40 s by `[[events]]`.

The shipped reference scenario (10 UAVs, seed 1) with one event, `kill` of the role "leader":
at 40 s the flock is sweeping, agent 1 leads, and the event resolves the role through
`FlockingCoverage.role_members`.
"""

from __future__ import annotations

import pytest
from conftest import ROOT

from skyswarm.core.config import read_toml, validate_scenario
from skyswarm.core.simulator import Simulator

CONFIG = ROOT / "configs" / "flocking_coverage.toml"
KILL_S = 40.0
TIMEOUT_S = 2.0  # flocking.timeout_s of the shipped config
BEHAVIOUR_S = 0.1  # flocking.behaviour_period_s
TICK_S = 0.0025  # simulation.tick_s: member k's behaviour runs k - 1 ticks into each period


@pytest.fixture(scope="module")
def leader_killed():
    data = read_toml(CONFIG)
    data["events"] = [{"at_s": KILL_S, "action": "kill", "target": "leader"}]
    sim = Simulator.from_scenario(validate_scenario(data, str(CONFIG)))
    sim.run()
    return sim, sim.finish()


def test_the_event_kills_the_acting_leader(leader_killed) -> None:
    sim, summary = leader_killed
    assert summary["events"] == [
        {"time_s": KILL_S, "action": "kill", "targets": [1], "target": "leader"}
    ]
    assert [(d.agent_id, d.time_s, d.kind) for d in sim.deaths] == [(1, KILL_S, "event")]


def test_new_leader_within_timeout_plus_one_behaviour_period(leader_killed) -> None:
    sim, summary = leader_killed
    log = sim.mission.events  # (time s, kind, agent id, detail)
    took_over = [t for t, kind, _, what in log if (kind, what) == ("leader", "leads")]
    took_over = [t for t in took_over if t > KILL_S]
    assert took_over, "nobody took over"
    delay = took_over[0] - KILL_S
    # Agent 2, the lowest survivor, last heard the leader at its behaviour tick 40.0025 s (the
    # beacon sent at 39.9 s: none leaves at the kill tick) and counts the silence from then; its
    # first behaviour tick with more than the timeout of silence comes one behaviour period
    # later: it leads at 42.1025 s, timeout + one behaviour period after it last heard the
    # leader, plus its one-tick phase after the kill.
    last_heard = KILL_S + TICK_S
    assert took_over[0] - last_heard == pytest.approx(TIMEOUT_S + BEHAVIOUR_S)
    assert TIMEOUT_S < delay <= TIMEOUT_S + BEHAVIOUR_S + TICK_S + 1e-9
    changes = summary["metrics"]["leader_changes"]
    assert changes[0] == [0.0, 1] and changes[1][1] == 2  # the lowest surviving id
    assert summary["metrics"]["leaders_over_time"][-1][1] == [2]


def test_coverage_still_reaches_99_percent(leader_killed) -> None:
    _, summary = leader_killed
    m = summary["metrics"]
    assert summary["outcome"] == "target reached" and m["coverage"] >= 0.99
    assert m["agents_lost"] == 1 and summary["deaths_by_cause"] == {"event": 1}
    assert m["time_to_99_s"] < 200.0  # the reference without a kill: ~150 s
