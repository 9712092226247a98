"""Benchmark: RL environment throughput, agent-env-steps/s (one policy step of one agent).

Rows: the native vector env (envs/vector.py) on the fast engine at 1, 64, 1,024 and 4,096
agents (50 Hz control, 400 Hz physics: 8 physics ticks per env step), the single-agent env on
Bullet, the cost of a reset (a seeded one rebuilds the simulator; an autoreset of k slots only
teleports them), and, when PyFlyt is installed, PyFlyt's QuadX-Hover-v4 stepped the same way in
the same run (its defaults: 40 Hz agent, 240 Hz physics) with the ratio. Actions are random in
[-0.2, 0.2] (sub-environments crash and autoreset now and then, as in training). Not a test:
numbers depend on the host and its load.

    python bench/rl_envs.py [--sizes 1 64 1024 4096] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from skyswarm.envs import FlightEnv, FlightVectorEnv


def vector_rate(n: int, seconds: float, physics: str = "fast") -> dict[str, float]:
    envs = FlightVectorEnv(n, physics=physics)
    envs.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-0.2, 0.2, (n, 4)).astype(np.float32) for _ in range(16)]
    for k in range(5):  # compile and warm the caches
        envs.step(actions[k])
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        envs.step(actions[steps % 16])
        steps += 1
    wall = time.perf_counter() - start
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
        "agent_env_steps_per_s": n * steps / wall,
        "seeded_reset_s": seeded,
        "autoreset_s": teleport,
        "autoreset_slots": k,
    }


def single_rate(env, seconds: float) -> float:
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    shape = env.action_space.shape
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a = rng.uniform(-0.2, 0.2, shape).astype(np.float32)
        _, _, terminated, truncated, _ = env.step(a)
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def pyflyt_rate(seconds: float) -> float | None:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024, 4096])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rows = [vector_rate(n, args.seconds) for n in args.sizes]
    bullet = single_rate(FlightEnv("hover", physics="bullet"), args.seconds)
    fast_single = single_rate(FlightEnv("hover"), args.seconds)
    pyflyt = pyflyt_rate(args.seconds)
    print(f"{'env':<34}{'agents':>7}{'agent-env-steps/s':>20}{'reset s':>12}{'autoreset s':>13}")
    for r in rows:
        label = "skyswarm vector, fast"
        print(
            f"{label:<34}{r['agents']:>7}{r['agent_env_steps_per_s']:>20,.0f}"
            f"{r['seeded_reset_s']:>12.4f}{r['autoreset_s']:>13.5f}"
        )
    print(f"{'skyswarm single env, fast':<34}{1:>7}{fast_single:>20,.0f}")
    print(f"{'skyswarm single env, Bullet':<34}{1:>7}{bullet:>20,.0f}")
    if pyflyt is not None:
        print(f"{'PyFlyt QuadX-Hover-v4 (40/240 Hz)':<34}{1:>7}{pyflyt:>20,.0f}")
        best = max(r["agent_env_steps_per_s"] for r in rows)
        print(
            f"ratios to PyFlyt: single env fast x{fast_single / pyflyt:.1f}, "
            f"best vector x{best / pyflyt:.0f}"
        )
    else:
        print("PyFlyt not installed (pip install PyFlyt): no side-by-side row")
    out = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "vector": rows,
        "single_fast": fast_single,
        "single_bullet": bullet,
        "pyflyt_hover": pyflyt,
    }
    path = Path(__file__).resolve().parent / "results" / "rl_envs.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
