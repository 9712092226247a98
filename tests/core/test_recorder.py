"""Results directories: contents, bit-identical reruns, seeds, and surviving a SIGKILL."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from skyswarm.app.cli import main
from skyswarm.app.exits import EXIT_TIME_LIMIT
from skyswarm.core.recorder import TRAJECTORY_DTYPE, read_trajectory
from skyswarm.core.simulator import STREAMS, RandomStreams


def run(repo_root: Path, out: Path, *extra: str) -> None:
    code = main(
        ["run", str(repo_root / "configs/drop_test.toml"), "--out", str(out), "--quiet", *extra]
    )
    assert code == 0


def test_results_directory_contents(repo_root, tmp_path):
    out = tmp_path / "r"
    run(repo_root, out, "--set", "drop_test.push_force_n=1.0")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 1 and summary["stop_reason"] == "mission done"
    assert summary["ticks"] == round(summary["sim_time_s"] / 0.0025)
    assert summary["metrics"]["landed"] == 9
    assert summary["metrics"]["max_fall_error_m"] < 1e-9  # closed form of Bullet's integrator
    assert summary["real_time_factor"] > 0 and summary["versions"]["pybullet"]
    traj = read_trajectory(out)
    header = json.loads((out / "trajectory.json").read_text())
    assert header["record_bytes"] == TRAJECTORY_DTYPE.itemsize
    assert [a["id"] for a in header["agents"]] == list(range(1, 10))
    # 40 Hz = every 10 ticks, from tick 0, nine boxes per sample.
    ticks = np.unique(traj["tick"])
    assert ticks[0] == 0 and np.all(np.diff(ticks) == 10)
    assert len(traj) == 9 * len(ticks)
    first = traj[traj["tick"] == 0]
    assert np.allclose(first["position"][:, 2], 10.0)
    with open(out / "timeseries.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["time_s"] == "0.0" and float(rows[1]["time_s"]) == 0.05
    assert {"alive", "mean_z_m", "landed"} <= set(rows[0])
    assert "[drop_test]" in (out / "config.toml").read_text()


def test_same_seed_bit_identical_trajectories(repo_root, tmp_path):
    run(repo_root, tmp_path / "a", "--set", "drop_test.push_force_n=0.5")
    run(repo_root, tmp_path / "b", "--set", "drop_test.push_force_n=0.5")
    a = (tmp_path / "a/trajectory.bin").read_bytes()
    b = (tmp_path / "b/trajectory.bin").read_bytes()
    assert len(a) > 10_000 and a == b
    assert (tmp_path / "a/timeseries.csv").read_bytes() == (
        tmp_path / "b/timeseries.csv"
    ).read_bytes()


def test_seed_drives_every_random_stream():
    a1, a2, b = RandomStreams(7), RandomStreams(7), RandomStreams(8)
    for name in STREAMS:
        x1 = getattr(a1, name).random(4)
        assert np.array_equal(x1, getattr(a2, name).random(4))
        assert not np.array_equal(x1, getattr(b, name).random(4))
    # Streams are independent: draws in one do not shift another.
    c, d = RandomStreams(7), RandomStreams(7)
    c.comms.random(1000)
    assert np.array_equal(c.faults.random(3), d.faults.random(3))


def long_run(repo_root: Path, out: Path) -> list[str]:
    """A `skyswarm run` that lasts minutes: 400 boxes falling from 100 km."""
    return [
        sys.executable, "-m", "skyswarm.app.cli", "run", str(repo_root / "configs/drop_test.toml"),
        "--out", str(out), "--quiet", "--duration", "600",
        "--set", "agents.count=400", "--set", "drop_test.height_m=100000",
    ]  # fmt: skip


def test_sigkill_leaves_readable_partial_results(repo_root, tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        long_run(repo_root, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ts = out / "timeseries.csv"
            if ts.exists():
                lines = ts.read_text().splitlines()
                if len(lines) > 1 and float(lines[-1].split(",")[0]) >= 3.0:
                    break
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (out / "summary.json").exists()
    with open(out / "timeseries.csv") as f:
        rows = list(csv.DictReader(f))
    assert float(rows[-1]["time_s"]) >= 3.0
    assert all(r["alive"] == "400" for r in rows if r["alive"])  # complete rows read back
    traj = read_trajectory(out)
    assert traj["tick"].max() >= 3.0 / 0.0025 - 10
    assert np.isfinite(traj["position"]).all()
    # Every complete sample holds all 400 boxes; at most the last one is cut short.
    counts = np.unique(traj["tick"], return_counts=True)[1]
    assert np.all(counts[:-1] == 400)


def test_ctrl_c_stops_cleanly_with_exit_130_and_a_summary(repo_root, tmp_path):
    out = tmp_path / "interrupted"
    proc = subprocess.Popen(
        long_run(repo_root, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ts = out / "timeseries.csv"
        if ts.exists() and len(ts.read_text().splitlines()) > 20:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted" and summary["sim_time_s"] > 0.9
    assert summary["real_time_factor"] > 0
    assert "\nstopped: interrupted at t = " in "\n" + stdout  # after the outcome line


DEATH_AT = """[simulation]
tick_s = 0.0025
duration_s = 2.5
seed = 1
[mission]
type = "missions.hover"
[agents]
count = 2
layout = "line"
spacing_m = 6.0
origin = [-2.0, 3.0, 0.0]  # UAV 2 starts at x 4, y 3: x != y
[uav]
airframe = "quad_x"
[hover]
altitude_m = 4.0
settle_s = 0.5
[results]
trajectory_hz = 40.0
[[events]]
at_s = 2.0
action = "kill"
target = 2
"""


def test_a_death_position_reads_back_as_x_east_y_north_everywhere(tmp_path):
    # UAV 2 hovers at (4, 3, 4) and is killed at 2 s: events.csv, load_results, the map plot's
    # reader and the KML export all place its death at x 4 east, y 3 north (swapped: 3, 4).
    from skyswarm import load_results
    from skyswarm.app.export import _deaths, write_kml
    from skyswarm.app.plot import read_deaths
    from skyswarm.core.geo import wgs84_to_enu

    (tmp_path / "s.toml").write_text(DEATH_AT, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet"]) == EXIT_TIME_LIMIT
    traj = read_trajectory(out)
    last = traj[traj["agent_id"] == 2][-1]  # tick 790, 10 ticks before its death
    assert last["tick"] == 790
    where = last["position"]
    np.testing.assert_allclose(where, [4.0, 3.0, 4.0], atol=0.05)  # its hover spot
    with open(out / "events.csv", newline="") as f:
        (death,) = [r for r in csv.DictReader(f) if r["kind"] == "death"]
    assert (death["agent_id"], death["tick"]) == ("2", "800")
    xyz = [float(death[k]) for k in ("x", "y", "z")]
    np.testing.assert_allclose(xyz, where, atol=1e-3)  # hovering still: within 1 mm
    with open(out / "timeseries.csv", newline="") as f:
        alive = {float(r["time_s"]): int(r["alive"]) for r in csv.DictReader(f)}
    assert {n for t, n in alive.items() if t < 2.0} == {2}  # both, until the kill
    assert {n for t, n in alive.items() if t > 2.0} == {1}  # one after it
    frame = load_results(out).deaths
    assert frame[["x", "y", "z"]].to_numpy().tolist() == [xyz]
    assert read_deaths(out) == [(2.0, 2, xyz[0], xyz[1])]  # the map's red x
    origin = (47.0, 8.0, 400.0)
    write_kml(tmp_path / "r.kml", traj, _deaths(out), origin, "r")
    kml = (tmp_path / "r.kml").read_text()
    point = kml.split("died at 2.00 s")[1].split("<coordinates>")[1].split("</coordinates>")[0]
    lon, lat, alt = (float(v) for v in point.split(","))
    np.testing.assert_allclose(wgs84_to_enu(np.array([[lat, lon, alt]]), origin)[0], xyz, atol=0.01)
