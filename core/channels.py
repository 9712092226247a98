"""Wireless channel models: the `[comms]` config section, loss models and per-channel timing.

A channel has a base latency plus jitter, a loss probability (constant or distance-dependent), a
maximum range, a receive-queue capacity per agent and an optional bandwidth cap per agent.

Timing. Latency and jitter are whole numbers of ticks (DESIGN.md §2: anything else is a
configuration error). A transmission sent at tick `t` is due at
`t + max(1, L + U)` with `L = latency_s / tick_s` and `U` drawn uniformly from the integers
`0 .. jitter_s / tick_s` (one draw per transmission: all receivers of a broadcast hear the same
frame at the same tick). Mean delay is `L + J / 2` ticks. A message is never delivered in the tick
it was sent, because delivery (phase 1) has already happened when behaviour code (phase 2) sends.

Loss models (`loss_model`), each a `LossModel` with a vectorised `probability(d)` and a one-value
reference `probability_one(d)`:
- `constant`:  p(d) = loss.
- `rayleigh`:  p(d) = 1 - (1 - loss) * exp(-ln 2 * (d / half_loss_distance_m) ** path_loss_exponent)
  Rayleigh block fading over a log-distance path loss: a frame is received when the faded SNR
  exceeds a threshold, which happens with probability exp(-c d^n); `c` is fixed so that at
  `half_loss_distance_m` half of the frames that survive the base loss arrive. `loss` is the
  loss at zero distance; n = 2 is free space, 2.7-4 built-up areas.
Beyond `range_m` nothing arrives (counted "out of range", not "lost on air").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, ClassVar, Literal, Protocol

import numpy as np

from core.schema import ConfigError, build, param


@dataclass(frozen=True)
class ChannelConfig:
    """One channel's parameters (a `[comms.channels.NAME]` table)."""

    latency_s: float = param(0.005, "base latency, s (whole ticks; 0 = the next tick)", ge=0.0)
    jitter_s: float = param(
        0.0, "extra delay, uniform over whole ticks 0..jitter_s, s (one draw per frame)", ge=0.0
    )
    loss: float = param(0.0, "loss probability (constant), or at 0 m (rayleigh)", ge=0.0, le=1.0)
    loss_model: Literal["constant", "rayleigh"] = param(
        "constant", "constant, or rayleigh (distance-dependent, see core/channels.py)"
    )
    half_loss_distance_m: float = param(
        50.0, "rayleigh: distance at which half of the frames arrive, m", gt=0.0
    )
    path_loss_exponent: float = param(2.0, "rayleigh: path-loss exponent (2: free space)", gt=0.0)
    range_m: float = param(math.inf, "maximum range, m (inf: unlimited)", gt=0.0)
    queue_capacity: int = param(64, "receive-queue capacity per agent, messages", ge=1)
    bandwidth_bytes_per_s: float = param(
        0.0, "cap per sending agent, bytes/s, token bucket 1 s deep (0: no cap)", ge=0.0
    )
    message_size_bytes: int = param(64, "size of a message that does not state one, bytes", ge=1)
    link: Literal["any", "base_station"] = param(
        "any", "any pair of agents, or base_station: one end must be a base station"
    )


@dataclass(frozen=True)
class BaseStationSpec:
    """A base station: a logical agent (no body) at a fixed position on the long-range link."""

    id: int = param(doc="agent id, unique in the run (not used by the mission's agents)", ge=0)
    position: tuple[float, ...] = param(doc="(x, y) or (x, y, z), m, ENU", length=(2, 3))
    name: str = param("", "display name (default base_station-ID)")


DEFAULT_CHANNELS: Mapping[str, ChannelConfig] = {
    "radio": ChannelConfig(
        latency_s=0.005, jitter_s=0.0025, loss=0.01, range_m=100.0, queue_capacity=64
    ),
    "long_range": ChannelConfig(
        latency_s=0.05, jitter_s=0.01, loss=0.0, queue_capacity=256, link="base_station"
    ),
}


def _default_channels() -> dict[str, ChannelConfig]:
    return dict(DEFAULT_CHANNELS)


@dataclass(frozen=True)
class CommsConfig:
    """The `[comms]` section. `channels` tables are laid over the shipped defaults: a table
    named `radio` or `long_range` changes only the keys it gives; any other name adds a channel
    starting from `ChannelConfig`'s defaults."""

    channels: Any = dataclasses.field(
        default_factory=_default_channels,
        metadata={"doc": "channel name -> channel table ([comms.channels.NAME])"},
    )
    base_stations: tuple[BaseStationSpec, ...] = param(
        (), "base stations ([[comms.base_stations]])"
    )
    log_deliveries: bool = param(False, "keep a (tick, seq, receiver) log of every delivery")

    def validate(self, path: str, file: str) -> None:
        """Turn the raw `channels` tables into ChannelConfig (build() calls this with the file)."""
        object.__setattr__(self, "channels", resolve_channels(self.channels, path, file))
        seen: set[int] = set()
        for i, bs in enumerate(self.base_stations):
            if bs.id in seen:
                raise ConfigError(file, f"{path}.base_stations[{i}].id", bs.id, "an unused id")
            seen.add(bs.id)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], file: str = "") -> CommsConfig:
        """Validate a `[comms]` table given in Python (tests, notebooks)."""
        return build(cls, data, "comms", file)


def resolve_channels(raw: Any, path: str, file: str) -> dict[str, ChannelConfig]:
    key = f"{path}.channels" if path else "channels"
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(file, key, raw, "a table of channel tables ([comms.channels.NAME])")
    out = _default_channels()
    for name, table in raw.items():
        if isinstance(table, ChannelConfig):
            out[name] = table
            continue
        if not isinstance(table, Mapping):
            raise ConfigError(file, f"{key}.{name}", table, "a channel table")
        base = dataclasses.asdict(DEFAULT_CHANNELS[name]) if name in DEFAULT_CHANNELS else {}
        out[name] = build(ChannelConfig, {**base, **table}, f"{key}.{name}", file)
    return out


# -- loss models ------------------------------------------------------------------------------
class LossModel:
    """Base of the loss models: the probability that one frame is lost at distance d."""

    name: ClassVar[str] = ""

    def __init__(self, cfg: ChannelConfig) -> None:
        self.cfg = cfg

    def probability(self, distance_m: np.ndarray) -> np.ndarray:
        """(K,) loss probabilities in [0, 1] for (K,) distances in m."""
        raise NotImplementedError

    def probability_one(self, distance_m: float) -> float:
        """Plain one-frame reference of `probability` (tests check they agree)."""
        raise NotImplementedError


class ConstantLoss(LossModel):
    name = "constant"

    def probability(self, distance_m: np.ndarray) -> np.ndarray:
        return np.full(np.shape(distance_m), self.cfg.loss)

    def probability_one(self, distance_m: float) -> float:
        return self.cfg.loss


class RayleighLoss(LossModel):
    """p(d) = 1 - (1 - loss) exp(-ln 2 (d / d50)^n)."""

    name = "rayleigh"

    def probability(self, distance_m: np.ndarray) -> np.ndarray:
        c = self.cfg
        x = (np.asarray(distance_m, dtype=float) / c.half_loss_distance_m) ** c.path_loss_exponent
        return 1.0 - (1.0 - c.loss) * np.exp(-math.log(2.0) * x)

    def probability_one(self, distance_m: float) -> float:
        c = self.cfg
        x = (distance_m / c.half_loss_distance_m) ** c.path_loss_exponent
        return 1.0 - (1.0 - c.loss) * math.exp(-math.log(2.0) * x)


LOSS_MODELS: dict[str, type[LossModel]] = {m.name: m for m in (ConstantLoss, RayleighLoss)}


class Channel:
    """A channel at run time: its config turned into ticks, its loss model, its index."""

    def __init__(
        self, name: str, index: int, cfg: ChannelConfig, tick_s: float, file: str = ""
    ) -> None:
        self.name = name
        self.index = index
        self.cfg = cfg
        self.latency_ticks = _whole_ticks(cfg.latency_s, tick_s, name, "latency_s", file)
        self.jitter_ticks = _whole_ticks(cfg.jitter_s, tick_s, name, "jitter_s", file)
        self.range_m = float(cfg.range_m)
        self.loss_model = LOSS_MODELS[cfg.loss_model](cfg)
        self.bucket_bytes = float(cfg.bandwidth_bytes_per_s)  # bucket depth: one second's worth
        self.tick_s = tick_s
        self.tokens = np.zeros(0)  # (N,) bytes each agent may still send
        self.tokens_tick = 0  # tick of the last refill

    def add_senders(self, count: int) -> None:
        """Token buckets for `count` new agents, full."""
        self.tokens = np.r_[self.tokens, np.full(count, self.bucket_bytes)]

    def bandwidth_ok(self, now: int, sender: np.ndarray, size: np.ndarray) -> np.ndarray:
        """(M,) bool: which of this channel's sends (in send order) fit the senders' buckets.

        Buckets refill at the cap's rate, up to one second's worth; a sender's sends of one tick
        are taken in order until the first that does not fit, which is dropped with all later.
        """
        if self.bucket_bytes <= 0:
            return np.ones(len(sender), dtype=bool)
        refill = (now - self.tokens_tick) * self.tick_s * self.cfg.bandwidth_bytes_per_s
        self.tokens = np.minimum(self.bucket_bytes, self.tokens + refill)
        self.tokens_tick = now
        order = np.argsort(sender, kind="stable")
        s, z = sender[order], size[order].astype(float)
        cs = np.cumsum(z)
        first = np.r_[True, s[1:] != s[:-1]]
        before = np.maximum.accumulate(np.where(first, cs - z, 0.0))  # bytes of earlier senders
        fits = cs - before <= self.tokens[s] + 1e-9
        np.subtract.at(self.tokens, s[fits], z[fits])
        ok = np.ones(len(sender), dtype=bool)
        ok[order[~fits]] = False
        return ok

    def delays(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """(count,) int delays in ticks, each >= 1, drawn from the comms stream."""
        jitter = rng.integers(0, self.jitter_ticks + 1, size=count)
        return np.maximum(1, self.latency_ticks + jitter)


def _whole_ticks(seconds: float, tick_s: float, channel: str, key: str, file: str) -> int:
    n = round(seconds / tick_s)
    if abs(n * tick_s - seconds) > 1e-9 * max(1.0, seconds):
        raise ConfigError(
            file, f"comms.channels.{channel}.{key}", seconds, f"a whole number of {tick_s} s ticks"
        )
    return int(n)


# -- range queries ----------------------------------------------------------------------------
# A KD-tree (scipy.spatial.cKDTree, C code) rather than a numpy grid hash: it needs no cell size
# tuned to the range (channels differ: 100 m radio, others), copes with the very uneven densities
# of a swarm (tight flocks next to empty space) without degenerating, and answers the queries of
# all broadcasters of a tick in one call. It is rebuilt on every tick that has broadcasts, since
# agents move: building it over 5,000 points costs about 1 ms, O(N log N); each query costs
# O(log N + neighbours), so a tick costs O(N log N + N x neighbours), never O(N^2).
def neighbours_within(
    positions: np.ndarray, candidates: np.ndarray, origins: np.ndarray, range_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (origin row, candidate) closer than `range_m` (inclusive).

    positions: (N, 3) m, every agent; candidates: (C,) increasing int agent indices that may
    receive (rows of `positions` that are finite); origins: (B, 3) m, the broadcast points.
    Returns (pair_origin (K,) int rows of `origins`, pair_agent (K,) int agent indices), sorted by
    origin then agent, so that the result does not depend on the index's internal order.
    """
    from scipy.spatial import cKDTree

    if len(candidates) == 0 or len(origins) == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
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
    "addressed",  # receiver copies: 1 per unicast, 1 per alive agent in range per broadcast
    "out_of_range",  # unicast copies beyond range (or with no link, e.g. no base station end)
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
