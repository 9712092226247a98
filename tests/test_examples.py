"""Every script of examples/ runs green with a short duration (SKYSWARM_EXAMPLE_SECONDS), in a
temporary working directory, as a researcher would run it; the mission plug-in example is
pip-installed into a temporary target and run by its entry-point name; the waypoint controller,
written against the public API only, flies the shipped course to its end."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

EXAMPLES = ROOT / "examples"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))


def run_example(name: str, cwd: Path, seconds: float = 1.0, *args: str) -> str:
    env = dict(os.environ, SKYSWARM_EXAMPLE_SECONDS=str(seconds), MPLBACKEND="Agg")
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_there_are_at_least_eight_examples_and_a_plugin_package() -> None:
    assert len(SCRIPTS) >= 8, SCRIPTS
    assert (EXAMPLES / "mission_plugin" / "pyproject.toml").is_file()


def test_body_rate_controller(tmp_path: Path) -> None:
    out = run_example("body_rate_controller.py", tmp_path, 2.0)
    # 2 s of the 100 Hz altitude loop from 10 m towards 12 m: above 11 m and level flight held
    heights = [float(z) for z in out.split("[")[1].split("]")[0].split()]
    assert len(heights) == 4 and all(11.0 < z < 12.2 for z in heights), out
    assert "outcome: target reached" in out  # hover's verdict: no UAV lost to the end


def test_own_sensor(tmp_path: Path) -> None:
    out = run_example("own_sensor.py", tmp_path)
    # 2 UAVs x 10 Hz x 1 s (ticks 0.1 .. 1.0 s): 20 rows; sigma 0.05 m, so std within 0.02..0.1
    assert out.startswith("20 sonar readings"), out
    std = float(out.split("std ")[1].split(" m")[0])
    assert 0.02 < std < 0.1


def test_scenario_in_python(tmp_path: Path) -> None:
    out = run_example("scenario_in_python.py", tmp_path)
    assert "refused: agents.count = -1: expected a value >= 0" in out
    assert "loads back equal: True" in out and (tmp_path / "four_in_wind.toml").is_file()


def test_results_plot(tmp_path: Path) -> None:
    run_example("results_plot.py", tmp_path)
    png = tmp_path / "hover_heights.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_radio_loss_model(tmp_path: Path) -> None:
    out = run_example("radio_loss_model.py", tmp_path)
    counts = {
        line.split(":")[0].strip(): [int(w) for w in line.split() if w.isdigit()]
        for line in out.splitlines()
    }
    assert set(counts) == {"rayleigh", "cliff"}
    # both models see the same traffic (the same sends: loss draws come after); the cliff
    # drops every frame beyond 6 m and none within, the Rayleigh model some on both sides
    assert sum(counts["rayleigh"]) == sum(counts["cliff"]) > 0
    assert counts["cliff"] != counts["rayleigh"]


def test_sweep_to_pandas(tmp_path: Path) -> None:
    out = run_example("sweep_to_pandas.py", tmp_path)
    import csv

    rows = list(csv.DictReader((tmp_path / "drop_sweep_out" / "sweep.csv").open()))
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}  # 2 heights x 2 seeds
    assert "drop_test.height_m" in out


def test_gui_offscreen(tmp_path: Path) -> None:
    pytest.importorskip("moderngl")  # the gui extra (CI installs it with .[dev])
    out = run_example("gui_offscreen.py", tmp_path, 2.0)
    frames = sorted((tmp_path / "frames").glob("*.png"))
    assert len(frames) == 2, out  # 1 fps over 2 s
    assert all(f.stat().st_size > 5_000 for f in frames)


def test_every_script_has_a_test_here() -> None:
    tested = {n.removeprefix("test_") + ".py" for n in globals() if n.startswith("test_")}
    assert set(SCRIPTS) <= tested, sorted(set(SCRIPTS) - tested)


# -- the done-when tests ----------------------------------------------------------
PUBLIC = {"skyswarm", "skyswarm.extend", "numpy", "os", "sys"}  # and nothing else


def test_waypoint_controller(tmp_path: Path) -> None:
    # Written against the public API only: every import is skyswarm, skyswarm.extend or numpy
    # (os and sys read the duration argument).
    tree = ast.parse((EXAMPLES / "waypoint_controller.py").read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= PUBLIC, sorted(imported - PUBLIC)
    # It flies the shipped course (5 waypoints, 3 UAVs) to its end, within the scenario's
    # 120 s: every agent reaches every waypoint in order, and the run says so.
    out = run_example("waypoint_controller.py", tmp_path, 120.0)
    assert out.splitlines()[0].startswith("outcome: target reached at t = "), out
    reached = [line.split() for line in out.splitlines()[1:]]
    by_agent: dict[str, list[int]] = {}
    for words in reached:
        by_agent.setdefault(words[1], []).append(int(words[4]))
    assert by_agent == {a: [0, 1, 2, 3, 4] for a in ("1", "2", "3")}, out
    end_s = float(out.splitlines()[0].split("t = ")[1].split()[0])
    assert 5.0 < end_s < 120.0  # a 10 m square at up to 5 m/s takes more than 5 s


def test_a_mission_plugin_package_installs_and_runs_by_name(tmp_path: Path) -> None:
    # The example package is copied out (pip builds in its source folder), installed into a
    # private target with pip, and run by its entry-point name `climb` from that target only.
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "mission_plugin", source)
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    done = subprocess.run(
        [*pip, "--quiet", "--target", str(site), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert list(site.glob("skyswarm_climb-*.dist-info/entry_points.txt"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    cli = [sys.executable, "-m", "skyswarm.app.cli"]
    out = tmp_path / "run"
    done = subprocess.run(
        [*cli, "run", str(source / "climb.toml"), "--quiet", "--out", str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # 0: "target reached"
    summary = json.loads((out / "summary.json").read_text())
    # four UAVs climb 6 m (2 -> 8 m) at the position loop's climb limit: a few seconds
    assert summary["outcome"] == "target reached" and summary["alive"] == 4
    assert 1.0 < summary["metrics"]["arrived_s"] < 20.0
    # without the target on the path the name is unknown: the plug-in came from there only
    env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
    done = subprocess.run(
        [*cli, "validate", str(source / "climb.toml")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "mission.type = 'climb'" in done.stderr


def test_rl_swarm(tmp_path: Path) -> None:
    # the PettingZoo goal swap with a random and a scripted (radio-only) policy, one short episode
    out = run_example(
        "rl_swarm.py", tmp_path, 1.0, "--agents", "4", "--episodes", "1", "--seconds", "3"
    )
    assert "random" in out and "scripted" in out


def test_rl_hover_ppo(tmp_path: Path) -> None:
    # PPO on the vector env for a few updates, saved, then evaluated from 100 random starts
    pytest.importorskip("stable_baselines3")
    model = tmp_path / "ppo.zip"
    out = run_example(
        "rl_hover_ppo.py",
        tmp_path,
        1.0,
        "train",
        "--steps",
        "1024",
        "--envs",
        "4",
        "--out",
        str(model),
    )
    assert model.is_file() and "trained 1,024 steps" in out
