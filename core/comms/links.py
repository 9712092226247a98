"""Radio links of the last few ticks: which copy went from whom to whom on which channel, and
what became of it, for views that draw the swarm's radio traffic (gui/, issue 30).

Off by default (a run pays nothing): `MessageDispatcher.watch_links(ticks)` turns it on, after
which every copy whose fate is decided with its receiver known (delivered, lost on air, out of
range, receiver dead, queue overflow; messages and beacons alike) is kept for `ticks` ticks. A
broadcast's copies to agents beyond the spatial query's reach are counted out of range in bulk,
without receivers: they are not links.

    sim.dispatcher.watch_links(round(0.5 / sim.world.tick_s))
    links = sim.dispatcher.recent_links()   # RadioLinks of the last 0.5 s
    links.sender[links.fate == DELIVERED]   # ids of the senders heard
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RadioLinks:
    """K copies: sender and receiver ids (K,) int64, channel index (K,) int (the dispatcher's
    `channels` order), fate (K,) int (an index of core/comms/fates.py FATES), tick (K,) int64
    at which the fate was decided."""

    sender: np.ndarray
    receiver: np.ndarray
    channel: np.ndarray
    fate: np.ndarray
    tick: np.ndarray

    @classmethod
    def empty(cls) -> RadioLinks:
        z = np.zeros(0, dtype=np.int64)
        return cls(z, z, z, z, z)


class LinkWindow:
    """The copies of the last `ticks` ticks (module docstring); ids are agent ids."""

    def __init__(self, ticks: int) -> None:
        if ticks < 1:
            raise ValueError(f"a link window is at least 1 tick, got {ticks}")
        self.ticks = int(ticks)
        self._batches: deque[tuple[int, np.ndarray]] = deque()  # (tick, (K, 5) int64)

    def add(
        self,
        tick: int,
        sender: np.ndarray,
        receiver: np.ndarray,
        channel: np.ndarray | int,
        fate: np.ndarray | int,
    ) -> None:
        """Keep copies decided at `tick` (ids, channel, fate: arrays or one value for all)."""
        n = len(sender)
        if n == 0:
            return
        rows = np.empty((n, 5), dtype=np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], rows[:, 4] = (
            sender, receiver, channel, fate, tick,
        )  # fmt: skip
        self._batches.append((tick, rows))
        self._drop(tick)

    def _drop(self, now: int) -> None:
        while self._batches and now - self._batches[0][0] >= self.ticks:
            self._batches.popleft()

    def recent(self, now: int) -> RadioLinks:
        """The copies decided in the `ticks` ticks up to and including tick `now`."""
        self._drop(now)
        if not self._batches:
            return RadioLinks.empty()
        rows = np.concatenate([b for _, b in self._batches])
        return RadioLinks(*(rows[:, k].copy() for k in range(5)))
