"""Benchmark: where numba's threads pay (issue 31) — fast-engine hover at N UAVs, the compiled
passes (flight kernel, integrator, body hash) on one thread against two, in interleaved rounds
of one process, every pass forced to its threaded variant from N = 0 (core.backends.PARALLEL_MIN
lowered for the measurement; the variants are bit-identical, so only time changes).

    python bench/threads.py [--sizes 500 1000 2048 4096 10000] [--rounds 5] [--seconds 0.1]

Prints, per N, the median time per tick on one and on two threads and the ratio one / two per
round (median, min, max: above 1 the threads pay), and writes bench/results/threads.json. The
machine is shared: read the ratios and their spread, not the absolute times.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

import skyswarm.core.backends as backends
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "threads.json"


def chunk(sim: Simulator, ticks: int, threads: int) -> float:
    numba.set_num_threads(threads)
    t0 = time.perf_counter()
    for _ in range(ticks):
        sim.step()
    return (time.perf_counter() - t0) / ticks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2048, 4096, 10000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.1, help="simulated seconds per chunk")
    args = ap.parse_args()
    if numba.config.NUMBA_NUM_THREADS < 2:
        raise SystemExit("needs 2 numba threads (NUMBA_NUM_THREADS)")
    backends.PARALLEL_MIN = 0  # every pass threaded when more than one thread is set
    load0 = os.getloadavg()
    rows = []
    print(
        f"{'N':>6} {'1 thread ms':>12} {'2 threads ms':>13} {'1/2 median':>11} "
        f"{'min':>6} {'max':>6}"
    )
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            over = [f"agents.count={n}", "agents.spacing_m=5.0", 'simulation.physics="fast"']
            sc = load_scenario(ROOT / "configs" / "hover.toml", over)
            sim = Simulator.from_scenario(sc, results_dir=Path(d) / str(n))
            ticks = max(20, round(args.seconds / 0.0025))
            chunk(sim, 40, 1)
            chunk(sim, 40, 2)
            one, two = [], []
            for _ in range(args.rounds):
                one.append(chunk(sim, ticks, 1))
                two.append(chunk(sim, ticks, 2))
            sim.close()
            ratio = [a / b for a, b in zip(one, two, strict=True)]
            row = {"n": n, "one_s": float(np.median(one)), "two_s": float(np.median(two)),
                   "one_over_two": [float(np.median(ratio)), min(ratio), max(ratio)]}  # fmt: skip
            rows.append(row)
            print(
                f"{n:>6} {row['one_s'] * 1e3:>12.3f} {row['two_s'] * 1e3:>13.3f} "
                f"{row['one_over_two'][0]:>11.2f} {min(ratio):>6.2f} {max(ratio):>6.2f}"
            )
    load1 = os.getloadavg()
    print(f"load average: start {load0[0]:.2f}, end {load1[0]:.2f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"load": [load0, load1], "rows": rows, **vars(args)}, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
