"""Fire-front following: the SimUAV seed's line-fit rule, and the fit this mission uses instead.

The seed's rule (after Casbeer et al. 2005): take the burning cells in a square window around the
UAV, fit a straight line through their centres by linear interpolation (least squares y = a x +
b), intersect the line with the window's edges, and fly to the one of the two points that needs
the least change of heading.

Improvement used here: the line is fitted by total least squares (the principal axis of the
points: the direction of largest spread through their centroid) instead of y = a x + b.
Ordinary least squares measures errors in y only, so its line is biased towards horizontal and
degenerates for a front that runs north-south (all x equal: no fit at all, or an arbitrary slope
from one stray cell) — half of every closed front is steep in x. The principal axis treats x and
y alike, so the fitted direction does not depend on how the front is oriented on the grid
(`tests/missions/test_fire_follow.py` shows the seed's fit failing on a north-south front and
the principal axis recovering it).
"""

from __future__ import annotations

import math

import numpy as np

Line = tuple[np.ndarray, np.ndarray]  # (point (2,), unit direction (2,)), m


def fit_line_ols(xy: np.ndarray) -> Line | None:
    """The seed's fit: least squares y = a x + b through (K, 2) points; None if degenerate."""
    if len(xy) < 2:
        return None
    x, y = xy[:, 0], xy[:, 1]
    dx = x - x.mean()
    sxx = float(dx @ dx)
    if sxx < 1e-12:
        return None  # every point at the same x: y(x) does not exist
    a = float(dx @ (y - y.mean())) / sxx
    d = np.array([1.0, a]) / math.hypot(1.0, a)
    return np.array([x.mean(), y.mean()]), d


def fit_line_tls(xy: np.ndarray) -> Line | None:
    """Total least squares: the principal axis through the centroid of (K, 2) points."""
    if len(xy) < 2:
        return None
    c = xy.mean(axis=0)
    d = xy - c
    cov = d.T @ d
    if float(np.trace(cov)) < 1e-12:
        return None  # all points coincide
    w, v = np.linalg.eigh(cov)
    return c, v[:, int(np.argmax(w))]


def window_exits(line: Line, center: np.ndarray, half: float) -> np.ndarray | None:
    """(2, 2): the points where `line` crosses the edges of the square `center` +- `half` (m),
    in the order of the line's direction; None if it misses the square."""
    p, d = line
    lo, hi = -math.inf, math.inf
    for k in range(2):
        a, b = center[k] - half - p[k], center[k] + half - p[k]
        if abs(d[k]) < 1e-12:
            if a > 0.0 or b < 0.0:
                return None
            continue
        t0, t1 = sorted((a / d[k], b / d[k]))
        lo, hi = max(lo, t0), min(hi, t1)
    if lo > hi:
        return None
    return np.stack([p + lo * d, p + hi * d])


def least_turn(candidates: np.ndarray, position: np.ndarray, heading: np.ndarray) -> np.ndarray:
    """The candidate (K, 2) whose direction from `position` turns least from `heading` (2,)."""
    rel = candidates - position[:2]
    norms = np.linalg.norm(rel, axis=1)
    h = heading / max(float(np.linalg.norm(heading)), 1e-12)
    cos = (rel @ h) / np.maximum(norms, 1e-12)
    return candidates[int(np.argmax(cos))]


def next_waypoint(
    hot_xy: np.ndarray,
    position: np.ndarray,
    heading: np.ndarray,
    half: float,
    fit: str = "tls",
) -> np.ndarray | None:
    """The seed's rule: fit the hot cells' centres (K, 2) m, cross the window of half-size
    `half` around `position`, pick the exit needing the least turn from `heading`; None when
    the cells give no line."""
    line = (fit_line_tls if fit == "tls" else fit_line_ols)(hot_xy)
    if line is None:
        return None
    exits = window_exits(line, np.asarray(position[:2], dtype=float), half)
    if exits is None:
        return None
    return least_turn(exits, np.asarray(position[:2], dtype=float), heading)
