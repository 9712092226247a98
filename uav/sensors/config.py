"""The [uav.sensors] table: a preset, one `[uav.sensors.NAME]` table per registered sensor
(uav/sensors/base.py), what control acts on, and the estimator's crossovers."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args

from skyswarm.core.schema import ConfigError, Tables, param, tables
from skyswarm.uav.sensors.base import registered_sensors

Preset = Literal["ideal", "qrsim"]
PRESETS: tuple[str, ...] = get_args(Preset)  # the [uav.sensors] presets, by name


def _sensor_tables() -> dict[str, type]:
    return {name: cls.Config for name, cls in registered_sensors().items()}


@dataclass(frozen=True)
class SensorsConfig:
    """The [uav.sensors] table: a preset, per-sensor overrides, and what control acts on.

    SensorsConfig(preset="qrsim", tables=Tables(gps=GpsConfig(pr_sigma_m=3.0)))
    """

    preset: Preset = param(
        "ideal", "ideal: the UAVs act on the truth (no sensors); qrsim: QRSim's sensor models"
    )
    control_on: Literal["estimate", "truth"] = param(
        "estimate", "controllers and behaviours act on the estimate, or on the truth"
    )
    gps_crossover_rad_s: float = param(
        1.0, "estimator: crossover between IMU and GPS (horizontal), rad/s", gt=0.0
    )
    baro_crossover_rad_s: float = param(
        2.0, "estimator: crossover between IMU and barometer (vertical), rad/s", gt=0.0
    )
    record_hz: float = param(
        10.0, "estimate-vs-truth rows written to sensors.csv, Hz; 0: none", ge=0.0
    )
    tables: Tables = tables(_sensor_tables, "one [uav.sensors.NAME] table per registered sensor")

    def resolved(self, name: str) -> Any:
        """Sensor `name`'s Config with every field set: the preset's values (the sensor's
        `defaults`, switched off under `ideal`), overridden by the keys set in the file."""
        sensor = registered_sensors()[name]
        base = sensor.defaults
        if self.preset == "ideal":
            base = dataclasses.replace(base, enabled=False)
        own = self.tables.get(name)
        if own is None:
            return base
        set_keys = {f.name: getattr(own, f.name) for f in dataclasses.fields(own)}
        return dataclasses.replace(base, **{k: v for k, v in set_keys.items() if v is not None})

    def enabled(self) -> list[str]:
        """The names of the sensors switched on, in registration order."""
        return [name for name in registered_sensors() if self.resolved(name).enabled]

    @property
    def active(self) -> bool:
        """True if any sensor is on (else the swarm builds no sensor layer at all)."""
        return bool(self.enabled())

    def validate(self, path: str, file: str) -> None:
        """At most one sensor on per estimator input (the filter fuses one source of each)."""
        fed: dict[str, str] = {}
        for name in self.enabled():
            feeds = registered_sensors()[name].feeds
            if feeds is not None and feeds in fed:
                raise ConfigError(
                    file,
                    f"{path}.{name}.enabled",
                    True,
                    f"false: '{fed[feeds]}' already feeds the estimator's {feeds} input "
                    f"(switch one off)",
                )
            if feeds is not None:
                fed[feeds] = name
