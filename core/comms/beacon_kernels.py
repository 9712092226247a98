"""Compiled (numba) inner loops of beacons.py: ordered neighbour pairs by receiver, the merge
of fresh beacons into the neighbour table (linear in the number of entries), the bounded
table's eviction, delays, losses and deliveries. Each receiver's K nearest senders (the
bounded table's pairs) are nearest_table.py's."""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.jit import ahead, njit

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


# int64's ends (np.iinfo would load numba's whole numpy library with the cached kernel)
_LATEST, _EARLIEST = 2**63 - 1, -(2**63)


@njit(**_opts)
def freshest(indptr, tick, k, keep):
    """keep (E,) bool: of each row (indptr (M + 1,) over entries sorted by receiver, then
    sender) longer than k, its k freshest entries (the latest send tick; as fresh: the lower
    sender, the earlier in the row), every entry of the other rows. Per long row a few passes,
    one per distinct send tick among the freshest (a neighbour table's ticks are its beacon
    rounds within the timeout)."""
    for r in range(indptr.shape[0] - 1):
        a, b = indptr[r], indptr[r + 1]
        if b - a <= k:
            keep[a:b] = True
            continue
        above, cut = 0, _LATEST  # `above` entries are fresher than `cut`
        while True:  # the next tick down, until the k-th freshest's
            t = _EARLIEST
            for e in range(a, b):
                if tick[e] < cut:
                    t = max(t, tick[e])
            same = 0
            for e in range(a, b):
                if tick[e] == t:
                    same += 1
            if above + same >= k:
                break
            above += same
            cut = t
        room = k - above  # entries of tick t kept: the first in the row (the lower senders)
        for e in range(a, b):
            keep[e] = tick[e] > t or (tick[e] == t and room > 0)
            if tick[e] == t:
                room -= 1


@njit(**_opts)
def compact(keep, key, tick, rec, recv, send):
    """Move the entries with keep (E,) set to the front of each array, in order (as a[:n] =
    a[keep] for key, tick, recv, send (E,) and the records rec (E, F)); returns n."""
    n = 0
    for e in range(keep.shape[0]):
        if keep[e]:
            if n != e:
                key[n], tick[n], recv[n], send[n] = key[e], tick[e], recv[e], send[e]
                for f in range(rec.shape[1]):
                    rec[n, f] = rec[e, f]
            n += 1
    return n


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


# The types beacons.py calls them with (compiled before the clock: core/jit.py `ahead`).
ahead(ordered_pairs, "i8[2] i8 f8[2]")
ahead(
    merge_fresh,
    "i8[1] i8[1] f8[2] i8[1] i8[1] i8[1] i8[1] ?[1] ?[1] i8 f8[2] i8 i8 "
    "(i8[1] i8[1] f8[2] i8[1] i8[1])",
)
ahead(row_starts, "i8[1] i8[1]")
ahead(freshest, "i8[1] i8[1] i8 ?[1]")
ahead(compact, "?[1] i8[1] i8[1] f8[2] i8[1] i8[1]")
ahead(has_fresh, "?[1] ?[1]")
ahead(by_delay, "i8[1] i8[1] i8[1]")
ahead(entry_ages, "i8[1] i8[1] i8[1] i8 f8 i8[1] f8[1]")
ahead(deliver_copies, "i8[1] i8[1] i8[1] ?[1] i8[1] ?[1] i8[1] i8[1]")
ahead(airborne, "i8[1] i8[1] f8[1] f8[1] i8[1] i8[1] i8[1]")
