"""The fast backend: every body integrated over arrays by one compiled call per tick.

No per-body Python at all in the tick: wrenches are added into (capacity, 3) arrays (a swarm's
held for the kernel to add, `hold_wrenches`), one numba call integrates every live body with its
ground, terrain and box contacts (core/backends/fast_kernel.py states the integrator and the
contacts) and says whether any touched and whether a body left the Verlet list's reach, then
the body-body contacts come from that list, kept by a spatial hash (spatial_hash.py). The
state arrays are integrated in place, so `read_state` costs nothing. The scale path for
1,000-10,000 UAVs (bench/backends.py).

Threads: from PARALLEL_MIN bodies on (core.backends.threaded) the integration and the hash
run on numba's threads (`numba.set_num_threads`, NUMBA_NUM_THREADS), split into fixed chunks of
bodies that each touch only their own rows, so every result is bit-identical to one thread's.

Scope, each stated rather than approximated silently:
- scenery: the ground plane, static boxes and one terrain: a height grid, or a terrain mesh
  sampled to a height grid of `world.terrain_cell_m` (core/backends/terrain.py). Mesh
  obstacles are not supported: `add_mesh` raises, and a scenario that asks for one with
  `simulation.physics = "fast"` is a configuration error naming the key (core/checks.py).
- dynamic bodies collide as boxes: a box shape as given, a mesh by its bounding box; against
  the terrain at the box's corners (a crest narrower than the box can poke into its face).
- body-body contacts are resolved simply: a central inelastic impulse along the boxes' axis
  of least overlap and a push apart by the overlap (momentum conserved; no friction, no
  torque between bodies), so bodies stack and do not pass through each other; crashable
  agents die on contact by the collision monitor's rules anyway.
- shapes closer than CONTACT_MARGIN_M touch: Bullet reports a pair once the shapes meet, so
  both backends see a touch at the same tick (two UAVs flown head-on at 1 m/s each collide at
  the same tick on both, tests/core/test_backends_uav.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from skyswarm.core.backends import (
    GROUND,
    BodyShape,
    Capabilities,
    ContactReport,
    World,
    ray_grid,
    rays,
    spatial_hash,
    threaded,
)
from skyswarm.core.backends import fast_kernel as fk
from skyswarm.core.backends.terrain import Heightfield, sample_mesh
from skyswarm.core.state import rows_of_slots

CONTACT_MARGIN_M = 0.001  # m: shapes closer than this touch (Bullet reports contact at ~0)
SKIN_M = 0.5  # m: body pairs within their radii + margin + this are the Verlet candidates
# A list that came out empty (no two bodies within reach: an RL vector env's slots 50 m apart,
# a sparse swarm) is rebuilt next time with twice the skin, up to SKIN_MAX_M, so bodies may
# roam (or be teleported by an autoreset) further before the next rebuild; a wide skin that
# finds candidates is dropped for SKIN_M at once. The contacts never depend on the skin.
SKIN_MAX_M = 16.0
# Cells of the ray casts' grid per box and live body (core/backends/ray_grid.py); results do
# not depend on it. On bench/perception.py's 1,000-UAV scan 1, 2, 4 and 8 all cost ~17 ms (one
# cell, the brute force: 300 ms).
RAY_CELLS_PER_OBJECT = 4.0
MESH_FRICTION = 0.25  # Coulomb coefficient on a terrain mesh: Bullet's 0.5 x 0.5 default
# The body-scenery contacts of a tick without any: (a, b, force, position), never written
_NO_CONTACTS = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3)))
_NO_REF = np.zeros((0, 3))  # no Verlet list to check (or no held wrench): an empty (0, 3)


def _rows_of(a: object, n: int) -> bool:
    """Whether `a` is an (n, 3) C-ordered float64 array (what the kernel reads as held)."""
    return (
        isinstance(a, np.ndarray)
        and a.dtype == np.float64
        and a.shape == (n, 3)
        and a.flags.c_contiguous
    )


@lru_cache(maxsize=16)
def mesh_box(path: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Half extents and centre offset (body frame, m) of an OBJ mesh's bounding box."""
    from skyswarm.core.backends.meshes import load_mesh

    v, _ = load_mesh(path)
    lo, hi = v.min(axis=0), v.max(axis=0)
    return tuple(((hi - lo) / 2).tolist()), tuple(((hi + lo) / 2).tolist())


class FastWorld(World):
    """Struct-of-arrays rigid bodies (see the module docstring)."""

    name = "fast"
    # No mesh obstacles, one terrain (see the module docstring); numba threads at scale
    capabilities = Capabilities(mesh_obstacles=False, max_terrains=1, threads=True)

    def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
        super().__init__(tick_s, gravity)
        self._live = np.zeros(0, dtype=np.int64)  # live slots, ascending
        self._alloc(self.state.position.shape[0])
        # boxes: centre, half size, cos/sin of the yaw, scenery id
        self._boxes = np.zeros((0, 3)), np.zeros((0, 3)), np.zeros((0, 2)), np.zeros(0, np.int64)
        self._hf = np.zeros((0, 0))  # terrain heights (ny, nx), none yet
        self._terrain = (0.0, 0.0, 1.0, 0.0, 0, 0.0)  # x0, y0, cell, top, id, friction
        self._constants_key: object = None  # what `_packed` was packed for
        self._packed = np.zeros(1, fk.CONSTANTS)
        self._report = ContactReport.none()
        self._pair_cap = 64
        # The Verlet list of body-body candidates: pairs, the live slots and positions it is for
        self._cand = np.zeros(0, np.int64), np.zeros(0, np.int64)
        self._cand_key: np.ndarray | None = None
        self._cand_ref = np.zeros((0, 3))
        self._cand_skin = SKIN_M  # m, the skin the list was built with
        self._next_skin = SKIN_M  # m, the skin of the next rebuild
        self._rows_key: object = None
        self._rows_val: slice | np.ndarray = slice(0, 0)
        # A wrench `hold_wrenches` left for the step's kernel to add: first row, force, torque
        self._held: tuple[int, np.ndarray, np.ndarray] | None = None
        self._held_ok: tuple = (None, None, None)  # the slots and arrays last held, checked
        self._held_ok_row = 0

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

    def set_mass(self, slots: np.ndarray, mass: np.ndarray, inertia: np.ndarray) -> None:
        mass = np.asarray(mass, dtype=float)
        if not (mass > 0).all():
            raise ValueError(f"body masses {mass!r} kg: expected every one > 0")
        self._inv_m[slots] = 1.0 / mass
        self._inertia[slots] = inertia

    def remove(self, slot: int) -> None:
        self._live = self._live[self._live != slot]

    # -- forces ---------------------------------------------------------------------------
    def apply_wrenches(
        self, slots: np.ndarray, force_body: np.ndarray, torque_world: np.ndarray
    ) -> None:
        self._release_held()  # a held wrench first: the adds in the order they came
        rows = self._rows(slots)
        self._fb[rows] += force_body
        self._tw[rows] += torque_world

    def hold_wrenches(
        self, slots: np.ndarray, force_body: np.ndarray, torque_world: np.ndarray
    ) -> None:
        """`apply_wrenches`, added by the step's kernel as it integrates each body (one
        numpy pass less per tick: ~25 us at 4,096 UAVs) when `slots` are consecutive rows and
        the arrays (n, 3) float64 rows in order; the same sums, bit for bit. The caller leaves
        the arrays unchanged until the step (a swarm's force and torque: written by its
        flight kernel, read by this tick's step)."""
        ok = self._held_ok  # the same objects as last tick (a swarm's): checked then
        if self._held is None and ok[0] is slots and ok[1] is force_body and ok[2] is torque_world:
            self._held = self._held_ok_row, force_body, torque_world
            return
        rows = self._rows(slots)
        if (
            self._held is None
            and isinstance(rows, slice)
            and rows.step in (None, 1)
            and _rows_of(force_body, rows.stop - rows.start)
            and _rows_of(torque_world, rows.stop - rows.start)
        ):
            self._held = rows.start, force_body, torque_world
            self._held_ok, self._held_ok_row = (slots, force_body, torque_world), rows.start
        else:
            self.apply_wrenches(slots, force_body, torque_world)

    def _release_held(self) -> None:
        """Add a held wrench into the force arrays now (numpy's adds, as the kernel's)."""
        if self._held is not None:
            x0, xf, xt = self._held
            self._held = None
            rows = slice(x0, x0 + len(xf))
            self._fb[rows] += xf
            self._tw[rows] += xt

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
        c, h, cs, ids = self._boxes
        sid = self._new_scenery("obstacle")
        self._boxes = (
            np.vstack([c, np.asarray(center, dtype=float)]),
            np.vstack([h, np.asarray(size, dtype=float) / 2]),
            np.vstack([cs, [np.cos(yaw_rad), np.sin(yaw_rad)]]),
            np.append(ids, sid).astype(np.int64),
        )
        return sid

    def add_mesh(
        self, path: str | Path, position: Sequence[float] = (0, 0, 0), scale: float = 1.0
    ) -> int:
        raise ValueError(
            f"the fast physics backend has no triangle-mesh obstacles ({path}): use "
            "simulation.physics = 'bullet', or boxes (a terrain mesh: add_terrain)"
        )

    def add_heightfield(self, heightfield: Heightfield) -> int:
        """Friction as on the ground (Bullet's terrain body gets the ground's 1.0 x 0.5)."""
        return self._add_heightfield(heightfield, "terrain", fk.FRICTION)

    def add_terrain(self, path: str | Path, cell_m: float) -> int:
        """The OBJ terrain's top surface sampled on a grid of `cell_m` (terrain.sample_mesh);
        named 'mesh k' and with the friction of a Bullet mesh (0.5 x 0.5), as on Bullet."""
        from skyswarm.core.backends.meshes import load_mesh

        return self._add_heightfield(sample_mesh(*load_mesh(path), cell_m), "mesh", MESH_FRICTION)

    def _add_heightfield(self, hf: Heightfield, what: str, friction: float) -> int:
        if self._hf.shape[0]:
            raise ValueError("the fast physics backend has one terrain per world")
        sid = self._new_scenery(what)
        self._hf = np.ascontiguousarray(hf.heights, dtype=float)
        self._terrain = (*map(float, hf.origin), float(hf.cell_m), float(hf.top), sid, friction)
        return sid

    # -- the tick -------------------------------------------------------------------------
    def step_physics(self) -> None:
        st, live = self.state, self._live
        per_body = fk.BOX_ROW + len(self._boxes[0])
        c_count, c_other, c_force, c_pos = self._contact_buffers(len(live), per_body)
        step = fk.step_bodies_parallel if threaded(len(live)) else fk.step_bodies
        listed = self._cand_key is live  # the Verlet list is for these bodies: check it
        x0, xf, xt = self._held if self._held is not None else (0, _NO_REF, _NO_REF)
        self._held = None
        touching, far = step(
            live, st.position, st.orientation, st.linear_velocity, st.angular_velocity,
            self._inv_m, self._inertia, self._half, self._offset, self._radius,
            self._fb, self._tw, self._fw, self._constants(), *self._boxes, self._hf,
            c_count, c_other, c_force, c_pos, self._cand_ref if listed else _NO_REF,
            0.45 * self._cand_skin, xf, xt, x0,
        )  # fmt: skip
        if touching:  # the body-scenery contacts, gathered
            sa, sb, sf, sp = fk.compact_contacts(live, per_body, c_count, c_other, c_force, c_pos)
        else:  # none (an RL swarm's usual tick): no call, no arrays
            sa, sb, sf, sp = _NO_CONTACTS
        pa, pb, pp = self._body_pairs(rebuild=far > 0 or not listed)
        pf = np.zeros(len(pa)) if len(pa) else _NO_CONTACTS[2]
        if len(pa):  # resolved in the order of their slots
            order = np.lexsort((pb, pa))
            pa, pb, pp = pa[order], pb[order], pp[order]
            spatial_hash.resolve(
                pa, pb, st.position, st.orientation, st.linear_velocity, self._inv_m,
                self._half, self._offset, self._radius, CONTACT_MARGIN_M, self.tick_s, pf,
            )  # fmt: skip
        self.tick += 1
        if not len(pa) and not len(sa):  # nothing touches (an RL swarm's usual tick)
            self._report = ContactReport.none()
            return
        a = np.concatenate([pa, sa])
        b = np.concatenate([pb, sb])
        f = np.concatenate([pf, sf])
        p = np.concatenate([pp, sp])
        if len(a) > 1:  # one deterministic order: by the pair's two ids
            order = np.lexsort((b, a))
            a, b, f, p = a[order], b[order], f[order], p[order]
        self._report = ContactReport(a, b, f, p)

    # -- several ticks in one call (uav/kernel.py fly_ticks) --------------------------------
    def window(self) -> tuple | None:
        """What a caller that integrates the live bodies for several ticks in one compiled call
        (uav/kernel.py `fly_ticks`, which computes their wrenches itself each tick) passes to
        `fast_kernel.step_range` after the bodies' rows: the state arrays, the bodies' constants,
        the force arrays, the world's CONSTANTS, boxes, terrain, the contact buffers, and the
        Verlet list's reference positions and its limit m. None when the ticks cannot be
        integrated so: a wrench already held, or bodies within reach of each other.

        Bodies within reach: the Verlet list is first made valid for the present positions
        (rebuilt as `step_physics` would, when the live set changed or a body has moved more
        than a quarter of its skin since: a tighter test than the per tick 0.45, so a body
        seldom ends the window far) and must hold no candidate pair. Then, while no body moves
        more than the limit from its reference row (the caller checks every tick), no two
        bodies can touch, and each body's contacts with the scenery are its own: the bodies
        move as under `step_physics` tick by tick, bit for bit. The list's reference and skin
        may then differ from what ticks one by one leave; the contacts never depend on them."""
        if self._held is not None:
            return None
        st, live = self.state, self._live
        if self._cand_key is not live or spatial_hash.moved(
            live, st.position, self._cand_ref, 0.25 * self._cand_skin
        ):
            self._rebuild_candidates()
        if len(self._cand[0]):
            return None
        per_body = fk.BOX_ROW + len(self._boxes[0])
        return (
            st.position, st.orientation, st.linear_velocity, st.angular_velocity, self._inv_m,
            self._inertia, self._half, self._offset, self._radius, self._fb, self._tw, self._fw,
            self._constants(), *self._boxes, self._hf, *self._contact_buffers(len(live), per_body),
            self._cand_ref, 0.45 * self._cand_skin,
        )  # fmt: skip

    def advance(self, ticks: int, touching: int) -> None:
        """After `ticks` ticks integrated through `window`: the clock, and the contact report of
        the last tick (its `touching` body-scenery contacts, as `step_physics` reports them)."""
        self.tick += ticks
        if touching:  # no body pairs: the scenery's, in step_physics' order
            live = self._live
            per_body = fk.BOX_ROW + len(self._boxes[0])
            bufs = self._contact_buffers(len(live), per_body)
            a, b, f, p = fk.compact_contacts(live, per_body, *bufs)
            if len(a) > 1:
                order = np.lexsort((b, a))
                a, b, f, p = a[order], b[order], f[order], p[order]
            self._report = ContactReport(a, b, f, p)
        else:
            self._report = ContactReport.none()

    def _constants(self) -> np.ndarray:
        """The kernel's (1,) fast_kernel.CONSTANTS record, packed again only when the scenery
        it describes changed."""
        key = (self.has_ground, self._terrain)
        if self._constants_key != key:
            self._constants_key = key
            self._packed = fk.pack_constants(
                self.gravity, self.tick_s, self.has_ground, CONTACT_MARGIN_M, self._terrain
            )
        return self._packed

    def _contact_buffers(self, n: int, per_body: int) -> tuple[np.ndarray, ...]:
        """Arrays for the body-scenery contacts: `per_body` rows per body (ground, terrain,
        each box), and a count per body."""
        cap = max(n * per_body, 1)
        bufs = getattr(self, "_bufs", None)
        if bufs is None or len(bufs[1]) < cap or len(bufs[0]) < n:
            self._bufs = bufs = (
                np.zeros(max(n, 1), dtype=np.int64),
                np.empty(cap, dtype=np.int64),
                np.empty(cap),
                np.empty((cap, 3)),
            )
        return bufs

    def _body_pairs(self, rebuild: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This tick's body-body contacts: the candidates of the Verlet list (`rebuild`: a
        body has moved more than 0.45 of its skin since, or the live set changed; `step_bodies`
        counts the bodies that moved so, spatial_hash.moved's test), then the oriented-box test
        of each candidate (core/backends/spatial_hash.py)."""
        st = self.state
        if rebuild:
            self._rebuild_candidates()
        ca, cb = self._cand
        if not len(ca):  # no candidates: nothing to test
            return ca, cb, _NO_CONTACTS[3]
        out_a, out_b, out_p = np.empty_like(ca), np.empty_like(cb), np.empty((len(ca), 3))
        k = spatial_hash.touching(
            ca, cb, st.position, st.orientation, self._half, self._offset, self._radius,
            CONTACT_MARGIN_M, out_a, out_b, out_p,
        )  # fmt: skip
        return out_a[:k], out_b[:k], out_p[:k]

    def _rebuild_candidates(self) -> None:
        """The Verlet list anew, with the skin that SKIN_MAX_M's comment describes."""
        skin = self._next_skin
        ca, cb = self._candidates(skin)
        if len(ca) and skin > SKIN_M:  # a wide skin found neighbours: a dense swarm's list
            skin = SKIN_M
            ca, cb = self._candidates(skin)
        self._cand = ca, cb
        self._cand_key = self._live
        self._cand_ref = self.state.position[self._live]
        self._cand_skin = skin
        self._next_skin = SKIN_M if len(ca) else min(2.0 * skin, SKIN_MAX_M)

    def _candidates(self, skin: float) -> tuple[np.ndarray, np.ndarray]:
        """The pairs of live bodies whose bounding spheres are within margin + `skin` m."""
        st, live = self.state, self._live
        find = spatial_hash.body_pairs_parallel if threaded(len(live)) else spatial_hash.body_pairs
        while True:
            cap = self._pair_cap
            out_a, out_b = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64)
            k = find(
                live, st.position, st.orientation, self._half, self._offset, self._radius,
                CONTACT_MARGIN_M, skin, out_a, out_b, np.empty((cap, 3)),
            )  # fmt: skip
            if k <= cap:
                return out_a[:k].copy(), out_b[:k].copy()
            self._pair_cap = 2 * k

    def read_state(self) -> None:
        """Nothing to copy: the kernel integrates the state arrays in place."""

    @property
    def contacts(self) -> ContactReport:
        return self._report

    def cast_rays(
        self, origins: np.ndarray, directions: np.ndarray, max_range_m: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """One compiled call (core/backends/rays.py): ground, boxes, the terrain grid, and
        every live body as its collision box, the boxes and bodies through a uniform grid
        (core/backends/ray_grid.py); threaded from PARALLEL_MIN rays."""
        origins = np.ascontiguousarray(origins, dtype=float).reshape(-1, 3)
        directions = np.ascontiguousarray(directions, dtype=float).reshape(-1, 3)
        n = len(origins)
        out_d, out_hit = np.empty(n), np.empty(n, dtype=np.int64)
        scene = self.ray_scene()
        grid = ray_grid.build(*scene[1:4], *scene[5:7], scene[10], RAY_CELLS_PER_OBJECT)
        cast = rays.cast_rays_parallel if threaded(n) else rays.cast_rays
        cast(origins, directions, float(max_range_m), scene, grid, out_d, out_hit)
        return out_d, out_hit

    def ray_scene(self) -> tuple:
        """What rays.cast_rays reads of this world, as one tuple (its module docstring)."""
        st = self.state
        terrain = np.array(self._terrain[:4], dtype=float)
        return (
            self.has_ground, *self._boxes, self._live, st.position, st.orientation, self._half,
            self._offset, self._radius, self._hf, terrain, int(self._terrain[4]),
        )  # fmt: skip
