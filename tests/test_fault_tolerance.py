"""Faults survived through the real CLI: SIGINT and SIGKILL at seeded random moments (imports,
set-up, the run, the plots), a full disk (ENOSPC injected into the writes of a subprocess), a
killed batch worker and a killed batch coordinator followed by --resume.

Each leaves readable results, the documented exit code (1 I/O, 2 bad input, 130 interrupted),
one stderr line and no traceback, and no orphan process.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import random
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skyswarm.core.recorder import read_trajectory

ROOT = Path(__file__).resolve().parents[1]
BATCH_HELPERS = ROOT / "tests" / "core"  # batch_missions.py: a mission that kills its worker
CLI = [sys.executable, "-m", "skyswarm.app.cli"]
# ROOT.parent first: `skyswarm` is this checkout, not the one an editable install points at
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT.parent), str(ROOT), str(BATCH_HELPERS)]),
}
_RNG = random.Random(17)
# s after start: during the imports (~0.1 s), during set-up, then seeded random moments
MOMENTS = [0.1, 0.6, *sorted(round(_RNG.uniform(0.05, 4.0), 3) for _ in range(3))]


@pytest.mark.parametrize(
    ("mission", "stderr"),
    [
        ("CtrlCInExec", "skyswarm: interrupted"),
        ("CtrlCInCallback", "skyswarm: interrupted; results kept"),
    ],
)
def test_sigint_inside_exec_or_a_c_callback_still_exits_130(tmp_path, mission, stderr):
    """Two places where CPython bends Ctrl-C: a KeyboardInterrupt out of exec() makes the
    interpreter kill itself with SIGINT at exit (-2) although it was caught; one inside a ctypes
    callback is printed as 'Exception ignored' and dropped, so the run would go on to its end."""
    out = tmp_path / "run"
    args = ["run", "drop_test", "--quiet", "--duration", "60", "--out", str(out)]
    proc = _start([*args, "--set", f'mission.type="batch_missions:{mission}"'], tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.splitlines() == [stderr], err


def test_ctrl_c_in_a_tick_lets_the_tick_finish_then_stops_the_run(tmp_path):
    """Ctrl-C inside a tick does not cut the tick's code short (a KeyboardInterrupt raised
    inside multiprocessing's queue hand-over once left the video's render process waiting
    forever): the tick finishes, the loop stops at its next check, results kept, exit 130."""
    out = tmp_path / "run"
    args = ["run", "drop_test", "--quiet", "--duration", "60", "--out", str(out)]
    proc = _start([*args, "--set", 'mission.type="batch_missions:CtrlCInTick"'], tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.splitlines() == ["skyswarm: interrupted; results kept"], err
    assert (out / "after_ctrl_c").is_file()  # the tick went on past the signal
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["stop_reason"] == "interrupted"
    assert summary["sim_time_s"] < 5.0  # stopped at once (0.5 s after), not at the 60 s end


def _terminal_sigint() -> None:
    """In the child: Ctrl-C as a terminal delivers it (a test runner may have it ignored, and an
    ignored disposition is inherited across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, *args],
        cwd=cwd,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_terminal_sigint,
    )


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (from /proc), zombies excluded."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _alive(pids: set[int]) -> set[int]:
    live = set()
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            live.add(pid)
    return live


def _assert_gone(family: set[int], within_s: float = 10.0) -> None:
    """No orphan: every process the CLI had started is gone within `within_s`."""
    deadline = time.monotonic() + within_s
    while _alive(family) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(family), {p: Path(f"/proc/{p}/cmdline").read_bytes() for p in _alive(family)}


def _assert_readable(out: Path, cwd: Path) -> None:
    """What a cut run left is readable: the trajectory loads, `plot` either draws or says in
    one line that there is nothing yet (exit 2), never a traceback."""
    if not out.exists():
        return
    read_trajectory(out)  # a torn last record is dropped, never an exception
    proc = subprocess.run(
        [*CLI, "plot", str(out)], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    if proc.returncode == 2:
        assert len(proc.stderr.splitlines()) == 1, proc.stderr


def _cpu_s(pid: int) -> float:
    """The CPU seconds (user + system) process `pid` has used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@functools.cache
def _interpreter_start_cpu_s() -> float:
    """The CPU s of Python's own start here (`python -c pass` in the CLI's environment, the
    most of three: site and the .pth files, ~0.05-0.1 s): a signal before it lands before any
    code of skyswarm's could handle it."""
    spent = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "pass"], env=ENV, check=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return max(spent)


def _sleep_past_the_interpreter(proc: subprocess.Popen[str], moment: float) -> None:
    """Wait `moment` s of wall time, and on until the process has used twice the CPU of
    Python's own start: on a loaded machine 0.1 s of wall time can fall inside that start, while
    the CLI's imports (where the early moments aim) take ~0.5 s of CPU after it."""
    floor = 2.0 * _interpreter_start_cpu_s()
    time.sleep(moment)
    deadline = time.monotonic() + 60.0
    while _cpu_s(proc.pid) < floor and time.monotonic() < deadline:
        time.sleep(0.005)


@pytest.mark.parametrize("moment", MOMENTS, ids=[f"{m:.2f}s" for m in MOMENTS])
def test_sigint_at_a_random_moment_exits_130_in_one_line(tmp_path, moment):
    out = tmp_path / "run"
    proc = _start(["run", "hover", "--quiet", "--duration", "600", "--out", str(out)], tmp_path)
    _sleep_past_the_interpreter(proc, moment)
    family = _descendants(proc.pid)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    _assert_gone(family)
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("skyswarm: interrupted"), err
    _assert_readable(out, tmp_path)
    if (out / "summary.json").exists():  # interrupted in the loop: the summary says so
        assert '"stop_reason": "interrupted"' in (out / "summary.json").read_text()


def test_sigint_while_plotting_exits_130_and_keeps_the_run(tmp_path):
    """flocking_coverage plots after its run; Ctrl-C as soon as the summary is printed."""
    out = tmp_path / "run"
    proc = _start(
        ["run", "flocking_coverage", "--quiet", "--duration", "1", "--out", str(out)], tmp_path
    )
    for line in proc.stdout:
        if line.startswith("results:"):
            proc.send_signal(signal.SIGINT)
            break
    _, err = proc.communicate(timeout=120)
    # 5 (the 1 s run ends at its time limit, short of the coverage target) only if the plots
    # won the race
    assert proc.returncode in (5, 130), err
    assert "Traceback" not in err
    if proc.returncode == 130:
        assert err.splitlines() == ["skyswarm: interrupted"], err
    assert (out / "summary.json").is_file()  # written before the plots: kept
    _assert_readable(out, tmp_path)


@pytest.mark.parametrize("moment", MOMENTS, ids=[f"{m:.2f}s" for m in MOMENTS])
def test_sigkill_at_a_random_moment_leaves_readable_results(tmp_path, moment):
    out = tmp_path / "run"
    proc = _start(["run", "hover", "--quiet", "--duration", "600", "--out", str(out)], tmp_path)
    time.sleep(moment)
    family = _descendants(proc.pid)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    _assert_gone(family)
    _assert_readable(out, tmp_path)


# -- a full disk: ENOSPC injected into one write of a real CLI process --------------------------
INJECT = """
import errno, sys
{patch}
from skyswarm.app.cli import main
if __name__ == "__main__":  # batch workers start from this module's import: not a second main
    sys.exit(main(sys.argv[1:]))
"""
ENOSPC = "OSError(errno.ENOSPC, 'No space left on device')"
FULL_MID_RUN = f"""
from skyswarm.core import recorder
_orig = recorder.Recorder._write_trajectory
def _write(self, tick):
    if tick >= 400:  # 1 s into the run
        raise {ENOSPC}
    _orig(self, tick)
recorder.Recorder._write_trajectory = _write
"""
FULL_AT_START = f"""
import pathlib
_orig = pathlib.Path.write_text
def _write_text(self, *a, **k):
    if self.name == "config.toml":
        raise {ENOSPC}
    return _orig(self, *a, **k)
pathlib.Path.write_text = _write_text
"""
HALF_A_PLOT = f"""
import matplotlib.figure
def _savefig(self, fname, *a, **k):
    with open(fname, "wb") as f:  # half a PNG, then the disk is full
        f.write(b"\\x89PNG half")
    raise {ENOSPC}
matplotlib.figure.Figure.savefig = _savefig
"""
FULL_WHILE_PLOTTING = f"""
import matplotlib.figure
def _savefig(self, *a, **k):
    raise {ENOSPC}
matplotlib.figure.Figure.savefig = _savefig
"""


def _run_injected(patch: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    script = cwd / "inject.py"
    script.write_text(INJECT.format(patch=patch))
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize(
    "patch",
    [FULL_MID_RUN, FULL_AT_START],
    ids=["full mid-run", "full at start"],
)
def test_full_disk_is_one_line_exit_1_and_keeps_what_was_written(tmp_path, patch):
    out = tmp_path / "run"
    proc = _run_injected(
        patch, ["run", "hover", "--quiet", "--duration", "3", "--out", str(out)], tmp_path
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == ["skyswarm: error: No space left on device"], proc.stderr
    if patch is FULL_MID_RUN:
        traj = read_trajectory(out)
        # 20 Hz samples of 4 agents from t = 0 up to the failing write at 1 s
        assert len(traj) == 4 * 20 and traj["tick"].max() == 380


def test_full_disk_while_plotting_is_one_line_exit_1(tmp_path):
    out = tmp_path / "run"
    done = subprocess.run(
        [*CLI, "run", "hover", "--quiet", "--duration", "1", "--out", str(out)],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    proc = _run_injected(FULL_WHILE_PLOTTING, ["plot", str(out)], tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["skyswarm: error: No space left on device"]
    # plots written once, then a disk that fills half way through a PNG: the old plots stay
    # whole (written to a temporary file and renamed) and no temporary file is left behind
    plotted = subprocess.run(
        [*CLI, "plot", str(out)], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=180
    )
    assert plotted.returncode == 0, plotted.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert sum(name.endswith(".png") for name in before) >= 1, sorted(before)
    proc = _run_injected(HALF_A_PLOT, ["plot", str(out)], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


# -- batch: a dead worker, a dead coordinator ----------------------------------------------------
DROP = ROOT / "configs" / "drop_test.toml"


def _sweep(folder: Path, grid: str, fixed: str = "", seeds: int = 2) -> Path:
    path = folder / "sweep.toml"
    path.write_text(
        f'[sweep]\nscenario = "{DROP.as_posix()}"\nseed = 11\nseeds = {seeds}\n\n'
        f'[fixed]\n"agents.count" = 2\n"results.trajectory_hz" = 10.0\n{fixed}\n'
        f"[grid]\n{grid}",
        encoding="utf-8",
    )
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return [
            {k: v for k, v in r.items() if not k.startswith("timing.")} for r in csv.DictReader(f)
        ]


def test_a_dead_worker_fails_only_its_own_run(tmp_path):
    fixed = '"mission.type" = "batch_missions:FragileDropTest"\n"fragile.crash_above_m" = 2.5\n'
    sweep = _sweep(tmp_path, '"drop_test.height_m" = [1.0, 2.0, 3.0]\n', fixed, seeds=1)
    out = tmp_path / "out"
    proc = subprocess.run(
        [*CLI, "batch", str(sweep), "--workers", "2", "--quiet", "--no-plots", "--out", str(out)],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = _rows(out / "sweep.csv")
    # the 3 m drop kills its worker every time; its neighbours, killed with the pool, are re-run
    # alone without spending an attempt: they succeed. `attempts` counts every execution
    # started (each appends a start record): a neighbour in flight when the pool died ran twice,
    # the 3 m drop twice on its own (retries = 1), once more if it first died in company.
    assert [r["status"] for r in rows] == ["ok", "ok", "failed"]
    assert rows[2]["error"].startswith("worker lost")
    for r in rows:
        records = (out / "runs" / r["run"] / "executions.jsonl").read_text().splitlines()
        assert int(r["attempts"]) == len(records), r
    assert rows[2]["attempts"] in ("2", "3") and rows[0]["attempts"] in ("1", "2")


GRID = '"drop_test.height_m" = [2.0, 4.0, 6.0, 8.0, 10.0]\n"drop_test.mass_kg" = [0.5, 1.0]\n'


def test_killed_coordinator_leaves_no_orphans_and_resume_equals_an_uninterrupted_sweep(tmp_path):
    sweep = _sweep(tmp_path, GRID)
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    args = ["batch", str(sweep), "--workers", "2", "--quiet", "--no-plots", "--out"]
    ref = subprocess.run(
        [*CLI, *args, str(whole)], cwd=tmp_path, env=ENV, capture_output=True, text=True
    )
    assert ref.returncode == 0, ref.stderr
    proc = _start([*args, str(cut)], tmp_path)
    deadline = time.monotonic() + 60
    while len(list(cut.glob("runs/*/summary.json"))) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)
    family = _descendants(proc.pid)
    assert family  # forkserver, workers, resource tracker
    proc.kill()  # the coordinator only: its children must notice on their own
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _alive(family) and time.monotonic() < deadline:
        time.sleep(0.1)
    orphans = {pid: Path(f"/proc/{pid}/cmdline").read_bytes()[:120] for pid in _alive(family)}
    proc.stdout.close()
    proc.stderr.close()
    assert not orphans, orphans
    resumed = subprocess.run(
        [*CLI, *args, str(cut), "--resume"], cwd=tmp_path, env=ENV, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr
    assert _rows(cut / "sweep.csv") == _rows(whole / "sweep.csv")
    assert _rows(cut / "aggregate.csv") == _rows(whole / "aggregate.csv")


# -- batch on a full disk: ENOSPC in the coordinator's own writes (workers write their runs) -----


def _full_from_nth_open(matches: str, nth: int) -> str:
    """An injection patch: sweep_report's open raises ENOSPC from the `nth` open whose file
    and mode satisfy the expression `matches` on."""
    return f"""
import builtins
from skyswarm.app import sweep_report
_hits = []
def _open(file, mode="r", *a, **k):
    if {matches}:
        _hits.append(file)
        if len(_hits) >= {nth}:
            raise {ENOSPC}
    return builtins.open(file, mode, *a, **k)
sweep_report.open = _open
"""


# sweep.csv / aggregate.csv rewritten (atomically, through a .tmp file)
FULL_TABLE_REWRITE = _full_from_nth_open('str(file).endswith(".csv.tmp") and "w" in mode', 1)
# the second finished run's row appended to sweep.csv
FULL_SECOND_ROW = _full_from_nth_open('mode == "a"', 2)
# sweep.csv's second write: rewritten (via .tmp) or appended to
FULL_AFTER_FIRST_TABLE_WRITE = _full_from_nth_open(
    'any(m in mode for m in "wa") and str(file).rsplit("/", 1)[-1].startswith("sweep.csv")', 2
)
FULL_WRITING_SWEEP_JSON = f"""
import builtins, pathlib
from skyswarm.app import sweep_report
def _full(file):  # a full disk: the open for writing truncates, the write fails
    builtins.open(file, "w").close()
    raise {ENOSPC}
_write_text = pathlib.Path.write_text
def _path_write_text(self, *a, **k):
    if self.name == "sweep.json":
        _full(self)
    return _write_text(self, *a, **k)
pathlib.Path.write_text = _path_write_text
def _open(file, mode="r", *a, **k):
    if any(m in mode for m in "wa") and str(file).rsplit("/", 1)[-1].startswith("sweep.json"):
        _full(file)
    return builtins.open(file, mode, *a, **k)
sweep_report.open = _open
"""


def _finished_sweep(tmp_path: Path, heights: list[float]) -> tuple[Path, list[str]]:
    """(results directory, CLI arguments) of a finished sweep over drop heights, one seed each,
    on two workers (its sweep.csv holds one row per height)."""
    sweep = _sweep(tmp_path, f'"drop_test.height_m" = {heights}\n', seeds=1)
    out = tmp_path / "out"
    args = ["batch", str(sweep), "--workers", "2", "--quiet", "--no-plots", "--out", str(out)]
    done = subprocess.run([*CLI, *args], cwd=tmp_path, env=ENV, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(_rows(out / "sweep.csv")) == len(heights)
    return out, args


def test_batch_full_disk_is_one_line_and_keeps_the_previous_tables(tmp_path):
    """A resumed sweep whose disk is full: one line, exit 1, sweep.csv and aggregate.csv
    byte-identical to what the finished sweep left, no .tmp debris."""
    out, args = _finished_sweep(tmp_path, [2.0, 4.0])
    before = {n: (out / n).read_bytes() for n in ("sweep.csv", "aggregate.csv")}
    proc = _run_injected(FULL_TABLE_REWRITE, [*args, "--resume"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == ["skyswarm: error: No space left on device"], proc.stderr
    assert {n: (out / n).read_bytes() for n in before} == before
    assert not list(out.glob("*.tmp"))


def test_batch_disk_full_after_one_run_keeps_that_row_and_leaves_no_orphan(tmp_path):
    """The disk fills when the second finished run's row is appended: one line, exit 1, every
    row of sweep.csv whole and naming a run complete on disk (the first one at least), and
    every worker gone."""
    sweep = _sweep(tmp_path, '"drop_test.height_m" = [2.0, 4.0, 6.0]\n', seeds=1)
    out = tmp_path / "out"
    args = ["batch", str(sweep), "--workers", "2", "--quiet", "--no-plots", "--out", str(out)]
    script = tmp_path / "inject.py"
    script.write_text(INJECT.format(patch=FULL_SECOND_ROW))
    proc = subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    family: set[int] = set()
    while proc.poll() is None:  # remember every process the coordinator started
        family |= _descendants(proc.pid)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert err.splitlines() == ["skyswarm: error: No space left on device"], err
    rows = _rows(out / "sweep.csv")
    assert 1 <= len(rows) <= 3 and {r["status"] for r in rows} == {"ok"}, rows
    assert all((out / "runs" / r["run"] / "summary.json").is_file() for r in rows)
    assert not list(out.glob("*.tmp"))
    _assert_gone(family)


@pytest.mark.parametrize(
    "patch",
    [FULL_AFTER_FIRST_TABLE_WRITE, FULL_WRITING_SWEEP_JSON],
    ids=["full from sweep.csv's 2nd write", "full writing sweep.json"],
)
def test_batch_resume_on_a_full_disk_loses_no_row(tmp_path, patch):
    """--resume of a finished 3-run sweep on a full disk: one line, exit 1, and sweep.csv and
    sweep.json byte-identical to what the finished sweep left, no .tmp debris.

    Full from sweep.csv's second write: the resumed rows go in with the header in the first
    (atomic) write, so the table is whole when the final sorted rewrite fails. Before issue 17
    the table was first reset to its header and the rows appended one by one; the first append
    adds the summary columns (a rewrite), the second write failed: only the header was left.
    Full writing sweep.json: written atomically, the previous plan stays (write_text truncated
    it to nothing)."""
    out, args = _finished_sweep(tmp_path, [2.0, 4.0, 6.0])
    before = {n: (out / n).read_bytes() for n in ("sweep.csv", "sweep.json")}
    proc = _run_injected(patch, [*args, "--resume"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == ["skyswarm: error: No space left on device"], proc.stderr
    assert {n: (out / n).read_bytes() for n in before} == before
    assert not list(out.glob("*.tmp"))


@pytest.mark.parametrize("raised", [ImportError, SystemError, ValueError])
def test_an_error_after_ctrl_c_is_the_interrupt(monkeypatch, capsys, raised):
    """Ctrl-C inside an extension module's import comes out as that import's error (seen: a
    SIGINT 0.1 s into `run` landed in `import numba`, which the config's checks import, and
    surfaced as "ImportError: numba._devicearray failed to import", a traceback and exit 1):
    once the handler has seen Ctrl-C, any error is the interrupt, one line and 130; without
    it, the error is still raised as it is."""
    from skyswarm.app import cli
    from skyswarm.app.interrupts import Interrupt

    def fails(args):
        raise raised("numba._devicearray failed to import")

    monkeypatch.setattr(cli, "cmd_run", fails)
    monkeypatch.setattr(Interrupt, "pending", True)
    assert cli._main(["run", "hover"]) == 130
    assert capsys.readouterr().err.splitlines() == ["skyswarm: interrupted"]
    monkeypatch.setattr(Interrupt, "pending", False)
    with pytest.raises(raised):
        cli._main(["run", "hover"])
