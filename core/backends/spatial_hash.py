"""Body-body contacts of the fast backend (numba): a spatial hash over the bodies' cells and an
oriented-box separating-axis test; not O(N^2): each body meets only the bodies of its own and
neighbouring cells."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from skyswarm.core.backends.fast_kernel import _opts, _rot


@nb.njit(**_opts)
def _cell_hash(ix, iy, iz, mask):
    return ((ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)) & mask


@nb.njit(**_opts)
def body_pairs(slots, pos, quat, half, offset, radius, margin, out_a, out_b, out_p):
    """Body-body contacts within `margin` m (oriented boxes, separating-axis test), found
    through a spatial hash of cell size 2 max(radius) + margin: each body is checked only
    against the bodies of its own and the 26 neighbouring cells. Pairs go into out_* in slot
    order (a < b); returns their count (may exceed the arrays: then call with larger ones)."""
    n = len(slots)
    if n < 2:
        return 0
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
        hh = _cell_hash(cell[i, 0], cell[i, 1], cell[i, 2], mask)
        nxt[i] = head[hh]
        head[hh] = i
    Ra = np.empty((3, 3))
    Rb = np.empty((3, 3))
    sat = np.empty((2, 3))
    count = 0
    for i in range(n):
        # half of the 27-cell shell: the own cell (pairs j > i) and the 13 neighbours after it
        # (every j): each unordered pair of neighbouring cells is visited from one side only
        for m in range(13, 27):
            cx = cell[i, 0] + m // 9 - 1
            cy = cell[i, 1] + (m // 3) % 3 - 1
            cz = cell[i, 2] + m % 3 - 1
            j = head[_cell_hash(cx, cy, cz, mask)]
            while j >= 0:
                same = cell[j, 0] == cx and cell[j, 1] == cy and cell[j, 2] == cz
                if same and (m > 13 or j > i):
                    sa, sb = slots[i], slots[j]
                    if _boxes_touch(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat):
                        if count < len(out_a):
                            out_a[count], out_b[count] = min(sa, sb), max(sa, sb)
                            for k in range(3):
                                out_p[count, k] = 0.5 * (pos[sa, k] + pos[sb, k])
                        count += 1
                j = nxt[j]
    return count


@nb.njit(**_opts)
def _boxes_touch(sa, sb, pos, quat, half, offset, radius, margin, Ra, Rb, sat):
    """Separating-axis test of the two bodies' oriented boxes, grown by `margin`."""
    d0, d1, d2 = pos[sb, 0] - pos[sa, 0], pos[sb, 1] - pos[sa, 1], pos[sb, 2] - pos[sa, 2]
    reach = radius[sa] + radius[sb] + margin
    if d0 * d0 + d1 * d1 + d2 * d2 > reach * reach:
        return False
    _rot(quat[sa], Ra)
    _rot(quat[sb], Rb)
    t, ax = sat[0], sat[1]  # box centre b - box centre a (world); the axis tested
    for k in range(3):
        t[k] = (
            (pos[sb, k] - pos[sa, k])
            + (Rb[k, 0] * offset[sb, 0] + Rb[k, 1] * offset[sb, 1] + Rb[k, 2] * offset[sb, 2])
            - (Ra[k, 0] * offset[sa, 0] + Ra[k, 1] * offset[sa, 1] + Ra[k, 2] * offset[sa, 2])
        )
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
        if abs(t[0] * ax[0] + t[1] * ax[1] + t[2] * ax[2]) > ra + rb + margin:
            return False
    return True
