"""Kernel overhead: Simulator.step() vs a bare pybullet loop making the same calls.

Both loops step the same world (N boxes) and make, per tick, one stepSimulation, one pose and
one velocity read per body and one contact query. The kernel adds its phases (tasks, listeners,
controllers, state bookkeeping). Rounds of each variant are interleaved so that machine noise
hits them alike; the table reports the median rate and the ratio to the bare loop.

    python bench/kernel_overhead.py [--agents 1000] [--ticks 200] [--rounds 7]

Writes bench/results/kernel_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from itertools import repeat
from pathlib import Path

import pybullet as pb

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.simulator import Simulator

OUT = Path(__file__).resolve().parent / "results" / "kernel_overhead.json"


def build(n: int, ground: bool) -> Simulator:
    sim = Simulator(SimulationConfig(), WorldConfig(ground=ground))
    w = sim.world
    shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[0.1] * 3, physicsClientId=w.client)
    side = int(n**0.5) + 1
    z = 0.1 if ground else 500.0  # resting on the ground (contacts) or in free fall
    positions = [((i % side) * 1.0, (i // side) * 1.0, z) for i in range(n)]
    bodies = w.create_bodies(1.0, shape, positions)
    for i, slot in enumerate(w.track(bodies)):
        PhysicalAgent(sim, i + 1, slot)
    return sim


def bare_loop(sim: Simulator, ticks: int) -> float:
    """The same pybullet calls the kernel makes, with nothing around them."""
    cid = sim.world.client
    ids = [sim.world.body_of(a.slot) for a in sim.physical_agents]
    gp, gv, step, contacts = (
        pb.getBasePositionAndOrientation,
        pb.getBaseVelocity,
        pb.stepSimulation,
        pb.getContactPoints,
    )
    t0 = time.perf_counter()
    for _ in range(ticks):
        step(physicsClientId=cid)
        # The fastest way to make the calls from Python: map with positional arguments.
        poses = list(map(gp, ids, repeat(cid)))
        vels = list(map(gv, ids, repeat(cid)))
        pts = contacts(physicsClientId=cid)
    del poses, vels, pts
    return time.perf_counter() - t0


def kernel_loop(sim: Simulator, ticks: int) -> float:
    t0 = time.perf_counter()
    for _ in range(ticks):
        sim.step()
    return time.perf_counter() - t0


def kernel_arrays_loop(sim: Simulator, ticks: int) -> float:
    """Kernel plus a consumer of the state arrays every tick (what a controller would cause)."""
    state = sim.world.state
    t0 = time.perf_counter()
    for _ in range(ticks):
        sim.step()
        state.position, state.linear_velocity  # noqa: B018 - forces the arrays to be built
    return time.perf_counter() - t0


VARIANTS = {
    "bare pybullet": bare_loop,
    "kernel": kernel_loop,
    "kernel + arrays": kernel_arrays_loop,
}


def measure(n: int, ground: bool, ticks: int, rounds: int) -> dict[str, float]:
    sims = {name: build(n, ground) for name in VARIANTS}
    for name, fn in VARIANTS.items():  # warm-up
        fn(sims[name], 20)
    rates: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, fn in VARIANTS.items():
            rates[name].append(ticks / fn(sims[name], ticks))
    for sim in sims.values():
        sim.close()
    return {name: statistics.median(r) for name, r in rates.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--ticks", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    rows = []
    for n in args.agents:
        for ground in (False, True):
            r = measure(n, ground, args.ticks, args.rounds)
            base = r["bare pybullet"]
            for name, rate in r.items():
                rows.append(
                    {
                        "agents": n,
                        "scene": "resting on ground" if ground else "free fall",
                        "variant": name,
                        "ticks_per_s": rate,
                        "real_time_factor": rate * 0.0025,
                        "ratio_to_bare": rate / base,
                    }
                )
    print(f"{'agents':>6}  {'scene':<18} {'variant':<16} {'ticks/s':>9} {'RTF':>7} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['agents']:>6}  {r['scene']:<18} {r['variant']:<16} {r['ticks_per_s']:>9.1f} "
            f"{r['real_time_factor']:>7.2f} {r['ratio_to_bare']:>6.3f}"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "ticks": args.ticks,
        "rounds": args.rounds,
        "statistic": "median over rounds",
    }
    OUT.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
