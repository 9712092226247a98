"""Benchmark: the compiled flight kernel alone (uav/kernel.py `fly`, one thread), ns per
agent-tick, this tree's against an older tree's uav/kernel.py, on the same state.

A fast-engine hover swarm of N UAVs (configs/hover.toml, 5 m grid, the bench/swarm_scale.py
scenario) flies 0.3 s; then the kernel's arguments as the swarm passes them (the avoidance
layer's lent setpoints included) are handed to each variant in turn: rounds of 50 calls from
the same controller memory and motor thrusts, the rounds of the variants alternated. Prints
the median and the fastest round per variant and N, the ratio to the first variant, and
whether every variant wrote the same bits (force, torque, thrusts, controller memory) as
the first; writes bench/results/flight_kernel.json.

    python bench/flight_kernel.py [--sizes 1000 10000] [--rounds 7] [--before-tree DIR]

`--kernel step` measures the fast engine's integration instead (core/backends/fast_kernel.py
`step_bodies`, one thread, ns per body-tick) on the same swarm's bodies, their wrench the flight
kernel's: each round's 50 calls integrate 50 ticks from the same state (the wrench is cleared
after the first, as every tick clears it; the bodies stay clear of the ground). `--before-tree`
then loads DIR/skyswarm/core/backends/fast_kernel.py.

`--before-tree DIR`: DIR/skyswarm/uav/kernel.py is loaded as a module of its own (compiled
against this tree's other modules: core/frames.py, the fast engine's step) and measured
beside this tree's, e.g. DIR made by
`mkdir -p DIR/skyswarm && git archive REV | tar -x -C DIR/skyswarm`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from swarm_scale import build  # the scenario as bench/swarm_scale.py builds it (bench/: path)

import skyswarm.core.backends.fast_kernel as this_step
import skyswarm.uav.kernel as this_kernel

OUT = Path(__file__).resolve().parent / "results" / "flight_kernel.json"  # step: ..._step.json
CALLS = 50  # per round
OUTS = (7, 8, 13, 14)  # `fly`'s arguments it writes: memory, thrust, force, torque
STEP_OUTS = (1, 2, 3, 4, 10, 11, 12)  # `step_bodies`': the state rows and the three wrenches


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arguments(n: int, tmp: Path) -> list:
    """`fly`'s arguments as the swarm of n hovering UAVs passes them after 0.3 s, with the
    outputs (memory, thrust, force, torque) copied so that the swarm's own stay as they are."""
    sim = build("hover", n, "fast", tmp, extra=("simulation.threads=1",))
    sim.run(until_s=sim.time_s + 0.3)
    swarm = sim.mission.swarm
    state, kernel = sim.world.state, swarm.kernel
    setpoints = swarm.avoidance.lend() if swarm.avoidance is not None else swarm.setpoints
    args = [
        kernel.slots, state.position, state.orientation, state.linear_velocity,
        state.angular_velocity, kernel.constants, setpoints.records.copy(),
        swarm.cascade.memory.copy(), swarm.motors.thrust.copy(), swarm.alive.copy(),
        swarm.motor_ok.copy(), swarm.motors.params.copy(), swarm.wind.copy(),
        swarm.force.copy(), swarm.torque.copy(),
    ]  # fmt: skip
    args[1:5] = [a.copy() for a in args[1:5]]
    if swarm.avoidance is not None:
        swarm.avoidance.give_back()
    sim.close()
    return args


def step_arguments(n: int, tmp: Path) -> list:
    """`step_bodies`' arguments for the hovering swarm's bodies after 0.3 s, the wrench of the
    flight kernel's last tick on them, no held wrench, no Verlet check."""
    sim = build("hover", n, "fast", tmp, extra=("simulation.threads=1",))
    sim.run(until_s=sim.time_s + 0.3)
    w, st, swarm = sim.world, sim.world.state, sim.mission.swarm
    fb, tw, fw = w._fb.copy(), w._tw.copy(), w._fw.copy()
    fb[swarm.kernel.slots], tw[swarm.kernel.slots] = swarm.force, swarm.torque
    per_body = fk_rows(w)
    none = np.zeros((0, 3))
    args = [
        w._live, st.position.copy(), st.orientation.copy(), st.linear_velocity.copy(),
        st.angular_velocity.copy(), w._inv_m, w._inertia, w._half, w._offset, w._radius, fb,
        tw, fw, w._constants(), *w._boxes, w._hf,
        *(b.copy() for b in w._contact_buffers(len(w._live), per_body)), none, 0.0, none, none, 0,
    ]  # fmt: skip
    sim.close()
    return args


def fk_rows(world) -> int:
    return this_step.BOX_ROW + len(world._boxes[0])


def fresh(base: list, outs: tuple[int, ...]) -> list:
    """`base` with its outputs (`outs`) copied: every call starts from the same state and
    writes its own arrays."""
    args = list(base)
    for k in outs:
        args[k] = base[k].copy()
    return args


def measure(variants: dict, n: int, rounds: int, tmp: Path, kernel: str) -> dict:
    base = (arguments if kernel == "fly" else step_arguments)(n, tmp)
    outs = OUTS if kernel == "fly" else STEP_OUTS
    call = {k: getattr(m, "fly" if kernel == "fly" else "step_bodies") for k, m in variants.items()}
    times: dict[str, list[float]] = {k: [] for k in variants}
    written: dict[str, list[np.ndarray]] = {}
    for name in variants:  # compile (or load) and the written bits
        args = fresh(base, outs)
        call[name](*args)
        written[name] = [args[k] for k in outs]
    for _ in range(rounds):
        for name in variants:
            args = fresh(base, outs)
            t0 = time.perf_counter()
            for _ in range(CALLS):
                call[name](*args)
            times[name].append((time.perf_counter() - t0) / CALLS / n * 1e9)
    first = next(iter(variants))
    row = {"n": n, "variants": {}}
    for name in variants:
        same = all(
            np.array_equal(a.view(np.uint8), b.view(np.uint8))
            for a, b in zip(written[name], written[first], strict=True)
        )
        med = float(np.median(times[name]))
        row["variants"][name] = {
            "ns_per_agent": med,
            "fastest": min(times[name]),
            "rounds": times[name],
            "ratio_to_first": med / float(np.median(times[first])),
            "same_bits_as_first": same,
        }
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--before-tree", type=Path, default=None)
    ap.add_argument("--kernel", choices=["fly", "step"], default="fly")
    args = ap.parse_args()
    variants = {"this tree": this_kernel if args.kernel == "fly" else this_step}
    if args.before_tree is not None:
        rel = (
            ("uav", "kernel.py") if args.kernel == "fly" else ("core", "backends", "fast_kernel.py")
        )
        path = args.before_tree.joinpath("skyswarm", *rel)
        if not path.is_file():
            raise SystemExit(f"--before-tree: {path} is not a file (expected DIR/skyswarm/...)")
        variants = {"before": load(path, "before_kernel"), **variants}
    load0 = os.getloadavg()
    rows = []
    print(f"{'N':>6} {'variant':>10} {'ns/agent':>9} {'fastest':>8} {'x first':>8}  same bits")
    print(f"({'the flight kernel' if args.kernel == 'fly' else 'the integration'}, one thread)")
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            row = measure(variants, n, args.rounds, Path(d) / str(n), args.kernel)
            rows.append(row)
            for name, v in row["variants"].items():
                print(
                    f"{n:>6} {name:>10} {v['ns_per_agent']:>9.1f} {v['fastest']:>8.1f} "
                    f"{v['ratio_to_first']:>8.3f}  {v['same_bits_as_first']}"
                )
    load1 = os.getloadavg()
    print(f"load average: start {load0[0]:.2f}, end {load1[0]:.2f}")
    out_path = OUT if args.kernel == "fly" else OUT.with_name("flight_kernel_step.json")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out = {"load": [load0, load1], "rows": rows, "sizes": args.sizes, "rounds": args.rounds}
    out["kernel"] = args.kernel
    out["before_tree"] = str(args.before_tree) if args.before_tree else None
    out_path.write_text(json.dumps(out, indent=2))
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
