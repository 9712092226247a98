"""Benchmark: a first run on a fresh numba cache against a warm one (issue 31, compile before
the clock). Each round starts a new cache directory (NUMBA_CACHE_DIR in a temporary folder) and
runs the same scenario twice in fresh processes: first cold (every kernel compiled during the
set-up), then warm (loaded from that cache). The loop's real-time factor should be the same;
the set-up's compile time (`compile_s` of the summary) is what differs.

    python bench/compile_ahead.py [--agents 1000] [--seconds 2] [--rounds 1] [--physics fast]
    python bench/compile_ahead.py --kernels

`--kernels` instead compiles every declared signature (`skyswarm warmup`'s set) in one fresh
process on a fresh cache and prints the CPU seconds of each, heaviest first (a callee shared by
two kernels is counted with the first that compiles it).

Prints a table and writes bench/results/compile_ahead.json. Not a test: numbers depend on the
host (2 shared cores: read the cold/warm ratio, not the absolute factors).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "compile_ahead.json"

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
sc = load_scenario(sys.argv[1], sys.argv[3:])
sim = Simulator.from_scenario(sc)
setup = time.perf_counter() - t0
from skyswarm.core.jit import compiled_signatures
before = compiled_signatures()
c0 = time.process_time()
sim.run(until_s=float(sys.argv[2]))
cpu = time.process_time() - c0
grown = sum(n - before.get(k, 0) for k, n in compiled_signatures().items())
s = sim.summary()
print(json.dumps({"setup_s": setup, "compile_s": s["compile_s"], "wall_s": s["wall_time_s"],
                  "rtf": s["real_time_factor"], "cpu_rtf": s["sim_time_s"] / cpu,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "compiled_in_loop": grown}))
"""


_KERNELS = """
import time
from skyswarm.app.warmup import import_compiled_modules
from skyswarm.core import jit
import_compiled_modules()
rows = []
for kernel, types in jit.shares(1)[0]:
    t = time.process_time()
    kernel.compile(types)
    rows.append((time.process_time() - t, kernel.py_func.__module__ + "." + kernel.__name__))
for cpu, name in sorted(rows, reverse=True):
    print(f"{cpu:8.2f}  {name}")
print(f"{sum(r[0] for r in rows):8.2f}  total, {len(rows)} signatures (CPU s)")
"""


def kernel_times() -> None:
    """`--kernels`: every declared signature's compile CPU seconds on a fresh cache."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, NUMBA_CACHE_DIR=d)
        subprocess.run([sys.executable, "-c", _KERNELS], env=env, check=True)


def one_run(cache: Path, args: argparse.Namespace) -> dict:
    """One run of the scenario in a fresh process with its numba cache in `cache`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    over = [f"agents.count={args.agents}", f'simulation.physics="{args.physics}"']
    cmd = [sys.executable, "-c", _CHILD, str(ROOT / "configs" / f"{args.scenario}.toml")]
    out = subprocess.run(
        [*cmd, str(args.seconds), *over], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="hover")
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--physics", default="fast")
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated seconds per run")
    ap.add_argument("--rounds", type=int, default=1, help="fresh caches (each compiles all)")
    ap.add_argument("--kernels", action="store_true", help="per-kernel compile CPU seconds")
    args = ap.parse_args()
    if args.kernels:
        kernel_times()
        return
    rows = []
    print(f"{args.scenario}, {args.agents} agents on {args.physics}, {args.seconds} s per run")
    print(
        f"{'round':>5} {'cache':>6} {'compile s':>10} {'set-up s':>9} {'loop RTF':>9} "
        f"{'loop CPU RTF':>12} {'peak MB':>8} {'compiled in loop':>16}"
    )
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as d:
            for kind in ("cold", "warm"):
                row = {"round": r, "cache": kind, **one_run(Path(d), args)}
                rows.append(row)
                print(
                    f"{r:>5} {kind:>6} {row['compile_s']:>10.2f} {row['setup_s']:>9.2f} "
                    f"{row['rtf']:>9.3f} {row['cpu_rtf']:>12.3f} {row['peak_mb']:>8.0f} "
                    f"{row['compiled_in_loop']:>16}"
                )
    ratios = [c["rtf"] / w["rtf"] for c, w in zip(rows[::2], rows[1::2], strict=True) if w["rtf"]]
    cpu = [c["cpu_rtf"] / w["cpu_rtf"] for c, w in zip(rows[::2], rows[1::2], strict=True)]
    print(
        f"loop RTF cold / warm: {', '.join(f'{x:.2f}' for x in ratios)}; by the loop's CPU "
        f"time (what the machine's load disturbs less): {', '.join(f'{x:.2f}' for x in cpu)}"
    )
    out = {
        "meta": {"python": platform.python_version(), "numpy": np.__version__,
                 "cpus": os.cpu_count(), "load_average": os.getloadavg(), **vars(args)},
        "runs": rows,
        "cold_over_warm_rtf": ratios,
        "cold_over_warm_cpu_rtf": cpu,
    }  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
