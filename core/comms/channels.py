"""Wireless channel models: the `[comms]` config section, loss models and per-channel timing.

A channel has a base latency plus jitter, a loss probability (constant or distance-dependent), a
maximum range, a receive-queue capacity per agent and an optional bandwidth cap per agent.

Timing. Latency and jitter are whole numbers of ticks (docs/architecture.md, Time: anything else
is a configuration error). A transmission sent at tick `t` is due at `t + max(1, L + U)` with
`L = latency_s / tick_s` and `U` drawn uniformly from the integers `0 .. jitter_s / tick_s` (one
draw per transmission: all receivers of a broadcast hear the same frame at the same tick). Mean
delay is `L + J / 2` ticks. A message is never delivered in the tick it was sent, because
delivery (phase 1) has already happened when behaviour code (phase 2) sends.

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
from typing import Any, ClassVar, Literal

import numpy as np

from skyswarm.core.schema import ConfigError, build, did_you_mean, param, ticks_exact


@dataclass(frozen=True)
class ChannelConfig:
    """One channel's parameters (a `[comms.channels.NAME]` table)."""

    latency_s: float = param(0.005, "base latency, s (whole ticks; 0 = the next tick)", ge=0.0)
    jitter_s: float = param(
        0.0, "extra delay, uniform over whole ticks 0..jitter_s, s (one draw per frame)", ge=0.0
    )
    loss: float = param(0.0, "loss probability (constant), or at 0 m (rayleigh)", ge=0.0, le=1.0)
    loss_model: str = param(
        "constant",
        "constant, rayleigh (distance-dependent, see core/comms/channels.py) or a model "
        "registered with register_loss_model",
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
    # 64 by default, as a real radio's table has a size: a dense swarm's beacon work stays
    # bounded without a setting to find (1,000 boids on a 100 m radio: 0.57x the hover
    # stack's rate, against 0.31x with every sender). Smaller tables changed flocks: 16 cut a
    # 300-UAV Vasarhelyi flock's velocity correlation from 0.93 to 0.64, and 32 a 300-boid
    # flock's polarisation; 64 flew both close to the exact table (the largest gap: velocity
    # correlation 0.91 against 0.93; docs/performance.md, "The neighbour table's default").
    # Where no receiver ever has more than 64 senders in range or still held, it is the exact
    # table with the same draws, bit for bit
    # (tests/core/test_beacons_nearest.py).
    neighbour_table: int = param(
        64,
        "beacons: each receiver's table holds at most this many senders: each round its nearest "
        "in range, the freshest when full; the rest counted queue_overflow (0: every sender "
        "in range, exact)",
        ge=0,
    )

    def validate(self, path: str, file: str) -> None:
        """`loss_model` names a registered model (LOSS_MODELS)."""
        if self.loss_model not in LOSS_MODELS:
            names = ", ".join(map(repr, LOSS_MODELS))
            raise ConfigError(
                file,
                f"{path}.loss_model" if path else "loss_model",
                self.loss_model,
                f"one of {names}{did_you_mean(self.loss_model, LOSS_MODELS)}",
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
    """Base of the loss models: the probability that one frame is lost at distance d. A model
    reads its channel's keys from `self.cfg` (`ChannelConfig`); `register_loss_model` makes it
    selectable by `loss_model = "<name>"`:

        @register_loss_model
        class Linear(LossModel):
            name = "linear"  # p = d / range_m

            def probability(self, distance_m):
                return np.clip(np.asarray(distance_m) / self.cfg.range_m, 0.0, 1.0)

            def probability_one(self, distance_m):
                return min(max(distance_m / self.cfg.range_m, 0.0), 1.0)
    """

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


def register_loss_model(cls: type[LossModel]) -> type[LossModel]:
    """Class decorator: make `cls` a radio loss model that `[comms.channels.NAME] loss_model =
    "<cls.name>"` selects. It reads the channel's keys from `self.cfg` (a `ChannelConfig`:
    `loss`, `half_loss_distance_m`, `path_loss_exponent`, `range_m` ...); register it before
    the scenario is loaded. Example, everything arrives up to half_loss_distance_m, nothing
    beyond:

        @register_loss_model
        class Cliff(LossModel):
            name = "cliff"

            def probability(self, distance_m):
                return np.where(np.asarray(distance_m) <= self.cfg.half_loss_distance_m, 0.0, 1.0)

            def probability_one(self, distance_m):
                return 0.0 if distance_m <= self.cfg.half_loss_distance_m else 1.0
    """
    name = cls.__dict__.get("name")
    if not (isinstance(cls, type) and issubclass(cls, LossModel)):
        raise TypeError(f"{cls!r}: a loss model is a subclass of LossModel")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{cls.__name__}.name = {name!r}: declare an identifier")
    if LOSS_MODELS.get(name, cls) is not cls:
        raise ValueError(f"loss model {name!r} is already registered ({LOSS_MODELS[name]!r})")
    LOSS_MODELS[name] = cls
    return cls


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

    def set_enabled(self, on: bool) -> None:
        """Switch the channel off (range 0: every copy is out of range, counted so) or back on
        at its configured range. Called by its dispatcher (`set_channel_enabled`) only."""
        self.range_m = float(self.cfg.range_m) if on else 0.0

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
        """(count,) int delays in ticks, each >= 1, drawn from the comms stream.

        Without jitter the draw `rng.integers(0, 1, size=count)` is all zeros and takes nothing
        from the stream (numpy fills a zero-width range without drawing; tests/core/
        test_comms_delays.py pins it), so it is skipped: the stream and the delays are those
        of the draw."""
        if self.jitter_ticks == 0:
            return np.full(count, max(1, self.latency_ticks), dtype=np.int64)
        jitter = rng.integers(0, self.jitter_ticks + 1, size=count)
        return np.maximum(1, self.latency_ticks + jitter)

    def delay_ticks(self, rng: np.random.Generator, count: int) -> list[int]:
        """`delays` as a list: the same values and the same draws from the stream. numpy fills
        `integers(0, n, size=count)` one value after the other, as `count` calls of
        `integers(0, n)` draw them (tests/core/test_comms_delays.py pins it), and a scalar call
        costs a quarter of an array call, whose size handling runs in Python: a small swarm's
        tick sends one to three frames a channel, drawn one by one."""
        latency = self.latency_ticks
        if self.jitter_ticks == 0:
            return [latency if latency > 1 else 1] * count
        high = self.jitter_ticks + 1
        if count <= SCALAR_DRAWS:
            jitter = [int(rng.integers(0, high)) for _ in range(count)]
        else:
            jitter = rng.integers(0, high, size=count).tolist()
        return [latency + j if latency + j > 1 else 1 for j in jitter]


# delays drawn one by one (`Channel.delay_ticks`) up to this many a call: a scalar
# `Generator.integers` costs ~3.8 us, an array one ~15 us whatever its size up to a few dozen
SCALAR_DRAWS = 3


def _whole_ticks(seconds: float, tick_s: float, channel: str, key: str, file: str) -> int:
    n = ticks_exact(seconds, tick_s)
    if n is None:
        raise ConfigError(
            file, f"comms.channels.{channel}.{key}", seconds, f"a whole number of {tick_s} s ticks"
        )
    return n
