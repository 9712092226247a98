"""`skyswarm batch`: run a sweep over a local process pool or a Dask cluster.

The coordinator (this process) validates the sweep, submits runs (at most as many as the
executor has slots, so "running" means running), retries failures, appends each finished run to
`sweep.csv`, and at the end writes the sorted table, `aggregate.csv` and plots. Workers only run
`execute_run()`: one simulation into its own results folder, whose `batch.json` holds the
config hash and whose `summary.json` (written last by the recorder) marks it complete.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from skyswarm.app.sweep import RunSpec, Sweep, load_sweep
from skyswarm.app.sweep_report import (
    SweepTable,
    aggregate,
    plot_metrics,
    summary_columns,
    write_csv,
)
from skyswarm.core.schema import ConfigError

HEAD = ("run", "point", "replicate", "seed")
STATUS = ("status", "attempts", "error")
EXIT_INTERRUPTED = 130


# -- the worker side ---------------------------------------------------------------------------
def execute_run(spec: RunSpec, attempt: int) -> dict[str, Any]:
    """Run one simulation (in a worker). Returns {"status", "error", "summary"}; a run that
    raises is returned as failed with its one-line error (traceback in the run's error.txt)."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    run_dir = Path(spec.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "summary.json").unlink(missing_ok=True)
    (run_dir / "error.txt").unlink(missing_ok=True)
    info = {"config_hash": spec.config_hash, "attempt": attempt, "pid": os.getpid()}
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


def one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def read_summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def load_complete(spec: RunSpec) -> tuple[int, dict[str, Any]] | None:
    """(attempt, summary) of a run complete on disk, else None. Complete: batch.json holds the
    spec's config hash and summary.json reads whole (a run killed mid-write is not complete)."""
    run_dir = Path(spec.run_dir)
    try:
        info = json.loads((run_dir / "batch.json").read_text(encoding="utf-8"))
        if info.get("config_hash") != spec.config_hash:
            return None
        return int(info["attempt"]), read_summary(run_dir)
    except (OSError, ValueError, KeyError):
        return None


def is_complete(spec: RunSpec) -> bool:
    return load_complete(spec) is not None


def _init_worker(coordinator: int, numba_threads: int = 1) -> None:
    """Worker initializer: Ctrl-C is the coordinator's to handle, and a worker whose
    coordinator died (kill -9) exits within a second instead of finishing its run. (Its
    parent is the forkserver, which itself lives as long as any worker does: watch the
    coordinator's pid.) The compiled kernels get `numba_threads` threads, so the workers
    together use the cores once over (results do not depend on it: core.backends.threaded)."""
    import signal
    import threading

    import numba

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    numba.set_num_threads(max(1, min(numba_threads, numba.config.NUMBA_NUM_THREADS)))

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


# -- executors ---------------------------------------------------------------------------------
class Executor(Protocol):
    capacity: int  # runs to keep in flight

    def submit(self, spec: RunSpec, attempt: int) -> Any: ...
    def wait(self, futures: list[Any], timeout: float) -> list[Any]: ...
    def abort(self, futures: list[Any]) -> None: ...
    def close(self) -> None: ...


class LocalPool:
    """concurrent.futures process pool; forkserver (or spawn) children, never a fork of a
    process that may hold a pybullet client. Workers ignore SIGINT."""

    def __init__(self, workers: int) -> None:
        self.capacity = workers
        self._pool = self._new_pool()

    def _new_pool(self) -> Any:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        if "forkserver" in mp.get_all_start_methods():
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["core.batch", "core.simulator"])  # imports, no client
        else:  # pragma: no cover - Windows / macOS without forkserver
            ctx = mp.get_context("spawn")
        threads = max(1, (os.cpu_count() or 1) // self.capacity)  # no over-subscription
        return ProcessPoolExecutor(
            self.capacity,
            mp_context=ctx,
            initializer=_init_worker,
            initargs=(os.getpid(), threads),
        )

    def submit(self, spec: RunSpec, attempt: int) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self._pool.submit(execute_run, spec, attempt)
        except BrokenProcessPool:  # a worker died earlier: its futures failed, start afresh
            self._pool.shutdown(wait=False)
            self._pool = self._new_pool()
            return self._pool.submit(execute_run, spec, attempt)

    def wait(self, futures: list[Any], timeout: float) -> list[Any]:
        from concurrent.futures import FIRST_COMPLETED, wait

        return list(wait(futures, timeout, return_when=FIRST_COMPLETED).done)

    def abort(self, futures: list[Any]) -> None:
        # Python < 3.14 has no public way to stop running workers: terminate them by pid.
        procs = list(getattr(self._pool, "_processes", {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskCluster:
    """A dask.distributed Client on a running scheduler; one slot per worker thread (start
    workers with `--nthreads 1`: pybullet runs hold the GIL). The slot count is re-read every
    few seconds, so workers that join later (dask-jobqueue, Kubernetes scaling) get work."""

    def __init__(self, address: str, timeout_s: float = 30.0) -> None:
        from distributed import Client

        self.client = Client(address, timeout=timeout_s)
        self.client.wait_for_workers(1, timeout=timeout_s)
        self._slots, self._read_at = 1, -1e9

    @property
    def capacity(self) -> int:
        if time.monotonic() - self._read_at > 2.0:
            self._slots = max(1, sum(self.client.nthreads().values()))
            self._read_at = time.monotonic()
        return self._slots

    def submit(self, spec: RunSpec, attempt: int) -> Any:
        key = f"skyswarm-{spec.run}-a{attempt}-{time.time_ns()}"
        return self.client.submit(execute_run, spec, attempt, key=key, pure=False)

    def wait(self, futures: list[Any], timeout: float) -> list[Any]:
        from distributed import wait

        try:
            return list(wait(futures, timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:
            return []

    def abort(self, futures: list[Any]) -> None:
        self.client.cancel(futures)

    def close(self) -> None:
        self.client.close()


# -- the coordinator ---------------------------------------------------------------------------
@dataclass
class Counts:
    total: int
    done: int = 0
    failed: int = 0
    running: int = 0
    retried: int = 0
    skipped: int = 0


@dataclass
class BatchResult:
    out: Path
    counts: Counts
    interrupted: bool
    rows: list[dict[str, Any]]


def run_batch(
    sweep: Sweep,
    out: Path,
    executor: Executor,
    resume: bool = False,
    quiet: bool = False,
    plots: bool = True,
) -> BatchResult:
    """Run every run of `sweep` not already complete (with --resume); write the outputs."""
    out.mkdir(parents=True, exist_ok=True)
    specs = sweep.runs(out)
    (out / "sweep.json").write_text(_plan(sweep, specs), encoding="utf-8")
    table = SweepTable(out / "sweep.csv", (*HEAD, *sweep.param_keys, *STATUS))
    counts = Counts(len(specs))
    todo = []
    for spec in specs:
        found = load_complete(spec) if resume else None
        if found is None:
            todo.append(spec)
        else:
            table.add(_row(spec, found[0], "ok", "", found[1]))
            counts.skipped += 1
    bar = _Progress(counts, quiet)
    inflight: dict[Any, tuple[RunSpec, int]] = {}  # future -> (run, attempt)
    interrupted = False
    try:
        _drive(todo, inflight, executor, sweep.settings.retries, table, counts, bar)
    except KeyboardInterrupt:
        interrupted = True
        executor.abort(list(inflight))
        _keep_finished(todo, table)
    finally:
        bar.close()
        _write_outputs(sweep, table, out, plots=plots and not interrupted)
    return BatchResult(out, counts, interrupted, table.rows)


def _keep_finished(specs: Iterable[RunSpec], table: SweepTable) -> None:
    """After Ctrl-C: the results on disk are the record. A run that finished after the last
    poll, or whose result was taken from its future just before the interrupt but not yet
    written to the table, is complete on disk: give it its row."""
    recorded = {row["run"] for row in table.rows}
    for spec in specs:
        if spec.run not in recorded and (found := load_complete(spec)) is not None:
            table.add(_row(spec, found[0], "ok", "", found[1]))


def _drive(
    todo: Iterable[RunSpec],
    inflight: dict[Any, tuple[RunSpec, int]],
    executor: Executor,
    retries: int,
    table: SweepTable,
    counts: Counts,
    bar: _Progress,
) -> None:
    queue = deque((spec, 1) for spec in todo)
    # A dead worker process fails every run of its pool at once. Only a run that was alone in
    # flight can be blamed; the others are "suspects" and run again one at a time, without
    # spending an attempt, so a crashing run fails only itself.
    suspects: deque[tuple[RunSpec, int]] = deque()
    shared: set[Any] = set()  # futures that had company in flight at some moment
    while queue or inflight or suspects:
        if suspects:
            if not inflight:
                spec, attempt = suspects.popleft()
                inflight[executor.submit(spec, attempt)] = (spec, attempt)
        else:
            while queue and len(inflight) < executor.capacity:
                spec, attempt = queue.popleft()
                future = executor.submit(spec, attempt)
                if inflight:
                    shared.update(inflight)
                    shared.add(future)
                inflight[future] = (spec, attempt)
        counts.running = len(inflight)
        bar.refresh()
        for future in executor.wait(list(inflight), timeout=0.5):
            spec, attempt = inflight.pop(future)
            outcome = _outcome(future)
            if outcome.get("lost") and future in shared:
                shared.discard(future)
                suspects.append((spec, attempt))
                continue
            shared.discard(future)
            if outcome["status"] != "ok" and attempt <= retries:
                queue.appendleft((spec, attempt + 1))
                counts.retried += 1
                continue
            table.add(_row(spec, attempt, outcome["status"], outcome["error"], outcome["summary"]))
            counts.done += 1
            counts.failed += outcome["status"] != "ok"
            bar.advance()


def _outcome(future: Any) -> dict[str, Any]:
    """The worker's result, or a failure if the worker died or the task was lost."""
    try:
        return future.result()
    except Exception as exc:  # BrokenProcessPool, distributed.KilledWorker, CancelledError ...
        error = f"worker lost: {one_line(exc)}"
        return {"status": "failed", "error": error, "summary": None, "lost": True}


def _row(
    spec: RunSpec, attempts: int, status: str, error: str, summary: dict[str, Any] | None
) -> dict[str, Any]:
    row = {"run": spec.run, "point": spec.point, "replicate": spec.replicate, "seed": spec.seed}
    row.update(spec.params)
    row.update(status=status, attempts=attempts, error=error)
    row.update(summary_columns(summary or {}))
    return row


def _plan(sweep: Sweep, specs: list[RunSpec]) -> str:
    plan = {
        "sweep": str(Path(sweep.file).resolve()),
        "scenario": str(sweep.scenario),
        "fixed": dict(sweep.fixed),
        "runs": [
            {k: v for k, v in asdict(s).items() if k not in ("scenario", "run_dir")} for s in specs
        ],
    }
    return json.dumps(plan, indent=1)


def _write_outputs(sweep: Sweep, table: SweepTable, out: Path, plots: bool) -> None:
    table.finish()
    agg = aggregate(table.rows, sweep.param_keys)
    write_csv(out / "aggregate.csv", agg)
    if plots and agg:
        plot_metrics(agg, sweep.param_keys, out / "plots")


class _Progress:
    """tqdm over runs: done (ok + failed), failed, running, retries; ETA from the run rate."""

    def __init__(self, counts: Counts, quiet: bool) -> None:
        from tqdm import tqdm

        self.counts = counts
        self.bar = tqdm(
            total=counts.total,
            initial=counts.skipped,
            unit="run",
            file=sys.stderr,
            disable=quiet,
            dynamic_ncols=True,
        )
        self.refresh()

    def refresh(self) -> None:
        c = self.counts
        text = f"ok {c.done - c.failed + c.skipped}, failed {c.failed}, running {c.running}"
        self.bar.set_postfix_str(text + (f", retries {c.retried}" if c.retried else ""))

    def advance(self) -> None:
        self.bar.update(1)
        self.refresh()

    def close(self) -> None:
        self.bar.close()


# -- command line ------------------------------------------------------------------------------
def add_batch_parser(sub: Any) -> None:
    """Register `skyswarm batch` on the CLI's subparsers."""
    p = sub.add_parser("batch", help="run a parameter sweep (process pool or Dask cluster)")
    p.add_argument("sweep", type=Path, help="sweep TOML file")
    p.add_argument("--workers", type=int, help="local worker processes (default: CPU count)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--resume", action="store_true", help="skip runs already complete in --out")
    p.add_argument("--out", type=Path, help="output folder (default: sweep.out or results/...)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG plots")
    p.set_defaults(func=cmd_batch)


def cmd_batch(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers", "--workers", args.workers, "an integer >= 1")
    sweep = load_sweep(args.sweep)
    out = args.out or Path(sweep.settings.out or Path("results", "sweeps", args.sweep.stem))
    if not args.resume and ((out / "sweep.csv").exists() or (out / "runs").exists()):
        raise ConfigError("--out", "--out", str(out), "a folder without a sweep (or --resume)")
    if args.scheduler:
        executor: Executor = DaskCluster(args.scheduler)
    else:
        executor = LocalPool(args.workers or os.cpu_count() or 1)
    try:
        result = run_batch(sweep, out, executor, args.resume, args.quiet, args.plots)
    finally:
        executor.close()
    c = result.counts
    print(
        f"{c.done + c.skipped}/{c.total} runs finished ({c.failed} failed, {c.skipped} resumed, "
        f"{c.done} run now); results: {out}"
    )
    outcomes: dict[str, int] = {}  # sweep.csv's `outcome` column, counted
    for row in result.rows:
        if row.get("outcome"):
            outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    if outcomes:
        print("outcomes: " + ", ".join(f"{k} {n}" for k, n in sorted(outcomes.items())))
    return EXIT_INTERRUPTED if result.interrupted else 0
