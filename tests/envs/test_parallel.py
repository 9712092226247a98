"""The PettingZoo swarm envs (envs/parallel.py): PettingZoo's API and seed tests, determinism,
what the radio lets an agent hear, proximity and collisions, deaths, and bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from skyswarm.envs import ActionError, EpisodeEndedError
from skyswarm.envs.hearing import WIDTH
from skyswarm.envs.parallel import ResetOptionWarning, SwarmParallelEnv, parallel_env
from skyswarm.envs.swarm_tasks import Swap
from skyswarm.envs.tasks import Task

OWN = 19  # the flight row: body rates action, 6-D rotation, last action (envs/observations.py)


@pytest.mark.parametrize(
    ("task", "hear"), [("formation", "radio"), ("swap", "radio"), ("swap", "truth")]
)
# parallel_api_test resets with options={"options": 1}: named in a warning, not refused
@pytest.mark.filterwarnings("ignore::skyswarm.envs.parallel.ResetOptionWarning")
def test_pettingzoo_parallel_api_and_seed_tests_pass(task: str, hear: str) -> None:
    env = parallel_env(task, swarm_size=4, hear=hear, max_episode_steps=120)
    parallel_api_test(env, num_cycles=200)
    parallel_seed_test(lambda: parallel_env(task, swarm_size=4, hear=hear), num_cycles=100)


def test_same_seed_same_observations_over_1000_steps() -> None:
    def rollout(seed: int) -> np.ndarray:
        # velocity actions: small random ones never crash (body-rate noise tilts it away)
        env = parallel_env("formation", swarm_size=4, max_episode_steps=1000, action="velocity")
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        rows = [np.stack(list(obs.values()))]
        for _ in range(1000):
            acts = {a: rng.uniform(-0.2, 0.2, 4).astype(np.float32) for a in env.agents}
            obs, *_ = env.step(acts)
            rows.append(np.stack([obs[a] for a in env.possible_agents]))
        assert len(env.agents) == 0  # truncated at 1000 (nobody crashed on small actions)
        return np.array(rows)

    a, b = rollout(3), rollout(3)
    assert a.shape == (1001, 4, OWN + 3 * WIDTH)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:20], rollout(4)[:20])


def hover(env: SwarmParallelEnv, steps: int) -> tuple[dict, dict]:
    for _ in range(steps):
        obs, _, _, _, infos = env.step({a: np.zeros(4, np.float32) for a in env.agents})
    return obs, infos


def test_radio_neighbours_are_late_lossy_and_range_limited_truth_is_exact() -> None:
    # A 2 x 2 grid 2.5 m apart, still starts: uav_0's neighbours at 2.5, 2.5 and 3.54 m
    still = {"flight": Task("formation", start_radius_m=0, start_speed_m_s=0, start_tilt_deg=0)}
    truth = parallel_env("formation", swarm_size=4, hear="truth", task_overrides=still)
    obs, _ = truth.reset(seed=0)
    block = obs["uav_0"][OWN:].reshape(3, WIDTH)
    np.testing.assert_allclose(np.linalg.norm(block[:, :3], axis=1), [2.5, 2.5, 2.5 * 2**0.5])
    assert block[:, 6].tolist() == [0, 0, 0] and block[:, 7].tolist() == [1, 1, 1]

    radio = parallel_env("formation", swarm_size=4, task_overrides=still, beacon_hz=10.0)
    obs, _ = radio.reset(seed=0)
    assert not obs["uav_0"][OWN:].any()  # nothing heard before the first beacon
    obs, _ = hover(radio, 12)  # 0.24 s: beacons sent at 0, 0.1, 0.2 s, 5-7.5 ms latency
    block = obs["uav_0"][OWN:].reshape(3, WIDTH)
    assert block[:, 7].tolist() == [1, 1, 1]
    np.testing.assert_allclose(np.linalg.norm(block[:, :3], axis=1), [2.5, 2.5, 3.54], atol=0.01)
    # the latest beacon was sent at 0.2 s, read at 0.24 s (one tick's rounding either way)
    np.testing.assert_allclose(block[:, 6], 0.04, atol=0.003)

    deaf = parallel_env("formation", swarm_size=4, task_overrides=still, radio={"loss": 1.0})
    deaf.reset(seed=0)
    obs, _ = hover(deaf, 25)
    assert not any(o[OWN:].any() for o in obs.values())  # every frame lost
    short = parallel_env("formation", swarm_size=4, task_overrides=still, radio={"range_m": 3.0})
    short.reset(seed=0)
    obs, _ = hover(short, 25)
    block = obs["uav_0"][OWN:].reshape(3, WIDTH)
    assert block[:, 7].tolist() == [1, 1, 0]  # the diagonal neighbour (3.54 m) is out of range
    assert deaf.batch.sim.dispatcher.totals()["radio"]["lost_on_air"] > 0


def test_proximity_penalty_formula_and_collision_mask() -> None:
    task = Swap()  # d_safe 1.5 m, w_p 0.5, collision radius 0.4 m
    pos = np.array([[0.0, 0, 10], [0.75, 0, 10], [0.75, 0.3, 10], [9, 0, 10]])
    penalty, collided = task.proximity(pos, np.arange(4))
    # pairs 0-1 at 0.75 m: 0.5 (1 - 0.5) = 0.25; 1-2 at 0.3 m: 0.5 (1 - 0.2) = 0.4;
    # 0-2 at 0.806 m: 0.5 (1 - 0.806 / 1.5) = 0.2313
    d02 = np.hypot(0.75, 0.3)
    expect = [0.25 + 0.5 * (1 - d02 / 1.5), 0.25 + 0.4, 0.4 + 0.5 * (1 - d02 / 1.5), 0.0]
    np.testing.assert_allclose(penalty, expect)
    assert collided.tolist() == [False, True, True, False]
    # agent 2 dead: only the 0-1 pair counts
    penalty, collided = task.proximity(pos, np.array([0, 1, 3]))
    np.testing.assert_allclose(penalty, [0.25, 0.25, 0.0, 0.0])
    assert not collided.any()


def test_a_head_on_swap_collides_both_die_and_leave_the_env() -> None:
    # Two UAVs 8 m apart fly straight at each other's start at 3 m/s: they meet in the middle
    env = parallel_env("swap", swarm_size=2, action="velocity", hear="truth")
    obs, _ = env.reset(seed=0)
    ended = None
    for t in range(1, 200):
        acts = {}
        for a in env.agents:
            e = obs[a][:2]
            acts[a] = np.array([*(e / np.linalg.norm(e)), 0.0, 0.0], np.float32)
        obs, rewards, term, trunc, infos = env.step(acts)
        if any(term.values()):
            ended = t
            break
    assert ended is not None and 60 < ended < 120  # 8 m at <= 3 m/s (+ the ramp-up)
    assert term == {"uav_0": True, "uav_1": True} and not any(trunc.values())
    assert all(i["collided"] for i in infos.values())
    assert rewards == {"uav_0": -10.0, "uav_1": -10.0}
    assert env.agents == []
    assert [d.cause for d in env.batch.sim.deaths] == ["collision or crash (RL env)"] * 2
    with pytest.raises(EpisodeEndedError, match="no agent left"):
        env.step({})


def test_a_dead_agent_leaves_while_the_others_fly_on() -> None:
    env = parallel_env("formation", swarm_size=3, max_episode_steps=100)
    env.reset(seed=1)
    for _ in range(100):
        acts = {a: np.zeros(4, np.float32) for a in env.agents}
        if "uav_1" in acts:
            acts["uav_1"][3] = -1.0  # no thrust: falls out of its 3 m box
        _, rewards, term, trunc, _ = env.step(acts)
        if term.get("uav_1"):
            assert rewards["uav_1"] == -10.0
            assert env.agents == ["uav_0", "uav_2"]
    assert env.agents == [] and trunc == {"uav_0": True, "uav_2": True}
    assert not env.batch.swarm.alive[1] and env.batch.swarm.alive[[0, 2]].all()


def test_bad_actions_name_the_env_and_the_agent() -> None:
    env = parallel_env("formation", swarm_size=3)
    env.reset(seed=0)
    ok = {a: np.zeros(4, np.float32) for a in env.agents}
    with pytest.raises(ActionError, match=r"formation parallel env: action of agent 'uav_2' has"):
        env.step({**ok, "uav_2": np.array([0, 0, np.nan, 0])})
    with pytest.raises(ActionError, match=r"no action for live agents \['uav_1'\]"):
        env.step({a: v for a, v in ok.items() if a != "uav_1"})
    with pytest.raises(
        ActionError,
        match=r"shape \(3,\); expected Box\(-1.0, 1.0, \(4,\), float32\) for agent 'uav_0'",
    ):
        env.step({**ok, "uav_0": np.zeros(3)})
    with pytest.raises(ActionError, match=r"agent 'uav_1' has p = -1.5 \(body_rates"):
        env.step({**ok, "uav_1": np.array([-1.5, 0, 0, 0])})
    with pytest.raises(ActionError, match=r"actions for agents not in the env: \['uav_7'\]"):
        env.step({**ok, "uav_7": np.zeros(4)})
    with pytest.raises(ValueError, match="hear 'radar': expected 'radio' or 'truth'"):
        parallel_env(hear="radar")


def test_a_reset_option_is_named_in_a_warning_and_none_or_empty_warn_nothing() -> None:
    # before: any option was silently ignored. Refusing one would fail PettingZoo's own
    # parallel_api_test (it resets with options={"options": 1}), so it is a warning.
    env = parallel_env("formation", swarm_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain, _ = env.reset(seed=2, options=None)
        empty, _ = env.reset(seed=2, options={})
    needle = r"reset option 'swarm_size' is not one this env takes; it takes none .*: ignored"
    with pytest.warns(ResetOptionWarning, match=needle):
        warned, _ = env.reset(seed=2, options={"swarm_size": 3})
    assert list(warned) == ["uav_0", "uav_1"]  # not honoured: the same two-UAV episode
    for obs in (empty, warned):
        for agent in plain:
            np.testing.assert_array_equal(obs[agent], plain[agent])
    with pytest.raises(ValueError, match=r"reset options 3: expected a dict or None"):
        env.reset(seed=2, options=3)
    env.close()
