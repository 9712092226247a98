"""Scheduled events (core/events.py): validation at load, firing at the tick, events.csv.

The functional tests fly the shipped hover scenario (4 UAVs, ids 1..4, hovering at 10 m) for a
few seconds; each event's effect is checked on what it must change.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from skyswarm.core.config import apply_overrides, read_toml, validate_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from tests.viewer_driver import drive_like_a_viewer

HOVER = ROOT / "configs" / "hover.toml"


def scenario(events: list[dict[str, Any]], overrides: tuple[str, ...] = (), path: Path = HOVER):
    data = read_toml(path)
    apply_overrides(data, overrides, str(path))
    data["events"] = events
    return validate_scenario(data, str(path))


def run(events, overrides=("simulation.duration_s=2.0",), out: Path | None = None):
    sim = Simulator.from_scenario(scenario(events, overrides), out)
    sim.run()
    return sim, sim.finish()


# -- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("event", "key", "expected"),
    [
        ({"action": "kill", "target": 1}, "events[0].at_s", "a time in s"),
        ({"at_s": -1.0, "action": "kill", "target": 1}, "events[0].at_s", "a time in s"),
        ({"at_s": 0.001, "action": "kill", "target": 1}, "events[0].at_s", "whole number"),
        ({"at_s": 1.0, "action": "kil", "target": 1}, "events[0].action", "did you mean 'kill'"),
        ({"at_s": 1.0, "action": "kill"}, "events[0].target", "a target for action 'kill'"),
        ({"at_s": 1.0, "action": "kill", "target": 9}, "events[0].target", "ids of the scenario"),
        ({"at_s": 1.0, "action": "kill", "target": [1, 1]}, "events[0].target", "distinct"),
        ({"at_s": 1.0, "action": "kill", "target": True}, "events[0].target", "an agent id"),
        ({"at_s": 1.0, "action": "kill", "target": 1, "x": 2}, "events[0].x", "no such key"),
        ({"at_s": 1.0, "action": "motor_fault", "target": 1, "motor": 4}, "events[0].motor", "<="),
        ({"at_s": 1.0, "action": "wind", "speed_m_s": 3.0}, "events[0].action", "[wind] enabled"),
        ({"at_s": 1.0, "action": "drain_battery", "target": 1},
         "events[0].action", "[uav.battery]"),
        ({"at_s": 1.0, "action": "channel_cut", "channel": "wifi"}, "events[0].channel", "radio"),
        ({"at_s": 1.0, "action": "channel_cut", "channel": "radio", "target": 1},
         "events[0].target", "no target"),
        ({"at_s": 1.0, "action": "base_station_cut", "station": 7}, "events[0].station", "id"),
    ],
)  # fmt: skip
def test_bad_events_are_one_line_errors_naming_the_key(event, key, expected) -> None:
    with pytest.raises(ConfigError) as err:
        scenario([event])
    assert err.value.key == key and expected in err.value.expected, str(err.value)
    assert "\n" not in str(err.value)


def test_events_must_be_an_array_of_tables() -> None:
    with pytest.raises(ConfigError, match="events"):
        scenario({"at_s": 1.0})  # type: ignore[arg-type]


def test_events_are_sorted_by_tick_then_file_order_and_written_back() -> None:
    sc = scenario(
        [
            {"at_s": 2.0, "action": "kill", "target": 2},
            {"at_s": 1.0, "action": "kill", "target": "random"},
            {"at_s": 1.0, "action": "kill", "target": [3, 4]},
        ]
    )
    assert [(e.at_tick, e.index) for e in sc.events] == [(400, 1), (400, 2), (800, 0)]
    assert sc.as_dict()["events"][0] == {"at_s": 2.0, "action": "kill", "target": 2}


# -- firing -------------------------------------------------------------------------------------
def test_kill_by_id_list_and_events_csv(tmp_path: Path) -> None:
    sim, summary = run(
        [
            {"at_s": 0.5, "action": "kill", "target": 2},
            {"at_s": 1.0, "action": "kill", "target": [3, 2]},  # 2 already dead: only 3
        ],
        out=tmp_path,
    )
    deaths = {d.agent_id: d.time_s for d in sim.deaths}
    assert deaths == {2: 0.5, 3: 1.0}  # at the event's tick exactly
    assert summary["deaths_by_cause"] == {"event": 2}
    assert [e["targets"] for e in summary["events"]] == [[2], [3]]
    rows = list(csv.DictReader(open(tmp_path / "events.csv")))
    fired = [r for r in rows if r["kind"] == "event"]
    assert [(r["time_s"], r["cause"]) for r in fired] == [("0.5", "kill 2"), ("1.0", "kill 3")]
    assert sum(r["kind"] == "death" for r in rows) == 2


def test_random_target_is_drawn_from_the_mission_stream_reproducibly() -> None:
    picks = []
    for seed in (1, 1, 2, 3, 4):
        sim, _ = run(
            [{"at_s": 0.25, "action": "kill", "target": "random"}],
            ("simulation.duration_s=0.5", f"simulation.seed={seed}"),
        )
        picks.append(sim.deaths[0].agent_id)
    assert picks[0] == picks[1]  # same seed, same victim
    assert len(set(picks)) > 1  # four seeds do not all pick the same of 4 agents (p = 1/64)


def test_role_without_members_and_all() -> None:
    sim, summary = run(
        [
            {"at_s": 0.5, "action": "kill", "target": "leader"},  # hover has no leader: no-op
            {"at_s": 1.0, "action": "kill", "target": "all"},
        ]
    )
    assert summary["events"][0]["targets"] == [] and len(sim.deaths) == 4
    assert {d.time_s for d in sim.deaths} == {1.0}
    assert summary["outcome"] == "all agents lost"


def test_motor_fault_brings_the_uav_down() -> None:
    sim, _ = run([{"at_s": 0.5, "action": "motor_fault", "target": 4, "motor": 2}])
    swarm = sim.mission.swarm
    assert swarm.motor_ok[3].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert swarm.motor_ok[:3].min() == 1.0
    # 1.5 s on three motors: it has fallen well below the 10 m the others hold
    z = sim.world.state.position[swarm.slots, 2]
    assert z[3] < 8.0 and abs(z[:3] - 10.0).max() < 0.05


def test_drain_battery_empties_it_into_a_fault() -> None:
    sim, _ = run(
        [{"at_s": 0.5, "action": "drain_battery", "target": 1, "charge": 0.0}],
        ("simulation.duration_s=1.0", "uav.battery.enabled=true"),
    )
    agent = sim.agents[1]
    assert any("battery" in f for f in agent.faults) or not agent.alive
    assert sim.agents[2].alive and not sim.agents[2].faults


def test_wind_event_changes_the_mean_wind() -> None:
    sim, _ = run(
        [{"at_s": 0.5, "action": "wind", "speed_m_s": 6.0, "from_deg": 270.0}],
        ("simulation.duration_s=1.0", "wind.enabled=true", "wind.speed_m_s=0.0"),
    )
    wind = sim.mission.swarm.wind
    # a west wind blows towards +x; at 10 m the shear law gives more than the 6 m/s at 6.1 m
    assert wind[:, 0].min() > 6.0 and abs(wind[:, 1]).max() < 1e-9


COMMS = ROOT / "configs" / "flocking_coverage.toml"


def test_channel_and_base_station_cut_and_restore() -> None:
    events = [
        {"at_s": 2.0, "action": "channel_cut", "channel": "radio"},
        {"at_s": 3.0, "action": "channel_restore", "channel": "radio"},
        {"at_s": 2.0, "action": "base_station_cut", "station": 0},
        {"at_s": 3.0, "action": "base_station_restore", "station": 0},
    ]
    sc = scenario(events, ("simulation.duration_s=4.0",), COMMS)
    sim = Simulator.from_scenario(sc)
    totals = []
    for t in (2.0, 3.0, 4.0):
        sim.run(until_s=t)
        totals.append(sim.dispatcher.totals())
    radio = [t["radio"] for t in totals]
    # cut at 2.0 s: the copies decided before the cut land by 2.0075 s; none after
    assert radio[1]["delivered"] - radio[0]["delivered"] <= 10 * 9
    # ... every frame sent meanwhile reaches nobody: 9 receivers out of range per broadcast
    sent = radio[1]["sent"] - radio[0]["sent"]
    assert radio[1]["out_of_range"] - radio[0]["out_of_range"] >= 9 * (sent - 10) > 0
    assert radio[2]["delivered"] - radio[1]["delivered"] > 9 * 50  # restored at 3.0 s
    lr = [t["long_range"] for t in totals]
    assert lr[1]["sent"] > lr[0]["sent"]  # reports go on while the station is cut ...
    assert lr[1]["delivered"] == lr[0]["delivered"]  # ... and none arrives
    assert lr[2]["delivered"] > lr[1]["delivered"]  # restored
    assert not sim.dispatcher.down


WAYPOINTS = ROOT / "configs" / "waypoints.toml"


def test_a_mission_action_moves_a_waypoint() -> None:
    move = {"at_s": 1.0, "action": "move_waypoint", "index": 0, "point": [4.0, 0.0, 5.0]}
    sim = Simulator.from_scenario(
        scenario([dict(move, target=2)], ("simulation.duration_s=1.5",), WAYPOINTS)
    )
    sim.run()
    sp = sim.mission.swarm.setpoints.position
    start = sim.mission.origin
    assert sp[1].tolist() == pytest.approx((start[1] + [4.0, 0.0]).tolist())  # agent 2 turned
    assert sp[0].tolist() == pytest.approx(start[0].tolist())  # the others did not
    with pytest.raises(ConfigError) as err:
        scenario([dict(move, index=5)], (), WAYPOINTS)
    assert err.value.key == "events[0].index"


def test_a_viewed_run_fires_the_same_events_as_a_headless_one(tmp_path: Path) -> None:
    """The GUI steps the run through `SimSession` (paced by the wall clock, paused and resumed
    at will); events fire at their tick inside the simulator's step, so the viewed run records
    the same trajectory bytes and the same events.csv as `Simulator.run`."""
    from skyswarm.gui.session import SimSession  # no GL: the session is plain Python

    events = [
        {"at_s": 0.5, "action": "kill", "target": "random"},  # drawn from the mission stream
        {"at_s": 0.75, "action": "motor_fault", "target": "all", "motor": 1},
    ]
    sc = scenario(events, ("simulation.duration_s=1.5",))
    head = Simulator.from_scenario(sc, tmp_path / "headless")
    head.run()
    fired = head.finish()["events"]
    head.close()
    sim = Simulator.from_scenario(sc, tmp_path / "viewed")
    session = SimSession(sim, speed=3.0)
    drive_like_a_viewer(session)  # random frame times, pausing and resuming at random
    assert sim.world.tick == 600  # 1.5 s of 2.5 ms ticks
    assert sim.finish()["events"] == fired and len(fired) == 2 and len(fired[0]["targets"]) == 1
    sim.close()
    for name in ("trajectory.bin", "events.csv"):
        a = (tmp_path / "headless" / name).read_bytes()
        b = (tmp_path / "viewed" / name).read_bytes()
        assert len(a) > 0 and a == b, name
    rows = (tmp_path / "viewed" / "events.csv").read_text(encoding="utf-8")
    assert rows.count(",event,") == 2 and "motor_fault" in rows
