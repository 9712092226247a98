"""The boids' steering rule for the whole flock at once, compiled (the per-agent rule:
missions/_boids_reference.py; the mission: missions/boids.py).

One call per behaviour tick steers every boid from its neighbour entries (CSR by boid), doing for
each row the operations of the per-agent `steering` in the same order, so the two agree to
rounding (tests/missions/test_boids_equivalence.py). At N = 1,000 with ~95 neighbours each this
is ~95,000 neighbour entries a call; the loop avoids square roots it does not need (`_SURE`).
The flock metrics' minimum separation is here too (`closest_pair`, a hashed grid that gives the
KD-tree's number to the bit: tests/missions/test_boids_metrics.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.backends.spatial_hash import cell_hash
from skyswarm.core.jit import ahead, njit

if TYPE_CHECKING:
    from skyswarm.missions.boids import BoidsConfig


def steering_all(
    p: np.ndarray,
    v: np.ndarray,
    v_meas: np.ndarray,
    agent: np.ndarray,
    nb_p: np.ndarray,
    nb_v: np.ndarray,
    cfg: BoidsConfig,
    goal: np.ndarray | None = None,
) -> np.ndarray:
    """(n, 2) steering accelerations, m/s^2, of n boids: the per-agent `steering` for each row,
    in one compiled pass over the neighbour entries.

    `p`, `v`, `v_meas`: (n, 2) own positions m, commanded and measured velocities m/s;
    `agent` (E,) the boid (row) that heard each neighbour entry, `nb_p`, `nb_v` (E, 2) the
    neighbours' positions and velocities as heard; `goal`: (2,) m or None.
    """
    n = len(p)
    agent = np.asarray(agent, dtype=np.int64)
    if len(agent) > 1 and (np.diff(agent) < 0).any():  # entries grouped by boid
        order = np.argsort(agent, kind="stable")
        agent, nb_p, nb_v = agent[order], nb_p[order], nb_v[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(agent, minlength=n), out=indptr[1:])
    nb_p = np.asarray(nb_p, dtype=float).reshape(-1, 2)
    nb_v = np.asarray(nb_v, dtype=float).reshape(-1, 2)
    return steering_csr(p, v, v_meas, indptr, nb_p, nb_v, np.zeros(len(nb_p)), cfg, goal)


def steering_csr(
    p: np.ndarray,
    v: np.ndarray,
    v_meas: np.ndarray,
    indptr: np.ndarray,
    nb_p: np.ndarray,
    nb_v: np.ndarray,
    age_s: np.ndarray,
    cfg: BoidsConfig,
    goal: np.ndarray | None = None,
) -> np.ndarray:
    """`steering_all` for neighbour entries grouped by boid (CSR: boid i's entries are
    `indptr[i]:indptr[i + 1]`) heard `age_s` (E,) s ago: their positions are projected to now
    (p_j + v_j age_j) inside the compiled pass. `nb_p`, `nb_v` may be strided views."""
    gains = np.array(
        [
            cfg.perception_radius_m,
            cfg.separation_radius_m,
            cfg.separation_gain,
            cfg.alignment_gain,
            cfg.cohesion_gain,
            cfg.speed_gain,
            cfg.cruise_speed_m_s,
            cfg.lookahead_s,
            cfg.max_accel_m_s2,
            cfg.migration_gain,
        ]
    )
    g = np.zeros(2) if goal is None else np.asarray(goal, dtype=float)
    f = np.asarray
    return _steer(
        f(p, dtype=float),
        f(v, dtype=float),
        f(v_meas, dtype=float),
        np.asarray(indptr, dtype=np.int64),
        nb_p,
        nb_v,
        np.asarray(age_s, dtype=float),
        gains,
        int(cfg.max_neighbours),
        goal is not None,
        g,
    )


# Squared distances are compared with this relative margin before any hypot: a neighbour whose
# squared distance is clearly inside or outside a radius is judged without the square root, and
# only the few within 1e-9 of it get the hypot the per-agent rule uses. The margin is ten million
# times the rounding of a sum of two squares, so every decision, and therefore every command, is
# bit for bit the one hypot gives; hypot is the dearest operation of the loop (libm guards it
# against overflow), and most neighbours lie far outside the separation radius.
_SURE = 1e-9


@njit
def _steer(p, v, v_meas, indptr, nb_p, nb_v, age, gains, max_nb, has_goal, goal):
    """The compiled rule: for each boid, the operations of `steering` in the same order."""
    perception, r_sep, k_sep, k_ali, k_coh, k_spd, v0, lookahead, a_max, k_mig = gains
    n = len(p)
    out = np.zeros((n, 2))
    widest = 0
    for i in range(n):
        widest = max(widest, indptr[i + 1] - indptr[i])
    d = np.empty(widest)  # scratch, reused for every boid
    px = np.empty(widest)
    py = np.empty(widest)
    near = np.empty(widest, dtype=np.bool_)
    inside_sq = perception * perception * (1.0 - _SURE)
    outside_sq = perception * perception * (1.0 + _SURE)
    sep_sq = r_sep * r_sep * (1.0 + _SURE)
    for i in range(n):
        rx, ry = _rest(p[i], v[i], k_spd, v0, has_goal, goal, k_mig)
        s, e = indptr[i], indptr[i + 1]
        n_near = 0
        for k in range(s, e):
            x = nb_p[k, 0] + nb_v[k, 0] * age[k]  # projected to now
            y = nb_p[k, 1] + nb_v[k, 1] * age[k]
            px[k - s], py[k - s] = x, y
            dx, dy = p[i, 0] - x, p[i, 1] - y
            if max_nb > 0:  # the distances themselves are compared with the k-th nearest
                d[k - s] = math.hypot(dx, dy)
                near[k - s] = d[k - s] < perception
            else:
                q = dx * dx + dy * dy
                if q < inside_sq:
                    near[k - s] = True
                elif q > outside_sq:
                    near[k - s] = False
                else:
                    near[k - s] = math.hypot(dx, dy) < perception
            n_near += near[k - s]
        if max_nb > 0 and n_near > max_nb:  # no farther than the max_nb-th nearest
            seg = d[: e - s]
            kth = np.sort(seg[seg < perception])[max_nb - 1]
            for k in range(e - s):
                near[k] = near[k] and d[k] <= kth
        sx = sy = ax = ay = ox = oy = 0.0
        count = 0
        for k in range(s, e):
            if not near[k - s]:
                continue
            count += 1
            offx = p[i, 0] - px[k - s]
            offy = p[i, 1] - py[k - s]
            relx = v_meas[i, 0] - nb_v[k, 0]
            rely = v_meas[i, 1] - nb_v[k, 1]
            closing = -(offx * relx + offy * rely)
            t = max(closing / max(relx * relx + rely * rely, 1e-9), 0.0)
            t = min(t, lookahead)
            gx = offx + relx * t
            gy = offy + rely * t
            if gx * gx + gy * gy < sep_sq:
                dg = math.hypot(gx, gy)
                if dg < r_sep:
                    dc = max(dg, 1e-3)
                    push = (r_sep / dc - 1.0) / dc
                    sx += push * gx
                    sy += push * gy
            ax += nb_v[k, 0]
            ay += nb_v[k, 1]
            ox += offx
            oy += offy
        sepx, sepy = k_sep * sx, k_sep * sy
        if count > 0:
            rx += k_ali * (ax / count - v[i, 0])
            ry += k_ali * (ay / count - v[i, 1])
            rx += k_coh * (-(ox / count))
            ry += k_coh * (-(oy / count))
        # prioritised allocation: separation first, the rest share what is left
        norm = math.hypot(sepx, sepy)
        if norm > a_max:
            sepx, sepy = sepx * (a_max / norm), sepy * (a_max / norm)
        budget = a_max - math.hypot(sepx, sepy)
        norm = math.hypot(rx, ry)
        if norm > budget:
            scale = max(budget, 0.0) / norm
            rx, ry = rx * scale, ry * scale
        out[i, 0] = sepx + rx
        out[i, 1] = sepy + ry
    return out


@njit
def _rest(p, v, k_spd, v0, has_goal, goal, k_mig):
    """Cruise-speed regulation and migration of one boid (position p, velocity v), m/s^2."""
    rx = 0.0
    ry = 0.0
    sp = math.hypot(v[0], v[1])
    if sp > 1e-9:
        c = k_spd * (v0 - sp)
        rx += c * v[0] / sp
        ry += c * v[1] / sp
    if has_goal:
        tx = goal[0] - p[0]
        ty = goal[1] - p[1]
        dist = math.hypot(tx, ty)
        if dist > 1e-9:
            rx += k_mig * (v0 * tx / dist - v[0])
            ry += k_mig * (v0 * ty / dist - v[1])
    return rx, ry


def advance_all(v: np.ndarray, a: np.ndarray, dt: float, cfg: BoidsConfig) -> np.ndarray:
    """(n, 2) commanded velocities after `dt` s of accelerations `a`; `advance` row by row."""
    w = v + a * dt
    speed = np.hypot(w[:, 0], w[:, 1])
    stop = speed < 1e-9  # keep the old direction rather than stopping dead
    w[stop] = v[stop]
    speed[stop] = np.maximum(np.hypot(v[stop, 0], v[stop, 1]), 1e-9)
    lo, hi = cfg.min_speed_m_s, cfg.max_speed_m_s
    return w * (np.minimum(np.maximum(speed, lo), hi) / speed)[:, None]


def closest_pair(pos: np.ndarray) -> float | None:
    """The smallest distance (m) between two of the n >= 2 points `pos` (n, 3): what
    `cKDTree(pos).query(pos, k=2)[0][:, 1].min()` gives, to the bit (scipy's squared distance
    of three coordinates is (dx^2 + dy^2) + dz^2, then its sqrt; the same pair, the same
    number: tests/missions/test_boids_metrics.py), on a hashed grid: 1-2 ms at 10,000 UAVs
    against the KD-tree's ~8. None when the grid cannot answer (a coordinate not finite, or
    a point beyond 1e9 m, where its cell would not fit an int64): ask the KD-tree."""
    n = len(pos)
    pos = np.ascontiguousarray(pos, dtype=float)
    ext = np.empty(3)
    if n < 2 or not _extents(pos, 1e9, ext):
        return None
    ext.sort()  # smallest first
    # cells about one point each, by the volume, area or length the points span
    h = max(
        (ext[2] * ext[1] * ext[0] / n) ** (1 / 3), (ext[2] * ext[1] / n) ** 0.5, ext[2] / n, 1e-6
    )
    size = 1 << max(4, (2 * n - 1).bit_length())
    return float(_closest(pos, h, np.empty(size, np.int64), np.empty(n, np.int64)))


@njit(nogil=True)
def _extents(pos, limit, ext):  # pragma: no cover - compiled
    """False if a coordinate of `pos` (n, 3) is not finite or beyond +-`limit`; else True,
    with the points' extent along each axis in `ext` (3,)."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for i in range(pos.shape[0]):
        for c in range(3):
            x = pos[i, c]
            if not abs(x) <= limit:  # (NaN fails it too)
                return False
            lo[c], hi[c] = min(lo[c], x), max(hi[c], x)
    for c in range(3):
        ext[c] = hi[c] - lo[c]
    return True


@njit(nogil=True)
def _closest(pos, h, head, nxt):  # pragma: no cover - compiled
    """`closest_pair` of the finite points `pos` (n, 3), cells `h` m to start with: a pass
    over the 27 cells around every point finds every pair nearer than its cells' size; when
    its nearest is no farther than `h` it is the answer, else that distance (or 2 h when no
    pair shared 27 cells) sizes the next pass's cells."""
    while True:
        best = _grid_min(pos, h * (1.0 + 1e-6), head, nxt)  # (roundings of x / u: margin)
        if best <= h:
            return best
        h = best if best < np.inf else 2.0 * h


@njit(nogil=True)
def _grid_min(pos, u, head, nxt):  # pragma: no cover - compiled
    """The nearest pair among the points of neighbouring cells (cells `u` m; inf: none), with
    scipy's sqrt((dx^2 + dy^2) + dz^2). Each point's own cell (its later points) and the 13 of
    the 26 cells around it that come after it: every pair of neighbouring cells is visited from
    one end (a bucket shared by several cells only adds pairs). `head` (2^k,) and `nxt` (n,):
    work space."""
    n = pos.shape[0]
    mask = head.shape[0] - 1
    head[:] = -1
    for i in range(n):
        h = cell_hash(_floor(pos[i, 0], u), _floor(pos[i, 1], u), _floor(pos[i, 2], u), mask)
        nxt[i] = head[h]
        head[h] = i
    best = np.inf  # the least squared distance
    for i in range(n):
        cx, cy, cz = _floor(pos[i, 0], u), _floor(pos[i, 1], u), _floor(pos[i, 2], u)
        for ox in range(0, 2):
            for oy in range(-1 if ox else 0, 2):
                for oz in range(-1 if ox or oy else 0, 2):
                    own = ox == 0 and oy == 0 and oz == 0
                    j = head[cell_hash(cx + ox, cy + oy, cz + oz, mask)]
                    while j >= 0:
                        if j > i or (not own and j != i):
                            dx = pos[i, 0] - pos[j, 0]
                            dy = pos[i, 1] - pos[j, 1]
                            dz = pos[i, 2] - pos[j, 2]
                            d2 = (dx * dx + dy * dy) + dz * dz
                            if d2 < best:
                                best = d2
                        j = nxt[j]
    # the least sqrt is the sqrt of the least square (sqrt is correctly rounded: monotonic)
    return math.sqrt(best)


@njit(nogil=True, inline="always")
def _floor(x, u):  # pragma: no cover - compiled
    """The integer cell of coordinate x m, cells u m."""
    return np.int64(math.floor(x / u))


# The types steering_csr calls _steer with: own positions and measured velocities are strided
# views, the neighbour fields contiguous or strided (compiled before the clock: core/jit.py).
ahead(
    _steer,
    "f8[2A] f8[2] f8[2A] i8[1] f8[2] f8[2] f8[1] f8[1] i8 ? f8[1]",
    "f8[2A] f8[2] f8[2A] i8[1] f8[2A] f8[2A] f8[1] f8[1] i8 ? f8[1]",
)
ahead(_closest, "f8[2] f8 i8[1] i8[1]")
ahead(_extents, "f8[2] f8 f8[1]")
