"""State beacons: every member of a group broadcasts a fixed record periodically; each beacon
tick is resolved in one vectorised pass and delivered as arrays (docs/architecture.md,
Communication).

A `BeaconNet` is the swarm-scale counterpart of `transceiver.broadcast` for the one message
swarm algorithms send most: "here I am". It uses the dispatcher's channel models and counters:

- At each beacon tick (a periodic task, phase 2) every alive member sends one frame on the
  net's channel, its record (`FIELDS`: position, velocity, heading, plus the net's extra
  float fields) taken from `source(rows)`, e.g. what each UAV senses of itself.
- The frames are resolved at once, from the true positions at the start of the tick (the
  instant the records describe): bandwidth cap, one delay per frame (latency + jitter, all
  receivers hear a frame at the same tick), receivers = the other alive members within range
  (KD-tree pairs, ordered by a compiled pass; the rest are counted out of range), one loss
  draw per copy in range (constant or Rayleigh loss at the pair's distance). Draws come from
  `sim.rng.comms`, delays first (by member row) then losses (by receiver row, then sender
  row).
- At phase 1 of a copy's delivery tick it is delivered if its receiver is still alive
  (otherwise counted `receiver_dead`) into the receiver's neighbour table, where it replaces
  an older beacon of the same sender (a beacon older than the one held is dropped as
  delivered-but-stale; nothing overflows: a table keeps one entry per neighbour).
- A bounded neighbour table (`neighbour_table` = K > 0 on the channel, as real radios' tables
  are): each receiver takes, per beacon round, only its K nearest senders in range (squared
  distance, ties to the lower row; a compiled grid pass, `nearest_pairs`, into CSR buffers the
  net keeps across rounds); copies from the other senders in range count as queue_overflow (the
  table is full), and only the K kept draw a loss. The pass counts the pairs in range by cells
  and gathers near each receiver, so the work per round follows N K and the range's rim, not
  the pairs in range. The table itself holds at most K entries per
  receiver: when former nearest neighbours not timed out yet would make a row longer, it keeps
  its K freshest (latest sent; as fresh: the lower sender rows), as a full radio table replaces
  its oldest entry. K = 0 keeps every sender in range (the exact mode).
- `table()` gives, for every member, the latest beacon of each neighbour heard within
  `timeout_s`, with its age, as CSR arrays (`NeighbourTable`).

Fates go into the dispatcher's per-channel counters (`MessageDispatcher.totals`), so the
identity addressed = delivered + lost_on_air + out_of_range + receiver_dead + queue_overflow +
in_flight holds with beacons as with messages; `counts()` gives the net's own share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.backends import threaded
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
from skyswarm.core.comms.fates import (
    ADDRESSED,
    DELIVERED,
    FATES,
    LOST,
    OUT_OF_RANGE,
    OVER_BW,
    OVERFLOW,
    RX_DEAD,
    SENT,
)
from skyswarm.core.comms.nearest_table import nearest_pairs, nearest_pairs_parallel

if TYPE_CHECKING:
    from skyswarm.core.agent import Agent
    from skyswarm.core.comms.dispatcher import MessageDispatcher

FIELDS = ("x", "y", "z", "vx", "vy", "vz", "yaw")  # m, m/s (world ENU), rad (ENU yaw)
BEACON_BYTES = 8 * (1 + len(FIELDS))  # id + the fixed fields, as float64; extras add 8 each


def _row_counts(rows: np.ndarray, m: int) -> np.ndarray:
    """np.bincount(rows, minlength=m) of sorted member rows (< m), from their row starts."""
    starts = np.empty(m + 1, dtype=np.int64)
    row_starts(np.ascontiguousarray(rows, dtype=np.int64), starts)
    return np.diff(starts)


@dataclass(frozen=True)
class NeighbourTable:
    """Latest beacon heard by each member from each neighbour, CSR by receiver row.

    Entries of receiver row r are `indptr[r]:indptr[r + 1]`, sorted by sender row. `record`
    holds the sender's fields (`BeaconNet.fields`) as sent; `age_s` is now - send time.
    """

    indptr: np.ndarray  # (M + 1,) int
    receiver: np.ndarray  # (E,) int member row
    sender: np.ndarray  # (E,) int member row
    sender_id: np.ndarray  # (E,) int64 agent id
    age_s: np.ndarray  # (E,) s
    record: np.ndarray  # (E, F) float

    def row(self, r: int) -> slice:
        """The entries of receiver row `r`."""
        return slice(int(self.indptr[r]), int(self.indptr[r + 1]))

    @property
    def counts(self) -> np.ndarray:
        """(M,) neighbours heard by each member."""
        return np.diff(self.indptr)


@dataclass(eq=False)
class _Send:
    """The copies of one beacon tick that survived the air, sorted by receiver then sender;
    they arrive over a few ticks (one delay per frame) and are merged into the table on read."""

    receiver: np.ndarray  # (K,) member rows
    sender: np.ndarray  # (K,) member rows
    send_tick: int
    snapshot: np.ndarray  # (M, F) every member's record as sent at send_tick
    delivered: np.ndarray  # (K,) bool, arrived at an alive receiver
    merged: np.ndarray  # (K,) bool, already in the table


class BeaconNet:
    """Periodic state beacons of a group of agents on one channel (see the module doc).

    `members`: the group, in row order (row k is members[k]); `source(rows)` returns the
    (len(rows), F) records of those member rows, F = len(FIELDS) + len(extra_fields).
    """

    def __init__(
        self,
        dispatcher: MessageDispatcher,
        members: Sequence[Agent],
        source: Callable[[np.ndarray], np.ndarray],
        period_s: float,
        *,
        channel: str = "radio",
        extra_fields: Sequence[str] = (),
        timeout_s: float | None = None,
        phase_s: float = 0.0,
        log: bool = False,
        name: str = "beacons",
    ) -> None:
        sim = dispatcher.sim
        self.dispatcher, self.sim = dispatcher, sim
        self.members = list(members)
        self.source = source
        self.fields = FIELDS + tuple(extra_fields)
        self.size_bytes = BEACON_BYTES + 8 * len(extra_fields)
        self.channel = dispatcher.channels[dispatcher.channel_index(channel)]
        self.period_ticks = sim.world.ticks_for(period_s, f"{name} period")
        timeout = 3.0 * period_s if timeout_s is None else timeout_s
        self.timeout_ticks = round(timeout / sim.world.tick_s)
        dispatcher.sync()
        self.rows = np.array([dispatcher.index_of[int(a.id)] for a in self.members], dtype=np.intp)
        self.ids = np.array([a.id for a in self.members], dtype=np.int64)
        m, f = len(self.members), len(self.fields)
        self._counts = np.zeros(len(FATES), dtype=np.int64)
        self._due: dict[int, list[tuple[_Send, np.ndarray]]] = {}  # tick -> (send, entries)
        # the table: entries sorted by key = receiver * M + sender; deliveries merged on read
        self._key = np.zeros(0, dtype=np.int64)
        self._tick = np.zeros(0, dtype=np.int64)
        self._rec = np.zeros((0, f))
        self._recv = np.zeros(0, dtype=np.int64)
        self._send = np.zeros(0, dtype=np.int64)
        empty = (self._key, self._tick, self._rec, self._recv, self._send)
        self._buffers = [empty, empty]  # ping-pong: the table lives in one, merges fill the other
        self._current = 0
        self._fresh: list[_Send] = []  # sends with deliveries not merged yet
        self._m = m
        self._k = int(self.channel.cfg.neighbour_table)
        if self._k:  # the nearest-pairs kernel's buffers, reused every round
            self._grid = (
                np.zeros(m, dtype=np.int64),
                np.zeros(m, dtype=np.int64),
                np.zeros((4, 4 * m + 65), dtype=np.int64),
            )
            cap = m * min(self._k, max(m - 1, 1))
            self._csr = (
                np.zeros(m + 1, dtype=np.int64),
                *(np.zeros(cap, dtype=np.int64) for _ in range(2)),
                np.zeros(cap),
                np.zeros(m, dtype=np.int64),
                np.zeros(m, dtype=np.int64),
            )
        self._age, self._sender_id = np.zeros(0), np.zeros(0, dtype=np.int64)  # table()'s
        self._log: list[np.ndarray] | None = [] if log else None
        dispatcher.beacon_nets.append(self)
        self.task = sim.every(period_s, self.send, phase_s, owner=self, name=name)

    # -- sending (phase 2) -----------------------------------------------------------------
    def send(self) -> None:
        """Every alive member sends its beacon now; fates decided at once (module doc)."""
        d, c, sim = self.dispatcher, self.channel, self.sim
        now = sim.tick
        m = self._m
        alive = d.on_air()[self.rows]
        senders = np.flatnonzero(alive)
        if not len(senders):
            return
        drow = self.rows[senders]
        self._add(c.index, drow, None, SENT)
        if c.bucket_bytes > 0:
            ok = c.bandwidth_ok(now, drow, np.full(len(senders), self.size_bytes))
            self._add(c.index, drow[~ok], None, OVER_BW)
            senders, drow = senders[ok], drow[ok]
            if not len(senders):
                return
        snap = np.zeros((m, len(self.fields)))  # records by member row, as sent now
        snap[senders] = np.asarray(self.source(senders), dtype=float).reshape(len(senders), -1)
        delay = np.zeros(m, dtype=np.int64)
        delay[senders] = c.delays(d.rng, len(senders))  # one per frame, by member row
        pos = d.positions()[self.rows]
        receivers = np.flatnonzero(alive)  # candidates: alive members, increasing rows
        is_sender = np.zeros(m, dtype=bool)
        is_sender[senders] = True
        if self._k:
            pa, ps, dist, heard_all, reached_all = self._nearest(pos, alive, is_sender)
        else:
            pa, ps, dist = self._pairs(pos, receivers, c.range_m)
            # every receiver a sender (no frame over the bandwidth) and any pair a link: all
            # kept, and the pairs are symmetric, so each row hears as many as it reaches
            symmetric = len(senders) == len(receivers) and c.cfg.link != "base_station"
            if not symmetric:
                keep = is_sender[ps]
                if c.cfg.link == "base_station":
                    base = d.is_base[self.rows]
                    keep &= base[pa] | base[ps]
                if not keep.all():
                    pa, ps, dist = pa[keep], ps[keep], dist[keep]
            heard_all = _row_counts(pa, m)  # np.bincount(pa, minlength=m): pa is sorted
            reached_all = heard_all if symmetric else np.bincount(ps, minlength=m)
        # addressed: every other alive member; those not reached are out of range
        n_cand = len(receivers)
        self._add_per(c.index, drow, np.full(len(senders), n_cand - 1), ADDRESSED)
        reached = reached_all[senders]
        self._add_per(c.index, drow, n_cand - 1 - reached, OUT_OF_RANGE)
        heard = heard_all[receivers]
        addressed_rx = len(senders) - is_sender[receivers]
        self._add_per(c.index, None, addressed_rx, ADDRESSED, rx_rows=self.rows[receivers])
        self._add_per(c.index, None, addressed_rx - heard, OUT_OF_RANGE, self.rows[receivers])
        if self._k:  # in range, but beyond the receiver's K nearest: its table is full
            over_tx = reached - np.bincount(ps, minlength=m)[senders]
            over_rx = heard - np.bincount(pa, minlength=m)[receivers]
            self._add_per(c.index, drow, over_tx, OVERFLOW)
            self._add_per(c.index, None, over_rx, OVERFLOW, self.rows[receivers])
        draw = d.rng.random(len(pa))  # by receiver, sender
        p_loss = c.loss_model.probability(dist)
        if d.links_watched() or np.shape(p_loss) != draw.shape:
            lost = draw < p_loss
            self._add(c.index, self.rows[ps[lost]], self.rows[pa[lost]], LOST)
            go = ~lost
            pa, ps = pa[go], ps[go]
        else:  # one compiled pass: the survivors kept in order, the lost counted by row
            tx = np.zeros(d.row_count(), dtype=np.int64)
            rx = np.zeros(d.row_count(), dtype=np.int64)
            p_loss = np.ascontiguousarray(p_loss, dtype=float)
            pa, ps, n_lost = airborne(
                np.ascontiguousarray(pa, dtype=np.int64), np.ascontiguousarray(ps, dtype=np.int64),
                draw, p_loss, self.rows, tx, rx,
            )  # fmt: skip
            if n_lost:
                d.count_per_row(c.index, LOST, tx, rx)
                self._counts[LOST] += n_lost
        k = len(pa)
        sent = _Send(pa, ps, now, snap, np.zeros(k, dtype=bool), np.zeros(k, dtype=bool))
        late = np.unique(delay[senders])  # a few distinct delays
        if len(late) == 1:  # (no jitter) every frame as late: every copy at that tick
            groups = [(int(late[0]), np.arange(k))]
        else:  # np.flatnonzero(delay[ps] == t) for each t, in one compiled pass
            order, starts = by_delay(np.ascontiguousarray(ps, dtype=np.int64), delay, late)
            groups = [(t, order[starts[g] : starts[g + 1]]) for g, t in enumerate(late.tolist())]
        for t, idx in groups:
            if len(idx):
                self._due.setdefault(now + t, []).append((sent, idx))
                d.add_in_flight(c.index, len(idx))

    @staticmethod
    def _pairs(
        pos: np.ndarray, candidates: np.ndarray, range_m: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(receiver, sender) member rows of every ordered pair of candidates within range
        (inclusive), sorted by receiver then sender, and their distances, m. A KD-tree finds
        the unordered pairs in C (`query_pairs`), a compiled pass orders them."""
        from scipy.spatial import cKDTree

        if np.isinf(range_m):  # unlimited: every pair, agents without a position included
            cp = pos[candidates]
            i, j = np.triu_indices(len(candidates), 1)
            pairs = np.column_stack([i, j]).astype(np.int64)
            r, s, dist = ordered_pairs(pairs, len(candidates), np.nan_to_num(cp))
            return candidates[r], candidates[s], dist
        located = candidates[np.isfinite(pos[candidates]).all(axis=1)]
        if len(located) < 2:
            empty = np.zeros(0, dtype=np.intp)
            return empty, empty, np.zeros(0)
        cp = np.ascontiguousarray(pos[located])
        tree = cKDTree(cp, balanced_tree=False, compact_nodes=False)
        pairs = tree.query_pairs(range_m, output_type="ndarray").astype(np.int64, copy=False)
        r, s, dist = ordered_pairs(pairs, len(located), cp)
        if len(located) == len(pos):  # every member located: `located` is 0 .. M - 1
            return r, s, dist
        return located[r], located[s], dist

    def _nearest(
        self, pos: np.ndarray, alive: np.ndarray, is_sender: np.ndarray
    ) -> tuple[np.ndarray, ...]:
        """The bounded table's pairs (module doc): (receiver, sender) member rows of each alive
        receiver's K nearest senders in range, sorted by receiver then sender, their distances
        (m), and the pairs in range before the cut by receiver and by sender row ((M,) each).
        Views of the net's buffers: valid until the next round."""
        c, d = self.channel, self.dispatcher
        if np.isinf(c.range_m):  # unlimited: agents without a position are at the origin
            located, pos = alive, np.nan_to_num(pos)
        else:
            located = alive & np.isfinite(pos).all(axis=1)
        base_only = c.cfg.link == "base_station"
        base = d.is_base[self.rows] if base_only else np.zeros(self._m, dtype=bool)
        pos = np.ascontiguousarray(pos, dtype=float)
        n = (nearest_pairs_parallel if threaded(len(pos)) else nearest_pairs)(
            pos, located, is_sender & located, base, base_only, c.range_m, self._k,
            self._grid, self._csr,
        )  # fmt: skip
        _, recv, send, dist, in_rx, in_tx = self._csr
        return recv[:n], send[:n], dist[:n], in_rx, in_tx

    # -- delivery (phase 1) ----------------------------------------------------------------
    def deliver(self, tick: int) -> None:
        """Phase 1 (called by the dispatcher): copies due now reach their alive receivers."""
        batches = self._due.pop(tick, None)
        if not batches:
            return
        d, ch = self.dispatcher, self.channel.index
        alive = d.on_air()[self.rows]
        compiled = not d.links_watched()
        for sent, idx in batches:
            d.add_in_flight(ch, -len(idx))
            if compiled:  # every receiver alive: marked and counted in one compiled pass
                tx = np.zeros(d.row_count(), dtype=np.int64)
                rx = np.zeros(d.row_count(), dtype=np.int64)
                if deliver_copies(
                    idx, sent.receiver, sent.sender, alive, self.rows, sent.delivered, tx, rx
                ):
                    d.count_per_row(ch, DELIVERED, tx, rx)
                    self._counts[DELIVERED] += len(idx)
                    self._after_delivery(sent, idx, tick)
                    continue
            rcv, snd = sent.receiver[idx], sent.sender[idx]
            ok = alive[rcv]
            if not ok.all():
                self._add(ch, self.rows[snd[~ok]], self.rows[rcv[~ok]], RX_DEAD)
                idx, rcv, snd = idx[ok], rcv[ok], snd[ok]
            self._add(ch, self.rows[snd], self.rows[rcv], DELIVERED)
            sent.delivered[idx] = True
            self._after_delivery(sent, idx, tick)

    def _after_delivery(self, sent: _Send, idx: np.ndarray, tick: int) -> None:
        """Copies `idx` of `sent` delivered at `tick`: to merge at the next read, and logged."""
        if not self._fresh or self._fresh[-1] is not sent:
            self._fresh.append(sent)
        if self._log is not None and len(idx):
            k = len(idx)
            snd, rcv = sent.sender[idx], sent.receiver[idx]
            self._log.append(
                np.column_stack([np.full(k, sent.send_tick), np.full(k, tick), snd, rcv])
            )

    # -- reading ---------------------------------------------------------------------------
    def table(self) -> NeighbourTable:
        """Every member's latest beacon from each neighbour heard within the timeout (CSR).

        The arrays are views of the net's buffers: valid until the next call (read them in
        the behaviour tick that asked; copy what must be kept)."""
        now = self.sim.tick
        oldest = now - self.timeout_ticks
        fresh = [s for s in self._fresh if has_fresh(s.delivered, s.merged)]
        self._fresh = []
        if not fresh and len(self._tick) and self._tick.min() < oldest:
            fresh = [None]  # nothing new, but entries expired: compact
        for sent in fresh:
            self._merge(sent, oldest)
        recv, send = self._recv, self._send
        indptr = np.empty(self._m + 1, dtype=np.int64)
        row_starts(recv, indptr)  # np.searchsorted(recv, np.arange(M + 1)), in one pass
        if self._k and fresh and (np.diff(indptr) > self._k).any():
            indptr = self._evict(indptr)
            recv, send = self._recv, self._send
        e = len(send)
        if len(self._age) < e:  # the ages' and ids' buffers, grown by half again
            cap = max(e, len(self._age) * 3 // 2)
            self._age, self._sender_id = np.empty(cap), np.empty(cap, dtype=np.int64)
        age, sender_id = self._age[:e], self._sender_id[:e]
        entry_ages(send, self._tick, self.ids, now, self.sim.world.tick_s, sender_id, age)
        return NeighbourTable(indptr.astype(np.intp, copy=False), recv, send, sender_id, age,
                              self._rec)  # fmt: skip

    def _evict(self, indptr: np.ndarray) -> np.ndarray:
        """A bounded table holds at most K entries per receiver: a row with more (former
        nearest neighbours not timed out yet) keeps its K freshest (latest sent; as fresh: the
        lower sender rows), in place, still sorted by (receiver, sender). Returns the indptr."""
        keep = np.empty(len(self._key), dtype=bool)
        freshest(indptr, self._tick, self._k, keep)
        n = compact(keep, self._key, self._tick, self._rec, self._recv, self._send)
        self._key, self._tick, self._rec = self._key[:n], self._tick[:n], self._rec[:n]
        self._recv, self._send = self._recv[:n], self._send[:n]
        row_starts(self._recv, indptr)
        return indptr

    def _merge(self, sent: _Send | None, oldest: int) -> None:
        """Fold a send's deliveries not merged yet into the table (per pair, the latest sent),
        dropping entries sent before `oldest`; written into the spare buffers (ping-pong)."""
        # (at most every copy of the send is new: the buffers are sized for that)
        need = len(self._key) + (0 if sent is None else len(sent.receiver))
        spare = self._buffers[self._current ^ 1]
        if len(spare[0]) < need:  # grow by half again: few reallocations as the swarm forms
            cap = max(need, len(spare[0]) * 3 // 2, 64)
            spare = (
                np.empty(cap, dtype=np.int64),
                np.empty(cap, dtype=np.int64),
                np.empty((cap, len(self.fields))),
                np.empty(cap, dtype=np.int64),
                np.empty(cap, dtype=np.int64),
            )
            self._buffers[self._current ^ 1] = spare
        if sent is None:  # only the expired entries dropped: a send of no copies
            none, no = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
            sent = _Send(none, none, oldest, self._rec, no, no)
        # the copies delivered and not merged yet (in order: by receiver, then sender)
        n = merge_fresh(
            self._key, self._tick, self._rec, self._recv, self._send, sent.receiver, sent.sender,
            sent.delivered, sent.merged, sent.send_tick, sent.snapshot, oldest, self._m, spare,
        )  # fmt: skip
        self._current ^= 1
        self._key, self._tick, self._rec, self._recv, self._send = (b[:n] for b in spare)

    # -- counting --------------------------------------------------------------------------
    def _add(self, ch: int, sender: np.ndarray, receiver: np.ndarray | None, fate: int) -> None:
        """One count per copy, for each sender (and receiver) given."""
        if not len(sender):
            return
        self.dispatcher.count_rows(ch, sender, receiver, fate)
        self._counts[fate] += len(sender)

    def _add_per(
        self,
        ch: int,
        tx_rows: np.ndarray | None,
        k: np.ndarray,
        fate: int,
        rx_rows: np.ndarray | None = None,
    ) -> None:
        """Add `k[i]` copies to the sender counter of `tx_rows[i]` (or receiver `rx_rows[i]`)."""
        d = self.dispatcher
        if tx_rows is not None:
            d.count_n(ch, tx_rows, k, fate)
            self._counts[fate] += int(k.sum())
        if rx_rows is not None:
            d.count_n(ch, rx_rows, k, fate, receiver=True)

    def counts(self) -> dict[str, int]:
        """This net's fate totals (copies), with copies in flight."""
        out = {f: int(v) for f, v in zip(FATES, self._counts)}
        out["in_flight"] = sum(len(idx) for due in self._due.values() for _, idx in due)
        return out

    def delivery_log(self) -> np.ndarray:
        """(K, 4) int rows (send tick, delivery tick, sender row, receiver row); needs `log`."""
        if self._log is None:
            raise RuntimeError("the beacon log is off: BeaconNet(..., log=True)")
        return np.concatenate(self._log) if self._log else np.zeros((0, 4), dtype=np.int64)
