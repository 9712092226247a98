"""Body-body contacts of the fast backend (numba): a spatial hash over the bodies' cells and an
oriented-box separating-axis test; not O(N^2): each body meets only the bodies of its own and
neighbouring cells.

The fast backend keeps a Verlet list: the hash finds the candidate pairs whose bounding spheres
are within a skin of touching (`body_pairs` with skin > 0), and each tick only the candidates
are tested (`touching`) until a body has moved more than half the skin since (`moved`). Two
bodies that touch now were then within their radii + margin + skin, so the contacts are exactly
those of a full search, tick by tick (tests/core/test_backends_parallel.py). Rotations are
core/frames.py's, as in every kernel."""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.backends.fast_kernel import _opts
from skyswarm.core.frames import rotation_matrix as _rot
from skyswarm.core.jit import ahead, njit, prange


@njit(**_opts)
def cell_hash(ix, iy, iz, mask):
    """The bucket in [0, mask] of the integer grid cell (ix, iy, iz)."""
    return ((ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)) & mask


@njit(**_opts)
def _build(slots, pos, radius, margin):
    """The hash of the live bodies: cell size h = 2 max(radius) + margin, a table of 2^k >= 2n
    list heads, each body's next index and integer cell; and the (n,) pair counts (zeros) and
    first rows (-1: counting) of `_pairs_range`."""
    n = len(slots)
    rmax = 0.0
    for i in range(n):
        rmax = max(rmax, radius[slots[i]])
    h = 2.0 * rmax + margin
    size = 1
    while size < 2 * n:
        size *= 2
    mask = size - 1
    head = np.full(size, -1, dtype=np.int64)
    nxt = np.empty(n, dtype=np.int64)
    cell = np.empty((n, 3), dtype=np.int64)
    for i in range(n):
        s = slots[i]
        for k in range(3):
            cell[i, k] = int(math.floor(pos[s, k] / h))
        hh = cell_hash(cell[i, 0], cell[i, 1], cell[i, 2], mask)
        nxt[i] = head[hh]
        head[hh] = i
    return mask, head, nxt, cell, np.zeros(n, dtype=np.int64), np.full(n, -1, dtype=np.int64)


@njit(**_opts)
def _pairs_range(
    lo, hi, slots, pos, quat, half, offset, radius, margin, mask, head, nxt, cell, out_a, out_b,
    out_p, counts, first, skin,
):  # fmt: skip
    """The contacts of the bodies lo .. hi - 1, each with the bodies after it in the visiting
    order: its own cell (pairs j > i) and the 13 neighbouring cells after it (every j), so each
    unordered pair of neighbouring cells is visited from one side only. Counting (first[0] <
    0): counts[i] = body i's pairs. Writing: body i's pairs go to out_* from row first[i] on
    (while they fit), for the bodies with counts[i] > 0. With skin > 0, candidates instead:
    the pairs whose bounding spheres are closer than margin + skin."""
    Ra, Rb, sat = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    write = first[0] >= 0
    for i in range(lo, hi):
        if write and counts[i] == 0:
            continue
        count = 0
        for m in range(13, 27):
            cx = cell[i, 0] + m // 9 - 1
            cy = cell[i, 1] + (m // 3) % 3 - 1
            cz = cell[i, 2] + m % 3 - 1
            j = head[cell_hash(cx, cy, cz, mask)]
            while j >= 0:
                same = cell[j, 0] == cx and cell[j, 1] == cy and cell[j, 2] == cz
                if same and (m > 13 or j > i):
                    sa, sb = slots[i], slots[j]
                    if skin > 0.0:
                        d0 = pos[sb, 0] - pos[sa, 0]
                        d1 = pos[sb, 1] - pos[sa, 1]
                        d2 = pos[sb, 2] - pos[sa, 2]
                        reach = radius[sa] + radius[sb] + margin + skin
                        hit = d0 * d0 + d1 * d1 + d2 * d2 <= reach * reach
                    else:
                        hit = _boxes_touch(
                            sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat
                        )
                    if hit:
                        k = first[i] + count
                        if write and k < len(out_a):
                            out_a[k], out_b[k] = min(sa, sb), max(sa, sb)
                            for e in range(3):
                                out_p[k, e] = 0.5 * (pos[sa, e] + pos[sb, e])
                        count += 1
                j = nxt[j]
        counts[i] = count


@njit(**_opts)
def _first_rows(counts, first):
    """Each body's first output row (prefix sum of `counts` into `first`); returns the total."""
    total = 0
    for i in range(len(counts)):
        first[i] = total
        total += counts[i]
    return total


@njit(**_opts)
def body_pairs(slots, pos, quat, half, offset, radius, margin, skin, out_a, out_b, out_p):
    """Body-body contacts within `margin` m (oriented boxes, separating-axis test), found
    through a spatial hash of cell size 2 max(radius) + margin (+ skin): each body is checked
    only against the bodies of its own and the 26 neighbouring cells. Pairs go into out_* in
    body order (a < b within a pair); returns their count (may exceed the arrays: then call
    again with larger ones). With skin > 0: the candidate pairs of `touching` instead, whose
    bounding spheres are closer than margin + skin."""
    n = len(slots)
    if n < 2:
        return 0
    mask, head, nxt, cell, counts, first = _build(slots, pos, radius, margin + skin)
    args = (slots, pos, quat, half, offset, radius, margin, mask, head, nxt, cell)
    _pairs_range(0, n, *args, out_a, out_b, out_p, counts, first, skin)
    total = _first_rows(counts, first)
    if total:
        _pairs_range(0, n, *args, out_a, out_b, out_p, counts, first, skin)
    return total


CHUNK = 256  # bodies per work item of body_pairs_parallel (fixed: not the thread count)


@njit(parallel=True, **_opts)
def body_pairs_parallel(
    slots, pos, quat, half, offset, radius, margin, skin, out_a, out_b, out_p
):  # fmt: skip
    """`body_pairs` on numba's threads, with the same result in the same order: the hash is
    built serially, each body counts its pairs (read-only, in parallel), a prefix sum gives
    each body its first row, then only the bodies with pairs write them (in parallel)."""
    n = len(slots)
    if n < 2:
        return 0
    mask, head, nxt, cell, counts, first = _build(slots, pos, radius, margin + skin)
    chunks = (n + CHUNK - 1) // CHUNK
    for ch in prange(chunks):
        _pairs_range(
            ch * CHUNK, min(n, (ch + 1) * CHUNK), slots, pos, quat, half, offset, radius,
            margin, mask, head, nxt, cell, out_a, out_b, out_p, counts, first, skin,
        )  # fmt: skip
    total = _first_rows(counts, first)
    if total:
        for ch in prange(chunks):
            _pairs_range(
                ch * CHUNK, min(n, (ch + 1) * CHUNK), slots, pos, quat, half, offset, radius,
                margin, mask, head, nxt, cell, out_a, out_b, out_p, counts, first, skin,
            )  # fmt: skip
    return total


@njit(**_opts)
def touching(cand_a, cand_b, pos, quat, half, offset, radius, margin, out_a, out_b, out_p):
    """The candidate pairs (cand_a < cand_b) whose oriented boxes are within `margin` m, in
    the candidates' order, into out_* (sized as the candidates); returns their count."""
    Ra, Rb, sat = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    k = 0
    for c in range(len(cand_a)):
        sa, sb = cand_a[c], cand_b[c]
        if _boxes_touch(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat):
            out_a[k], out_b[k] = sa, sb
            for e in range(3):
                out_p[k, e] = 0.5 * (pos[sa, e] + pos[sb, e])
            k += 1
    return k


@njit(**_opts)
def moved(slots, pos, ref, limit):
    """Whether a body of `slots` is more than `limit` m from its position in `ref`."""
    lim2 = limit * limit
    for i in range(len(slots)):
        s = slots[i]
        d0, d1, d2 = pos[s, 0] - ref[i, 0], pos[s, 1] - ref[i, 1], pos[s, 2] - ref[i, 2]
        if not d0 * d0 + d1 * d1 + d2 * d2 <= lim2:  # NaN too
            return True
    return False


@njit(**_opts)
def _boxes_touch(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat):
    """Separating-axis test of the two bodies' oriented boxes, grown by `margin` (scratch:
    Ra, Rb, sat (3, 3))."""
    return _boxes_overlap(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat) > -1e300


@njit(**_opts)
def _boxes_overlap(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat):
    """Separating-axis test of the two bodies' oriented boxes, grown by `margin`: -1e300 when
    separated, else the least overlap m over the 15 axes (negative, down to -margin, for boxes
    that touch only within the margin), its axis into sat[2], pointing from a to b."""
    d0, d1, d2 = pos[sb, 0] - pos[sa, 0], pos[sb, 1] - pos[sa, 1], pos[sb, 2] - pos[sa, 2]
    reach = radius[sa] + radius[sb] + margin
    if d0 * d0 + d1 * d1 + d2 * d2 > reach * reach:
        return -1e300
    _rot(quat[sa], Ra)
    _rot(quat[sb], Rb)
    t, ax, best = sat[0], sat[1], sat[2]  # centre b - centre a (world); the axis; the least
    for k in range(3):
        t[k] = (
            (pos[sb, k] - pos[sa, k])
            + (Rb[k, 0] * offset[sb, 0] + Rb[k, 1] * offset[sb, 1] + Rb[k, 2] * offset[sb, 2])
            - (Ra[k, 0] * offset[sa, 0] + Ra[k, 1] * offset[sa, 1] + Ra[k, 2] * offset[sa, 2])
        )
    least = 1e300
    for m in range(15):
        if m < 3:
            for k in range(3):
                ax[k] = Ra[k, m]
        elif m < 6:
            for k in range(3):
                ax[k] = Rb[k, m - 3]
        else:
            p, q = (m - 6) // 3, (m - 6) % 3
            ax[0] = Ra[1, p] * Rb[2, q] - Ra[2, p] * Rb[1, q]
            ax[1] = Ra[2, p] * Rb[0, q] - Ra[0, p] * Rb[2, q]
            ax[2] = Ra[0, p] * Rb[1, q] - Ra[1, p] * Rb[0, q]
            norm = math.sqrt(ax[0] * ax[0] + ax[1] * ax[1] + ax[2] * ax[2])
            if norm < 1e-9:  # parallel edges: the face axes already cover them
                continue
            for k in range(3):
                ax[k] /= norm
        ra = 0.0
        rb = 0.0
        for e in range(3):
            ra += half[sa, e] * abs(Ra[0, e] * ax[0] + Ra[1, e] * ax[1] + Ra[2, e] * ax[2])
            rb += half[sb, e] * abs(Rb[0, e] * ax[0] + Rb[1, e] * ax[1] + Rb[2, e] * ax[2])
        along = t[0] * ax[0] + t[1] * ax[1] + t[2] * ax[2]
        if abs(along) > ra + rb + margin:
            return -1e300
        if ra + rb - abs(along) < least:
            least = ra + rb - abs(along)
            sign = 1.0 if along >= 0.0 else -1.0
            for k in range(3):
                best[k] = sign * ax[k]
    return least


@njit(**_opts)
def resolve(a, b, pos, quat, vel, inv_m, half, offset, radius, margin, dt, force):
    """Resolve the touching pairs (a[k], b[k]) in order: along each pair's axis of least
    overlap (from a to b) a central inelastic impulse stops the bodies approaching (no
    friction, no torque), and an overlap is removed by moving the two apart in inverse
    proportion to their masses. force[k] = the impulse / dt, N. Momentum is conserved."""
    Ra, Rb, sat = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    for k in range(len(a)):
        sa, sb = a[k], b[k]
        depth = _boxes_overlap(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat)
        force[k] = 0.0
        if depth <= -1e300:
            continue
        n = sat[2]
        w = inv_m[sa] + inv_m[sb]
        vn = 0.0
        for e in range(3):
            vn += (vel[sb, e] - vel[sa, e]) * n[e]
        if vn < 0.0:
            j = -vn / w
            for e in range(3):
                vel[sa, e] -= j * inv_m[sa] * n[e]
                vel[sb, e] += j * inv_m[sb] * n[e]
            force[k] = j / dt
        if depth > 0.0:
            for e in range(3):
                pos[sa, e] -= depth * inv_m[sa] / w * n[e]
                pos[sb, e] += depth * inv_m[sb] / w * n[e]


# The types core/backends/fast.py calls them with (compiled before the clock: core/jit.py).
_PAIRS = "i8[1] f8[2] f8[2] f8[2] f8[2] f8[1] f8 f8 i8[1] i8[1] f8[2]"
ahead(body_pairs, _PAIRS)
ahead(body_pairs_parallel, _PAIRS)
ahead(touching, "i8[1] i8[1] f8[2] f8[2] f8[2] f8[2] f8[1] f8 i8[1] i8[1] f8[2]")
ahead(moved, "i8[1] f8[2] f8[2] f8")
ahead(resolve, "i8[1] i8[1] f8[2] f8[2] f8[2] f8[1] f8[2] f8[2] f8[1] f8 f8 f8[1]")
