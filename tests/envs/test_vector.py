"""The native vector environment (envs/vector.py): Gymnasium's vector semantics (SAME_STEP
autoreset, final obs and info), its registration as the vector entry point, determinism, and
agreement with the single-agent env and across the two physics backends."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import skyswarm.envs  # noqa: F401  (registers the ids)
from skyswarm.envs import ActionError, EpisodeEndedError, FlightEnv, FlightVectorEnv

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
    space = r"Box\(-1.0, 1.0, \(3, 4\), float32\) for agents 'env 0'..'env 2'"
    with pytest.raises(ActionError, match=r"shape \(4,\); expected " + space):
        envs.step(np.zeros(4))
    a[2, 0], a[1, 3] = 0.0, np.inf
    with pytest.raises(ActionError, match=r"agent 'env 1' has thrust = inf .*\(4,\), float32\) w"):
        envs.step(a)
    envs.step(np.ones((3, 4), np.float32))  # the bounds are in the space


def test_stepping_before_the_first_reset_is_an_error() -> None:
    envs = FlightVectorEnv(2)
    with pytest.raises(EpisodeEndedError, match=r"hover vector env: step\(\) before reset"):
        envs.step(np.zeros((2, 4), np.float32))


def test_the_same_autoreset_semantics_as_gymnasiums_sync_vector_env() -> None:
    # Gymnasium's own SyncVectorEnv of single envs in SAME_STEP mode is the reference: the same
    # step of termination and truncation, the same info keys, masks and dtypes, final_obs set
    # exactly where an episode ended (sub-env 0 cuts its thrust, the others are truncated)
    def make() -> FlightEnv:
        return FlightEnv("hover", task_overrides=STILL, max_episode_steps=60)

    ours = FlightVectorEnv(3, task_overrides=STILL, max_episode_steps=60)
    ref = gym.vector.SyncVectorEnv([make] * 3, autoreset_mode=AutoresetMode.SAME_STEP)
    ours.reset(seed=0)
    ref.reset(seed=0)
    action = np.zeros((3, 4), np.float32)
    action[0, 3] = -1.0
    ended = 0
    for _ in range(70):
        o1, r1, t1, u1, i1 = ours.step(action)
        o2, r2, t2, u2, i2 = ref.step(action)
        assert o1.shape == o2.shape and o1.dtype == o2.dtype
        assert (t1.tolist(), u1.tolist()) == (t2.tolist(), u2.tolist())
        np.testing.assert_allclose(r1, r2, atol=1e-9)  # yaw differs; the physics does not
        assert set(i1) == set(i2)
        if "_final_obs" in i2:
            ended += 1
            assert i1["_final_obs"].tolist() == i2["_final_obs"].tolist()
            assert [x is None for x in i1["final_obs"]] == [x is None for x in i2["final_obs"]]
            f1, f2 = i1["final_info"], i2["final_info"]
            assert set(f1) == set(f2)
            for key in ("crashed", "reached", "_crashed", "_reached", "_position_error_m"):
                assert f1[key].dtype == f2[key].dtype and f1[key].tolist() == f2[key].tolist()
            np.testing.assert_allclose(f1["position_error_m"], f2["position_error_m"], atol=1e-9)
            np.testing.assert_array_equal(i1["_final_info"], i2["_final_info"])
        for key in ("crashed", "reached", "_crashed", "position_error_m"):
            assert i1[key].dtype == i2[key].dtype, key
    assert ended == 2  # env 0's crash, then the truncation of envs 1 and 2 at step 60


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


def test_large_vector_envs_take_every_core_by_default_with_the_same_numbers() -> None:
    """From VECTOR_THREADS_FROM slots the default is every core (threads=0); an explicit setting is
    kept, smaller envs stay on one; the threaded passes give one thread's numbers bit for bit
    (autoresets included: random actions crash slots within the 40 steps)."""
    import numba

    from skyswarm.envs.vector import VECTOR_THREADS_FROM

    assert FlightVectorEnv(8).settings.threads == 1
    assert FlightVectorEnv(VECTOR_THREADS_FROM - 1).settings.threads == 1
    n = VECTOR_THREADS_FROM
    rng = np.random.default_rng(4)
    actions = rng.uniform(-0.5, 0.5, (40, n, 4)).astype(np.float32)
    runs = []
    for kwargs in ({}, {"threads": 1}):
        envs = FlightVectorEnv(n, **kwargs)
        assert envs.settings.threads == kwargs.get("threads", 0)
        obs, _ = envs.reset(seed=2)
        threads = numba.get_num_threads()
        rows = [obs]
        for a in actions:
            obs, reward, terminated, truncated, _ = envs.step(a)
            rows += [obs, reward, terminated]
        runs.append((threads, b"".join(np.ascontiguousarray(r).tobytes() for r in rows)))
        envs.close()
    (top, threaded), (one, serial) = runs
    assert top == numba.config.NUMBA_NUM_THREADS and one == 1
    assert threaded == serial


def test_a_reset_mask_restarts_only_the_sub_environments_it_selects() -> None:
    # Gymnasium's partial reset (options={"reset_mask": ...}), before ignored: every
    # sub-environment restarted. Envs 0 and 2 restart after 6 steps; 1 and 3 keep their
    # episodes (their observation is the one the step returned, bit for bit) and are
    # truncated at step 10, envs 0 and 2 six steps later.
    envs = FlightVectorEnv(4, task_overrides=STILL, max_episode_steps=10)
    envs.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(6):
        last, *_ = envs.step(rng.uniform(-0.1, 0.1, (4, 4)).astype(np.float32))
    assert np.abs(last[:, :6]).min(axis=1).max() > 0.0  # every env has moved off its start
    mask = np.array([True, False, True, False])
    obs, infos = envs.reset(options={"reset_mask": mask})
    assert obs.shape == (4, 19) and obs.dtype == np.float32 and infos == {}
    np.testing.assert_array_equal(obs[[1, 3]], last[[1, 3]])
    assert not obs[[0, 2], :6].any()  # a STILL start: on target, at rest
    zero = np.zeros((4, 4), np.float32)
    for _ in range(4):
        _, _, term, trunc, _ = envs.step(zero)
    assert trunc.tolist() == [False, True, False, True] and not term.any()
    for _ in range(6):
        _, _, term, trunc, _ = envs.step(zero)
    assert trunc.tolist() == [True, False, True, False] and not term.any()


def test_an_all_true_mask_is_a_full_reset_and_options_none_or_empty_are_none() -> None:
    a, b = FlightVectorEnv(3), FlightVectorEnv(3)
    full, _ = a.reset(seed=7)
    masked, _ = b.reset(seed=7, options={"reset_mask": np.ones(3, bool)})
    np.testing.assert_array_equal(full, masked)
    np.testing.assert_array_equal(a.reset(seed=8, options=None)[0], b.reset(seed=8, options={})[0])


@pytest.mark.parametrize(
    ("seed", "options", "needle"),
    [
        (None, {"reset_msk": np.ones(3, bool)}, "reset option 'reset_msk' is not one this env "
         "takes (did you mean 'reset_mask'?); it takes 'reset_mask'"),
        (None, {"seed": 1}, "reset option 'seed' is not one this env takes"),
        (None, {"reset_mask": np.ones(2, bool)}, "reset_mask array([ True,  True]): expected a "
         "bool array of shape (3,)"),
        (None, {"reset_mask": [1, 0, 1]}, "reset_mask [1, 0, 1]: expected a bool array"),
        (None, {"reset_mask": np.zeros(3, bool)}, "reset_mask selects no sub-environment"),
        (5, {"reset_mask": np.array([True, False, False])}, "a seed rebuilds the one simulator"),
        (None, ["reset_mask"], "reset options ['reset_mask']: expected a dict or None"),
    ],
)  # fmt: skip
def test_bad_reset_options_are_refused_naming_the_key(seed, options, needle) -> None:
    envs = FlightVectorEnv(3)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match=re.escape(needle)):
        envs.reset(seed=seed, options=options)


def test_a_partial_reset_before_the_first_full_one_is_refused() -> None:
    envs = FlightVectorEnv(2)
    with pytest.raises(ValueError, match=r"partial reset_mask before the first full reset\(\)"):
        envs.reset(options={"reset_mask": np.array([True, False])})
