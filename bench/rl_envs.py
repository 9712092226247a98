"""Benchmark: RL environment throughput, agent-env-steps/s (one policy step of one agent).

Rows: the native vector env (envs/vector.py) on the fast engine at 1, 64, 1,024 and 4,096
agents (50 Hz control, 400 Hz physics: 8 physics ticks per env step, flown in one compiled
call: envs/batch.py `_fly_ticks`), the single-agent env on Bullet, the cost of a reset (a
seeded one rebuilds the simulator; an autoreset of k slots only teleports them), and, when
PyFlyt is installed, PyFlyt's QuadX-Hover-v4 stepped the same way in the same run (its
defaults: 40 Hz agent, 240 Hz physics) with the ratio: in a child process (`--pyflyt-only`),
so that importing PyFlyt and pybullet's aviary cannot touch this process. Actions are random
in [-0.2, 0.2] (sub-environments crash and autoreset now and then, as in training). Not a
test: numbers depend on the host and its load. `--per-tick` adds, in the same rounds, the
vector env ticking one by one (`FlightBatch.multi_tick` False: the same numbers, bit for bit).

Each vector size is measured `--rounds` times (the rounds of all sizes interleaved); the table
gives the median wall-clock rate with the range over rounds, and the CPU rate: agent-env-steps
per second of this process's CPU time (all its threads), which a shared machine disturbs far
less than the wall clock. The idle-machine estimate (largest size) times, on one thread and in
thread CPU time (which other jobs barely disturb), the env's steps, the 8 simulator ticks
inside each and the two compiled kernels inside those: n / (step - kernels + kernels / cores),
the kernels (threaded) split over the cores and the rest (the env's step, the ticks' own
Python and numpy) serial.

    python bench/rl_envs.py [--sizes 1 64 1024 4096] [--seconds 3] [--rounds 3] [--out FILE]
                            [--threads 1 2] [--per-tick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

from skyswarm.core.backends import PARALLEL_MIN, fast
from skyswarm.envs import FlightEnv, FlightVectorEnv
from skyswarm.uav import flight_kernel


def vector_rate(
    n: int, seconds: float, physics: str = "fast", threads: int = 1, multi_tick: bool = True
) -> dict[str, float]:
    """One round at n agents on `threads` numba threads: wall and CPU rates, the cost of a
    seeded reset and an autoreset. `multi_tick` False: the ticks one by one."""
    envs = FlightVectorEnv(n, physics=physics, threads=threads)
    envs.reset(seed=0)
    envs.batch.multi_tick = multi_tick
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-0.2, 0.2, (n, 4)).astype(np.float32) for _ in range(16)]
    for k in range(5):  # compile and warm the caches
        envs.step(actions[k])
    steps, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        envs.step(actions[steps % 16])
        steps += 1
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    t0 = time.perf_counter()
    envs.reset(seed=1)
    seeded = time.perf_counter() - t0
    k = max(1, n // 100)  # a typical autoreset: 1 % of the slots
    t0 = time.perf_counter()
    for _ in range(20):
        envs.batch.restart(np.arange(k), envs._rng)
    teleport = (time.perf_counter() - t0) / 20
    envs.close()
    return {
        "agents": n,
        "threads": threads,
        "multi_tick": multi_tick,
        "agent_env_steps_per_s": n * steps / wall,
        "agent_env_steps_per_cpu_s": n * steps / cpu,
        "seeded_reset_s": seeded,
        "autoreset_s": teleport,
        "autoreset_slots": k,
    }


def idle_estimate(n: int, steps: int = 60, cores: int = 2) -> dict[str, float]:
    """Thread-CPU ms per step on one thread: the whole env step, the simulator ticks in it and
    the compiled kernels in those (the flight controller and the fast backend's integration
    in one call per step, `fly_ticks`; or, in a step ticked one by one, `fly` and
    `step_bodies` per tick), and the resulting estimate of an idle machine's rate on `cores`
    cores: the kernels split over the cores, everything else (the env's step, the ticks' own
    Python) serial."""
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # serial kernels, all in this thread's CPU time
    kernels = {
        (flight_kernel, "fly"): flight_kernel.fly,
        (flight_kernel, "fly_ticks"): flight_kernel.fly_ticks,
        (fast.fk, "step_bodies"): fast.fk.step_bodies,
    }
    try:
        envs = FlightVectorEnv(n, threads=1)  # (its default from 2,048 slots is every core)
        envs.reset(seed=0)
        actions = np.random.default_rng(0).uniform(-0.2, 0.2, (16, n, 4)).astype(np.float32)
        for k in range(5):
            envs.step(actions[k])
        batch = envs.batch
        sim = batch.sim
        tick, window, in_ticks, in_kernels = sim.step, batch._fly_ticks, [0.0], [0.0]

        def timed_tick() -> None:  # the ticks inside the env's steps, in place for this loop
            t = time.thread_time()
            tick()
            in_ticks[0] += time.thread_time() - t

        def timed_window() -> bool:  # a step's ticks in one call
            t = time.thread_time()
            done = window()
            in_ticks[0] += time.thread_time() - t
            return done

        def timed(kernel):
            def call(*args):
                t = time.thread_time()
                out = kernel(*args)  # step_bodies' counts, which the world reads
                in_kernels[0] += time.thread_time() - t
                return out

            return call

        sim.step, batch._fly_ticks = timed_tick, timed_window
        for (module, name), kernel in kernels.items():  # looked up at each call
            setattr(module, name, timed(kernel))
        t0 = time.thread_time()
        for k in range(steps):
            envs.step(actions[k % 16])
        step = (time.thread_time() - t0) / steps
        physics, compiled = in_ticks[0] / steps, in_kernels[0] / steps
        del sim.step, batch._fly_ticks
        envs.close()
    finally:
        for (module, name), kernel in kernels.items():
            setattr(module, name, kernel)
        numba.set_num_threads(threads)
    rest = step - physics
    cores = cores if n >= PARALLEL_MIN else 1  # smaller swarms' kernels run on one thread
    return {
        "agents": n,
        "step_cpu_ms": 1e3 * step,
        "ticks_cpu_ms": 1e3 * physics,
        "kernels_cpu_ms": 1e3 * compiled,
        "tick_glue_cpu_ms": 1e3 * (physics - compiled),
        "env_only_cpu_ms": 1e3 * rest,
        "one_core_rate": n / step,
        "idle_estimate_rate": n / (step - compiled + compiled / cores),
        "cores": cores,
    }


def summarise(rounds: list[dict[str, float]]) -> dict[str, float]:
    """The medians of one size's rounds, with the range of the wall rate."""
    rates = [r["agent_env_steps_per_s"] for r in rounds]
    out = {key: float(np.median([r[key] for r in rounds])) for key in rounds[0]}
    out.update(agents=rounds[0]["agents"], threads=rounds[0]["threads"])
    out["multi_tick"] = rounds[0]["multi_tick"]
    out.update(wall_min=min(rates), wall_max=max(rates))
    out["rounds"] = len(rounds)
    return out


def single_rate(env, seconds: float) -> float:
    """Steps per second of one Gymnasium env on random actions in [-0.2, 0.2], resetting at
    each end (resets count in the time), after a warm-up: the first seeded reset and a few
    steps (PyFlyt's first reset builds its aviary, tens of seconds on a loaded machine)."""
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    shape = env.action_space.shape

    def step() -> None:
        _, _, terminated, truncated, _ = env.step(rng.uniform(-0.2, 0.2, shape).astype(np.float32))
        if terminated or truncated:
            env.reset()

    for _ in range(5):
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    return steps / (time.perf_counter() - start)


def pyflyt_rate(seconds: float) -> float | None:
    """PyFlyt's QuadX-Hover-v4 steps/s, in this process (None: PyFlyt not installed)."""
    try:
        import gymnasium as gym
        import PyFlyt.gym_envs  # noqa: F401  (registers PyFlyt's envs)
    except ImportError:
        return None
    env = gym.make("PyFlyt/QuadX-Hover-v4")
    try:
        return single_rate(env.unwrapped, seconds)
    finally:
        env.close()


def pyflyt_rate_apart(seconds: float) -> float | None:
    """`pyflyt_rate` in a child process (this script with --pyflyt-only), after the vector
    rounds: what PyFlyt and pybullet load stays out of the process that measured ours."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--pyflyt-only", "--seconds"]
    done = subprocess.run(
        [*cmd, str(seconds)], capture_output=True, text=True, timeout=600 + 10 * seconds
    )
    if done.returncode:
        raise RuntimeError(f"PyFlyt's side failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])["pyflyt_hover"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 4096])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        default=[1, 2],
        help="numba threads of the vector env (FlightSettings.threads) at sizes >= 2,048",
    )
    parser.add_argument(
        "--per-tick",
        action="store_true",
        help="also the vector env ticking one by one (no multi-tick call), in the same rounds",
    )
    parser.add_argument("--pyflyt-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pyflyt_only:  # the child process of pyflyt_rate_apart
        print(json.dumps({"pyflyt_hover": pyflyt_rate(args.seconds)}))
        return
    modes = [True, False] if args.per_tick else [True]
    cases = [(n, 1, m) for n in args.sizes if n < PARALLEL_MIN for m in modes]
    cases += [
        (n, t, m) for n in args.sizes if n >= PARALLEL_MIN for t in args.threads for m in modes
    ]
    measured: dict[tuple[int, int, bool], list[dict[str, float]]] = {c: [] for c in cases}
    for _ in range(args.rounds):
        for n, t, m in cases:
            measured[(n, t, m)].append(vector_rate(n, args.seconds, threads=t, multi_tick=m))
    rows = [summarise(measured[c]) for c in cases]
    idle = idle_estimate(max(args.sizes))
    bullet = single_rate(FlightEnv("hover", physics="bullet"), args.seconds)
    fast_single = single_rate(FlightEnv("hover"), args.seconds)
    pyflyt = pyflyt_rate_apart(args.seconds)
    print(
        f"{'env':<38}{'agents':>7}{'agent-env-steps/s':>19}{'range over rounds':>22}"
        f"{'per CPU-s':>11}{'reset s':>9}{'autoreset s':>12}"
    )
    for r in rows:
        spread = f"{r['wall_min']:,.0f}-{r['wall_max']:,.0f}"
        name = f"skyswarm vector, fast, {r['threads']} thr" + ("" if r["multi_tick"] else ", ticks")
        print(
            f"{name:<38}{r['agents']:>7}"
            f"{r['agent_env_steps_per_s']:>19,.0f}"
            f"{spread:>22}{r['agent_env_steps_per_cpu_s']:>11,.0f}"
            f"{r['seeded_reset_s']:>9.4f}{r['autoreset_s']:>12.5f}"
        )
    print(
        f"idle-machine estimate at {idle['agents']} agents: one thread {idle['step_cpu_ms']:.2f} "
        f"ms CPU per step = kernels {idle['kernels_cpu_ms']:.2f} + ticks' glue "
        f"{idle['tick_glue_cpu_ms']:.2f} + env {idle['env_only_cpu_ms']:.2f}; one core "
        f"{idle['one_core_rate']:,.0f}/s, {idle['cores']} cores (kernels split) "
        f"{idle['idle_estimate_rate']:,.0f}/s"
    )
    print(f"{'skyswarm single env, fast':<38}{1:>7}{fast_single:>19,.0f}")
    print(f"{'skyswarm single env, Bullet':<38}{1:>7}{bullet:>19,.0f}")
    if pyflyt is not None:
        print(f"{'PyFlyt QuadX-Hover-v4 (40/240 Hz)':<38}{1:>7}{pyflyt:>19,.0f}")
        best = max(r["agent_env_steps_per_s"] for r in rows if r["multi_tick"])
        print(
            f"ratios to PyFlyt: single env fast x{fast_single / pyflyt:.1f}, "
            f"best vector x{best / pyflyt:.0f}"
        )
    else:
        print("PyFlyt not installed (pip install PyFlyt): no side-by-side row")
    out = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "vector": rows,
        "vector_rounds": {
            f"{n} agents, {t} threads" + ("" if m else ", per tick"): r
            for (n, t, m), r in measured.items()
        },
        "idle_estimate": idle,
        "single_fast": fast_single,
        "single_bullet": bullet,
        "pyflyt_hover": pyflyt,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))


RESULTS = Path(__file__).resolve().parent / "results" / "rl_envs.json"

if __name__ == "__main__":
    main()
