"""The bad-input catalogue: every case must exit 2 with exactly one stderr line naming the key
or file, and write no results directory.

The cases are hand-written (files, mission names, geometry, memory, output options, replayed
inputs, readers, the command line itself) plus generated ones: every scalar number and integer
key of the shipped hover and flocking-coverage scenarios set to a non-finite number or a value
of the wrong type. Every case runs in-process through `main()` (its own working directory,
stdout and stderr captured at the file descriptors, so a C library's banner would show); a
sample of them, one or more per kind, also runs through the real CLI
(`python -m skyswarm.app.cli`, one subprocess each), which adds the process's own exit path.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pybullet  # noqa: F401  (its banner at the first import: before any case captures)
import pytest

from skyswarm.app.api import load_scenario
from skyswarm.core.config import CORE_SECTIONS
from skyswarm.core.resources import CONFIGS_DIR as CONFIGS
from tests.config_keys import number_keys

# a mesh that parses: one triangle
GOOD_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
INPUTS_HEADER = "tick,agent,throttle,yaw,pitch,roll,buttons,mode,connected\n"

# files written into each case's working directory (name -> text or bytes)
ASSETS: dict[str, str | bytes] = {
    "garbage.obj": "this is not\x00 a mesh at all {{{\n",
    "empty.obj": "",
    "binary.toml": bytes(range(256)) * 4,
    "latin1.toml": "# caf\xe9\n".encode("latin-1"),
    "empty.toml": "",
    "syntax.toml": "[simulation\nseed = 1\n",
    "passwd": "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/false\n",
    "no_mission.toml": "[simulation]\nseed = 1\n",
    "array_top.toml": 'mission = "hover"\n',
    "airframe_syntax.toml": "[airframe]\nmass_kg = = 1\n",
    "airframe_negative_mass.toml": "[airframe]\nmass_kg = -1.0\n",
    "airframe_unknown.toml": "[frame]\nmass_kg = 1.0\n",
    "airframe_inf.toml": "[airframe]\nmass_kg = inf\n",
    "bad_import_mod.py": "raise RuntimeError('broken at import')\n",
    "bad_syntax_mod.py": "def broken(:\n",
    "bad_dep_mod.py": "import no_such_dependency_xyz\n",
    "not_a_mission_mod.py": "class Thing:\n    pass\n",
    "inputs_bad_header.csv": "a,b,c\n1,2,3\n",
    "inputs_bad_row.csv": INPUTS_HEADER + "x,1,0,0,0,0,,stab,1\n",
    "inputs_bad_mode.csv": INPUTS_HEADER + "0,1,0,0,0,0,,nosuchmode,1\n",
    "inputs_empty.csv": "",
    "inputs_binary.csv": b"\xff\xfe\x00\x01" * 50,
    "inputs_json_bad/inputs.csv": INPUTS_HEADER,
    "inputs_json_bad/inputs.json": "{not json",
    "inputs_json_shape/inputs.csv": INPUTS_HEADER,
    "inputs_json_shape/inputs.json": "[1, 2, 3]",
    "inputs_json_profile/inputs.csv": INPUTS_HEADER,
    "inputs_json_profile/inputs.json": '{"profile": {"no_such_key": 1}}',
    "run_empty/placeholder": "",
    "run_torn_header/trajectory.json": '{"format": "skyswarm traj',
    "run_torn_header/trajectory.bin": b"",
    "run_empty_header/trajectory.json": "",
    "run_empty_header/trajectory.bin": b"",
    "run_no_records/trajectory.json": '{"tick_s": 0.0025, "agents": []}',
    "run_no_records/trajectory.bin": b"\x00" * 7,
    "nonempty_out/old.txt": "an earlier run",
    "a_file": "not a directory",
}

HOVER = "hover"
SCN = "scn.toml"  # a copy of the shipped hover.toml in the case directory: files resolve there
FLOCK = "flocking_coverage"
RUN = ["run", "--quiet", "--out", "OUT"]  # OUT: a fresh path per case, must stay absent
SHORT = ["--set", "simulation.duration_s=0.05"]  # should a case wrongly pass, it ends at once


def _set(key_value: str) -> list[str]:
    return ["--set", key_value]


# (case id, argv after the program, substring the one line must contain)
HAND: list[tuple[str, list[str], str]] = [
    # -- the command line itself
    ("no command", [], "command"),
    ("unknown command", ["fly", "hover"], "fly"),
    ("run without config", ["run"], "config"),
    ("seed not int", [*RUN, HOVER, "--seed", "abc"], "--seed"),
    ("seed float", [*RUN, HOVER, "--seed", "1.5"], "--seed"),
    ("seed negative", [*RUN, HOVER, "--seed", "-3"], "simulation.seed"),
    ("duration text", [*RUN, HOVER, "--duration", "long"], "--duration"),
    ("duration inf", [*RUN, HOVER, "--duration", "inf"], "simulation.duration_s"),
    ("duration nan", [*RUN, HOVER, "--duration", "nan"], "simulation.duration_s"),
    ("duration zero", [*RUN, HOVER, "--duration", "0"], "simulation.duration_s"),
    ("duration negative", [*RUN, HOVER, "--duration", "-1"], "simulation.duration_s"),
    ("duration huge", [*RUN, HOVER, "--duration", "1e300"], "simulation.duration_s"),
    ("set without =", [*RUN, HOVER, "--set", "simulation.seed"], "simulation.seed"),
    ("set empty key", [*RUN, HOVER, "--set", "=3"], "--set"),
    ("set empty part", [*RUN, HOVER, "--set", "simulation..seed=3"], "--set"),
    ("set into a value", [*RUN, HOVER, "--set", "simulation.seed.x=1"], "simulation.seed"),
    ("set unknown section", [*RUN, HOVER, "--set", "simulaton.seed=1"], "simulaton"),
    ("set unknown key", [*RUN, HOVER, "--set", "simulation.sede=1"], "simulation.sede"),
    ("set section to value", [*RUN, HOVER, "--set", "simulation=3"], "simulation"),
    ("unknown option", [*RUN, HOVER, "--turbo"], "--turbo"),
    ("fps zero", [*RUN, HOVER, "--fps", "0", "--video", "v.mp4"], "--fps"),
    ("fps negative", [*RUN, HOVER, "--fps", "-5", "--video", "v.mp4"], "--fps"),
    ("fps nan", [*RUN, HOVER, "--fps", "nan", "--frames", "fr"], "--fps"),
    ("fps inf", [*RUN, HOVER, "--fps", "inf", "--frames", "fr"], "--fps"),
    ("bench unknown", ["bench", "no_such_bench"], "bench"),
    ("init unknown", ["init", "no_such_scenario"], "init"),
    # -- scenario files
    ("missing file", [*RUN, "missing.toml"], "missing.toml"),
    ("unknown shipped name", [*RUN, "hoover"], "hoover"),
    ("directory as config", [*RUN, "nonempty_out/"], "nonempty_out"),
    ("binary file", [*RUN, "binary.toml"], "binary.toml"),
    ("latin-1 file", [*RUN, "latin1.toml"], "latin1.toml"),
    ("empty file", [*RUN, "empty.toml"], "mission"),
    ("syntax error", [*RUN, "syntax.toml"], "syntax.toml"),
    ("passwd as scenario", [*RUN, "passwd"], "passwd"),
    ("no mission table", [*RUN, "no_mission.toml"], "mission"),
    ("mission not a table", [*RUN, "array_top.toml"], "mission"),
    ("validate missing", ["validate", "missing.toml"], "missing.toml"),
    # -- mission names
    ("mission colon", [*RUN, HOVER, *_set('mission.type=":"')], "mission.type"),
    ("mission dot", [*RUN, HOVER, *_set('mission.type="."')], "mission.type"),
    ("mission dotdot", [*RUN, HOVER, *_set('mission.type="..hover"')], "mission.type"),
    ("mission trailing dot", [*RUN, HOVER, *_set('mission.type="hover."')], "mission.type"),
    ("mission empty", [*RUN, HOVER, *_set('mission.type=""')], "mission.type"),
    ("mission spaces", [*RUN, HOVER, *_set('mission.type=" hover"')], "mission.type"),
    ("mission two colons", [*RUN, HOVER, *_set('mission.type="a:b:c"')], "mission.type"),
    ("mission class only", [*RUN, HOVER, *_set('mission.type=":Hover"')], "mission.type"),
    ("mission module only", [*RUN, HOVER, *_set('mission.type="json:"')], "mission.type"),
    ("mission unknown", [*RUN, HOVER, *_set("mission.type=hoover")], "mission.type"),
    ("mission stdlib", [*RUN, HOVER, *_set("mission.type=json")], "mission.type"),
    ("mission module path", [*RUN, HOVER, *_set("mission.type=skyswarm.core.backends")], "mission"),
    ("mission not a class", [*RUN, HOVER, *_set('mission.type="json:dumps"')], "mission.type"),
    (
        "mission wrong class",
        [*RUN, HOVER, *_set('mission.type="not_a_mission_mod:Thing"')],
        "mission.type",
    ),
    (
        "mission import raises",
        [*RUN, HOVER, *_set('mission.type="bad_import_mod:X"')],
        "RuntimeError",
    ),
    (
        "mission syntax error",
        [*RUN, HOVER, *_set('mission.type="bad_syntax_mod:X"')],
        "SyntaxError",
    ),
    (
        "mission missing dep",
        [*RUN, HOVER, *_set('mission.type="bad_dep_mod:X"')],
        "ModuleNotFoundError",
    ),
    # a bare module name is not imported (it would raise RuntimeError): only looked up
    (
        "mission bare module",
        [*RUN, HOVER, *_set("mission.type=bad_import_mod")],
        "expected an installed mission",
    ),
    ("mission no module", [*RUN, HOVER, *_set('mission.type="no_such_mod_q:X"')], "mission.type"),
    ("mission number", [*RUN, HOVER, *_set("mission.type=3")], "mission.type"),
    ("mission list", [*RUN, HOVER, *_set("mission.type=[1]")], "mission.type"),
    # -- agents
    ("zero agents", [*RUN, HOVER, *_set("agents.count=0")], "agents.count"),
    ("empty agent list", [*RUN, HOVER, *_set("agents.count=0"), *_set("agents.list=[]")], "agents"),
    ("negative count", [*RUN, HOVER, *_set("agents.count=-1")], "agents.count"),
    ("count float", [*RUN, HOVER, *_set("agents.count=2.5")], "agents.count"),
    ("count text", [*RUN, HOVER, *_set("agents.count=many")], "agents.count"),
    (
        "count astronomical",
        [*RUN, HOVER, *_set("agents.count=4611686018427387904")],
        "agents.count",
    ),
    ("count over memory", [*RUN, HOVER, *_set("agents.count=100000")], "memory_limit_mb"),
    ("memory limit tiny", [*RUN, HOVER, *_set("simulation.memory_limit_mb=1")], "memory_limit_mb"),
    ("memory limit zero", [*RUN, HOVER, *_set("simulation.memory_limit_mb=0")], "memory_limit_mb"),
    ("agents under ground", [*RUN, HOVER, *_set("agents.origin=[0.0, 0.0, -1.0]")], "agents"),
    ("agents overlap", [*RUN, HOVER, *_set("agents.spacing_m=0.1")], "agents"),
    ("spacing zero", [*RUN, HOVER, *_set("agents.spacing_m=0")], "agents.spacing_m"),
    ("origin far", [*RUN, HOVER, *_set("agents.origin=[1e7, 0.0, 0.0]")], "agents.origin"),
    ("origin short", [*RUN, HOVER, *_set("agents.origin=[0.0, 0.0]")], "agents.origin"),
    ("origin inf", [*RUN, HOVER, *_set("agents.origin=[inf, 0.0, 0.0]")], "agents.origin"),
    ("layout unknown", [*RUN, HOVER, *_set('agents.layout="ring"')], "agents.layout"),
    (
        "list duplicate ids",
        [
            *RUN,
            HOVER,
            *_set("agents.count=0"),
            *_set("agents.list=[{id=1, position=[0.0, 0.0]}, {id=1, position=[5.0, 5.0]}]"),
        ],
        "agents.list[1].id",
    ),
    (
        "list overlapping",
        [
            *RUN,
            HOVER,
            *_set("agents.count=0"),
            *_set("agents.list=[{id=1, position=[0.0, 0.0]}, {id=2, position=[0.1, 0.0]}]"),
        ],
        "agents.list[1].position",
    ),
    (
        "list under ground",
        [
            *RUN,
            HOVER,
            *_set("agents.count=0"),
            *_set("agents.list=[{id=1, position=[0.0, 0.0, -2.0]}]"),
        ],
        "agents.list[0].position",
    ),
    (
        "list position nan",
        [*RUN, HOVER, *_set("agents.count=0"), *_set("agents.list=[{id=1, position=[nan, 0.0]}]")],
        "agents.list[0].position",
    ),
    (
        "list count mismatch",
        [*RUN, HOVER, *_set("agents.count=3"), *_set("agents.list=[{id=1, position=[0.0, 0.0]}]")],
        "agents.count",
    ),
    (
        "list missing position",
        [*RUN, HOVER, *_set("agents.count=0"), *_set("agents.list=[{id=1}]")],
        "agents.list[0].position",
    ),
    # -- world
    (
        "inside a box",
        [
            *RUN,
            HOVER,
            *_set('world.obstacles=[{type="box", center=[0.0, 0.0, 0.0], size=[2.0, 2.0, 2.0]}]'),
        ],
        "world.obstacles[0]",
    ),
    (
        "box size zero",
        [
            *RUN,
            HOVER,
            *_set('world.obstacles=[{type="box", center=[50.0, 0.0, 1.0], size=[0.0, 1.0, 1.0]}]'),
        ],
        "world.obstacles[0].size",
    ),
    (
        "box size negative",
        [
            *RUN,
            HOVER,
            *_set('world.obstacles=[{type="box", center=[50.0, 0.0, 1.0], size=[1.0, -1.0, 1.0]}]'),
        ],
        "world.obstacles[0].size",
    ),
    (
        "box centre inf",
        [*RUN, HOVER, *_set('world.obstacles=[{type="box", center=[inf, 0.0, 1.0]}]')],
        "world.obstacles[0].center",
    ),
    (
        "obstacle type",
        [*RUN, HOVER, *_set('world.obstacles=[{type="sphere"}]')],
        "world.obstacles[0].type",
    ),
    (
        "mesh missing",
        [
            *RUN,
            SCN,
            *_set('world.obstacles=[{type="mesh", mesh="nope.obj", center=[50.0, 0.0, 0.0]}]'),
        ],
        "world.obstacles[0].mesh",
    ),
    (
        "mesh empty name",
        [*RUN, SCN, *_set('world.obstacles=[{type="mesh", center=[50.0, 0.0, 0.0]}]')],
        "world.obstacles[0].mesh",
    ),
    (
        "mesh scale zero",
        [*RUN, SCN, *_set('world.obstacles=[{type="mesh", mesh="good.obj", scale=0.0}]')],
        "world.obstacles[0].scale",
    ),
    ("terrain missing", [*RUN, SCN, *_set('world.terrain="nope.obj"')], "world.terrain"),
    ("terrain garbage", [*RUN, SCN, *_set('world.terrain="garbage.obj"')], "OBJ mesh"),
    ("terrain empty", [*RUN, SCN, *_set('world.terrain="empty.obj"')], "OBJ mesh"),
    ("terrain a directory", [*RUN, SCN, *_set('world.terrain="nonempty_out"')], "world.terrain"),
    ("ground not bool", [*RUN, HOVER, *_set("world.ground=1")], "world.ground"),
    # -- airframes
    ("airframe missing", [*RUN, SCN, *_set('uav.airframe="nope.toml"')], "uav.airframe"),
    ("airframe passwd", [*RUN, SCN, *_set('uav.airframe="passwd"')], "passwd"),
    (
        "airframe syntax",
        [*RUN, SCN, *_set('uav.airframe="airframe_syntax.toml"')],
        "valid TOML",
    ),
    (
        "airframe negative mass",
        [*RUN, SCN, *_set('uav.airframe="airframe_negative_mass.toml"')],
        "airframe.mass_kg",
    ),
    (
        "airframe unknown section",
        [*RUN, SCN, *_set('uav.airframe="airframe_unknown.toml"')],
        "[airframe] or [control]",
    ),
    ("airframe inf", [*RUN, SCN, *_set('uav.airframe="airframe_inf.toml"')], "airframe.mass_kg"),
    ("airframe binary", [*RUN, SCN, *_set('uav.airframe="binary.toml"')], "binary.toml"),
    # -- mission sections and timing
    ("altitude inf", [*RUN, HOVER, *_set("hover.altitude_m=inf")], "hover.altitude_m"),
    ("altitude absurd", [*RUN, HOVER, *_set("hover.altitude_m=1e300")], "hover.altitude_m"),
    ("cell size tiny", [*RUN, FLOCK, *_set("coverage.cell_m=0.0001")], "memory_limit_mb"),
    (
        "area size zero",
        [*RUN, FLOCK, *_set("areas=[{id=1, center=[0.0, 0.0], size=[0.0, 10.0]}]")],
        "areas[0].size",
    ),
    ("no areas", [*RUN, FLOCK, *_set("areas=[]")], "areas"),
    ("tick not whole", [*RUN, HOVER, *_set("results.trajectory_hz=7")], "results.trajectory_hz"),
    ("tick too big", [*RUN, HOVER, *_set("simulation.tick_s=1")], "simulation.tick_s"),
    ("rate inf", [*RUN, HOVER, *_set("results.timeseries_hz=inf")], "results.timeseries_hz"),
    ("gravity negative", [*RUN, HOVER, *_set("simulation.gravity=-9.81")], "simulation.gravity"),
    ("gravity inf", [*RUN, HOVER, *_set("simulation.gravity=inf")], "simulation.gravity"),
    ("wind speed inf", [*RUN, "hover_wind", *_set("wind.speed_m_s=inf")], "wind.speed_m_s"),
    ("geo origin inf", [*RUN, HOVER, *_set("geo.origin=[inf, 0.0, 0.0]")], "geo.origin"),
    (
        "base station inf",
        [*RUN, FLOCK, *_set("comms.base_stations=[{id=100, position=[inf, 0.0]}]")],
        "comms.base_stations",
    ),
    (
        "waypoints short",
        [*RUN, "waypoints", *_set("waypoints.points=[[1.0, 2.0]]")],
        "waypoints.points[0]",
    ),
    ("boids goal short", [*RUN, "boids", *_set("boids.goal=[1.0]")], "boids.goal"),
    # -- output
    ("out is a file", ["run", "--quiet", HOVER, *SHORT, "--out", "a_file"], "--out"),
    ("out not empty", ["run", "--quiet", HOVER, *SHORT, "--out", "nonempty_out"], "--out"),
    ("out unwritable", ["run", "--quiet", HOVER, *SHORT, "--out", "/proc/no/such/dir"], "--out"),
    ("out under a file", ["run", "--quiet", HOVER, *SHORT, "--out", "a_file/run"], "--out"),
    # -- replayed inputs
    ("inputs missing", [*RUN, HOVER, *SHORT, "--inputs", "nope.csv"], "nope.csv"),
    (
        "inputs bad header",
        [*RUN, HOVER, *SHORT, "--inputs", "inputs_bad_header.csv"],
        "inputs_bad_header.csv",
    ),
    (
        "inputs bad row",
        [*RUN, HOVER, *SHORT, "--inputs", "inputs_bad_row.csv"],
        "inputs_bad_row.csv",
    ),
    (
        "inputs bad mode",
        [*RUN, HOVER, *SHORT, "--inputs", "inputs_bad_mode.csv"],
        "inputs_bad_mode.csv",
    ),
    ("inputs empty", [*RUN, HOVER, *SHORT, "--inputs", "inputs_empty.csv"], "inputs_empty.csv"),
    ("inputs binary", [*RUN, HOVER, *SHORT, "--inputs", "inputs_binary.csv"], "inputs_binary.csv"),
    (
        "inputs json garbage",
        [*RUN, HOVER, *SHORT, "--inputs", "inputs_json_bad/inputs.csv"],
        "inputs",
    ),
    (
        "inputs json shape",
        [*RUN, HOVER, *SHORT, "--inputs", "inputs_json_shape/inputs.csv"],
        "inputs",
    ),
    (
        "inputs json profile",
        [*RUN, HOVER, *SHORT, "--inputs", "inputs_json_profile/inputs.csv"],
        "profile",
    ),
    ("inputs a directory", [*RUN, HOVER, *SHORT, "--inputs", "nonempty_out"], "nonempty_out"),
    # -- readers
    ("plot no dir", ["plot", "no_run"], "no_run"),
    ("plot empty dir", ["plot", "run_empty"], "run_empty"),
    ("plot no records", ["plot", "run_no_records"], "run_no_records"),
    ("export no dir", ["export", "no_run", "--csv", "x.csv"], "no_run"),
    # the working folder is no run: said so, not "a file outside the run directory ."
    ("export no run here", ["export", ".", "--csv", "x.csv"], "a results directory of"),
    ("export torn header", ["export", "run_torn_header", "--csv", "x.csv"], "trajectory.json"),
    ("export empty header", ["export", "run_empty_header", "--csv", "x.csv"], "trajectory.json"),
    ("export no records", ["export", "run_no_records", "--csv", "x.csv"], "run_no_records"),
    ("export no format", ["export", "run_no_records"], "export"),
    ("replay no dir", ["replay", "no_run", "--video", "x.mp4"], "no_run"),
    ("replay torn header", ["replay", "run_torn_header", "--video", "x.mp4"], "trajectory.json"),
    ("replay no records", ["replay", "run_no_records", "--video", "x.mp4"], "run_no_records"),
]


def _scalar_keys(scenario_name: str) -> list[tuple[str, type, bool]]:
    """(key path, float or int, infinite allowed) of every scalar number key of a scenario's
    core and mission sections (tables inside lists left out)."""
    sc = load_scenario(scenario_name)
    sections = dict(CORE_SECTIONS) | dict(sc.mission_class.sections)
    return [(k, tp, bool(meta.get("inf_ok"))) for k, tp, meta in number_keys(sections)]


def _generated() -> list[tuple[str, list[str], str]]:
    cases, seen = [], set()
    for name in (HOVER, FLOCK):
        for key, tp, inf_ok in _scalar_keys(name):
            if key in seen:  # a core key once
                continue
            seen.add(key)
            if tp is float:
                bad = "nan" if inf_ok else "inf"
                cases.append((f"{name} {key}={bad}", [*RUN, name, *_set(f"{key}={bad}")], key))
            else:
                cases.append((f"{name} {key}=0.5", [*RUN, name, *_set(f"{key}=0.5")], key))
    return cases


CASES = HAND + [c for c in _generated() if c[1] not in [h[1] for h in HAND]]


def _write_assets(where: Path) -> None:
    for name, content in ASSETS.items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    (where / "good.obj").write_text(GOOD_OBJ)
    (where / SCN).write_text((CONFIGS / "hover.toml").read_text(encoding="utf-8"))


def _case_argv(cwd: Path, argv: list[str]) -> list[str]:
    argv = [str(cwd / "OUT") if a == "OUT" else a for a in argv]
    if argv[:1] == ["run"] and "--duration" not in argv:
        i = argv.index("--out") + 2 if "--out" in argv else 1
        argv = argv[: i + 1] + SHORT + argv[i + 1 :]  # after CONFIG: a wrongly passed run is short
    return argv


def _new_files(cwd: Path, before: list[str]) -> list[str]:
    after = sorted(p.name for p in cwd.iterdir() if p.name != "__pycache__")
    return sorted(set(after) - set(before))


def _run_case(base: Path, index: int, argv: list[str]) -> tuple[int, str, bool, list[str]]:
    """The case through the real CLI, in a subprocess."""
    cwd = base / f"case{index:03d}"
    cwd.mkdir()
    _write_assets(cwd)
    before = sorted(p.name for p in cwd.iterdir())
    env = dict(os.environ, PYTHONPATH=str(cwd), PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-m", "skyswarm.app.cli", *_case_argv(cwd, argv)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stderr, (cwd / "OUT").exists(), _new_files(cwd, before)


def _run_in_process(cwd: Path, argv: list[str], monkeypatch, capfd) -> tuple[int, str, bool, list]:
    """The case through `main()` in this process, as the subprocess would run it: its own
    working directory and import path (its mission modules imported afresh), warnings off."""
    from skyswarm.app.cli import main

    cwd.mkdir()
    _write_assets(cwd)
    before = sorted(p.name for p in cwd.iterdir())
    monkeypatch.chdir(cwd)
    monkeypatch.syspath_prepend(str(cwd))
    for name in [m for m in sys.modules if m.endswith("_mod")]:
        monkeypatch.delitem(sys.modules, name)
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(_case_argv(cwd, argv))
    stderr = capfd.readouterr().err
    return code, stderr, (cwd / "OUT").exists(), _new_files(cwd, before)


def _assert_refused(outcome: tuple[int, str, bool, list[str]], needle: str) -> None:
    code, stderr, out_written, new_files = outcome
    lines = stderr.splitlines()
    assert code == 2, f"exit {code}: {stderr[-2000:]}"
    assert len(lines) == 1, stderr[-2000:]
    assert lines[0].startswith("skyswarm: error: ") and "Traceback" not in stderr
    assert needle in lines[0], lines[0]
    assert not out_written  # no results directory
    assert new_files == [], new_files  # nor anything else (the default results/ included)
    assert "root:x:0:0" not in stderr  # never a raw line of a non-TOML file


def test_the_catalogue_holds_at_least_150_distinct_cases():
    ids = [c[0] for c in CASES]
    assert len(set(ids)) == len(ids)  # distinct names
    assert len({tuple(c[1]) for c in CASES}) == len(CASES)  # and distinct command lines
    assert len(CASES) >= 150, len(CASES)


@pytest.mark.parametrize("case_id,argv,needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    tmp_path, monkeypatch, capfd, case_id, argv, needle
):
    _assert_refused(_run_in_process(tmp_path / "case", argv, monkeypatch, capfd), needle)


# Through the real CLI process too: the first case of each kind of the catalogue (the command
# line, files, mission names, agents, world, airframes, mission sections, output, replayed
# inputs, readers) and of the generated ones, and every case that reads a non-TOML file.
CLI_SAMPLE = [
    "no command",
    "seed not int",
    "set into a value",
    "missing file",
    "syntax error",
    "binary file",
    "latin-1 file",
    "passwd as scenario",
    "mission unknown",
    "mission not a class",
    "out not empty",
    "out unwritable",
    "inputs missing",
    "inputs bad header",
    "inputs binary",
    "plot no dir",
    "export torn header",
    "export no records",
    "replay no records",
]
CLI_SAMPLE += [CASES[i][0] for i in range(len(HAND), len(CASES), 25)]  # generated: every 25th
CLI_CASES = [c for c in CASES if c[0] in CLI_SAMPLE]


@pytest.mark.parametrize("case_id,argv,needle", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_the_cli_process_refuses_the_same_way(tmp_path, case_id, argv, needle):
    _assert_refused(_run_case(tmp_path, 0, argv), needle)


def test_the_cli_sample_names_real_cases():
    assert len(CLI_CASES) == len(set(CLI_SAMPLE)) >= 20


def test_inf_is_accepted_only_where_unlimited_is_meant():
    """Sanity of the generator: the one infinite default (a radio range) stays allowed."""
    allowed = [k for name in (HOVER, FLOCK) for k, tp, ok in _scalar_keys(name) if ok]
    assert all(k.startswith("comms.") for k in allowed), allowed


def _validate_argv(argv: list[str]) -> list[str] | None:
    """The `validate` command line of a `run` case whose fault is in the scenario (the file,
    --set, --seed, --duration), or None for a case about run-only options (--out, --inputs,
    --fps) that `validate` does not take."""
    if argv[:1] != ["run"] or any(a in argv for a in ("--inputs", "--fps", "--video")):
        return None
    if "--out" in argv and argv[argv.index("--out") + 1] != "OUT":
        return None
    rest = [a for a in argv[1:] if a not in ("--quiet", "--out", "OUT")]
    return ["validate", *rest]


VALIDATE_CASES = [(c[0], v, c[2]) for c in CASES if (v := _validate_argv(c[1])) is not None]


def test_validate_parity_covers_most_of_the_catalogue():
    # every scenario case is also put to `validate`; only run-only options are left out
    assert len(VALIDATE_CASES) >= 150, len(VALIDATE_CASES)


@pytest.mark.parametrize("case_id,argv,needle", VALIDATE_CASES, ids=[c[0] for c in VALIDATE_CASES])
def test_validate_rejects_what_run_rejects(tmp_path, monkeypatch, capsys, case_id, argv, needle):
    """`validate` and `run` share one code path: every scenario `run` refuses above, `validate`
    refuses with the same one line (in-process, `validate` writes nothing to compare)."""
    from skyswarm.app.cli import main

    _write_assets(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # the case's mission modules, as PYTHONPATH
    for name in [m for m in sys.modules if m.endswith("_mod")]:
        monkeypatch.delitem(sys.modules, name)  # each case imports its module afresh
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, f"validate passed what run rejects: {err or '(no error)'}"
    assert len(err.splitlines()) == 1 and needle in err, err
