"""The magnetometer, `[uav.sensors.compass]`: heading = truth + white noise; it feeds the
estimator's heading input."""

from __future__ import annotations

from dataclasses import dataclass

from skyswarm.core.schema import param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor


@dataclass(frozen=True)
class CompassConfig:
    """compass: magnetometer heading = truth + white noise"""

    enabled: bool | None = param(None, "measure heading by compass")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    sigma_rad: float | None = param(None, "white heading noise, rad", ge=0.0)


@register_sensor
class Compass(Sensor):
    """`yaw` (N,) rad ENU, the last heading reading (not wrapped; the truth at the start)."""

    name = "compass"
    Config = CompassConfig
    defaults = CompassConfig(enabled=True, period_s=0.02, sigma_rad=0.02)
    feeds = "heading"

    def __init__(self, cfg: CompassConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.yaw = truth.euler[:, 2].copy()

    def sample(self, tick: int, truth: Truth) -> None:
        self.yaw = truth.euler[:, 2] + self.cfg.sigma_rad * self.rng.standard_normal(self.n)
