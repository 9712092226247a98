"""A MAVLink link degraded by one of the scenario's radio channels (`[mavlink] channel`).

The channel (`[comms.channels.NAME]`, core/comms/channels.py) is the dispatcher's own object,
so what the scenario does to it applies here too (a `channel_cut` event switches it off). Every
packet a vehicle sends, and every message it receives, is one frame on it:

- lost with the channel's loss probability at the vehicle's distance from the ground station
  (`[mavlink] ground_station_m`, else the vehicle's home), and always beyond `range_m`; the
  probability is evaluated once per poll for every vehicle as one array;
- otherwise delayed by the channel's `max(1, latency + U(0..jitter))` ticks, drawn per frame.
  Telemetry goes out at the tick it is due (tick-exact); a received message is handled at the
  first poll at or after it is due (`poll_hz` resolution, like an autopilot reading its link).

Draws come from one generator of this link model, seeded from the run's seed and a fixed key,
so the scenario's own random streams are untouched and, with the same client traffic (e.g. a
script stepped in lockstep), the same seed loses and delays the same frames. Bandwidth caps
and queue capacities of the channel do not apply.

    model = LinkChannel(channel, rng, ground=None, homes=homes)   # the service builds it
    model.update(tick, positions)       # each poll: the loss probability of every vehicle
    model.send(row, link, packet)       # instead of sending at once (Link.write)
    model.flush(tick)                   # each tick: the packets due go out
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from skyswarm.core.comms.channels import Channel
    from skyswarm.mavlink.link import Link

SEED_KEY = 0x4D41564C  # "MAVL": the link model's stream, spawned from the run's seed with it


def link_rng(seed: int) -> np.random.Generator:
    """The link model's own generator for a run of `seed` (independent of its other streams)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), SEED_KEY])))


@dataclass
class ChannelCounters:
    """Frames by fate, over every link (sent: vehicle -> client; received: client -> vehicle)."""

    sent: int = 0
    lost_sent: int = 0
    received: int = 0
    lost_received: int = 0

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class LinkChannel:
    """Loss and delay of one radio channel over the links of `len(homes)` vehicles."""

    def __init__(
        self,
        channel: Channel,
        rng: np.random.Generator,
        ground: np.ndarray | None,
        homes: np.ndarray,
    ) -> None:
        """`ground`: (3,) m ENU of the ground station, or None (each vehicle's `homes` row)."""
        self.channel, self.rng = channel, rng
        self.ground = homes if ground is None else np.broadcast_to(ground, homes.shape)
        self.loss = np.zeros(len(homes))  # (n,) this poll's loss probability per vehicle
        self.tick = 0
        self.counters = ChannelCounters()
        self._seq = itertools.count()
        self._out: list[tuple[int, int, Link, bytes]] = []  # heap: (due tick, seq, link, packet)
        self._in: list[list[tuple[int, int, Link, Any]]] = [[] for _ in homes]  # heaps per row

    def update(self, tick: int, positions: np.ndarray) -> None:
        """This poll's loss probability for every vehicle, from its (n, 3) ENU position."""
        self.tick = tick
        distance = np.linalg.norm(positions - self.ground, axis=1)
        p = np.asarray(self.channel.loss_model.probability(distance), dtype=float)
        out_of_range = (distance > self.channel.range_m) | (self.channel.range_m <= 0.0)  # 0: cut
        self.loss = np.where(out_of_range, 1.0, p)

    def _delay(self) -> int:
        return int(self.channel.delays(self.rng, 1)[0])

    # -- vehicle -> client --------------------------------------------------------------------
    def send(self, row: int, link: Link, packet: bytes) -> None:
        """Lose `packet` of vehicle `row`, or queue it for the tick it is due."""
        self.counters.sent += 1
        if self.rng.random() < self.loss[row]:
            self.counters.lost_sent += 1
            return
        heapq.heappush(self._out, (self.tick + self._delay(), next(self._seq), link, packet))

    def flush(self, tick: int) -> None:
        """Put every packet due at or before `tick` on the wire (O(1) when none is)."""
        out = self._out
        while out and out[0][0] <= tick:
            _, _, link, packet = heapq.heappop(out)
            link.transmit(packet)

    # -- client -> vehicle --------------------------------------------------------------------
    def arrive(self, row: int, messages: list[tuple[Link, Any]]) -> None:
        """(link, message) pairs vehicle `row` read this poll: each lost or queued."""
        for link, m in messages:
            self.counters.received += 1
            if self.rng.random() < self.loss[row]:
                self.counters.lost_received += 1
                continue
            heapq.heappush(self._in[row], (self.tick + self._delay(), next(self._seq), link, m))

    def due(self, row: int, tick: int) -> list[tuple[Link, Any]]:
        """(link, message) of vehicle `row` due at or before `tick`, in the order they fall due."""
        queue, out = self._in[row], []
        while queue and queue[0][0] <= tick:
            _, _, link, m = heapq.heappop(queue)
            out.append((link, m))
        return out
