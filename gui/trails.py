"""Motion trails: where each agent was over the last `length_s` seconds, as (N, T, 3) points.

`TrailBuffer` records a live run (one row of positions every TRAIL_EVERY_S of simulated time,
in a ring); `recorded_trail` cuts the same points out of a recording, so a replay draws the
trails the live view drew. Both are vectorised over agents: one array per frame, one draw call.

    trails = TrailBuffer(length_s=12.0)
    trails.record(frame)           # every GUI frame; keeps a point each TRAIL_EVERY_S
    points = trails.points(frame)  # (N, T, 3) m, oldest first, the current position last
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.gui.scene import Frame

TRAIL_EVERY_S = 0.2  # s of simulated time between trail points
DEFAULT_TRAIL_S = 12.0  # s: the trail length of `--trails` without a value, and of the L key


class TrailBuffer:
    """The last `length_s` seconds of positions of a live run's agents (module docstring)."""

    def __init__(self, length_s: float = DEFAULT_TRAIL_S) -> None:
        if not (length_s > 0 and math.isfinite(length_s)):
            raise ValueError(f"trail length must be a time > 0 s, got {length_s!r}")
        self.length_s = float(length_s)
        self.capacity = max(2, int(round(length_s / TRAIL_EVERY_S)))
        self._ring: np.ndarray | None = None  # (capacity, N, 3) m
        self._count = 0  # points recorded (the ring holds the last `capacity`)
        self._next_s = -math.inf
        self._ids: np.ndarray | None = None

    def clear(self) -> None:
        self._ring, self._count, self._next_s, self._ids = None, 0, -math.inf, None

    def record(self, frame: Frame) -> None:
        """Keep `frame`'s positions if TRAIL_EVERY_S has passed since the last point kept; a
        change of the agent set (an agent added) or time going back starts the trails anew."""
        if frame.time_s < self._next_s - TRAIL_EVERY_S:  # a reset or a seek back
            self.clear()
        if frame.time_s + 1e-9 < self._next_s:  # 1e-9: ticks * tick_s rounds either way
            return
        if self._ids is None or not np.array_equal(self._ids, frame.ids):
            self.clear()
            self._ids = frame.ids.copy()
            self._ring = np.empty((self.capacity, len(frame.ids), 3))
        assert self._ring is not None
        self._ring[self._count % self.capacity] = frame.positions
        self._count += 1
        self._next_s = frame.time_s + TRAIL_EVERY_S

    def points(self, frame: Frame) -> np.ndarray:
        """(N, T, 3) m: each agent's kept points, oldest first, then its position in `frame`;
        (N, 0, 3) when nothing is kept for `frame`'s agents."""
        if self._ring is None or self._ids is None or not np.array_equal(self._ids, frame.ids):
            return np.zeros((len(frame.ids), 0, 3))
        n = min(self._count, self.capacity)
        start = self._count - n
        order = (np.arange(start, self._count)) % self.capacity
        kept = self._ring[order]  # (T, N, 3)
        return np.concatenate([kept, frame.positions[None]], axis=0).transpose(1, 0, 2)


def recorded_trail(
    times: np.ndarray, positions: np.ndarray, time_s: float, length_s: float
) -> np.ndarray:
    """(N, T, 3) m trail points of a recording: `positions` (S, N, 3) sampled at `times` (S,)
    s, at the TRAIL_EVERY_S grid points within `length_s` before `time_s` (the grid a live
    TrailBuffer started at t = 0 keeps), then the sample shown at `time_s`."""
    if len(times) == 0:
        return np.zeros((positions.shape[1], 0, 3))
    last = math.floor((time_s + 1e-9) / TRAIL_EVERY_S)
    first = max(0, last - max(2, int(round(length_s / TRAIL_EVERY_S))) + 1)
    grid = np.arange(first, last + 1) * TRAIL_EVERY_S
    idx = np.maximum(0, np.searchsorted(times, grid + 1e-9, side="right") - 1)
    now = max(0, int(np.searchsorted(times, time_s + 1e-9, side="right")) - 1)
    return positions[np.r_[idx, now]].transpose(1, 0, 2)
