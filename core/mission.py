"""Mission plug-ins: the base class whose hooks do nothing, and finding a mission by name.

A scenario names its mission as `missions.hover` (a module holding one Mission subclass, or a
`MISSION` attribute), `package.module:Class`, or a name registered by a third-party package under
the entry-point group `skyswarm.missions`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from skyswarm.core.schema import ConfigError, did_you_mean

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.hooks import Overlay
    from skyswarm.core.simulator import Simulator

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
    - `hud()`: text lines (state, headline metric) the views show, live and in replay.
    - `overlays()`: plain-data primitives the views draw (`core.hooks.Overlay`).
    - `highlight_role`: the role whose holders the views colour (`role_members` names them).
    - `event_actions` / `on_event()`: scenario `[[events]]` actions the mission handles itself.
    - `role_members(role)`: agent ids holding a role, for an event's `target = "leader"` etc.
    - `group_leaders()`: {agent id: its group's leader id} of a swarm in groups (the views).
    - `outcome()`: "target reached" / "plan exhausted" once known (see core/events.py, summary).

    `hud`, `overlays`, `role_members`, `highlight_role` and `group_leaders` are the
    `core.hooks.ViewSource` protocol: all the views and core/timeline.py read of a mission.

    Example, every UAV climbs to `[climb] altitude_m` and the run ends when all are there
    (examples/mission_plugin/ is this as an installable package)::

        @dataclass(frozen=True)
        class ClimbConfig:
            altitude_m: float = param(8.0, "target height, m", gt=0.0)

        class Climb(Mission):
            sections = {"uav": UavSection, "climb": ClimbConfig}

            def setup(self) -> None:
                self.cfg = self.config.section("climb")
                self.swarm = Swarm.from_scenario(
                    self.sim, self.config, hovering=True, altitude_m=2.0
                )
                target = self.swarm.start_positions.copy()
                target[:, 2] = self.cfg.altitude_m
                self.swarm.command.position(None, target)

            def is_done(self) -> bool:
                z = self.sim.world.state.position[self.swarm.slots, 2]
                return bool((abs(z - self.cfg.altitude_m) < 0.2)[self.swarm.alive].all())

            def outcome(self) -> str | None:
                return "target reached" if self.is_done() else None
    """

    sections: ClassVar[Mapping[str, Any]] = {}
    description: ClassVar[str] = ""
    min_agents: ClassVar[int] = 1  # a scenario file with fewer is refused (0: makes its own)

    def __init__(self, sim: Simulator, config: ScenarioConfig) -> None:
        self.sim = sim
        self.config = config

    @classmethod
    def check_config(cls, scenario: ScenarioConfig) -> None:
        """Checks across sections (raise ConfigError); run by validation, before any setup."""

    @classmethod
    def memory_bytes(cls, scenario: ScenarioConfig) -> int:
        """Memory the mission's own state needs beyond the agents (grids ...), estimated."""
        return 0

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

    def hud(self) -> list[str]:
        """Lines for the views' HUD (state, headline metric), plain text; recorded with the
        overlays by core/timeline.py so a replay shows the same."""
        return []

    def overlays(self) -> Sequence[Overlay]:
        """What the views draw for the mission now: mappings with `segments` (M, 2, 3) or
        `corners` (M, 4, 3), m world ENU, and an optional RGBA `color` (`core.hooks.Overlay`).
        Plain data (missions must not import gui/); recorded by core/timeline.py when changed.

        Example: `return [{"segments": path_segments, "color": (1.0, 0.8, 0.2, 1.0)}]`."""
        return []

    # The role whose holders the views draw in their highlight colour, live and in replay
    # (recorded by core/timeline.py as the sample's `leaders`); None: nobody is highlighted.
    highlight_role: ClassVar[str | None] = None

    # Actions a scenario's [[events]] may name that this mission handles itself: action name ->
    # frozen dataclass of the action's parameters (fields built with core.schema.param, so they
    # are validated with the usual one-line errors when the scenario is loaded).
    event_actions: ClassVar[Mapping[str, type]] = {}

    def on_event(self, action: str, params: Any, targets: list[int]) -> None:
        """Apply a scheduled event (one of `event_actions`) at its tick.

        `params` is the validated dataclass instance of the action's own keys; `targets` are the
        agent ids the event's `target` resolved to (empty when the event names none)."""

    def role_members(self, role: str) -> list[int]:
        """Agent ids currently holding `role` (e.g. "leader"), for an event's `target = role`.
        An empty list means nobody holds it now (the event then applies to no agent)."""
        return []

    def group_leaders(self) -> Mapping[int, int]:
        """The agents' groups now: {agent id: id of the leader of its group}, a leader mapping
        to itself; only agents in a group are keys. {} by default (no groups). The views draw
        each member's line to its leader (`--groups`, key A), live and in replay (recorded by
        core/timeline.py as the sample's `groups`).

        Example, a flock split into parts, each led by the lowest id it hears:
        `return {u.id: u.part_leader for u in self.uavs if u.alive}`."""
        return {}

    def gui_commands(self) -> Sequence[tuple[str, Callable[[int | None], Any]]]:
        """Commands the live viewer offers on keys 1-9, in order: (label, function called with
        the selected agent's id, or None when none is selected). None by default.

        Example: `return [("land", lambda agent_id: self.land(agent_id))]`."""
        return []

    # True for a mission whose task is to fly until the time limit (hover, keep-spot): reaching
    # the duration with no agent lost is then its "target reached".
    duration_is_target: ClassVar[bool] = False

    # True: `skyswarm run` writes the plots of app/plot.py (map, time series, ...) after the run
    # (unless `--no-plots`); `skyswarm plot RESULTS` draws them for any run.
    plot_results: ClassVar[bool] = False

    def outcome(self) -> str | None:
        """The run's verdict once the mission knows: "target reached" or "plan exhausted";
        None while running.

        When the run ends and this is still None, the simulator reports "time limit" (or "all
        agents lost" when no agent is left). Only "target reached" counts as success (exit 0)."""
        return None

    def overrides(self, hook: str) -> bool:
        return getattr(type(self), hook) is not getattr(Mission, hook)


SHIPPED_PREFIX = "missions."  # scenarios name shipped missions as "missions.<entry-point name>"


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _dotted(name: str) -> bool:
    """`a.b.c` made of Python identifiers only (no empty, leading or trailing parts)."""
    return bool(name) and all(_IDENT.fullmatch(part) for part in name.split("."))


def resolve_mission(spec: str, file: str = "") -> type[Mission]:
    """The Mission class named by `spec`; a ConfigError at key mission.type otherwise.

    `spec` is an entry-point name (`hover`), the same with the shipped prefix (`missions.hover`),
    a module path holding one Mission subclass (`my_pkg.survey`) or `module:Class`. Names are
    parsed strictly (dotted identifiers); a module is imported only when it is named by an
    installed entry point or explicitly by `module:Class`, and an import failure is reported in
    one line (exception type and message).
    """
    key = "mission.type"
    installed = available_missions()
    expected = f"an installed mission ({', '.join(sorted(installed))}) or 'package.module:Class'"
    if not isinstance(spec, str) or spec != spec.strip() or not spec:
        raise ConfigError(file, key, spec, expected)
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        if not _dotted(module_name) or not _IDENT.fullmatch(attr):
            raise ConfigError(file, key, spec, f"{expected}, with identifiers only")
        module = _import(module_name, spec, file)
        cls = getattr(module, attr, None)
        if not (inspect.isclass(cls) and issubclass(cls, Mission)):
            raise ConfigError(file, key, spec, f"a Mission subclass named {attr} in {module_name}")
        return cls
    name = spec.removeprefix(SHIPPED_PREFIX)
    if not _dotted(spec) or not _dotted(name):
        raise ConfigError(file, key, spec, expected)
    for ep in _entry_points(tuple(sys.path)):
        if ep.name == name:
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plug-in: one line, no traceback
                raise ConfigError(
                    file, key, spec, f"an importable plug-in ({type(exc).__name__}: {exc})"
                ) from None
            return obj if inspect.isclass(obj) else _mission_in(obj, spec, file)
    for ep_name, value in installed.items():  # a plug-in's module path: `skyswarm.missions.hover`
        if value.partition(":")[0] == spec:
            return resolve_mission(ep_name, file)
    raise ConfigError(file, key, spec, f"{expected}{did_you_mean(name, installed)}")


def _import(module_name: str, spec: str, file: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            names = ", ".join(sorted(available_missions()))
            raise ConfigError(
                file, "mission.type", spec, f"an importable mission module (installed: {names})"
            ) from None
        raise ConfigError(
            file, "mission.type", spec, f"an importable module (ModuleNotFoundError: {exc})"
        ) from None
    except Exception as exc:  # syntax error, failing import-time code: one line
        msg = str(exc).splitlines()[0] if str(exc) else ""
        raise ConfigError(
            file, "mission.type", spec, f"an importable module ({type(exc).__name__}: {msg})"
        ) from None


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
    return {ep.name: ep.value for ep in _entry_points(tuple(sys.path))}


@functools.lru_cache(maxsize=8)
def _entry_points(search_path: tuple[str, ...]) -> tuple[Any, ...]:
    """The group's entry points, scanned once per import path (a scan takes ~0.1 s)."""
    return tuple(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
