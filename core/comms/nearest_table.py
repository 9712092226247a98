"""Each receiver's K nearest senders in range, the pairs of a bounded beacon table
(beacons.py, `neighbour_table = K` on a channel), with the pairs in range counted by receiver
and by sender: `nearest_pairs` and its threaded twin, the same table to the bit.

The pass never tests every pair in range. The located points are sorted into a uniform grid
of cubic cells (`_bin`) with running counts of each cell's points (located, senders, base
stations, base stations that send). Where many more than K senders may be in range of a
receiver (crowded), its pairs in range are counted from the cells wholly inside the range and
the points of the cells the range's edge crosses (`_count`), and its K nearest picked among
the points of a block of cells around it grown until it surely holds them (`_gather`, then
`_cut`); else every sender in range is gathered and counted on the way (`_all_in_range`).
Each receiver writes its rows at its own offset; spans of receivers then sort their rows by
sender (`_sort_rows`) and one pass packs them into CSR order (`_pack`).

Exactness: a cell counts as wholly in range, or is skipped as out of it, only with a margin
(`_bin`'s eps) far above any rounding of a coordinate, a cell's bounds or a distance; every
other point is tested by its squared distance, computed as the exact table computes it, so
the table, its distances and both counts are the brute-force definition's to the bit
(tests/core/test_beacons_nearest.py).
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.jit import ahead, njit, prange

_opts = {"fastmath": False, "nogil": True}


@njit(**_opts)
def nearest_pairs(pos, located, is_sender, base, base_only, range_m, k, grid, out):
    """Each located receiver's k nearest senders within `range_m` (inclusive), as CSR rows.

    pos (n, 3) m; located, is_sender, base (n,) bool (a sender is located; with `base_only` a
    pair needs a base station at one end); k >= 1. Nearest by squared distance, ties to the
    lower sender row. `grid` = (cell_of (n,), order (n,), pop (4, 4n + 65)) int64 scratch,
    `out` = (indptr (n + 1,), receiver, sender (n k',), dist (n k',) m, in_rx (n,), in_tx
    (n,)) buffers with k' = min(k, n - 1), reused across calls: rows sorted by receiver then
    sender, in_rx / in_tx the pairs in range (before the cut to k) per receiver / sender row.

    Returns the number of entries. The work (module doc) grows with the range's rim and with
    k where many more than k senders are in range, not with the pairs in range."""
    n = len(pos)
    dims = _bin(pos, located, is_sender, base, range_m, k, grid)
    stride = min(k, max(n - 1, 1))  # the most a receiver keeps: the buffers hold n of them
    kept = np.zeros(n, dtype=np.int64)
    _rows(0, n, pos, located, is_sender, base, base_only, range_m, k, grid, dims, out, kept)
    span = _span(n, stride)
    for r0 in range(0, n, span):
        _sort_rows(r0, min(n, r0 + span), n, stride, kept, out)
    return _pack(n, stride, kept, out)


# Receivers per work item of `nearest_pairs_parallel`: a fixed split, so the work never depends
# on the number of threads.
CHUNK = 256


@njit(parallel=True, **_opts)
def nearest_pairs_parallel(pos, located, is_sender, base, base_only, range_m, k, grid, out):
    """`nearest_pairs` (the same arguments, the same result to the bit) on numba's threads,
    CHUNK receivers per work item. Each receiver's rows and counts are its own (`_rows`),
    so the threads share no sums, and so are each span's sorts (`_sort_rows`); only the last
    copy into CSR order (`_pack`) runs on one thread."""
    n = len(pos)
    dims = _bin(pos, located, is_sender, base, range_m, k, grid)
    stride = min(k, max(n - 1, 1))
    kept = np.zeros(n, dtype=np.int64)
    for ch in prange((n + CHUNK - 1) // CHUNK):
        r1 = min(n, (ch + 1) * CHUNK)
        _rows(ch * CHUNK, r1, pos, located, is_sender, base, base_only, range_m, k, grid, dims,
              out, kept)  # fmt: skip
    span = _span(n, stride)
    for sp in prange((n + span - 1) // span):
        _sort_rows(sp * span, min(n, (sp + 1) * span), n, stride, kept, out)
    return _pack(n, stride, kept, out)


@njit(**_opts)
def _rows(r0, r1, pos, located, is_sender, base, base_only, range_m, k, grid, dims, out, kept):
    """Receivers r0 .. r1 - 1: each one's pairs in range counted (in_rx[r], and in_tx[r] as
    a sender), its k nearest (at most min(k, n - 1)) written in any order at its own offset
    r min(k, n - 1) of the output's sender and distance buffers, how many in kept[r]."""
    indptr, o_recv, o_send, o_dist, in_rx, in_tx = out
    n = len(pos)
    stride = min(k, max(n - 1, 1))
    cand_d, cand_s = np.empty(n), np.empty(n, dtype=np.int64)
    crowded = dims[8]
    for r in range(r0, r1):
        kept[r] = in_rx[r] = in_tx[r] = 0
        if not located[r]:
            continue
        if crowded:  # count by cells, gather near r only
            rx, tx, cells = _count(r, pos, is_sender, base, base_only, range_m, grid, dims)
            held = _gather(
                r, pos, base, base_only, range_m, k, rx, cells, grid, dims, cand_d, cand_s
            )
        else:  # few in range: every one gathered, and counted on the way
            held, tx = _all_in_range(r, pos, base, base_only, range_m, grid, dims, cand_d, cand_s)
            rx = held
        if held > k:
            _cut(cand_d, cand_s, held, k)
            held = k
        for a in range(held):
            o_send[r * stride + a] = cand_s[a]
            o_dist[r * stride + a] = math.sqrt(cand_d[a])
        kept[r] = held
        in_rx[r] = rx
        in_tx[r] = tx if is_sender[r] else 0


# Entries `_sort_rows` sorts at a time (with its buffers ~800 kB: a span stays in the cache;
# one sort of all 640,000 entries of hover at 10,000 with K 64 was 6.3 ms a round, 4.4 by spans).
PACK = 32768


@njit(**_opts)
def _span(n, stride):
    """Receivers per `_sort_rows` call: PACK entries' worth (fixed: the work never depends on
    the number of threads)."""
    return max(1, PACK // max(stride, 1))


@njit(**_opts)
def _sort_rows(r0, r1, n, stride, kept, out):
    """Sort the rows of receivers r0 .. r1 - 1 as `_rows` wrote them (receiver r's kept[r]
    entries at r stride of the sender and distance buffers, in any order) by sender, in place,
    in two stable counting sorts: by sender into a buffer the size of the span, then back by
    receiver. Linear in the entries, where sorting each row would cost k log k apiece, and the
    span's entries stay in the cache; spans touch only their own rows."""
    indptr, o_recv, o_send, o_dist, in_rx, in_tx = out
    start = np.zeros(n + 1, dtype=np.int64)  # the span's entries by sender: where each begins
    for r in range(r0, r1):
        for a in range(r * stride, r * stride + kept[r]):
            start[o_send[a] + 1] += 1
    for s in range(n):
        start[s + 1] += start[s]
    by_r = np.empty(start[n], dtype=np.int64)
    by_d = np.empty(start[n])
    for r in range(r0, r1):  # by sender; within a sender, by receiver
        for a in range(r * stride, r * stride + kept[r]):
            s = o_send[a]
            by_r[start[s]], by_d[start[s]] = r, o_dist[a]
            start[s] += 1
    fill = np.arange(r0, r1) * stride  # back by receiver: each row's senders in order
    q = 0
    for s in range(n):
        while q < start[s]:  # start[s] now ends sender s's entries
            at = fill[by_r[q] - r0]
            o_send[at], o_dist[at] = s, by_d[q]
            fill[by_r[q] - r0] += 1
            q += 1


@njit(**_opts)
def _pack(n, stride, kept, out):
    """The sorted rows (receiver r's kept[r] entries at r stride) moved into CSR order: indptr
    and the receivers set. A row moves down from r stride, never up, so one pass in order
    reads each entry before anything is written over it. Returns the number of entries."""
    indptr, o_recv, o_send, o_dist, in_rx, in_tx = out
    e = 0
    indptr[0] = 0
    for r in range(n):
        for a in range(r * stride, r * stride + kept[r]):
            o_recv[e], o_send[e], o_dist[e] = r, o_send[a], o_dist[a]
            e += 1
        indptr[r + 1] = e
    return e


# Cells across the range (`_bin`'s first cell size: SPLIT when crowded, else SPARSE_SPLIT;
# doubled while the grid would have more than CELLS_PER_POINT cells per located point, plus 64).
# Receivers count their pairs in range by cells and gather only near themselves (crowded) when
# `_bin`'s bound on the senders in range of one (a box the range's width: 4 / pi times a disc's
# count) is above CROWDED K; else they gather every sender in range, counting on the way.
# Measured (bench/beacon_table.py): hover at 10,000 on 30 m (bound 9 K at K 16, ~6.6 K in range)
# is faster gathering all; boids at 1,000 on 100 m (bound 15.6 K at K 64, ~9.4 K in range) by
# cells, 2.1 against 4.1 ms a round.
SPLIT = 16
SPARSE_SPLIT = 4
CELLS_PER_POINT = 2
CROWDED = 12


@njit(**_opts)
def _bin(pos, located, is_sender, base, range_m, k, grid):
    """Sort the located points into a uniform grid of cubic cells: range_m / SPLIT wide when
    crowded, else range_m / SPARSE_SPLIT, doubled until there are at most CELLS_PER_POINT
    cells per point plus 64 (one cell when the range is unlimited). grid's order lists the
    points cell by cell (increasing rows within a cell), cell_of holds each point's cell, and
    pop's rows the running counts over the cells (pop[q, c] = points of the cells before c)
    of the located points, the senders, the base stations and the base stations that send.
    Returns (lo (3,), cell size, nx, ny, nz, eps, at (m, 3), what (m,), crowded): eps, m, a
    margin far above the rounding of any coordinate or distance here, so that a cell is taken
    as wholly in range or wholly out of it only when all its points surely are; at and what
    the points' positions and flags (_SENDS, _BASE) in grid order; crowded whether a bound on
    the points in range of one (those of a box the range's width) exceeds CROWDED k."""
    cell_of, order, pop = grid
    n = len(pos)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    m = 0
    for i in range(n):
        if located[i]:
            m += 1
            for c in range(3):
                lo[c] = min(lo[c], pos[i, c])
                hi[c] = max(hi[c], pos[i, c])
    crowd = float(m)  # senders in range of a receiver, at most: the box of the range's width
    for c in range(3):
        if hi[c] - lo[c] > 2.0 * range_m:
            crowd *= 2.0 * range_m / (hi[c] - lo[c])
    crowded = crowd > CROWDED * k
    cell = max(range_m / (SPLIT if crowded else SPARSE_SPLIT), 1e-6) if m > 0 else np.inf
    nx = ny = nz = 1
    while math.isfinite(cell):
        fx = (hi[0] - lo[0]) // cell + 1.0  # counted in floats first: no integer overflow
        fy = (hi[1] - lo[1]) // cell + 1.0
        fz = (hi[2] - lo[2]) // cell + 1.0
        if fx * fy * fz <= CELLS_PER_POINT * m + 64:
            nx, ny, nz = int(fx), int(fy), int(fz)
            break
        cell *= 2.0
    ncell = nx * ny * nz
    pop[:, : ncell + 1] = 0
    for i in range(n):
        if located[i]:
            ci = 0
            if ncell > 1:
                ix = int((pos[i, 0] - lo[0]) // cell)
                iy = int((pos[i, 1] - lo[1]) // cell)
                ci = (int((pos[i, 2] - lo[2]) // cell) * ny + iy) * nx + ix
            cell_of[i] = ci
            pop[0, ci + 1] += 1
            if is_sender[i]:
                pop[1, ci + 1] += 1
            if base[i]:
                pop[2, ci + 1] += 1
                if is_sender[i]:
                    pop[3, ci + 1] += 1
    for q in range(4):
        for c in range(ncell):
            pop[q, c + 1] += pop[q, c]
    fill = pop[0, :ncell].copy()
    at = np.empty((m, 3))  # the positions in grid order, and what each point is (_SENDS, _BASE)
    what = np.zeros(m, dtype=np.int8)
    for i in range(n):
        if located[i]:
            j = fill[cell_of[i]]
            order[j] = i
            at[j, 0], at[j, 1], at[j, 2] = pos[i, 0], pos[i, 1], pos[i, 2]
            what[j] = (_SENDS if is_sender[i] else 0) | (_BASE if base[i] else 0)
            fill[cell_of[i]] += 1
    eps = 0.0
    if math.isfinite(cell):
        far = 0.0
        for c in range(3):
            far = max(far, abs(lo[c]), abs(hi[c]))
        eps = 1e-9 * (range_m + 3.0 * far + 2.0 * cell)
    return lo, cell, nx, ny, nz, eps, at, what, crowded


_SENDS, _BASE = 1, 2  # `_bin`'s flags of a point


@njit(**_opts)
def _floor_in(v, n):
    """floor(v) clamped to 0 .. n - 1."""
    if v <= 0.0:
        return 0
    if v >= n - 1:
        return n - 1
    return int(v)


@njit(**_opts)
def _near_far(p, a, b):
    """The nearest and the farthest distance from p to the interval [a, b]."""
    return max(a - p, p - b, 0.0), max(p - a, b - p)


@njit(**_opts)
def _count(r, pos, is_sender, base, base_only, range_m, grid, dims):
    """(senders r hears, located receivers that hear r, cells the range reaches) within
    range_m, r itself not counted, with `base_only`'s rule. Row of cells by row ((y, z)
    within range): the cells wholly in range are counted from pop's running counts, the
    points of the cells the range's edge crosses one by one, by squared distance as the
    table takes them."""
    cell_of, order, pop = grid
    lo, cell, nx, ny, nz, eps, at, what, crowded = dims
    hub = base_only and not base[r]  # only pairs with a base station at the other end count
    rx_q, tx_q = (3, 2) if hub else (1, 0)
    rx = tx = 0
    cells = 1
    if not math.isfinite(cell):  # one cell, unlimited range: every point
        rx, tx = pop[rx_q, 1], pop[tx_q, 1]
    else:
        cells = 0
        r2 = range_m * range_m
        rin, rout = range_m - eps, range_m + eps
        px, py, pz = pos[r, 0], pos[r, 1], pos[r, 2]
        inv = 1.0 / cell
        cx = (px - lo[0]) * inv  # r's place along x in cells
        y0, y1 = _floor_in((py - rout - lo[1]) * inv, ny), _floor_in((py + rout - lo[1]) * inv, ny)
        z0, z1 = _floor_in((pz - rout - lo[2]) * inv, nz), _floor_in((pz + rout - lo[2]) * inv, nz)
        for cz in range(z0, z1 + 1):
            dzn, dzf = _near_far(pz, lo[2] + cz * cell, lo[2] + (cz + 1) * cell)
            for cy in range(y0, y1 + 1):
                dyn, dyf = _near_far(py, lo[1] + cy * cell, lo[1] + (cy + 1) * cell)
                near2 = dyn * dyn + dzn * dzn
                if near2 > rout * rout:
                    continue
                w = math.sqrt(rout * rout - near2) * inv
                xa, xb = _floor_in(cx - w, nx), _floor_in(cx + w, nx)
                ia, ib = xb + 1, xb  # the cells wholly in range: none unless ...
                far2 = dyf * dyf + dzf * dzf
                if rin > 0.0 and far2 < rin * rin:
                    w = math.sqrt(rin * rin - far2) * inv
                    va, vb = cx - w, cx + w
                    ia = 0 if va <= 0.0 else (nx if va >= nx else int(math.ceil(va)))
                    ib = -1 if vb < 1.0 else (nx - 1 if vb >= nx else int(vb) - 1)
                    ia, ib = max(ia, xa), min(ib, xb)
                    if ia > ib:
                        ia, ib = xb + 1, xb
                row = (cz * ny + cy) * nx
                cells += xb - xa + 1
                rx += pop[rx_q, row + ib + 1] - pop[rx_q, row + ia]
                tx += pop[tx_q, row + ib + 1] - pop[tx_q, row + ia]
                for j0, j1 in (
                    (pop[0, row + xa], pop[0, row + ia]),
                    (pop[0, row + ib + 1], pop[0, row + xb + 1]),
                ):
                    for j in range(j0, j1):
                        dx = px - at[j, 0]
                        dy = py - at[j, 1]
                        dz = pz - at[j, 2]
                        inside = dx * dx + dy * dy + dz * dz <= r2  # summed, not branched on
                        if hub:
                            inside = inside and what[j] & _BASE != 0
                        tx += inside
                        rx += inside & what[j]  # what[j] & _SENDS, as _SENDS is 1
    if not hub:  # r itself was counted: it is in range of itself and passes the rule
        tx -= 1
        if is_sender[r]:
            rx -= 1
    return rx, tx, cells


@njit(**_opts)
def _gather(r, pos, base, base_only, range_m, k, count, cells, grid, dims, cand_d, cand_s):
    """Receiver r's candidates for its k nearest senders in range into cand_d (squared
    distances) and cand_s (rows), `count` being how many senders are in range; returns how
    many. Every one when count <= k. Else those of a cube of cells around r's, first as wide
    as k senders take at the density in range (`cells`: the cells the range reaches), then
    grown until it holds k senders nearer than any point outside it can be (ties included):
    to the width that the senders found so far, were they spread evenly over a disc, say k
    take, and at least by one cell."""
    cell_of, order, pop = grid
    lo, cell, nx, ny, nz, eps, at, what, crowded = dims
    if count == 0:
        return 0
    if not math.isfinite(cell):  # one cell, unlimited range: every point
        return _block(r, pos, base, base_only, range_m, grid, dims, 0, 0, 0, 0, 0, 0, cand_d,
                      cand_s)  # fmt: skip
    ci = cell_of[r]
    ix, iy, iz = ci % nx, (ci // nx) % ny, ci // (nx * ny)
    px, py, pz = pos[r, 0], pos[r, 1], pos[r, 2]
    # the faces of a cube of t cells each side of r's are >= t cells from r
    if count <= k:
        t = int((range_m + 2.0 * eps) / cell) + 1
    else:  # the cells that hold k senders at the density in range, as a disc or a ball
        need = k * cells / count
        if nz == 1:
            t = max(1, int(math.sqrt(need / math.pi) + 0.5))
        else:
            t = max(1, int((need * 0.75 / math.pi) ** (1.0 / 3.0) + 0.5))
    while True:
        x0, x1 = max(ix - t, 0), min(ix + t, nx - 1)
        y0, y1 = max(iy - t, 0), min(iy + t, ny - 1)
        z0, z1 = max(iz - t, 0), min(iz + t, nz - 1)
        held = _block(r, pos, base, base_only, range_m, grid, dims, x0, x1, y0, y1, z0, z1,
                      cand_d, cand_s)  # fmt: skip
        g = np.inf  # how near a point outside the cube can be
        if x0 > 0:
            g = min(g, px - (lo[0] + x0 * cell))
        if x1 < nx - 1:
            g = min(g, lo[0] + (x1 + 1) * cell - px)
        if y0 > 0:
            g = min(g, py - (lo[1] + y0 * cell))
        if y1 < ny - 1:
            g = min(g, lo[1] + (y1 + 1) * cell - py)
        if z0 > 0:
            g = min(g, pz - (lo[2] + z0 * cell))
        if z1 < nz - 1:
            g = min(g, lo[2] + (z1 + 1) * cell - pz)
        g -= eps
        if g >= range_m:  # the cube holds every sender in range
            return held
        near = 0
        if g > 0.0:
            g2 = g * g
            for a in range(held):
                if cand_d[a] < g2:
                    near += 1
            if near >= k:
                return held
        grow = 2 * t
        if near > 0:
            grow = int(g * math.sqrt(k / near) / cell) + 1
        t = max(t + 1, grow)


@njit(**_opts)
def _all_in_range(r, pos, base, base_only, range_m, grid, dims, cand_d, cand_s):
    """Every sender in range of receiver r (with `base_only`'s rule) into cand_d (squared
    distances) and cand_s (rows), the rows of cells within range_m cut to its reach. Returns
    (how many, how many points are in range by the rule, senders or not); r not counted.
    `_block`'s loop with the second count: a function of its own, so that `_block` stays
    small enough for the compiler to fold into `_gather`."""
    cell_of, order, pop = grid
    lo, cell, nx, ny, nz, eps, at, what, crowded = dims
    hub = base_only and not base[r]
    need = _SENDS | _BASE if hub else _SENDS
    rule = _BASE if hub else 0
    r2 = range_m * range_m
    px, py, pz = pos[r, 0], pos[r, 1], pos[r, 2]
    finite = math.isfinite(cell)
    rout = range_m + eps
    inv = 1.0 / cell
    cx = (px - lo[0]) * inv
    y0, y1, z0, z1 = 0, ny - 1, 0, nz - 1
    if finite:
        y0, y1 = _floor_in((py - rout - lo[1]) * inv, ny), _floor_in((py + rout - lo[1]) * inv, ny)
        z0, z1 = _floor_in((pz - rout - lo[2]) * inv, nz), _floor_in((pz + rout - lo[2]) * inv, nz)
    held = near = 0
    for cz in range(z0, z1 + 1):
        dzn = _near_far(pz, lo[2] + cz * cell, lo[2] + (cz + 1) * cell)[0] if finite else 0.0
        for cy in range(y0, y1 + 1):
            xa, xb = 0, nx - 1
            if finite:
                dyn = _near_far(py, lo[1] + cy * cell, lo[1] + (cy + 1) * cell)[0]
                near2 = dyn * dyn + dzn * dzn
                if near2 > rout * rout:
                    continue
                w = math.sqrt(rout * rout - near2) * inv
                xa, xb = _floor_in(cx - w, nx), _floor_in(cx + w, nx)
            row = (cz * ny + cy) * nx
            for j in range(pop[0, row + xa], pop[0, row + xb + 1]):
                dx = px - at[j, 0]
                dy = py - at[j, 1]
                dz = pz - at[j, 2]
                d2 = dx * dx + dy * dy + dz * dz
                cand_d[held] = d2  # written always, kept by the count (no branch to predict)
                cand_s[held] = order[j]
                other = d2 <= r2 and order[j] != r
                held += other and what[j] & need == need
                near += other and what[j] & rule == rule
    return held, near


@njit(**_opts)
def _block(r, pos, base, base_only, range_m, grid, dims, x0, x1, y0, y1, z0, z1, cand_d, cand_s):
    """The senders in range of receiver r in the cells x0..x1, y0..y1, z0..z1 (with
    `base_only`'s rule) into cand_d (squared distances) and cand_s (rows); returns how many.
    Each row of cells is cut to the range's reach first."""
    cell_of, order, pop = grid
    lo, cell, nx, ny, nz, eps, at, what, crowded = dims
    need = _SENDS | _BASE if base_only and not base[r] else _SENDS
    r2 = range_m * range_m
    px, py, pz = pos[r, 0], pos[r, 1], pos[r, 2]
    finite = math.isfinite(cell)
    rout = range_m + eps
    inv = 1.0 / cell
    cx = (px - lo[0]) * inv
    held = 0
    for cz in range(z0, z1 + 1):
        dzn = _near_far(pz, lo[2] + cz * cell, lo[2] + (cz + 1) * cell)[0] if finite else 0.0
        for cy in range(y0, y1 + 1):
            xa, xb = x0, x1
            if finite:
                dyn = _near_far(py, lo[1] + cy * cell, lo[1] + (cy + 1) * cell)[0]
                near2 = dyn * dyn + dzn * dzn
                if near2 > rout * rout:
                    continue
                w = math.sqrt(rout * rout - near2) * inv
                xa, xb = max(xa, _floor_in(cx - w, nx)), min(xb, _floor_in(cx + w, nx))
            row = (cz * ny + cy) * nx
            for j in range(pop[0, row + xa], pop[0, row + xb + 1]):
                dx = px - at[j, 0]
                dy = py - at[j, 1]
                dz = pz - at[j, 2]
                d2 = dx * dx + dy * dy + dz * dz
                cand_d[held] = d2  # written always, kept by the count (no branch to predict)
                cand_s[held] = order[j]
                held += d2 <= r2 and what[j] & need == need and order[j] != r
    return held


@njit(**_opts)
def _before(da, sa, db, sb):
    """(da, sa) orders before (db, sb): nearer, or as near and a lower sender row."""
    return da < db or (da == db and sa < sb)


@njit(**_opts)
def _select(d, s, lo, hi, k):
    """Reorder d[lo:hi], s[lo:hi] in place so that its k first entries (k < hi - lo) are the k
    smallest by (distance, sender row), in any order (quickselect, median-of-three pivot)."""
    while hi - lo > 1:
        mid = (lo + hi - 1) // 2
        a, b, c = lo, mid, hi - 1  # the median of three as pivot
        if _before(d[b], s[b], d[a], s[a]):
            a, b = b, a
        if _before(d[c], s[c], d[b], s[b]):
            b = c
            if _before(d[b], s[b], d[a], s[a]):
                b = a
        pd, ps = d[b], s[b]
        i, j = lo, hi - 1
        while i <= j:
            while _before(d[i], s[i], pd, ps):
                i += 1
            while _before(pd, ps, d[j], s[j]):
                j -= 1
            if i <= j:
                d[i], d[j] = d[j], d[i]
                s[i], s[j] = s[j], s[i]
                i += 1
                j -= 1
        if lo + k <= j:
            hi = j + 1
        elif lo + k >= i:
            k -= i - lo
            lo = i
        else:
            return


_BUCKETS = 64  # buckets of squared distance that `_cut` sorts a receiver's candidates into


@njit(**_opts)
def _cut(d, s, held, k):
    """Move the k nearest (by squared distance d, ties to the lower row s) of d[:held],
    s[:held] (held > k) to the front, in any order. The candidates go into _BUCKETS buckets of
    squared distance; those of the buckets before the one holding the k-th nearest are all
    kept, and a quickselect picks the rest among that bucket's only (ties share a bucket)."""
    top = 0.0
    for a in range(held):
        top = max(top, d[a])
    scale = _BUCKETS / top if top > 0.0 else 0.0
    hist = np.zeros(_BUCKETS, dtype=np.int64)
    for a in range(held):
        hist[min(int(d[a] * scale), _BUCKETS - 1)] += 1
    last, below = 0, 0
    for b in range(_BUCKETS):
        if below + hist[b] >= k:
            last = b
            break
        below += hist[b]
    w = 0  # the buckets before `last` to the front, then `last`'s
    for a in range(held):
        if min(int(d[a] * scale), _BUCKETS - 1) < last:
            d[a], d[w] = d[w], d[a]
            s[a], s[w] = s[w], s[a]
            w += 1
    for a in range(below, held):
        if min(int(d[a] * scale), _BUCKETS - 1) == last:
            d[a], d[w] = d[w], d[a]
            s[a], s[w] = s[w], s[a]
            w += 1
    if w > k:
        _select(d, s, below, w, k - below)


# The types beacons.py calls them with (compiled before the clock: core/jit.py `ahead`).
_NEAREST = (
    "f8[2] ?[1] ?[1] ?[1] ? f8 i8 (i8[1] i8[1] i8[2]) "  # positions .. k, the grid scratch
    "(i8[1] i8[1] i8[1] f8[1] i8[1] i8[1])"  # the CSR buffers
)
ahead(nearest_pairs, _NEAREST)
ahead(nearest_pairs_parallel, _NEAREST)
