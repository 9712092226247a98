"""Benchmark: N hovering quadrotors on the Bullet and the fast physics backend, and the bare
pybullet loop, from N = 10 to 10,000; agent-steps/s, real-time factor and memory per agent;
the fast backend with numba's threads and with one thread (`fast_1_thread`, same results).

For each N the three loops run interleaved in one process (bullet chunk, fast chunk, bare chunk,
repeated; the median per loop), so their ratios come from the same machine load. Both skyswarm
loops are what a scenario run steps: `Simulator` + `Swarm` hovering in Position mode over a
ground plane, with the collision monitor and fault injector installed (no recorder). The bare
loop makes only the pybullet calls skyswarm's Bullet backend cannot avoid (one force, one
torque, one pose and one velocity call per body, one step and one contact query per tick) with
no control at all: the ceiling of any pybullet-based simulator. Memory per agent is the growth
of the resident set when a fresh process builds the hovering swarm, divided by N.
Prints a table and writes bench/results/backends.json. Not a test: numbers depend on the host.

    python bench/backends.py [--sizes 10 100 1000 3000 10000] [--seconds 0.5] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np

from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.swarm import Swarm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from uav_hover import BareLoop, grid  # noqa: E402 - the bare pybullet loop, shared

OUT = Path(__file__).resolve().parent / "results" / "backends.json"
TICK_S = 0.0025
ALTITUDE_M = 10.0


class HoverLoop:
    """N UAVs hovering at 10 m on one backend, as a scenario run steps them."""

    def __init__(self, n: int, physics: str) -> None:
        # threads = 0: every numba thread (the fast column); OneThread sets one per chunk
        self.sim = Simulator(SimulationConfig(physics=physics, threads=0), WorldConfig())
        cfg = load_uav_config()
        pos = grid(n, z=ALTITUDE_M)
        self.swarm = Swarm(self.sim, cfg, range(1, n + 1), pos, np.zeros(n), hovering=True)
        self.sim.install_faults(FaultsConfig())

    def run(self, ticks: int) -> None:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)  # as set up: every thread
        step = self.sim.step
        for _ in range(ticks):
            step()

    def check(self) -> float:
        """Largest altitude error, m (the hover must really hover)."""
        z = self.sim.world.state.position[self.swarm.rows, 2]
        return float(np.abs(z - ALTITUDE_M).max())


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _memory_child(n: int, physics: str, queue) -> None:
    loop = HoverLoop(1, physics)  # pays for imports, kernels and the Bullet client first
    loop.run(2)
    before = rss_bytes()
    big = HoverLoop(n, physics)
    big.run(2)
    queue.put((rss_bytes() - before) / n)


def memory_per_agent(n: int, physics: str) -> float:
    """Bytes of resident memory per hovering agent, measured in a fresh process."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_memory_child, args=(n, physics, q))
    p.start()
    value = q.get()
    p.join()
    return float(value)


class OneThread:
    """A loop run with one numba thread (the fast backend's serial kernels), restoring the
    thread count after: the same results, the cost of the threads' absence."""

    def __init__(self, loop: HoverLoop) -> None:
        self.loop = loop

    def run(self, ticks: int) -> None:
        threads = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            step = self.loop.sim.step
            for _ in range(ticks):
                step()
        finally:
            numba.set_num_threads(threads)


def measure(n: int, seconds: float, rounds: int, bare: bool) -> dict:
    loops = {"bullet": HoverLoop(n, "bullet"), "fast": HoverLoop(n, "fast")}
    if numba.config.NUMBA_NUM_THREADS > 1:
        loops["fast_1_thread"] = OneThread(HoverLoop(n, "fast"))
    if bare:
        loops["bare"] = BareLoop(n)
    for loop in loops.values():
        loop.run(5)  # warm-up (compiled kernels' first calls)
    ticks = {}
    for name, loop in loops.items():  # ticks per round: ~`seconds` of wall time each
        t0 = time.perf_counter()
        loop.run(3)
        per = (time.perf_counter() - t0) / 3
        ticks[name] = max(3, int(seconds / per))
    times: dict[str, list[float]] = {name: [] for name in loops}
    cpu: dict[str, list[float]] = {name: [] for name in loops}  # process CPU s per tick
    for _ in range(rounds):
        for name, loop in loops.items():
            c0, t0 = time.process_time(), time.perf_counter()
            loop.run(ticks[name])
            times[name].append((time.perf_counter() - t0) / ticks[name])
            cpu[name].append((time.process_time() - c0) / ticks[name])
    row: dict = {"n": n, "hover_error_m": {k: loops[k].check() for k in ("bullet", "fast")}}
    row["deaths"] = {k: len(loops[k].sim.deaths) for k in ("bullet", "fast")}
    for name, ts in times.items():
        per_tick = float(np.median(ts))
        row[name] = {
            "s_per_tick": per_tick,
            "s_per_tick_range": [min(ts), max(ts)],
            "cpu_s_per_tick": float(np.median(cpu[name])),
            "agent_steps_per_s": n / per_tick,
            "real_time_factor": TICK_S / per_tick,
            "ticks_per_round": ticks[name],
        }
    row["fast_over_bullet"] = row["bullet"]["s_per_tick"] / row["fast"]["s_per_tick"]
    # per round (interleaved, so the same load): median, min, max; and by CPU time, which a
    # loaded machine disturbs less (one thread's: the serial columns)
    per_round = [b / f for b, f in zip(times["bullet"], times["fast"], strict=True)]
    row["fast_over_bullet_rounds"] = [float(np.median(per_round)), min(per_round), max(per_round)]
    if "fast_1_thread" in loops:
        row["fast_1_thread_over_bullet_cpu"] = (
            row["bullet"]["cpu_s_per_tick"] / row["fast_1_thread"]["cpu_s_per_tick"]
        )
    if "fast_1_thread" in row:
        row["threads_speedup"] = row["fast_1_thread"]["s_per_tick"] / row["fast"]["s_per_tick"]
    for loop in loops.values():
        getattr(loop, "loop", loop).sim.close()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 3000, 10000])
    ap.add_argument("--seconds", type=float, default=0.5, help="wall s per loop and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--memory", type=int, nargs="*", default=[1000, 10000], help="N for memory")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare pybullet loop")
    args = ap.parse_args()
    rows = []
    print(
        f"numba threads {numba.get_num_threads()} ({numba.config.THREADING_LAYER} layer), "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    print(
        f"{'N':>6} {'bullet ag-steps/s':>18} {'RTF':>7} {'fast ag-steps/s':>16} {'RTF':>7} "
        f"{'fast 1 thread RTF':>17} {'bare ag-steps/s':>16} {'RTF':>7} {'fast/bullet':>12} "
        f"{'(min-max)':>12} {'1 thread/bullet CPU':>20}"
    )
    for n in args.sizes:
        r = measure(n, args.seconds, args.rounds, not args.no_bare)
        rows.append(r)
        b, f = r["bullet"], r["fast"]
        bare = r.get("bare")
        bare_cols = (
            f"{bare['agent_steps_per_s']:>16,.0f} {bare['real_time_factor']:>7.2f}"
            if bare
            else f"{'-':>16} {'-':>7}"
        )
        one = r.get("fast_1_thread")
        one_col = f"{one['real_time_factor']:>17.2f}" if one else f"{'-':>17}"
        _, lo, hi = r["fast_over_bullet_rounds"]
        spread = f"({lo:.1f}-{hi:.1f})"
        cpu_col = f"{r['fast_1_thread_over_bullet_cpu']:.1f}" if one else "-"
        print(
            f"{n:>6} {b['agent_steps_per_s']:>18,.0f} {b['real_time_factor']:>7.2f} "
            f"{f['agent_steps_per_s']:>16,.0f} {f['real_time_factor']:>7.2f} {one_col} "
            f"{bare_cols} {r['fast_over_bullet']:>12.1f} {spread:>12} {cpu_col:>20}"
        )
    memory = {}
    for n in args.memory:
        memory[n] = {p: memory_per_agent(n, p) for p in ("bullet", "fast")}
        print(
            f"memory per agent at N = {n}: bullet {memory[n]['bullet'] / 1024:.1f} kB, "
            f"fast {memory[n]['fast'] / 1024:.1f} kB"
        )
    print(
        "RTF = simulated / wall time at the 2.5 ms tick (400 Hz); fast/bullet = ratio of time "
        "per tick, same process, interleaved. Hover with collision monitor and fault injector. "
        f"Load average at the end {os.getloadavg()[0]:.1f}."
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "load_average_end": os.getloadavg(),
        "numba_threads": numba.get_num_threads(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "machine": platform.machine(),
        "cpus": mp.cpu_count(),
    }
    OUT.write_text(json.dumps({"meta": meta, "rows": rows, "memory_bytes": memory}, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
