"""The base station's side of fire tracking: its perimeter map and the segments it hands out.

The base station knows the fuel map and grid geometry (the terrain data a fire service has) and
only what the UAVs report by radio (`FireReport`: one camera frame each). From the reports it
keeps, per cell, when it was last in view and whether it has ever been seen hot. Its burnt area
is the ever-hot cells with the holes they enclose filled (what burnt before anyone looked, and
unburnt islands); its known perimeter is the cells of that area with a burnable 4-neighbour
outside it.

Segments. The perimeter is cut, around the centroid of the burnt area, into as many angular
arcs as there are UAVs it heard within `timeout_s`, each holding the same length of the line
through the perimeter cells in angular order (a stretch nobody has seen yet counts by its span,
not by its few known cells); with `spotters` > 0, the highest ids heard get no arc and search
on for spot fires. UAVs are matched to arcs in angular order, the rotation that moves them
least. The base re-balances (a new `Assignment` broadcast on the long-range link) when the fire
is first seen, when the set of UAVs it hears changes (a loss, or a UAV coming back), when the
known perimeter has grown by `growth` since the last assignment, and every `refresh_s`.

Staleness: the known perimeter is cut into `map_segments` equal angles around the centroid (36:
pieces of about 10 m around a fire of 60 m radius); the age of a piece is the time since any of
its cells was last in view, and the map's staleness is the age of the oldest piece.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from skyswarm.missions.wildfire.fire import OFFSETS, _slices
from skyswarm.missions.wildfire.thermal import Frame

TWO_PI = 2.0 * math.pi


@dataclass(frozen=True, slots=True)
class FireReport:
    """A UAV's camera frame for the base station (long range)."""

    sender: int
    time_s: float
    position: tuple[float, float]  # m, the sender's own estimate
    window: tuple[int, int, int, int]
    bits: bytes  # np.packbits of the (j1 - j0, i1 - i0) hot mask


@dataclass(frozen=True, slots=True)
class Arc:
    """One UAV's segment of the perimeter: angles [lo, lo + width) around the centroid (rad,
    ENU), and the perimeter point in its middle (m)."""

    uav: int
    lo: float
    width: float
    target: tuple[float, float]

    def offset(self, angle: float) -> float:
        """Angle relative to `lo`, mapped to (-(2 pi - width) / 2, width + (2 pi - width) / 2]."""
        rel = (angle - self.lo) % TWO_PI
        return rel - TWO_PI if rel > self.width + (TWO_PI - self.width) / 2 else rel


@dataclass(frozen=True, slots=True)
class Assignment:
    """The base station's segments (long-range broadcast)."""

    seq: int
    time_s: float
    centroid: tuple[float, float]  # m
    arcs: tuple[Arc, ...]

    def arc_of(self, uav: int) -> Arc | None:
        return next((a for a in self.arcs if a.uav == uav), None)


def report_of(sender: int, position: np.ndarray, frame: Frame) -> FireReport:
    return FireReport(
        sender,
        frame.time_s,
        (float(position[0]), float(position[1])),
        frame.window,
        np.packbits(frame.hot.ravel()).tobytes(),
    )


class FireMap:
    """What the base station knows: (ny, nx) last-seen times, ever-hot cells, first-hot times."""

    def __init__(self, shape: tuple[int, int], fuel: np.ndarray, centres: np.ndarray) -> None:
        self.shape = shape
        self.burnable = fuel > 0.0
        self.centres = centres  # (ny, nx, 2) m
        self.last_seen = np.full(shape, -np.inf)  # s
        self.ever_hot = np.zeros(shape, dtype=bool)
        self.first_hot_s = np.full(shape, np.nan)
        self.version = 0

    def add(self, r: FireReport, now_s: float) -> None:
        j0, j1, i0, i1 = r.window
        n = (j1 - j0) * (i1 - i0)
        if n == 0:
            return
        hot = np.unpackbits(np.frombuffer(r.bits, dtype=np.uint8), count=n).astype(bool)
        hot = hot.reshape(j1 - j0, i1 - i0)
        seen = self.last_seen[j0:j1, i0:i1]
        np.maximum(seen, r.time_s, out=seen)
        fresh = hot & ~self.ever_hot[j0:j1, i0:i1]
        if fresh.any():
            self.ever_hot[j0:j1, i0:i1] |= hot
            self.first_hot_s[j0:j1, i0:i1][fresh] = now_s
            self.version += 1

    def burnt_area(self) -> np.ndarray:
        """Bool (ny, nx): the ever-hot cells with the holes they enclose filled (cells that
        burnt before anyone looked, unburnt islands): the area inside the known perimeter."""
        return ndimage.binary_fill_holes(self.ever_hot)

    def perimeter(self) -> np.ndarray:
        """Bool (ny, nx): cells of the burnt area with a burnable 4-neighbour outside it."""
        area = self.burnt_area()
        fresh = self.burnable & ~area
        near = np.zeros(self.shape, dtype=bool)
        for dj, di in OFFSETS[4]:
            tgt, src = _slices(dj, di)
            near[src] |= fresh[tgt]
        return area & near

    def centroid(self) -> np.ndarray:
        return self.centres[self.burnt_area()].mean(axis=0)

    def segment_ages(self, centroid: np.ndarray, bins: int, now_s: float) -> np.ndarray:
        """(K,) s: the perimeter cut into `bins` equal angles around `centroid`; per non-empty
        piece, the time since any of its cells was last in view."""
        per = self.perimeter()
        if not per.any():
            return np.zeros(0)
        xy = self.centres[per]
        ang = np.arctan2(xy[:, 1] - centroid[1], xy[:, 0] - centroid[0]) % TWO_PI
        piece = np.minimum((ang / TWO_PI * bins).astype(int), bins - 1)
        newest = np.full(bins, -np.inf)
        np.maximum.at(newest, piece, self.last_seen[per])
        used = np.isin(np.arange(bins), piece)
        return now_s - newest[used]


def plan_arcs(
    per_xy: np.ndarray, centroid: np.ndarray, uavs: dict[int, np.ndarray], ref: float
) -> tuple[Arc, ...]:
    """Arcs of equal length of the perimeter points (K, 2) around `centroid`, one per UAV
    (id -> (2,) position); arc boundaries start from angle `ref` (the previous first one).

    The length is measured along the perimeter line through the points in angular order, each
    step between neighbours counted as r dphi (mean radius, m, times the angle between them,
    rad): a stretch of the front nobody has seen yet counts by its span, not as the few cells
    known there, so the side of the fire the search saw least is not left to one UAV whose arc
    is wider than its camera's footprint. Evenly spread points: equal counts, equal angles."""
    ids = sorted(uavs)
    n = len(ids)
    if n == 0 or len(per_xy) == 0:
        return ()
    rel_xy = per_xy - centroid
    ang = np.arctan2(rel_xy[:, 1], rel_xy[:, 0])
    by_angle = np.argsort((ang - ref) % TWO_PI, kind="stable")
    rel = ((ang - ref) % TWO_PI)[by_angle]
    radius = np.hypot(rel_xy[:, 0], rel_xy[:, 1])[by_angle]
    # the closed line: back to the first point one turn on; cum[i] m along it at angle ends[i]
    ends = np.append(rel, rel[0] + TWO_PI)
    steps = np.diff(ends) * (radius + np.roll(radius, -1)) / 2.0
    cum = np.concatenate([[0.0], np.cumsum(steps)])
    if cum[-1] <= 1e-9:  # a single point (or all at one angle): equal angles
        cum = ends - ends[0]
    at = np.interp(cum[-1] * np.arange(2 * n + 1) / (2 * n), cum, ends)  # cuts and middles
    starts = [float(at[2 * k]) if n > 1 else 0.0 for k in range(n)]
    widths = [
        ((starts[(k + 1) % n] - starts[k]) % TWO_PI) or (TWO_PI if n == 1 else 0.0)
        for k in range(n)
    ]
    r_at = np.interp(at, ends, np.append(radius, radius[0]))
    mids = []
    for k in range(n):  # the point of the perimeter line halfway along the arc
        mid, r = float(at[2 * k + 1]), float(r_at[2 * k + 1])
        point = centroid + r * np.array([math.cos(ref + mid), math.sin(ref + mid)])
        mids.append((ref + mid, point))
    # match UAVs (in angular order) to arcs (in angular order): the rotation moving them least
    u_ang = {i: math.atan2(p[1] - centroid[1], p[0] - centroid[0]) for i, p in uavs.items()}
    order = sorted(ids, key=lambda i: (u_ang[i] - ref) % TWO_PI)
    best, best_cost = 0, math.inf
    for r in range(n):
        cost = sum(
            abs((u_ang[order[(k + r) % n]] - mids[k][0] + math.pi) % TWO_PI - math.pi)
            for k in range(n)
        )
        if cost < best_cost - 1e-12:
            best, best_cost = r, cost
    return tuple(
        Arc(
            order[(k + best) % n],
            (ref + starts[k]) % TWO_PI,
            widths[k],
            (float(mids[k][1][0]), float(mids[k][1][1])),
        )
        for k in range(n)
    )
