"""The flocking-coverage fast paths against the array formulas they replaced, bit for bit.

The flock's behaviour (missions/flocking_coverage/flock.py) and the camera footprint
(missions/coverage.py) were rewritten for speed with the promise that a run is byte-identical
to the one before: the same floating-point operations in the same order. Each test here holds
one rewritten piece to the formula it replaced, written out the old way, on random inputs and at
the edges (exactly at a limit, signed zeros, infinities, NaN). The whole-run evidence (the
reference, the 30-UAV split flock and the data mule run cmp-identical before and after) is in
docs/missions.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skyswarm.core.geo import heading_to_yaw, yaw_of
from skyswarm.missions.coverage import Area, pack, unpack
from skyswarm.missions.flocking_coverage.flock import (
    GRID_CACHE_CELLS,
    FlockConfig,
    FlockContext,
    _at_least,
    _push_xy,
)


def old_footprint(area: Area, xy: np.ndarray, yaw: float, half: float):
    """Area.footprint as it was: to_area's stacked matmul, then the (k, l, 2) offsets."""
    u, v = area.to_area(xy)
    r = half * math.sqrt(2.0)
    iu0 = max(0, math.floor((u - r + area.width / 2) / area.cell_u))
    iu1 = min(area.n_u, math.ceil((u + r + area.width / 2) / area.cell_u))
    iv0 = max(0, math.floor((v - r + area.length / 2) / area.cell_v))
    iv1 = min(area.n_v, math.ceil((v + r + area.length / 2) / area.cell_v))
    if iu0 >= iu1 or iv0 >= iv1:
        return None
    su, sv = slice(iu0, iu1), slice(iv0, iv1)
    d = area.cell_xy[su, sv] - np.asarray(xy, dtype=float)[:2]
    c, s = math.cos(yaw), math.sin(yaw)
    fwd = c * d[..., 0] + s * d[..., 1]
    left = c * d[..., 1] - s * d[..., 0]
    return su, sv, (np.abs(fwd) <= half) & (np.abs(left) <= half)


@pytest.mark.parametrize("heading", [60.0, 0.0, 90.0, 13.7, 200.0])
def test_footprint_is_the_old_formula_cell_for_cell(heading: float) -> None:
    area = Area(1, (50.0, 50.0), (80.0, 100.0), heading, 1.0)
    rng = np.random.default_rng(int(heading * 10))
    hits = 0
    for k in range(3000):
        xy = rng.uniform(-10.0, 110.0, 2)
        yaw, half = float(rng.uniform(-4.0, 4.0)), float(rng.uniform(0.0, 4.0))
        if k % 3 == 0:  # on the cell grid's half-metres: cells exactly on the footprint's edge
            xy, yaw, half = np.round(xy * 2.0) / 2.0, round(yaw, 1), round(half * 2.0) / 2.0
        got, want = area.footprint(xy, yaw, half), old_footprint(area, xy, yaw, half)
        assert (got is None) == (want is None)
        if want is not None:
            assert (got[0], got[1]) == (want[0], want[1])
            assert got[2].tobytes() == want[2].tobytes()
            hits += 1
    assert hits > 1500  # most footprints fall on the area
    xyz = np.array([50.0, 50.0, 6.0])  # a (3,) position is read as its x, y
    got = area.footprint(xyz, 0.3, 2.0)
    want = old_footprint(area, xyz[:2], 0.3, 2.0)
    assert got is not None and want is not None and np.array_equal(got[2], want[2])


def test_one_vector_matrix_product_is_the_two_dot_products() -> None:
    """Area.footprint's `d @ [uhat vhat]` gives what to_area's `d @ uhat`, `d @ vhat` give
    (both BLAS; written out in floats they differ in about 2 of 5 cases: a fused multiply-add)."""
    rng = np.random.default_rng(12)
    for heading in (60.0, 13.7, 200.0, 0.0, 90.0):
        area = Area(1, (50.0, 50.0), (80.0, 100.0), heading, 1.0)
        for _ in range(20000):
            d = rng.uniform(-150.0, 150.0, 2) * rng.choice([1.0, 1e-3, 1e3])
            assert (d @ area._uv_axes).tolist() == [float(d @ area.uhat), float(d @ area.vhat)]


def test_heading_to_yaw_on_one_number_is_the_array_formula() -> None:
    def array_formula(h: float) -> float:
        yaw = np.radians(90.0 - np.asarray(h, dtype=float))
        return float(-((-yaw + math.pi) % (2 * math.pi) - math.pi))

    rng = np.random.default_rng(7)
    values = [float(h) for h in rng.uniform(-1000.0, 1000.0, 20000)]
    values += [float(h) for h in np.arange(-720.0, 720.0, 0.5)]
    values += [0.0, -0.0, 90.0, -90.0, 180.0, -180.0, 270.0, 360.0, 450.0, 1e-300, -1e300]
    for h in values + [np.float64(h) for h in values[:500]] + list(range(-400, 400, 7)):
        got, want = heading_to_yaw(h), array_formula(h)
        assert isinstance(got, float)
        assert math.copysign(1.0, got) == math.copysign(1.0, want) and got == want, h
    assert math.isnan(heading_to_yaw(math.nan)) and math.isnan(heading_to_yaw(math.inf))
    arr = heading_to_yaw(np.array([0.0, 90.0, 180.0]))  # arrays keep the array path
    assert isinstance(arr, np.ndarray) and arr.tolist() == [math.pi / 2, 0.0, -math.pi / 2]


def test_yaw_of_one_quaternion_is_the_scalar_formula() -> None:
    rng = np.random.default_rng(8)
    q = rng.normal(size=(5000, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    many = yaw_of(q)
    for k, row in enumerate(q):
        x, y, z, w = row  # numpy scalars, as before
        want = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        assert yaw_of(row) == want == yaw_of(tuple(row)) == yaw_of(list(row))
        assert isinstance(yaw_of(row), float)
        assert many[k] == np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    assert yaw_of(np.array([0.0, 0.0, math.sin(0.5), math.cos(0.5)])) == pytest.approx(1.0)


def test_at_least_is_hypot_at_least_near_and_far_from_the_limit() -> None:
    rng = np.random.default_rng(9)
    steps = [0.0, 1e-16, -1e-16, 1e-13, -1e-13, 1e-10, -1e-10, 1e-8, -1e-8, 0.3, -0.3, -1.0]
    for limit in (45.0, 0.7, 3e99, 1e-90):  # the squares' test, and beyond its range
        for _ in range(10000):
            ang = rng.uniform(-math.pi, math.pi)
            r = limit * (1.0 + float(rng.choice(steps)))
            dx, dy = r * math.cos(ang), r * math.sin(ang)
            assert _at_least(dx, dy, limit) == bool(np.hypot(dx, dy) >= limit)
    limit = 45.0
    for dx, dy in [(45.0, 0.0), (0.0, -45.0), (-45.0, 0.0), (27.0, 36.0), (27.0, -36.0)]:
        assert _at_least(dx, dy, limit)  # exactly at the limit counts as far
        assert not _at_least(dx * (1 - 1e-15), dy * (1 - 1e-15), limit)
    assert not _at_least(1e6, 1e6, math.inf)  # no radio range: nobody is far
    assert _at_least(0.0, 0.0, 0.0)
    for dx, dy in [(math.nan, 1.0), (math.nan, 100.0), (1.0, math.nan), (math.inf, math.nan)]:
        assert _at_least(dx, dy, limit) == bool(np.hypot(dx, dy) >= limit)


def test_push_xy_is_the_array_formula_at_the_axis_bounds() -> None:
    """Peers exactly `sep` away along one axis (the prefilter's bound), a hair inside it, on
    top (below the 1e-6 m floor), and random ones: the old (k, 2) array formula, bit for bit."""
    sep = 2.0

    def array_formula(here, peers):
        push = np.zeros(2)
        if not peers:
            return push
        d = here - np.array(peers)
        dist = np.hypot(d[:, 0], d[:, 1])
        for k in np.flatnonzero((dist > 1e-6) & (dist < sep)).tolist():
            push += 1.5 * (sep - dist[k]) * d[k] / dist[k]
        return push

    here = np.array([3.0, -1.0])
    edge = math.nextafter(sep, 0.0)
    special = [
        here + [sep, 0.0],
        here - [0.0, sep],
        here + [edge, 0.0],
        here - [edge, 1e-9],
        here + [4e-7, -4e-7],
        here + [1.0, 1.0],
        here + [-1.5, 1.5],
    ]
    rng = np.random.default_rng(10)
    cases = [special] + [
        list(rng.uniform(-2.5, 2.5, (int(rng.integers(0, 9)), 2)) + here) for _ in range(500)
    ]
    for peers in cases:
        got = _push_xy(3.0, -1.0, [p[0] for p in peers], [p[1] for p in peers], sep)
        want = array_formula(here, peers)
        assert np.array(got).tobytes() == want.tobytes()
    assert _push_xy(3.0, -1.0, [4.0], [-1.0], 0.0) == (0.0, 0.0)  # separation off


def test_grid_of_decodes_each_share_once_and_read_only() -> None:
    areas = [Area(1, (0.0, 0.0), (30.0, 20.0), 0.0, 1.0), Area(2, (90.0, 0.0), (7.0, 3.0), 45, 1)]
    ctx = FlockContext(FlockConfig(), None, 1.0, 1.0, areas, {}, None, print)  # type: ignore[arg-type]
    rng = np.random.default_rng(11)
    grid = rng.random(areas[0].shape) < 0.4
    bits = pack(grid)
    first = ctx.grid_of(bits, 0)
    assert np.array_equal(first, unpack(bits, areas[0].shape)) and np.array_equal(first, grid)
    assert ctx.grid_of(bits, 0) is first  # the same bytes object: decoded once
    assert not first.flags.writeable
    known = np.zeros(areas[0].shape, dtype=bool)
    known |= first  # what the members do with it
    assert np.array_equal(known, grid)
    copy = bytes(bytearray(bits))  # equal bytes, another object: decoded again, same grid
    assert ctx.grid_of(copy, 0) is not first and np.array_equal(ctx.grid_of(copy, 0), grid)
    small = ctx.grid_of(pack(np.ones(areas[1].shape, dtype=bool)), 1)
    assert small.shape == areas[1].shape and small.all()
    per = areas[0].cells
    for _ in range(GRID_CACHE_CELLS // per + 2):  # more than the cache holds: it starts again
        ctx.grid_of(pack(rng.random(areas[0].shape) < 0.5), 0)
    assert ctx._grid_cells <= GRID_CACHE_CELLS
    assert len(ctx._grids) <= GRID_CACHE_CELLS // per
