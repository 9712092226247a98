"""Malformed flight plans: each one, validated by `skyswarm validate`, exits 2 with exactly
one stderr line naming the key at fault.

The catalogue runs through the CLI's `main()` in this process, in its own folder (a process per
case cost ~2.5 s of CPU each to import the package, twice when xdist split the module); the real
process (`python -m skyswarm.app.cli validate`, its exit path) runs the good plan and one bad
case of the catalogue."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from skyswarm.app.cli import main

SCENARIO = """
[simulation]
tick_s = 0.0025
duration_s = 10.0
[mission]
type = "missions.flight_plan"
[agents]
count = {count}
[uav]
airframe = "quad_x"
{extra}
[flight_plan]
{plan_key}
"""

TAKEOFF = '[[stages]]\nkind = "takeoff"\nlegs = [{kind = "takeoff", altitude_m = 5.0}]\n'


def plan(legs: str, head: str = "", stage: str = "en-route", tail: str = "") -> str:
    """A plan: optional header keys, a takeoff stage, one stage of `legs` (inline tables)."""
    return f'{head}\n{TAKEOFF}[[stages]]\nkind = "{stage}"\nlegs = [\n{legs}\n]\n{tail}'


CONDS = "[conditions]\ngo = 1\n"
HOLD = "to = [0.0, 0.0], course_deg = 0.0, d1_m = 30.0, d2_m = 12.0"

# name -> (plan text or None, scenario extra, plan key line, agent count, expected in the line)
CASES: dict[str, tuple[str | None, str, str, int, str]] = {
    "unknown leg kind": (plan('{kind = "XF", to = [1.0, 2.0]}'), "", "", 1, "legs[0].kind"),
    "branch to a missing leg": (
        plan('{kind = "branch", condition = "go", branches = ["nowhere"]}', CONDS),
        "",
        "",
        1,
        "branches[0] = 'nowhere'",
    ),
    "next to a missing leg": (
        plan('{kind = "TF", to = [5.0, 0.0], next = "lost"}'),
        "",
        "",
        1,
        "legs[0].next",
    ),
    "unbounded loop without a condition": (
        plan('{kind = "loop", body = [{kind = "TF", to = [5.0, 0.0]}]}'),
        "",
        "",
        1,
        "bound",
    ),
    "unbounded hold without a condition": (plan(f'{{kind = "HC", {HOLD}}}'), "", "", 1, "laps"),
    "RF radius too small for the turn": (
        plan(
            '{kind = "TF", to = [0.0, 0.0]},\n{kind = "RF", to = [2.0, 2.0], center = [2.0, 0.0]}'
        ),
        "",
        "",
        1,
        "turn radius >=",
    ),
    "hold turn diameter too small": (
        plan('{kind = "HF", to = [0.0, 0.0], d1_m = 10.0, d2_m = 2.0}'),
        "",
        "",
        1,
        "d2_m",
    ),
    "hold d1 shorter than d2": (
        plan('{kind = "HF", to = [0.0, 0.0], d1_m = 5.0, d2_m = 12.0}'),
        "",
        "",
        1,
        "d1_m",
    ),
    "lawn-mower passes too close for the turn": (
        plan(
            '{kind = "lawnmower", to = [0.0, 0.0], width_m = 20.0, length_m = 20.0, '
            "separation_m = 4.0}"
        ),
        "",
        "",
        1,
        "separation_m",
    ),
    "figure-eight radius too small": (
        plan('{kind = "figure8", to = [0.0, 0.0], radius_m = 1.0}'),
        "",
        "",
        1,
        "radius_m",
    ),
    "TF without a fix": (plan('{kind = "TF"}'), "", "", 1, "legs[0].to"),
    "RF without a centre": (
        plan('{kind = "TF", to = [0.0, 0.0]},\n{kind = "RF", to = [20.0, 20.0]}'),
        "",
        "",
        1,
        "center",
    ),
    "RF end not on the arc": (
        plan(
            '{kind = "TF", to = [0.0, 0.0]},\n{kind = "RF", to = [40.0, 5.0], center = [20.0, 0.0]}'
        ),
        "",
        "",
        1,
        "from the centre",
    ),
    "RF first in its stage": (
        plan('{kind = "RF", to = [40.0, 0.0], center = [20.0, 0.0]}'),
        "",
        "",
        1,
        "an RF leg after",
    ),
    "undeclared condition": (
        plan(f'{{kind = "HC", {HOLD}, condition = "gone"}}', CONDS),
        "",
        "",
        1,
        "condition = 'gone'",
    ),
    "set_condition undeclared": (
        plan('{kind = "TF", to = [5.0, 0.0], set_condition = "flag"}'),
        "",
        "",
        1,
        "set_condition",
    ),
    "duplicate leg id": (
        plan('{kind = "TF", id = "a", to = [5.0, 0.0]},\n{kind = "TF", id = "a", to = [9.0, 0.0]}'),
        "",
        "",
        1,
        "legs[1].id",
    ),
    "land not the last leg": (
        plan('{kind = "land", to = [0.0, 0.0]},\n{kind = "TF", to = [9.0, 0.0]}', stage="land"),
        "",
        "",
        1,
        "legs[0].kind",
    ),
    "stages out of flight order": (
        plan(
            '{kind = "TF", to = [5.0, 0.0]}',
            stage="en-route",
            tail='[[stages]]\nkind = "departure"\nlegs = [{kind = "TF", to = [1.0, 1.0]}]',
        ),
        "",
        "",
        1,
        "stages[2].kind",
    ),
    "unknown stage kind": (
        plan('{kind = "TF", to = [5.0, 0.0]}', stage="cruise"),
        "",
        "",
        1,
        "stages[1].kind",
    ),
    "empty stage": ('[[stages]]\nkind = "takeoff"\nlegs = []\n', "", "", 1, "stages[0].legs"),
    "key that the kind does not take": (
        plan('{kind = "TF", to = [5.0, 0.0], radius_m = 3.0}'),
        "",
        "",
        1,
        "radius_m",
    ),
    "misspelt key": (plan('{kind = "TF", too = [5.0, 0.0]}'), "", "", 1, "did you mean 'to'"),
    "fix with four numbers": (plan('{kind = "TF", to = [1.0, 2.0, 3.0, 4.0]}'), "", "", 1, ".to"),
    "altitude given twice": (
        plan('{kind = "TF", to = [5.0, 0.0, 7.0], altitude_m = 6.0}'),
        "",
        "",
        1,
        "legs[0].altitude_m",
    ),
    "negative speed": (
        plan('{kind = "TF", to = [5.0, 0.0], speed_m_s = -2.0}'),
        "",
        "",
        1,
        "speed_m_s",
    ),
    "speed above the airframe's": (
        plan('{kind = "TF", to = [5.0, 0.0], speed_m_s = 20.0}'),
        "",
        "",
        1,
        "at most 8.0",
    ),
    "condition default not an integer": (
        plan('{kind = "TF", to = [5.0, 0.0]}', "[conditions]\ngo = 1.5\n"),
        "",
        "",
        1,
        "conditions.go",
    ),
    "branch into a loop body": (
        plan(
            '{kind = "loop", bound = 2, body = [{kind = "TF", id = "in", to = [5.0, 0.0]}]},\n'
            '{kind = "branch", condition = "go", branches = ["in"]}',
            CONDS,
        ),
        "",
        "",
        1,
        "outside loop bodies",
    ),
    "geographic fixes without an origin": (
        plan('{kind = "TF", to = [41.27, 1.98]}', "geo = true"),
        "",
        "",
        1,
        "geo",
    ),
    "latitude out of range": (
        plan('{kind = "TF", to = [141.27, 1.98]}', "geo = true"),
        "[geo]\norigin = [41.0, 2.0, 0.0]",
        "",
        1,
        "legs[0].to",
    ),
    "fix 90 degrees or more from the origin": (  # 91 deg: no point of the flat world
        plan('{kind = "TF", to = [-50.0, 2.0]}', "geo = true"),
        "[geo]\norigin = [41.0, 2.0, 0.0]",
        "",
        1,
        "less than 90 deg from [geo] origin",
    ),
    "emergency plan without a battery": (
        plan(
            '{kind = "TF", to = [5.0, 0.0]}',
            tail='[[emergency]]\nname = "low"\nbelow_endurance_s = 60.0\n'
            'legs = [{kind = "land", to = [0.0, 0.0]}]',
        ),
        "",
        "",
        1,
        "emergency",
    ),
    "plan file missing": (None, "", 'plan = "nowhere.toml"', 1, "flight_plan.plan"),
    "plan file not TOML": ("[[stages]\nkind = ", "", "", 1, "(syntax)"),
    "wrong number of per-agent plans": (
        plan('{kind = "TF", to = [5.0, 0.0]}'),
        "",
        'plans = ["plan.toml", "plan.toml"]',
        3,
        "flight_plan.plans",
    ),
    "group sizes not adding up to the agents": (
        plan('{kind = "TF", to = [5.0, 0.0]}'),
        "",
        'plans = ["plan.toml", "plan.toml"]\ngroup_sizes = [1, 1]',
        3,
        "adding up to the 3 agents",
    ),
    "group sizes without one per plan file": (
        plan('{kind = "TF", to = [5.0, 0.0]}'),
        "",
        'plans = ["plan.toml", "plan.toml"]\ngroup_sizes = [3]',
        3,
        "one size per file in plans (2)",
    ),
    "two plan sources": (
        plan('{kind = "TF", to = [5.0, 0.0]}'),
        "",
        'plan = "plan.toml"\nplans = ["plan.toml"]',
        1,
        "exactly one of",
    ),
    "bank above the airframe's tilt": (
        plan('{kind = "TF", to = [5.0, 0.0]}'),
        "",
        'plan = "plan.toml"\nbank_deg = 40.0',
        1,
        "bank_deg",
    ),
    "executor period not whole ticks": (
        plan('{kind = "TF", to = [5.0, 0.0]}'),
        "",
        'plan = "plan.toml"\nperiod_s = 0.051',
        1,
        "period_s",
    ),
    "event setting a condition without a value": (
        plan('{kind = "TF", to = [5.0, 0.0]}', CONDS),
        '[[events]]\nat_s = 1.0\naction = "set_condition"\nname = "go"',
        "",
        1,
        "value",
    ),
}


def _write(tmp: Path, name: str) -> Path:
    """The case's folder: scenario.toml and (unless the case has none) plan.toml."""
    text, extra, key, count, _ = CASES[name]
    d = tmp / name.replace(" ", "_").replace("'", "")
    d.mkdir()
    if text is not None:
        (d / "plan.toml").write_text(text)
    scenario = SCENARIO.format(count=count, extra=extra, plan_key=key or 'plan = "plan.toml"')
    (d / "scenario.toml").write_text(scenario)
    return d


@dataclass
class Outcome:
    returncode: int
    stderr: str


def _validate(tmp: Path, name: str) -> Outcome:
    """`skyswarm validate scenario.toml` through `main()`, from the case's folder."""
    d, here, err = _write(tmp, name), Path.cwd(), io.StringIO()
    try:
        os.chdir(d)
        with contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with contextlib.redirect_stdout(io.StringIO()):
                code = main(["validate", "scenario.toml"])
    finally:
        os.chdir(here)
    return Outcome(code, err.getvalue())


def _run(tmp: Path, name: str) -> subprocess.CompletedProcess:
    """The same through a real `python -m skyswarm.app.cli validate` process."""
    d = _write(tmp, name)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", "skyswarm.app.cli", "validate", "scenario.toml"],
        cwd=d,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, Outcome]:
    tmp = tmp_path_factory.mktemp("bad_plans")
    return {name: _validate(tmp, name) for name in CASES}


def test_the_catalogue_has_at_least_twenty_plans() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_plan_is_one_line_and_exit_2(name: str, results) -> None:
    proc = results[name]
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (name, proc.returncode, proc.stderr[-500:])
    assert len(lines) == 1, (name, proc.stderr)
    assert CASES[name][4] in lines[0], (name, lines[0])


def test_the_cli_process_refuses_a_bad_plan_the_same_way(tmp_path: Path, results) -> None:
    name = "RF end not on the arc"
    proc = _run(tmp_path, name)
    mine = results[name]
    assert proc.returncode == mine.returncode == 2
    # the same line, apart from the temporary folder the case was written to
    assert (
        proc.stderr.split("RF_end_not_on_the_arc/")[1]
        == mine.stderr.split("RF_end_not_on_the_arc/")[1]
    )
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_good_plan_validates(tmp_path: Path) -> None:
    """The catalogue's base plan itself is fine: the errors come from each case's change."""
    CASES["_good"] = (plan('{kind = "TF", to = [5.0, 0.0]}', CONDS), "", "", 1, "")
    try:
        proc = _run(tmp_path, "_good")
    finally:
        del CASES["_good"]
    assert proc.returncode == 0, proc.stderr
