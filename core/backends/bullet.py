"""The Bullet backend: one pybullet client in DIRECT mode, the project's default physics.

Every pybullet call of skyswarm goes through this module, so pybullet's camelCase, its client
id and its body ids stay here: callers speak state slots and scenery ids (core/backends).
Per tick: one force and one torque call per driven body, one pose and one velocity read per
body and one contact query for the world - the floor that pybullet allows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core._quiet import import_pybullet
from skyswarm.core.backends import GROUND, BodyShape, Capabilities, ContactReport, World
from skyswarm.core.backends.meshes import load_mesh
from skyswarm.core.backends.rays import MISS

if TYPE_CHECKING:
    from skyswarm.core.backends.terrain import Heightfield

pb = import_pybullet()
_drain = deque(maxlen=0).extend  # runs an iterator to its end, keeping nothing


class BulletWorld(World):
    """pybullet world with zero default damping (drag is an explicit force in skyswarm)."""

    name = "bullet"
    capabilities = Capabilities()  # the whole seam: meshes, any terrains, one thread

    def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
        super().__init__(tick_s, gravity)
        self.client = pb.connect(pb.DIRECT)
        self._cid = {"physicsClientId": self.client}
        pb.setGravity(0.0, 0.0, -gravity, **self._cid)
        pb.setTimeStep(self.tick_s, **self._cid)
        pb.setPhysicsEngineParameter(numSubSteps=0, deterministicOverlappingPairs=1, **self._cid)
        self._read_ids: list[int] = []  # bodies read each tick, in slot order
        self._read_slots: list[int] = []
        self._read_slots_arr = np.zeros(0, dtype=np.intp)
        self._body_of_slot = np.zeros(0, dtype=np.int64)  # Bullet id by slot
        self._id_of_body: dict[int, int] = {}  # Bullet id -> slot (>= 0) or scenery id (< 0)
        self._raw_contacts: tuple = ()
        self._contacts: ContactReport | None = ContactReport.none()
        self._closed = False

    # -- physics --------------------------------------------------------------------------
    def step_physics(self) -> None:
        pb.stepSimulation(**self._cid)
        self.tick += 1

    def read_state(self) -> None:
        """Every live body's pose and velocity (two calls per body), the world's contacts (one
        query); the report is built on first use.

        pybullet's tuples go into the arrays as the calls make them (one `np.fromiter` over
        the `map` of calls, no list): kept alive until first use, the thousands of small tuples
        would outlive Python's tuple free lists and make the cyclic garbage collector run
        several times a tick (0.6 ms a tick at 1000 bodies, more than the conversion itself);
        read and dropped one by one, they are recycled instead."""
        ids, slots, state, client = self._read_ids, self._read_slots_arr, self.state, self.client
        # positional args: no keyword parsing
        state.store_poses(slots, map(pb.getBasePositionAndOrientation, ids, repeat(client)))
        state.store_velocities(slots, map(pb.getBaseVelocity, ids, repeat(client)))
        self._raw_contacts = pb.getContactPoints(**self._cid)
        self._contacts = None

    @property
    def contacts(self) -> ContactReport:
        """Pairs deduplicated over contact points, in the order of their Bullet ids."""
        if self._contacts is None:
            pairs: dict[tuple[int, int], list] = {}
            for pt in self._raw_contacts or ():
                a, b, force = pt[1], pt[2], pt[9]
                key = (a, b) if a < b else (b, a)
                if key in pairs:
                    pairs[key][0] += force
                else:
                    pairs[key] = [force, pt[5]]
            ids = self._id_of_body
            rows = [
                (ids[a], ids[b], f, p)
                for (a, b), (f, p) in sorted(pairs.items())
                if a in ids and b in ids
            ]
            self._contacts = (
                ContactReport(
                    np.array([r[0] for r in rows], dtype=np.int64),
                    np.array([r[1] for r in rows], dtype=np.int64),
                    np.array([r[2] for r in rows], dtype=float),
                    np.array([r[3] for r in rows], dtype=float).reshape(-1, 3),
                )
                if rows
                else ContactReport.none()
            )
        return self._contacts

    # -- bodies ---------------------------------------------------------------------------
    def add_bodies(
        self,
        shape: BodyShape,
        mass: float,
        positions: Sequence[Sequence[float]],
        orientations: Sequence[Sequence[float]] | None = None,
        inertia: Sequence[float] | None = None,
    ) -> np.ndarray:
        if shape.mesh is not None:
            cs = pb.createCollisionShape(pb.GEOM_MESH, fileName=str(shape.mesh), **self._cid)
        elif shape.half_extents is not None:
            half = [float(h) for h in shape.half_extents]
            cs = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, **self._cid)
        else:
            raise ValueError("a body shape needs half_extents or a mesh")
        return self.track(self.create_bodies(mass, cs, positions, orientations, inertia))

    def create_bodies(
        self,
        mass: float,
        collision_shape: int,
        positions: Sequence[Sequence[float]],
        orientations: Sequence[Sequence[float]] | None = None,
        inertia: Sequence[float] | None = None,
        visual_shape: int = -1,
    ) -> list[int]:
        """Bullet-level: one body per position in one batched call; returns Bullet ids (use
        `track` to give them slots). Damping is zero: never pybullet's hidden 0.04."""
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

    def track(self, body_ids: Sequence[int]) -> np.ndarray:
        """Bullet-level: give bodies state slots, read every tick; returns the slots."""
        body_ids = list(body_ids)
        slots = self.state.add(len(body_ids))
        if len(slots):
            grown = np.full(int(slots[-1]) + 1, -1, dtype=np.int64)
            grown[: len(self._body_of_slot)] = self._body_of_slot
            self._body_of_slot = grown
        for body, slot in zip(body_ids, slots):
            self._body_of_slot[slot] = body
            self._id_of_body[body] = int(slot)
            self._read_ids.append(body)
            self._read_slots.append(int(slot))
        self._read_slots_arr = np.asarray(self._read_slots, dtype=np.intp)
        self.read_state()  # state is valid before the first tick
        return slots

    def body_of(self, slot: int) -> int:
        """Bullet-level: the Bullet id of a slot (for tests and benchmarks of this backend)."""
        return int(self._body_of_slot[slot])

    @property
    def tracked_slots(self) -> np.ndarray:
        return self._read_slots_arr

    def remove(self, slot: int) -> None:
        body = int(self._body_of_slot[slot])
        if body in self._read_ids:
            i = self._read_ids.index(body)
            del self._read_ids[i], self._read_slots[i]  # the slot keeps the body's last state
            self._read_slots_arr = np.asarray(self._read_slots, dtype=np.intp)
        pb.removeBody(body, **self._cid)
        self._id_of_body.pop(body, None)

    def reset_bodies(
        self,
        slots: np.ndarray,
        position: np.ndarray,
        orientation: np.ndarray,
        linear_velocity: np.ndarray,
        angular_velocity: np.ndarray,
    ) -> None:
        """World.reset_bodies through pybullet (one reset call pair per body), then the state
        arrays, so the next read agrees."""
        for k, slot in enumerate(np.asarray(slots).tolist()):
            body = int(self._body_of_slot[slot])
            pb.resetBasePositionAndOrientation(
                body, position[k].tolist(), orientation[k].tolist(), **self._cid
            )
            pb.resetBaseVelocity(
                body, linear_velocity[k].tolist(), angular_velocity[k].tolist(), **self._cid
            )
        super().reset_bodies(slots, position, orientation, linear_velocity, angular_velocity)

    def set_mass(self, slots: np.ndarray, mass: np.ndarray, inertia: np.ndarray) -> None:
        for k, slot in enumerate(np.asarray(slots).tolist()):
            body = int(self._body_of_slot[slot])
            pb.changeDynamics(
                body,
                -1,
                mass=float(mass[k]),
                localInertiaDiagonal=list(map(float, inertia[k])),
                **self._cid,
            )

    @property
    def num_bodies(self) -> int:
        return pb.getNumBodies(**self._cid)

    # -- forces ---------------------------------------------------------------------------
    def apply_wrenches(
        self, slots: np.ndarray, force_body: np.ndarray, torque_world: np.ndarray
    ) -> None:
        """One applyExternalForce (LINK_FRAME, at the centre of mass) and one
        applyExternalTorque (WORLD_FRAME: pybullet applies LINK_FRAME torques in the world
        frame anyway) per body."""
        bodies = self._body_of_slot[slots].tolist()
        client = self.client
        # zip over three columns: zip reuses its result tuple once pybullet has let go of it,
        # so no per-body list is built; a zero-length deque drains the calls in C.
        _drain(
            map(
                pb.applyExternalForce,
                bodies,
                repeat(-1),
                zip(*force_body.T.tolist()),
                repeat((0.0, 0.0, 0.0)),
                repeat(pb.LINK_FRAME),
                repeat(client),
            )
        )
        _drain(
            map(
                pb.applyExternalTorque,
                bodies,
                repeat(-1),
                zip(*torque_world.T.tolist()),
                repeat(pb.WORLD_FRAME),
                repeat(client),
            )
        )

    def apply_forces(self, slots: np.ndarray, force_world: np.ndarray) -> None:
        position = self.state.position
        for slot, f in zip(np.asarray(slots).tolist(), np.asarray(force_world).tolist()):
            body = int(self._body_of_slot[slot])
            pb.applyExternalForce(
                body, -1, tuple(f), tuple(position[slot]), pb.WORLD_FRAME, **self._cid
            )

    # -- static scenery -------------------------------------------------------------------
    def add_ground(self, friction: float = 1.0) -> int:
        shape = pb.createCollisionShape(pb.GEOM_PLANE, **self._cid)
        body = pb.createMultiBody(0.0, shape, **self._cid)
        pb.changeDynamics(body, -1, lateralFriction=friction, **self._cid)
        self._id_of_body[body] = GROUND
        self.has_ground = True
        return GROUND

    def add_box(self, center: Sequence[float], size: Sequence[float], yaw_rad: float = 0.0) -> int:
        half = [float(s) / 2 for s in size]
        shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, **self._cid)
        orn = pb.getQuaternionFromEuler([0.0, 0.0, yaw_rad])
        body = pb.createMultiBody(0.0, shape, -1, list(map(float, center)), orn, **self._cid)
        return self._scenery_body(body, "obstacle")

    def add_mesh(
        self, path: str | Path, position: Sequence[float] = (0, 0, 0), scale: float = 1.0
    ) -> int:
        vertices, indices = load_mesh(path, scale)
        return self._scenery_body(self._mesh_body(vertices, indices, position), "mesh")

    def add_heightfield(self, heightfield: Heightfield, friction: float = 1.0) -> int:
        """The height grid's triangles (Heightfield.triangles) as a static concave mesh, with
        the ground's friction."""
        body = self._mesh_body(*heightfield.triangles(), (0.0, 0.0, 0.0))
        pb.changeDynamics(body, -1, lateralFriction=friction, **self._cid)
        return self._scenery_body(body, "terrain")

    def _mesh_body(
        self, vertices: np.ndarray, indices: np.ndarray, position: Sequence[float]
    ) -> int:
        """A static concave triangle mesh; returns its Bullet body id."""
        shape = pb.createCollisionShape(
            pb.GEOM_MESH,
            vertices=vertices.tolist(),
            indices=indices.ravel().tolist(),
            flags=pb.GEOM_FORCE_CONCAVE_TRIMESH,
            **self._cid,
        )
        return pb.createMultiBody(0.0, shape, -1, list(map(float, position)), **self._cid)

    def _scenery_body(self, body: int, what: str) -> int:
        sid = self._new_scenery(what)
        self._id_of_body[body] = sid
        return sid

    def cast_rays(
        self, origins: np.ndarray, directions: np.ndarray, max_range_m: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """pybullet's rayTestBatch on one thread (deterministic), in batches of at most
        MAX_RAY_INTERSECTION_BATCH_SIZE - 1 (16,383) rays: given the full 16,384, pybullet
        5.13 returns one result fewer. A hit on a body that is no slot or scenery of this world
        (none is made outside it) counts as a miss."""
        origins = np.asarray(origins, dtype=float).reshape(-1, 3)
        ends = origins + float(max_range_m) * np.asarray(directions, dtype=float).reshape(-1, 3)
        step = pb.MAX_RAY_INTERSECTION_BATCH_SIZE - 1
        results: list[tuple] = []
        for k in range(0, len(origins), step):
            results += pb.rayTestBatch(
                origins[k : k + step].tolist(), ends[k : k + step].tolist(), **self._cid
            )
        if len(results) != len(origins):
            raise RuntimeError(f"rayTestBatch returned {len(results)} of {len(origins)} rays")
        body = np.array([r[0] for r in results], dtype=np.int64)
        fraction = np.array([r[2] for r in results], dtype=float)
        ids = self._id_of_body
        hit = np.array([ids.get(b, MISS) for b in body.tolist()], dtype=np.int64)
        distance = np.where(hit != MISS, fraction * float(max_range_m), np.inf)
        return distance.reshape(-1), hit.reshape(-1)

    def close(self) -> None:
        if not self._closed:
            pb.disconnect(**self._cid)
            self._closed = True

    def __del__(self) -> None:  # a World that is dropped must not leak its Bullet client
        try:
            self.close()
        except Exception:
            pass
