"""envs/judge.py against the numpy path it replaces in a step (read_kinematics, observe,
Task.ends, Task.reward): the same bits on random states, with the edges that differ first when
an order of operations changes (signed zeros of a body at rest, quaternions with w < 0, NaN,
distances on both sides of the limits)."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.frames import quat_to_matrix
from skyswarm.envs.judge import OBS_6D, OBS_NONE, OBS_QUATERNION, judge, judge_params
from skyswarm.envs.observations import Kinematics, ObservationSpec, observe
from skyswarm.envs.tasks import Goal, Hover, row_norm


def _states(n: int, seed: int) -> dict[str, np.ndarray]:
    """n bodies in 2n state rows (the agents on the odd ones), with the edge cases."""
    rng = np.random.default_rng(seed)
    rows = 2 * n
    q = rng.normal(size=(rows, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)  # about half with w < 0
    q[:8] = [0.0, 0.0, 0.0, 1.0]  # level at rest: every product a signed zero
    q[8:12] = [0.0, 0.0, 0.0, -1.0]
    omega = rng.normal(size=(rows, 3)) * 3.0
    omega[:12] = 0.0
    omega[12:16] = -0.0
    position = rng.normal(size=(rows, 3)) * 2.0 + [0.0, 0.0, 10.0]
    position[16:20, 2] = 0.1  # agents 8 and 9 (rows 17, 19): below the minimum altitude
    velocity = rng.normal(size=(rows, 3))
    velocity[21] = np.nan  # agent 10
    target = rng.normal(size=(n, 3)) * 0.1 + [0.0, 0.0, 10.0]
    target[5] = position[11]  # exactly on target: |e| = 0 (agent i is in row 2 i + 1)
    position[13], q[13] = [1.0, 2.0, 10.0], [0.0, 0.0, 0.0, 1.0]
    target[6] = [4.0, 2.0, 10.0]  # exactly at the error limit (3 m)
    q[15], velocity[15] = [0.0, 0.0, 0.0, 1.0], 0.0
    target[7] = position[15] + [0.1, 0.0, 0.0]  # at rest within a Goal's radius
    action = rng.uniform(-1.0, 1.0, (n, 4))
    previous = rng.uniform(-1.0, 1.0, (n, 4))
    previous[:4] = action[:4]  # no change: a zero smoothness term
    slots = np.arange(1, rows, 2, dtype=np.int64)
    return dict(
        slots=slots, position=position, orientation=q, velocity=velocity, omega=omega,
        target=target, action=action, previous=previous,
    )  # fmt: skip


def _numpy_path(s: dict[str, np.ndarray], task, spec: ObservationSpec):
    """What envs/batch.py computed before judge: the reference."""
    rows = s["slots"]
    q = s["orientation"][rows]
    rot = quat_to_matrix(q)
    rates = np.einsum("nji,nj->ni", rot, s["omega"][rows])
    kin = Kinematics(s["position"][rows], s["velocity"][rows], q, rates, rot)
    dist = row_norm(s["target"] - kin.position)
    speed = row_norm(kin.velocity)
    crashed, reached = task.ends(dist, speed, rot[:, 2, 2], kin.position[:, 2])
    reward = task.reward(dist, speed, rates, s["action"], s["previous"], crashed, reached)
    obs = observe(spec, kin, s["target"], s["action"])
    return obs, reward, crashed, reached, dist


def _judged(s: dict[str, np.ndarray], task, layout: int, last_action: bool, size: int):
    n = len(s["slots"])
    obs = np.full((n, size), 7.0, dtype=np.float32)
    reward, dist = np.empty(n), np.empty(n)
    crashed, reached = np.empty(n, dtype=bool), np.empty(n, dtype=bool)
    judge(
        s["slots"], s["position"], s["orientation"], s["velocity"], s["omega"], s["target"],
        s["action"], s["previous"], judge_params(task), layout, last_action, obs, reward,
        crashed, reached, dist,
    )  # fmt: skip
    return obs, reward, crashed, reached, dist


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit (so -0.0 != 0.0, and NaN == NaN of the same payload)."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(
    ("rotation", "layout", "last_action"),
    [("6d", OBS_6D, True), ("quaternion", OBS_QUATERNION, True), ("6d", OBS_6D, False)],
)
@pytest.mark.parametrize("task", [Hover(), Goal()], ids=["hover", "goal"])
def test_judge_is_the_numpy_path_bit_for_bit(rotation, layout, last_action, task) -> None:
    spec = ObservationSpec(rotation=rotation, last_action=last_action)
    for seed in range(3):
        s = _states(500, seed)
        want = _numpy_path(s, task, spec)
        got = _judged(s, task, layout, last_action, spec.size(4))
        for name, w, g in zip(("obs", "reward", "crashed", "reached", "dist"), want, got):
            assert _same_bits(w, g), (name, seed)
    # the cases are there: signed zeros in the rates, crashes of each kind, a goal reached
    obs, reward, crashed, reached, dist = want
    assert crashed[8] and crashed[9]  # below the minimum altitude
    assert np.isnan(reward[10])  # a NaN velocity: a NaN speed in the reward
    assert dist[5] == 0.0
    col = 12 if rotation == "6d" else 10  # agent 6's rates: R^T (-0.0, -0.0, -0.0) is +0.0
    assert (obs[6, col : col + 3] == 0.0).all() and not np.signbit(obs[6, col : col + 3]).any()
    assert dist[6] == 3.0 and not crashed[6]  # exactly at the limit: not yet a crash
    assert reached[7] == (task.goal_bonus > 0)


def test_judge_without_observation_leaves_obs_alone() -> None:
    """OBS_NONE (the sensor-estimate envs): rewards and ends only."""
    s = _states(50, 0)
    obs, reward, *_ = _judged(s, Hover(), OBS_NONE, True, 19)
    assert (obs == 7.0).all()
    assert _same_bits(reward, _numpy_path(s, Hover(), ObservationSpec())[1])


def test_a_task_that_overrides_its_reward_or_ends_is_judged_by_them() -> None:
    """The compiled pass computes `Task`'s own formulas; a subclass's `reward` and `ends`
    (a researcher's reward shaping) are what its env returns, not the built-in ones."""
    from dataclasses import dataclass

    import gymnasium

    from skyswarm.envs.tasks import Task

    @dataclass(frozen=True)
    class Shaped(Task):
        def reward(self, dist, speed, rates, action, previous, crashed, reached):
            return np.full(len(dist), 7.0)

        def ends(self, dist, speed, up_z, altitude):
            return np.zeros(len(dist), dtype=bool), dist < 1e9  # "reached" at once

    env = gymnasium.make("skyswarm/Hover-v0", task=Shaped(**vars(Hover())))
    env.reset(seed=1)
    _, reward, terminated, _, _ = env.step(env.action_space.sample())
    env.close()
    assert reward == 7.0 and terminated
