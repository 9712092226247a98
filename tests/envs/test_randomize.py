"""Domain randomisation (envs/randomize.py): per-slot mass through the World seam on both
backends, per-build wind and sensors, per-episode radio loss, all from the reset seed."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.envs import FlightVectorEnv, parallel_env
from skyswarm.envs.randomize import Randomization

STILL = {"start_radius_m": 0.0, "start_speed_m_s": 0.0, "start_tilt_deg": 0.0}
G = 9.81  # m/s^2


@pytest.mark.parametrize("physics", ["fast", "bullet"])
def test_a_heavier_body_on_the_nominal_hover_thrust_sinks_at_g_over_6(physics: str) -> None:
    # mass x 1.2, thrust still m0 g (the zero action): a = g / 1.2 - g = -g / 6 = -1.635 m/s^2
    rand = {"mass_scale": (1.2, 1.2)}
    envs = FlightVectorEnv(2, task_overrides=STILL, physics=physics, randomize=rand)
    envs.reset(seed=0)
    for _ in range(5):  # 0.1 s
        obs, *_ = envs.step(np.zeros((2, 4), np.float32))
    np.testing.assert_allclose(obs[:, 5], -G / 6 * 0.1, rtol=0.03)  # vz
    nominal = FlightVectorEnv(1, task_overrides=STILL, physics=physics)
    nominal.reset(seed=0)
    for _ in range(5):
        obs, *_ = nominal.step(np.zeros((1, 4), np.float32))
    assert abs(obs[0, 5]) < 1e-3  # the nominal mass holds


def test_randomised_episodes_repeat_bit_for_bit_from_the_seed() -> None:
    rand = Randomization(mass_scale=(0.8, 1.2), wind_speed_m_s=(1.0, 5.0), sensors=("qrsim",))

    def rollout(seed: int) -> tuple[np.ndarray, float]:
        envs = FlightVectorEnv(4, randomize=rand, max_episode_steps=50)
        rng = np.random.default_rng(0)
        obs, _ = envs.reset(seed=seed)
        rows = [obs]
        for _ in range(300):  # through autoresets: new masses drawn at each
            obs, *_ = envs.step(rng.uniform(-0.2, 0.2, (4, 4)).astype(np.float32))
            rows.append(obs)
        assert envs.batch.swarm.sensors is not None  # the qrsim preset was drawn
        return np.array(rows), envs.batch.swarm.wind_field.config.speed_m_s

    (a, wa), (b, wb) = rollout(5), rollout(5)
    np.testing.assert_array_equal(a, b)
    assert wa == wb and 1.0 <= wa <= 5.0
    c, wc = rollout(6)
    assert wc != wa and not np.array_equal(a[:10], c[:10])


def test_masses_are_drawn_per_slot_within_the_range() -> None:
    rand = Randomization(mass_scale=(0.8, 1.2))
    envs = FlightVectorEnv(64, randomize=rand)
    envs.reset(seed=1)
    world, slots = envs.batch.sim.world, envs.batch.swarm.slots
    m0 = envs.batch.swarm.config.airframe.mass_kg
    scale = 1.0 / (world._inv_m[slots] * m0)
    assert scale.min() >= 0.8 and scale.max() <= 1.2 and scale.std() > 0.08  # uniform: 0.115


def test_the_swarm_env_draws_its_radio_loss_per_episode() -> None:
    env = parallel_env("formation", swarm_size=3, randomize={"radio_loss": (0.1, 0.5)})
    losses = []
    for seed in (0, 0, 1):
        env.reset(seed=seed)
        radio = env.batch.sim.dispatcher.channels[0]
        assert radio.name == "radio"
        losses.append(radio.cfg.loss)
    assert losses[0] == losses[1] and losses[0] != losses[2]
    assert all(0.1 <= x <= 0.5 for x in losses)


def test_bad_ranges_are_refused_with_the_field_named() -> None:
    with pytest.raises(ValueError, match=r"randomize mass_scale \(1.2, 0.8\): expected \(low"):
        Randomization(mass_scale=(1.2, 0.8))
    with pytest.raises(ValueError, match=r"randomize radio_loss \(0.5, 1.5\): expected within"):
        FlightVectorEnv(1, randomize={"radio_loss": (0.5, 1.5)})
