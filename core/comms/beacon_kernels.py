"""Compiled (numba) inner loops of beacons.py: ordered neighbour pairs by receiver, and the
merge of fresh beacons into the neighbour table (linear in the number of entries)."""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.jit import njit

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
def merge_into(key_a, tick_a, rec_a, key_b, send_tick, snapshot, sender_b, oldest, m, out):
    """Merge the run b (sorted unique keys receiver * m + sender, sent at `send_tick`, records
    = snapshot rows of sender_b) into the table a (sorted unique keys, send ticks, (E, F)
    records): per key the later sent (b on a tie); entries sent before `oldest`, of a or of b
    (a delivery first merged after its timeout, by a table read now and then), dropped.
    Writes into the buffers `out` = (key, tick, rec, receiver, sender), which must hold
    len(a) + len(b) entries, and returns the number of entries written."""
    o_key, o_tick, o_rec, o_recv, o_send = out
    na, nb_ = len(key_a), len(key_b) if send_tick >= oldest else 0
    f = rec_a.shape[1]
    i = j = n = 0
    while i < na or j < nb_:
        if i < na and tick_a[i] < oldest:
            i += 1  # expired
            continue
        if j >= nb_ or (i < na and key_a[i] < key_b[j]):
            use_a = True
        elif i >= na or key_b[j] < key_a[i]:
            use_a = False
        else:  # the same pair: keep the later sent, skip the other
            use_a = tick_a[i] > send_tick
            if use_a:
                j += 1
            else:
                i += 1
        if use_a:
            k = key_a[i]
            o_tick[n] = tick_a[i]
            for c in range(f):
                o_rec[n, c] = rec_a[i, c]
            i += 1
        else:
            k = key_b[j]
            o_tick[n] = send_tick
            s = sender_b[j]
            for c in range(f):
                o_rec[n, c] = snapshot[s, c]
            j += 1
        o_key[n] = k
        o_recv[n] = k // m
        o_send[n] = k - (k // m) * m
        n += 1
    return n
