"""`skyswarm batch`: the coordinator of a sweep, and the command.

The coordinator (this process) validates the sweep, submits runs to an executor (a local process
pool or a Dask cluster, app/batch_executors.py) at most as many as it has slots, so "running"
means running, retries failures, appends each finished run to `sweep.csv`, and at the end
writes the sorted table, `aggregate.csv` and plots. Workers only run one simulation each
(app/batch_worker.py, `execute_run`); a run's results folder says whether it is complete, which
is what `--resume` and an interrupted sweep rely on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skyswarm.app.batch_executors import DaskCluster, Executor, LocalPool
from skyswarm.app.batch_worker import load_complete, one_line
from skyswarm.app.exits import EXIT_INTERRUPTED
from skyswarm.app.results_dir import hold
from skyswarm.app.sweep import MAX_RUNS, RunSpec, Sweep, load_sweep
from skyswarm.app.sweep_report import (
    SweepTable,
    aggregate,
    plot_metrics,
    summary_columns,
    write_csv,
    write_text,
)
from skyswarm.core.schema import ConfigError

HEAD = ("run", "point", "replicate", "seed")
STATUS = ("status", "attempts", "error")


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
    write_text(out / "sweep.json", _plan(sweep, specs))
    counts = Counts(len(specs))
    todo, resumed = [], []
    for spec in specs:
        found = load_complete(spec) if resume else None
        if found is None:
            todo.append(spec)
        else:
            resumed.append(_row(spec, found[0], "ok", "", found[1]))
            counts.skipped += 1
    # the resumed rows go in with the header, in one atomic rewrite: a full disk from here on
    # leaves the previous sweep.csv whole (issue 17), never the header alone
    table = SweepTable(out / "sweep.csv", (*HEAD, *sweep.param_keys, *STATUS), resumed)
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
    p.add_argument(
        "--max-runs",
        type=int,
        default=MAX_RUNS,
        help=f"refuse a sweep of more runs than this (default {MAX_RUNS})",
    )
    p.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG plots")
    p.set_defaults(func=cmd_batch)


def cmd_batch(args: argparse.Namespace) -> int:
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers", "--workers", args.workers, "an integer >= 1")
    if args.max_runs < 1:
        raise ConfigError("--max-runs", "--max-runs", args.max_runs, "an integer >= 1")
    sweep = load_sweep(args.sweep, args.max_runs, announce=lambda text: print(text, flush=True))
    out = args.out or Path(sweep.settings.out or Path("results", "sweeps", args.sweep.stem))
    if not args.resume and ((out / "sweep.csv").exists() or (out / "runs").exists()):
        raise ConfigError("--out", "--out", str(out), "a folder without a sweep (or --resume)")
    held = hold(out, str(sweep.file))  # a second batch into this folder is refused
    try:
        return _run_command(args, sweep, out)
    finally:
        held.release()


def _run_command(args: argparse.Namespace, sweep: Sweep, out: Path) -> int:
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
