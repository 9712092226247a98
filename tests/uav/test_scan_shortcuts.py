"""The scenario stack's per-tick and per-scan shortcuts of issue 31 (the fast hover at 1,000 and
10,000 UAVs) give what the long way gives, to the bit, at their edges: the proximity scan's
compiled arithmetic around numpy's arctan2s (uav/sensors/nearest.py `scan_values`,
`remainder`, `mask_empty`) against the numpy expressions it replaced
(uav/sensors/proximity.py `_scan_numpy`)."""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np
import pytest

from skyswarm.uav.sensors.nearest import nearest_targets, remainder
from skyswarm.uav.sensors.proximity import Proximity, _scan_numpy, scan
from tests.uav.test_perf_shortcuts import _crowd  # n UAVs on a jittered grid, 5 % dead, 3 boxes


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _search(pos, yaw, alive, boxes, range_m, half_fov, k=16):
    n = len(pos)
    target, rel, dist = np.empty((n, k), np.int64), np.empty((n, k, 3)), np.empty((n, k))
    nearest_targets(pos, yaw, alive, boxes, range_m, half_fov, target, rel, dist)
    return target, rel, dist


@pytest.mark.parametrize("n, fov_deg, k", [(3000, 360.0, 16), (400, 120.0, 8), (12, 360.0, 16)])
def test_a_scan_is_the_numpy_expressions_to_the_bit(n, fov_deg, k):
    """Whole scans: the crowd (dead agents, boxes, random headings), 360 deg and a limited
    field of view, more targets than slots and (12 UAVs, 3 boxes, K = 16) all of them in the
    slots (the per-pair noise draws); same draws, same stream left behind."""
    pos, yaw, alive, boxes = _crowd(n, 7)
    cfg = dataclasses.replace(Proximity.defaults, fov_deg=fov_deg, max_targets=k)
    got_rng, ref_rng = np.random.default_rng(11), np.random.default_rng(11)
    got = scan(pos, yaw, alive, boxes, cfg, got_rng)
    target, rel, dist = _search(pos, yaw, alive, boxes, cfg.range_m, math.radians(fov_deg) / 2, k)
    ref = _scan_numpy(target, rel, dist, yaw, boxes, cfg, ref_rng)
    for name in ("target", "detected", "range_m", "bearing_rad", "elevation_rad"):
        assert _same(getattr(got, name), getattr(ref, name)), name
    assert got_rng.bit_generator.state == ref_rng.bit_generator.state
    assert got.detected.any() and (~got.detected).any()


def test_the_arithmetic_at_its_edges_is_numpys():
    """Offsets and headings chosen to reach every branch: zero and signed-zero offsets, a
    target straight above, headings far outside [-pi, pi), NaN and infinite yaws, bearings
    whose wrap lands on 0, -pi and pi exactly."""
    rng = np.random.default_rng(3)
    n, k = 64, 16
    rel = rng.normal(0.0, 5.0, (n, k, 3)) * 10.0 ** rng.integers(-12, 4, (n, k, 1))
    rel[0, :4] = [[0.0, 0.0, 1.0], [-0.0, 0.0, -1.0], [0.0, -0.0, 0.0], [-0.0, -0.0, 3.0]]
    rel[1, :, 1] = 0.0  # due east or west: arctan2 exactly 0 or pi
    rel[1, ::2, 0] *= -1.0
    yaw = rng.uniform(-50.0, 50.0, n)
    yaw[2:8] = [np.nan, np.inf, -np.inf, -0.0, math.pi, -math.pi]
    yaw[8:12] = [1e300, -1e300, 5e-324, 2 * math.pi]
    target = rng.integers(-1, 40, (n, k))
    target[0, :4] = 5  # the zero offsets are filled slots
    dist = np.linalg.norm(rel, axis=2)
    z = rng.standard_normal((2, n, k))
    cfg = Proximity.defaults
    draws = iter(z)

    class Rng:  # hands both scans the same "draws" (N + B > K: one (N, K) array each)
        def standard_normal(self, shape):
            return next(draws).copy()

    with np.errstate(invalid="ignore"):  # (inf % 2 pi: numpy warns, the compiled pass not)
        ref = _scan_numpy(target, rel, dist, yaw, np.zeros((30, 6)), cfg, Rng())
    draws = iter(z)
    from skyswarm.uav.sensors import proximity

    heading = np.arctan2(rel[..., 1], rel[..., 0])
    out = [np.empty((n, k)) for _ in range(3)]
    proximity.scan_values(
        target, dist, rel, heading, yaw, z[0], z[1], float(cfg.range_sigma_m),
        float(cfg.bearing_sigma_rad), *out,
    )  # fmt: skip
    elevation = np.arctan2(rel[..., 2], out[2])
    proximity.mask_empty(target, elevation)
    assert _same(out[0], ref.range_m)
    assert _same(out[1], ref.bearing_rad)
    assert _same(elevation, ref.elevation_rad)
    assert _same(out[2], np.hypot(rel[..., 0], rel[..., 1]))


def test_remainder_is_numpys_modulo_of_floats():
    rng = np.random.default_rng(5)
    a = np.concatenate(
        [
            rng.normal(0.0, 10.0, 20000),
            rng.normal(0.0, 1.0, 2000) * 10.0 ** rng.integers(-300, 300, 2000),
            np.arange(-20, 21) * (2 * np.pi),  # exact multiples
            [0.0, -0.0, 5e-324, -5e-324, np.pi, -np.pi, 2 * np.pi, np.nextafter(2 * np.pi, 0)],
            [np.inf, -np.inf, np.nan, -np.nan, 1e308, -1e308],
        ]
    )
    for b in (2 * np.pi, 1.0, -2.5, 3e-300):
        with np.errstate(invalid="ignore"):
            ref = a % b
        got = np.array([remainder(x, b) for x in a])
        assert _same(got, ref), b


def _offer_reference(i, t, d, dx, dy, dz, target, rel, dist):
    """The search's insertion by (distance, index) before issue 31's shortcut, in Python."""
    last = target.shape[1] - 1
    if d > dist[i, last] or (d == dist[i, last] and target[i, last] >= 0 and t > target[i, last]):
        return
    s = last
    while s > 0 and (d < dist[i, s - 1] or (d == dist[i, s - 1] and t < target[i, s - 1])):
        target[i, s], dist[i, s], rel[i, s] = target[i, s - 1], dist[i, s - 1], rel[i, s - 1]
        s -= 1
    target[i, s], dist[i, s], rel[i, s] = t, d, (dx, dy, dz)


def _search_reference(pos, yaw, alive, boxes, range_m, half_fov, k):
    """The search as it was: every visible target offered to the sorted slots in the grid's
    visit order, then the slots put in order of index (the same grid, the same tests)."""
    from skyswarm.uav.sensors import nearest

    n = len(pos)
    target, rel, dist = np.full((n, k), -1, np.int64), np.zeros((n, k, 3)), np.full((n, k), np.inf)
    cell, head, nxt, mask = nearest._grid(pos, alive, range_m)
    reach2 = (range_m * (1.0 + 1e-9)) ** 2
    for i in np.flatnonzero(alive):
        for m in range(27):
            cx, cy, cz = (
                cell[i, 0] + m // 9 - 1,
                cell[i, 1] + (m // 3) % 3 - 1,
                cell[i, 2] + m % 3 - 1,
            )
            j = head[nearest._key(cx, cy, cz, mask)]
            while j >= 0:
                if j != i and (cell[j] == (cx, cy, cz)).all():
                    dx, dy, dz = (float(v) for v in pos[j] - pos[i])
                    d2 = dx * dx + dy * dy + dz * dz
                    if d2 <= reach2:
                        d = math.sqrt(d2)
                        if nearest._visible(dx, dy, d, yaw[i], range_m, half_fov):
                            _offer_reference(i, j, d, dx, dy, dz, target, rel, dist)
                j = nxt[j]
        for b in range(len(boxes)):
            lo, hi = boxes[b, :3] - boxes[b, 3:], boxes[b, :3] + boxes[b, 3:]
            dx, dy, dz = (float(min(max(pos[i, a], lo[a]), hi[a]) - pos[i, a]) for a in range(3))
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            if nearest._visible(dx, dy, d, yaw[i], range_m, half_fov):
                _offer_reference(i, n + b, d, dx, dy, dz, target, rel, dist)
        nearest._by_index(i, target, rel, dist)
    return target, rel, dist


@pytest.mark.parametrize("variant", ["dense", "sparse", "nan"])
@pytest.mark.parametrize(
    "n, fov_deg, k, range_m",
    [(400, 360.0, 16, 10.0), (400, 360.0, 4, 10.0), (300, 90.0, 3, 12.0), (60, 360.0, 64, 30.0)],
)
def test_the_search_keeps_what_the_sorted_insertion_kept(n, fov_deg, k, range_m, variant):
    """The search (per cell, from a dense table of the cells or the hashed grid) appends
    while K or fewer targets are in range and ranks the slots only at the K + 1-th: the same
    slots, to the bit, as the insertion sort it replaced, with fewer targets than slots, many
    more (K = 3, 4), a limited field of view and every UAV in range (K = 64), dead agents and
    boxes; `sparse`: a quarter of the crowd spread 60 times wider (too many cells for a
    dense table: the hashed grid's groups); `nan`: a live agent whose position is NaN (no
    dense table either; its boxes' distances NaN, which the insertion placed where it
    stopped)."""
    pos, yaw, alive, boxes = _crowd(n, 13)
    if variant == "sparse":
        pos[::4, :2] *= 60.0
    if variant == "nan":
        pos[5] = np.nan
        alive[5] = True
    half = math.radians(fov_deg) / 2
    got = _search(pos, yaw, alive, boxes, range_m, half, k)
    with np.errstate(over="ignore"):  # (a NaN's cell: int64 arithmetic wraps, as compiled)
        ref = _search_reference(pos, yaw, alive, boxes, range_m, half, k)
    for a, b in zip(got, ref, strict=True):
        assert _same(a, b)
    filled = (got[0] >= 0).sum(axis=1)
    if k >= 16:  # agents with empty slots (appended only)
        assert ((filled > 0) & (filled < k)).any()
    assert (filled == k).any() == (k < 64)  # and (not with 64 slots) agents ranked


def test_surely_within_never_says_yes_when_the_exact_test_says_no():
    """Pairs at the bound to the last bits (below, at, above it), tiny, subnormal, huge,
    infinite and NaN ones, bounds of every size: a True is always the exact test's True."""
    from skyswarm.uav.avoidance_steer import surely_within, unscaled

    rng = np.random.default_rng(17)
    said = 0
    for bound in (1e-320, 1e-200, 1e-12, 1e-13, 0.3, 8.0, 1e150, 1e160, 1e300, np.inf, 0.0, -1.0):
        ang = rng.uniform(0, 2 * np.pi, 3000)
        size = np.concatenate(
            [
                bound / (1.0 + 1e-9) * (1.0 + rng.uniform(-3e-9, 3e-9, 1000)),
                rng.uniform(0.0, 2.0, 1000) * (bound if np.isfinite(bound) else 1e300),
                10.0 ** rng.uniform(-320, 308, 1000),
            ]
        )
        for x, y in zip(size * np.cos(ang), size * np.sin(ang), strict=True):
            if surely_within(x, y, bound):
                said += 1
                assert math.hypot(x, y) * (1.0 + 1e-9) < bound
            if unscaled(x, y, bound):
                assert min(1.0, bound / max(math.hypot(x, y), 1e-12)) == 1.0
        for x, y in ((np.nan, 0.0), (np.inf, 0.0), (0.0, -np.inf), (1e200, 1e200)):
            assert not surely_within(x, y, bound) and not unscaled(x, y, bound)
    assert said > 5000


def test_steer_with_its_shortcuts_flies_what_the_exact_tests_fly(monkeypatch):
    """Commands at and around the top speed and the smallest cap, to the last bits: `steer`
    compiled (the squared-size shortcuts) writes what its Python code writes with the
    shortcuts switched off (every decision by libm's hypot, as before)."""
    from skyswarm.uav import avoidance_steer as ak
    from skyswarm.uav import control as ctl
    from skyswarm.uav.avoidance import PASSES
    from skyswarm.uav.control import SETPOINT

    rng = np.random.default_rng(23)
    n, k, kp, top = 3000, 4, 1.0, 8.0
    records = np.zeros(n, SETPOINT)
    modes = (ctl.POSITION, ctl.VELOCITY, ctl.GROUND_SPEED_AND_ALTITUDE)
    records["mode"] = [ctl.mode_index(modes[i % 3]) for i in range(n)]
    source = rng.uniform(-5, 5, (n, 3))
    ang = rng.uniform(-np.pi, np.pi, n)
    # Position targets whose command kp (target - position) is at the top speed to the bit
    speed = top * (1.0 + rng.choice([-1e-15, 0.0, 1e-15, -1e-9, 1e-9, -0.5, 0.5], n))
    records["position"] = (
        source[:, :2] + np.column_stack([np.cos(ang), np.sin(ang)]) * speed[:, None]
    )
    records["velocity"][:, :2] = np.column_stack([np.cos(ang), np.sin(ang)]) * speed[:, None]
    push = rng.normal(0, 1e-3, (n, 2)) * (rng.random((n, 1)) < 0.5)
    normal_ang = rng.uniform(-np.pi, np.pi, (n, k))
    normal = np.stack([np.cos(normal_ang), np.sin(normal_ang)], 2)
    cap = rng.uniform(0.5, 10.0, (n, k))
    slack = cap.min(axis=1)
    # some slacks at the command's size to the bit
    at = rng.random(n) < 0.3
    slack[at] = np.hypot(*records["velocity"][at, :2].T) * (1.0 + 1e-9)
    cap[at, 0] = slack[at]
    guarded = rng.random(n) < 0.05
    escape = rng.normal(0, 1.5, (n, 2))
    yaw = rng.uniform(-np.pi, np.pi, n)
    rows = np.arange(n)

    def fly(kernel):
        pos, v, changed = np.zeros((n, 3)), np.zeros((n, 2)), np.zeros(n, dtype=bool)
        out = np.zeros(n, SETPOINT)
        got = kernel(
            np.ones(n, dtype=bool), ak.mode_kinds(), records, source, rows, yaw, True, push,
            escape, guarded, normal, cap, slack, kp, top, PASSES, pos, v, changed, out,
        )  # fmt: skip
        return got, pos, v, changed, out

    fast = fly(ak.steer)
    # the same code compiled with the shortcuts answering "in doubt" (libm's hypot decides
    # everything, as before them; CPython's own math.hypot differs from libm's in last bits,
    # so the reference runs compiled too)
    never = numba.njit(lambda x, y, bound: False)
    monkeypatch.setattr(ak, "surely_within", never)
    monkeypatch.setattr(ak, "unscaled", never)
    # every kernel between `steer` and the shortcuts compiled again, leaves first: a compiled
    # callee would keep the shortcuts it was compiled with
    for name in ("commanded_velocity", "_steer_range", "_steer_pass"):
        monkeypatch.setattr(ak, name, numba.njit(getattr(ak, name).py_func))
    exact = fly(numba.njit(ak.steer.py_func))
    assert fast[0] == exact[0]
    for a, b in zip(fast[1:], exact[1:], strict=True):
        assert _same(a, b)
    assert 0 < fast[0][0] < n
