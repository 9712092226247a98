"""The bounded neighbour table of core/comms/beacons.py (`neighbour_table` = K on the channel):
the compiled K-nearest pass against a brute-force table on random geometry (exactly at range
included), the exact mode's table for K >= every neighbour, the default of 64, fates that add
up, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.comms.channels import ChannelConfig
from skyswarm.core.comms.nearest_table import (
    CHUNK,
    CROWDED,
    _bin,
    nearest_pairs,
    nearest_pairs_parallel,
)
from tests.core.test_beacons import fates_add_up, net_of
from tests.core.test_comms import TICK, make_sim, steps


def kernel(pos, located, is_sender, range_m, k, base=None, run=nearest_pairs):
    n = len(pos)
    grid = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros((4, 4 * n + 65), dtype=np.int64))  # fmt: skip
    cap = max(n * min(k, max(n - 1, 1)), 1)  # as the net sizes them
    out = (
        np.zeros(n + 1, dtype=np.int64),
        np.zeros(cap, dtype=np.int64),
        np.zeros(cap, dtype=np.int64),
        np.zeros(cap),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
    )
    base_only = base is not None
    base = np.zeros(n, dtype=bool) if base is None else base
    e = run(pos, located, is_sender, base, base_only, range_m, k, grid, out)
    indptr, recv, send, dist, in_rx, in_tx = out
    return indptr, recv[:e], send[:e], dist[:e], in_rx, in_tx


def brute(pos, located, is_sender, range_m, k, base=None):
    """The definition, one receiver at a time: senders with squared distance <= range^2,
    the k smallest by (squared distance, row), listed by row; pairs in range by row."""
    n = len(pos)
    rows, in_rx, in_tx = [], np.zeros(n, dtype=int), np.zeros(n, dtype=int)
    for r in np.flatnonzero(located):
        near = []
        for s in np.flatnonzero(is_sender):
            if s == r or (base is not None and not (base[r] or base[s])):
                continue
            d2 = float(((pos[r] - pos[s]) ** 2).sum())
            if d2 <= range_m * range_m:
                near.append((d2, int(s)))
                in_rx[r] += 1
                in_tx[s] += 1
        for d2, s in sorted(sorted(near)[:k], key=lambda t: t[1]):
            rows.append((int(r), s, float(np.sqrt(d2))))
    return rows, in_rx, in_tx


@pytest.mark.parametrize("seed", range(8))
def test_k_nearest_matches_the_brute_force_table(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 150))
    pos = rng.uniform(0.0, 60.0, (n, 3))
    pos[: n // 2] = pos[: n // 2].round()  # whole metres: ties in distance at the cut
    located = rng.random(n) < 0.9
    is_sender = located & (rng.random(n) < 0.8)
    k = int(rng.integers(1, 10))
    range_m = float(rng.choice([3.0, 12.0, 30.0, np.inf]))
    base = (rng.random(n) < 0.2) if seed % 3 == 0 else None
    indptr, recv, send, dist, in_rx, in_tx = kernel(pos, located, is_sender, range_m, k, base)
    rows, want_rx, want_tx = brute(pos, located, is_sender, range_m, k, base)
    assert list(zip(recv.tolist(), send.tolist(), dist.tolist())) == rows
    np.testing.assert_array_equal(in_rx, want_rx)
    np.testing.assert_array_equal(in_tx, want_tx)
    np.testing.assert_array_equal(np.diff(indptr), np.bincount(recv, minlength=n))
    assert (np.diff(indptr) <= k).all()
    assert len(rows) > 0 or range_m == 3.0  # the geometry has neighbourhoods to cut


def test_exactly_at_range_is_kept_and_a_hair_beyond_is_not() -> None:
    pos = np.array([[0.0, 0.0, 1.0], [30.0, 40.0, 1.0], [30.0, 40.000001, 1.0], [0, 0, 1.0]])
    pos[3] = (0.0, -50.0, 1.0)  # 50 m from 0 along y: exactly at range too
    ones = np.ones(4, dtype=bool)
    _, recv, send, dist, in_rx, _ = kernel(pos, ones, ones, 50.0, 8)
    pairs = set(zip(recv.tolist(), send.tolist()))
    assert (0, 1) in pairs and (1, 0) in pairs and (0, 3) in pairs and (3, 0) in pairs
    assert (0, 2) not in pairs and (2, 0) not in pairs  # 50.000001 m
    assert dist[(recv == 0) & (send == 1)][0] == 50.0
    np.testing.assert_array_equal(in_rx, [2, 2, 1, 1])


@pytest.mark.parametrize("seed", range(6))
def test_points_on_cell_faces_and_at_the_range_match_the_brute_force_table(seed: int) -> None:
    """The grid's cells are range / 16 wide where receivers are crowded, range / 4 where not
    (doubled while there are too many): points on a lattice of range / 16 steps sit on
    either's cell faces, pairs at exactly the range are many, and a cell counted wholly in
    range or out of it must never hold a point on the other side; in 3D, flat and far from
    the origin (where coordinates round the most)."""
    rng = np.random.default_rng(seed)
    range_m = float(rng.choice([3.0, 12.5, 30.0, 100.0]))
    n = int(rng.integers(40, 140))
    step = range_m / 16 * float(rng.choice([1.0, 2.0, 4.0, 16.0]))
    pos = rng.integers(0, 6, (n, 3)) * step  # 216 sites: dense, and duplicates
    if seed % 2:
        pos[:, 2] = 10.0  # flat: one layer of cells
    pos += float(rng.choice([0.0, 1e5, -3e6]))  # far from the origin
    located = rng.random(n) < 0.95
    is_sender = located & (rng.random(n) < 0.85)
    k = int(rng.choice([1, 2, 4]))
    for run in (nearest_pairs, nearest_pairs_parallel):
        indptr, recv, send, dist, in_rx, in_tx = kernel(pos, located, is_sender, range_m, k,
                                                        run=run)  # fmt: skip
        rows, want_rx, want_tx = brute(pos, located, is_sender, range_m, k)
        assert list(zip(recv.tolist(), send.tolist(), dist.tolist())) == rows
        np.testing.assert_array_equal(in_rx, want_rx)
        np.testing.assert_array_equal(in_tx, want_tx)
    assert (want_rx > k).any()  # some rows are cut


@pytest.mark.parametrize("k", [3, 90])
@pytest.mark.parametrize("base_only", [False, True])
def test_both_ways_of_gathering_give_the_brute_force_table(k: int, base_only: bool) -> None:
    """Where many more than K senders may be in range (`_bin`'s crowd above CROWDED K), pairs
    are counted by cells and the K nearest gathered near the receiver; else every sender in
    range is gathered and counted on the way. Both against the definition, on the same swarm
    (receivers not located, some not sending, base stations, ties at whole metres)."""
    rng = np.random.default_rng(k)
    n = 300
    pos = np.round(rng.uniform(0.0, 40.0, (n, 3)), 0)
    pos[:, 2] = np.round(rng.uniform(0.0, 4.0, n), 0)
    located = rng.random(n) < 0.95
    is_sender = located & (rng.random(n) < 0.85)
    base = rng.random(n) < 0.2 if base_only else None
    grid = (np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros((4, 4 * n + 65), np.int64))
    no = np.zeros(n, dtype=bool)
    crowded = _bin(pos, located, is_sender, no if base is None else base, 30.0, k, grid)[8]
    assert crowded == (k * CROWDED < 300)  # the swarm spans less than the range's width
    rows, want_rx, want_tx = brute(pos, located, is_sender, 30.0, k, base)
    for run in (nearest_pairs, nearest_pairs_parallel):
        indptr, recv, send, dist, in_rx, in_tx = kernel(pos, located, is_sender, 30.0, k, base,
                                                        run=run)  # fmt: skip
        assert list(zip(recv.tolist(), send.tolist(), dist.tolist())) == rows
        np.testing.assert_array_equal(in_rx, want_rx)
        np.testing.assert_array_equal(in_tx, want_tx)
    assert (want_rx > k).any() and (want_rx < k).any()  # rows cut and rows short


@pytest.mark.parametrize(
    ("range_m", "spread"), [(0.0, 400.0), (1e-3, 1e6), (1.0, 2e7)]
)  # fmt: skip
def test_a_tiny_range_over_a_wide_swarm_sizes_its_grid_without_overflow(
    range_m: float, spread: float
) -> None:
    """A switched-off channel has range 0 (channels.py), and a short range over a wide swarm
    asks for more cells than an integer holds (their count was once taken as a product of
    integers, which wraps): the grid is sized in floats, and only co-located points pair."""
    rng = np.random.default_rng(7)
    pos = rng.uniform(0, spread, (300, 3))
    pos[150:160] = pos[100]  # ten copies of one point: all within any range of each other
    ones = np.ones(300, dtype=bool)
    indptr, recv, send, dist, in_rx, in_tx = kernel(pos, ones, ones, range_m, 4)
    rows, want_rx, want_tx = brute(pos, ones, ones, range_m, 4)
    assert list(zip(recv.tolist(), send.tolist(), dist.tolist())) == rows
    np.testing.assert_array_equal(in_rx, want_rx)
    assert in_rx[100] == 10 and in_rx.sum() == 110 == in_tx.sum()


def test_reused_buffers_give_the_same_table_as_fresh_ones() -> None:
    rng = np.random.default_rng(3)
    pos_a, pos_b = rng.uniform(0, 50, (80, 3)), rng.uniform(0, 20, (80, 3))
    ones = np.ones(80, dtype=bool)
    n = 80
    grid = (np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros((4, 4 * n + 65), dtype=np.int64))  # fmt: skip
    out = (np.zeros(n + 1, dtype=np.int64), np.zeros(n * 5, dtype=np.int64),
           np.zeros(n * 5, dtype=np.int64), np.zeros(n * 5), np.zeros(n, dtype=np.int64),
           np.zeros(n, dtype=np.int64))  # fmt: skip
    nearest_pairs(pos_a, ones, ones, ones, False, 15.0, 5, grid, out)  # a dense round first
    e = nearest_pairs(pos_b, ones, ones, ones, False, 15.0, 5, grid, out)
    fresh = kernel(pos_b, ones, ones, 15.0, 5)
    np.testing.assert_array_equal(out[1][:e], fresh[1])
    np.testing.assert_array_equal(out[2][:e], fresh[2])
    np.testing.assert_array_equal(out[4], fresh[4])


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("n", "spread", "range_m", "k", "base_only"),
    [
        (2 * CHUNK + 37, 40.0, 100.0, 16, False),  # every pair in range (the dense radio)
        (2 * CHUNK + 37, 400.0, 30.0, 8, False),  # sparse: most receivers hold fewer than k
        (CHUNK + 5, 60.0, np.inf, 5, False),  # unlimited range: one cell
        (CHUNK + 5, 60.0, 25.0, 4, True),  # a base station at one end of each pair
        (3, 10.0, 20.0, 16, False),  # fewer agents than k
    ],
)  # fmt: skip
def test_the_threaded_table_is_the_serial_one_to_the_bit(
    n: int, spread: float, range_m: float, k: int, base_only: bool, threads: int
) -> None:
    """Chunks of receivers on threads, packed into CSR after: every output array equal, with
    receivers that are not located, senders that are not senders, ties at equal distance and
    pairs exactly at range."""
    import numba

    rng = np.random.default_rng(n + k)
    pos = np.round(rng.uniform(0, spread, (n, 3)), 0)  # whole metres: ties and exact ranges
    pos[:, 2] = 0.0
    located, is_sender = rng.uniform(size=n) > 0.1, rng.uniform(size=n) > 0.2
    base = rng.uniform(size=n) < 0.1 if base_only else None
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        serial = kernel(pos, located, is_sender, range_m, k, base)
        threaded = kernel(pos, located, is_sender, range_m, k, base, run=nearest_pairs_parallel)
    finally:
        numba.set_num_threads(before)
    for a, b in zip(serial, threaded, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert len(serial[1]) > 0 and serial[5].sum() == serial[4].sum() > 0


# -- in a BeaconNet -----------------------------------------------------------------------------
def grid_positions(n: int, spacing: float) -> np.ndarray:
    side = int(np.ceil(np.sqrt(n)))
    ij = np.indices((side, side)).reshape(2, -1).T[:n]
    return np.column_stack([ij * spacing, np.ones(n)])


def test_k_at_least_every_neighbour_gives_the_exact_table() -> None:
    radio = {"loss": 0.25, "latency_s": 0.005, "jitter_s": 0.005, "range_m": 12.0}
    tables, counts = [], []
    for k in (0, 200):
        sim, d = make_sim({"radio": {**radio, "neighbour_table": k}}, seed=5)
        rng = np.random.default_rng(1)
        _, net = net_of(sim, d, np.column_stack([rng.uniform(0, 40, (50, 2)), np.ones(50)]))
        steps(sim, 30)
        t = net.table()
        tables.append((t.receiver.copy(), t.sender.copy(), t.record.copy(), t.age_s.copy()))
        counts.append(net.counts())
    for a, b in zip(*tables):
        np.testing.assert_array_equal(a, b)  # same pairs, same loss draws, same records
    assert counts[0] == counts[1] and counts[1]["queue_overflow"] == 0
    assert counts[0]["delivered"] > 1000


def test_a_full_table_keeps_the_k_nearest_and_counts_the_rest_as_overflow() -> None:
    radio = {"loss": 0.0, "latency_s": 0.0, "range_m": 100.0, "neighbour_table": 4}
    sim, d = make_sim({"radio": radio})
    pos = grid_positions(25, 5.0)  # 5 x 5, every UAV in range of every other
    _, net = net_of(sim, d, pos)
    steps(sim, 11)  # 10 rounds delivered
    t = net.table()
    assert (t.counts == 4).all()
    for r in range(25):  # the 4 nearest (ties to the lower row), listed by row
        d2 = ((pos - pos[r]) ** 2).sum(axis=1)
        d2[r] = np.inf
        want = sorted(np.lexsort((np.arange(25), d2))[:4].tolist())
        assert t.sender[t.row(r)].tolist() == want
    c = net.counts()
    assert c["addressed"] == 25 * 24 * 11 and c["out_of_range"] == 0
    assert c["queue_overflow"] == 25 * 20 * 11  # in range, beyond the 4 nearest
    assert c["delivered"] == 25 * 4 * 10 and fates_add_up(c) and fates_add_up(d.totals()["radio"])


def test_same_seed_same_k_nearest_fates() -> None:
    radio = {"loss": 0.3, "latency_s": 0.005, "jitter_s": 0.01, "range_m": 40.0}
    logs = []
    for _ in range(2):
        sim, d = make_sim({"radio": {**radio, "neighbour_table": 6}}, seed=9)
        rng = np.random.default_rng(0)
        net_of(sim, d, np.column_stack([rng.uniform(0, 80, (60, 2)), np.ones(60)]))
        steps(sim, 50)
        logs.append(d.beacon_nets[0].delivery_log())
    assert len(logs[0]) > 1000 and np.array_equal(logs[0], logs[1])


def test_a_bounded_table_holds_its_k_freshest_while_neighbours_change() -> None:
    """A moving swarm: each round's K nearest differ from the last, and a table would also hold
    former neighbours until they time out. Read after every tick, each row holds at most K
    entries: of every neighbour delivered and not timed out (the delivery log's latest send per
    pair), the K latest sent, ties to the lower sender row."""
    k, period = 4, 4 * TICK
    radio = {"loss": 0.3, "latency_s": 0.005, "jitter_s": 0.01, "range_m": 30.0}
    sim, d = make_sim({"radio": {**radio, "neighbour_table": k}}, seed=2)
    rng = np.random.default_rng(4)
    base, vel = rng.uniform(0.0, 60.0, (40, 3)), rng.normal(0.0, 1.5, (40, 3))  # m, m per tick
    _, net = net_of(sim, d, base, period_s=period)
    where = np.zeros((len(d.agents), 3))
    d.positions = lambda: where  # the members drift: who is nearest changes round to round

    longest, evicted = 0, 0
    for _ in range(120):
        where[net.rows] = base + vel * sim.tick
        sim.step()
        t = net.table()
        now, oldest = sim.tick, sim.tick - net.timeout_ticks
        latest: dict[tuple[int, int], int] = {}
        for send_tick, _, s, r in net.delivery_log().tolist():
            latest[(r, s)] = max(latest.get((r, s), -1), send_tick)
        want = []
        for r in range(40):
            held = [(-tick, s) for (rr, s), tick in latest.items() if rr == r and tick >= oldest]
            want += [(r, s, now - tick) for tick, s in ((-a, b) for a, b in sorted(held)[:k])]
            evicted += max(len(held) - k, 0)
        got = list(zip(t.receiver.tolist(), t.sender.tolist(), np.rint(t.age_s / TICK).tolist()))
        assert got == sorted(want)
        longest = max(longest, int(t.counts.max()))
    assert longest == k and evicted > 100  # rows were full, and former neighbours evicted


def test_the_default_table_is_64_and_exact_where_64_cover_every_sender() -> None:
    """A channel that does not set `neighbour_table` keeps 64 senders per receiver: on a sparse
    swarm (at most 64 in range of any receiver, exactly at range included; nobody moves) the
    table, the records and every count are the exact mode's, bit for bit; on a dense one each
    row holds 64 and the rest are counted as queue overflow."""
    assert ChannelConfig().neighbour_table == 64
    radio = {"loss": 0.25, "latency_s": 0.005, "jitter_s": 0.005}
    sparse = grid_positions(144, 5.0)  # 12 x 12 at 5 m: 48 within 20 m of a middle UAV
    d2 = ((sparse[:, None] - sparse[None]) ** 2).sum(axis=2)
    assert ((d2 <= 400.0).sum(axis=1) - 1).max() == 48
    tables, counts = [], []
    for extra in ({}, {"neighbour_table": 0}):
        sim, d = make_sim({"radio": {**radio, "range_m": 20.0, **extra}}, seed=3)
        _, net = net_of(sim, d, sparse)
        steps(sim, 30)
        t = net.table()
        tables.append((t.receiver.copy(), t.sender.copy(), t.record.copy(), t.age_s.copy()))
        counts.append(net.counts())
    for a, b in zip(*tables):
        np.testing.assert_array_equal(a, b)
    assert counts[0] == counts[1] and counts[0]["queue_overflow"] == 0
    assert counts[0]["delivered"] > 1000

    sim, d = make_sim({"radio": {"loss": 0.0, "latency_s": 0.0, "range_m": 100.0}})
    _, net = net_of(sim, d, grid_positions(81, 5.0))  # 80 in range of each
    steps(sim, 11)  # 10 rounds delivered
    assert (net.table().counts == 64).all()
    c = net.counts()
    assert c["queue_overflow"] == 81 * (80 - 64) * 11 and fates_add_up(c)
