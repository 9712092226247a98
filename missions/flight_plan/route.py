"""The path ahead of one UAV: the legs of its window shaped and joined into one path.

The executor (executor.py) flies a window of legs: the current one and those the sequencer
predicts after it (program.py, `window`). `build_route` lays them end to end from the current
leg's start, each leg's geometry from paths.py with the junctions smoothed (fly-by fillets,
fly-over turns), and says where each leg ends and whether the UAV must stop where the path
ends (the plan ends, a land leg, a wait, or a takeoff further on). It reads nothing of the UAV
but where the leg starts, so the executor can throw a route away and build another whenever a
condition or a command changes what lies ahead.

`LegShapes` holds what shapes the legs for one UAV: a fix's altitude and a leg's speed (the
plan's defaults where the leg gives none) and the turn radius at the bank limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from skyswarm.missions.flight_plan import geometry as geo
from skyswarm.missions.flight_plan import program as pg
from skyswarm.missions.flight_plan.paths import join, join_fly_over, leg_geometry
from skyswarm.missions.flight_plan.plan import Leg, Plan


@dataclass(frozen=True)
class LegShapes:
    plan: Plan
    bank_deg: float  # deg, bank for fly-by and fly-over turns
    g: float  # m/s^2

    def fix_alt(self, leg: Leg) -> float:
        """Altitude m of the leg's fix (takeoff and HA: the altitude the leg climbs to)."""
        if leg.kind in ("takeoff", "HA") or leg.altitude_m is not None and len(leg.to) < 3:
            return float(leg.altitude_m if leg.altitude_m is not None else self.plan.altitude_m)
        if len(leg.to) == 3:
            return float(leg.to[2])
        return float(self.plan.altitude_m)

    def fix(self, leg: Leg) -> np.ndarray:
        """(3,) the leg's fix, ENU m."""
        return np.array([leg.to[0], leg.to[1], self.fix_alt(leg)])

    def speed(self, leg: Leg) -> float:
        """m/s along the leg."""
        return float(leg.speed_m_s or self.plan.speed_m_s)

    def radius(self, speed: float) -> float:
        """m, a coordinated turn at `speed` m/s and the bank limit."""
        return geo.turn_radius(speed, self.bank_deg, self.g)


class Route(NamedTuple):
    window: list[pg.Cursor]  # the legs laid out, the current one first
    path: list[geo.Segment]  # each tagged with its leg's place in the window (0: current)
    ends: list[np.ndarray]  # (3,) where each leg of the window ends, m
    stop_at_end: bool  # the UAV must stop where the path ends


def leg_segments(
    prog: pg.Program, cur: pg.Cursor, start: np.ndarray, tag: int, shapes: LegShapes
) -> list[geo.Segment]:
    """Raw geometry of the leg at `cur` flown from `start` (before fly-by fillets)."""
    leg = prog.instrs[cur.pc].leg
    assert leg is not None
    return leg_geometry(leg, cur.lap, start, shapes, tag)


def build_route(
    prog: pg.Program,
    cursor: pg.Cursor,
    conds: Mapping[str, int],
    legs: int,
    shapes: LegShapes,
    start: np.ndarray | None,
    inbound: tuple[np.ndarray, bool] | None,
) -> Route:
    """The current leg from `start` and the `legs` - 1 predicted after it, junctions smoothed.
    `inbound`: the direction the UAV left the previous leg in, and whether that leg's fix was
    flown over (then a fly-over turn leads onto the current leg)."""
    win = pg.window(prog, cursor, conds, legs)
    path: list[geo.Segment] = []
    ends = []
    stop = False
    for tag, cur in enumerate(win):
        kind = prog.instrs[cur.pc].kind
        if tag > 0 and kind in ("takeoff",):
            stop = True
            break
        segs = leg_segments(prog, cur, start, tag, shapes)
        if path and segs:
            path, segs = join(path, segs, prog.instrs[win[tag - 1].pc].leg, shapes)
        elif tag == 0 and inbound is not None and inbound[1] and segs:
            segs = join_fly_over(inbound[0], segs, shapes)
        path += segs
        start = segs[-1].point(segs[-1].length) if segs else start
        ends.append(np.asarray(start, float))
        if kind == "land":
            stop = True
            break
    stop_at_end = stop or len(win) < legs
    if not stop_at_end:
        nxt = pg.after(prog, win[-1], conds)
        stop_at_end = pg.finished(prog, nxt) or nxt.waiting
    return Route(win, path, ends, stop_at_end)
