"""Compiled ray casts of the fast backend (numba): every ray of a sensor tick in one call,
against the ground plane, the static boxes, one height-grid terrain and the dynamic bodies.

Per ray, the nearest hit at a distance t in [0, max_range] along a unit direction:
- ground z = 0: t = -z0 / dz for a ray above the ground going down;
- a box (yawed about z): the slab test in the box's frame;
- a body (an oriented box: half extents, centre offset, the body's rotation): rejected by its
  bounding sphere first, then the slab test in the body's frame;
- the terrain: the grid cells under the ray walked in order (a 2-D DDA over the ray's x-y
  trace, clipped to the grid), each cell's two triangles (the diagonal of
  core/backends/terrain.py) intersected exactly (Moller-Trumbore, both faces); the first cell
  with a hit holds the nearest one, since a cell's triangles lie in its own x-y column.
The boxes and bodies are found through a uniform grid (core/backends/ray_grid.py, built
per call): a ray walks the cells it crosses in order (a 3-D DDA from where it enters the grid)
and tests the objects entered there, stopping once its nearest hit lies before the exit of the
cell it is in; a hit always lies in a cell holding its object, so the result is the brute
force's, bit for bit (a one-cell grid is the brute force; tests/core/test_rays.py compares
them). Of equal distances the ground wins, then the lower object number (boxes before
bodies), then the terrain.

A ray that starts inside a box or body does not see that solid (it sees what lies beyond it),
as Bullet's ray test does for a convex shape (on Bullet a UAV is several convex parts:
the lidar skips its own UAV's others itself, uav/sensors/lidar.py).
A ray that lies in the plane of a face (grazing) misses that box, as on Bullet; a ray just
inside the face hits it; a ray that only touches a body's bounding sphere (tangent) is tested
against its box like any other (tests/core/test_rays.py). A hit exactly at max_range counts.

`scene` is the tuple (ground, box centres (B, 3), box half sizes (B, 3), box cos/sin of yaw
(B, 2), box ids (B,), live slots (L,), positions, orientations, half extents, offsets, radii
(all by slot), terrain heights (ny, nx), (x0, y0, cell, top), terrain id); `grid` is
ray_grid.build's. `cast_rays` runs on one thread, `cast_rays_parallel` on numba's threads;
both run `cast_range` (one kernel body) and each ray writes only its own row, so both give
bit-identical results.
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.frames import rotation_matrix
from skyswarm.core.jit import ahead, njit, prange

MISS = np.iinfo(np.int64).min  # the hit id of a ray that hits nothing within range
NO_OBJECT = np.iinfo(np.int64).max  # a walk's nearest object before it found one
_opts = {"fastmath": False, "nogil": True}


@njit(**_opts)
def slab(px, py, pz, dx, dy, dz, hx, hy, hz, t_max):
    """Entry distance of the ray p + t d (box frame) into the box |x| <= h, or inf when it
    misses within [0, t_max], starts inside the box or runs in the plane of a face."""
    t0, t1 = -math.inf, math.inf
    for p, d, h in ((px, dx, hx), (py, dy, hy), (pz, dz, hz)):
        if d == 0.0:
            if p <= -h or p >= h:  # in a face's plane or outside: grazing misses, as Bullet's
                return math.inf
            continue
        a, b = (-h - p) / d, (h - p) / d
        if a > b:
            a, b = b, a
        t0, t1 = max(t0, a), min(t1, b)
    if t0 > t1 or t0 < 0.0 or t0 > t_max:
        return math.inf
    return t0


@njit(**_opts)
def triangle(ox, oy, oz, dx, dy, dz, ax, ay, az, bx, by, bz, cx, cy, cz):
    """Distance along the ray to the triangle a, b, c (corners m), inf when it misses or a
    corner is NaN (no terrain there)."""
    e1x, e1y, e1z = bx - ax, by - ay, bz - az
    e2x, e2y, e2z = cx - ax, cy - ay, cz - az
    px, py, pz = dy * e2z - dz * e2y, dz * e2x - dx * e2z, dx * e2y - dy * e2x
    det = e1x * px + e1y * py + e1z * pz
    if not abs(det) > 1e-15:  # parallel, degenerate or NaN
        return math.inf
    inv = 1.0 / det
    sx, sy, sz = ox - ax, oy - ay, oz - az
    u = (sx * px + sy * py + sz * pz) * inv
    if u < -1e-12 or u > 1.0 + 1e-12:
        return math.inf
    qx, qy, qz = sy * e1z - sz * e1y, sz * e1x - sx * e1z, sx * e1y - sy * e1x
    v = (dx * qx + dy * qy + dz * qz) * inv
    if v < -1e-12 or u + v > 1.0 + 1e-12:
        return math.inf
    t = (e2x * qx + e2y * qy + e2z * qz) * inv
    return t if t >= 0.0 else math.inf


@njit(**_opts)
def cell_hit(hf, x0, y0, cell, i, j, ox, oy, oz, dx, dy, dz):
    """Nearest hit of the ray on the two triangles of grid cell (i, j), or inf."""
    xa, xb, ya, yb = x0 + i * cell, x0 + (i + 1) * cell, y0 + j * cell, y0 + (j + 1) * cell
    z00, z10, z11, z01 = hf[j, i], hf[j, i + 1], hf[j + 1, i + 1], hf[j + 1, i]
    return min(
        triangle(ox, oy, oz, dx, dy, dz, xa, ya, z00, xb, ya, z10, xb, yb, z11),
        triangle(ox, oy, oz, dx, dy, dz, xa, ya, z00, xb, yb, z11, xa, yb, z01),
    )


@njit(**_opts)
def terrain_hit(hf, x0, y0, cell, top, ox, oy, oz, dx, dy, dz, t_max):
    """Nearest hit of the ray on the height grid within t_max (inf if none): the cells under
    its x-y trace in order (DDA), the first with a hit ending the walk."""
    ny, nx = hf.shape
    if ny < 2 or (oz > top and dz >= 0.0):
        return math.inf
    if dz < 0.0 and oz > top:  # start where the ray comes down to the highest sample
        t_start = (oz - top) / -dz
    else:
        t_start = 0.0
    w, h = (nx - 1) * cell, (ny - 1) * cell
    t_lo, t_hi = t_start, t_max
    for p, d, lo, hi in ((ox, dx, x0, x0 + w), (oy, dy, y0, y0 + h)):
        if d == 0.0:
            if p < lo or p > hi:
                return math.inf
            continue
        a, b = (lo - p) / d, (hi - p) / d
        if a > b:
            a, b = b, a
        t_lo, t_hi = max(t_lo, a), min(t_hi, b)
    if t_lo > t_hi:
        return math.inf
    # The cell of the entry point, then step across cell borders in x or y (whichever first)
    px, py = ox + t_lo * dx, oy + t_lo * dy
    i = min(max(int(math.floor((px - x0) / cell)), 0), nx - 2)
    j = min(max(int(math.floor((py - y0) / cell)), 0), ny - 2)
    si = 1 if dx > 0.0 else -1
    sj = 1 if dy > 0.0 else -1
    tx = ((x0 + (i + (si > 0)) * cell) - ox) / dx if dx != 0.0 else math.inf
    ty = ((y0 + (j + (sj > 0)) * cell) - oy) / dy if dy != 0.0 else math.inf
    step_x = cell / abs(dx) if dx != 0.0 else math.inf
    step_y = cell / abs(dy) if dy != 0.0 else math.inf
    while True:
        t = cell_hit(hf, x0, y0, cell, i, j, ox, oy, oz, dx, dy, dz)
        if t <= t_max:
            return t
        if tx < ty:
            if tx > t_hi:
                return math.inf
            i += si
            tx += step_x
        else:
            if ty > t_hi:
                return math.inf
            j += sj
            ty += step_y
        if i < 0 or i > nx - 2 or j < 0 or j > ny - 2:
            return math.inf


@njit(**_opts)
def object_hit(
    o, ox, oy, oz, dx, dy, dz, box_c, box_h, box_cs, live, pos, orient, half, offset, radius,
    rot, t_max,
):  # fmt: skip
    """Distance along the ray to object o of the grid (a box, then the live bodies: see
    core/backends/ray_grid.py), inf when it misses within t_max; the arrays are the scene's
    (see the module docstring). A body is asked only once the ray meets its bounding
    sphere (grid_hit tests that in line)."""
    nb = len(box_c)
    if o < nb:  # rotate into the box's frame: yaw -psi
        c, s = box_cs[o, 0], box_cs[o, 1]
        rx, ry, rz = ox - box_c[o, 0], oy - box_c[o, 1], oz - box_c[o, 2]
        return slab(
            c * rx + s * ry, -s * rx + c * ry, rz, c * dx + s * dy, -s * dx + c * dy, dz,
            box_h[o, 0], box_h[o, 1], box_h[o, 2], t_max,
        )  # fmt: skip
    b = live[o - nb]  # a body: its bounding sphere was passed (grid_hit)
    rx, ry, rz = pos[b, 0] - ox, pos[b, 1] - oy, pos[b, 2] - oz
    rotation_matrix(orient[b], rot)
    # the origin and direction in the body frame (R^T), about the box's centre
    px = rot[0, 0] * -rx + rot[1, 0] * -ry + rot[2, 0] * -rz - offset[b, 0]
    py = rot[0, 1] * -rx + rot[1, 1] * -ry + rot[2, 1] * -rz - offset[b, 1]
    pz = rot[0, 2] * -rx + rot[1, 2] * -ry + rot[2, 2] * -rz - offset[b, 2]
    ex = rot[0, 0] * dx + rot[1, 0] * dy + rot[2, 0] * dz
    ey = rot[0, 1] * dx + rot[1, 1] * dy + rot[2, 1] * dz
    ez = rot[0, 2] * dx + rot[1, 2] * dy + rot[2, 2] * dz
    return slab(px, py, pz, ex, ey, ez, half[b, 0], half[b, 1], half[b, 2], t_max)


@njit(**_opts)
def _axis(p, d, lo, cell, dims, t):
    """One axis of the walk: the cell index at distance t, its step, the distance to its
    next border and between borders."""
    i = min(max(int(math.floor((p + t * d - lo) / cell)), 0), dims - 1)
    if d == 0.0:
        return i, 0, math.inf, math.inf
    step = 1 if d > 0.0 else -1
    return i, step, (lo + (i + (step > 0)) * cell - p) / d, cell / abs(d)


@njit(**_opts)
def grid_hit(ox, oy, oz, dx, dy, dz, t_max, scene, grid, rot, best, best_o):
    """The nearest object along the ray: the grid's cells it crosses walked in order (3-D
    DDA), each object of a cell tested, until a hit lies before the cell's exit. Starts from
    (best, best_o) (best_o: -1 the ground, NO_OBJECT nothing) and returns the new pair; of
    equal distances the lower object number wins, as in the one-cell brute force."""
    lo, cell, dims, start, items = grid
    # unpacked once per ray: a tuple unpacked per object costs reference counts
    _, box_c, box_h, box_cs, _, live, pos, orient, half, offset, radius = scene[:11]
    t0, t1 = 0.0, min(best, t_max)
    for p, d, a in ((ox, dx, 0), (oy, dy, 1), (oz, dz, 2)):
        lower, upper = lo[a], lo[a] + dims[a] * cell
        if d == 0.0:
            if p < lower or p > upper:
                return best, best_o
            continue
        a0, a1 = (lower - p) / d, (upper - p) / d
        t0, t1 = max(t0, min(a0, a1)), min(t1, max(a0, a1))
    if t0 > t1:
        return best, best_o
    i, si, tx, sx = _axis(ox, dx, lo[0], cell, dims[0], t0)
    j, sj, ty, sy = _axis(oy, dy, lo[1], cell, dims[1], t0)
    k, sk, tz, sz = _axis(oz, dz, lo[2], cell, dims[2], t0)
    while True:
        c = i + dims[0] * (j + dims[1] * k)
        for m in range(start[c], start[c + 1]):
            o = items[m]
            if o >= len(box_c):  # a body: its bounding sphere first, in line (a call costs
                b = live[o - len(box_c)]  # more than this test, and most bodies fail it)
                rx, ry, rz = pos[b, 0] - ox, pos[b, 1] - oy, pos[b, 2] - oz
                tc, rad = rx * dx + ry * dy + rz * dz, radius[b]
                if rx * rx + ry * ry + rz * rz - tc * tc > rad * rad or tc + rad < 0.0:
                    continue  # missed or behind
                if tc - rad > min(best, t_max):
                    continue  # beyond the nearest hit
            t = object_hit(
                o, ox, oy, oz, dx, dy, dz, box_c, box_h, box_cs, live, pos, orient, half,
                offset, radius, rot, min(best, t_max),
            )  # fmt: skip
            if t < best or (t == best and o < best_o and t < math.inf):
                best, best_o = t, o
        t_exit = min(tx, ty, tz)
        if t_exit >= best or t_exit > t1:
            return best, best_o
        if tx == t_exit:
            i, tx = i + si, tx + sx
        elif ty == t_exit:
            j, ty = j + sj, ty + sy
        else:
            k, tz = k + sk, tz + sz
        if i < 0 or i >= dims[0] or j < 0 or j >= dims[1] or k < 0 or k >= dims[2]:
            return best, best_o


@njit(**_opts)
def cast_range(lo, hi, origins, dirs, t_max, scene, grid, out_d, out_hit):
    """Rays lo .. hi - 1: the nearest hit of each into out_d[r] (inf: none) and out_hit[r]
    (MISS: none), in the order ground, the grid's objects, the terrain (a later one replaces
    an earlier only when strictly nearer)."""
    ground, box_ids, live = scene[0], scene[4], scene[5]
    hf, terrain, terrain_id = scene[11], scene[12], scene[13]
    rot = np.empty((3, 3))
    for r in range(lo, hi):
        ox, oy, oz = origins[r, 0], origins[r, 1], origins[r, 2]
        dx, dy, dz = dirs[r, 0], dirs[r, 1], dirs[r, 2]
        best, best_o = math.inf, NO_OBJECT
        if ground and dz < 0.0 and oz > 0.0 and oz / -dz <= t_max:
            best, best_o = oz / -dz, -1
        best, best_o = grid_hit(ox, oy, oz, dx, dy, dz, t_max, scene, grid, rot, best, best_o)
        if best_o == NO_OBJECT:
            hit = MISS
        elif best_o < 0:
            hit = -1  # GROUND
        elif best_o < len(box_ids):
            hit = box_ids[best_o]
        else:
            hit = live[best_o - len(box_ids)]
        if len(hf) >= 2:
            t = terrain_hit(
                hf, terrain[0], terrain[1], terrain[2], terrain[3], ox, oy, oz, dx, dy, dz,
                min(best, t_max),
            )  # fmt: skip
            if t < best:
                best, hit = t, terrain_id
        out_d[r], out_hit[r] = best, hit


@njit(**_opts)
def cast_rays(origins, dirs, t_max, scene, grid, out_d, out_hit):
    """Every ray, (R, 3) origins m and (R, 3) unit directions, on one thread: `scene` and
    `grid` as `FastWorld.cast_rays` packs them (see the module docstring)."""
    cast_range(0, len(origins), origins, dirs, t_max, scene, grid, out_d, out_hit)


@njit(parallel=True, **_opts)
def cast_rays_parallel(origins, dirs, t_max, scene, grid, out_d, out_hit):
    """`cast_rays` on numba's threads, in chunks of 256 rays (bit-identical results)."""
    n = len(origins)
    for c in prange((n + 255) // 256):
        cast_range(c * 256, min(n, (c + 1) * 256), origins, dirs, t_max, scene, grid, out_d,
                   out_hit)  # fmt: skip


# The types FastWorld.cast_rays calls them with (compiled before the clock: core/jit.py):
# the scene tuple (module docstring) and ray_grid.build's grid.
_SCENE = "(? f8[2] f8[2] f8[2] i8[1] i8[1] f8[2] f8[2] f8[2] f8[2] f8[1] f8[2] f8[1] i8)"
_GRID = "(f8[1] f8 i8[1] i8[1] i8[1])"
_CAST = f"f8[2] f8[2] f8 {_SCENE} {_GRID} f8[1] i8[1]"
ahead(cast_rays, _CAST)
ahead(cast_rays_parallel, _CAST)
