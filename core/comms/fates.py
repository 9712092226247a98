"""The fate of every message: range queries, the fate codes, and the vectorised decision.

`resolve()` takes one tick's sends and decides, per receiver copy and in numpy, whether it is
over bandwidth, out of range, lost on air or scheduled for delivery; dispatcher.py owns the
queues and counters (see `FateSink`). Channel timing and loss models live in core/comms/channels.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol

import numpy as np

from skyswarm.core.comms.channels import Channel

# -- range queries ----------------------------------------------------------------------------
# A KD-tree (scipy.spatial.cKDTree, C code) rather than a numpy grid hash: it needs no cell size
# tuned to the range (channels differ: 100 m radio, others), copes with the very uneven densities
# of a swarm (tight flocks next to empty space) without degenerating, and answers the queries of
# all broadcasters of a tick in one call. It is rebuilt on every tick that has broadcasts, since
# agents move: building it over 5,000 points costs about 1 ms, O(N log N); each query costs
# O(log N + neighbours), so a tick costs O(N log N + N x neighbours), never O(N^2). A tick with
# few (broadcast, candidate) pairs compares every pair instead: for 10 UAVs that is 100 pairs,
# and the tree's build costs more than all of them.
BRUTE_FORCE_PAIRS = 4096


def neighbours_within(
    positions: np.ndarray, candidates: np.ndarray, origins: np.ndarray, range_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (origin row, candidate) closer than `range_m` (inclusive).

    positions: (N, 3) m, every agent; candidates: (C,) increasing int agent indices that may
    receive (rows of `positions` that are finite); origins: (B, 3) m, the broadcast points.
    Returns (pair_origin (K,) int rows of `origins`, pair_agent (K,) int agent indices), sorted by
    origin then agent, so that the result does not depend on the index's internal order.
    """
    if len(candidates) == 0 or len(origins) == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    if len(candidates) * len(origins) <= BRUTE_FORCE_PAIRS:
        # a few dozen agents: every pair's squared distance (what the tree compares, summed in
        # the same x, y, z order) costs less than building the tree
        d = origins[:, None, :] - positions[candidates][None, :, :]
        po, pa = np.nonzero((d * d).sum(axis=2) <= range_m * range_m)  # row-major: sorted
        return po, candidates[pa]
    from scipy.spatial import cKDTree

    tree = cKDTree(
        positions[candidates], balanced_tree=False, compact_nodes=False
    )  # 2x faster build
    hits = tree.query_ball_point(origins, r=range_m, return_sorted=True)  # sorted in C
    counts = np.fromiter(map(len, hits), dtype=np.intp, count=len(hits))
    flat = np.fromiter(chain.from_iterable(hits), dtype=np.intp, count=int(counts.sum()))
    # candidates are increasing, so each origin's agents stay sorted: no sort needed here
    return np.repeat(np.arange(len(origins)), counts), candidates[flat]


def neighbours_within_reference(
    positions: np.ndarray, candidates: np.ndarray, origins: np.ndarray, range_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force O(B x C) reference of `neighbours_within`, one origin at a time."""
    po, pa = [], []
    for o, origin in enumerate(origins):
        for a in candidates:
            if math.dist(origin, positions[a]) <= range_m:
                po.append(o)
                pa.append(int(a))
    return np.asarray(po, dtype=np.intp), np.asarray(pa, dtype=np.intp)


# -- frames and their fates ------------------------------------------------------------------
FATES = (
    "sent",  # send()/broadcast() calls by alive agents
    "over_bandwidth",  # sends dropped at the sender by the bandwidth cap
    "addressed",  # receiver copies: 1 per unicast, 1 per other alive agent per broadcast
    "out_of_range",  # copies beyond range (or with no link, e.g. no base station end)
    "lost_on_air",  # copies lost to the loss model
    "receiver_dead",  # copies whose receiver was dead at send or delivery time
    "queue_overflow",  # copies dropped because the receiver's queue was full
    "delivered",  # copies put in a queue or handed to the on-message callback
    "sender_dead",  # send attempts by dead agents (not in "sent"; nothing goes on air)
)
SENT, OVER_BW, ADDRESSED, OUT_OF_RANGE, LOST, RX_DEAD, OVERFLOW, DELIVERED, TX_DEAD = range(9)


@dataclass(frozen=True, slots=True, eq=False)
class Message:
    """One frame. `receiver` is None for a broadcast; ticks are simulation ticks."""

    seq: int  # dispatcher-wide send order, unique in the run
    sender: int  # agent id
    receiver: int | None  # agent id, None = broadcast
    channel: str
    payload: Any  # delivered as the same object (read-only by convention)
    send_tick: int
    delivery_tick: int
    size_bytes: int


@dataclass
class Copies:
    """Receiver copies due at one tick, in canonical (seq, receiver) order."""

    messages: np.ndarray  # (K,) object, Message
    seq: np.ndarray  # (K,) int
    sender: np.ndarray  # (K,) int agent index
    receiver: np.ndarray  # (K,) int agent index
    channel: np.ndarray  # (K,) int channel index

    @staticmethod
    def concatenate(parts: list[Copies]) -> Copies:
        """One batch from several, in the given order (earlier sends first)."""
        cat = np.concatenate
        return Copies(*(cat([getattr(p, f) for p in parts]) for f in Copies.__annotations__))


class FateSink(Protocol):
    """What `resolve` needs from the dispatcher: members, channels, stream, counters."""

    channels: list[Channel]
    rng: np.random.Generator
    alive: np.ndarray  # (N,) bool, by agent row
    is_base: np.ndarray  # (N,) bool, base stations
    ids: np.ndarray  # (N,) int64 agent ids

    def count(
        self,
        channel: np.ndarray,
        sender: np.ndarray,
        receiver: np.ndarray | None,
        fate: np.ndarray | int,
    ) -> None: ...

    def schedule(self, copies: Copies, tick: int) -> None: ...

    def count_n(
        self, channel: int, rows: np.ndarray, k: np.ndarray, fate: int, *, receiver: bool = False
    ) -> None: ...

    def add_counts(self, tx: dict[int, int], rx: dict[int, int]) -> None: ...

    def count_all(
        self, channel: int, fate: int, k: list[int], *, receiver: bool = False
    ) -> None: ...

    def links_watched(self) -> bool: ...

    def keep_links(
        self, channel: np.ndarray, sender: np.ndarray, receiver: np.ndarray, fate: np.ndarray
    ) -> None: ...


def resolve(d: FateSink, batch: list[tuple], now: int, pos: np.ndarray) -> None:
    """Decide the fate of a batch of sends (vectorised): bandwidth, delay, fan-out, range, loss.

    Random draws, in this order: one delay per transmitted send (by channel, then send order),
    then one uniform per copy still undecided after range checks (by seq, then receiver index).
    """
    cols = list(zip(*batch))
    seq, snd, rcv, ch, size, tick = (np.array(cols[k], dtype=np.int64) for k in (0, 1, 2, 4, 5, 6))
    ok = np.ones(len(seq), dtype=bool)
    for c in d.channels:
        m = np.flatnonzero(ch == c.index)
        if len(m) and c.bucket_bytes > 0:
            ok[m] = c.bandwidth_ok(now, snd[m], size[m])
    if not ok.all():
        d.count(ch[~ok], snd[~ok], None, OVER_BW)
    keep = np.flatnonzero(ok)
    if not len(keep):
        return
    seq, snd, rcv, ch, size, tick = (a[keep] for a in (seq, snd, rcv, ch, size, tick))
    payload = [cols[3][k] for k in keep.tolist()]
    delay = np.empty(len(keep), dtype=np.int64)
    for c in d.channels:
        m = np.flatnonzero(ch == c.index)
        if len(m):
            delay[m] = c.delays(d.rng, len(m))
    due = np.maximum(tick + delay, now)
    names = [c.name for c in d.channels]
    receiver_id = np.where(rcv < 0, -1, d.ids[rcv])
    fields = zip(
        seq.tolist(),
        d.ids[snd].tolist(),
        receiver_id.tolist(),
        ch.tolist(),
        payload,
        tick.tolist(),
        due.tolist(),
        size.tolist(),
    )
    messages = np.empty(len(keep), dtype=object)  # one frame per send, shared by its copies
    messages[:] = [
        Message(q, s, None if r < 0 else r, names[c], p, t, u, z)
        for q, s, r, c, p, t, u, z in fields
    ]
    cmsg, crcv = _fan_out(d, pos, snd, rcv, ch)
    if (rcv < 0).any():
        _count_unreached(d, snd, rcv, ch, cmsg, crcv)
    csnd, cch = snd[cmsg], ch[cmsg]
    d.count(cch, csnd, crcv, ADDRESSED)
    fate = np.where(d.alive[crcv], -1, RX_DEAD)
    range_m = np.array([c.range_m for c in d.channels])[cch]
    dist = np.linalg.norm(pos[csnd] - pos[crcv], axis=1)
    dist = np.where(np.isinf(range_m) & np.isnan(dist), 0.0, dist)  # no position: unlimited only
    needs_base = np.array([c.cfg.link == "base_station" for c in d.channels])[cch]
    no_link = ~(dist <= range_m) | (needs_base & ~(d.is_base[csnd] | d.is_base[crcv]))
    fate[(fate < 0) & no_link] = OUT_OF_RANGE
    cand = np.flatnonzero(fate < 0)
    p_loss = np.empty(len(cand))
    for c in d.channels:
        m = cch[cand] == c.index
        p_loss[m] = c.loss_model.probability(dist[cand[m]])
    fate[cand[d.rng.random(len(cand)) < p_loss]] = LOST
    done = fate >= 0
    d.count(cch[done], csnd[done], crcv[done], fate[done])
    go = np.flatnonzero(~done)
    go_due = due[cmsg[go]]
    for t in np.unique(go_due).tolist():
        g = go[go_due == t]
        m = cmsg[g]
        d.schedule(Copies(messages[m], seq[m], csnd[g], crcv[g], cch[g]), t)


def _count_unreached(
    d: FateSink,
    snd: np.ndarray,
    rcv: np.ndarray,
    ch: np.ndarray,
    cmsg: np.ndarray,
    crcv: np.ndarray,
) -> None:
    """Count the copies of broadcasts that reach nobody: every other alive agent a broadcast
    could address on its channel (on a base-station link: pairs with a base station at one end)
    but that it does not reach (beyond range, or no position) is addressed and out of range,
    by sender and by receiver. No copy is made for them, so no random number is drawn."""
    alive, base = d.alive, d.is_base
    n_alive, n_base = int(alive.sum()), int((alive & base).sum())
    for c in d.channels:
        b = np.flatnonzero((rcv < 0) & (ch == c.index))
        if not len(b):
            continue
        s = snd[b]
        base_link = c.cfg.link == "base_station"
        potential = n_alive - alive[s].astype(np.int64)
        if base_link:
            potential = np.where(base[s], potential, n_base)
        where_b = np.full(len(snd), -1)  # message row -> its position in b, -1 elsewhere
        where_b[b] = np.arange(len(b))
        at = where_b[cmsg]
        copies = at >= 0
        reached = np.bincount(at[copies], minlength=len(b))
        miss = potential - reached
        if miss.any():
            d.count_n(c.index, s, miss, ADDRESSED)
            d.count_n(c.index, s, miss, OUT_OF_RANGE)
        # by receiver: broadcasts each alive agent could have heard, minus those it heard
        n = len(alive)
        own = np.bincount(s, minlength=n)
        heard = np.bincount(crcv[copies], minlength=n)
        could = len(b) - own
        if base_link:
            could = np.where(base, could, int(base[s].sum()))
        miss_rx = np.where(alive, could - heard, 0)
        rows = np.flatnonzero(miss_rx)
        if len(rows):
            d.count_n(c.index, rows, miss_rx[rows], ADDRESSED, receiver=True)
            d.count_n(c.index, rows, miss_rx[rows], OUT_OF_RANGE, receiver=True)


def _fan_out(
    d: FateSink, pos: np.ndarray, snd: np.ndarray, rcv: np.ndarray, ch: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Receiver copies (message row, receiver index), sorted by message then receiver.

    A unicast has one copy; a broadcast one per alive agent within range other than its sender
    (range queries through the spatial index, `neighbours_within`).
    """
    uni = np.flatnonzero(rcv >= 0)
    rows, recv = [uni], [rcv[uni]]
    bro = np.flatnonzero(rcv < 0)
    if len(bro):
        alive = np.flatnonzero(d.alive)
        located = alive[np.isfinite(pos[alive]).all(axis=1)]
        for c in d.channels:
            b = bro[ch[bro] == c.index]
            if not len(b):
                continue
            if np.isinf(c.range_m):
                po, pa = np.repeat(np.arange(len(b)), len(alive)), np.tile(alive, len(b))
            else:
                b = b[np.isfinite(pos[snd[b]]).all(axis=1)]  # no position: reaches nobody
                po, pa = neighbours_within(pos, located, pos[snd[b]], c.range_m)
            msg = b[po]
            sel = pa != snd[msg]
            if c.cfg.link == "base_station":
                sel &= d.is_base[pa] | d.is_base[snd[msg]]
            rows.append(msg[sel])
            recv.append(pa[sel])
    cmsg, crcv = np.concatenate(rows), np.concatenate(recv)
    order = np.argsort(cmsg * len(pos) + crcv, kind="stable")
    return cmsg[order], crcv[order]
