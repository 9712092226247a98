"""Bad scenario files give one line naming file, key, value and expectation, and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skyswarm.app.cli import main
from skyswarm.core.config import load_scenario, parse_override

GOOD = """
[simulation]
duration_s = 1.0
seed = 3

[mission]
type = "missions.drop_test"

[agents]
count = 2
"""

# (name, scenario text, substrings the one-line error must contain)
BAD = [
    ("syntax", "[simulation]\nseed = = 3\n", ["(syntax)", "seed = = 3", "line 2"]),
    (
        "unknown key",
        GOOD.replace("seed = 3", "sede = 3"),
        ["simulation.sede", "did you mean 'seed'"],
    ),
    (
        "wrong type",
        GOOD.replace("seed = 3", 'seed = "three"'),
        ["simulation.seed", "'three'", "an integer"],
    ),
    (
        "out of range",
        GOOD.replace("duration_s = 1.0", "duration_s = -5.0"),
        ["simulation.duration_s", "-5.0", "> 0.0"],
    ),
    ("tick not positive", GOOD + "", []),  # replaced below
    (
        "duplicate ids",
        GOOD.replace("count = 2", "")
        + "[[agents.list]]\nid = 4\nposition = [0, 0]\n"
        + "[[agents.list]]\nid = 4\nposition = [1, 1]\n",
        ["agents.list[1].id", "4", "an id not used before"],
    ),
    (
        "missing mission module",
        GOOD.replace("missions.drop_test", "missions.no_such_thing"),
        ["mission.type", "'missions.no_such_thing'", "an installed mission"],
    ),
    (
        "unknown section",
        GOOD + "\n[simulaton]\nseed = 1\n",
        ["simulaton", "did you mean 'simulation'"],
    ),
    (
        "bad layout choice",
        GOOD.replace("count = 2", 'count = 2\nlayout = "gird"'),
        ["agents.layout", "'gird'", "did you mean 'grid'"],
    ),
    (
        "position length",
        GOOD.replace("count = 2", "") + "[[agents.list]]\nid = 1\nposition = [0, 0, 0, 0]\n",
        ["agents.list[0].position", "2 to 3 values"],
    ),
    (
        "mission section bad value",
        GOOD + "\n[drop_test]\nmass_kg = 0\n",
        ["drop_test.mass_kg", "> 0.0"],
    ),
    ("missing mission", "[simulation]\nseed = 1\n", ["mission", "a [mission] table"]),
    (
        "bool for number",
        GOOD.replace("duration_s = 1.0", "duration_s = true"),
        ["simulation.duration_s", "True", "a number"],
    ),
]
BAD[4] = (
    "tick not positive",
    GOOD.replace("duration_s = 1.0", "duration_s = 1.0\ntick_s = 0"),
    ["simulation.tick_s", "0", "> 0.0"],
)


@pytest.mark.parametrize("name,text,needles", BAD, ids=[b[0] for b in BAD])
def test_bad_config_one_line_error_exit_2(tmp_path, capsys, name, text, needles):
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    code = main(["validate", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "\n" not in err, err
    assert err.startswith(f"skyswarm: error: {path}: "), err
    for needle in needles:
        assert needle in err, f"{needle!r} not in {err!r}"


def test_bad_config_from_a_real_process_has_no_traceback(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace("seed = 3", "seed = -1"))
    proc = subprocess.run(
        [sys.executable, "-m", "skyswarm.app.cli", "run", str(path), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "simulation.seed = -1: expected a value >= 0" in proc.stderr
    assert not (tmp_path / "r").exists()  # nothing half-written for a rejected config


def test_missing_file_is_bad_input(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.toml")]) == 2
    assert "an existing TOML file" in capsys.readouterr().err


def test_overrides_apply_and_are_validated(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(GOOD)
    sc = load_scenario(
        path, ["agents.count=5", "simulation.duration_s=2.5", "drop_test.height_m=3"]
    )
    assert sc.agents.count == 5 and sc.simulation.duration_s == 2.5
    assert sc.section("drop_test").height_m == 3.0
    assert main(["validate", str(path), "--set", "agents.cuont=5"]) == 2
    assert "agents.cuont" in capsys.readouterr().err
    assert parse_override("mission.type=missions.drop_test") == (
        "mission.type",
        "missions.drop_test",
    )
    assert parse_override("agents.origin=[1, 2, 3]") == ("agents.origin", [1, 2, 3])


def test_generated_layouts():
    from skyswarm.core.config import AgentsConfig

    diag = AgentsConfig(count=3, spacing_m=2.0).resolved()
    assert [s.position for s in diag] == [(0, 0, 0), (2, 2, 0), (4, 4, 0)]
    assert [s.id for s in diag] == [1, 2, 3]
    grid = AgentsConfig(count=5, layout="grid", spacing_m=1.0).resolved()
    assert [s.position[:2] for s in grid] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1)]


def test_every_shipped_scenario_validates(repo_root: Path):
    scenarios = sorted((repo_root / "configs").glob("*.toml"))
    assert scenarios, "no shipped scenarios"
    for path in scenarios:
        sc = load_scenario(path)
        assert sc.simulation.duration_s > 0, path


def test_mission_cross_section_checks_run_at_validation(repo_root, tmp_path, capsys):
    import tomli_w
    import tomllib

    data = tomllib.loads((repo_root / "configs/flocking_coverage.toml").read_text())
    del data["comms"]["base_stations"]
    data["uav"]["airframe"] = str(repo_root / "configs/airframes/quad_x.toml")
    path = tmp_path / "no_base.toml"
    path.write_text(tomli_w.dumps(data))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "comms.base_stations = []: expected at least one [[comms.base_stations]]" in err


def test_no_pybullet_banner_in_cli_output(repo_root):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "skyswarm.app.cli",
            "validate",
            str(repo_root / "configs/hover.toml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    assert "build time" not in proc.stdout + proc.stderr


def test_missing_airframe_and_results_dir_are_bad_input(repo_root, tmp_path, capsys):
    hover = str(repo_root / "configs/hover.toml")
    assert main(["validate", hover, "--set", "uav.airframe=nope.toml"]) == 2
    err = capsys.readouterr().err
    assert (
        "uav.airframe = 'nope.toml': expected a shipped airframe (quad_x, quad_x_rotor, "
        "quad_x_simple) or an existing airframe file" in err
    )
    assert main(["replay", str(tmp_path / "no_run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("expected a results directory of `skyswarm run` (no trajectory.json)")
    assert main(["plot", str(tmp_path / "no_run")]) == 2


@pytest.mark.parametrize(
    "config,override,key",
    [
        ("flocking_coverage.toml", "results.trajectory_hz=7", "results.trajectory_hz = 7.0"),
        (
            "flocking_coverage.toml",
            "flocking.heartbeat_period_s=0.0031",
            "flocking.heartbeat_period_s = 0.0031",
        ),
        ("boids.toml", "boids.behaviour_hz=7", "boids.behaviour_hz = 7.0"),
    ],
)
def test_timings_must_be_whole_ticks(repo_root, capsys, config, override, key):
    # Rates and periods that are not whole ticks would be rounded silently: they are errors.
    assert main(["validate", str(repo_root / "configs" / config), "--set", override]) == 2
    err = capsys.readouterr().err
    assert key in err and "whole number (>= 1) of 0.0025 s ticks" in err
