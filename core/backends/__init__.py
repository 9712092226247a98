"""The World seam: the one interface through which the Simulator and everything above it talk
to physics.

Two backends implement it: `bullet` (core/backends/bullet.py, pybullet, the default) and `fast`
(core/backends/fast.py, every body integrated over arrays by a compiled kernel, the scale path
for 1,000-10,000 UAVs). Nothing outside a backend module sees a backend's own body ids: bodies
are named by their state slot (a row of `World.state`), scenery by a negative id (`GROUND` = -1,
the k-th obstacle or terrain `-2 - k`).

Usage (a backend by name, one body dropped onto the ground):

    world = make_world("fast", tick_s=0.0025, gravity=9.81)
    world.add_ground()
    (slot,) = world.add_bodies(BodyShape(half_extents=(0.1, 0.1, 0.1)), 1.0, [(0, 0, 2)])
    for _ in range(400):
        world.apply_forces([slot], np.array([[1.0, 0.0, 0.0]]))
        world.step_physics()
        world.read_state()
    world.state.position[slot]      # (3,) m
    world.contacts.a, world.contacts.b   # [slot], [GROUND] once it rests
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from skyswarm.core.schema import ticks_exact
from skyswarm.core.state import BodyState

if TYPE_CHECKING:
    from skyswarm.core.backends.terrain import Heightfield

GROUND = -1  # scenery id of the ground plane in contact reports
BACKENDS = ("bullet", "fast")


def obstacle_id(k: int) -> int:
    """Scenery id of the k-th static item after the ground (obstacles and terrain, in order)."""
    return -2 - k


@dataclass(frozen=True)
class BodyShape:
    """The collision shape of a dynamic body: a box (`half_extents`, m) or the convex hull of
    an OBJ mesh (`mesh`). The fast backend collides a mesh by its bounding box."""

    half_extents: tuple[float, float, float] | None = None
    mesh: Path | None = None


@dataclass(frozen=True)
class ContactReport:
    """The contact pairs of one tick as arrays, one row per pair, sorted, `a` before `b`:
    `a`, `b` (k,) body slots (>= 0) or scenery ids (< 0); `normal_force` (k,) N summed over the
    pair's contact points; `position` (k, 3) m, world frame, one point of the pair."""

    a: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    b: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    normal_force: np.ndarray = field(default_factory=lambda: np.zeros(0))
    position: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    def __len__(self) -> int:
        return len(self.a)

    def pairs(self) -> list[tuple[int, int]]:
        return list(zip(self.a.tolist(), self.b.tolist()))


class World(ABC):
    """Physics behind the seam: bodies by slot, a fixed tick, state arrays, one contact report.

    Time is the integer `tick`; `time_s = tick * tick_s` is derived, never accumulated.
    A tick is: wrenches/forces applied (cleared after the step), `step_physics()`,
    `read_state()` (state arrays and the contact report of this tick).
    """

    name = "world"

    def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
        if not tick_s > 0:
            raise ValueError(f"tick_s must be positive, got {tick_s!r}")
        self.tick_s = float(tick_s)
        self.gravity = float(gravity)
        self.tick = 0
        self.state = BodyState()
        self._owners: dict[int, Any] = {}  # slot -> agent (or other owner)
        self._scenery: list[str] = []  # names of the scenery ids -2, -3, ...
        self.has_ground = False

    # -- time -----------------------------------------------------------------------------
    @property
    def time_s(self) -> float:
        return self.tick * self.tick_s

    def ticks_for(self, seconds: float, what: str = "period") -> int:
        """Whole number of ticks (>= 0) in `seconds`; anything else is a configuration error."""
        n = ticks_exact(seconds, self.tick_s)
        if n is None or n < 0:
            raise ValueError(f"{what} {seconds!r} s is not a whole number of {self.tick_s} s ticks")
        return n

    def ticks_for_until(self, seconds: float) -> int:
        """The tick at which `seconds` of simulated time have elapsed (rounded up)."""
        return max(0, math.ceil(seconds / self.tick_s - 1e-9))

    # -- owners and scenery names ----------------------------------------------------------
    def set_owner(self, slot: int, owner: Any) -> None:
        self._owners[int(slot)] = owner

    def owner_of_slot(self, slot: int) -> Any:
        return self._owners.get(int(slot))

    def scenery_name(self, scenery_id: int) -> str:
        """'ground', or 'obstacle k' (k from 0, in the order they were added)."""
        return "ground" if scenery_id == GROUND else self._scenery[-2 - scenery_id]

    def _new_scenery(self, what: str) -> int:
        k = len(self._scenery)
        self._scenery.append(f"{what} {k}")
        return obstacle_id(k)

    # -- the seam ---------------------------------------------------------------------------
    @abstractmethod
    def add_bodies(
        self,
        shape: BodyShape,
        mass: float,
        positions: Sequence[Sequence[float]],
        orientations: Sequence[Sequence[float]] | None = None,
        inertia: Sequence[float] | None = None,
    ) -> np.ndarray:
        """Dynamic bodies, one per (n, 3) position m (quaternions x, y, z, w; principal
        inertia kg m^2, default: the shape's), read every tick; returns their (n,) slots."""

    @abstractmethod
    def add_ground(self) -> int:
        """An infinite plane at z = 0; returns GROUND."""

    @abstractmethod
    def add_box(self, center: Sequence[float], size: Sequence[float], yaw_rad: float = 0.0) -> int:
        """A static box obstacle: centre m, full size m, yaw about z rad; returns its id."""

    @abstractmethod
    def add_mesh(
        self, path: str | Path, position: Sequence[float] = (0, 0, 0), scale: float = 1.0
    ) -> int:
        """Static triangle-mesh scenery (terrain, building) from an OBJ file; returns its id."""

    @abstractmethod
    def add_heightfield(self, heightfield: Heightfield) -> int:
        """Static terrain from a height grid (core/backends/terrain.py, the same triangulated
        surface on both backends); returns its id."""

    def add_terrain(self, path: str | Path, cell_m: float) -> int:
        """Triangle-mesh terrain from an OBJ file: the mesh itself where the backend has
        meshes (Bullet); the fast backend samples it to a height grid of spacing `cell_m`."""
        return self.add_mesh(path)

    @abstractmethod
    def apply_wrenches(self, slots: np.ndarray, force_body: np.ndarray, torque_world: np.ndarray):
        """For the next step: (n, 3) forces N in each body's frame, at its centre of mass, and
        (n, 3) torques N m in the world frame, on the bodies `slots` (n,)."""

    @abstractmethod
    def apply_forces(self, slots: np.ndarray, force_world: np.ndarray) -> None:
        """For the next step: (n, 3) world-frame forces N at the centres of mass of `slots`."""

    @abstractmethod
    def step_physics(self) -> None:
        """Advance one tick; forces applied since the last step are then cleared."""

    @abstractmethod
    def read_state(self) -> None:
        """Fill the state arrays of every live body and this tick's contact report."""

    @property
    @abstractmethod
    def contacts(self) -> ContactReport:
        """This tick's contact pairs (see ContactReport)."""

    @property
    @abstractmethod
    def tracked_slots(self) -> np.ndarray:
        """State slots of the live bodies, ascending."""

    @abstractmethod
    def remove(self, slot: int) -> None:
        """Take a body out of the world; its slot keeps the last state and is not reused."""

    def close(self) -> None:
        """Release the backend's resources (none by default)."""
        self.has_ground = self.has_ground  # nothing to release


# numba's OpenMP threads wait for work asleep, not spinning: on a machine shared with other jobs
# (batch workers, other users) a spinning thread steals the core the work needs (measured at
# load average 9 on 2 cores: the threaded kernels 4-10x slower than one thread with spinning
# waits, about as fast with passive ones). Read once, when numba starts its threads; a user's
# own setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Below this many bodies (or agents) a compiled pass runs on one thread: starting numba's
# threads costs more than the work. Above it the parallel variant runs, bit-identical to the
# serial one (each body's arithmetic is its own), so the choice never changes a result.
PARALLEL_MIN = 2048


def threaded(n: int) -> bool:
    """Whether a compiled pass over `n` bodies should use numba's threads (more than one
    configured, see `numba.set_num_threads` and NUMBA_NUM_THREADS, and n >= PARALLEL_MIN)."""
    return n >= PARALLEL_MIN and numba.get_num_threads() > 1


def make_world(physics: str = "bullet", tick_s: float = 0.0025, gravity: float = 9.81) -> World:
    """A backend by name: 'bullet' or 'fast'."""
    if physics == "bullet":
        from skyswarm.core.backends.bullet import BulletWorld

        return BulletWorld(tick_s, gravity)
    if physics == "fast":
        from skyswarm.core.backends.fast import FastWorld

        return FastWorld(tick_s, gravity)
    raise ValueError(f"physics {physics!r}: expected one of {', '.join(BACKENDS)}")
