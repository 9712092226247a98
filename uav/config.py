"""Airframe files: TOML with an [airframe] and a [control] section -> validated `UavConfig`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from core.config import read_toml
from core.schema import ConfigError, build, did_you_mean, param
from uav.control import ControlConfig
from uav.model import Airframe, resolve_mesh

DEFAULT_AIRFRAME = Path(__file__).resolve().parent.parent / "configs" / "airframes" / "quad_x.toml"
SECTIONS = {"airframe": Airframe, "control": ControlConfig}


@dataclass(frozen=True)
class UavConfig:
    """One airframe and its controller; `airframe.mesh` is an absolute path."""

    airframe: Airframe
    control: ControlConfig
    file: str


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
    if not mesh.is_file():
        raise ConfigError(file, "airframe.mesh", airframe.mesh, f"an existing OBJ file ({mesh})")
    airframe = dataclasses.replace(airframe, mesh=str(mesh))
    return UavConfig(airframe, control, file)


@dataclass(frozen=True)
class UavSection:
    """The [uav] section of a scenario: which airframe file the mission's UAVs use."""

    airframe: str = param("", "airframe TOML, relative to the scenario file; empty: the default")

    def validate(self, path: str, file: str) -> None:
        if self.airframe:
            where = (Path(file).resolve().parent if file else Path.cwd()) / self.airframe
            if not where.is_file():
                raise ConfigError(
                    file, f"{path}.airframe", self.airframe, f"an existing airframe file ({where})"
                )

    def load(self, base_dir: Path) -> UavConfig:
        return load_uav_config(base_dir / self.airframe if self.airframe else DEFAULT_AIRFRAME)
