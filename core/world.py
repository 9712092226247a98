"""The Bullet world: one pybullet client, a fixed tick, terrain, body state, contacts.

Every pybullet call of the project that is not about a specific airframe goes through here, so
pybullet's camelCase and its client id stay at this boundary. The world is physics only: the
hooks of each tick phase are registered on the Simulator (core/hooks.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.core._quiet import import_pybullet
from skyswarm.core.schema import ticks_exact
from skyswarm.core.state import BodyState

pb = import_pybullet()


@dataclass(frozen=True)
class Contact:
    """One contact pair of the tick (deduplicated over contact points)."""

    body_a: int
    body_b: int
    normal_force: float  # N, summed over the pair's contact points


class World:
    """Owns a pybullet client in DIRECT mode and advances it one fixed tick at a time.

    Time is the integer `tick`; `time_s = tick * tick_s` is derived, never accumulated.
    """

    def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
        if not tick_s > 0:
            raise ValueError(f"tick_s must be positive, got {tick_s!r}")
        self.tick_s = float(tick_s)
        self.tick = 0
        self.client = pb.connect(pb.DIRECT)
        self._cid = {"physicsClientId": self.client}
        pb.setGravity(0.0, 0.0, -gravity, **self._cid)
        pb.setTimeStep(self.tick_s, **self._cid)
        pb.setPhysicsEngineParameter(numSubSteps=0, deterministicOverlappingPairs=1, **self._cid)
        self.state = BodyState()
        self._read_ids: list[int] = []  # bodies read each tick, in slot order
        self._read_slots: list[int] = []
        self._read_slots_arr = np.zeros(0, dtype=np.intp)
        self._body_of_slot: dict[int, int] = {}
        self.owner_of_body: dict[int, Any] = {}  # Bullet body id -> agent (or other owner)
        self.static_bodies: set[int] = set()  # ground, terrain, obstacles
        self.ground_id: int | None = None
        self._raw_contacts: tuple = ()
        self._contacts: list[Contact] | None = []
        self._closed = False

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

    # -- physics --------------------------------------------------------------------------
    def step_physics(self) -> None:
        """Advance Bullet by one tick; external forces applied this tick are then cleared."""
        pb.stepSimulation(**self._cid)
        self.tick += 1

    def read_state(self) -> None:
        """Read every live body's pose and velocity once (two calls per body) and the world's
        contacts (one query). Contact pairs are built on first use.

        Each list of pybullet tuples becomes arrays at once: kept alive until first use, the
        thousands of small tuples outlive Python's tuple free lists and make the cyclic garbage
        collector run several times a tick (0.6 ms a tick at 1000 bodies, more than the
        conversion itself); converted and dropped at once, they are recycled instead."""
        ids, slots, state = self._read_ids, self._read_slots_arr, self.state
        # positional args: no keyword parsing
        state.store_poses(
            slots, list(map(pb.getBasePositionAndOrientation, ids, repeat(self.client)))
        )
        state.store_velocities(slots, list(map(pb.getBaseVelocity, ids, repeat(self.client))))
        self._raw_contacts = pb.getContactPoints(**self._cid)
        self._contacts = None

    @property
    def contacts(self) -> list[Contact]:
        """This tick's contact pairs, deduplicated over points, bodies ordered a < b."""
        if self._contacts is None:
            pairs: dict[tuple[int, int], float] = {}
            for pt in self._raw_contacts or ():
                a, b, force = pt[1], pt[2], pt[9]
                key = (a, b) if a < b else (b, a)
                pairs[key] = pairs.get(key, 0.0) + force
            self._contacts = [Contact(a, b, f) for (a, b), f in sorted(pairs.items())]
        return self._contacts

    # -- bodies ---------------------------------------------------------------------------
    def create_bodies(
        self,
        mass: float,
        collision_shape: int,
        positions: Sequence[Sequence[float]],
        orientations: Sequence[Sequence[float]] | None = None,
        inertia: Sequence[float] | None = None,
        visual_shape: int = -1,
    ) -> list[int]:
        """Create one body per position in one batched call; returns Bullet body ids.

        Damping is set to zero: drag is an explicit environment force in skyswarm, never
        pybullet's hidden default of 0.04.
        """
        positions = [list(map(float, p)) for p in positions]
        if not positions:
            return []
        ids = pb.createMultiBody(
            baseMass=mass,
            baseCollisionShapeIndex=collision_shape,
            baseVisualShapeIndex=visual_shape,
            batchPositions=positions,
            **self._cid,
        )
        ids = [ids] if isinstance(ids, int) else list(ids)
        pb.syncBodyInfo(**self._cid)
        for i, body in enumerate(ids):
            if orientations is not None:
                pb.resetBasePositionAndOrientation(
                    body, positions[i], list(orientations[i]), **self._cid
                )
            kw: dict[str, Any] = {"linearDamping": 0.0, "angularDamping": 0.0}
            if inertia is not None:
                kw["localInertiaDiagonal"] = list(map(float, inertia))
            pb.changeDynamics(body, -1, **kw, **self._cid)
        return ids

    def track(self, body_ids: Iterable[int], owner: Any = None) -> np.ndarray:
        """Register bodies to be read every tick; returns their state slots."""
        body_ids = list(body_ids)
        slots = self.state.add(len(body_ids))
        for body, slot in zip(body_ids, slots):
            self._body_of_slot[int(slot)] = body
            self._read_ids.append(body)
            self._read_slots.append(int(slot))
            if owner is not None:
                self.owner_of_body[body] = owner
        self._refresh_read_order()
        # Fill the slots now so state is valid before the first tick.
        self.read_state()
        return slots

    @property
    def tracked_slots(self) -> np.ndarray:
        """State slots of the bodies read every tick (live bodies), in read order."""
        return self._read_slots_arr

    def owner_of_slot(self, slot: int) -> Any:
        return self.owner_of_body.get(self._body_of_slot.get(slot, -1))

    def set_owner(self, body_id: int, owner: Any) -> None:
        self.owner_of_body[body_id] = owner

    def remove_body(self, body_id: int) -> None:
        """Take a body out of the Bullet world and stop reading it; its slot is not reused."""
        if body_id in self._read_ids:
            i = self._read_ids.index(body_id)
            del self._read_ids[i], self._read_slots[i]  # the slot keeps the body's last state
            self._refresh_read_order()
        pb.removeBody(body_id, **self._cid)
        self.static_bodies.discard(body_id)

    def _refresh_read_order(self) -> None:
        self._read_slots_arr = np.asarray(self._read_slots, dtype=np.intp)

    @property
    def num_bodies(self) -> int:
        return pb.getNumBodies(**self._cid)

    # -- forces ---------------------------------------------------------------------------
    def apply_force(self, body_id: int, force: Sequence[float], at: Sequence[float]) -> None:
        """World-frame force (N) at a world-frame point (m); cleared after the next step."""
        pb.applyExternalForce(body_id, -1, force, at, pb.WORLD_FRAME, **self._cid)

    # -- static scenery -------------------------------------------------------------------
    def add_ground(self, friction: float = 1.0) -> int:
        shape = pb.createCollisionShape(pb.GEOM_PLANE, **self._cid)
        self.ground_id = pb.createMultiBody(0.0, shape, **self._cid)
        pb.changeDynamics(self.ground_id, -1, lateralFriction=friction, **self._cid)
        self.static_bodies.add(self.ground_id)
        return self.ground_id

    def add_box(self, center: Sequence[float], size: Sequence[float], yaw_rad: float = 0.0) -> int:
        """A static box obstacle: centre (m), full size (m), yaw about z (rad)."""
        half = [float(s) / 2 for s in size]
        shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, **self._cid)
        orn = pb.getQuaternionFromEuler([0.0, 0.0, yaw_rad])
        body = pb.createMultiBody(0.0, shape, -1, list(map(float, center)), orn, **self._cid)
        self.static_bodies.add(body)
        return body

    def add_mesh(
        self, path: str | Path, position: Sequence[float] = (0, 0, 0), scale: float = 1.0
    ) -> int:
        """A static triangle mesh (terrain, building) from an OBJ file, loaded with trimesh."""
        vertices, indices = load_mesh(path, scale)
        shape = pb.createCollisionShape(
            pb.GEOM_MESH,
            vertices=vertices.tolist(),
            indices=indices.ravel().tolist(),
            flags=pb.GEOM_FORCE_CONCAVE_TRIMESH,
            **self._cid,
        )
        body = pb.createMultiBody(0.0, shape, -1, list(map(float, position)), **self._cid)
        self.static_bodies.add(body)
        return body

    def close(self) -> None:
        if not self._closed:
            pb.disconnect(**self._cid)
            self._closed = True

    def __del__(self) -> None:  # a World that is dropped must not leak its Bullet client
        try:
            self.close()
        except Exception:
            pass


def load_mesh(path: str | Path, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float vertices in m and (F, 3) int triangle indices of an OBJ file."""
    import trimesh  # deferred: only scenes with meshes pay for the import

    mesh = trimesh.load(Path(path), force="mesh", process=False)
    return np.asarray(mesh.vertices, dtype=float) * scale, np.asarray(mesh.faces, dtype=np.int64)
