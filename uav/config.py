"""Airframe files: TOML with an [airframe] and a [control] section -> validated `UavConfig`;
the scenario's `[uav]` section: which airframe, the fault rates and the battery."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from skyswarm.core.config import read_toml
from skyswarm.core.resources import CONFIGS_DIR, is_file, named_or_path, shipped
from skyswarm.core.schema import ConfigError, build, did_you_mean, param
from skyswarm.uav.battery import BatteryConfig
from skyswarm.uav.control import ControlConfig
from skyswarm.uav.faults import FaultRates
from skyswarm.uav.model import Airframe, resolve_mesh
from skyswarm.uav.sensors import SensorsConfig

DEFAULT_AIRFRAME = CONFIGS_DIR / "airframes" / "quad_x.toml"
SECTIONS = {"airframe": Airframe, "control": ControlConfig}


@dataclass(frozen=True)
class UavConfig:
    """One airframe and its controller; `airframe.mesh` is an absolute path. The fault rates
    and the battery come from the scenario's [uav] section (none from an airframe file)."""

    airframe: Airframe
    control: ControlConfig
    file: str
    fault_rates: FaultRates = FaultRates()
    battery: BatteryConfig = BatteryConfig()
    sensors: SensorsConfig = SensorsConfig()


def load_uav_config(path: str | Path = DEFAULT_AIRFRAME) -> UavConfig:
    """Read and validate an airframe file; any bad value raises ConfigError(file, key, ...)."""
    file = str(path)
    data = read_toml(path)
    for key in data:
        if key not in SECTIONS:
            raise ConfigError(
                file,
                key,
                data[key],
                f"a section [airframe] or [control]{did_you_mean(key, SECTIONS)}",
            )
    airframe = build(Airframe, data.get("airframe", {}), "airframe", file)
    control = build(ControlConfig, data.get("control", {}), "control", file)
    if control.max_tilt_deg > airframe.max_tilt_deg:
        raise ConfigError(
            file,
            "control.max_tilt_deg",
            control.max_tilt_deg,
            f"at most the airframe's max_tilt_deg ({airframe.max_tilt_deg})",
        )
    mesh = resolve_mesh(airframe, Path(path))
    if not is_file(mesh):
        raise ConfigError(file, "airframe.mesh", airframe.mesh, f"an existing OBJ file ({mesh})")
    airframe = dataclasses.replace(airframe, mesh=str(mesh))
    return UavConfig(airframe, control, file)


@dataclass(frozen=True)
class UavSection:
    """The [uav] section of a scenario: the airframe the mission's UAVs use, their random fault
    rates ([uav.fault_rates]), their battery ([uav.battery]) and sensors ([uav.sensors]). A
    mission flying UAVs declares it among its sections; `Swarm.from_scenario` reads it:

        class Survey(Mission):
            sections = {"uav": UavSection, "survey": SurveyConfig}
    """

    airframe: str = param(
        "",
        "a shipped airframe by name ('quad_x') or a TOML file relative to the scenario; "
        "empty: quad_x",
    )
    fault_rates: FaultRates = param(FaultRates(), "random faults ([uav.fault_rates])")
    battery: BatteryConfig = param(BatteryConfig(), "battery model ([uav.battery])")
    sensors: SensorsConfig = param(SensorsConfig(), "sensors and estimation ([uav.sensors])")

    def validate(self, path: str, file: str) -> None:
        if self.airframe:
            where = self._path(Path(file).resolve().parent if file else Path.cwd())
            if not is_file(where):
                names = ", ".join(shipped("airframes"))
                raise ConfigError(
                    file,
                    f"{path}.airframe",
                    self.airframe,
                    f"a shipped airframe ({names}) or an existing airframe file ({where})",
                )
            load_uav_config(where)  # parsed and validated now, not when the run starts

    def _path(self, base_dir: Path) -> Path:
        return named_or_path(self.airframe, "airframes", base_dir)

    def load(self, base_dir: Path) -> UavConfig:
        """The airframe file's config with this section's fault rates and battery."""
        uav = load_uav_config(self._path(base_dir) if self.airframe else DEFAULT_AIRFRAME)
        return dataclasses.replace(
            uav, fault_rates=self.fault_rates, battery=self.battery, sensors=self.sensors
        )
