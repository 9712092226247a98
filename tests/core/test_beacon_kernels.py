"""The compiled passes of core/comms/beacon_kernels.py against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from skyswarm.core.comms.beacon_kernels import (
    airborne,
    by_delay,
    compact,
    deliver_copies,
    entry_ages,
    freshest,
    has_fresh,
    merge_fresh,
    ordered_pairs,
    row_starts,
)


def by_numpy(pairs: np.ndarray, n: int, pos: np.ndarray):
    """Both orders of each pair, sorted by (receiver, sender) with lexsort; distances."""
    recv = np.concatenate([pairs[:, 0], pairs[:, 1]])
    send = np.concatenate([pairs[:, 1], pairs[:, 0]])
    order = np.lexsort((send, recv))
    recv, send = recv[order], send[order]
    return recv, send, np.sqrt(((pos[recv] - pos[send]) ** 2).sum(axis=1))


@pytest.mark.parametrize("n", [0, 1, 2, 9, 400])
def test_ordered_pairs_sorts_both_orders_by_receiver_then_sender(n: int) -> None:
    rng = np.random.default_rng(n)
    pos = rng.uniform(0.0, 60.0, (n, 3))
    if n >= 2:
        pairs = cKDTree(pos).query_pairs(15.0, output_type="ndarray").astype(np.int64)
    else:
        pairs = np.zeros((0, 2), dtype=np.int64)
    pairs = pairs[rng.permutation(len(pairs))]  # the KD-tree's order is not promised
    pairs[::2] = pairs[::2, ::-1]  # nor which end comes first
    recv, send, dist = ordered_pairs(pairs, n, pos)
    want_recv, want_send, want_dist = by_numpy(pairs, n, pos)
    assert len(recv) == 2 * len(pairs)
    np.testing.assert_array_equal(recv, want_recv)
    np.testing.assert_array_equal(send, want_send)
    # same formula, same order of operations: sqrt(dx^2 + dy^2 + dz^2), bit for bit
    np.testing.assert_array_equal(dist, want_dist)
    if n == 400:  # a grid of real neighbourhoods, not a degenerate case
        assert len(pairs) > 1000
        assert (np.diff(recv) >= 0).all() and (np.bincount(recv, minlength=n) > 0).sum() > 300


def _table(rng, m: int, e: int, f: int = 7):
    """A table of e random unique (receiver, sender) keys of m members, sorted, with ticks."""
    key = np.sort(rng.choice(m * m, size=e, replace=False)).astype(np.int64)
    tick = rng.integers(0, 50, size=e).astype(np.int64)
    return key, tick, rng.normal(size=(e, f))


def _out(cap: int, f: int = 7):
    z = np.zeros(cap, dtype=np.int64)
    return (z.copy(), z.copy(), np.zeros((cap, f)), z.copy(), z.copy())


def merge_into(key_a, tick_a, rec_a, key_b, send_tick, snapshot, sender_b, oldest, m, out):
    """The plain merge `merge_fresh` is held to: the run b (sorted unique keys
    receiver * m + sender, sent at `send_tick`, records = snapshot rows of sender_b) into
    the table a (sorted unique keys, send ticks, (E, F) records): per key the later sent (b
    on a tie); entries sent before `oldest`, of a or of b, dropped. Writes into `out` =
    (key, tick, rec, receiver, sender) and returns the number of entries written."""
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


@pytest.mark.parametrize("m", [1, 5, 40])
def test_merge_fresh_is_numpy_masks_then_merge_into(m: int) -> None:
    # a send's copies (sorted by receiver, sender), some not delivered, some merged already;
    # one case sent before `oldest` (nothing merged in, but the copies are marked)
    rng = np.random.default_rng(m)
    for send_tick, oldest in ((60, 20), (60, 61), (60, 0)):
        key_a, tick_a, rec_a = _table(rng, m, min(m * m, 3 * m))
        pick = np.sort(rng.choice(m * m, size=min(m * m, 2 * m), replace=False))
        receiver, sender = (pick // m).astype(np.int64), (pick % m).astype(np.int64)
        delivered = rng.random(len(pick)) < 0.7
        merged = delivered & (rng.random(len(pick)) < 0.3)
        snapshot = rng.normal(size=(m, 7))
        new = delivered & ~merged
        want = _out(len(key_a) + len(pick))
        n_want = merge_into(
            key_a, tick_a, rec_a, receiver[new] * m + sender[new], send_tick, snapshot,
            sender[new], oldest, m, want,
        )  # fmt: skip
        got = _out(len(key_a) + len(pick))
        mark = merged.copy()
        n_got = merge_fresh(
            key_a, tick_a, rec_a, key_a // m, key_a % m, receiver, sender, delivered, mark,
            send_tick, snapshot, oldest, m, got,
        )  # fmt: skip
        assert n_got == n_want
        for a, b in zip(got, want, strict=True):
            assert np.array_equal(a[:n_got], b[:n_want])
        assert np.array_equal(mark, merged | delivered)


@pytest.mark.parametrize("rows", [[], [0, 0, 2, 2, 2, 5], [3], [0, 1, 2, 3, 4, 5]])
def test_row_starts_is_searchsorted(rows: list[int]) -> None:
    recv = np.array(rows, dtype=np.int64)
    indptr = np.full(7, -1, dtype=np.int64)  # 6 members (rows 0..5), and beyond the last
    row_starts(recv, indptr)
    assert np.array_equal(indptr, np.searchsorted(recv, np.arange(7)))


@pytest.mark.parametrize("k", [1, 3, 16])
def test_freshest_keeps_what_the_lexsort_of_latest_tick_then_sender_keeps(k: int) -> None:
    """Each row longer than k keeps its k latest-sent entries, ties at the cut to the lower
    senders (earlier in the row), as the numpy rule it replaced (lexsort of the over-long
    rows' entries by receiver, latest tick, sender; the first k of each row)."""
    rng = np.random.default_rng(k)
    m = 60
    lengths = rng.integers(0, 3 * k + 4, m)  # rows shorter, as long as, longer than k
    recv = np.repeat(np.arange(m), lengths)
    send = np.concatenate([np.sort(rng.choice(m, n, replace=False)) for n in lengths])
    tick = rng.choice([400, 440, 480, 520], len(recv))  # beacon rounds: many ties
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    keep = np.zeros(len(recv), dtype=bool)
    freshest(indptr, tick.astype(np.int64), k, keep)
    want = np.ones(len(recv), dtype=bool)
    over = np.flatnonzero((lengths > k)[recv])
    order = over[np.lexsort((send[over], -tick[over], recv[over]))]
    long = lengths[lengths > k]
    rank = np.arange(len(order)) - np.repeat(np.cumsum(long) - long, long)
    want[order[rank >= k]] = False
    np.testing.assert_array_equal(keep, want)
    assert (np.bincount(recv[keep], minlength=m) == np.minimum(lengths, k)).all()
    assert (lengths > k).sum() > 5 and (lengths <= k).sum() > 5


@pytest.mark.parametrize("share", [0.0, 0.4, 1.0])
def test_compact_is_numpy_masks_in_place(share: float) -> None:
    """The kept entries of the table's five arrays move to their front in order, as a[keep],
    records (E, F) included; what lies beyond the count is not read."""
    rng = np.random.default_rng(int(share * 10))
    e, f = 500, 7
    keep = rng.random(e) < share
    arrays = [rng.integers(0, 10**6, e) for _ in range(4)]
    rec = rng.normal(size=(e, f))
    want = [a[keep].copy() for a in arrays], rec[keep].copy()
    key, tick, recv, send = (a.copy() for a in arrays)
    got_rec = rec.copy()
    n = compact(keep, key, tick, got_rec, recv, send)
    assert n == keep.sum()
    for got, w in zip((key, tick, recv, send), want[0], strict=True):
        np.testing.assert_array_equal(got[:n], w)
    np.testing.assert_array_equal(got_rec[:n], want[1])


def test_entry_ages_are_numpy_s() -> None:
    rng = np.random.default_rng(4)
    send = rng.integers(0, 30, size=500).astype(np.int64)
    tick = rng.integers(0, 10**6, size=500).astype(np.int64)
    ids = rng.integers(0, 10**9, size=30).astype(np.int64)
    sid, age = np.zeros(500, dtype=np.int64), np.zeros(500)
    entry_ages(send, tick, ids, 10**6 + 7, 0.0025, sid, age)
    assert np.array_equal(sid, ids[send])
    assert np.array_equal(age, (10**6 + 7 - tick) * 0.0025)  # bit for bit


def test_deliver_copies_counts_like_bincount_or_leaves_a_dead_receiver_to_numpy() -> None:
    rng = np.random.default_rng(5)
    m, k = 12, 80
    receiver = rng.integers(0, m, size=k).astype(np.int64)
    sender = rng.integers(0, m, size=k).astype(np.int64)
    rows = (np.arange(m) * 2 + 1).astype(np.int64)  # member row -> dispatcher row (of 2 m)
    idx = np.flatnonzero(rng.random(k) < 0.5).astype(np.int64)
    alive = np.ones(m, dtype=bool)
    delivered = np.zeros(k, dtype=bool)
    tx, rx = np.zeros(2 * m, dtype=np.int64), np.zeros(2 * m, dtype=np.int64)
    assert deliver_copies(idx, receiver, sender, alive, rows, delivered, tx, rx)
    assert np.array_equal(tx, np.bincount(rows[sender[idx]], minlength=2 * m))
    assert np.array_equal(rx, np.bincount(rows[receiver[idx]], minlength=2 * m))
    assert np.array_equal(np.flatnonzero(delivered), idx)
    # one receiver of the batch dead: nothing marked, nothing counted
    alive[receiver[idx[-1]]] = False
    delivered[:] = False
    tx[:] = 0
    assert not deliver_copies(idx, receiver, sender, alive, rows, delivered, tx, rx)
    assert not delivered.any() and not tx.any()
    # an empty batch: True, nothing counted
    assert deliver_copies(idx[:0], receiver, sender, alive, rows, delivered, tx, rx)


def test_airborne_keeps_the_copies_not_lost_in_order_and_counts_the_lost_by_row() -> None:
    rng = np.random.default_rng(6)
    m, k = 9, 300
    receiver = rng.integers(0, m, size=k).astype(np.int64)
    sender = rng.integers(0, m, size=k).astype(np.int64)
    rows = np.arange(m, dtype=np.int64)[::-1].copy()  # member row -> dispatcher row
    u = rng.random(k)
    p = np.where(rng.random(k) < 0.5, 0.3, 0.0)
    u[:3] = p[:3] = 0.3  # a draw equal to its probability is not lost (u < p)
    p[3] = np.nan  # NaN compares false: not lost
    tx, rx = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    r, s_, lost = airborne(receiver, sender, u, p, rows, tx, rx)
    gone = u < p
    assert lost == gone.sum() > 0
    assert np.array_equal(r, receiver[~gone]) and np.array_equal(s_, sender[~gone])
    assert np.array_equal(tx, np.bincount(rows[sender[gone]], minlength=m))
    assert np.array_equal(rx, np.bincount(rows[receiver[gone]], minlength=m))


@pytest.mark.parametrize("m", [1, 7, 300])
def test_by_delay_is_flatnonzero_of_each_delay(m: int) -> None:
    """A send's copies grouped by their sender's delay as beacons.py did with numpy: each
    group numpy's flatnonzero(delay[sender] == t), for copies whose sender has a delay that is
    one of `late`, none (a 0 delay: not a sender) or one left out of `late`."""
    rng = np.random.default_rng(m)
    delay = rng.integers(1, 5, m).astype(np.int64)
    delay[rng.random(m) < 0.2] = 0  # members that sent nothing this round
    sender = rng.integers(0, m, 5 * m).astype(np.int64)
    groups = (np.unique(delay[delay > 0]), np.unique(delay[delay > 1]), np.array([2, 4]))
    for late in (*groups, np.array([3]), np.zeros(0, np.int64)):  # 4, 3, 2 (its own pass), 1, 0
        order, starts = by_delay(sender, delay, late)
        assert len(starts) == len(late) + 1 and starts[0] == 0
        for g, t in enumerate(late.tolist()):
            want = np.flatnonzero(delay[sender] == t)
            np.testing.assert_array_equal(order[starts[g] : starts[g + 1]], want)
        assert starts[-1] == np.isin(delay[sender], late).sum()


def test_has_fresh_is_delivered_and_not_merged_any() -> None:
    rng = np.random.default_rng(3)
    for k in (0, 1, 50, 1000):
        for p in (0.0, 0.001, 0.5, 1.0):
            delivered, merged = rng.random(k) < p, rng.random(k) < 0.9
            assert has_fresh(delivered, merged) == bool((delivered & ~merged).any())
