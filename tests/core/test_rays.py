"""World.cast_rays on both backends: known geometry gives the analytic distance, the edges
(max range, grazing, starting inside) behave as documented, and the same scene gives the same
hits on Bullet and the fast backend within CROSS_TOL_M."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.backends import (
    GROUND,
    BodyShape,
    backend_class,
    make_world,
    obstacle_id,
    ray_grid,
)
from skyswarm.core.backends import rays as fast_rays
from skyswarm.core.backends.rays import MISS
from skyswarm.core.backends.terrain import Heightfield

BACKENDS = ("bullet", "fast")
# The fast backend's slab and triangle tests are exact to rounding. Bullet's ray test meets a
# box face within ~2.5e-7 m (measured 4.00000025 for a face at 4 m): FACE_TOL_M. Near a box
# edge or corner its convex ray cast rounds the box by its collision margin (measured: 0.41 mm
# short of a 45 deg edge, at most 1.27 mm over 4,000 random rays): CROSS_TOL_M, the stated
# agreement of the two backends on the same scene.
FACE_TOL_M = 1e-6
CROSS_TOL_M = 2e-3


def world(name: str):
    w = make_world(name)
    w.add_ground()
    return w


def cast(w, origins, directions, max_range=20.0):
    o = np.asarray(origins, dtype=float).reshape(-1, 3)
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    return w.cast_rays(o, d / np.linalg.norm(d, axis=1, keepdims=True), max_range)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_wall_at_a_known_distance_and_the_ground_below(name: str) -> None:
    # A 2 m cube centred at x = 5: its face is at x = 4, so a ray from the origin at 1 m up
    # hits at 4 m; straight down from 3 m hits the ground at 3 m; a 45 deg ray down from
    # (0, 0, 3) toward -x meets the ground at 3 sqrt 2.
    w = world(name)
    box = w.add_box((5.0, 0.0, 1.0), (2.0, 2.0, 2.0))
    d, hit = cast(w, [(0, 0, 1), (0, 0, 3), (0, 0, 3)], [(1, 0, 0), (0, 0, -1), (-1, 0, -1)])
    assert d == pytest.approx([4.0, 3.0, 3 * math.sqrt(2)], abs=FACE_TOL_M)
    assert hit.tolist() == [box, GROUND, GROUND]


@pytest.mark.parametrize("name", BACKENDS)
def test_a_yawed_wall_and_a_uav_body(name: str) -> None:
    # A box 2 x 2 x 2 yawed 45 deg at x = 5 shows its vertical edge to a ray along x: the
    # edge is sqrt 2 from the centre, so the hit is at 5 - sqrt 2 (Bullet: within its edge
    # rounding, CROSS_TOL_M). A UAV body (box of half extents 0.2, 0.2, 0.05) at (0, 3, 1)
    # is hit from the origin along +y at 3 - 0.2; the body's slot is reported.
    w = world(name)
    box = w.add_box((5.0, 0.0, 1.0), (2.0, 2.0, 2.0), yaw_rad=math.pi / 4)
    (slot,) = w.add_bodies(BodyShape(half_extents=(0.2, 0.2, 0.05)), 1.0, [(0, 3, 1)])
    d, hit = cast(w, [(0, 0, 1), (0, 0, 1)], [(1, 0, 0), (0, 1, 0)])
    assert d[0] == pytest.approx(5 - math.sqrt(2), abs=CROSS_TOL_M)
    assert d[1] == pytest.approx(2.8, abs=FACE_TOL_M)
    assert hit.tolist() == [box, int(slot)]


def slope(cell: float = 1.0) -> Heightfield:
    """A plane z = 0.5 (x + 10) over x, y in [-10, 10]: slope 0.5 (26.6 deg)."""
    x = -10 + cell * np.arange(int(20 / cell) + 1)
    return Heightfield(np.tile(0.5 * (x + 10), (len(x), 1)), cell, (-10.0, -10.0))


@pytest.mark.parametrize("name", BACKENDS)
def test_a_terrain_slope(name: str) -> None:
    # Down from (x, 0.3, 20) the slope is at z = 0.5 (x + 10): distance 20 - 0.5 (x + 10).
    # Horizontally along +x at height 6 from x = -10 the surface z = 6 is at x = 2: 12 m.
    # Along +x at 45 deg up from (-10, 0, 1) (faster than the slope) it never meets it.
    w = world(name)
    tid = w.add_heightfield(slope())
    xs = np.array([-9.5, -3.25, 0.0, 7.7])
    o = np.column_stack([xs, np.full(4, 0.3), np.full(4, 20.0)])
    d, hit = cast(w, o, np.tile((0.0, 0.0, -1.0), (4, 1)), 30.0)
    assert d == pytest.approx(20 - 0.5 * (xs + 10), abs=FACE_TOL_M)
    assert set(hit.tolist()) == {tid}
    d, hit = cast(w, [(-10, 0.7, 6), (-10, 0, 1)], [(1, 0, 0), (1, 0, 1)], 30.0)
    assert d[0] == pytest.approx(12.0, abs=FACE_TOL_M)
    assert hit.tolist() == [tid, MISS] and d[1] == math.inf


def tent(path: Path) -> Path:
    """An OBJ terrain mesh: a ridge along y, z = 4 - 0.5 |x| over x, y in [-8, 8] (4 triangles;
    the ridge and the edges fall on a 1 m grid, so the fast backend's sampling is exact)."""
    v = [(-8, -8, 0), (0, -8, 4), (8, -8, 0), (-8, 8, 0), (0, 8, 4), (8, 8, 0)]
    f = [(1, 2, 5), (1, 5, 4), (2, 3, 6), (2, 6, 5)]
    lines = [f"v {x} {y} {z}" for x, y, z in v] + [f"f {a} {b} {c}" for a, b, c in f]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", BACKENDS)
def test_a_terrain_mesh(name: str, tmp_path: Path) -> None:
    # The tent from an OBJ file (add_terrain: Bullet's concave triangle mesh; the fast backend
    # samples it on a 1 m grid). Down from 20 m at x in {-6.5, -0.25, 0.25, 3.7}: 20 - (4 -
    # 0.5 |x|). Along +x at 2 m from x = -10: the face at x = -4, 6 m. Along -x at 3.5 m from
    # x = 12: the far face at x = 1, 11 m. From under the tent at 1 m, straight up: the mesh
    # is one-sided on neither backend (z = 4 - 0.5 |2| = 3 above: 2 m).
    w = world(name)
    tid = w.add_terrain(tent(tmp_path / "tent.obj"), 1.0)
    xs = np.array([-6.5, -0.25, 0.25, 3.7])
    o = np.column_stack([xs, np.full(4, 1.3), np.full(4, 20.0)])
    d, hit = cast(w, o, np.tile((0.0, 0.0, -1.0), (4, 1)), 30.0)
    assert d == pytest.approx(20 - (4 - 0.5 * np.abs(xs)), abs=FACE_TOL_M)
    assert hit.tolist() == [tid] * 4
    d, hit = cast(w, [(-10, -2, 2), (12, 5, 3.5), (2, 0, 1)], [(1, 0, 0), (-1, 0, 0), (0, 0, 1)])
    assert d == pytest.approx([6.0, 11.0, 2.0], abs=FACE_TOL_M)
    assert hit.tolist() == [tid] * 3


@pytest.mark.parametrize("name", BACKENDS)
def test_max_range_is_a_hard_limit(name: str) -> None:
    # The wall at 4 m: a miss (inf, MISS) with a 3.999 m range, a hit with 4.001 m.
    w = world(name)
    box = w.add_box((5.0, 0.0, 1.0), (2.0, 2.0, 2.0))
    short = cast(w, [(0, 0, 1)], [(1, 0, 0)], 3.999)
    long = cast(w, [(0, 0, 1)], [(1, 0, 0)], 4.001)
    assert short[0][0] == math.inf and short[1][0] == MISS
    assert long[0][0] == pytest.approx(4.0, abs=FACE_TOL_M) and long[1][0] == box


@pytest.mark.parametrize("name", BACKENDS)
def test_grazing_rays_and_rays_starting_inside(name: str) -> None:
    # Documented (core/backends/rays.py): a ray in the plane of a face (y = 1, the side of the
    # cube) misses the box; 1 nm inside that plane it hits the front face at 4 m. A ray that
    # starts inside the box does not see it: down from its centre it hits the ground 1 m
    # below; along +x from its centre it finds nothing.
    w = world(name)
    box = w.add_box((5.0, 0.0, 1.0), (2.0, 2.0, 2.0))
    o = [(0, 1.0, 1), (0, 1 - 1e-9, 1), (5, 0, 1), (5, 0, 1)]
    d, hit = cast(w, o, [(1, 0, 0), (1, 0, 0), (0, 0, -1), (1, 0, 0)])
    assert hit.tolist() == [MISS, box, GROUND, MISS]
    assert d[1] == pytest.approx(4.0, abs=FACE_TOL_M) and d[2] == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("name", BACKENDS)
def test_grazing_incidence_and_rays_starting_at_a_surface(name: str) -> None:
    # Rays at 1 and 0.1 deg to the wall's face x = 4, from 10 cm and 1 cm in front of it,
    # meet it at off / sin(a) = 5.73 m: a shallow ray is no less exact on either backend
    # (measured: 1e-10 m on Bullet). Along the ground at 0.1 deg from 5 cm up: 28.65 m.
    w = world(name)
    box = w.add_box((5.0, 0.0, 3.0), (2.0, 10.0, 6.0))
    a = np.radians([1.0, 0.1])
    off = np.array([0.1, 0.01])
    o = np.column_stack([4 - off, [-4.0, -4.0], [1.0, 1.0]])
    d, hit = cast(w, o, np.column_stack([np.sin(a), np.cos(a), [0.0, 0.0]]))
    assert d == pytest.approx(off / np.sin(a), abs=FACE_TOL_M) and hit.tolist() == [box] * 2
    d, hit = cast(w, [(-30, 0, 0.05)], [(np.cos(a[1]), 0, -np.sin(a[1]))], 40.0)
    assert d[0] == pytest.approx(0.05 / np.sin(a[1]), abs=FACE_TOL_M) and hit[0] == GROUND
    # Documented: a ray that starts within 1 mm of a box face (outside it) hits it at 0 m
    # on Bullet (its ray test's 1 mm tolerance; measured: 0 m from 1.0 mm, 1.01 mm from
    # 1.01 mm), at the exact distance on the fast backend; from 2 mm both agree.
    d, hit = cast(w, [(4 - 0.0005, 0, 1), (4 - 0.002, 0, 1)], [(1, 0, 0), (1, 0, 0)])
    assert hit.tolist() == [box, box] and d[1] == pytest.approx(0.002, abs=FACE_TOL_M)
    assert d[0] == (0.0 if name == "bullet" else pytest.approx(0.0005, abs=1e-12))


def random_scene(name: str, seed: int):
    """Ground, 12 random yawed boxes, a bumpy height grid, 30 random box bodies."""
    rng = np.random.default_rng(seed)
    w = world(name)
    for _ in range(12):
        c = rng.uniform((-15, -15, 0), (15, 15, 6))
        w.add_box(c, rng.uniform(0.5, 4.0, 3), yaw_rad=float(rng.uniform(-np.pi, np.pi)))
    g = np.linspace(-20, 20, 41)
    heights = 1.5 * np.sin(g[None, :] / 3) * np.cos(g[:, None] / 4) + 1.0
    w.add_heightfield(Heightfield(heights, 1.0, (-20.0, -20.0)))
    pos = rng.uniform((-15, -15, 3), (15, 15, 12), (30, 3))
    w.add_bodies(BodyShape(half_extents=(0.25, 0.25, 0.06)), 1.0, pos)
    o = rng.uniform((-15, -15, 2), (15, 15, 14), (4000, 3))
    d = rng.standard_normal((4000, 3))
    return w, o, d / np.linalg.norm(d, axis=1, keepdims=True)


def test_the_same_scene_gives_the_same_hits_on_both_backends() -> None:
    # 4,000 random rays (25 m) through boxes, a height grid and bodies: the same thing hit on
    # both but for rays that graze an edge (measured: 1 of 4,000, which Bullet sees hit the
    # terrain 7e-5 m beyond its border), distances within CROSS_TOL_M (the terrain and the
    # ground within 1e-5 m). Bodies are boxes here, the shape both backends share.
    (wb, o, d), (wf, _, _) = random_scene("bullet", 7), random_scene("fast", 7)
    db, hb = wb.cast_rays(o, d, 25.0)
    df, hf = wf.cast_rays(o, d, 25.0)
    assert 0.3 < np.mean(hf != MISS) < 0.95  # the scene is neither empty nor a closed box
    assert {h for h in hf.tolist() if h >= 0} and {h for h in hf.tolist() if h <= -2}
    same = hb == hf
    assert np.count_nonzero(~same) <= 4  # 0.1 %
    hit = same & (hf != MISS)
    assert np.abs(db[hit] - df[hit]).max() < CROSS_TOL_M
    smooth = hit & ((hf == GROUND) | (hf == obstacle_id(12)))  # the ground and the terrain
    assert np.count_nonzero(smooth) > 500 and np.abs(db[smooth] - df[smooth]).max() < 1e-5
    assert np.all(np.isinf(db[same & (hf == MISS)])) and np.all(np.isinf(df[same & (hf == MISS)]))


def test_bullet_casts_more_rays_than_one_batch_allows() -> None:
    # pybullet refuses more than 16,384 rays in one rayTestBatch (and answers 16,383 of that
    # many): 40,000 go in three batches and every ray comes back (down from 2 m: the ground).
    w = world("bullet")
    o = np.column_stack([np.linspace(-50, 50, 40_000), np.zeros(40_000), np.full(40_000, 2.0)])
    d, hit = w.cast_rays(o, np.tile((0.0, 0.0, -1.0), (40_000, 1)), 5.0)
    assert len(d) == 40_000 and np.all(hit == GROUND) and np.allclose(d, 2.0, atol=1e-9)


def cast_fast(w, o, d, t_max, cells_per_object, fn=fast_rays.cast_rays):
    """The fast world's cast with a grid of `cells_per_object` (0: one cell, the brute
    force) through the compiled entry `fn`."""
    scene = w.ray_scene()
    grid = ray_grid.build(*scene[1:4], *scene[5:7], scene[10], cells_per_object)
    dist, hit = np.empty(len(o)), np.empty(len(o), dtype=np.int64)
    fn(np.ascontiguousarray(o), np.ascontiguousarray(d), t_max, scene, grid, dist, hit)
    return dist, hit, grid


def crowded_scene(seed: int):
    """random_scene's boxes and terrain, 400 tumbling bodies packed into 20 x 20 x 6 m (a few
    per grid cell), rays from among them; the edge rays of `edge_rays` appended."""
    rng = np.random.default_rng(seed)
    w, o, d = random_scene("fast", seed)
    q = rng.standard_normal((400, 4))
    w.add_bodies(
        BodyShape(half_extents=(0.25, 0.25, 0.06)), 1.0,
        rng.uniform((-10, -10, 3), (10, 10, 9), (400, 3)), q / np.linalg.norm(q, axis=1)[:, None],
    )  # fmt: skip
    return w, o, d


def test_the_grid_gives_the_brute_force_result_bit_for_bit() -> None:
    # 4,000 random rays (25 m) among 12 boxes, a height grid and 430 bodies; the fine grid
    # (a few objects per cell) against the one-cell grid, which tests every object for every
    # ray. Plus the edges: a ray whose hit on a box face is exactly at max range (it counts),
    # one a hair short of it (a miss), rays tangent to a body's bounding sphere and in the
    # plane of its box's face, a ray starting inside a body and one outside the whole grid.
    w, o, d = crowded_scene(5)
    (slot,) = w.add_bodies(BodyShape(half_extents=(0.25, 0.25, 0.0625)), 1.0, [(0, 30, 20)])
    rad = w._radius[slot]
    box = w.add_box((40.0, 0.0, 1.0), (2.0, 2.0, 2.0))
    edge_o = [(30, 0, 1), (30, 0, 1), (-5, 30 + rad, 20), (-5, 30.25, 20), (0, 30, 20),
              (-100, -100, 50)]  # fmt: skip
    edge_d = [(1, 0, 0), (1, 0, 0), (1, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
    o, d = np.vstack([o, edge_o]).astype(float), np.vstack([d, edge_d]).astype(float)
    fine, f_hit, grid = cast_fast(w, o, d, 25.0, 4.0)
    brute, b_hit, one = cast_fast(w, o, d, 25.0, 0.0)
    assert np.prod(one[2]) == 1 and np.prod(grid[2]) > 400  # one cell, and a real grid
    # bodies hit (measured 6.4 % of the rays, 256) and open sky
    assert np.mean(f_hit >= 0) > 0.04 and np.mean(f_hit == MISS) > 0.05
    assert np.array_equal(fine, brute) and np.array_equal(f_hit, b_hit)
    # the box face at x = 39, 9 m from x = 30: exactly at max range 9 is a hit, at 9 - 1e-9
    # not; a tangent to the sphere and a ray in the body's face plane y = 30.25 miss the body
    # (grazing), one from the body's centre does not see it; up from outside: nothing
    at, at_hit, _ = cast_fast(w, o[-6:], d[-6:], 9.0, 4.0)
    short, short_hit, _ = cast_fast(w, o[-6:], d[-6:], 9.0 - 1e-9, 4.0)
    assert at[0] == 9.0 and at_hit[0] == box and short_hit[0] == MISS
    assert at_hit[2:].tolist() == [MISS] * 4 and short_hit[1:].tolist() == [MISS] * 5


def test_the_threaded_cast_is_bit_identical_to_the_serial_one() -> None:
    w, o, d = crowded_scene(3)
    serial = cast_fast(w, o, d, 25.0, 4.0)
    threaded = cast_fast(w, o, d, 25.0, 4.0, fast_rays.cast_rays_parallel)
    assert np.array_equal(serial[0], threaded[0]) and np.array_equal(serial[1], threaded[1])


def test_both_shipped_backends_declare_rays_and_the_seam_default_refuses() -> None:
    assert backend_class("bullet").capabilities.rays and backend_class("fast").capabilities.rays
    from skyswarm.core.backends import Capabilities, World

    assert Capabilities().rays  # the whole seam; a backend without rays says rays=False
    with pytest.raises(NotImplementedError, match="casts no rays"):
        World.cast_rays(make_world("fast"), np.zeros((1, 3)), np.ones((1, 3)), 1.0)
    assert obstacle_id(0) == -2
