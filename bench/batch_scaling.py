"""Batch scaling: sweep throughput with 2 local workers vs 1, and Dask's per-run overhead.

    python bench/batch_scaling.py [--runs 24] [--tiny-runs 40]

Prints a table and writes bench/results/batch_scaling.json. Pools are started and warmed up
before the clock starts (worker start-up is paid once per sweep, not per run); plots are off;
each case is measured `--repeat` times and the best kept (the machine may be shared).
- throughput: `--runs` drop-test runs of ~0.3 s each (16 boxes dropped from 150 m);
- Dask overhead: `--tiny-runs` runs of ~10 ms through a 1-worker local pool and through a real
  `dask scheduler` + one `dask worker --nthreads 1` on 127.0.0.1; (T_dask - T_local) / runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skyswarm.app.batch import run_batch  # noqa: E402
from skyswarm.app.batch_executors import DaskCluster, Executor, LocalPool  # noqa: E402
from skyswarm.app.sweep import load_sweep  # noqa: E402

HEAVY = {"agents.count": 16, "drop_test.height_m": 150.0, "simulation.duration_s": 30.0}
TINY = {"agents.count": 1, "drop_test.height_m": 0.3}


def write_sweep(folder: Path, fixed: dict[str, float], runs: int) -> Path:
    """A 1-point grid (a mass that changes nothing) x `runs` seeds."""
    lines = [
        "[sweep]",
        f'scenario = "{(ROOT / "configs" / "drop_test.toml").as_posix()}"',
        f"seeds = {runs}",
        "[fixed]",
        *(f'"{k}" = {v}' for k, v in fixed.items()),
        '"results.trajectory_hz" = 10.0',
        "[grid]",
        '"drop_test.mass_kg" = [1.0]',
    ]
    path = folder / f"sweep-{len(list(folder.iterdir()))}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def warm_up(executor: Executor, tmp: Path) -> None:
    """One tiny run per slot: worker start-up and imports happen before any clock starts."""
    warm = load_sweep(write_sweep(tmp, TINY, executor.capacity))
    run_batch(warm, tmp / f"warm-{time.time_ns()}", executor, quiet=True, plots=False)


def timed_sweep(executor: Executor, fixed: dict[str, float], runs: int, tmp: Path) -> float:
    """Wall seconds for `runs` runs through a warmed-up executor."""
    sweep = load_sweep(write_sweep(tmp, fixed, runs))
    start = time.perf_counter()
    result = run_batch(sweep, tmp / f"out-{time.time_ns()}", executor, quiet=True, plots=False)
    elapsed = time.perf_counter() - start
    if result.counts.failed:
        raise RuntimeError(f"{result.counts.failed} benchmark runs failed")
    return elapsed


def best_local(workers: int, fixed: dict[str, float], runs: int, repeat: int, tmp: Path) -> float:
    """Best of `repeat` (the machine may be shared: the minimum is the least disturbed)."""
    pool = LocalPool(workers)
    try:
        warm_up(pool, tmp)
        return min(timed_sweep(pool, fixed, runs, tmp) for _ in range(repeat))
    finally:
        pool.close()


@contextmanager
def dask_cluster() -> Iterator[str]:
    """`dask scheduler` and one single-threaded `dask worker`, separate processes on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT}
    scheduler = ["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port)]
    worker = ["dask", "worker", address, "--nthreads", "1", "--no-nanny"]
    procs = [subprocess.Popen([*scheduler, "--no-dashboard"], **quiet)]
    try:
        procs.append(subprocess.Popen([*worker, "--no-dashboard"], **quiet))
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
            proc.wait(timeout=15)


def best_dask(fixed: dict[str, float], runs: int, repeat: int, tmp: Path) -> float:
    with dask_cluster() as address:
        cluster = DaskCluster(address)
        try:
            warm_up(cluster, tmp)
            return min(timed_sweep(cluster, fixed, runs, tmp) for _ in range(repeat))
        finally:
            cluster.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=24, help="runs per throughput measurement")
    ap.add_argument("--tiny-runs", type=int, default=40, help="runs per overhead measurement")
    ap.add_argument("--repeat", type=int, default=3, help="measurements per case (best kept)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"note: load average {load:.2f} at start: other processes share the CPUs")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        t1 = best_local(1, HEAVY, args.runs, args.repeat, tmp)
        t2 = best_local(2, HEAVY, args.runs, args.repeat, tmp)
        tl = best_local(1, TINY, args.tiny_runs, args.repeat, tmp)
        td = best_dask(TINY, args.tiny_runs, args.repeat, tmp)
    result = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": load,
        },
        "repeat": args.repeat,
        "throughput": {
            "runs": args.runs,
            "workers_1_runs_per_s": args.runs / t1,
            "workers_2_runs_per_s": args.runs / t2,
            "speedup_2_vs_1": t1 / t2,
            "target": 1.8,
        },
        "dask_overhead": {
            "runs": args.tiny_runs,
            "local_1_worker_s_per_run": tl / args.tiny_runs,
            "dask_1_worker_s_per_run": td / args.tiny_runs,
            "overhead_ms_per_run": (td - tl) / args.tiny_runs * 1e3,
        },
    }
    print_table(result)
    out = ROOT / "bench" / "results" / "batch_scaling.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"written: {out.relative_to(ROOT)}")


def print_table(r: dict) -> None:
    th, dk = r["throughput"], r["dask_overhead"]
    rows = [
        ("local pool, 1 worker (runs/s, ~0.3 s runs)", th["workers_1_runs_per_s"]),
        ("local pool, 2 workers (runs/s)", th["workers_2_runs_per_s"]),
        ("speedup 2 vs 1 (target >= 1.8)", th["speedup_2_vs_1"]),
        ("local pool, 1 worker (ms/run, tiny runs)", dk["local_1_worker_s_per_run"] * 1e3),
        ("Dask, 1 worker (ms/run, tiny runs)", dk["dask_1_worker_s_per_run"] * 1e3),
        ("Dask overhead per run (ms)", dk["overhead_ms_per_run"]),
    ]
    print(f"{'measurement':44s} {'value':>10s}")
    for name, value in rows:
        print(f"{name:44s} {value:10.2f}")


if __name__ == "__main__":
    main()
