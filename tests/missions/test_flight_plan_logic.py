"""Plan logic: iterative legs, intersections, holds, conditions set by events and messages,
emergency plans by endurance, Goto / Skip / Pause / Resume, GUI commands."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_flight_plan_flying import TAKEOFF, fly, legs_plan

from skyswarm.missions.flight_plan import program as pg
from skyswarm.missions.flight_plan.plan import Leg


def tf(leg_id: str, x: float = 0.0, y: float = 0.0) -> Leg:
    return Leg(kind="TF", id=leg_id, to=(x, y))


def flown(prog: pg.Program, conds: dict, flips: dict | None = None, limit: int = 100) -> list[str]:
    """Leg ids in the order the sequencer gives them; `flips`: {legs flown: (name, value)}."""
    cur, out = pg.settle(prog, pg.Cursor(), conds), []
    while not pg.finished(prog, cur) and not cur.waiting and len(out) < limit:
        out.append(prog.instrs[cur.pc].leg.id)
        if flips and len(out) in flips:
            name, value = flips[len(out)]
            conds[name] = value
        cur = pg.after(prog, cur, conds)
    return out


def loop_program(bound: int, condition: str = "") -> pg.Program:
    loop = Leg(
        kind="loop", id="L", bound=bound, condition=condition, body=(tf("b1", 1), tf("b2", 2))
    )
    return pg.compile_legs([("mission", (tf("in"), loop, tf("out")))])


def test_iterative_leg_runs_exactly_its_bound() -> None:
    for bound in (1, 3, 5):
        ids = flown(loop_program(bound), {})
        assert ids == ["in"] + ["b1", "b2"] * bound + ["out"]


def test_iterative_leg_stops_early_when_its_condition_flips() -> None:
    # the condition drops to 0 during the 2nd iteration (after 4 legs: in, b1, b2, b1)
    ids = flown(loop_program(5, "more"), {"more": 1}, flips={4: ("more", 0)})
    assert ids == ["in", "b1", "b2", "b1", "b2", "out"]  # the iteration finishes, then leaves
    assert flown(loop_program(5, "more"), {"more": 0}) == ["in", "out"]  # never entered
    assert flown(loop_program(0, "more"), {"more": 1}, flips={9: ("more", 0)}) == (
        ["in"] + ["b1", "b2"] * 4 + ["out"]
    )  # no bound: until the condition


def branch_program(default: str = "") -> pg.Program:
    br = Leg(kind="branch", id="X", condition="c", branches=("a", "b"), default=default)
    legs = (tf("in"), br, Leg(kind="TF", id="a", to=(1, 0), next="end"), tf("b", 2), tf("end"))
    return pg.compile_legs([("en-route", legs)])


def test_intersection_follows_the_conditions_value() -> None:
    assert flown(branch_program(), {"c": 0}) == ["in", "a", "end"]
    assert flown(branch_program(), {"c": 1}) == ["in", "b", "end"]
    assert flown(branch_program(default="b"), {"c": 7}) == ["in", "b", "end"]  # default
    prog, conds = branch_program(), {"c": -1}
    cur = pg.after(prog, pg.settle(prog, pg.Cursor(), conds), conds)
    assert cur.waiting  # no branch, no default: wait for the condition
    conds["c"] = 1
    assert prog.instrs[pg.settle(prog, cur, conds).pc].leg.id == "b"


def test_hold_laps_and_condition() -> None:
    hold = Leg(kind="HC", id="H", to=(0, 0), d1_m=20, d2_m=10, condition="h", laps=3)
    prog = pg.compile_legs([("arrival", (hold, tf("out")))])
    assert flown(prog, {"h": 1}) == ["H", "H", "H", "out"]  # at most 3 laps
    assert flown(prog, {"h": 1}, flips={1: ("h", 0)}) == ["H", "out"]
    assert pg.hold_done(hold, {"h": 0}) and not pg.hold_done(hold, {"h": 1})


def test_window_predicts_with_present_conditions() -> None:
    prog = branch_program()
    cur = pg.settle(prog, pg.Cursor(), {"c": 1})
    ids = [prog.instrs[c.pc].leg.id for c in pg.window(prog, cur, {"c": 1}, 3)]
    assert ids == ["in", "b", "end"]
    ids = [prog.instrs[c.pc].leg.id for c in pg.window(prog, cur, {"c": 0}, 2)]
    assert ids == ["in", "a"]


LOOP_PLAN = """speed_m_s = 5.0
altitude_m = 5.0
[conditions]
more = 1
{takeoff}
[[stages]]
kind = "mission"
[[stages.legs]]
kind = "loop"
id = "patrol"
bound = 3
condition = "more"
body = [{{kind = "TF", id = "p1", to = [8.0, 0.0]}}, {{kind = "TF", id = "p2", to = [0.0, 0.0]}}]
[[stages.legs]]
kind = "TF"
id = "out"
to = [0.0, -5.0]
"""


def test_flown_loop_runs_its_bound_then_stops_early_on_an_event(tmp_path: Path) -> None:
    plan = LOOP_PLAN.format(takeoff=TAKEOFF)
    f = fly(tmp_path / "bound", plan, 30.0)
    ids = [r.id for r in f.legs() if r.id]
    assert ids == ["p1", "p2"] * 3 + ["out"]
    first_p2 = next(r for r in f.legs() if r.id == "p2")
    # an event drops the condition during the 2nd iteration: that iteration ends, no 3rd
    at = round((first_p2.end_s + 1.0) / 0.05) * 0.05
    event = f'[[events]]\nat_s = {at:.2f}\naction = "set_condition"\nname = "more"\nvalue = 0'
    g = fly(tmp_path / "early", plan, 30.0, extra=event)
    assert [r.id for r in g.legs() if r.id] == ["p1", "p2"] * 2 + ["out"]


def test_flown_intersection_takes_the_branch_the_event_selects(tmp_path: Path) -> None:
    plan = f"""speed_m_s = 5.0
altitude_m = 5.0
[conditions]
route = 0
{TAKEOFF}
[[stages]]
kind = "en-route"
legs = [
  {{kind = "TF", id = "in", to = [10.0, 0.0]}},
  {{kind = "branch", id = "x", condition = "route", branches = ["north", "south"]}},
  {{kind = "TF", id = "north", to = [10.0, 10.0], next = "end"}},
  {{kind = "TF", id = "south", to = [10.0, -10.0]}},
  {{kind = "TF", id = "end", to = [0.0, 0.0]}},
]
"""
    event = '[[events]]\nat_s = 2.0\naction = "set_condition"\nname = "route"\nvalue = 1'
    f = fly(tmp_path, plan, 1.0 + 20.0, extra=event)
    assert [r.id for r in f.legs() if r.id] == ["in", "south", "end"]
    t, p = f.track()
    assert p[:, 1].min() < -8.0 and p[:, 1].max() < 1.0  # south (fly-by cuts the corner), not north


RESPONDER = """speed_m_s = 4.0
altitude_m = 6.0
[conditions]
standby = 1
{takeoff}
[[stages]]
kind = "departure"
[[stages.legs]]
kind = "HC"
id = "wait"
to = [0.0, 10.0]
course_deg = 0.0
direction = "left"
d1_m = 20.0
d2_m = 10.0
condition = "standby"
laps = 20
[[stages]]
kind = "mission"
legs = [{{kind = "DF", id = "go", to = [30.0, 30.0]}}]
"""
SENDER = """speed_m_s = 5.0
altitude_m = 5.0
[conditions]
standby = 1
{takeoff}
[[stages]]
kind = "mission"
[[stages.legs]]
kind = "TF"
id = "release"
to = [12.0, 0.0]
set_condition = "standby"
set_value = 0
broadcast = true
"""


def test_a_message_set_condition_changes_the_path_within_one_period(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "sender.toml").write_text(SENDER.format(takeoff=TAKEOFF))
    (tmp_path / "responder.toml").write_text(RESPONDER.format(takeoff=TAKEOFF))
    key = 'plans = ["sender.toml", "responder.toml"]'
    f = fly(tmp_path, "", 12.0, count=2, plan_key=key)
    log = f.mission.condition_log
    (msg,) = [c for c in log if c[1] == 2 and c[4] == "message"]
    t_msg = msg[0]
    sent = [c for c in log if c[1] == 1 and c[2] == "standby"][0][0]
    assert 0 < t_msg - sent <= 0.01  # radio latency: 2-3 ticks
    ex = f.mission.executors[1]
    (wait_end,) = [t for t, leg_id, _, _ in ex.leg_ends if leg_id == "wait"]
    assert t_msg <= wait_end <= t_msg + 0.05 + 1e-9  # within one executor period (0.05 s)
    go = next(r for r in ex.records if r.id == "go")
    assert go.start_s == wait_end


EMERGENCY = """speed_m_s = 5.0
altitude_m = 5.0
{takeoff}
[[stages]]
kind = "en-route"
legs = [{{kind = "TF", id = "away", to = [200.0, 0.0]}}]
[[emergency]]
name = "return and land"
below_endurance_s = 30.0
legs = [{{kind = "DF", id = "home", to = [-10.0, 5.0]}}, {{kind = "land", to = [-10.0, 5.0]}}]
[[emergency]]
name = "land now"
below_endurance_s = 3.0
legs = [{{kind = "land", to = [0.0, 0.0]}}]
"""
BATTERY = "[uav.battery]\nenabled = true\ncapacity_wh = 2.0\n"  # 40 s at hover power


def test_emergency_plan_triggers_at_the_endurance_threshold_and_lands_there(tmp_path) -> None:
    f = fly(tmp_path, EMERGENCY.format(takeoff=TAKEOFF), 45.0, extra=BATTERY)
    ex = f.mission.executors[0]
    t_trig, left = ex.emergency_at
    assert ex.emergency == "return and land"  # never fell below 3 s: not the severe one
    # endurance falls by at most ~0.1 s per 0.05 s period (climbing and cruising > hover)
    assert 30.0 - 0.15 < left < 30.0, left
    assert 5.0 < t_trig < 10.0  # 40 s at hover: the climb and cruise drew a little more
    assert ex.state == "done" and f.summary["outcome"] == "plan exhausted"
    t, p = f.track()
    assert np.hypot(p[-1, 0] + 10.0, p[-1, 1] - 5.0) < 1.0 and p[-1, 2] < 0.3  # landed there
    assert p[t < t_trig, 0].max() > 15.0  # it was on its way out when it turned back


def test_goto_skip_pause_resume_by_events(tmp_path: Path) -> None:
    plan = legs_plan(
        '{kind = "TF", id = "a", to = [60.0, 0.0]},\n{kind = "TF", id = "b", to = [60.0, 20.0]},'
    )
    events = "\n".join(
        f'[[events]]\nat_s = {at}\naction = "{action}"\n{more}'
        for at, action, more in [
            (4.0, "pause", ""),
            (7.0, "resume", ""),
            (8.0, "skip", ""),
            (12.0, "goto", 'leg = "a"'),
        ]
    )
    f = fly(tmp_path, plan, 14.0, extra=events)
    t, p = f.track()
    held = (t >= 6.0) & (t <= 7.0)
    assert np.ptp(p[held, 0]) < 0.3  # paused: stopped within 2 s from 5 m/s, then held
    moving = (t >= 7.3) & (t <= 8.0)
    assert np.ptp(p[moving, 0]) > 1.0  # resumed: accelerating away again
    ids = [r.id for r in f.legs() if r.id]
    assert ids == ["a", "b", "a"]  # skipped a at 8 s, flew b, sent back to a at 12 s
    a0 = f.legs()[1]
    assert abs(a0.end_s - 8.0) < 0.06


def test_gui_commands_and_overlays(tmp_path: Path) -> None:
    plan = legs_plan(
        '{kind = "TF", id = "a", to = [30.0, 0.0]},\n'
        '{kind = "HC", id = "h", to = [0.0, 0.0], d1_m = 20.0, d2_m = 10.0, condition = "c"},',
        head="speed_m_s = 5.0\naltitude_m = 5.0\n[conditions]\nc = 1\n",
    )
    f = fly(tmp_path, plan, 3.0)
    over = f.mission.overlays()
    (item,) = over
    segs = item["segments"]
    assert segs.ndim == 3 and segs.shape[1:] == (2, 3) and len(segs) >= 15  # 30 m in 2 m steps
    assert np.allclose(segs[0, 0], (0.0, 0.0, 5.0))  # from the takeoff point ...
    assert np.min(np.linalg.norm(segs[:, 1, :2] - (30.0, 0.0), axis=1)) < 1e-6  # via the fix
    lengths = np.linalg.norm(segs[:, 1] - segs[:, 0], axis=1)
    assert lengths.sum() > 60.0 + 2 * 20.0  # the window: TF a, then the hold's entry and lap
    assert f.mission.overlays() is over  # unchanged path: the same list (timeline skips it)
    assert f.mission.hud()[0].startswith("uav 1: fly en-route TF a")
    cmds = dict(f.mission.gui_commands())
    assert list(cmds) == [
        "Skip leg", "Pause plan", "Resume plan", "Go to next stage",
        "Release hold (its condition = 0)",
    ]  # fmt: skip
    ex = f.mission.executors[0]
    cmds["Pause plan"](None)
    assert ex.state == "paused"
    cmds["Resume plan"](1)
    assert ex.state == "fly"
    cmds["Skip leg"](1)  # a ends now: the hold is current
    assert ex.current_leg().id == "h"
    cmds["Release hold (its condition = 0)"](None)
    assert ex.conds["c"] == 0 and f.mission.condition_log[-1][4] == "gui"
    ex.step()  # the next executor period sees it: the hold ends, the plan is done
    assert ex.state == "done"
    cmds["Go to next stage"](1)  # nothing left: no effect
    assert ex.state == "done"


def test_same_seed_same_flight(tmp_path: Path) -> None:
    from conftest import ROOT

    runs = []
    for k in range(2):
        from skyswarm.core.config import load_scenario
        from skyswarm.core.simulator import Simulator

        scenario = load_scenario(ROOT / "configs" / "reroute.toml", ["simulation.duration_s=8.0"])
        sim = Simulator.from_scenario(scenario, tmp_path / str(k))
        sim.run()
        sim.finish()
        sim.close()
        runs.append((tmp_path / str(k) / "trajectory.bin").read_bytes())
    assert runs[0] == runs[1] and len(runs[0]) > 1000


@pytest.mark.parametrize("name", ["survey", "reroute"])
def test_shipped_flight_plan_scenarios_validate(name: str) -> None:
    from conftest import ROOT

    from skyswarm.core.config import load_scenario

    scenario = load_scenario(ROOT / "configs" / f"{name}.toml")
    assert scenario.section("flight_plan").period_s == 0.05
