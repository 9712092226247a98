"""The worker side of `skyswarm batch`: one run, and how a run is known to be complete.

A worker (a process of the local pool, or a Dask worker) only calls `execute_run()`: one
simulation into its own results folder, whose `batch.json` holds the config hash and whose
`summary.json` (written last by the recorder) marks it complete (`load_complete`). The
coordinator (app/batch.py) reads the same two files to resume a sweep and to keep the runs that
finished when it was interrupted. This module imports no more than a worker needs: the pool's
processes import it to unpickle `execute_run` and `init_worker`.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

from skyswarm.app.sweep import RunSpec


def execute_run(spec: RunSpec, attempt: int, session: str = "") -> dict[str, Any]:
    """Run one simulation (in a worker). Returns {"status", "error", "summary"}; a run that
    raises is returned as failed with its one-line error (traceback in the run's error.txt).
    Before anything else it appends a start record to the run's `executions.jsonl`
    (`record_start`), so every execution counts, those an executor repeats on its own included.
    `session`: the coordinator's id of this sweep invocation (`executions` counts by it)."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.files import mark_results_folder
    from skyswarm.core.simulator import Simulator

    run_dir = Path(spec.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    mark_results_folder(run_dir, spec.scenario)  # the sweep's own folder: a run may write it
    record_start(run_dir, session, attempt)
    (run_dir / "summary.json").unlink(missing_ok=True)
    (run_dir / "error.txt").unlink(missing_ok=True)
    info = {"config_hash": spec.config_hash, "attempt": attempt, "pid": os.getpid()}
    info["session"] = session
    info.update(host=socket.gethostname(), **asdict(spec))
    (run_dir / "batch.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    sim = None
    try:
        sim = Simulator.from_scenario(load_scenario(spec.scenario, spec.overrides), run_dir)
        sim.run()
        sim.finish()
    except Exception as exc:
        (run_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        return {"status": "failed", "error": one_line(exc), "summary": None}
    finally:
        if sim is not None:
            sim.close()
    return {"status": "ok", "error": "", "summary": read_summary(run_dir)}


EXECUTIONS = "executions.jsonl"  # one start record per execution of a run, appended


def record_start(run_dir: Path, session: str, attempt: int) -> None:
    """Append {"session", "attempt", "pid", "host", "time_ns"} as one line to the run's
    `executions.jsonl`, in one O_APPEND write (whole lines even from two hosts at once)."""
    line = json.dumps(
        {
            "session": session,
            "attempt": attempt,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "time_ns": time.time_ns(),
        }
    )
    fd = os.open(run_dir / EXECUTIONS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def executions(run_dir: Path | str, session: str) -> int:
    """How many times the run was started in sweep session `session` (0 without a record)."""
    try:
        lines = (Path(run_dir) / EXECUTIONS).read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0
    count = 0
    for line in lines:
        try:
            count += json.loads(line).get("session") == session
        except (ValueError, AttributeError):  # a torn line of a writer killed mid-write
            continue
    return count


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def read_summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def load_complete(spec: RunSpec) -> tuple[int, dict[str, Any]] | None:
    """(attempts, summary) of a run complete on disk, else None. Complete: batch.json holds the
    spec's config hash and summary.json reads whole (a run killed mid-write is not complete).
    attempts: the executions of the session that completed it (`executions`), at least the
    coordinator's attempt number batch.json holds."""
    run_dir = Path(spec.run_dir)
    try:
        info = json.loads((run_dir / "batch.json").read_text(encoding="utf-8"))
        if info.get("config_hash") != spec.config_hash:
            return None
        attempts = max(int(info["attempt"]), executions(run_dir, info.get("session", "")))
        return attempts, read_summary(run_dir)
    except (OSError, ValueError, KeyError):
        return None


def is_complete(spec: RunSpec) -> bool:
    return load_complete(spec) is not None


def init_worker(coordinator: int, numba_threads: int = 1) -> None:
    """Worker initializer: Ctrl-C is the coordinator's to handle, and a worker whose
    coordinator died (kill -9) exits within a second instead of finishing its run. (Its
    parent is the forkserver, which itself lives as long as any worker does: watch the
    coordinator's pid.) The compiled kernels get `numba_threads` threads, so the workers
    together use the cores once over (results do not depend on it: core.backends.threaded)."""
    import signal
    import threading

    import numba

    from skyswarm.core.backends import set_thread_budget

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    numba.set_num_threads(max(1, min(numba_threads, numba.config.NUMBA_NUM_THREADS)))
    set_thread_budget(numba_threads)  # threads = "auto" chooses within this share

    def watch() -> None:
        while _alive(coordinator):
            time.sleep(0.5)
        os._exit(EXIT_ORPHANED)

    threading.Thread(target=watch, name="skyswarm-orphan-watch", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a reused pid of another user
        return False
    try:  # a zombie (dead, not yet reaped) is dead
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2] != "Z"
    except (OSError, ValueError, IndexError):
        return True


EXIT_ORPHANED = 3  # a worker whose parent (forkserver or coordinator) is gone
