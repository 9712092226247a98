"""`skyswarm batch` end to end: local pool, a real Dask scheduler + worker, failures, Ctrl-C,
kill and --resume. Drop-test runs take ~0.05 s each, so a sweep costs mostly process start-up."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skyswarm.app.batch import run_batch
from skyswarm.app.batch_worker import execute_run, is_complete
from skyswarm.app.cli import main
from skyswarm.app.sweep import load_sweep

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent  # holds batch_missions.py
DROP = ROOT / "configs" / "drop_test.toml"


@pytest.fixture(autouse=True)
def _helpers_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    """`batch_missions` importable here and in spawned workers (which copy sys.path)."""
    monkeypatch.syspath_prepend(str(HERE))


def write_sweep(
    folder: Path, grid: str, seeds: str = "2", fixed: str = "", settings: str = ""
) -> Path:
    path = folder / "sweep.toml"
    path.write_text(
        f'[sweep]\nscenario = "{DROP.as_posix()}"\nseed = 11\nseeds = {seeds}\n{settings}\n'
        f'[fixed]\n"agents.count" = 2\n"results.trajectory_hz" = 10.0\n{fixed}\n'
        f"[grid]\n{grid}",
        encoding="utf-8",
    )
    return path


FRAGILE = '"mission.type" = "batch_missions:FragileDropTest"\n'


GRID_2X2 = '"drop_test.height_m" = [1.0, 3.0]\n"drop_test.mass_kg" = [0.5, 2.0]\n'


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def deterministic(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Every column except the wall-clock ones (`timing.*`)."""
    return [{k: v for k, v in r.items() if not k.startswith("timing.")} for r in rows]


def batch(*args: str) -> int:
    return main(["batch", *args, "--quiet"])


# -- local pool --------------------------------------------------------------------------------
def test_local_sweep_writes_runs_table_aggregate_and_plots(tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path, GRID_2X2)
    out = tmp_path / "out"
    assert batch(str(sweep), "--workers", "2", "--out", str(out)) == 0
    rows = read_rows(out / "sweep.csv")
    assert [(r["point"], r["replicate"]) for r in rows] == [
        (str(p), str(s)) for p in range(4) for s in (0, 1)
    ]
    assert {r["status"] for r in rows} == {"ok"}
    for r in rows:
        run_dir = out / "runs" / r["run"]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert int(r["seed"]) == summary["seed"]  # the derived seed reached the simulation
        assert float(r["metrics.last_landing_s"]) == summary["metrics"]["last_landing_s"]
    # free fall from h - 0.1 m to the ground takes sqrt(2 (h - 0.1) / g): heavier is not faster
    for r in rows:
        fall_s = (2 * (float(r["drop_test.height_m"]) - 0.1) / 9.81) ** 0.5
        assert float(r["metrics.last_landing_s"]) == pytest.approx(fall_s, abs=0.01)
    agg = read_rows(out / "aggregate.csv")
    assert [a["ok"] for a in agg] == ["2"] * 4
    assert float(agg[0]["metrics.landed.mean"]) == 2.0 and float(agg[0]["metrics.landed.std"]) == 0
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert "last_landing_s__vs__drop_test.height_m.png" in pngs and len(pngs) == 8
    assert (out / "plots" / pngs[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_failing_run_is_recorded_with_its_error_and_retried_others_complete(
    tmp_path: Path,
) -> None:
    fixed = FRAGILE + '"fragile.break_above_m" = 2.5\n'
    grid = '"drop_test.height_m" = [1.0, 2.0, 3.0]\n'
    sweep = write_sweep(tmp_path, grid, seeds="1", fixed=fixed, settings="retries = 2")
    out = tmp_path / "out"
    assert batch(str(sweep), "--workers", "2", "--out", str(out)) == 0
    rows = read_rows(out / "sweep.csv")
    assert [r["status"] for r in rows] == ["ok", "ok", "failed"]
    bad = rows[2]
    assert bad["error"] == "RuntimeError: box shattered: dropped from 3.0 m > 2.5 m"
    assert bad["attempts"] == "3"  # first try + 2 retries
    assert bad["metrics.landed"] == ""
    assert "Traceback" in (out / "runs" / bad["run"] / "error.txt").read_text()
    assert [r["attempts"] for r in rows[:2]] == ["1", "1"]
    assert [r["metrics.landed"] for r in rows[:2]] == ["2", "2"]
    agg = read_rows(out / "aggregate.csv")
    assert [(a["ok"], a["failed"]) for a in agg] == [("1", "0"), ("1", "0"), ("0", "1")]


def test_dead_worker_is_recorded_and_the_pool_replaced(tmp_path: Path) -> None:
    fixed = FRAGILE + '"fragile.crash_above_m" = 1.5\n'
    grid = '"drop_test.height_m" = [1.0, 2.0, 3.0]\n'
    sweep = write_sweep(tmp_path, grid, seeds="1", fixed=fixed)
    out = tmp_path / "out"
    assert batch(str(sweep), "--workers", "1", "--out", str(out)) == 0
    rows = read_rows(out / "sweep.csv")
    assert [r["status"] for r in rows] == ["ok", "failed", "failed"]
    assert all(r["error"].startswith("worker lost: BrokenProcessPool") for r in rows[1:])
    assert [r["attempts"] for r in rows] == ["1", "2", "2"]  # default retries = 1


# -- re-executions after a worker death ---------------------------------------------------------
DIES_ONCE = FRAGILE + '"fragile.die_once_above_m" = 2.5\n'  # the 3 m drop: SIGKILL, first time
GRID_3 = '"drop_test.height_m" = [1.0, 2.0, 3.0]\n'


def two_sweeps(tmp_path: Path) -> tuple[Path, Path]:
    """The same three drop runs, uninterrupted and with the 3 m run's worker killed once."""
    (tmp_path / "whole").mkdir()
    (tmp_path / "cut").mkdir()
    whole = write_sweep(tmp_path / "whole", GRID_3, seeds="1", fixed=FRAGILE)
    return whole, write_sweep(tmp_path / "cut", GRID_3, seeds="1", fixed=DIES_ONCE)


def starts(out: Path, run: str, session: str) -> list[dict]:
    """The start records of a run's executions in one sweep invocation."""
    lines = (out / "runs" / run / "executions.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["session"] == session]


def assert_killed_once_and_counted(out: Path, whole: Path, printed: str) -> None:
    """The 3 m run ran twice, in two processes, and says so in sweep.csv (attempts 2), in
    sweep_summary.json and on the console; every row's attempts are its start records; the
    results equal the uninterrupted sweep's bit for bit (all but attempts and wall clock)."""
    rows, summary = (
        read_rows(out / "sweep.csv"),
        json.loads((out / "sweep_summary.json").read_text()),
    )
    assert [r["status"] for r in rows] == ["ok"] * 3
    assert (out / "runs" / rows[2]["run"] / "died_once").is_file()  # it did die once
    runs = [starts(out, r["run"], summary["session"]) for r in rows]
    assert [int(r["attempts"]) for r in rows] == [len(s) for s in runs]
    assert rows[2]["attempts"] == "2" and len({s["pid"] for s in runs[2]}) == 2
    assert summary["reexecutions"] == sum(int(r["attempts"]) - 1 for r in rows) >= 1
    assert rows[2]["run"] in summary["reexecuted"] and summary["done"] == 3
    assert f"{summary['reexecutions']} extra executions" in printed
    ref = read_rows(whole / "sweep.csv")
    assert [r["attempts"] for r in ref] == ["1"] * 3
    assert json.loads((whole / "sweep_summary.json").read_text())["reexecutions"] == 0

    def results(rows: list[dict[str, str]]) -> list[dict[str, str]]:
        return [{k: v for k, v in r.items() if k != "attempts"} for r in deterministic(rows)]

    assert results(rows) == results(ref)
    for r in rows:
        for name in ("trajectory.bin", "events.csv", "timeseries.csv"):
            got = (out / "runs" / r["run"] / name).read_bytes()
            assert got == (whole / "runs" / r["run"] / name).read_bytes(), (r["run"], name)


def test_a_run_whose_pool_worker_is_killed_is_rerun_counted_and_unchanged(tmp_path, capsys):
    whole_sweep, cut_sweep = two_sweeps(tmp_path)
    whole, out = tmp_path / "whole" / "out", tmp_path / "cut" / "out"
    assert batch(str(whole_sweep), "--workers", "2", "--out", str(whole), "--no-plots") == 0
    capsys.readouterr()
    assert batch(str(cut_sweep), "--workers", "2", "--out", str(out), "--no-plots") == 0
    assert_killed_once_and_counted(out, whole, capsys.readouterr().out)


# -- interruption and resume -------------------------------------------------------------------
def start_cli(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "skyswarm.app.cli", "batch", *args, "--quiet"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT.parent), str(ROOT), str(HERE)])},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: signals reach the pool as a terminal's
    )


def wait_for_complete(out: Path, count: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while len(list(out.glob("runs/*/summary.json"))) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)


LONG_GRID = '"drop_test.height_m" = [2.0, 4.0, 6.0, 8.0, 10.0]\n"drop_test.mass_kg" = [0.5, 1.0]\n'


def test_killed_client_then_resume_runs_only_the_missing_runs(tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path, LONG_GRID)
    out = tmp_path / "out"
    proc = start_cli(str(sweep), "--workers", "1", "--out", str(out))
    wait_for_complete(out, 2, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the client, its forkserver and its worker
    proc.wait()
    specs = load_sweep(sweep).runs(out)
    done = {
        s.run: (Path(s.run_dir) / "summary.json").stat().st_mtime_ns
        for s in specs
        if is_complete(s)
    }
    assert 2 <= len(done) < len(specs) == 20
    # a tampered config hash makes a complete run count as missing
    tampered = next(iter(done))
    info_path = out / "runs" / tampered / "batch.json"
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, "config_hash": "0" * 64}))
    assert batch(str(sweep), "--workers", "2", "--out", str(out), "--resume") == 0
    kept = {r: ns for r, ns in done.items() if r != tampered}
    for run, ns in kept.items():  # untouched: not run again
        assert (out / "runs" / run / "summary.json").stat().st_mtime_ns == ns
    assert (out / "runs" / tampered / "summary.json").stat().st_mtime_ns != done[tampered]
    rows = read_rows(out / "sweep.csv")
    assert len(rows) == 20 and {r["status"] for r in rows} == {"ok"}
    assert all(is_complete(s) for s in specs)


class _Done:
    """A finished future; `interrupt` makes reading its result raise KeyboardInterrupt, as a
    Ctrl-C landing just after the coordinator took it off the in-flight list."""

    def __init__(self, result: dict, interrupt: bool) -> None:
        self._result, self._interrupt = result, interrupt

    def result(self) -> dict:
        if self._interrupt:
            raise KeyboardInterrupt
        return self._result


class _InlineExecutor:
    """Runs each run in this process when submitted; Ctrl-C hits while the 2nd result is read."""

    capacity = 1

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, spec, attempt, session):
        self.submitted += 1
        return _Done(execute_run(spec, attempt, session), interrupt=self.submitted == 2)

    def wait(self, futures, timeout):
        return list(futures)

    def release(self, future) -> None:
        pass

    def abort(self, futures) -> None:
        pass


def test_ctrl_c_between_a_finished_run_and_its_row_keeps_the_row(tmp_path: Path) -> None:
    """The run finished and its result was taken off the in-flight list when Ctrl-C came, before
    its row was written: the row is written from the run's files (it was once lost)."""
    out = tmp_path / "out"
    result = run_batch(
        load_sweep(write_sweep(tmp_path, GRID_2X2)), out, _InlineExecutor(), quiet=True, plots=False
    )
    assert result.interrupted
    rows = read_rows(out / "sweep.csv")
    assert [(r["run"], r["status"]) for r in rows] == [
        (s.run, "ok") for s in load_sweep(write_sweep(tmp_path, GRID_2X2)).runs(out)[:2]
    ]


def test_out_folder_with_a_sweep_needs_resume(tmp_path: Path, capsys) -> None:
    sweep = write_sweep(tmp_path, '"drop_test.height_m" = [1.0]\n', seeds="1")
    (tmp_path / "out" / "runs").mkdir(parents=True)
    assert batch(str(sweep), "--out", str(tmp_path / "out")) == 2
    assert "--resume" in capsys.readouterr().err


def test_ctrl_c_stops_cleanly_and_keeps_finished_runs(tmp_path: Path) -> None:
    sweep = write_sweep(tmp_path, LONG_GRID)
    out = tmp_path / "out"
    proc = start_cli(str(sweep), "--workers", "1", "--out", str(out))
    wait_for_complete(out, 2, proc)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C in a terminal: the whole process group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    rows = read_rows(out / "sweep.csv")
    assert 2 <= len(rows) < 20 and {r["status"] for r in rows} == {"ok"}
    for r in rows:  # every row's run is complete on disk; nothing half-written is listed
        assert (out / "runs" / r["run"] / "summary.json").is_file()
    assert [(int(r["point"]), int(r["replicate"])) for r in rows] == sorted(
        (int(r["point"]), int(r["replicate"])) for r in rows
    )


# -- Dask --------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def dask_scheduler() -> Iterator[tuple[str, int]]:
    """A real `dask scheduler` and one single-threaded `dask worker`, separate processes."""
    address = f"tcp://127.0.0.1:{free_port()}"
    # ROOT.parent: `skyswarm` is this checkout (the repository root is the package), not
    # another one an editable install points at
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT.parent), str(ROOT), str(HERE)])}
    common = {"cwd": ROOT, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    port = address.rsplit(":", 1)[1]
    procs = [
        subprocess.Popen(
            ["dask", "scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"],
            **common,
        )
    ]
    try:
        procs.append(
            subprocess.Popen(
                ["dask", "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"],
                **common,
            )
        )
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(1, timeout=30)
        yield address, procs[1].pid
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_dask_and_local_pool_give_identical_tables(
    tmp_path: Path, dask_scheduler: tuple[str, int]
) -> None:
    sweep = write_sweep(tmp_path, GRID_2X2)
    local, dask = tmp_path / "local", tmp_path / "dask"
    assert batch(str(sweep), "--workers", "2", "--out", str(local)) == 0
    assert batch(str(sweep), "--scheduler", dask_scheduler[0], "--out", str(dask)) == 0
    a, b = read_rows(local / "sweep.csv"), read_rows(dask / "sweep.csv")
    assert len(a) == 8 and {r["status"] for r in a} == {"ok"}
    assert list(a[0]) == list(b[0])  # same columns in the same order
    assert deterministic(a) == deterministic(b)
    assert any(k.startswith("timing.") for k in a[0])  # wall clock kept, apart
    # the Dask worker process ran every run of the Dask sweep, and none of the local ones
    address, worker_pid = dask_scheduler
    assert {run_pid(dask, r["run"]) for r in b} == {worker_pid}
    assert worker_pid not in {run_pid(local, r["run"]) for r in a}


def run_pid(out: Path, run: str) -> int:
    return json.loads((out / "runs" / run / "batch.json").read_text())["pid"]


def test_a_run_dask_reruns_silently_after_a_killed_worker_is_counted(
    tmp_path, monkeypatch, capsys
) -> None:
    # A real LocalCluster: one worker process under a nanny. The 3 m run SIGKILLs it; the nanny
    # starts a new worker and the scheduler runs the task again there, telling the client
    # nothing (the future just succeeds): the run's start records show both executions.
    from distributed import LocalCluster

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT.parent), str(HERE)]))
    whole_sweep, cut_sweep = two_sweeps(tmp_path)
    whole, out = tmp_path / "whole" / "out", tmp_path / "cut" / "out"
    assert batch(str(whole_sweep), "--workers", "1", "--out", str(whole), "--no-plots") == 0
    capsys.readouterr()
    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        code = batch(str(cut_sweep), "--scheduler", cluster.scheduler_address, "--out", str(out))
    assert code == 0
    assert_killed_once_and_counted(out, whole, capsys.readouterr().out)
    # one slot: the 1 m and 2 m runs had finished; released, they are not run again when the
    # worker holding their results dies (they once were, rewriting their folders unseen)
    assert [r["attempts"] for r in read_rows(out / "sweep.csv")] == ["1", "1", "2"]
