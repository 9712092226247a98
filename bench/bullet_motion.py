"""Benchmark: what motion costs Bullet — N quadrotor bodies hovering vs flying at boids speeds,
in a bare pybullet loop (no control, no skyswarm stack), phase by phase.

Why: at N = 1,000 the boids stack on Bullet is slower than the hover stack by more than its own
work (beacons, steering, metrics). This loop isolates Bullet's share. Every variant has the same
N bodies (the airframe's mesh, mass and inertia, as `Swarm` builds them) on a 5 m grid at 10 m
over the ground plane, the same calls per tick (one force and one torque per body, one step, one
pose and one velocity read per body, one contact query) and the weight cancelled by the force,
so the bodies fly straight at the speed they were given:
- `hover`: at rest, as the hover stack's UAVs are;
- `1 m/s`, `3 m/s`: the boids' slowest and cruise speeds, a common heading with +-0.5 m/s of
  spread per body (the grid never closes in during a run: no contacts);
- `3 m/s turning`: the same plus a yaw rate of 0.5 rad/s, as boids turn their noses.
Variants run interleaved in rounds (the median per variant), so they see the same machine load.

Inside the step, a second short window per variant logs pybullet's own profile timings
(`STATE_LOGGING_PROFILE_TIMINGS`): `updateAabbs` (world AABBs, and the broadphase tree update
of every body whose AABB left its fattened box: the cost that grows with speed),
`calculateOverlappingPairs`, `dispatchAllCollisionPairs` (narrowphase; the infinite ground
plane overlaps every body, so each tick tests every body against it), `solveConstraints`,
the multibody integration and the islands. The logging adds its own overhead to every call:
compare those columns between variants, not with the timed table.

    python bench/bullet_motion.py [--n 1000] [--rounds 9] [--ticks 40]

Prints two tables and writes bench/results/bullet_motion.json. Not a test: numbers depend on
the host.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import tempfile
import time
from collections import defaultdict
from itertools import repeat
from pathlib import Path

import numpy as np

from skyswarm.core._quiet import import_pybullet
from skyswarm.core.config import WorldConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.swarm import add_uav_bodies

pb = import_pybullet()  # without its build-time banner
OUT = Path(__file__).resolve().parent / "results" / "bullet_motion.json"
VARIANTS = {  # name: (speed m/s, yaw rate rad/s)
    "hover": (0.0, 0.0),
    "1 m/s": (1.0, 0.0),
    "3 m/s": (3.0, 0.0),
    "3 m/s turning": (3.0, 0.5),
}
PHASES = ("forces", "step", "poses", "velocities", "contacts")
# pybullet's profile sections inside stepSimulation, in the order they run
SECTIONS = (
    "updateAabbs",
    "calculateOverlappingPairs",
    "dispatchAllCollisionPairs",
    "solveConstraints",
    "btMultiBody stepVelocities",
    "btMultiBody stepPositions",
    "calculateSimulationIslands",
    "internalSingleStepSimulation",
)


def grid(n: int, spacing: float = 5.0, z: float = 10.0) -> np.ndarray:
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    return np.column_stack([(i % side) * spacing, (i // side) * spacing, np.full(n, z)])


class MotionLoop:
    """N bodies given a velocity (m/s) and yaw rate (rad/s), then stepped with the bare calls."""

    def __init__(self, n: int, speed: float, yaw_rate: float, seed: int = 0) -> None:
        self.sim = Simulator(world=WorldConfig())  # the scenario world: ground plane, gravity
        airframe = load_uav_config().airframe
        world = self.sim.world
        self.client = world.client  # type: ignore[attr-defined]
        slots = add_uav_bodies(world, airframe, grid(n), np.zeros(n))
        self.ids = [world.body_of(int(s)) for s in slots]  # type: ignore[attr-defined]
        self.force = [(0.0, 0.0, airframe.mass_kg * self.sim.world.gravity)] * n
        self.torque = [(0.0, 0.0, 0.0)] * n
        rng = np.random.default_rng(seed)
        heading = rng.uniform(0.0, 2 * np.pi)
        if speed > 0:
            spread = rng.uniform(-0.5, 0.5, (n, 2))
            vx = speed * np.cos(heading) + spread[:, 0]
            vy = speed * np.sin(heading) + spread[:, 1]
            for body, a, b in zip(self.ids, vx.tolist(), vy.tolist()):
                pb.resetBaseVelocity(body, (a, b, 0.0), (0.0, 0.0, yaw_rate), self.client)
        self.spent: dict[str, float] = defaultdict(float)
        self.contact_points = 0

    def run(self, ticks: int) -> None:
        c, ids, zero, spent = self.client, self.ids, (0.0, 0.0, 0.0), self.spent
        clock = time.perf_counter
        for _ in range(ticks):
            t0 = clock()
            list(map(pb.applyExternalForce, ids, repeat(-1), self.force, repeat(zero),
                     repeat(pb.LINK_FRAME), repeat(c)))  # fmt: skip
            list(map(pb.applyExternalTorque, ids, repeat(-1), self.torque,
                     repeat(pb.WORLD_FRAME), repeat(c)))  # fmt: skip
            t1 = clock()
            pb.stepSimulation(physicsClientId=c)
            t2 = clock()
            list(map(pb.getBasePositionAndOrientation, ids, repeat(c)))
            t3 = clock()
            list(map(pb.getBaseVelocity, ids, repeat(c)))
            t4 = clock()
            self.contact_points += len(pb.getContactPoints(physicsClientId=c))
            t5 = clock()
            for name, dt in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                spent[name] += dt

    def profile(self, ticks: int, tmp: Path) -> dict[str, float]:
        """pybullet's own timings of the sections inside the step, ms per tick."""
        path = tmp / f"profile_{id(self)}.json"
        log = pb.startStateLogging(
            pb.STATE_LOGGING_PROFILE_TIMINGS, str(path), physicsClientId=self.client
        )
        self.run(ticks)
        pb.stopStateLogging(log, physicsClientId=self.client)
        files = sorted(tmp.glob(f"{path.name}*"))  # one file per thread: name_0.json
        total: dict[str, float] = defaultdict(float)
        for f in files:
            open_at: dict[str, list[float]] = defaultdict(list)
            for ev in json.loads(f.read_text())["traceEvents"]:
                name = re.sub(r"\d+$", "", ev["name"])  # pybullet numbers each event
                if name not in SECTIONS:
                    continue
                if ev["ph"] == "B":
                    open_at[name].append(ev["ts"])
                elif ev["ph"] == "E" and open_at[name]:
                    total[name] += (ev["ts"] - open_at[name].pop()) / 1e3  # us -> ms
            f.unlink()
        return {s: total.get(s, 0.0) / ticks for s in SECTIONS}

    def close(self) -> None:
        self.sim.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="bodies")
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds")
    ap.add_argument("--ticks", type=int, default=40, help="ticks per round")
    args = ap.parse_args()
    load0 = os.getloadavg()
    loops = {name: MotionLoop(args.n, *v) for name, v in VARIANTS.items()}
    for loop in loops.values():
        loop.run(10)  # warm-up: the first steps build the pair cache and its algorithms
        loop.spent.clear()
    per_round: dict[str, dict[str, list[float]]] = {k: defaultdict(list) for k in loops}
    for _ in range(args.rounds):
        for name, loop in loops.items():
            before = dict(loop.spent)
            loop.run(args.ticks)
            for phase in PHASES:
                spent = loop.spent[phase] - before.get(phase, 0.0)
                per_round[name][phase].append(spent / args.ticks)
    timed = {
        name: {p: float(np.median(v)) * 1e3 for p, v in rounds.items()}
        for name, rounds in per_round.items()
    }
    profiles: dict[str, list[dict[str, float]]] = {k: [] for k in loops}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(3):  # interleaved too; the logging is heavy, so few short windows
            for name, loop in loops.items():
                profiles[name].append(loop.profile(10, Path(d)))
    inside = {
        name: {s: float(np.median([r[s] for r in rs])) for s in SECTIONS}
        for name, rs in profiles.items()
    }
    contacts = {name: loop.contact_points for name, loop in loops.items()}
    for loop in loops.values():
        loop.close()

    print(f"bare pybullet, N = {args.n:,} bodies: ms per tick (median of {args.rounds} rounds)")
    print(f"{'variant':<15}" + "".join(f"{p:>11}" for p in PHASES) + f"{'total':>9}{'extra':>8}")
    base = sum(timed["hover"].values())
    for name, t in timed.items():
        tot = sum(t.values())
        cells = "".join(f"{t[p]:>11.3f}" for p in PHASES)
        print(f"{name:<15}{cells}{tot:>9.3f}{tot - base:>+8.3f}")
    print("\ninside stepSimulation (pybullet's profile timings, ms per tick; logging overhead)")
    short = {"btMultiBody stepVelocities": "stepVel", "btMultiBody stepPositions": "stepPos",
             "calculateSimulationIslands": "islands", "internalSingleStepSimulation": "step",
             "calculateOverlappingPairs": "pairs", "dispatchAllCollisionPairs": "narrow",
             "solveConstraints": "solve"}  # fmt: skip
    print(f"{'variant':<15}" + "".join(f"{short.get(s, s):>12}" for s in SECTIONS))
    for name, t in inside.items():
        print(f"{name:<15}" + "".join(f"{t[s]:>12.3f}" for s in SECTIONS))
    print(f"\ncontact points seen: {contacts}")
    load1 = os.getloadavg()
    print(f"load average: start {load0[0]:.2f}, end {load1[0]:.2f}")
    out = {
        "meta": {
            "python": platform.python_version(),
            "pybullet_api": pb.getAPIVersion(),
            "cpus": os.cpu_count(),
            "load_average_start": load0,
            "load_average_end": load1,
        },
        "n": args.n,
        "rounds": args.rounds,
        "ticks_per_round": args.ticks,
        "ms_per_tick": timed,
        "inside_step_ms_per_tick": inside,
        "contact_points": contacts,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
