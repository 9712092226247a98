"""Compiled (numba) inner loops of beacons.py: ordered neighbour pairs by receiver, each
receiver's K nearest senders (a bounded neighbour table), and the merge of fresh beacons into
the neighbour table (linear in the number of entries)."""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.jit import ahead, njit, prange

_opts = {"fastmath": False, "nogil": True}


@njit(**_opts)
def ordered_pairs(pairs, n, pos):
    """Both orders of the unordered pairs (K, 2) of n points (K, 2 ints < n) as (receiver,
    sender) entries sorted by receiver then sender, with their distances (pos (n, 3) m).

    Linear, two scatter passes: the pairs become each point's neighbour list (any order), then
    every sender, taken in increasing order, appends itself to the rows of its neighbours, so
    each receiver's row fills sorted by sender (the relation is symmetric: a sender's
    receivers are its neighbours)."""
    k = len(pairs)
    start = np.zeros(n + 1, dtype=np.int64)  # row r of both lists: start[r]:start[r + 1]
    for e in range(k):
        start[pairs[e, 0] + 1] += 1
        start[pairs[e, 1] + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    fill = start[:-1].copy()
    neighbour = np.empty(2 * k, dtype=np.int64)
    for e in range(k):
        a, b = pairs[e, 0], pairs[e, 1]
        neighbour[fill[a]] = b
        fill[a] += 1
        neighbour[fill[b]] = a
        fill[b] += 1
    fill[:] = start[:-1]
    send = np.empty(2 * k, dtype=np.int64)
    for s in range(n):
        for j in range(start[s], start[s + 1]):
            r = neighbour[j]
            send[fill[r]] = s
            fill[r] += 1
    recv = np.empty(2 * k, dtype=np.int64)
    dist = np.empty(2 * k)
    for a in range(n):
        for e in range(start[a], start[a + 1]):
            b = send[e]
            recv[e] = a
            dx = pos[a, 0] - pos[b, 0]
            dy = pos[a, 1] - pos[b, 1]
            dz = pos[a, 2] - pos[b, 2]
            dist[e] = math.sqrt(dx * dx + dy * dy + dz * dz)
    return recv, send, dist


@njit(**_opts)
def merge_fresh(
    key_a, tick_a, rec_a, recv_a, send_a, receiver, sender, delivered, merged, send_tick,
    snapshot, oldest, m, out,
):  # fmt: skip
    """Merge one send's copies delivered and not merged yet (receiver, sender (K,) member rows
    sorted by receiver then sender; delivered, merged (K,) bool), which are all marked merged,
    into the table a (sorted unique keys receiver * m + sender, send ticks `tick_a`, (E, F)
    records `rec_a`, rows `recv_a`, `send_a`): per key the later sent (the copy on a tie), the
    copies' records the `snapshot` rows of their senders; entries sent before `oldest`, of the
    table or of the send, dropped (none of the copies: only the expired entries go). Writes
    into `out` = (key, tick, rec, receiver, sender), which must hold len(key_a) + K entries;
    returns the number written (tests/core/test_beacon_kernels.py holds it to a plain merge
    of numpy's masks)."""
    o_key, o_tick, o_rec, o_recv, o_send = out
    na, nb = key_a.shape[0], receiver.shape[0]
    f = rec_a.shape[1]
    j = _next_fresh(delivered, merged, 0, nb)
    if send_tick < oldest:  # sent before the timeout: marked, not merged in
        while j < nb:
            merged[j] = True
            j = _next_fresh(delivered, merged, j + 1, nb)
    i = n = 0
    while i < na or j < nb:
        if i < na and tick_a[i] < oldest:
            i += 1  # expired
            continue
        kb = np.int64(receiver[j]) * m + sender[j] if j < nb else np.int64(0)
        if j >= nb or (i < na and key_a[i] < kb):
            use_a = True
        elif i >= na or kb < key_a[i]:
            use_a = False
        else:  # the same pair: keep the later sent, skip the other
            use_a = tick_a[i] > send_tick
            if use_a:
                merged[j] = True
                j = _next_fresh(delivered, merged, j + 1, nb)
            else:
                i += 1
        if use_a:
            o_key[n], o_tick[n] = key_a[i], tick_a[i]
            o_recv[n], o_send[n] = recv_a[i], send_a[i]
            for c in range(f):
                o_rec[n, c] = rec_a[i, c]
            i += 1
        else:
            s = sender[j]
            o_key[n], o_tick[n] = kb, send_tick
            o_recv[n], o_send[n] = receiver[j], s
            for c in range(f):
                o_rec[n, c] = snapshot[s, c]
            merged[j] = True
            j = _next_fresh(delivered, merged, j + 1, nb)
        n += 1
    return n


@njit(**_opts)
def _next_fresh(delivered, merged, j, nb):
    """The first copy at or after j delivered and not merged yet (nb: none)."""
    while j < nb and not (delivered[j] and not merged[j]):
        j += 1
    return j


@njit(**_opts)
def has_fresh(delivered, merged):
    """(delivered & ~merged).any() of (K,) bools, stopping at the first such copy."""
    for j in range(delivered.shape[0]):
        if delivered[j] and not merged[j]:
            return True
    return False


@njit(**_opts)
def by_delay(sender, delay, late):
    """The copies of a send grouped by their frame's delay: for each of the distinct delays
    `late` (L,) (increasing) in turn, the indices of the copies (senders (K,) member rows)
    whose sender's `delay` (M,) ticks is it, increasing, all in one array cut at the returned
    (L + 1,) starts; group t is numpy's `np.flatnonzero(delay[sender] == late[t])`. Each
    member's group is found once (M searches), then two passes over the copies without a
    data-dependent branch (a beacon round of 10,000 UAVs, 30 m radio: ~1 M copies)."""
    n_late = late.shape[0]
    # a member's group: the t whose late[t] is its delay, else n_late (numpy's `==` matches
    # no t). A scan of the few delays, not np.searchsorted: loading a cached kernel that calls
    # it imports numba's array-math registry, and with it the linear algebra the project keeps
    # out of a run's set-up (core/kernel_loads.py, tests/core/test_kernel_loads.py)
    group = np.empty(delay.shape[0], dtype=np.int64)
    for r in range(delay.shape[0]):
        g = n_late
        for t in range(n_late):
            if late[t] == delay[r]:
                g = t
                break
        group[r] = g
    starts = np.zeros(n_late + 2, dtype=np.int64)
    if n_late == 2:  # (a jitter of one tick, the shipped radio's) counters kept in registers
        return _two_delays(sender, group, starts)
    for e in range(sender.shape[0]):
        starts[group[sender[e]] + 1] += 1
    for t in range(n_late + 1):
        starts[t + 1] += starts[t]
    fill = starts[: n_late + 1].copy()
    order = np.empty(starts[n_late + 1], dtype=np.int64)
    for e in range(sender.shape[0]):
        g = group[sender[e]]
        order[fill[g]] = e
        fill[g] += 1
    return order, starts[: n_late + 1]


@njit(**_opts)
def _two_delays(sender, group, starts):
    """`by_delay` for two delays (member groups 0 and 1, 2: none): the counts and write
    positions in registers instead of an array updated copy after copy (2.3 against 4.8 ms
    for 1 M copies)."""
    c0 = c1 = 0
    for e in range(sender.shape[0]):
        g = group[sender[e]]
        c0 += g == 0
        c1 += g == 1
    starts[1], starts[2] = c0, c0 + c1
    order = np.empty(c0 + c1, dtype=np.int64)
    p0, p1 = 0, c0
    for e in range(sender.shape[0]):
        g = group[sender[e]]
        if g < 2:
            order[p0 if g == 0 else p1] = e
            p0 += g == 0
            p1 += g == 1
    return order, starts[:3]


@njit(**_opts)
def row_starts(recv, indptr):
    """indptr (M + 1,) = np.searchsorted(recv, np.arange(M + 1)) of the sorted rows `recv`."""
    e, n = 0, recv.shape[0]
    for r in range(indptr.shape[0]):
        while e < n and recv[e] < r:
            e += 1
        indptr[r] = e


@njit(**_opts)
def entry_ages(send, tick, ids, now, tick_s, sender_id, age):
    """sender_id = ids[send] and age = (now - tick) * tick_s (s), per entry, as numpy's."""
    for e in range(send.shape[0]):
        sender_id[e] = ids[send[e]]
        age[e] = (now - tick[e]) * tick_s


@njit(**_opts)
def deliver_copies(idx, receiver, sender, alive, rows, delivered, tx, rx):
    """Copies `idx` of a send (receiver, sender (K,) member rows) reach their receivers: when
    every receiver is `alive` (by member row), marks them delivered and counts them by sender
    and receiver dispatcher row (`rows`) into tx, rx (N,) and returns True; else changes
    nothing and returns False (the caller's numpy path counts the dead receivers)."""
    for e in idx:
        if not alive[receiver[e]]:
            return False
    for e in idx:
        delivered[e] = True
        tx[rows[sender[e]]] += 1
        rx[rows[receiver[e]]] += 1
    return True


@njit(**_opts)
def airborne(receiver, sender, u, p, rows, tx, rx):
    """The copies (receiver, sender (K,) member rows) whose loss draw `u` is not below their
    loss probability `p` (K,) each (numpy's `u < p`: lost), in order, as new arrays; the lost
    ones counted by sender and receiver dispatcher row (`rows`) into tx, rx (N,). Returns
    (receivers, senders, copies lost)."""
    k = receiver.shape[0]
    kept = 0
    for e in range(k):
        if not u[e] < p[e]:
            kept += 1
    out_r = np.empty(kept, dtype=np.int64)
    out_s = np.empty(kept, dtype=np.int64)
    j = 0
    for e in range(k):
        if u[e] < p[e]:
            tx[rows[sender[e]]] += 1
            rx[rows[receiver[e]]] += 1
        else:
            out_r[j] = receiver[e]
            out_s[j] = sender[e]
            j += 1
    return out_r, out_s, k - kept


@njit(**_opts)
def nearest_pairs(pos, located, is_sender, base, base_only, range_m, k, grid, out):
    """Each located receiver's k nearest senders within `range_m` (inclusive), as CSR rows.

    pos (n, 3) m; located, is_sender, base (n,) bool (a sender is located; with `base_only` a
    pair needs a base station at one end); k >= 1. Nearest by squared distance, ties to the
    lower sender row. `grid` = (cell_of (n,), order (n,), start (4n + 65,)) int64 scratch,
    `out` = (indptr (n + 1,), receiver (n k,), sender (n k,), dist (n k,) m, in_rx (n,),
    in_tx (n,)) buffers, reused across calls: rows sorted by receiver then sender, in_rx /
    in_tx the pairs in range (before the cut to k) per receiver / sender row. Returns the
    number of entries. Work: a uniform grid of cells >= range_m (the 27 cells around a
    receiver hold every point in range), one pass over the candidates, a quickselect of k
    among those of the nearest buckets of squared distance (`_gather`)."""
    indptr, o_recv, o_send, o_dist, in_rx, in_tx = out
    n = len(pos)
    dims = _bin(pos, located, range_m, grid)
    cand_d = np.empty(n)
    cand_s = np.empty(n, dtype=np.int64)
    e = 0
    indptr[0] = 0
    in_tx[:n] = 0
    for r in range(n):
        count = 0
        if located[r]:
            count, held = _gather(
                r, pos, is_sender, base, base_only, range_m, k, grid, dims, cand_d, cand_s, in_tx
            )
            e = _keep_nearest(cand_d, cand_s, held, k, r, o_recv, o_send, o_dist, e)
        in_rx[r] = count
        indptr[r + 1] = e
    return e


# Receivers per work item of `nearest_pairs_parallel`: a fixed split, so the work never depends
# on the number of threads.
CHUNK = 256


@njit(parallel=True, **_opts)
def nearest_pairs_parallel(pos, located, is_sender, base, base_only, range_m, k, grid, out):
    """`nearest_pairs` (the same arguments, the same result to the bit) on numba's threads,
    CHUNK receivers per work item: each receiver's k nearest go to its own min(k, n - 1) rows
    of the output first (the buffers hold n min(k, n - 1), as the net sizes them), each chunk
    counts the pairs by sender in a row of its own, then one pass packs the rows into CSR
    order and sums the counts (integers: any order gives the same)."""
    indptr, o_recv, o_send, o_dist, in_rx, in_tx = out
    n = len(pos)
    dims = _bin(pos, located, range_m, grid)
    chunks = (n + CHUNK - 1) // CHUNK
    stride = min(k, max(n - 1, 1))  # the most a receiver keeps: the buffers hold n of them
    tx = np.zeros((chunks, n), dtype=np.int64)
    kept = np.zeros(n, dtype=np.int64)
    for ch in prange(chunks):
        cand_d = np.empty(n)
        cand_s = np.empty(n, dtype=np.int64)
        for r in range(ch * CHUNK, min(n, (ch + 1) * CHUNK)):
            count = 0
            if located[r]:
                count, held = _gather(
                    r, pos, is_sender, base, base_only, range_m, k, grid, dims, cand_d, cand_s,
                    tx[ch],
                )  # fmt: skip
                kept[r] = (
                    _keep_nearest(cand_d, cand_s, held, k, r, o_recv, o_send, o_dist, r * stride)
                    - r * stride
                )
            in_rx[r] = count
    e = 0
    indptr[0] = 0
    for r in range(n):  # packed in place: row r's entries move down from r stride, never up
        for a in range(r * stride, r * stride + kept[r]):
            o_recv[e], o_send[e], o_dist[e] = o_recv[a], o_send[a], o_dist[a]
            e += 1
        indptr[r + 1] = e
    for s in range(n):
        total = 0
        for ch in range(chunks):
            total += tx[ch, s]
        in_tx[s] = total
    return e


@njit(**_opts)
def _bin(pos, located, range_m, grid):
    """Sort the located points into a uniform grid of cells >= range_m (at most 4 per point
    plus 64): grid's order lists them cell by cell (increasing rows within a cell), start
    holds each cell's first index, cell_of each point's cell. Returns (lo (3,), cell size,
    nx, ny, nz); one cell when the range is unlimited."""
    cell_of, order, start = grid
    n = len(pos)
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    m = 0
    for i in range(n):
        if located[i]:
            m += 1
            for c in range(3):
                lo[c] = min(lo[c], pos[i, c])
                hi[c] = max(hi[c], pos[i, c])
    cell = max(range_m, 1e-6) if m > 0 else np.inf
    nx = ny = nz = 1
    while math.isfinite(cell):
        nx = int((hi[0] - lo[0]) // cell) + 1
        ny = int((hi[1] - lo[1]) // cell) + 1
        nz = int((hi[2] - lo[2]) // cell) + 1
        if nx * ny * nz <= 4 * m + 64:
            break
        cell *= 2.0  # cells larger than the range still hold every pair in 27 of them
    ncell = nx * ny * nz
    start[: ncell + 1] = 0
    for i in range(n):
        if located[i]:
            ci = 0
            if ncell > 1:
                ix = int((pos[i, 0] - lo[0]) // cell)
                iy = int((pos[i, 1] - lo[1]) // cell)
                ci = (int((pos[i, 2] - lo[2]) // cell) * ny + iy) * nx + ix
            cell_of[i] = ci
            start[ci + 1] += 1
    for c in range(ncell):
        start[c + 1] += start[c]
    fill = start[:ncell].copy()
    for i in range(n):
        if located[i]:
            order[fill[cell_of[i]]] = i
            fill[cell_of[i]] += 1
    return lo, cell, nx, ny, nz


_BUCKETS = 64  # squared-distance buckets of a receiver's pairs in range (_gather)


@njit(**_opts)
def _bucket(d2, scale):
    """The bucket of a squared distance d2 (0 ... _BUCKETS - 1; scale = _BUCKETS / range^2)."""
    return min(int(d2 * scale), _BUCKETS - 1)


@njit(**_opts)
def _gather(r, pos, is_sender, base, base_only, range_m, k, grid, dims, cand_d, cand_s, in_tx):
    """Receiver r's senders in range (squared distance <= range_m^2): each counted in in_tx,
    and those that may be among its k nearest left in cand_d (squared distances) and cand_s
    (rows). One pass over the 27 cells puts every pair in range there and counts them by
    bucket of squared distance; when more than k are in range, only the buckets up to the
    one holding the k-th nearest are kept (ties share a bucket). Returns (in range, kept)."""
    r2 = range_m * range_m
    scale = _BUCKETS / r2 if math.isfinite(r2) and r2 > 0.0 else 0.0
    hist = np.zeros(_BUCKETS, dtype=np.int64)
    count = _scan(r, pos, is_sender, base, base_only, r2, grid, dims, cand_d, cand_s, in_tx)
    if count <= k:
        return count, count
    for b in range(count):
        hist[_bucket(cand_d[b], scale)] += 1
    last, seen = 0, 0
    for b in range(_BUCKETS):
        seen += hist[b]
        if seen >= k:
            last = b
            break
    held = 0
    for a in range(count):
        if _bucket(cand_d[a], scale) <= last:
            cand_d[held] = cand_d[a]
            cand_s[held] = cand_s[a]
            held += 1
    return count, held


@njit(**_opts)
def _scan(r, pos, is_sender, base, base_only, r2, grid, dims, cand_d, cand_s, in_tx):
    """Every sender within sqrt(r2) of receiver r, from its 27 cells, into cand_d (squared
    distances) and cand_s (rows), each counted in in_tx; returns how many."""
    cell_of, order, start = grid
    lo, cell, nx, ny, nz = dims
    x0 = x1 = y0 = y1 = z0 = z1 = 0
    if nx * ny * nz > 1:
        ci = cell_of[r]
        ix, iy, iz = ci % nx, (ci // nx) % ny, ci // (nx * ny)
        x0, x1 = max(ix - 1, 0), min(ix + 1, nx - 1)
        y0, y1 = max(iy - 1, 0), min(iy + 1, ny - 1)
        z0, z1 = max(iz - 1, 0), min(iz + 1, nz - 1)
    px, py, pz = pos[r, 0], pos[r, 1], pos[r, 2]
    held = 0
    for cz in range(z0, z1 + 1):
        for cy in range(y0, y1 + 1):
            for cx in range(x0, x1 + 1):
                c = (cz * ny + cy) * nx + cx
                for j in range(start[c], start[c + 1]):
                    s = order[j]
                    dx = px - pos[s, 0]
                    dy = py - pos[s, 1]
                    dz = pz - pos[s, 2]
                    d2 = dx * dx + dy * dy + dz * dz
                    if d2 <= r2 and s != r and is_sender[s]:
                        if base_only and not (base[r] or base[s]):
                            continue
                        in_tx[s] += 1
                        cand_d[held] = d2
                        cand_s[held] = s
                        held += 1
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


@njit(**_opts)
def _keep_nearest(cand_d, cand_s, held, k, r, o_recv, o_send, o_dist, e):
    """Append receiver r's k nearest of its `held` candidates (ties: the lower sender rows) to
    the output at e, sorted by sender row; returns the new end."""
    if held > k:
        _select(cand_d, cand_s, 0, held, k)
        held = k
    for a in range(1, held):  # by sender row (insertion sort: k is small)
        sd, ss = cand_d[a], cand_s[a]
        b = a
        while b > 0 and cand_s[b - 1] > ss:
            cand_s[b] = cand_s[b - 1]
            cand_d[b] = cand_d[b - 1]
            b -= 1
        cand_s[b] = ss
        cand_d[b] = sd
    for a in range(held):
        o_recv[e] = r
        o_send[e] = cand_s[a]
        o_dist[e] = math.sqrt(cand_d[a])
        e += 1
    return e


# The types beacons.py calls them with (compiled before the clock: core/jit.py `ahead`).
ahead(ordered_pairs, "i8[2] i8 f8[2]")
_NEAREST = (
    "f8[2] ?[1] ?[1] ?[1] ? f8 i8 (i8[1] i8[1] i8[1]) "  # positions .. k, the grid scratch
    "(i8[1] i8[1] i8[1] f8[1] i8[1] i8[1])"  # the CSR buffers
)
ahead(nearest_pairs, _NEAREST)
ahead(nearest_pairs_parallel, _NEAREST)
ahead(
    merge_fresh,
    "i8[1] i8[1] f8[2] i8[1] i8[1] i8[1] i8[1] ?[1] ?[1] i8 f8[2] i8 i8 "
    "(i8[1] i8[1] f8[2] i8[1] i8[1])",
)
ahead(row_starts, "i8[1] i8[1]")
ahead(has_fresh, "?[1] ?[1]")
ahead(by_delay, "i8[1] i8[1] i8[1]")
ahead(entry_ages, "i8[1] i8[1] i8[1] i8 f8 i8[1] f8[1]")
ahead(deliver_copies, "i8[1] i8[1] i8[1] ?[1] i8[1] ?[1] i8[1] i8[1]")
ahead(airborne, "i8[1] i8[1] f8[1] f8[1] i8[1] i8[1] i8[1]")
