"""The fast backend: every body integrated over arrays by one compiled call per tick.

No per-body Python at all in the tick: wrenches are added into (capacity, 3) arrays, one numba
call integrates every live body with its ground and box contacts (core/backends/fast_kernel.py
states the integrator), a second finds body-body contacts through a spatial hash. The state
arrays are integrated in place, so `read_state` costs nothing. The scale path for
1,000-10,000 UAVs (bench/backends.py).

Scope, each stated rather than approximated silently:
- scenery: the ground plane and static boxes. Triangle meshes (terrain, mesh obstacles) are
  not supported: `add_mesh` raises, and a scenario that asks for one with
  `simulation.physics = "fast"` is a configuration error naming the key (core/config.py).
- dynamic bodies collide as boxes: a box shape as given, a mesh by its bounding box.
- body-body contacts are detected and reported, not resolved: touching bodies pass through
  each other (crashable agents die on contact by the collision monitor's rules anyway).
- shapes closer than CONTACT_MARGIN_M touch: Bullet reports a pair once the shapes meet, so
  both backends see a touch at the same tick (two UAVs flown head-on at 1 m/s each collide at
  the same tick on both, tests/core/test_backends_uav.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from skyswarm.core.backends import GROUND, BodyShape, ContactReport, World, spatial_hash
from skyswarm.core.backends import fast_kernel as fk
from skyswarm.core.state import rows_of_slots

CONTACT_MARGIN_M = 0.001  # m: shapes closer than this touch (Bullet reports contact at ~0)


@lru_cache(maxsize=16)
def mesh_box(path: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Half extents and centre offset (body frame, m) of an OBJ mesh's bounding box."""
    from skyswarm.core.backends.bullet import load_mesh  # trimesh only, no pybullet call

    v, _ = load_mesh(path)
    lo, hi = v.min(axis=0), v.max(axis=0)
    return tuple(((hi - lo) / 2).tolist()), tuple(((hi + lo) / 2).tolist())


class FastWorld(World):
    """Struct-of-arrays rigid bodies (see the module docstring)."""

    name = "fast"

    def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
        super().__init__(tick_s, gravity)
        self._live = np.zeros(0, dtype=np.int64)  # live slots, ascending
        self._alloc(self.state.position.shape[0])
        self._boxes = np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 2))  # centre, half, cos/sin
        self._report = ContactReport()
        self._pair_cap = 64
        self._rows_key: object = None
        self._rows_val: slice | np.ndarray = slice(0, 0)

    def _alloc(self, cap: int) -> None:
        old = getattr(self, "_inv_m", None)
        names = {"_inv_m": (), "_inertia": (3,), "_half": (3,), "_offset": (3,), "_radius": ()}
        names.update({"_fb": (3,), "_tw": (3,), "_fw": (3,)})
        for name, tail in names.items():
            new = (
                np.ones((cap, *tail)) if name in ("_inv_m", "_inertia") else np.zeros((cap, *tail))
            )
            if old is not None:
                prev = getattr(self, name)
                new[: len(prev)] = prev
            setattr(self, name, new)

    # -- bodies ---------------------------------------------------------------------------
    def add_bodies(
        self,
        shape: BodyShape,
        mass: float,
        positions: Sequence[Sequence[float]],
        orientations: Sequence[Sequence[float]] | None = None,
        inertia: Sequence[float] | None = None,
    ) -> np.ndarray:
        if shape.half_extents is not None:
            half, offset = tuple(map(float, shape.half_extents)), (0.0, 0.0, 0.0)
        elif shape.mesh is not None:
            half, offset = mesh_box(str(shape.mesh))
        else:
            raise ValueError("a body shape needs half_extents or a mesh")
        if not mass > 0:
            raise ValueError(
                f"body mass {mass!r} kg: the fast backend moves every body (static scenery is "
                "add_ground and add_box)"
            )
        positions = np.asarray(positions, dtype=float).reshape(-1, 3)
        slots = self.state.add(len(positions))
        self._alloc(self.state.position.shape[0])
        h = np.asarray(half)
        if inertia is None:  # solid box of the shape's extents, as Bullet computes it
            sq = (2 * h) ** 2
            inertia = mass / 12 * np.array([sq[1] + sq[2], sq[0] + sq[2], sq[0] + sq[1]])
        st = self.state
        st.position[slots] = positions
        st.orientation[slots] = (0.0, 0.0, 0.0, 1.0) if orientations is None else orientations
        st.linear_velocity[slots] = 0.0
        st.angular_velocity[slots] = 0.0
        self._inv_m[slots] = 1.0 / mass
        self._inertia[slots] = np.asarray(inertia, dtype=float)
        self._half[slots] = h
        self._offset[slots] = offset
        self._radius[slots] = float(np.linalg.norm(h) + np.linalg.norm(offset))
        self._live = np.concatenate([self._live, slots.astype(np.int64)])
        self.read_state()
        return slots

    @property
    def tracked_slots(self) -> np.ndarray:
        return self._live

    def remove(self, slot: int) -> None:
        self._live = self._live[self._live != slot]

    # -- forces ---------------------------------------------------------------------------
    def apply_wrenches(
        self, slots: np.ndarray, force_body: np.ndarray, torque_world: np.ndarray
    ) -> None:
        rows = self._rows(slots)
        self._fb[rows] += force_body
        self._tw[rows] += torque_world

    def apply_forces(self, slots: np.ndarray, force_world: np.ndarray) -> None:
        self._fw[self._rows(slots)] += force_world

    def _rows(self, slots) -> slice | np.ndarray:
        """Rows of `slots`: a slice when contiguous (cached per slots array, as a swarm passes
        the same array every tick)."""
        if slots is not self._rows_key:
            self._rows_key, self._rows_val = slots, rows_of_slots(np.asarray(slots))
        return self._rows_val

    # -- scenery --------------------------------------------------------------------------
    def add_ground(self) -> int:
        self.has_ground = True
        return GROUND

    def add_box(self, center: Sequence[float], size: Sequence[float], yaw_rad: float = 0.0) -> int:
        c, h, cs = self._boxes
        self._boxes = (
            np.vstack([c, np.asarray(center, dtype=float)]),
            np.vstack([h, np.asarray(size, dtype=float) / 2]),
            np.vstack([cs, [np.cos(yaw_rad), np.sin(yaw_rad)]]),
        )
        return self._new_scenery("obstacle")

    def add_mesh(
        self, path: str | Path, position: Sequence[float] = (0, 0, 0), scale: float = 1.0
    ) -> int:
        raise ValueError(
            f"the fast physics backend has no triangle-mesh scenery ({path}): use "
            "simulation.physics = 'bullet', or boxes"
        )

    # -- the tick -------------------------------------------------------------------------
    def step_physics(self) -> None:
        st, live = self.state, self._live
        c_slot, c_other, c_force, c_pos = self._contact_buffers(
            len(live) * (1 + len(self._boxes[0]))
        )
        nc = fk.step_bodies(
            live, st.position, st.orientation, st.linear_velocity, st.angular_velocity,
            self._inv_m, self._inertia, self._half, self._offset, self._radius,
            self._fb, self._tw, self._fw, self.gravity, self.tick_s, self.has_ground,
            CONTACT_MARGIN_M, *self._boxes, fk._SIGNS, c_slot, c_other, c_force, c_pos,
        )  # fmt: skip
        pairs = self._body_pairs()
        self.tick += 1
        a = np.concatenate([pairs[0], c_slot[:nc]])
        b = np.concatenate([pairs[1], c_other[:nc]])
        f = np.concatenate([np.zeros(len(pairs[0])), c_force[:nc]])
        p = np.concatenate([pairs[2], c_pos[:nc]])
        if len(a) > 1:  # one deterministic order: by the pair's two ids
            order = np.lexsort((b, a))
            a, b, f, p = a[order], b[order], f[order], p[order]
        self._report = ContactReport(a, b, f, p)

    def _contact_buffers(self, cap: int) -> tuple[np.ndarray, ...]:
        """Arrays for the body-scenery contacts: at most one per body and scenery item."""
        bufs = getattr(self, "_bufs", None)
        if bufs is None or len(bufs[0]) < cap:
            cap = max(cap, 1)
            self._bufs = bufs = (
                np.empty(cap, dtype=np.int64),
                np.empty(cap, dtype=np.int64),
                np.empty(cap),
                np.empty((cap, 3)),
            )
        return bufs

    def _body_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        st = self.state
        while True:
            cap = self._pair_cap
            out_a, out_b = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
            out_p = np.empty((cap, 3))
            k = spatial_hash.body_pairs(
                self._live, st.position, st.orientation, self._half, self._offset,
                self._radius, CONTACT_MARGIN_M, out_a, out_b, out_p,
            )  # fmt: skip
            if k <= cap:
                return out_a[:k], out_b[:k], out_p[:k]
            self._pair_cap = 2 * k

    def read_state(self) -> None:
        """Nothing to copy: the kernel integrates the state arrays in place."""

    @property
    def contacts(self) -> ContactReport:
        return self._report
