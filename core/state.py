"""Struct-of-arrays state of every body the world reads each tick.

See docs/architecture.md, State in arrays.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

import numpy as np


def rows_of_slots(slots: np.ndarray) -> slice | np.ndarray:
    """Index for the rows `slots` (1-D ints): a slice when they are contiguous and ascending
    (a view, cheaper to read and assign), else `slots` itself. Empty slots give slice(0, 0)."""
    n = len(slots)
    first = int(slots[0]) if n else 0
    if np.array_equal(slots, np.arange(first, first + n)):
        return slice(first, first + n)
    return slots


class BodyState:
    """Struct-of-arrays state of every body registered for reading, indexed by slot.

    Slots are never reused within a run. Each tick the Bullet backend reads every live body once
    and stores the pybullet tuples into the arrays at once (`store_poses`, `store_velocities`);
    the fast backend integrates the arrays in place.
    """

    def __init__(self, capacity: int = 64) -> None:
        self._position = np.full((capacity, 3), np.nan)  # m, world ENU
        self._orientation = np.zeros((capacity, 4))  # quaternion x, y, z, w
        self._orientation[:, 3] = 1.0
        self._linear_velocity = np.zeros((capacity, 3))  # m/s, world frame
        self._angular_velocity = np.zeros((capacity, 3))  # rad/s, world frame
        self.size = 0
        self._rows_key: np.ndarray | None = None  # the slots `_rows` was made for
        self._rows: slice | np.ndarray = slice(0, 0)

    def _grow(self, need: int) -> None:
        cap = len(self._position)
        if need <= cap:
            return
        new_cap = max(need, 2 * cap)
        for name in ("_position", "_orientation", "_linear_velocity", "_angular_velocity"):
            old = getattr(self, name)
            new = np.zeros((new_cap, old.shape[1]))
            new[:cap] = old
            setattr(self, name, new)
        self._position[cap:] = np.nan
        self._orientation[cap:, 3] = 1.0

    def add(self, count: int) -> np.ndarray:
        """Reserve `count` new slots; returns their indices."""
        self._grow(self.size + count)
        slots = np.arange(self.size, self.size + count)
        self.size += count
        return slots

    def store_poses(self, slots: np.ndarray, poses: Iterable[tuple]) -> None:
        """getBasePositionAndOrientation results of the bodies in `slots` into the arrays, one
        per slot: a list, or an iterator that makes them (each tuple dropped once read)."""
        n, rows = len(slots), self._rows_of(slots)
        flat = np.fromiter(chain.from_iterable(chain.from_iterable(poses)), float, 7 * n)
        flat = flat.reshape(n, 7)
        self._position[rows] = flat[:, :3]
        self._orientation[rows] = flat[:, 3:]

    def store_velocities(self, slots: np.ndarray, velocities: Iterable[tuple]) -> None:
        """getBaseVelocity results of the bodies in `slots` into the arrays (as `store_poses`)."""
        n, rows = len(slots), self._rows_of(slots)
        flat = np.fromiter(chain.from_iterable(chain.from_iterable(velocities)), float, 6 * n)
        flat = flat.reshape(n, 6)
        self._linear_velocity[rows] = flat[:, :3]
        self._angular_velocity[rows] = flat[:, 3:]

    def _rows_of(self, slots: np.ndarray) -> slice | np.ndarray:
        """`rows_of_slots(slots)`, cached per slots array."""
        if slots is not self._rows_key:
            self._rows_key, self._rows = slots, rows_of_slots(slots)
        return self._rows

    @property
    def position(self) -> np.ndarray:
        """(capacity, 3) positions in m; rows of removed bodies keep their last value."""
        return self._position

    @property
    def orientation(self) -> np.ndarray:
        """(capacity, 4) quaternions (x, y, z, w)."""
        return self._orientation

    @property
    def linear_velocity(self) -> np.ndarray:
        """(capacity, 3) linear velocities in m/s, world frame."""
        return self._linear_velocity

    @property
    def angular_velocity(self) -> np.ndarray:
        """(capacity, 3) angular velocities in rad/s, world frame."""
        return self._angular_velocity
