"""Airframe files: TOML with an [airframe] and a [control] section -> validated `UavConfig`;
the scenario's `[uav]` section: which airframe, the fault rates and the battery."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skyswarm.core.config import read_toml
from skyswarm.core.events import register_scenario_check
from skyswarm.core.resources import CONFIGS_DIR, is_file, named_or_path, shipped
from skyswarm.core.schema import ConfigError, build, did_you_mean, param
from skyswarm.uav.battery import BatteryConfig
from skyswarm.uav.control import ControlConfig
from skyswarm.uav.faults import FaultRates
from skyswarm.uav.model import Airframe, resolve_mesh
from skyswarm.uav.sensors import SensorsConfig

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig

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

    @property
    def airframe_name(self) -> str:
        """The airframe as a user named it: 'quad_x' (also when empty) or its file path."""
        return self.airframe or DEFAULT_AIRFRAME.stem

    def model_lines(self, base_dir: Path) -> list[str]:
        """One line per flight model of this section's airframe, for `skyswarm validate`:
        ['airframe quad_x', 'rotor rotor_speed (tau 0.02 s)', 'drag quadratic (...)', ...]."""
        summary = self.load(base_dir).airframe.model_summary()
        return [f"airframe {self.airframe_name}"] + [f"{k} {v}" for k, v in summary.items()]

    def _path(self, base_dir: Path) -> Path:
        return named_or_path(self.airframe, "airframes", base_dir)

    def load(self, base_dir: Path) -> UavConfig:
        """The airframe file's config with this section's fault rates and battery."""
        uav = load_uav_config(self._path(base_dir) if self.airframe else DEFAULT_AIRFRAME)
        return dataclasses.replace(
            uav, fault_rates=self.fault_rates, battery=self.battery, sensors=self.sensors
        )


def check_airframe_in_world(scenario: ScenarioConfig) -> None:
    """The scenario's airframe flies in its world: four motors lift more than m g at
    `[simulation] gravity` (an airframe too weak on Earth may fly on Mars), and a battery,
    whose power is relative to the hover thrust, needs g > 0. Run by `validate_scenario`."""
    uav = scenario.sections.get("uav")
    if not isinstance(uav, UavSection):
        return
    g = scenario.simulation.gravity
    airframe = uav.load(scenario.base_dir).airframe
    file = str(uav._path(scenario.base_dir)) if uav.airframe else str(DEFAULT_AIRFRAME)
    airframe.check_can_fly(g, file)
    if uav.battery.enabled and g <= 0.0:
        raise ConfigError(
            scenario.file,
            "simulation.gravity",
            g,
            "> 0 with [uav.battery] (its power is relative to the hover thrust m g)",
        )


register_scenario_check(check_airframe_in_world)
