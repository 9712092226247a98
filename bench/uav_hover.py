"""Benchmark: N quadrotors hovering in GroundSpeedAltitudeAndHeading vs a bare pybullet loop.

For each N the two loops run interleaved in one process (skyswarm chunk, bare chunk, repeated),
on the same airframe bodies over a ground plane. The bare loop makes the calls skyswarm cannot
avoid, per agent and tick: one applyExternalForce, one applyExternalTorque, one pose read and
one velocity read, plus one getContactPoints and one stepSimulation per tick, with no control.
skyswarm runs twice: as built here (`Simulator(world=...)`: controllers only, no post-tick
listeners) and "+faults", with `sim.install_faults(FaultsConfig())` as every scenario run
(`Simulator.from_scenario`) does: the collision monitor (contact judgement, numerical guard)
and the fault injector run after every tick. A run with a results directory also records
(trajectory samples at `results.trajectory_hz`), which neither variant includes.
Prints a table and writes bench/results/uav_hover.json. Not a test: numbers depend on the host.

Many short interleaved rounds and the median per variant: on a shared machine the load changes
from second to second, and short rounds let every variant see the same load.

    python bench/uav_hover.py [--sizes 1 10 100 500 1000] [--seconds 0.25] [--rounds 12]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from itertools import repeat
from pathlib import Path

import numba
import numpy as np
import pybullet as pb

from skyswarm.core.config import WorldConfig
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.swarm import Swarm, add_uav_bodies

OUT = Path(__file__).resolve().parent / "results" / "uav_hover.json"


def grid(n: int, spacing: float = 3.0, z: float = 10.0) -> np.ndarray:
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    return np.column_stack([(i % side) * spacing, (i // side) * spacing, np.full(n, z)])


class SkyswarmLoop:
    def __init__(self, n: int, faults: bool = False) -> None:
        self.sim = Simulator(world=WorldConfig())
        cfg = load_uav_config()
        self.swarm = Swarm(self.sim, cfg, range(1, n + 1), grid(n), np.zeros(n), hovering=True)
        for agent in self.swarm.agents:
            agent.fly(0.0, 0.0, 10.0, 90.0)
        if faults:  # what Simulator.from_scenario installs: collision monitor, fault injector
            self.sim.install_faults(FaultsConfig())

    def run(self, ticks: int) -> None:
        step = self.sim.step
        for _ in range(ticks):
            step()

    def check(self) -> float:
        """Largest altitude error, m (the hover must really hover)."""
        z = self.sim.world.state.position[self.swarm.rows, 2]
        return float(np.abs(z - 10.0).max())


class BareLoop:
    def __init__(self, n: int) -> None:
        self.sim = Simulator(world=WorldConfig())  # same world settings and ground
        cfg = load_uav_config()
        self.client = self.sim.world.client
        slots = add_uav_bodies(self.sim.world, cfg.airframe, grid(n), np.zeros(n))
        self.ids = [self.sim.world.body_of(int(s)) for s in slots]  # raw Bullet ids: bare loop
        self.force = [[0.0, 0.0, cfg.airframe.weight_n(self.sim.settings.gravity)]] * n
        self.torque = [[0.0, 0.0, 0.0]] * n

    def run(self, ticks: int) -> None:
        c, ids, zero = self.client, self.ids, (0.0, 0.0, 0.0)
        for _ in range(ticks):
            list(
                map(
                    pb.applyExternalForce,
                    ids,
                    repeat(-1),
                    self.force,
                    repeat(zero),
                    repeat(pb.LINK_FRAME),
                    repeat(c),
                )
            )
            list(
                map(
                    pb.applyExternalTorque,
                    ids,
                    repeat(-1),
                    self.torque,
                    repeat(pb.WORLD_FRAME),
                    repeat(c),
                )
            )
            pb.stepSimulation(physicsClientId=c)
            list(map(pb.getBasePositionAndOrientation, ids, repeat(c)))
            list(map(pb.getBaseVelocity, ids, repeat(c)))
            pb.getContactPoints(physicsClientId=c)


def measure(n: int, seconds: float, rounds: int, tick_s: float = 0.0025) -> dict:
    loops = {"skyswarm": SkyswarmLoop(n), "skyswarm+faults": SkyswarmLoop(n, True)}
    loops["bare"] = BareLoop(n)
    ticks = max(20, int(seconds / tick_s))
    for loop in loops.values():
        loop.run(20)  # warm-up (and the compiled controller's first call)
    times: dict[str, list[float]] = {name: [] for name in loops}
    for _ in range(rounds):
        for name, loop in loops.items():
            t0 = time.perf_counter()
            loop.run(ticks)
            times[name].append((time.perf_counter() - t0) / ticks)
    row = {
        "n": n,
        "ticks_per_round": ticks,
        "rounds": rounds,
        "hover_error_m": max(loops["skyswarm"].check(), loops["skyswarm+faults"].check()),
        "deaths": len(loops["skyswarm+faults"].sim.deaths),
    }
    for name, ts in times.items():
        per_tick = float(np.median(ts))
        row[name] = {
            "s_per_tick": per_tick,
            "agent_steps_per_s": n / per_tick,
            "real_time_factor": tick_s / per_tick,
        }
    row["ratio"] = row["bare"]["s_per_tick"] / row["skyswarm"]["s_per_tick"]
    row["ratio_with_faults"] = row["bare"]["s_per_tick"] / row["skyswarm+faults"]["s_per_tick"]
    for loop in loops.values():
        loop.sim.close()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 100, 500, 1000])
    ap.add_argument("--seconds", type=float, default=0.25, help="simulated s per round")
    ap.add_argument("--rounds", type=int, default=12)
    args = ap.parse_args()
    rows = []
    head = (
        f"{'N':>5} {'skyswarm ag-steps/s':>20} {'RTF':>8} {'+faults ag-steps/s':>19} "
        f"{'RTF':>8} {'bare ag-steps/s':>16} {'RTF':>8} {'ratio':>6} {'+faults':>8}"
    )
    print(head)
    for n in args.sizes:
        r = measure(n, args.seconds, args.rounds)
        rows.append(r)
        s, f, b = r["skyswarm"], r["skyswarm+faults"], r["bare"]
        print(
            f"{n:>5} {s['agent_steps_per_s']:>20,.0f} {s['real_time_factor']:>8.1f} "
            f"{f['agent_steps_per_s']:>19,.0f} {f['real_time_factor']:>8.1f} "
            f"{b['agent_steps_per_s']:>16,.0f} {b['real_time_factor']:>8.1f} "
            f"{r['ratio']:>6.2f} {r['ratio_with_faults']:>8.2f}"
        )
    print(
        "ratio = bare / skyswarm time per tick. +faults: with the collision monitor and fault "
        "injector that every scenario run installs (no recorder in either)."
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "machine": platform.machine(),
        "processor": platform.processor(),
    }
    OUT.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
