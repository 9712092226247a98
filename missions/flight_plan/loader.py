"""The `[flight_plan]` section and loading a scenario's plans: files or inline, geographic fixes
moved into the local frame, and the checks that need the airframe (speeds, turn radii).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.geo import wgs84_to_enu
from skyswarm.core.resources import is_file
from skyswarm.core.schema import ConfigError, param
from skyswarm.missions.flight_plan import geometry as geo
from skyswarm.missions.flight_plan.cycles import check_cycles
from skyswarm.missions.flight_plan.plan import Leg, Plan, parse_plan, read_plan, walk

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig


@dataclass(frozen=True)
class FlightPlanConfig:
    plan: str = param("", "plan file every UAV flies, relative to the scenario")
    plans: tuple[str, ...] = param((), "one plan file per UAV, in agent order (instead of plan)")
    group_sizes: tuple[int, ...] = param(
        (), "with plans: UAVs flying each plan, in agent order (groups); empty: one each", ge=1
    )
    inline: Any = param(None, "a plan written in the scenario: the [flight_plan.inline] table")
    period_s: float = param(0.05, "executor period, s", gt=0.0, period=True)
    window: int = param(3, "legs resolved ahead of the autopilot, current one included", ge=1)
    bank_deg: float = param(
        30.0, "bank of fly-by turns; sets the smallest radius, deg", gt=0, lt=60
    )
    lookahead_s: float = param(
        0.8, "cross-track correction distance, as time at leg speed, s", gt=0
    )
    lead_s: float = param(0.25, "arcs are steered by the tangent this far ahead, s", ge=0.0)

    def validate(self, path: str, file: str) -> None:
        given = [k for k in ("plan", "plans", "inline") if getattr(self, k) not in ("", (), None)]
        if len(given) != 1:
            raise ConfigError(
                file, path, given, "exactly one of plan, plans, inline (the plan to fly)"
            )
        if self.group_sizes and len(self.group_sizes) != len(self.plans):
            raise ConfigError(
                file,
                f"{path}.group_sizes",
                list(self.group_sizes),
                f"one size per file in plans ({len(self.plans)})",
            )


def load_plans(scenario: ScenarioConfig, n_agents: int) -> list[tuple[Plan, str]]:
    """(plan, file it came from) for each of `n_agents` UAVs, localised and fully checked;
    with `group_sizes`, the first group_sizes[0] agents fly plans[0], the next plans[1], ..."""
    cfg: FlightPlanConfig = scenario.section("flight_plan")
    base = scenario.base_dir
    if cfg.inline is not None:
        one = [(parse_plan(cfg.inline, "flight_plan.inline", scenario.file), scenario.file)]
    else:
        names = [cfg.plan] if cfg.plan else list(cfg.plans)
        if cfg.group_sizes and sum(cfg.group_sizes) != n_agents:
            raise ConfigError(
                scenario.file,
                "flight_plan.group_sizes",
                list(cfg.group_sizes),
                f"sizes adding up to the {n_agents} agents",
            )
        if cfg.plans and not cfg.group_sizes and len(cfg.plans) not in (1, n_agents):
            raise ConfigError(
                scenario.file,
                "flight_plan.plans",
                list(cfg.plans),
                f"1 or {n_agents} plan files (one per agent)",
            )
        one = []
        for i, name in enumerate(names):
            path = base / name
            if not is_file(path):  # before resolve(): a NUL in the name raises there
                key = "flight_plan.plan" if cfg.plan else f"flight_plan.plans[{i}]"
                raise ConfigError(scenario.file, key, name, f"an existing plan file ({path})")
            path = path.resolve()
            one.append((read_plan(path), str(path)))
    uav = scenario.section("uav").load(base)
    out = []
    for plan, file in one:
        key = "flight_plan.inline" if cfg.inline is not None else ""
        check_cycles(plan, key, file)  # no cycle of zero-length legs (the fixes as written)
        plan = localise(plan, tuple(scenario.geo.origin), key, file)
        rf_checks(plan, key, file)
        check_flight(plan, cfg, uav, scenario, key, file)
        out.append((plan, file))
    if cfg.group_sizes:
        return [item for item, size in zip(out, cfg.group_sizes) for _ in range(size)]
    return out * n_agents if len(out) == 1 else out


def _k(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def localise(plan: Plan, origin: tuple[float, ...], path: str, file: str) -> Plan:
    """Fixes and centres of a `geo = true` plan as local x, y(, z) m."""
    if not plan.geo:
        return plan
    if not origin:
        raise ConfigError(
            file, _k(path, "geo"), True, "a scenario with [geo] origin = [lat, lon, alt]"
        )

    def point(values: tuple[float, ...], key: str) -> tuple[float, ...]:
        if not values:
            return values
        lat, lon = values[0], values[1]
        if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
            raise ConfigError(file, key, list(values), "[lat, lon(, alt)] in degrees")
        alt = values[2] if len(values) == 3 else origin[2]
        e = wgs84_to_enu(np.array([[lat, lon, alt]]), origin)[0]
        if not np.isfinite(e[:2]).all():
            raise ConfigError(file, key, list(values), "a place less than 90 deg from [geo] origin")
        return (
            (float(e[0]), float(e[1]), float(e[2]))
            if len(values) == 3
            else (float(e[0]), float(e[1]))
        )

    def legs(items: tuple[Leg, ...], key: str) -> tuple[Leg, ...]:
        return tuple(
            replace(
                leg,
                to=point(leg.to, f"{key}[{i}].to"),
                center=point(leg.center, f"{key}[{i}].center"),
                body=legs(leg.body, f"{key}[{i}].body"),
            )
            for i, leg in enumerate(items)
        )

    stages = tuple(
        replace(s, legs=legs(s.legs, _k(path, f"stages[{i}].legs")))
        for i, s in enumerate(plan.stages)
    )
    emergency = tuple(
        replace(e, legs=legs(e.legs, _k(path, f"emergency[{i}].legs")))
        for i, e in enumerate(plan.emergency)
    )
    return replace(plan, stages=stages, emergency=emergency)


def check_flight(
    plan: Plan, cfg: FlightPlanConfig, uav: Any, scenario: ScenarioConfig, path: str, file: str
) -> None:
    """Speeds the airframe may fly, turns it can make at the bank limit, a battery for
    emergency plans."""
    ctl = uav.control
    g = scenario.simulation.gravity
    if cfg.bank_deg > ctl.max_tilt_deg:
        raise ConfigError(
            scenario.file,
            "flight_plan.bank_deg",
            cfg.bank_deg,
            f"at most the airframe's control max_tilt_deg ({ctl.max_tilt_deg})",
        )
    if plan.speed_m_s > ctl.max_speed_m_s:
        raise ConfigError(
            file,
            _k(path, "speed_m_s"),
            plan.speed_m_s,
            f"at most {ctl.max_speed_m_s} m/s (airframe)",
        )
    if plan.emergency and not uav.battery.enabled:
        raise ConfigError(
            file,
            _k(path, "emergency"),
            plan.emergency[0].name,
            "a scenario with [uav.battery] enabled = true (endurance selects the plan)",
        )
    items = [
        it for i, s in enumerate(plan.stages) for it in walk(s.legs, _k(path, f"stages[{i}].legs"))
    ]
    items += [
        it
        for i, e in enumerate(plan.emergency)
        for it in walk(e.legs, _k(path, f"emergency[{i}].legs"))
    ]
    for key, leg, _ in items:
        v = leg.speed_m_s or plan.speed_m_s
        if v > ctl.max_speed_m_s:
            raise ConfigError(file, f"{key}.speed_m_s", v, f"at most {ctl.max_speed_m_s} m/s")
        r_min = geo.turn_radius(v, cfg.bank_deg, g if g > 0 else 9.81)
        radius, what = _radius(leg, plan)
        if radius is not None and radius < r_min * (1 - 1e-9):
            raise ConfigError(
                file,
                f"{key}.{what}",
                round(radius * (2 if what == "d2_m" else 1), 3),
                f"a turn radius >= {r_min:.2f} m (speed {v:g} m/s at {cfg.bank_deg:g} deg bank)",
            )


def _radius(leg: Leg, plan: Plan) -> tuple[float | None, str]:
    """The tightest radius a leg asks for, and the key that sets it."""
    if leg.kind in ("HA", "HF", "HC"):
        return leg.d2_m / 2, "d2_m"
    if leg.kind == "figure8":
        return leg.radius_m, "radius_m"
    if leg.kind == "lawnmower":
        return geo.lawnmower_spacing(leg.width_m, leg.separation_m) / 2, "separation_m"
    if leg.kind == "RF" and leg.center and leg.to:
        return math.hypot(leg.to[0] - leg.center[0], leg.to[1] - leg.center[1]), "center"
    return None, ""


def rf_checks(plan: Plan, path: str, file: str) -> None:
    """An RF leg starts at the previous leg's fix: both fixes on one circle about the centre."""
    for i, stage in enumerate(plan.stages):
        prev: Leg | None = None
        for j, leg in enumerate(stage.legs):
            if leg.kind == "RF":
                if prev is None or not prev.to or prev.kind in ("lawnmower", "figure8"):
                    raise ConfigError(
                        file,
                        _k(path, f"stages[{i}].legs[{j}].kind"),
                        "RF",
                        "an RF leg after a leg ending at a fix in the same stage",
                    )
                r0 = math.hypot(prev.to[0] - leg.center[0], prev.to[1] - leg.center[1])
                r1 = math.hypot(leg.to[0] - leg.center[0], leg.to[1] - leg.center[1])
                if abs(r1 - r0) > max(0.5, 0.01 * r0):
                    raise ConfigError(
                        file,
                        _k(path, f"stages[{i}].legs[{j}].to"),
                        list(leg.to),
                        f"a fix {r0:.2f} m from the centre like the arc start (it is {r1:.2f} m)",
                    )
            prev = leg
