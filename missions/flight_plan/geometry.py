"""Flyable geometry: lines and arcs, and the patterns legs turn into.

Everything is in the scenario's ENU frame, metres; headings in the plan are compass degrees.
A path is a list of segments (`Line`, `Arc`), each tagged with the leg it belongs to; a
segment's `project(p)` gives the along-track distance, the signed cross-track error (positive:
left of the track) and the unit tangent there, which is all the executor's guidance needs.

- `turn_radius(v, bank)`: a coordinated turn, R = v^2 / (g tan bank).
- `fillet`: fly-by turn anticipation between two lines (an arc tangent to both, starting
  R tan(dpsi/2) before the fix); `fly_over_turn`: pass the fix, turn at R until the next fix
  is ahead, then a line to it.
- `racetrack` (holds), `lawnmower` (passes joined by half circles outside the area) and
  `figure8` (two circles through the point, flown in opposite senses).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

TWO_PI = 2.0 * math.pi


def turn_radius(speed_m_s: float, bank_deg: float, g: float = 9.81) -> float:
    """Radius of a level coordinated turn at `speed_m_s` and `bank_deg`, m."""
    return speed_m_s**2 / (g * math.tan(math.radians(bank_deg)))


def course_vector(course_deg: float) -> np.ndarray:
    """Unit (east, north) of a compass course."""
    c = math.radians(course_deg)
    return np.array([math.sin(c), math.cos(c)])


def _left(u: np.ndarray) -> np.ndarray:
    return np.array([-u[1], u[0]])


@dataclass(frozen=True)
class Projection:
    s: float  # m along the segment from its start (may be < 0 or > length)
    cross: float  # m, signed: positive left of the track
    tangent: np.ndarray  # (2,) unit direction of travel
    z: float  # m, altitude of the track there


@dataclass(frozen=True, eq=False)
class Line:
    a: np.ndarray  # (3,) start x, y, z
    b: np.ndarray  # (3,) end
    leg: int = -1  # index of the leg instance it belongs to
    speed: float = 5.0  # m/s

    @property
    def length(self) -> float:
        return float(math.hypot(self.b[0] - self.a[0], self.b[1] - self.a[1]))

    @property
    def tangent_start(self) -> np.ndarray:
        d = self.b[:2] - self.a[:2]
        n = float(np.hypot(*d))
        return d / n if n > 0 else np.array([1.0, 0.0])

    tangent_end = tangent_start

    def point(self, s: float) -> np.ndarray:
        f = min(max(s / self.length, 0.0), 1.0) if self.length > 0 else 1.0
        return self.a + f * (self.b - self.a)

    def project(self, p: np.ndarray) -> Projection:
        u = self.tangent_start
        d = p[:2] - self.a[:2]
        s = float(d @ u)
        return Projection(s, float(d @ _left(u)), u, float(self.point(s)[2]))

    def sample(self, step: float) -> np.ndarray:
        n = max(1, math.ceil(self.length / step))
        return np.array([self.point(self.length * i / n) for i in range(n + 1)])


@dataclass(frozen=True, eq=False)
class Arc:
    center: np.ndarray  # (2,) m
    radius: float  # m
    theta0: float  # rad, ENU angle of the start point about the centre
    sweep: float  # rad, signed: > 0 counter-clockwise (left turn), |sweep| <= pi + margin
    z0: float
    z1: float
    leg: int = -1
    speed: float = 5.0

    @property
    def length(self) -> float:
        return self.radius * abs(self.sweep)

    @property
    def sense(self) -> float:
        return 1.0 if self.sweep >= 0 else -1.0

    def _tangent(self, theta: float) -> np.ndarray:
        return self.sense * np.array([-math.sin(theta), math.cos(theta)])

    @property
    def tangent_start(self) -> np.ndarray:
        return self._tangent(self.theta0)

    @property
    def tangent_end(self) -> np.ndarray:
        return self._tangent(self.theta0 + self.sweep)

    def point(self, s: float) -> np.ndarray:
        s = min(max(s, 0.0), self.length)
        th = self.theta0 + self.sense * s / self.radius
        f = s / self.length if self.length > 0 else 1.0
        return np.array(
            [
                self.center[0] + self.radius * math.cos(th),
                self.center[1] + self.radius * math.sin(th),
                self.z0 + f * (self.z1 - self.z0),
            ]
        )

    def project(self, p: np.ndarray) -> Projection:
        d = p[:2] - self.center
        rho = float(np.hypot(*d))
        phi = math.atan2(d[1], d[0])
        ang = ((phi - self.theta0) * self.sense) % TWO_PI  # 0..2pi along the sense of travel
        rest = TWO_PI - abs(self.sweep)
        if ang > abs(self.sweep) + rest / 2:
            ang -= TWO_PI  # before the start
        s = ang * self.radius
        cross = (self.radius - rho) * self.sense
        return Projection(s, cross, self._tangent(self.theta0 + self.sense * ang), self.point(s)[2])

    def sample(self, step: float) -> np.ndarray:
        n = max(2, math.ceil(self.length / step))
        return np.array([self.point(self.length * i / n) for i in range(n + 1)])


Segment = Line | Arc


def line(a, b, leg: int = -1, speed: float = 5.0) -> Line:
    return Line(np.asarray(a, float), np.asarray(b, float), leg, speed)


def arc_through(center, start, sweep: float, z0: float, z1: float, leg: int, speed: float) -> Arc:
    """An arc about `center` from `start` (x, y) turning by `sweep` rad (> 0: left)."""
    c = np.asarray(center, float)[:2]
    d = np.asarray(start, float)[:2] - c
    return Arc(c, float(np.hypot(*d)), math.atan2(d[1], d[0]), sweep, z0, z1, leg, speed)


def split_arc(arc: Arc) -> list[Arc]:
    """Arcs of at most pi each (projection needs a gap to tell before-start from past-end)."""
    n = max(1, math.ceil(abs(arc.sweep) / (math.pi * 1.0001)))
    out = []
    for i in range(n):
        th = arc.theta0 + arc.sweep * i / n
        z0 = arc.z0 + (arc.z1 - arc.z0) * i / n
        z1 = arc.z0 + (arc.z1 - arc.z0) * (i + 1) / n
        out.append(replace(arc, theta0=th, sweep=arc.sweep / n, z0=z0, z1=z1))
    return out


def rf_arc(start, end, center, direction: str, leg: int, speed: float) -> list[Arc]:
    """Constant-radius arc from `start` about `center` to the bearing of `end` (RF leg)."""
    c = np.asarray(center, float)[:2]
    a0 = math.atan2(start[1] - c[1], start[0] - c[0])
    a1 = math.atan2(end[1] - c[1], end[0] - c[0])
    sense = 1.0 if direction == "left" else -1.0
    sweep = ((a1 - a0) * sense) % TWO_PI
    sweep = sweep if sweep > 1e-9 else TWO_PI
    return split_arc(arc_through(c, start, sense * sweep, start[2], end[2], leg, speed))


def fillet(first: Line, second: Line, radius: float) -> tuple[Line, Arc | None, Line]:
    """Fly-by: trim both lines and join them with an arc tangent to both (radius shrunk so the
    arc starts no earlier than half of either line)."""
    u1, u2 = first.tangent_end, second.tangent_start
    turn = math.atan2(u1[0] * u2[1] - u1[1] * u2[0], float(u1 @ u2))  # signed, > 0 left
    if abs(turn) < 1e-3 or abs(turn) > math.pi - 1e-3:
        return first, None, second
    d = radius * math.tan(abs(turn) / 2)
    d = min(d, 0.5 * first.length, 0.5 * second.length)
    r = d / math.tan(abs(turn) / 2)
    fix = first.b
    t1 = fix[:2] - u1 * d
    t2 = fix[:2] + u2 * d
    center = t1 + _left(u1) * r * math.copysign(1.0, turn)
    z1 = float(first.point(first.length - d)[2])
    z2 = float(second.point(d)[2])
    a = line(first.a, (*t1, z1), first.leg, first.speed)
    arc = arc_through(center, t1, turn, z1, z2, first.leg, first.speed)
    b = line((*t2, z2), second.b, second.leg, second.speed)
    return a, arc, b


def fly_over_turn(inbound: np.ndarray, nxt: Line, radius: float) -> list[Segment]:
    """After passing the fix `nxt.a` heading `inbound`: turn at `radius` until `nxt.b` is
    ahead, then fly straight to it. The next fix inside the turn circle: a straight line."""
    fix, target = nxt.a, nxt.b
    to = target[:2] - fix[:2]
    cross = inbound[0] * to[1] - inbound[1] * to[0]
    sense = 1.0 if cross >= 0 else -1.0
    o = fix[:2] + _left(inbound) * radius * sense
    dist = float(np.hypot(*(target[:2] - o)))
    if dist <= radius * 1.001 or float(np.hypot(*to)) < 1e-6:
        return [nxt]
    bearing = math.atan2(target[1] - o[1], target[0] - o[0])
    tangent_angle = bearing - sense * math.acos(radius / dist)
    a0 = math.atan2(fix[1] - o[1], fix[0] - o[0])
    sweep = ((tangent_angle - a0) * sense) % TWO_PI
    if sweep < 1e-3 or sweep > TWO_PI - 1e-3:
        return [nxt]
    t = o + radius * np.array([math.cos(tangent_angle), math.sin(tangent_angle)])
    arc = arc_through(o, fix, sense * sweep, fix[2], fix[2], nxt.leg, nxt.speed)
    return [*split_arc(arc), line((*t, fix[2]), target, nxt.leg, nxt.speed)]


def racetrack(
    fix,
    course_deg: float,
    direction: str,
    d1: float,
    d2: float,
    z0: float,
    z1: float,
    leg: int,
    speed: float,
) -> list[Segment]:
    """One lap from the fix (just before the first turn), inbound on `course_deg`: half turn,
    outbound straight of d1, half turn, inbound straight back to the fix. z goes z0 -> z1."""
    u = course_vector(course_deg)
    side = -1.0 if direction == "right" else 1.0
    n = _left(u) * side
    r = d2 / 2.0
    f = np.asarray(fix, float)[:2]
    lap = 2 * math.pi * r + 2 * d1

    def z(dist: float) -> float:
        return z0 + (z1 - z0) * dist / lap

    p1 = f + 2 * r * n
    p2 = p1 - d1 * u
    p3 = f - d1 * u
    quarter = math.pi * r
    return [
        arc_through(f + r * n, f, side * math.pi, z0, z(quarter), leg, speed),
        line((*p1, z(quarter)), (*p2, z(quarter + d1)), leg, speed),
        arc_through(
            p2 - r * n, p2, side * math.pi, z(quarter + d1), z(2 * quarter + d1), leg, speed
        ),
        line((*p3, z(2 * quarter + d1)), (*f, z1), leg, speed),
    ]


def lawnmower_passes(width: float, separation: float) -> np.ndarray:
    """Offsets of the passes across the width: the first and last half a separation in, the
    rest evenly spaced no more than `separation` apart."""
    n = max(1, math.ceil(width / separation - 1e-9))
    if n == 1:
        return np.array([width / 2])
    return np.linspace(separation / 2, width - separation / 2, n)


def lawnmower_spacing(width: float, separation: float) -> float:
    p = lawnmower_passes(width, separation)
    return float(p[1] - p[0]) if len(p) > 1 else separation


def lawnmower(
    corner,
    course_deg: float,
    width: float,
    length: float,
    separation: float,
    z: float,
    leg: int,
    speed: float,
) -> list[Segment]:
    """Passes along `course_deg`, stepping to its right, joined by half circles outside the
    rectangle whose corner is `corner`; starts at the first pass's beginning."""
    u = course_vector(course_deg)
    right = -_left(u)
    c = np.asarray(corner, float)[:2]
    out: list[Segment] = []
    offsets = lawnmower_passes(width, separation)
    for i, off in enumerate(offsets):
        a, b = c + right * off, c + right * off + u * length
        if i % 2:
            a, b = b, a
        if out:
            prev = out[-1]
            mid = (prev.b[:2] + a) / 2
            sense = -1.0 if i % 2 else 1.0  # right turn at the far end, left at the near end
            out.append(arc_through(mid, prev.b[:2], sense * math.pi, z, z, leg, speed))
        out.append(line((*a, z), (*b, z), leg, speed))
    return out


def figure8(
    point, course_deg: float, radius: float, z: float, leg: int, speed: float
) -> list[Segment]:
    """Through `point` along `course_deg`: a full left circle, then a full right circle."""
    u = course_vector(course_deg)
    p = np.asarray(point, float)[:2]
    left = arc_through(p + _left(u) * radius, p, TWO_PI, z, z, leg, speed)
    right = arc_through(p - _left(u) * radius, p, -TWO_PI, z, z, leg, speed)
    return [*split_arc(left), *split_arc(right)]


def polyline(path: list[Segment], step: float = 1.0) -> np.ndarray:
    """(M, 3) points along a path, for overlays and exports."""
    if not path:
        return np.zeros((0, 3))
    return np.concatenate([seg.sample(step) for seg in path])
