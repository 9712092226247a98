"""Scenario files: TOML -> validated frozen dataclasses.

A scenario has core sections (`simulation`, `mission`, `agents`, `world`, `results`) plus the
sections its mission plug-in declares (`Mission.sections`). Every bad input raises `ConfigError`
naming the file, the key path, the value and what was expected.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from skyswarm.core.comms.channels import CommsConfig
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.geo import GeoConfig
from skyswarm.core.limits import MAX_SET_CHARS, parse_limited
from skyswarm.core.migrations import check_schema
from skyswarm.core.schema import ConfigError, build, check_ticks, did_you_mean, param, to_plain
from skyswarm.core.wind import WindConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class SimulationConfig:
    tick_s: float = param(0.0025, "physics tick, s", gt=0.0, le=0.1)
    duration_s: float = param(60.0, "simulated time limit, s", gt=0.0)
    seed: int = param(0, "root seed of every random stream", ge=0)
    gravity: float = param(9.81, "gravitational acceleration, m/s^2", ge=0.0)
    strict: bool = param(False, "re-raise behaviour exceptions instead of killing the agent")
    physics: str = param(
        "bullet",
        "physics backend by registered name (core/backends): bullet (pybullet), fast (arrays, "
        "numba; no mesh obstacles), or an installed one (entry points skyswarm.backends)",
    )
    memory_limit_mb: float = param(
        8192.0,
        "refuse a scenario whose estimated memory (agents, grids) exceeds this, MB",
        gt=0.0,
        le=1e7,
    )
    threads: int | Literal["auto"] = param(
        "auto",
        "numba threads of the compiled passes (fast engine, flight kernel) from 1,000 live UAVs; "
        "'auto': run() times one thread against every core in short probes and keeps the "
        "faster (core/thread_tuner.py; bench/threads.py --auto); a number: that many; 0: every "
        "core. Results never depend on it",
        ge=0,
    )

    def validate(self, path: str, file: str) -> None:
        """`physics` names a registered backend (read from the registry, never imported here:
        what it can model is checked with the rest of the scenario, core/checks.py)."""
        from skyswarm.core.backends import backend_names

        names = backend_names()
        if self.physics not in names:
            raise ConfigError(
                file,
                f"{path}.physics" if path else "physics",
                self.physics,
                "one of " + ", ".join(map(repr, names)) + did_you_mean(self.physics, names),
            )


@dataclass(frozen=True)
class MissionConfig:
    type: str = param(doc="plug-in: 'missions.name', 'package.module:Class' or an entry-point name")
    auto_start: bool = param(True, "start at once when viewed (the GUI waits for Start otherwise)")


@dataclass(frozen=True)
class AgentSpec:
    id: int = param(doc="agent id, unique in the run", ge=0)
    position: tuple[float, ...] = param(doc="initial (x, y) or (x, y, z), m, ENU", length=(2, 3))
    heading_deg: float = param(0.0, "initial compass heading, degrees (0 = north, 90 = east)")


MAX_AGENTS = 10**6  # ~190 GB of UAVs; checked before a layout is generated


@dataclass(frozen=True)
class AgentsConfig:
    count: int = param(0, "number of agents of a generated layout (ignored with `list`)", ge=0)
    layout: Literal["diagonal", "line", "grid"] = param(
        "diagonal", "generated layout: diagonal (0,0),(s,s),...; line along x; square grid"
    )
    spacing_m: float = param(2.0, "generated layout spacing, m", gt=0.0)
    origin: tuple[float, float, float] = param((0.0, 0.0, 0.0), "generated layout origin, m")
    heading_deg: float = param(0.0, "generated layout heading, compass degrees")
    first_id: int = param(1, "id of the first generated agent", ge=0)
    list: tuple[AgentSpec, ...] = param((), "explicit agents ([[agents.list]] tables)")

    def validate(self, path: str, file: str) -> None:
        if self.list and self.count and self.count != len(self.list):
            raise ConfigError(
                file,
                f"{path}.count",
                self.count,
                f"{len(self.list)} (the number of [[agents.list]] entries) or no count",
            )
        if self.count > MAX_AGENTS:
            raise ConfigError(file, f"{path}.count", self.count, f"at most {MAX_AGENTS} agents")
        seen: set[int] = set()
        for i, spec in enumerate(self.list):
            if spec.id in seen:
                raise ConfigError(file, f"{path}.list[{i}].id", spec.id, "an id not used before")
            seen.add(spec.id)

    def resolved(self) -> tuple[AgentSpec, ...]:
        """The explicit list, or the generated layout as specs (position always 3D)."""
        if self.list:
            return tuple(
                dataclasses.replace(
                    s,
                    position=(
                        *s.position[:2],
                        s.position[2] if len(s.position) == 3 else self.origin[2],
                    ),
                )
                for s in self.list
            )
        ox, oy, oz = self.origin
        side = max(1, int(round(self.count**0.5 + 0.4999)))
        specs = []
        for i in range(self.count):
            if self.layout == "diagonal":
                x, y = i * self.spacing_m, i * self.spacing_m
            elif self.layout == "line":
                x, y = i * self.spacing_m, 0.0
            else:
                x, y = (i % side) * self.spacing_m, (i // side) * self.spacing_m
            specs.append(AgentSpec(self.first_id + i, (ox + x, oy + y, oz), self.heading_deg))
        return tuple(specs)


@dataclass(frozen=True)
class ObstacleConfig:
    type: Literal["box", "mesh"] = param(doc="a box, or an OBJ mesh")
    center: tuple[float, float, float] = param((0.0, 0.0, 0.0), "box centre / mesh origin, m")
    size: tuple[float, float, float] = param((1.0, 1.0, 1.0), "box full size (x, y, z), m", gt=0.0)
    yaw_deg: float = param(0.0, "box rotation about z, degrees counter-clockwise")
    mesh: str = param("", "OBJ file, relative to the scenario file")
    scale: float = param(1.0, "mesh scale factor", gt=0.0)


@dataclass(frozen=True)
class WorldConfig:
    ground: bool = param(True, "an infinite ground plane at z = 0")
    terrain: str = param("", "terrain OBJ mesh (relative to the scenario file); empty: none")
    terrain_cell_m: float = param(
        0.5, "fast physics: the terrain mesh is sampled to a height grid of this spacing, m", gt=0
    )
    heightfield: str = param(
        "", "terrain height grid: CSV (row j at y0 + j cell, column i at x0 + i cell) or .npy"
    )
    heightfield_cell_m: float = param(1.0, "spacing of the height grid's samples, m", gt=0.0)
    heightfield_origin: tuple[float, float] = param(
        (0.0, 0.0), "x, y of the height grid's first sample (row 0, column 0), m", length=2
    )
    obstacles: tuple[ObstacleConfig, ...] = param((), "static obstacles ([[world.obstacles]])")


@dataclass(frozen=True)
class AvoidanceConfig:
    """Local collision avoidance (uav/avoidance.py): a layer between a mission's commands and
    the controller, fed by each UAV's proximity sensor ([uav.sensors.proximity])."""

    enabled: bool = param(True, "avoid neighbours seen by the proximity sensor (off: no work)")
    radius_m: float = param(1.2, "combined radius of two UAVs: closer than this is a hit, m", gt=0)
    horizon_s: float = param(3.0, "time-to-collision horizon tau0 of the power law, s", gt=0.0)
    gain: float = param(1.5, "strength k of the anticipatory term, m^2/s", ge=0.0)
    separation_m: float = param(2.5, "distance below which a plain repulsion acts, m", ge=0.0)
    repulsion: float = param(2.0, "repulsion gain below separation_m, 1/s", ge=0.0)
    max_push_m_s: float = param(4.0, "largest velocity change avoidance may add, m/s", gt=0.0)
    smoothing: float = param(
        0.5, "alpha-beta tracker gain of each neighbour's relative position (0..1]", gt=0.0, le=1
    )
    vertical_clear_m: float = param(
        1.5, "neighbours at least this far above or below are not avoided, m", gt=0.0
    )
    safe_distance_m: float = param(
        2.0, "barrier: UAVs approach each other ever slower towards this distance, m", gt=0.0
    )
    brake_m_s2: float = param(
        3.0, "barrier: deceleration each UAV is assumed to brake at towards safe_distance_m", gt=0
    )
    reaction_s: float = param(
        0.2, "barrier: delay before a UAV's braking takes hold (scan, tracking, lag), s", ge=0
    )
    barrier_rate: float = param(
        1.0, "barrier: speed at which a pair closer than safe_distance_m draws apart, 1/s", gt=0
    )
    overdrive: float = param(
        1.0,
        "barrier: a UAV faster than its cap towards a closing neighbour is told to fly "
        "this many times the excess below the cap",
        ge=0.0,
    )
    barrier_neighbours: int = param(8, "barrier: nearest neighbours constrained per UAV", ge=1)
    guard_m: float = param(1.5, "last-resort guard: closer than this, fly straight away, m", ge=0)
    guard_speed_m_s: float = param(1.5, "guard: speed away from the UAVs within guard_m", gt=0)
    guard_release_m: float = param(
        2.5, "guard: it holds until every neighbour is this far, m", gt=0.0
    )


MAX_GROUPS = 1000  # [[results.groups]] tables


@dataclass(frozen=True)
class TrajectoryGroup:
    """Agents recorded at their own, lower rate ([[results.groups]]; core/recorder.py)."""

    trajectory_hz: float = param(
        doc="sampling rate of these agents, Hz: results.trajectory_hz divided by a whole number",
        gt=0.0,
        rate=True,
    )
    ids: tuple[int, ...] = param((), "agent ids of the group")
    id_range: tuple[int, ...] = param(
        (), "[first, last]: the agent ids first..last (inclusive); [] for none", length=(0, 2)
    )
    role: str = param("", "every agent of this role (e.g. 'uav'); empty: by ids only")

    def validate(self, path: str, file: str) -> None:
        if len(self.id_range) == 1 or (self.id_range and self.id_range[0] > self.id_range[1]):
            raise ConfigError(file, f"{path}.id_range", list(self.id_range), "[first, last]")
        if not (self.ids or self.id_range or self.role):
            raise ConfigError(file, path, "{}", "ids, id_range or role: the agents of the group")

    def holds(self, agent_id: int, role: str) -> bool:
        """Whether the agent `agent_id` of `role` belongs to the group."""
        lo, hi = self.id_range or (1, 0)
        return lo <= agent_id <= hi or role == self.role or agent_id in self._id_set

    @functools.cached_property
    def _id_set(self) -> frozenset[int]:
        return frozenset(self.ids)


@dataclass(frozen=True)
class ResultsConfig:
    dir: str = param("results", "parent folder of run directories (relative to the working dir)")
    trajectory_hz: float = param(20.0, "trajectory sampling rate, Hz", gt=0.0, rate=True)
    timeseries_hz: float = param(10.0, "time-series sampling rate, Hz", gt=0.0, rate=True)
    format: Literal["binary", "parquet"] = param(
        "binary",
        "trajectory file: binary (trajectory.bin, flushed every sample) or parquet "
        "(trajectory.parquet, written in row groups; needs the skyswarm[data] extra)",
    )
    trajectory_precision: Literal["float64", "float32", "quantised"] = param(
        "float64",
        "binary trajectory floats: float64 (exact), float32 (half the bytes; each value "
        "rounded to the nearest float32: relative error <= 2^-24, 0.06 mm at 1 km) or "
        "quantised (needs zstd; position and velocity to 2^-10 m (m/s), error <= 0.49 mm "
        "(mm/s), quaternion components to 2^-16, error <= 7.7e-6)",
    )
    trajectory_compression: Literal["none", "zstd"] = param(
        "none",
        "binary trajectory: none, or zstd (lossless: each sample predicted from the ones before, "
        "residuals byte-shuffled; ~0.4x float32's bytes for boids, ~0.01x for hover)",
    )
    groups: tuple[TrajectoryGroup, ...] = param(
        (),
        "agents recorded at a lower rate ([[results.groups]]; an agent in several: the first); "
        "the others at trajectory_hz",
    )

    def validate(self, path: str, file: str) -> None:
        """Parquet output needs pyarrow: refused at load time, not at the end of the run."""
        import importlib.util

        packed = (self.trajectory_precision, self.trajectory_compression)
        if self.format == "parquet" and packed != ("float64", "none"):
            raise ConfigError(
                file,
                f"{path}.format" if path else "format",
                self.format,
                "binary with trajectory_precision or trajectory_compression set (Parquet "
                "compresses its own columns)",
            )
        if self.trajectory_precision == "quantised" and self.trajectory_compression != "zstd":
            raise ConfigError(
                file,
                f"{path}.trajectory_precision" if path else "trajectory_precision",
                self.trajectory_precision,
                'float64 or float32, or trajectory_compression = "zstd" (quantised is a codec)',
            )
        if len(self.groups) > MAX_GROUPS:  # the zstd frame head holds 14 bits of stream
            key = f"{path}.groups" if path else "groups"
            raise ConfigError(file, key, len(self.groups), f"at most {MAX_GROUPS} groups")
        for i, group in enumerate(self.groups):
            ratio = self.trajectory_hz / group.trajectory_hz
            if ratio < 1.0 - 1e-9 or abs(ratio - round(ratio)) > 1e-9 * ratio:
                raise ConfigError(
                    file,
                    f"{path}.groups[{i}].trajectory_hz" if path else f"groups[{i}].trajectory_hz",
                    group.trajectory_hz,
                    f"trajectory_hz ({self.trajectory_hz:g} Hz) divided by a whole number "
                    "(1, 2, 3, ...)",
                )
        if self.format == "parquet" and importlib.util.find_spec("pyarrow") is None:
            raise ConfigError(
                file,
                f"{path}.format" if path else "format",
                self.format,
                "pyarrow installed for Parquet output: pip install 'skyswarm[data]'",
            )


CORE_SECTIONS: dict[str, type] = {
    "geo": GeoConfig,
    "faults": FaultsConfig,
    "simulation": SimulationConfig,
    "mission": MissionConfig,
    "agents": AgentsConfig,
    "world": WorldConfig,
    "results": ResultsConfig,
    "comms": CommsConfig,
    "wind": WindConfig,
    "avoidance": AvoidanceConfig,
}


# Sections any scenario may hold, contributed by a layer above core when it is imported
# (skyswarm.mavlink: [mavlink]); validated like the mission's and found by `section(name)`.
_EXTRA_SECTIONS: dict[str, type] = {}


def register_section(name: str, cls: type) -> None:
    """Accept the section `[name]` (a `param()` dataclass) in every scenario."""
    if name in CORE_SECTIONS:
        raise ValueError(f"[{name}] is a core section")
    _EXTRA_SECTIONS[name] = cls


def registered_sections() -> dict[str, type]:
    """The sections added with `register_section`, by name (e.g. `[mavlink]` once
    skyswarm.mavlink is imported)."""
    return dict(_EXTRA_SECTIONS)


@dataclass(frozen=True)
class ScenarioConfig:
    """A validated scenario (frozen): the core sections as attributes (`simulation`, `agents`,
    `world`, `comms`, ...), the mission's own sections by name (`section("hover")`), the
    mission class, and `file`, the TOML file it came from ("" when built in Python).

    Make one with `load_scenario` (a file or a shipped name, `--set` style overrides) or
    `scenario_from_dict`; to change one, change its plain data (`as_dict()`) and validate it
    again; `to_toml` writes it back as a file:

        import tempfile
        from pathlib import Path

        from skyswarm import load_scenario, scenario_from_dict

        scenario = load_scenario("hover", ["simulation.seed=4"])
        print(scenario.simulation.seed, scenario.agents.count)  # 4 4
        print(scenario.section("hover").altitude_m)  # 10.0
        print(scenario.mission_class.__name__)  # Hover

        data = scenario.as_dict()  # every key, defaults filled in
        data["agents"]["count"] = 2
        smaller = scenario_from_dict(data)  # the same checks and errors as a file's
        print(smaller.agents.count, smaller.simulation.seed)  # 2 4
        with tempfile.TemporaryDirectory() as folder:
            path = smaller.to_toml(Path(folder) / "hover2.toml")
            print(load_scenario(path).agents == smaller.agents)  # True: reads back equal
    """

    file: str
    simulation: SimulationConfig
    mission: MissionConfig
    agents: AgentsConfig
    world: WorldConfig
    results: ResultsConfig
    faults: FaultsConfig
    geo: GeoConfig
    sections: Mapping[str, Any]  # the mission's own sections, validated
    mission_class: type
    comms: CommsConfig = dataclasses.field(default_factory=CommsConfig)
    wind: WindConfig = dataclasses.field(default_factory=WindConfig)
    avoidance: AvoidanceConfig = dataclasses.field(default_factory=AvoidanceConfig)
    events: tuple[Any, ...] = ()  # core.events.ScheduledEvent, from [[events]], sorted by tick

    @property
    def base_dir(self) -> Path:
        return Path(self.file).resolve().parent if self.file else Path.cwd()

    def section(self, name: str) -> Any:
        return self.sections[name]

    def to_toml(self, path: str | Path) -> Path:
        """Write the resolved scenario (every key, defaults filled in) as a TOML file that
        `load_scenario` reads back to an equal scenario (its `file` aside); returns the path.
        Relative paths in it (terrain, airframe files) keep their meaning only beside the
        original file: write it to the same folder, or use absolute or shipped names.

            scenario = load_scenario("configs/hover.toml", ["simulation.seed=4"])
            scenario.to_toml("hover_seed4.toml")
        """
        import tomli_w

        out = Path(path)
        out.write_text(tomli_w.dumps(self.as_dict()), encoding="utf-8")
        return out

    def as_dict(self) -> dict[str, Any]:
        out = {name: to_plain(getattr(self, name)) for name in CORE_SECTIONS}
        out.update({k: to_plain(v) for k, v in self.sections.items()})
        if self.events:
            out["events"] = [e.as_dict() for e in sorted(self.events, key=lambda e: e.index)]
        return out


MAX_TOML_BYTES = 16 * 2**20  # a scenario or airframe file is small; refuse to slurp a huge one


def read_toml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        if path.is_file() and path.stat().st_size > MAX_TOML_BYTES:
            raise ConfigError(
                str(path), "(file)", str(path), f"a TOML file of at most {MAX_TOML_BYTES} bytes"
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(path), "(file)", str(path), "an existing TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            str(path), "(file)", str(path), f"a readable UTF-8 file ({exc})"
        ) from None
    try:
        return parse_limited(lambda: tomllib.loads(text), str(path), "(top level)")
    except tomllib.TOMLDecodeError as exc:
        # quote the offending line of a .toml file only: never echo a line of another file
        shown = _first_line(text, exc) if path.suffix == ".toml" else f"({path.name})"
        raise ConfigError(str(path), "(syntax)", shown, f"valid TOML: {exc}") from None


def _first_line(text: str, exc: Exception) -> str:
    line = getattr(exc, "lineno", None)
    if line is None:
        import re

        m = re.search(r"line (\d+)", str(exc))
        line = int(m.group(1)) if m else None
    if line and 0 < line <= len(text.splitlines()):
        return text.splitlines()[line - 1].strip()
    return ""


def parse_override(item: str) -> tuple[str, Any]:
    """`key.path=value`; the value is read as TOML (numbers, booleans, lists) or else a string."""
    if "=" not in item:
        raise ConfigError("--set", item, item, "key.path=value")
    key, _, raw = item.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError("--set", key, raw, "a dotted key path such as simulation.seed")
    if len(raw) > MAX_SET_CHARS:
        shown = f"({len(raw)} characters)"
        raise ConfigError("--set", key, shown, f"a value of at most {MAX_SET_CHARS} characters")
    try:
        value = parse_limited(lambda: tomllib.loads(f"v = {raw}")["v"], "--set", key)
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return key, value


def override_list(overrides: Iterable[str]) -> list[str]:
    """`overrides` as a list; one string is refused (it would be read a character at a time,
    "--set: a = 'a'")."""
    if isinstance(overrides, str):
        raise ConfigError("--set", "overrides", overrides, "a list of key.path=value strings")
    return list(overrides)


def apply_overrides(data: dict[str, Any], overrides: Iterable[str], file: str) -> None:
    for item in override_list(overrides):
        key, value = parse_override(item)
        node = data
        parts = key.split(".")
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(file, ".".join(parts[: i + 1]), child, "a table to set a key in")
            node = child
        node[parts[-1]] = value


def load_scenario(path: str | Path, overrides: Iterable[str] = ()) -> ScenarioConfig:
    """Read, override and validate a scenario file; resolves the mission plug-in."""
    data = read_toml(path)
    apply_overrides(data, overrides, str(path))
    return scenario_from_dict(data, str(path))


def scenario_from_dict(data: Mapping[str, Any], file: str = "") -> ScenarioConfig:
    """A validated scenario from plain Python data shaped like the TOML file (section name ->
    table; `[[events]]` as a list of tables). The same validation as a file, with the same
    one-line `ConfigError`s (`file` names the source in them; "" for code). Relative paths in
    the data (terrain, airframes, plans) are taken from `file`'s folder, else the working
    directory.

        scenario = scenario_from_dict({
            "mission": {"type": "missions.hover"},
            "simulation": {"duration_s": 5.0, "seed": 3},
            "agents": {"count": 4, "layout": "grid", "spacing_m": 2.0},
        })
        scenario.to_toml("hover4.toml")  # loads back equal: load_scenario("hover4.toml")
    """
    if not isinstance(data, Mapping):  # a list or a path: "'list' object has no attribute 'get'"
        raise ConfigError(file, "(scenario)", data, "a dict of sections, shaped like the TOML file")
    scenario = validate_scenario(data, file)
    from skyswarm.core.checks import agent_count

    need = scenario.mission_class.min_agents
    if agent_count(scenario.agents) < need:
        key = "agents.list" if "list" in data.get("agents", {}) else "agents.count"
        raise ConfigError(
            scenario.file, key, agent_count(scenario.agents), f"at least {need} agent(s)"
        )
    return scenario


def validate_scenario(data: Mapping[str, Any], file: str) -> ScenarioConfig:
    from skyswarm.core.mission import resolve_mission  # the mission module decides its own sections

    data = check_schema(data, file)  # `schema` key; moved keys say where they went
    if "mission" not in data:
        raise ConfigError(file, "mission", dataclasses.MISSING, "a [mission] table with a type")
    core = {name: build(cls, data.get(name, {}), name, file) for name, cls in CORE_SECTIONS.items()}
    mission_class = resolve_mission(core["mission"].type, file)
    extra = {k: v for k, v in _EXTRA_SECTIONS.items() if k in data}  # only when written
    declared: Mapping[str, Any] = {**extra, **mission_class.sections}
    known = set(CORE_SECTIONS) | set(_EXTRA_SECTIONS) | set(declared) | {"events"}
    for key in data:
        if key not in known:
            raise ConfigError(
                file,
                key,
                data[key],
                f"a known section{did_you_mean(key, known)}: {', '.join(sorted(known))}",
            )
    from skyswarm.core.schema import convert

    sections = {
        name: convert(tp, data.get(name, _default_of(tp)), name, file, {})
        for name, tp in declared.items()
    }
    from skyswarm.core.events import parse_events

    events = parse_events(
        data.get("events"),
        file,
        core["simulation"].tick_s,
        mission_class.event_actions,
    )
    scenario = ScenarioConfig(
        file=file, mission_class=mission_class, sections=sections, events=events, **core
    )
    tick = scenario.simulation.tick_s
    for name in CORE_SECTIONS:
        check_ticks(getattr(scenario, name), name, file, tick)
    check_ticks(dict(sections), "", file, tick)
    scenario.wind.ticks_per_update(tick, file)  # 0 Hz (every tick) is no plain rate
    from skyswarm.core.checks import check_geometry, check_memory, check_physics

    check_memory(scenario)  # first: the mission's checks may generate the agent layout
    mission_class.check_config(scenario)
    from skyswarm.core.events import check_events, run_scenario_checks

    if events:
        check_events(scenario)
    run_scenario_checks(scenario)  # registered by the layers above core
    check_geometry(scenario)
    check_physics(scenario)
    return scenario


def _default_of(tp: Any) -> Any:
    return {} if dataclasses.is_dataclass(tp) else []
