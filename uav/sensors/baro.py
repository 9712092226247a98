"""The barometric altimeter, `[uav.sensors.baro]`: altitude = truth + Gauss–Markov bias + white
noise; it feeds the estimator's altitude input."""

from __future__ import annotations

from dataclasses import dataclass

from skyswarm.core.schema import param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor
from skyswarm.uav.sensors.noise import GaussMarkov


@dataclass(frozen=True)
class BaroConfig:
    """barometric altimeter: altitude = truth + Gauss–Markov bias + white noise"""

    enabled: bool | None = param(None, "measure altitude by barometer")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    bias_sigma_m: float | None = param(None, "bias, stationary std, m", ge=0.0)
    bias_tau_s: float | None = param(None, "bias time constant, s", gt=0.0)
    noise_sigma_m: float | None = param(None, "white measurement noise, m", ge=0.0)


@register_sensor
class Barometer(Sensor):
    """Altitude (N,) m of N agents: `altitude`, the last sample (truth + bias at the start)."""

    name = "baro"
    Config = BaroConfig
    defaults = BaroConfig(
        enabled=True, period_s=0.02, bias_sigma_m=0.3, bias_tau_s=300.0, noise_sigma_m=0.05
    )
    feeds = "altitude"

    def __init__(self, cfg: BaroConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.bias = GaussMarkov((self.n,), cfg.bias_sigma_m, cfg.bias_tau_s, cfg.period_s, self.rng)
        self.altitude = truth.position[:, 2] + self.bias.x  # (N,) m, the start view

    def sample(self, tick: int, truth: Truth) -> None:
        sigma, n = self.cfg.noise_sigma_m, self.n
        bias = self.bias.step()  # drawn before the white noise
        self.altitude = truth.position[:, 2] + bias + sigma * self.rng.standard_normal(n)
