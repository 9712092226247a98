"""Benchmark: what collision avoidance costs a big swarm (issues 29 and 31) — fast-engine hover
(configs/hover.toml: a 4 m grid at 10 m, `simulation.physics = "fast"`) at 1,000, 2,000 and
10,000 UAVs with `[avoidance]` on and off, side by side in one run.

Each variant runs in its own process (peak RSS is a process's), built as `Simulator.from_scenario`
without a results directory (no recorder: the numbers are the simulation's), warmed up for
`--warmup` simulated seconds (the first scans; kernels are compiled before the clock), then timed
for `--seconds` simulated seconds (a 50-UAV run of each checkout first fills numba's cache, so no
measured process compiles). The variants run in interleaved rounds (every variant once per
round), so each sees the same machine load; per variant the median real-time factor over the
rounds (min and max beside it) and the largest peak RSS.

`--baseline DIR` adds, at every size, avoidance on with the code of another checkout (DIR/skyswarm,
e.g. `git worktree add /tmp/wt HEAD~1` linked as /tmp/base/skyswarm; mode "old"), so a change to
the layer is measured against its parent in the same interleaved rounds (issue 31: the compiled
scan; per round the RTF of "on" over "old", median, min, max). `--before DIR` adds the dense scan
of an older checkout (DIR/skyswarm, e.g. `git archive 2cd8772` unpacked there; `[avoidance]
max_agents` lifted) at the sizes listed by `--before-sizes`: its
(N, N) scan does not fit in memory at 10,000.

    python bench/avoidance_scale.py [--sizes 1000 2000 10000] [--seconds S] [--rounds R]
    python bench/avoidance_scale.py --before /tmp/before --before-sizes 1000 2000
    python bench/avoidance_scale.py --sizes 1000 10000 --baseline /tmp/base --rounds 3

Prints a table and writes bench/results/avoidance_scale.json. Not a test: numbers depend on
the host and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "avoidance_scale.json"


def child(n: int, mode: str, warmup_s: float, seconds: float) -> dict:
    """One variant in this process: build, warm up, time; the row as a dict."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    over = [f"agents.count={n}", 'simulation.physics="fast"', "simulation.duration_s=3600.0"]
    over.append(f"avoidance.enabled={'false' if mode == 'off' else 'true'}")
    if mode == "before":
        over.append("avoidance.max_agents=1000000")
    t0 = time.perf_counter()
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs" / "hover.toml", over))
    build_s = time.perf_counter() - t0
    tick = sim.scenario.simulation.tick_s
    for _ in range(round(warmup_s / tick)):
        sim.step()
    ticks = round(seconds / tick)
    t0 = time.perf_counter()
    for _ in range(ticks):
        sim.step()
    wall = time.perf_counter() - t0
    av = sim.mission.swarm.avoidance
    row = {
        "n": n,
        "mode": mode,
        "real_time_factor": ticks * tick / wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "build_s": build_s,
        "deaths": len(sim.deaths),
        "avoidance": av.summary() if av is not None else None,
    }
    sim.close()
    return row


def run_child(n: int, mode: str, args: argparse.Namespace) -> dict:
    """Run `child` in a fresh interpreter (this checkout, --before's for mode 'before',
    --baseline's for mode 'old')."""
    env = dict(os.environ)
    if mode == "before":
        env["PYTHONPATH"] = str(args.before)
    if mode == "old":
        env["PYTHONPATH"] = str(args.baseline)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(n), mode]
    cmd += ["--warmup", str(args.warmup), "--seconds", str(args.seconds)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"n": n, "mode": mode, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def summarise(rows: list[dict]) -> list[dict]:
    """Per (n, mode): median, min, max real-time factor over the rounds, largest peak RSS."""
    table = []
    for key in dict.fromkeys((r["n"], r["mode"]) for r in rows):
        mine = [r for r in rows if (r["n"], r["mode"]) == key]
        ok = [r for r in mine if "error" not in r]
        if not ok:
            table.append({"n": key[0], "mode": key[1], "error": mine[0]["error"]})
            continue
        rtf = [r["real_time_factor"] for r in ok]
        table.append(
            {
                "n": key[0],
                "mode": key[1],
                "rounds": len(ok),
                "real_time_factor": [float(np.median(rtf)), min(rtf), max(rtf)],
                "peak_rss_mb": max(r["peak_rss_mb"] for r in ok),
                "deaths": max(r["deaths"] for r in ok),
                "avoidance": ok[-1]["avoidance"],
            }
        )
    return table


def new_over_old(rows: list[dict]) -> dict[int, list[float]]:
    """Per size: the RTF of mode "on" over mode "old" in each round, [median, min, max]."""
    out = {}
    for n in dict.fromkeys(r["n"] for r in rows):
        by = {(r["mode"], r["round"]): r for r in rows if r["n"] == n and "error" not in r}
        ratios = [
            by["on", k]["real_time_factor"] / by["old", k]["real_time_factor"]
            for m, k in by
            if m == "on" and ("old", k) in by
        ]
        if ratios:
            out[n] = [float(np.median(ratios)), min(ratios), max(ratios)]
    return out


def show(table: list[dict], args: argparse.Namespace) -> None:
    print(
        f"\nfast hover (configs/hover.toml, 4 m grid), {args.rounds} interleaved rounds of "
        f"{args.seconds} s simulated after {args.warmup} s warm-up"
    )
    head = f"{'UAVs':>6} {'avoidance':<10} {'RTF median':>10} {'min':>6} {'max':>6}"
    print(f"{head} {'peak RSS MB':>11} {'on/off':>7} {'deaths':>6}")
    off = {r["n"]: r for r in table if r["mode"] == "off" and "error" not in r}
    for r in table:
        if "error" in r:
            print(f"{r['n']:>6,} {r['mode']:<10} failed: {r['error']}")
            continue
        med, lo, hi = r["real_time_factor"]
        ratio = med / off[r["n"]]["real_time_factor"][0] if r["n"] in off else float("nan")
        print(
            f"{r['n']:>6,} {r['mode']:<10} {med:>10.2f} {lo:>6.2f} {hi:>6.2f} "
            f"{r['peak_rss_mb']:>11.0f} {ratio:>7.2f} {r['deaths']:>6}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 10000])
    ap.add_argument("--seconds", type=float, default=2.0, help="simulated seconds timed")
    ap.add_argument("--warmup", type=float, default=0.5, help="simulated seconds before")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--before", type=Path, help="parent folder of an older skyswarm checkout")
    ap.add_argument("--before-sizes", type=int, nargs="*", default=[1000, 2000])
    ap.add_argument("--baseline", type=Path, help="parent folder of a checkout to compare with")
    ap.add_argument("--child", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1], args.warmup, args.seconds)))
        return
    modes = ("off", "old", "on") if args.baseline else ("off", "on")
    variants = [(n, m) for n in args.sizes for m in modes]
    if args.before:
        variants += [(n, "before") for n in args.before_sizes]
    for mode in dict.fromkeys(m for _, m in variants):  # fill numba's cache: no compiling
        run_child(50, mode, args)  # (or its memory) inside a measured process
    rows = []
    for r in range(args.rounds):
        for n, mode in variants:
            rows.append(run_child(n, mode, args) | {"round": r})
            print(f"round {r + 1}: {n} {mode} {rows[-1]}", file=sys.stderr, flush=True)
    table = summarise(rows)
    show(table, args)
    ratios = new_over_old(rows)
    for n, (med, lo, hi) in ratios.items():
        print(f"{n:>6,} on / old (per round): median {med:.2f}, min {lo:.2f}, max {hi:.2f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {"host": platform.node(), "cpus": os.cpu_count(), "load": os.getloadavg()}
    paths = {"before": str(args.before), "baseline": str(args.baseline)}
    out = {"meta": meta, "args": vars(args) | paths, "table": table, "on_over_old": ratios}
    OUT.write_text(json.dumps(out | {"rows": rows}, indent=1))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
