"""Mission plug-ins: the base class whose hooks do nothing, and finding a mission by name.

A scenario names its mission as `missions.hover` (a module holding one Mission subclass, or a
`MISSION` attribute), `package.module:Class`, or a name registered by a third-party package under
the entry-point group `skyswarm.missions`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from skyswarm.core.schema import ConfigError

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator
    from skyswarm.core.world import World

ENTRY_POINT_GROUP = "skyswarm.missions"


class Mission:
    """Base of every mission. Hooks do nothing by default; override what you need.

    - `sections`: extra config sections the mission owns, name -> dataclass (or tuple of one).
    - `check_config(scenario)`: checks that span sections (`skyswarm validate` runs it).
    - `setup()`: create agents, install tasks and listeners.
    - `pre_tick(world)` / `post_tick(world)`: installed as listeners only when overridden.
    - `is_done()`: the run stops early when it returns True.
    - `metrics()`: numbers for summary.json; `sample()`: numbers for each time-series row.
    - `teardown()`: after the last tick.
    """

    sections: ClassVar[Mapping[str, Any]] = {}
    description: ClassVar[str] = ""

    def __init__(self, sim: Simulator, config: ScenarioConfig) -> None:
        self.sim = sim
        self.config = config

    @classmethod
    def check_config(cls, scenario: ScenarioConfig) -> None:
        """Checks across sections (raise ConfigError); run by validation, before any setup."""

    def setup(self) -> None:
        pass

    def pre_tick(self, world: World) -> None:
        pass

    def post_tick(self, world: World) -> None:
        pass

    def is_done(self) -> bool:
        return False

    def metrics(self) -> dict[str, Any]:
        return {}

    def sample(self) -> dict[str, float]:
        return {}

    def teardown(self) -> None:
        pass

    def overrides(self, hook: str) -> bool:
        return getattr(type(self), hook) is not getattr(Mission, hook)


SHIPPED_PREFIX = "missions."  # scenarios name shipped missions as "missions.<entry-point name>"


def resolve_mission(spec: str, file: str = "") -> type[Mission]:
    """The Mission class named by `spec`; a ConfigError at key mission.type otherwise.

    `spec` is an entry-point name (`hover`), the same with the shipped prefix (`missions.hover`),
    a module path holding one Mission subclass (`my_pkg.survey`) or `module:Class`.
    """
    key = "mission.type"
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        module = _import(module_name, spec, file)
        cls = getattr(module, attr, None)
        if not (inspect.isclass(cls) and issubclass(cls, Mission)):
            raise ConfigError(file, key, spec, f"a Mission subclass named {attr} in {module_name}")
        return cls
    name = spec.removeprefix(SHIPPED_PREFIX)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            obj = ep.load()
            return obj if inspect.isclass(obj) else _mission_in(obj, spec, file)
    if "." in spec and not spec.startswith(SHIPPED_PREFIX):
        return _mission_in(_import(spec, spec, file), spec, file)
    names = ", ".join(sorted(available_missions()))
    raise ConfigError(
        file,
        key,
        spec,
        f"an installed mission ({names}), an importable mission module or module:Class",
    )


def _import(module_name: str, spec: str, file: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            names = ", ".join(sorted(available_missions()))
            raise ConfigError(
                file, "mission.type", spec, f"an importable mission module (installed: {names})"
            ) from None
        raise


def _mission_in(module: Any, spec: str, file: str) -> type[Mission]:
    cls = getattr(module, "MISSION", None)
    if inspect.isclass(cls) and issubclass(cls, Mission):
        return cls
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Mission)
        and obj is not Mission
        and obj.__module__ == module.__name__
    ]
    if len(found) != 1:
        raise ConfigError(
            file,
            "mission.type",
            spec,
            "a module defining exactly one Mission subclass (or a MISSION attribute)",
        )
    return found[0]


def available_missions() -> dict[str, str]:
    """Installed missions, shipped ones included: entry-point name -> `module:Class`."""
    return {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
