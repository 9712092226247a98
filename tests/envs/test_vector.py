"""The native vector environment (envs/vector.py): Gymnasium's vector semantics (SAME_STEP
autoreset, final obs and info), its registration as the vector entry point, determinism, and
agreement with the single-agent env and across the two physics backends."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import skyswarm.envs  # noqa: F401  (registers the ids)
from skyswarm.envs import ActionError, FlightEnv, FlightVectorEnv

STILL = {"start_radius_m": 0.0, "start_speed_m_s": 0.0, "start_tilt_deg": 0.0}


def test_make_vec_returns_the_native_vector_env_with_its_autoreset_mode() -> None:
    envs = gym.make_vec("skyswarm/Hover-v0", num_envs=6, vectorization_mode="vector_entry_point")
    assert isinstance(envs, FlightVectorEnv)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert envs.observation_space.shape == (6, 19) and envs.action_space.shape == (6, 4)
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (6, 19) and obs.dtype == np.float32
    assert envs.observation_space.contains(obs)
    # one simulator, six bodies: the slots share the world
    assert len(envs.batch.sim.world.tracked_slots) == 6


def test_autoreset_same_step_returns_the_next_episode_and_the_final_obs_and_info() -> None:
    # Env 0 cuts its thrust and crashes after ~40 steps; the others hover until truncated at 60.
    envs = FlightVectorEnv(3, task_overrides=STILL, max_episode_steps=60)
    envs.reset(seed=1)
    action = np.zeros((3, 4), np.float32)
    action[0, 3] = -1.0
    crash_step = None
    for t in range(1, 61):
        obs, rewards, term, trunc, infos = envs.step(action)
        if term[0] and crash_step is None:
            crash_step = t
            assert infos["_final_obs"].tolist() == [True, False, False]
            assert infos["final_obs"][1] is None and infos["final_obs"][2] is None
            final = infos["final_obs"][0]
            assert np.linalg.norm(final[:3]) > 3.0  # the last obs: out of the 3 m box
            assert np.linalg.norm(obs[0, :3]) == 0.0  # the returned one: the new start
            assert infos["final_info"]["crashed"][0] and infos["final_info"]["_crashed"][0]
            assert rewards[0] == -10.0
            action[0, 3] = 0.0  # fly the new episode
    assert crash_step is not None and 39 <= crash_step <= 42
    # step 60: envs 1 and 2 truncated (not terminated); env 0 is only 60 - crash_step in
    assert trunc.tolist() == [False, True, True] and not term.any()
    assert infos["_final_obs"].tolist() == [False, True, True]
    assert np.abs(infos["final_obs"][1][:3]).max() < 0.01  # it hovered on target


def test_same_seed_same_observations_over_1000_steps() -> None:
    def rollout(seed: int) -> np.ndarray:
        envs = FlightVectorEnv(4)
        rng = np.random.default_rng(seed)
        obs, _ = envs.reset(seed=seed)
        rows = [obs]
        for _ in range(1000):
            obs, *_ = envs.step(rng.uniform(-0.4, 0.4, (4, 4)).astype(np.float32))
            rows.append(obs)
        return np.array(rows)

    a, b = rollout(5), rollout(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:20], rollout(6)[:20])


def test_a_vector_of_one_matches_the_single_env_step_for_step() -> None:
    # Same seed, same generator, same simulator: the same numbers, bit for bit
    single, vector = FlightEnv("hover"), FlightVectorEnv(1)
    s, _ = single.reset(seed=11)
    v, _ = vector.reset(seed=11)
    np.testing.assert_array_equal(s, v[0])
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.uniform(-0.2, 0.2, 4).astype(np.float32)
        s, rs, ts, us, _ = single.step(a)
        v, rv, tv, uv, infos = vector.step(a[None])
        assert rs == rv[0] and (ts, us) == (tv[0], uv[0])
        if ts or us:  # the vector env already began the next episode
            np.testing.assert_array_equal(s, infos["final_obs"][0])
            np.testing.assert_array_equal(single.reset()[0], v[0])
        else:
            np.testing.assert_array_equal(s, v[0])


def test_bad_actions_name_the_sub_environment() -> None:
    envs = FlightVectorEnv(3)
    envs.reset(seed=0)
    a = np.zeros((3, 4))
    a[2, 0] = -1.2
    with pytest.raises(ActionError, match=r"vector env: action of agent 'env 2' has p = -1.2"):
        envs.step(a)
    with pytest.raises(ActionError, match=r"shape \(4,\); expected Box\(-1.0, 1.0, \(3, 4\)"):
        envs.step(np.zeros(4))


def test_the_bullet_backend_gives_the_same_observation_layout_and_holds_a_hover() -> None:
    # Bullet (slower, for fidelity checks): the zero action holds a level hover within 2 cm
    # after 1 s, as on the fast engine
    for physics in ("bullet", "fast"):
        envs = FlightVectorEnv(2, physics=physics, task_overrides=STILL)
        obs, _ = envs.reset(seed=0)
        for _ in range(50):
            obs, *_ = envs.step(np.zeros((2, 4), np.float32))
        assert obs.shape == (2, 19)
        assert np.abs(obs[:, :3]).max() < 0.02, physics
        envs.close()
