"""The broad phase of the fast backend's ray casts: a uniform grid of the scene's boxes and live
bodies, built once per `cast_rays` call, so that a ray tests only what lies in the cells it
crosses instead of every object (core/backends/rays.py walks it).

Objects are numbered boxes first (0 .. B-1, the obstacle order), then the live bodies (B + i
for `live[i]`). Each is entered, by its axis-aligned bounding box grown by MARGIN_M, in every
cell that box overlaps: a box's yawed corners, a body's bounding sphere (centre, `radius`).
The cells are cubes of side `cell` over the bounds of all objects; their number is about
`cells_per_object` times the objects' (at most that many + 1), so a swarm spread over 1 km
and one packed into 10 m both get a few objects per cell. With `cells_per_object` = 0 the
grid is one cell holding every object: the brute force, which the tests compare it with.

The grid is CSR: cell (i, j, k) (x fastest) holds `items[start[c] : start[c + 1]]`,
c = i + nx (j + ny k), in ascending object number.

    lo, cell, dims, start, items = build(box_c, box_h, box_cs, live, pos, radius, 4.0)
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.jit import njit

# Objects are entered in the cells of their bounds grown by this much (m), so that a hit on a
# cell border found by the walk's rounded crossing distances is still in the cell walked.
MARGIN_M = 1e-6
_opts = {"fastmath": False, "nogil": True}


@njit(**_opts)
def bounds(box_c, box_h, box_cs, live, pos, radius):
    """(B + L, 2, 3) axis-aligned bounds (low, high) m of the boxes then the live bodies,
    grown by MARGIN_M."""
    nb = len(box_c)
    out = np.empty((nb + len(live), 2, 3))
    for k in range(nb):
        c, s = abs(box_cs[k, 0]), abs(box_cs[k, 1])  # a yawed box's x-y extents
        ext = (c * box_h[k, 0] + s * box_h[k, 1], s * box_h[k, 0] + c * box_h[k, 1], box_h[k, 2])
        for a in range(3):
            out[k, 0, a] = box_c[k, a] - ext[a] - MARGIN_M
            out[k, 1, a] = box_c[k, a] + ext[a] + MARGIN_M
    for i in range(len(live)):
        b = live[i]
        for a in range(3):
            out[nb + i, 0, a] = pos[b, a] - radius[b] - MARGIN_M
            out[nb + i, 1, a] = pos[b, a] + radius[b] + MARGIN_M
    return out


@njit(**_opts)
def layout(box, cells_per_object):
    """The grid's low corner (3,) m, cell side m and (3,) cell counts for the bounds `box`."""
    n = len(box)
    lo, hi = np.full(3, math.inf), np.full(3, -math.inf)
    for o in range(n):
        for a in range(3):
            lo[a], hi[a] = min(lo[a], box[o, 0, a]), max(hi[a], box[o, 1, a])
    dims = np.ones(3, dtype=np.int64)
    if n == 0:
        return np.zeros(3), 1.0, dims
    ext = np.maximum(hi - lo, 1e-9)
    budget = cells_per_object * n
    if budget < 2.0:
        return lo, max(ext[0], ext[1], ext[2]), dims  # one cell: the brute force
    cell = (ext[0] * ext[1] * ext[2] / budget) ** (1.0 / 3.0)
    while True:  # a flat swarm has one layer of cells in z: grow the side to the budget
        for a in range(3):
            dims[a] = max(1, int(math.ceil(ext[a] / cell)))
        if dims[0] * dims[1] * dims[2] <= budget + 1:
            return lo, cell, dims
        cell *= 1.1


@njit(**_opts)
def _cells_of(box, o, lo, cell, dims):
    """The cell numbers that object o's bounds overlap (clamped to the grid), ascending."""
    first, last = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64)
    for a in range(3):
        first[a] = min(max(int(math.floor((box[o, 0, a] - lo[a]) / cell)), 0), dims[a] - 1)
        last[a] = min(max(int(math.floor((box[o, 1, a] - lo[a]) / cell)), 0), dims[a] - 1)
    span = last - first + 1
    out = np.empty(span[0] * span[1] * span[2], dtype=np.int64)
    m = 0
    for k in range(first[2], last[2] + 1):
        for j in range(first[1], last[1] + 1):
            for i in range(first[0], last[0] + 1):
                out[m] = i + dims[0] * (j + dims[1] * k)
                m += 1
    return out


@njit(**_opts)
def build(box_c, box_h, box_cs, live, pos, radius, cells_per_object):
    """The grid of the boxes and the live bodies: (lo (3,) m, cell m, dims (3,), start
    (cells + 1,), items); see the module docstring."""
    box = bounds(box_c, box_h, box_cs, live, pos, radius)
    lo, cell, dims = layout(box, cells_per_object)
    start = np.zeros(dims[0] * dims[1] * dims[2] + 1, dtype=np.int64)
    for o in range(len(box)):  # count each cell's entries, then write them in object order
        for c in _cells_of(box, o, lo, cell, dims):
            start[c + 1] += 1
    for c in range(len(start) - 1):
        start[c + 1] += start[c]
    items = np.empty(start[-1], dtype=np.int64)
    cursor = start[:-1].copy()
    for o in range(len(box)):
        for c in _cells_of(box, o, lo, cell, dims):
            items[cursor[c]] = o
            cursor[c] += 1
    return lo, cell, dims, start, items
