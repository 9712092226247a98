"""The AHRS attitude, `[uav.sensors.attitude]`: roll, pitch (and yaw) = truth +
Ornstein–Uhlenbeck noise, every tick (QRSim's model); it feeds the estimator's attitude input."""

from __future__ import annotations

from dataclasses import dataclass

from skyswarm.core.schema import param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor
from skyswarm.uav.sensors.noise import GaussMarkov


@dataclass(frozen=True)
class AttitudeConfig:
    """AHRS attitude: roll/pitch = truth + Ornstein–Uhlenbeck noise"""

    enabled: bool | None = param(None, "roll and pitch from the AHRS model")
    sigma_rad: float | None = param(None, "stationary std of each angle's noise, rad", ge=0.0)
    tau_s: float | None = param(None, "time constant (1 / mean-reversion speed), s", gt=0.0)


@register_sensor
class Ahrs(Sensor):
    """`euler` (N, 3) rad: roll, pitch, ENU yaw with noise, sampled every tick."""

    name = "attitude"
    Config = AttitudeConfig
    defaults = AttitudeConfig(enabled=True, sigma_rad=0.005, tau_s=100.0)
    feeds = "attitude"

    def __init__(self, cfg: AttitudeConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.noise = GaussMarkov((self.n, 3), cfg.sigma_rad, cfg.tau_s, setting.dt_s, self.rng)
        self.euler = truth.euler + self.noise.x  # (N, 3) rad, the start view

    def sample(self, tick: int, truth: Truth) -> None:
        self.euler = truth.euler + self.noise.step()
