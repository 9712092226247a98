"""Flight plans end to end: the shipped scenarios (configs/reroute.toml, configs/survey.toml), a
plan written inline in the scenario with per-leg speed and altitude, the mission's per-leg and
per-stage metrics, and Goto / Skip / Pause / Resume sent as radio messages."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from test_flight_plan_flying import SCENARIO, TAKEOFF

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator


def _run(name: str, duration_s: float) -> Simulator:
    scenario = load_scenario(
        ROOT / "configs" / f"{name}.toml", [f"simulation.duration_s={duration_s}"]
    )
    sim = Simulator.from_scenario(scenario)
    sim.run()
    return sim


def test_reroute_a_scouts_message_sends_the_responder_to_the_target() -> None:
    """configs/reroute.toml for 92 s: the scout's scan ends at 49.35 s and its two broadcasts
    reach the responder 2 ticks later; the responder leaves its hold within one executor period
    and its intersection (target = 1) takes it to the target's figure-eight, not straight home.
    (Measured: hold left at 52.70 s, DF ends 0.05 m from (30, 40), the eight ends at 90.25 s.)"""
    sim = _run("reroute", 92.0)
    mission = sim.mission
    log = mission.condition_log
    by_msg = {name: t for t, uav, name, _, src in log if uav == 2 and src == "message"}
    sent = {name: t for t, uav, name, _, src in log if uav == 1 and src == "plan"}
    assert set(by_msg) == {"target", "standby"} == set(sent)
    for name in by_msg:  # the radio's latency: a few ticks
        assert 0.0 < by_msg[name] - sent[name] <= 0.01, name
    responder = mission.executors[1]
    ends = [(t, leg_id) for t, leg_id, _, _ in responder.leg_ends]
    left_hold = max(t for t, leg_id in ends if leg_id == "standby")
    assert by_msg["standby"] <= left_hold <= by_msg["standby"] + 0.05 + 1e-9  # one period
    flown = [leg_id for _, leg_id in ends if leg_id != "standby"]
    assert flown[1:] == ["inspect", "eight"]  # the branch chosen by the message: not "home"
    (df_end,) = [p for _, leg_id, _, p in responder.leg_ends if leg_id == "inspect"]
    assert np.hypot(df_end[0] - 30.0, df_end[1] - 40.0) < 0.5
    scout = mission.executors[0]
    assert scout.state == "done"  # the scout went home and landed on its fix (measured 0.00 m)
    assert np.hypot(*(scout.agent.position[:2] - [0.0, -5.0])) < 0.3


def test_survey_takes_off_scans_holds_until_cleared_and_lands() -> None:
    """configs/survey.toml (300 s): the hold is released by the event at 240 s, within one
    executor period, after at least one full lap; the UAV lands on the plan's land fix.
    Measured: scan ends at 193.15 s, hold left at 240.00 s (mid-lap, 5 m/s north, 2.6 m from
    the land fix), down at 268.30 s 0.00 m from it (it used to start descending wherever the
    short land track's end was passed abeam, 3.1 m off, and drift while descending)."""
    sim = _run("survey", 300.0)
    ex = sim.mission.executors[0]
    ids = [leg_id for _, leg_id, _, _ in ex.leg_ends]
    assert ids[:4] == ["", "gate", "scan", "inbound"] and ids[-1] == ""  # takeoff ... land
    holds = [t for t, leg_id, _, _ in ex.leg_ends if leg_id == "hold"]
    assert 1 <= len(holds) <= 3 and 240.0 <= holds[-1] <= 240.05 + 1e-9
    assert ex.state == "done" and ex.agent.landed
    p = ex.agent.position
    assert np.hypot(p[0] + 10.0, p[1]) < 0.3 and p[2] < 0.3  # on the land fix (-10, 0)
    assert list(ex.stage_s) == ["takeoff", "departure", "mission", "arrival", "land"]
    assert sum(ex.stage_s.values()) == pytest.approx(sim.time_s, abs=0.06)


INLINE = """
[flight_plan.inline]
speed_m_s = 5.0
altitude_m = 5.0
[[flight_plan.inline.stages]]
kind = "takeoff"
legs = [{kind = "takeoff", altitude_m = 5.0}]
[[flight_plan.inline.stages]]
kind = "en-route"
legs = [
  {kind = "TF", id = "slow", to = [30.0, 0.0], altitude_m = 8.0, speed_m_s = 3.0},
  {kind = "TF", id = "fast", to = [30.0, 45.0, 8.0], speed_m_s = 6.0},
]
"""


def test_inline_plan_flies_each_legs_speed_and_altitude_and_reports_metrics(
    tmp_path: Path,
) -> None:
    """An inline plan: leg `slow` at 3 m/s climbing to 8 m, leg `fast` at 6 m/s. Ground speed
    in the middle of each leg within 0.3 m/s of its own; the metrics hold a cross-track
    RMS/max per leg, the time per stage (adding up to the flight) and the waypoints passed."""
    text = SCENARIO.format(duration=25.0, count=1, extra=INLINE).replace('plan = "plan.toml"', "")
    (tmp_path / "scenario.toml").write_text(text)
    sim = Simulator.from_scenario(load_scenario(tmp_path / "scenario.toml"), tmp_path / "out")
    sim.run()
    summary = sim.finish()
    sim.close()
    ex = sim.mission.executors[0]
    assert ex.state == "done"
    from skyswarm.core.recorder import read_trajectory

    traj = read_trajectory(tmp_path / "out")
    t = traj["tick"] * sim.settings.tick_s
    p, v = traj["position"], traj["velocity"]
    ends = {leg_id: (ts, pos) for ts, leg_id, _, pos in ex.leg_ends}
    assert abs(ends["slow"][1][0] - 30.0) < 0.5  # fly-by: ends on the next track, turned
    assert np.hypot(*(ends["fast"][1][:2] - [30.0, 45.0])) < 0.5  # the last: stops on its fix
    assert abs(ends["fast"][1][2] - 8.0) < 0.2  # the fix's altitude
    mid_slow = (p[:, 0] > 10.0) & (p[:, 0] < 20.0) & (p[:, 1] < 1.0)
    mid_fast = (p[:, 1] > 15.0) & (p[:, 1] < 30.0)
    assert mid_slow.sum() > 40 and mid_fast.sum() > 30
    assert np.all(np.abs(np.hypot(v[mid_slow, 0], v[mid_slow, 1]) - 3.0) < 0.3)
    assert np.all(np.abs(np.hypot(v[mid_fast, 0], v[mid_fast, 1]) - 6.0) < 0.3)
    assert np.all(np.abs(p[mid_fast, 2] - 8.0) < 0.3)  # climbed to 8 m on the first leg
    uav = summary["metrics"]["uavs"]["1"]
    legs = {leg["id"]: leg for leg in uav["legs"] if leg["id"]}
    for leg_id in ("slow", "fast"):
        assert 0.0 < legs[leg_id]["xte_rms_m"] <= legs[leg_id]["xte_max_m"] < 2.0
    assert legs["slow"]["duration_s"] > 30.0 / 3.0  # at most 3 m/s over 30 m
    assert set(uav["stage_s"]) == {"takeoff", "en-route"}
    done_s = ends["fast"][0]
    assert sum(uav["stage_s"].values()) == pytest.approx(done_s, abs=0.06)
    assert uav["waypoints_passed"] == 2 and summary["metrics"]["waypoints_passed"] == 2
    assert t[-1] >= done_s


def test_goto_skip_pause_resume_as_radio_messages(tmp_path: Path) -> None:
    """Agent 2 (a ground station stand-in, holding) sends {"flight_plan": command} to agent 1
    by radio: pause at 4 s stops it, resume at 7 s, skip at 8 s ends leg a, goto a at 12 s."""
    plan = f"""speed_m_s = 5.0
altitude_m = 5.0
{TAKEOFF}[[stages]]
kind = "en-route"
legs = [{{kind = "TF", id = "a", to = [60.0, 0.0]}}, {{kind = "TF", id = "b", to = [60.0, 20.0]}}]
"""
    f0 = tmp_path / "plan.toml"
    f0.write_text(plan)
    (tmp_path / "hold.toml").write_text(
        'speed_m_s = 5.0\naltitude_m = 3.0\n[[stages]]\nkind = "takeoff"\n'
        'legs = [{kind = "takeoff", altitude_m = 3.0}]\n'
    )
    text = SCENARIO.format(duration=14.0, count=2, extra="").replace(
        'plan = "plan.toml"', 'plans = ["plan.toml", "hold.toml"]'
    )
    (tmp_path / "scenario.toml").write_text(text)
    sim = Simulator.from_scenario(load_scenario(tmp_path / "scenario.toml"), tmp_path / "out")
    ex = sim.mission.executors[0]
    radio = sim.mission.executors[1].agent.transceiver
    track = []
    for at, payload in [
        (4.0, {"flight_plan": "pause"}),
        (7.0, {"flight_plan": "resume"}),
        (8.0, {"flight_plan": "skip"}),
        (12.0, {"flight_plan": "goto", "leg": "a"}),
        (14.0, None),
    ]:
        while sim.time_s < at - 1e-9:
            assert sim.run(until_s=min(at, sim.time_s + 0.25)) == "duration"
            track.append((sim.time_s, ex.agent.position.copy()))
        if payload is not None:
            radio.broadcast(payload)
    sim.close()
    t = np.array([s for s, _ in track])
    x = np.array([q[0] for _, q in track])
    held = (t >= 6.0) & (t <= 7.0)
    assert np.ptp(x[held]) < 0.3  # paused: braked within 2 s from 5 m/s, then held
    assert np.ptp(x[(t >= 7.25) & (t <= 8.0)]) > 1.0  # resumed
    ids = [r.id for r in ex.records if r.id]
    assert ids == ["a", "b", "a"]  # skipped a at 8 s, flew b, sent back to a at 12 s
    a0 = next(r for r in ex.records if r.id == "a")
    assert 8.0 < a0.end_s < 8.0 + 0.06  # the message's latency, then one period
    assert not math.isnan(ex.records[-1].start_s) and ex.records[-1].start_s > 12.0


def test_groups_of_uavs_fly_one_plan_each(tmp_path: Path) -> None:
    """`group_sizes = [2, 1]` with two plan files: agents 1 and 2 share the first plan (one
    object: one validation), agent 3 flies the second."""
    from skyswarm.missions.flight_plan.loader import load_plans

    for name, x in (("a.toml", 5.0), ("b.toml", 9.0)):
        legs = f'legs = [{{kind = "TF", id = "t", to = [{x}, 0.0]}}]\n'
        (tmp_path / name).write_text(f'{TAKEOFF}[[stages]]\nkind = "en-route"\n{legs}')
    text = (
        '[mission]\ntype = "missions.flight_plan"\n[agents]\ncount = 3\n[flight_plan]\n'
        'plans = ["a.toml", "b.toml"]\ngroup_sizes = [2, 1]\n'
    )
    (tmp_path / "s.toml").write_text(text)
    plans = load_plans(load_scenario(tmp_path / "s.toml"), 3)
    assert [Path(f).name for _, f in plans] == ["a.toml", "a.toml", "b.toml"]
    assert plans[0][0] is plans[1][0] and plans[2][0].stages[1].legs[0].to == (9.0, 0.0)
