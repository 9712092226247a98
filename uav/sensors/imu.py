"""The IMU, `[uav.sensors.imu]`: gyros and accelerometers, white noise + bias random walk; it
feeds the estimator's inertial input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import param
from skyswarm.uav.estimation_kernel import to_body
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor
from skyswarm.uav.sensors.noise import RandomWalk


@dataclass(frozen=True)
class ImuConfig:
    """gyros and accelerometers: white noise + bias random walk"""

    enabled: bool | None = param(None, "measure body rates and specific force by an IMU")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    gyro_sigma_rad_s: float | None = param(None, "gyro white noise, rad/s", ge=0.0)
    gyro_bias_walk: float | None = param(None, "gyro bias random walk, rad/s/sqrt(s)", ge=0.0)
    accel_sigma_m_s2: float | None = param(None, "accelerometer white noise, m/s^2", ge=0.0)
    accel_bias_walk: float | None = param(None, "accel bias random walk, m/s^2/sqrt(s)", ge=0.0)


@register_sensor
class Imu(Sensor):
    """Body rates `gyro` (N, 3) rad/s and specific force `specific_force` (N, 3) m/s^2 (body
    frame; what the accelerometers feel at rest is the world's gravity, up), last sample."""

    name = "imu"
    Config = ImuConfig
    defaults = ImuConfig(
        enabled=True,
        period_s=0.0025,
        gyro_sigma_rad_s=0.005,
        gyro_bias_walk=1e-4,
        accel_sigma_m_s2=0.05,
        accel_bias_walk=1e-3,
    )
    feeds = "inertial"

    def __init__(self, cfg: ImuConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        n, rng = self.n, self.rng
        self.gyro_bias = RandomWalk((n, 3), cfg.gyro_bias_walk, cfg.period_s, rng)
        self.accel_bias = RandomWalk((n, 3), cfg.accel_bias_walk, cfg.period_s, rng)
        self.gyro = truth.body_rate.copy()
        g = setting.gravity_m_s2
        self.specific_force = np.tile([0.0, 0.0, g], (n, 1))
        self._g = np.array([0.0, 0.0, g])

    def sample(self, tick: int, truth: Truth) -> None:
        cfg, rng, n = self.cfg, self.rng, self.n
        force_world = truth.accel + self._g
        self.specific_force = (
            to_body(truth.rotation, force_world)  # np.einsum("nji,nj->ni"), compiled
            + self.accel_bias.step()
            + cfg.accel_sigma_m_s2 * rng.standard_normal((n, 3))
        )
        self.gyro = (
            truth.body_rate
            + self.gyro_bias.step()
            + cfg.gyro_sigma_rad_s * rng.standard_normal((n, 3))
        )
