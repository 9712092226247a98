"""Stable-Baselines3 on the native vector env (envs/sb3.py): the adapter's autoreset contract
and a PPO smoke run that must learn. Needs the `rl` extra (stable-baselines3 and torch, CPU
build); skipped without it."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import pytest

from skyswarm.envs import FlightVectorEnv

# Found, not imported: importing torch costs each pytest worker seconds of CPU while it collects
# the suite; the worker that runs these tests imports it.
pytestmark = pytest.mark.skipif(
    find_spec("stable_baselines3") is None or find_spec("torch") is None,
    reason="needs the rl extra (stable-baselines3, torch)",
)

STILL = {"start_radius_m": 0.0, "start_speed_m_s": 0.0, "start_tilt_deg": 0.0}


def test_the_adapter_hands_sb3_the_terminal_observation_and_the_time_limit_flag() -> None:
    from skyswarm.envs.sb3 import SB3VecEnv

    venv = SB3VecEnv(FlightVectorEnv(2, task_overrides=STILL, max_episode_steps=50))
    venv.seed(3)
    obs = venv.reset()
    assert obs.shape == (2, 19)
    action = np.zeros((2, 4), np.float32)
    action[0, 3] = -1.0  # env 0 falls out of its box (~40 steps), env 1 hovers to the limit
    for t in range(1, 51):
        obs, rewards, dones, infos = venv.step(action)
        if dones[0] and t < 50:
            assert not infos[0]["TimeLimit.truncated"]
            assert np.linalg.norm(infos[0]["terminal_observation"][:3]) > 3.0
            assert np.linalg.norm(obs[0, :3]) == 0.0  # the next episode's start
            action[0, 3] = 0.0
    assert dones[1] and infos[1]["TimeLimit.truncated"]
    assert np.abs(infos[1]["terminal_observation"][:3]).max() < 0.01
    assert rewards.dtype == np.float32 and venv.get_attr("num_envs") == [2, 2]


def evaluate(model, seed: int = 123, n: int = 64, steps: int = 100) -> float:
    """Mean return of the deterministic policy over n fixed random starts, `steps` each."""
    envs = FlightVectorEnv(n, max_episode_steps=steps)
    obs, _ = envs.reset(seed=seed)
    total, flying = np.zeros(n), np.ones(n, dtype=bool)
    for _ in range(steps):
        action, _ = model.predict(obs, deterministic=True)
        obs, rewards, terminated, truncated, _ = envs.step(action)
        total += rewards * flying
        flying &= ~(terminated | truncated)
    return float(total.mean())


def test_ppo_smoke_run_improves_the_hover_return() -> None:
    # Fixed seed, 98,304 steps (~25 s on 2 loaded cores). Measured: the untrained policy's
    # deterministic return over 100 steps is 53.6 (its mean action holds the hover thrust);
    # after training 69.5 (the full example reaches 0.2 m: examples/rl_hover_ppo.py). The test
    # asks for +8, half the measured gain.
    import stable_baselines3 as sb3
    import torch

    from skyswarm.envs.sb3 import SB3VecEnv

    torch.set_num_threads(1)
    venv = SB3VecEnv(FlightVectorEnv(64, max_episode_steps=100))
    venv.seed(0)
    model = sb3.PPO(
        "MlpPolicy",
        venv,
        n_steps=64,
        batch_size=1024,
        n_epochs=5,
        learning_rate=3e-3,
        policy_kwargs={"net_arch": [64, 64], "log_std_init": -1.0},
        seed=0,
        device="cpu",
    )
    before = evaluate(model)
    model.learn(3 * 32768)
    after = evaluate(model)
    assert before == pytest.approx(53.6, abs=0.5)
    assert after > before + 8.0, (before, after)
