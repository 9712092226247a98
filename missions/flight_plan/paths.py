"""A leg's geometry and the junctions between legs (fly-by fillets, fly-over turns).

`leg_geometry` turns one leg (at a hold lap) flown from a start point into segments of
geometry.py; `join` smooths the junction of two consecutive legs' lines. Both read the leg's
speed, fix and the turn radius from the UAV's `LegShapes` (route.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.missions.flight_plan import geometry as geo
from skyswarm.missions.flight_plan.plan import Leg

if TYPE_CHECKING:
    from skyswarm.missions.flight_plan.route import LegShapes


def leg_geometry(
    leg: Leg, lap: int, start: np.ndarray, shapes: LegShapes, tag: int
) -> list[geo.Segment]:
    """Segments of one leg from `start`; holds give one lap (with an entry line on lap 0)."""
    v = shapes.speed(leg)
    if leg.kind in ("takeoff",):
        return []
    fix = shapes.fix(leg) if leg.to else start
    entry: list[geo.Segment] = []
    if leg.kind in ("HA", "HF", "HC", "lawnmower", "figure8") and lap == 0:
        first = fix
        if leg.kind == "lawnmower":
            first = geo.lawnmower(
                fix, leg.course_deg, leg.width_m, leg.length_m, leg.separation_m, fix[2], tag, v
            )[0].a
        if leg.kind == "HA":
            first = np.array([fix[0], fix[1], start[2]])
        if math.hypot(first[0] - start[0], first[1] - start[1]) > 0.5:
            entry = [geo.line(start, first, tag, v)]
    if leg.kind in ("IF", "DF", "TF", "land"):
        if math.hypot(fix[0] - start[0], fix[1] - start[1]) < 1e-6:
            return []
        return [geo.line(start, fix, tag, v)]
    if leg.kind == "RF":
        return list(geo.rf_arc(start, fix, leg.center, leg.direction, tag, v))
    if leg.kind in ("HF", "HC"):
        return entry + geo.racetrack(
            fix, leg.course_deg, leg.direction, leg.d1_m, leg.d2_m, fix[2], fix[2], tag, v
        )
    if leg.kind == "HA":
        z0 = start[2]
        lap_len = math.pi * leg.d2_m + 2 * leg.d1_m
        per_lap = leg.climb_rate_m_s * lap_len / v
        n = max(1, math.ceil(abs(fix[2] - z0) / per_lap - 1e-9))
        out = list(entry)
        for i in range(n):
            za, zb = z0 + (fix[2] - z0) * i / n, z0 + (fix[2] - z0) * (i + 1) / n
            out += geo.racetrack(
                fix, leg.course_deg, leg.direction, leg.d1_m, leg.d2_m, za, zb, tag, v
            )
        return out
    if leg.kind == "lawnmower":
        return entry + geo.lawnmower(
            fix, leg.course_deg, leg.width_m, leg.length_m, leg.separation_m, fix[2], tag, v
        )
    if leg.kind == "figure8":
        return entry + geo.figure8(fix, leg.course_deg, leg.radius_m, fix[2], tag, v)
    return []


def join(
    path: list[geo.Segment], segs: list[geo.Segment], prev: Leg | None, shapes: LegShapes
) -> tuple[list[geo.Segment], list[geo.Segment]]:
    """Smooth the junction of two legs' lines: fly-by fillet or fly-over turn."""
    last, first = path[-1], segs[0]
    if not (isinstance(last, geo.Line) and isinstance(first, geo.Line)):
        return path, segs
    if prev is not None and prev.fly_over:
        return path, join_fly_over(last.tangent_end, segs, shapes)
    a, arc, b = geo.fillet(last, first, shapes.radius(first.speed))
    return path[:-1] + [a] + ([arc] if arc is not None else []), [b, *segs[1:]]


def join_fly_over(
    inbound: np.ndarray, segs: list[geo.Segment], shapes: LegShapes
) -> list[geo.Segment]:
    first = segs[0]
    if not isinstance(first, geo.Line):
        return segs
    return geo.fly_over_turn(inbound, first, shapes.radius(first.speed)) + segs[1:]
