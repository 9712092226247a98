"""The flight-plan format: stages of legs, conditions and emergency plans, read from TOML.

A plan is one TOML file (or a table inline in a scenario, `[flight_plan.inline]`). It follows the
USAL flight-plan language (docs/architecture.md, Flight plans; REFERENCE.md §E): a sequence of
stages in flight order (takeoff, departure, en-route, mission, arrival, approach, land), each a
list of legs. A leg's kind says how it ends:

- `takeoff` (climb to `altitude_m` over the start), `land` (fly to `to`, descend, motors off);
- `IF` / `DF` (direct from wherever the UAV is), `TF` (track from the previous fix), `RF`
  (arc about `center` ending at `to`, `direction` left or right);
- holds on a racetrack at `to` (inbound `course_deg`, `d1_m` between turn centres, `d2_m` turn
  diameter): `HF` one lap, `HA` until `altitude_m` at `climb_rate_m_s`, `HC` until its
  `condition` is 0 or `laps` are flown;
- `loop` (iterative: its `body` legs at most `bound` times, while `condition` is not 0),
  `branch` (intersection: `branches[value of condition]`, else `default`, else wait);
- `lawnmower` (rectangle from corner `to`, `length_m` along `course_deg`, `width_m` to its
  right, passes `separation_m` apart) and `figure8` (two circles of `radius_m` through `to`).

Fixes are `[x, y]` or `[x, y, alt]` m in the scenario's frame, or `[lat, lon]` /
`[lat, lon, alt]` degrees with `geo = true` (the scenario needs `[geo] origin`). Any leg may end
by setting a condition (`set_condition`, `set_value`), optionally broadcast to the other UAVs.
Structure is checked here (`check_plan`) with one-line errors, cycles of zero-length legs by
`check_cycles` (cycles.py, called by the loader); the turn radii need the airframe and are
checked by `check_turns` in geometry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from skyswarm.core.config import read_toml
from skyswarm.core.schema import ConfigError, build, did_you_mean, param

STAGES = ("takeoff", "departure", "en-route", "mission", "arrival", "approach", "land")
FIX_LEGS = ("IF", "DF", "TF", "RF", "HA", "HF", "HC", "lawnmower", "figure8", "land")
HOLDS = ("HA", "HF", "HC")
LegKind = Literal[
    "takeoff",
    "land",
    "IF",
    "DF",
    "TF",
    "RF",
    "HA",
    "HF",
    "HC",
    "loop",
    "branch",
    "lawnmower",
    "figure8",
]
# keys each kind may carry beside kind, id, next, set_condition, set_value, broadcast, speed
ALLOWED = {
    "takeoff": {"altitude_m"},
    "land": {"to"},
    "IF": {"to", "fly_over", "altitude_m"},
    "DF": {"to", "fly_over", "altitude_m"},
    "TF": {"to", "fly_over", "altitude_m"},
    "RF": {"to", "fly_over", "altitude_m", "center", "direction"},
    "HF": {"to", "altitude_m", "course_deg", "direction", "d1_m", "d2_m"},
    "HA": {"to", "altitude_m", "course_deg", "direction", "d1_m", "d2_m", "climb_rate_m_s"},
    "HC": {"to", "altitude_m", "course_deg", "direction", "d1_m", "d2_m", "condition", "laps"},
    "loop": {"body", "bound", "condition"},
    "branch": {"branches", "default", "condition"},
    "lawnmower": {"to", "altitude_m", "course_deg", "width_m", "length_m", "separation_m"},
    "figure8": {"to", "altitude_m", "course_deg", "radius_m"},
}
REQUIRED = {
    "takeoff": ("altitude_m",),
    "land": ("to",),
    "RF": ("to", "center"),
    "HF": ("to", "d1_m", "d2_m"),
    "HA": ("to", "d1_m", "d2_m", "altitude_m"),
    "HC": ("to", "d1_m", "d2_m"),
    "loop": ("body",),
    "branch": ("condition", "branches"),
    "lawnmower": ("to", "width_m", "length_m", "separation_m"),
    "figure8": ("to", "radius_m"),
}
COMMON = {"kind", "id", "next", "set_condition", "set_value", "broadcast", "speed_m_s"}


@dataclass(frozen=True)
class Leg:
    """One leg of a stage; which keys a kind needs is checked by `check_plan`."""

    kind: LegKind = param(doc="leg kind: takeoff, land, IF, DF, TF, RF, HA, HF, HC, loop, ...")
    id: str = param("", "name, for next, branches and Goto; empty: unnamed")
    to: tuple[float, ...] = param(
        (), "fix [x, y(, alt)] m, or [lat, lon(, alt)] with geo", length=(2, 3)
    )
    fly_over: bool = param(False, "pass over the fix before turning (else fly-by: turn early)")
    altitude_m: float | None = param(None, "altitude of the fix (takeoff, HA: target), m", ge=-1000)
    speed_m_s: float | None = param(None, "ground speed on this leg, m/s; none: the plan's", gt=0)
    center: tuple[float, ...] = param((), "RF arc centre [x, y] m or [lat, lon]", length=(2, 2))
    direction: Literal["left", "right"] = param("right", "turn direction (RF, holds)")
    course_deg: float = param(0.0, "holds: inbound course; lawnmower, figure8: axis; deg compass")
    d1_m: float = param(0.0, "holds: distance between the turn centres, m", ge=0.0)
    d2_m: float = param(0.0, "holds: turn diameter, m", ge=0.0)
    climb_rate_m_s: float = param(1.0, "HA: climb or descent rate on the racetrack, m/s", gt=0)
    condition: str = param("", "HC, loop: run while not 0; branch: selects a branch")
    laps: int = param(0, "HC: most laps (0: until the condition is 0)", ge=0)
    bound: int = param(0, "loop: most iterations (0: until the condition is 0)", ge=0)
    body: tuple[Leg, ...] = param((), "loop: the legs repeated")
    branches: tuple[str, ...] = param((), "branch: leg ids chosen by the condition's value")
    default: str = param("", "branch: leg id when the value selects none; empty: wait")
    next: str = param("", "leg id flown after this one; empty: the following leg")
    width_m: float = param(0.0, "lawnmower: across the passes, to the right of the axis, m", ge=0)
    length_m: float = param(0.0, "lawnmower: along the passes, m", ge=0.0)
    separation_m: float = param(0.0, "lawnmower: largest distance between passes, m", ge=0.0)
    radius_m: float = param(0.0, "figure8: circle radius, m", ge=0.0)
    set_condition: str = param("", "condition set when the leg ends; empty: none")
    set_value: int = param(0, "value set_condition takes")
    broadcast: bool = param(False, "also send the condition to the other UAVs by radio")


@dataclass(frozen=True)
class Stage:
    kind: Literal[STAGES] = param(doc="takeoff, departure, en-route, mission, arrival, ...")  # type: ignore[valid-type]
    legs: tuple[Leg, ...] = param(doc="the stage's legs, flown in order", length=(1, 10000))


@dataclass(frozen=True)
class Emergency:
    name: str = param(doc="name shown when the plan is selected")
    below_endurance_s: float = param(doc="selected when the endurance falls below this, s", gt=0)
    legs: tuple[Leg, ...] = param(doc="legs flown instead of the plan", length=(1, 10000))


@dataclass(frozen=True)
class Plan:
    """A flight plan file (or inline table)."""

    stages: tuple[Stage, ...] = param(doc="the stages, in flight order", length=(1, 10000))
    name: str = param("", "plan name, for the HUD and exports")
    speed_m_s: float = param(5.0, "default ground speed, m/s", gt=0.0)
    altitude_m: float = param(10.0, "default altitude of fixes without one, m", ge=-1000.0)
    geo: bool = param(False, "fixes and centres are [lat, lon(, alt)] (needs [geo] origin)")
    conditions: Any = param(None, "named integer conditions with their defaults: {name = 0}")
    emergency: tuple[Emergency, ...] = param((), "emergency plans, by endurance")

    @property
    def condition_defaults(self) -> dict[str, int]:
        return dict(self.conditions or {})


def read_plan(path: Path) -> Plan:
    """A plan file, structurally checked; errors name the file and the key path."""
    return parse_plan(read_toml(path), "", str(path))


def parse_plan(data: Any, path: str, file: str) -> Plan:
    plan = build(Plan, data, path, file)
    check_plan(plan, path, file)
    return plan


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def walk(legs: tuple[Leg, ...], path: str) -> list[tuple[str, Leg, bool]]:
    """Every leg with its key path and whether it sits in a loop body, depth first."""
    out = []
    for i, leg in enumerate(legs):
        out.append((f"{path}[{i}]", leg, ".body" in path))
        out += walk(leg.body, f"{path}[{i}].body")
    return out


def check_plan(plan: Plan, path: str, file: str) -> None:
    """Structure: conditions, ids, per-kind keys, branch and next targets, stage order."""
    conds = plan.conditions if plan.conditions is not None else {}
    if not isinstance(conds, dict):
        raise ConfigError(file, _key(path, "conditions"), conds, "a table {name = integer}")
    for name, value in conds.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(file, _key(path, f"conditions.{name}"), value, "an integer")
    order = [STAGES.index(s.kind) for s in plan.stages]
    for i in range(1, len(order)):
        if order[i] < order[i - 1]:
            raise ConfigError(
                file,
                _key(path, f"stages[{i}].kind"),
                plan.stages[i].kind,
                f"a stage in flight order ({', '.join(STAGES)}) after '{plan.stages[i - 1].kind}'",
            )
    main = [
        item
        for s, stage in enumerate(plan.stages)
        for item in walk(stage.legs, _key(path, f"stages[{s}].legs"))
    ]
    _check_legs(main, conds, path, file)
    for e, em in enumerate(plan.emergency):
        _check_legs(walk(em.legs, _key(path, f"emergency[{e}].legs")), conds, path, file)
    flat = [leg for _, leg, _ in main]
    lands = [i for i, leg in enumerate(flat) if leg.kind == "land"]
    if lands and lands[0] != len(flat) - 1:
        key = main[lands[0]][0]
        raise ConfigError(file, f"{key}.kind", "land", "a land leg only as the plan's last leg")


def _check_legs(items: list[tuple[str, Leg, bool]], conds: dict, path: str, file: str) -> None:
    ids: dict[str, bool] = {}
    for key, leg, in_body in items:
        if leg.id:
            if leg.id in ids:
                raise ConfigError(file, f"{key}.id", leg.id, "a leg id used once in the plan")
            ids[leg.id] = in_body
    for key, leg, _ in items:
        _check_keys(key, leg, file)
        for field in ("condition", "set_condition"):
            name = getattr(leg, field)
            if name and name not in conds:
                known = ", ".join(sorted(conds)) or "none declared"
                raise ConfigError(
                    file,
                    f"{key}.{field}",
                    name,
                    f"a condition declared in [conditions] ({known}){did_you_mean(name, conds)}",
                )
        targets = [("next", leg.next)] if leg.next else []
        targets += [(f"branches[{i}]", t) for i, t in enumerate(leg.branches)]
        targets += [("default", leg.default)] if leg.default else []
        for field, target in targets:
            if target not in ids:
                raise ConfigError(
                    file,
                    f"{key}.{field}",
                    target,
                    f"the id of a leg in this plan{did_you_mean(target, ids)}",
                )
            if ids[target] and leg.kind == "branch":
                raise ConfigError(
                    file, f"{key}.{field}", target, "a leg outside loop bodies (single entry)"
                )
        if leg.kind == "loop" and leg.bound == 0 and not leg.condition:
            raise ConfigError(
                file, f"{key}.bound", 0, "a bound >= 1 or a condition (an unbounded loop)"
            )
        if leg.kind == "HC" and leg.laps == 0 and not leg.condition:
            raise ConfigError(file, f"{key}.laps", 0, "laps >= 1 or a condition (unbounded hold)")
        if leg.kind in HOLDS and leg.d1_m < leg.d2_m:
            raise ConfigError(
                file, f"{key}.d1_m", leg.d1_m, f"at least d2_m ({leg.d2_m}): a racetrack"
            )
        for dim in ("d2_m", "width_m", "length_m", "separation_m", "radius_m"):
            if dim in REQUIRED.get(leg.kind, ()) and getattr(leg, dim) <= 0.0:
                raise ConfigError(file, f"{key}.{dim}", getattr(leg, dim), "a value > 0")
        if leg.kind == "lawnmower" and leg.separation_m > leg.width_m:
            raise ConfigError(
                file, f"{key}.separation_m", leg.separation_m, f"at most width_m ({leg.width_m})"
            )
        if leg.kind == "loop" and any(b.kind in ("takeoff", "land") for b in leg.body):
            raise ConfigError(file, f"{key}.body", "takeoff/land", "flying legs only in a loop")


def _check_keys(key: str, leg: Leg, file: str) -> None:
    allowed = ALLOWED[leg.kind] | COMMON
    defaults = Leg(kind=leg.kind)
    for name in Leg.__dataclass_fields__:
        if name not in allowed and getattr(leg, name) != getattr(defaults, name):
            raise ConfigError(
                file, f"{key}.{name}", getattr(leg, name), f"no {name} on a {leg.kind} leg"
            )
    for name in REQUIRED.get(leg.kind, ()):
        if getattr(leg, name) in ((), None, ""):
            raise ConfigError(file, f"{key}.{name}", None, f"a value: a {leg.kind} leg needs it")
    if len(leg.to) == 3 and leg.altitude_m is not None and leg.kind != "HA":
        raise ConfigError(
            file, f"{key}.altitude_m", leg.altitude_m, "no altitude_m when `to` has an altitude"
        )
    if leg.kind in ("IF", "DF", "TF") and not leg.to:
        raise ConfigError(file, f"{key}.to", None, f"a fix: a {leg.kind} leg needs it")
