"""Compiled (numba) inner loops of core/beacons.py: ordered neighbour pairs by receiver, and the
merge of fresh beacons into the neighbour table (linear in the number of entries)."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

_opts = {"cache": True, "fastmath": False, "nogil": True}


@nb.njit(**_opts)
def ordered_pairs(pairs, n, pos):
    """Both orders of the unordered pairs (K, 2) of n points (K, 2 ints < n) as (receiver,
    sender) entries sorted by receiver then sender (two stable counting sorts: linear), with
    their distances (pos (n, 3) m)."""
    k = len(pairs)
    r0 = np.empty(2 * k, dtype=np.int64)
    s0 = np.empty(2 * k, dtype=np.int64)
    for e in range(k):
        r0[2 * e], s0[2 * e] = pairs[e, 0], pairs[e, 1]
        r0[2 * e + 1], s0[2 * e + 1] = pairs[e, 1], pairs[e, 0]
    r1, s1 = _counting_sort(s0, r0, s0, n)  # by sender
    recv, send = _counting_sort(r1, r1, s1, n)  # then, stably, by receiver
    dist = np.empty(2 * k)
    for e in range(2 * k):
        a, b = recv[e], send[e]
        dx = pos[a, 0] - pos[b, 0]
        dy = pos[a, 1] - pos[b, 1]
        dz = pos[a, 2] - pos[b, 2]
        dist[e] = math.sqrt(dx * dx + dy * dy + dz * dz)
    return recv, send, dist


@nb.njit(**_opts)
def _counting_sort(by, x, y, n):
    """(x, y) reordered stably by `by` (ints in 0..n-1)."""
    start = np.zeros(n + 1, dtype=np.int64)
    for e in range(len(by)):
        start[by[e] + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    ox = np.empty_like(x)
    oy = np.empty_like(y)
    for e in range(len(by)):
        j = start[by[e]]
        ox[j] = x[e]
        oy[j] = y[e]
        start[by[e]] = j + 1
    return ox, oy


@nb.njit(**_opts)
def merge_into(key_a, tick_a, rec_a, key_b, send_tick, snapshot, sender_b, oldest, m, out):
    """Merge the run b (sorted unique keys receiver * m + sender, sent at `send_tick`, records
    = snapshot rows of sender_b) into the table a (sorted unique keys, send ticks, (E, F)
    records): per key the later sent (b on a tie), entries of a sent before `oldest` dropped.
    Writes into the buffers `out` = (key, tick, rec, receiver, sender), which must hold
    len(a) + len(b) entries, and returns the number of entries written."""
    o_key, o_tick, o_rec, o_recv, o_send = out
    na, nb_ = len(key_a), len(key_b)
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
