"""Nothing of the user's is overwritten or deleted (issue 28): a results directory is emptied
only when skyswarm wrote it (its marker) and it is a real directory that is not the working
directory, home, or a parent of the scenario; exports never land on a file of a run directory
or on an existing file without --overwrite; two writers of one directory never interleave.

Every refusal is checked byte for byte: the hash of every file below the user's folder (and of
the run) is the same before and after."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skyswarm.app import export
from skyswarm.app.cli import main
from skyswarm.app.exits import EXIT_TIME_LIMIT
from skyswarm.app.results_dir import MARKER, claim
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.schema import ConfigError

ROOT = Path(__file__).resolve().parents[2]
RUN = ["run", "drop_test", "--quiet", "--duration", "0.2"]  # boxes still falling: time limit
SAMPLES = 9 * 9  # 0.2 s at 40 Hz from t = 0 (ticks 0, 10, ..., 80) of 9 agents


def tree_hash(folder: Path) -> dict[str, str]:
    """Every entry below `folder` (not following symlinks): relative path -> sha256 of its
    bytes, 'dir', or 'link -> target'."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = f"link -> {os.readlink(path)}"
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture
def users(tmp_path: Path) -> Path:
    """A folder of the user's: two files and a subfolder."""
    folder = tmp_path / "thesis"
    (folder / "figures").mkdir(parents=True)
    (folder / "chapter1.tex").write_text("\\section{Intro}\n")
    (folder / "figures" / "plot.pdf").write_bytes(bytes(range(256)))
    return folder


@pytest.fixture(scope="module")
def a_run(tmp_path_factory) -> Path:
    """One short drop_test run (shared, read-only: tests that change it copy it)."""
    out = tmp_path_factory.mktemp("shared") / "run"
    assert main([*RUN, "--out", str(out)]) == EXIT_TIME_LIMIT
    return out


def _one_line_refusal(capsys, *needles: str) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err
    return err


def test_overwrite_through_a_symlink_to_the_users_folder_is_refused(tmp_path, users, capsys):
    link = tmp_path / "LINK"
    link.symlink_to(users, target_is_directory=True)
    before = tree_hash(users)
    assert main([*RUN, "--out", str(link), "--overwrite"]) == 2
    _one_line_refusal(capsys, "--out", "not a symlink")
    assert tree_hash(users) == before
    assert link.is_symlink()


def test_overwrite_of_a_folder_skyswarm_did_not_write_is_refused(users, capsys):
    before = tree_hash(users)
    assert main([*RUN, "--out", str(users), "--overwrite"]) == 2
    _one_line_refusal(capsys, MARKER)
    assert tree_hash(users) == before


def test_the_working_directory_home_and_the_scenarios_parents_are_refused(
    tmp_path, users, monkeypatch, capsys
):
    # even when skyswarm's marker is in them (e.g. copied there): never emptied
    (users / MARKER).write_text("{}")
    before = tree_hash(users)
    scenario = users / "figures" / "drop.toml"
    scenario.write_text((ROOT / "configs" / "drop_test.toml").read_text())
    before = tree_hash(users)
    monkeypatch.chdir(users)
    assert main([*RUN, "--out", ".", "--overwrite"]) == 2
    _one_line_refusal(capsys, "working directory")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(users))
    assert main([*RUN, "--out", str(users), "--overwrite"]) == 2
    _one_line_refusal(capsys, "home directory")
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    argv = ["run", str(scenario), "--quiet", "--duration", "0.2", "--out", str(users)]
    assert main([*argv, "--overwrite"]) == 2
    _one_line_refusal(capsys, "scenario's folder")
    assert tree_hash(users) == before


def test_a_mount_point_is_never_emptied(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    assert main([*RUN, "--out", str(out)]) == EXIT_TIME_LIMIT
    capsys.readouterr()
    before = tree_hash(out)
    real_ismount = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: Path(p) == out or real_ismount(p))
    assert main([*RUN, "--out", str(out), "--overwrite"]) == 2
    _one_line_refusal(capsys, "mount point")
    assert tree_hash(out) == before


def test_a_held_directory_is_refused_to_a_second_claim(tmp_path):
    out = tmp_path / "run"
    first = claim(out, overwrite=False)
    try:
        with pytest.raises(ConfigError, match="no other skyswarm run is writing .*pid"):
            claim(out, overwrite=True)
    finally:
        first.release()
    claim(out, overwrite=False).release()  # released: the next one may have it


def test_two_concurrent_runs_into_one_out_one_refused_the_other_intact(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "skyswarm.app.cli", *RUN[:-1], "1.0", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    procs = [
        subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read().decode()) for p in procs]
    for p in procs:
        p.stdout.close(), p.stderr.close()
    codes = sorted(code for code, _ in results)
    assert codes == [2, EXIT_TIME_LIMIT], results
    refused = next(err for code, err in results if code == 2)
    assert refused.count("\n") == 1 and "--out" in refused, refused
    # the winner's run is whole: 1.0 s at 40 Hz from t = 0 -> 41 samples of 9 agents
    assert len(read_trajectory(out)) == 41 * 9
    assert (out / "summary.json").is_file()


# -- exports ---------------------------------------------------------------------------------
def test_export_onto_a_file_of_the_run_is_refused(a_run, tmp_path, capsys):
    before = tree_hash(a_run)
    for name in ("trajectory.bin", "summary.json", MARKER, "new.csv"):
        assert main(["export", str(a_run), "--csv", str(a_run / name), "--overwrite"]) == 2
        _one_line_refusal(capsys, "outside the run directory")
    link = tmp_path / "innocent.csv"
    link.symlink_to(a_run / "trajectory.bin")  # a symlink into the run: refused as well
    assert main(["export", str(a_run), "--csv", str(link), "--overwrite"]) == 2
    _one_line_refusal(capsys, "outside the run directory")
    assert tree_hash(a_run) == before


def test_export_onto_another_runs_file_is_refused(a_run, tmp_path, capsys):
    other = tmp_path / "other"
    assert main([*RUN, "--out", str(other)]) == EXIT_TIME_LIMIT
    capsys.readouterr()
    before = tree_hash(other)
    assert main(["export", str(a_run), "--kml", str(other / "x.kml"), "--overwrite"]) == 2
    _one_line_refusal(capsys, "outside run directories")
    assert tree_hash(other) == before


def test_export_onto_an_existing_file_needs_overwrite(a_run, users, capsys):
    target = users / "chapter1.tex"
    before = tree_hash(users)
    assert main(["export", str(a_run), "--csv", str(target)]) == 2
    _one_line_refusal(capsys, "a new file (or --overwrite)")
    assert tree_hash(users) == before
    assert main(["export", str(a_run), "--csv", str(target), "--overwrite"]) == 0
    assert target.read_text().splitlines()[0] == "time_s,agent_id,x_m,y_m,z_m"
    assert len(target.read_text().splitlines()) == 1 + SAMPLES


def test_an_export_that_fails_midway_leaves_the_old_file_and_no_debris(a_run, users, monkeypatch):
    target = users / "chapter1.tex"
    before = tree_hash(users)

    class Full:
        def __init__(self, f):
            self.rows = 0

        def writerow(self, row):
            self.rows += 1
            if self.rows > 3:
                raise OSError(28, "No space left on device")

    monkeypatch.setattr(export.csv, "writer", Full)
    assert main(["export", str(a_run), "--csv", str(target), "--overwrite"]) == 1
    assert tree_hash(users) == before  # the old bytes, and no temporary file left


def test_an_export_or_migrate_into_a_missing_folder_is_refused_before_any_work(
    a_run, users, tmp_path, capsys
):
    # was exit 1 after reading the run, naming the temporary file (.x.csv.abc123.tmp)
    before = tree_hash(users)
    for target, why in (
        (tmp_path / "nodir" / "sub" / "x.csv", "does not exist"),
        (users / "chapter1.tex" / "x.csv", "is not a folder"),
    ):
        assert main(["export", str(a_run), "--csv", str(target)]) == 2
        err = _one_line_refusal(capsys, "--csv = '", "a file in an existing folder", why)
        assert ".tmp" not in err
    old = tmp_path / "old.toml"
    old.write_text((ROOT / "configs" / "hover.toml").read_text() + "[faults.rates]\nx = 1.0\n")
    assert main(["migrate", str(old), "--out", str(tmp_path / "nodir" / "new.toml")]) == 2
    _one_line_refusal(capsys, "--out", "does not exist")
    assert main(["migrate", str(old), "--out", str(users), "--overwrite"]) == 2
    _one_line_refusal(capsys, "--out", "this is a directory")
    assert tree_hash(users) == before
    assert not (tmp_path / "nodir").exists()


def test_run_refuses_before_starting_when_the_disk_cannot_hold_the_trajectory(
    tmp_path, monkeypatch, capsys
):
    # 1,000 UAVs for an hour at 20 Hz: ~6.9 GB uncompressed; the disk says 100 MB are free
    from skyswarm.app import results_dir

    real = shutil.disk_usage

    def small(path):
        return real(path)._replace(free=100 * 10**6)

    monkeypatch.setattr(results_dir.shutil, "disk_usage", small)
    out = tmp_path / "big"
    code = main(
        ["run", "hover", "--out", str(out), "--quiet", "--set", "agents.count=1000",
         "--set", "simulation.duration_s=3600", "--set", "simulation.physics=fast"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected room for the trajectory" in err, err
    assert "100.0 MB free" in err and not out.exists()  # refused before any work, nothing left
    monkeypatch.setattr(results_dir.shutil, "disk_usage", real)
    code = main(["run", "hover", "--out", str(out), "--quiet", "--duration", "0.5"])
    assert code in (0, EXIT_TIME_LIMIT) and (out / "trajectory.bin").is_file()  # fits: runs


def test_check_room_refuses_a_trajectory_the_disk_cannot_hold(tmp_path, monkeypatch):
    # for app/run_command.py, right after the size estimate is printed (before the run starts)
    from skyswarm.app.results_dir import check_room

    free = shutil.disk_usage(tmp_path).free
    check_room(tmp_path, free // 2)  # fits: nothing said
    with pytest.raises(ConfigError, match=r"--out = .*expected room for the trajectory \(~"):
        check_room(tmp_path, free + 10**9)

    def broken(path):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(shutil, "disk_usage", broken)
    check_room(tmp_path, 10**18)  # a filesystem that cannot tell: not refused


def test_overwrite_removes_symlinks_inside_a_run_never_what_they_point_to(tmp_path, users):
    out = tmp_path / "run"
    assert main([*RUN, "--out", str(out)]) == EXIT_TIME_LIMIT
    (out / "figures").symlink_to(users, target_is_directory=True)  # a link to the user's folder
    (out / "notes.tex").symlink_to(users / "chapter1.tex")  # and to one of the user's files
    before = tree_hash(users)
    assert main([*RUN, "--out", str(out), "--overwrite"]) == EXIT_TIME_LIMIT
    assert tree_hash(users) == before
    assert not os.path.lexists(out / "figures") and not os.path.lexists(out / "notes.tex")
    assert len(read_trajectory(out)) == SAMPLES


def test_a_sweep_folder_is_held_by_one_batch(tmp_path, users):
    from skyswarm.app.results_dir import hold

    first = hold(tmp_path / "sweep")
    try:
        with pytest.raises(ConfigError, match="no other skyswarm process is writing .*pid"):
            hold(tmp_path / "sweep")
    finally:
        first.release()
    hold(tmp_path / "sweep").release()  # released: the next batch may continue it
    link = tmp_path / "LINK"
    link.symlink_to(users, target_is_directory=True)
    before = tree_hash(users)
    with pytest.raises(ConfigError, match="not a symlink"):
        hold(link)
    assert tree_hash(users) == before


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_a_file_written_whole_gets_a_new_files_permissions(tmp_path, umask):
    """atomic_path's temporary file (tempfile's are 0600) is renamed into place with the mode
    any new file gets under the umask: a plot in a shared results folder stays readable."""
    from skyswarm.app.results_dir import atomic_path

    old = os.umask(umask)
    try:
        with atomic_path(tmp_path / "map.png") as tmp:
            tmp.write_bytes(b"png")
    finally:
        os.umask(old)
    assert (tmp_path / "map.png").stat().st_mode & 0o777 == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir()] == ["map.png"]
