"""Benchmark: where numba's threads pay (issue 31) — fast-engine hover at N UAVs, the compiled
passes (flight kernel, integrator, body hash) on one thread against two, in interleaved rounds
of one process, every pass forced to its threaded variant from N = 0 (core.backends.PARALLEL_MIN
lowered for the measurement; the variants are bit-identical, so only time changes).

    python bench/threads.py [--sizes 500 1000 2048 4096 10000] [--rounds 5] [--seconds 0.1]

Prints, per N, the median time per tick on one and on two threads and the ratio one / two per
round (median, min, max: above 1 the threads pay), and writes bench/results/threads.json. The
machine is shared: read the ratios and their spread, not the absolute times.

`--auto` measures the default instead, `[simulation] threads = "auto"` (core/thread_tuner.py),
against one thread, as a user's run flies them (`Simulator.run`, the tuner's probes included):
per case (`--cases hover:10000 boids:10000`, fast engine, the scenario as bench/swarm_scale.py
builds it: 5 m grid, boids with a 30 m radio from 1,000 UAVs)
two Simulators in one process, run in alternated chunks of `--seconds` (default 5) simulated
seconds, `--rounds` each; the ratio is one thread's wall time over auto's per round (above 1
auto is faster). Each case is measured quiet and then beside one other CPU-bound process
(`--busy quiet one`: a Python loop this bench starts and stops), the issue's two conditions.
Writes bench/results/threads_auto.json.

    python bench/threads.py --auto [--cases hover:10000 boids:10000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from swarm_scale import build  # the scenario as bench/swarm_scale.py builds it (bench/: path)

import skyswarm.core.backends as backends
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "threads.json"
OUT_AUTO = ROOT / "bench" / "results" / "threads_auto.json"
BUSY = "import time\nwhile True: time.perf_counter()"  # one CPU-bound process


def chunk(sim: Simulator, ticks: int, threads: int) -> float:
    numba.set_num_threads(threads)
    t0 = time.perf_counter()
    for _ in range(ticks):
        sim.step()
    return (time.perf_counter() - t0) / ticks


def write_results(out: Path, load0: tuple, rows: list, args: argparse.Namespace) -> None:
    """The load average at the start and now, then `rows` and the arguments as JSON in `out`."""
    load1 = os.getloadavg()
    print(f"load average: start {load0[0]:.2f}, end {load1[0]:.2f}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"load": [load0, load1], "rows": rows, **vars(args)}, indent=2))
    print(f"wrote {out}")


def auto_case(kind: str, n: int, rounds: int, seconds: float, tmp: Path) -> dict:
    """One thread against "auto" by `run()` in alternated chunks (module docstring)."""
    sims = {
        key: build(kind, n, "fast", tmp, extra=(f"simulation.threads={value}",))
        for key, value in (("one", "1"), ("auto", '"auto"'))
    }
    walls: dict[str, list[float]] = {"one": [], "auto": []}
    for r in range(rounds + 1):  # round 0 warms both up (first ticks, the tuner's first probe)
        for key, sim in sims.items():
            before = sim.wall_s
            sim.run(until_s=sim.time_s + seconds)
            if r:
                walls[key].append(sim.wall_s - before)
    threads = sims["auto"].threads_summary()
    for sim in sims.values():
        sim.close()
    ratio = [a / b for a, b in zip(walls["one"], walls["auto"], strict=True)]
    return {
        "kind": kind,
        "n": n,
        "rtf_one": [seconds / w for w in walls["one"]],
        "rtf_auto": [seconds / w for w in walls["auto"]],
        "one_over_auto": [float(np.median(ratio)), min(ratio), max(ratio)],
        "auto_threads": threads,
    }


def main_auto(args: argparse.Namespace) -> None:
    load0 = os.getloadavg()
    rows = []
    print(
        f"{'case':>14} {'condition':>9} {'RTF 1 thread':>13} {'RTF auto':>9} "
        f"{'1/auto median':>14} {'min':>6} {'max':>6}  auto's ticks on 1 / 2 threads"
    )
    with tempfile.TemporaryDirectory() as d:
        for cond in args.busy:
            busy = None
            if cond == "one":
                busy = subprocess.Popen([sys.executable, "-c", BUSY])
            try:
                for case in args.cases:
                    kind, n = case.split(":")
                    row = auto_case(kind, int(n), args.rounds, args.seconds, Path(d))
                    row["condition"] = cond
                    rows.append(row)
                    ticks = row["auto_threads"].get("ticks", {})
                    print(
                        f"{case:>14} {cond:>9} {np.median(row['rtf_one']):>13.3f} "
                        f"{np.median(row['rtf_auto']):>9.3f} {row['one_over_auto'][0]:>14.2f} "
                        f"{row['one_over_auto'][1]:>6.2f} {row['one_over_auto'][2]:>6.2f}  "
                        + " / ".join(str(v) for v in ticks.values())
                    )
            finally:
                if busy is not None:
                    busy.kill()
                    busy.wait()
    write_results(OUT_AUTO, load0, rows, args)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2048, 4096, 10000])
    ap.add_argument("--rounds", type=int, default=None, help="default 5 (--auto: 3)")
    ap.add_argument("--seconds", type=float, default=None, help="simulated s per chunk")
    ap.add_argument("--auto", action="store_true", help='the default "auto" against 1 thread')
    ap.add_argument("--cases", nargs="+", default=["hover:10000", "boids:10000"])
    ap.add_argument("--busy", nargs="+", choices=["quiet", "one"], default=["quiet", "one"])
    args = ap.parse_args()
    if numba.config.NUMBA_NUM_THREADS < 2:
        raise SystemExit("needs 2 numba threads (NUMBA_NUM_THREADS)")
    if args.auto:
        args.rounds = 3 if args.rounds is None else args.rounds
        args.seconds = 5.0 if args.seconds is None else args.seconds
        main_auto(args)
        return
    args.rounds = 5 if args.rounds is None else args.rounds
    args.seconds = 0.1 if args.seconds is None else args.seconds
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
    write_results(OUT, load0, rows, args)


if __name__ == "__main__":
    main()
