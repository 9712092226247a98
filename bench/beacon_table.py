"""Benchmark: the bounded beacon table alone (core/comms/nearest_table.py `nearest_pairs`,
each receiver's K nearest senders in range with the pairs in range counted), ms per beacon
round, this tree's against an older tree's, on the same positions.

Cases (positions from the bench/swarm_scale.py scenarios, flown 1 s on the fast engine, every
UAV a receiver and a sender, as the beacon net passes them):
- boids at 1,000 on the shipped 100 m radio with K 16 (configs/boids.toml) and K 64 (the
  channel's default): ~600 senders in range of each UAV, issue 31's dense radio;
- hover at 10,000 on a 30 m radio with K 16 and K 64: ~110 in range;
- a cloud of 2,000 points in a 60 m ball on the 100 m radio with K 16: every pair in range,
  in three dimensions.

Each case runs the serial kernel on one thread and the threaded one (`nearest_pairs_parallel`)
on two, in rounds of 20 calls, the variants alternated round by round. Prints the median and
the fastest round per variant, the ratio to the first variant, and whether every variant wrote
the same bits (the CSR table and both counts) as the first; writes
bench/results/beacon_table.json.

    python bench/beacon_table.py [--rounds 7] [--before-tree DIR]

`--before-tree DIR`: DIR/skyswarm/core/comms/nearest_table.py (beacon_kernels.py in trees
before it had a module of its own) is loaded as a module of its own (from a copy under a fresh
name, so that numba's cache never hands it another copy's code) and measured beside this
tree's; DIR made by e.g.
`mkdir -p DIR/skyswarm && git archive REV | tar -x -C DIR/skyswarm`. Trees before the cell
populations (1471f15) take a grid scratch of three flat arrays; the bench sizes each variant's.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from swarm_scale import build  # the scenario as bench/swarm_scale.py builds it (bench/: path)

import skyswarm.core.comms.nearest_table as this_tree

OUT = Path(__file__).resolve().parent / "results" / "beacon_table.json"
CALLS = 20  # per round


def load_copy(path: Path, folder: Path):
    """The module at `path`, loaded from a copy in `folder` under a name of its own."""
    name = f"before_nearest_table_{os.getpid()}"
    copy = folder / f"{name}.py"
    shutil.copyfile(path, copy)
    spec = importlib.util.spec_from_file_location(name, copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def positions(kind: str, n: int, radio: tuple[float, int] | None, tmp: Path) -> np.ndarray:
    """The swarm's positions after 1 s of the scenario (fast engine, one thread)."""
    sim = build(kind, n, "fast", tmp, radio, extra=("simulation.threads=1",))
    sim.run(until_s=sim.time_s + 1.0)
    pos = np.ascontiguousarray(sim.world.state.position[sim.mission.swarm.rows], dtype=float)
    sim.close()
    return pos


def cases(tmp: Path) -> list[dict]:
    boids = positions("boids", 1000, (100.0, 16), tmp / "boids")
    hover = positions("hover", 10000, None, tmp / "hover")
    rng = np.random.default_rng(1)
    ball = rng.normal(size=(2000, 3))
    ball *= (30.0 * rng.random(2000) ** (1 / 3) / np.linalg.norm(ball, axis=1))[:, None]
    ball[:, 2] += 40.0
    return [
        {"name": "boids 1,000, 100 m, K 16", "pos": boids, "range_m": 100.0, "k": 16},
        {"name": "boids 1,000, 100 m, K 64", "pos": boids, "range_m": 100.0, "k": 64},
        {"name": "hover 10,000, 30 m, K 16", "pos": hover, "range_m": 30.0, "k": 16},
        {"name": "hover 10,000, 30 m, K 64", "pos": hover, "range_m": 30.0, "k": 64},
        {"name": "ball 2,000, 100 m, K 16", "pos": ball, "range_m": 100.0, "k": 16},
    ]


def buffers(module, n: int, k: int) -> tuple[tuple, tuple]:
    """The grid scratch and the CSR buffers, as the beacon net sizes them for `module`."""
    if hasattr(module, "_pack"):  # cell populations: (cell_of, order, pop (4, 4n + 65))
        grid = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((4, 4 * n + 65), np.int64))
    else:  # (cell_of, order, start (4n + 65,))
        grid = tuple(np.zeros(s, dtype=np.int64) for s in (n, n, 4 * n + 65))
    cap = max(n * min(k, max(n - 1, 1)), 1)
    out = (
        np.zeros(n + 1, np.int64),
        np.zeros(cap, np.int64),
        np.zeros(cap, np.int64),
        np.zeros(cap),
        np.zeros(n, np.int64),
        np.zeros(n, np.int64),
    )
    return grid, out


def measure(variants: dict, case: dict, threads: int, rounds: int) -> dict:
    pos, range_m, k = case["pos"], case["range_m"], case["k"]
    n = len(pos)
    ones, no = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    entry = "nearest_pairs" if threads == 1 else "nearest_pairs_parallel"
    calls, written = {}, {}
    for name, module in variants.items():
        grid, out = buffers(module, n, k)
        fn = getattr(module, entry)

        def call(fn=fn, grid=grid, out=out):
            return fn(pos, ones, ones, no, False, range_m, k, grid, out)

        e = call()  # compile (or load), and the bits it writes
        calls[name] = call
        written[name] = [out[0], out[1][:e], out[2][:e], out[3][:e], out[4], out[5]]
    times: dict[str, list[float]] = {name: [] for name in variants}
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for _ in range(rounds):
            for name in variants:
                t0 = time.perf_counter()
                for _ in range(CALLS):
                    calls[name]()
                times[name].append((time.perf_counter() - t0) / CALLS * 1e3)
    finally:
        numba.set_num_threads(before)
    first = next(iter(variants))
    row = {"case": case["name"], "n": n, "k": k, "range_m": range_m, "threads": threads}
    row["in_range_per_receiver"] = float(np.mean(written[first][4]))
    row["variants"] = {}
    for name in variants:
        same = all(
            a.dtype == b.dtype and a.tobytes() == b.tobytes()
            for a, b in zip(written[name], written[first], strict=True)
        )
        med = float(np.median(times[name]))
        row["variants"][name] = {
            "ms_per_round": med,
            "fastest": min(times[name]),
            "rounds": times[name],
            "ratio_to_first": med / float(np.median(times[first])),
            "same_bits_as_first": same,
        }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--before-tree", type=Path, default=None)
    args = ap.parse_args()
    load0 = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        variants = {"this tree": this_tree}
        if args.before_tree is not None:
            comms = args.before_tree.joinpath("skyswarm", "core", "comms")
            path = comms / "nearest_table.py"
            if not path.is_file():
                path = comms / "beacon_kernels.py"
            if not path.is_file():
                raise SystemExit(f"--before-tree: {path} is not a file (expected DIR/skyswarm/...)")
            variants = {"before": load_copy(path, Path(d)), **variants}
        print(f"{'case':<26} {'thr':>3} {'variant':>10} {'ms/round':>9} {'fastest':>8} "
              f"{'x first':>8}  same bits")  # fmt: skip
        for case in cases(Path(d)):
            for threads in (1, 2):
                row = measure(variants, case, threads, args.rounds)
                rows.append(row)
                for name, v in row["variants"].items():
                    print(
                        f"{case['name']:<26} {threads:>3} {name:>10} {v['ms_per_round']:>9.3f} "
                        f"{v['fastest']:>8.3f} {v['ratio_to_first']:>8.3f}  "
                        f"{v['same_bits_as_first']}"
                    )
    load1 = os.getloadavg()
    print(f"load average: start {load0[0]:.2f}, end {load1[0]:.2f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    out = {"load": [load0, load1], "rows": rows, "rounds": args.rounds, "calls": CALLS}
    out["before_tree"] = str(args.before_tree) if args.before_tree else None
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
