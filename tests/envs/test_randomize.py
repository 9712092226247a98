"""Domain randomisation (envs/randomize.py): per-slot mass through the World seam on both
backends, per-build wind and sensors, per-episode radio loss, all from the reset seed."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.envs import FlightEnv, FlightVectorEnv, parallel_env
from skyswarm.envs.randomize import Randomization

STILL = {"start_radius_m": 0.0, "start_speed_m_s": 0.0, "start_tilt_deg": 0.0}
MOTORS_RANGES = {"motor_constant_scale": (0.9, 1.1), "motor_lag_scale": (0.5, 2.0)}
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
    rand = Randomization(
        mass_scale=(0.8, 1.2), wind_speed_m_s=(1.0, 5.0), sensors=("qrsim",), **MOTORS_RANGES
    )

    def rollout(seed: int) -> tuple[np.ndarray, float]:
        envs = FlightVectorEnv(4, randomize=rand, max_episode_steps=50)
        rng = np.random.default_rng(0)
        obs, _ = envs.reset(seed=seed)
        rows = [obs]
        first = envs.batch.swarm.motors.params.copy()
        for _ in range(300):  # through autoresets: new masses and motors drawn at each
            obs, *_ = envs.step(rng.uniform(-0.2, 0.2, (4, 4)).astype(np.float32))
            rows.append(obs)
        assert not np.any(envs.batch.swarm.motors.params == first)
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
    with pytest.raises(ValueError, match=r"randomize motor_lag_scale \(0.0, 2.0\): expected low"):
        Randomization(motor_lag_scale=(0.0, 2.0))
    with pytest.raises(ValueError, match=r"randomize radio_loss \(0.5, 1.5\): expected within"):
        FlightVectorEnv(1, randomize={"radio_loss": (0.5, 1.5)})


MOTORS = {"motor_constant_scale": (0.8, 1.2), "motor_lag_scale": (0.5, 2.0)}
TAU = 0.02  # s, configs/airframes/quad_x.toml motor_time_constant_s
DT = 0.0025  # s, one physics tick


def test_each_slot_s_motors_follow_their_own_constant_and_lag_tick_by_tick() -> None:
    # Full thrust commanded from hover (m g / 4 per motor): a motor of scale s and lag tau
    # reaches f = s f_max + (m g / 4 - s f_max)(1 - alpha)^8 after one step of 8 ticks,
    # alpha = 1 - exp(-dt / tau)
    envs = FlightVectorEnv(16, action="motors", task_overrides=STILL, randomize=MOTORS)
    envs.reset(seed=3)
    motors, af = envs.batch.swarm.motors, envs.batch.swarm.config.airframe
    alpha, scale = motors.params[:, 0], motors.params[:, 1]
    tau = -DT / np.log1p(-alpha)
    assert 0.8 <= scale.min() and scale.max() <= 1.2 and scale.std() > 0.08  # uniform: 0.115
    assert 0.5 * TAU <= tau.min() and tau.max() <= 2.0 * TAU * (1 + 1e-12)
    assert tau.std() > 0.005  # uniform on (0.01, 0.04) s: 0.0087
    envs.step(np.ones((16, 4), np.float32))
    top = scale * af.max_thrust_n
    expected = top + (af.mass_kg * G / 4 - top) * (1.0 - alpha) ** 8
    np.testing.assert_allclose(motors.thrust, np.repeat(expected[:, None], 4, axis=1), rtol=1e-12)


@pytest.mark.parametrize("physics", ["fast", "bullet"])
def test_a_stronger_motor_climbs_and_a_slower_one_falls_later(physics: str) -> None:
    # Zero action = the nominal hover thrust m g. Motors x 1.2: the thrust rises to 1.2 m g
    # with lag tau, so vz(T) = 0.2 g (T - tau (1 - exp(-T / tau))) = +0.1572 m/s at T = 0.1 s.
    # Thrust cut (a3 = -1) with the lag x 4: vz(T) = -g (T - 4 tau (1 - exp(-T / 4 tau)))
    # = -0.4210 m/s, against -0.7861 m/s with the nominal lag.
    def vz_after_5_steps(rand: dict, collective: float) -> np.ndarray:
        envs = FlightVectorEnv(2, task_overrides=STILL, physics=physics, randomize=rand)
        envs.reset(seed=0)
        action = np.zeros((2, 4), np.float32)
        action[:, 3] = collective
        for _ in range(5):
            obs, *_ = envs.step(action)
        envs.close()
        return obs[:, 5]

    np.testing.assert_allclose(
        vz_after_5_steps({"motor_constant_scale": (1.2, 1.2)}, 0.0), 0.1572, rtol=0.03
    )
    np.testing.assert_allclose(
        vz_after_5_steps({"motor_lag_scale": (4.0, 4.0)}, -1.0), -0.4210, rtol=0.03
    )
    np.testing.assert_allclose(vz_after_5_steps({}, -1.0), -0.7861, rtol=0.03)


def test_the_single_env_draws_its_motors_from_the_reset_seed() -> None:
    def episode(env: FlightEnv, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
        obs, _ = env.reset(seed=seed)
        rows, rng = [obs], np.random.default_rng(0)
        for _ in range(100):
            obs, *_ = env.step(rng.uniform(-0.2, 0.2, 4).astype(np.float32))
            rows.append(obs)
        return env.batch.swarm.motors.params.copy(), np.array(rows)

    env = FlightEnv("hover", randomize=MOTORS, task_overrides=STILL, max_episode_steps=1000)
    (pa, a), (pb, b) = episode(env, 7), episode(env, 7)
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(a, b)
    pc, c = episode(env, None)  # a new episode: new motors from the env's generator
    assert not np.array_equal(pc, pa) and not np.array_equal(a, c)
    pd, _ = episode(env, 8)
    assert not np.array_equal(pd, pa)


def test_motor_parameters_must_be_positive() -> None:
    envs = FlightVectorEnv(2)
    motors = envs.batch.swarm.motors
    nominal = motors.params.copy()
    with pytest.raises(ValueError, match=r"motor thrust_scale .* expected all > 0"):
        motors.set_params(np.arange(2), [1.0, 0.0], [0.02, 0.02])
    with pytest.raises(ValueError, match=r"time_constant_s .* expected all > 0"):
        motors.set_params(np.arange(2), [1.0, 1.0], [0.02, -0.01])
    np.testing.assert_array_equal(motors.params, nominal)  # nothing half-written
    motors.set_params(np.array([1]), [1.5], [0.04])
    assert motors.params[1, 1] == 1.5 and motors.params[0].tolist() == nominal[0].tolist()
    assert motors.params[1, 0] == pytest.approx(1.0 - np.exp(-DT / 0.04), rel=1e-15)
