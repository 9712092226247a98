"""The World seam: the one interface through which the Simulator and everything above it talk
to physics, and the registry of the backends that implement it.

Two backends ship: `bullet` (core/backends/bullet.py, pybullet, the default) and `fast`
(core/backends/fast.py, every body integrated over arrays by a compiled kernel, the scale path
for 1,000-10,000 UAVs). Nothing outside a backend module sees a backend's own body ids: bodies
are named by their state slot (a row of `World.state`), scenery by a negative id (`GROUND` = -1,
the k-th obstacle or terrain `-2 - k`).

A backend is one class: a `World` subclass that declares its `name` and its `capabilities`
(what scenery it models; scenario validation reads them, core/checks.py). The registry knows
backends by name without importing them: the shipped ones as `module:Class` strings
(`SHIPPED_BACKENDS`), third-party ones as entry points of the group `skyswarm.backends`, and
classes registered at run time by `register_backend`. A module is imported only when its
backend is asked for, so a `physics = "fast"` run never imports pybullet.

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
    backend_class("fast").capabilities.mesh_obstacles   # False: no mesh obstacles
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import math
import os
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numba
import numpy as np
from numba.np.ufunc import parallel as _layer  # numba's threading layer (`_thread_count`)

from skyswarm.core.schema import ticks_exact
from skyswarm.core.state import BodyState

if TYPE_CHECKING:
    from skyswarm.core.backends.terrain import Heightfield

GROUND = -1  # scenery id of the ground plane in contact reports


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

    @staticmethod
    def none() -> ContactReport:
        """The report of a tick without contacts: one shared instance, its arrays read-only (a
        world with nothing touching asks for it every tick)."""
        return _NO_CONTACTS


def _frozen_empty() -> ContactReport:
    report = ContactReport()
    for array in (report.a, report.b, report.normal_force, report.position):
        array.flags.writeable = False
    return report


_NO_CONTACTS = _frozen_empty()


@dataclass(frozen=True)
class Capabilities:
    """What a backend models, declared on its class (`World.capabilities`).

    Scenario validation reads these before anything is built (core/checks.py): a scenario that
    asks a backend for scenery it lacks is a configuration error naming the key, never a silent
    approximation. The default is the whole seam; a backend states what it leaves out.

        Capabilities(mesh_obstacles=False, max_terrains=1, threads=True)   # the fast backend
    """

    boxes: bool = True  # static box obstacles (add_box)
    mesh_obstacles: bool = True  # static triangle-mesh obstacles (add_mesh)
    terrain_meshes: bool = True  # OBJ terrain (add_terrain): as a mesh or sampled to a grid
    heightfields: bool = True  # height-grid terrain (add_heightfield)
    max_terrains: int | None = None  # terrains (mesh or grid) in one world; None: any number
    body_contacts: bool = True  # dynamic bodies collide with each other (and are reported)
    threads: bool = False  # runs on numba's threads from PARALLEL_MIN bodies (same results)
    rays: bool = True  # batched ray casts against all it models (World.cast_rays)

    def scenery(self) -> str:
        """The scenery kinds modelled, for messages: 'ground, boxes, terrain'."""
        kinds = ["ground", "boxes" if self.boxes else ""]
        kinds += ["terrain" if self.terrain_meshes or self.heightfields else ""]
        kinds += ["mesh obstacles" if self.mesh_obstacles else ""]
        return ", ".join(k for k in kinds if k)


class World(ABC):
    """Physics behind the seam: bodies by slot, a fixed tick, state arrays, one contact report.

    Time is the integer `tick`; `time_s = tick * tick_s` is derived, never accumulated.
    A tick is: wrenches/forces applied (cleared after the step), `step_physics()`,
    `read_state()` (state arrays and the contact report of this tick).

    A backend is a subclass: it declares `name` (what `[simulation] physics` says) and
    `capabilities`, implements the abstract methods below and registers by name, with the
    `register_backend` decorator (the class is known once its module is imported) or, from an
    installed package, with an entry point that the registry loads only when the name is asked
    for:

        # pyproject.toml of the package `lowg`
        [project.entry-points."skyswarm.backends"]
        lowg = "lowg.world:LowGravityWorld"

    Worked example: the fast backend under the Moon's gravity whatever the scenario says, with
    no threads. Every result of FastWorld's integrator holds, only g changes:

        from dataclasses import replace
        from skyswarm.core.backends import register_backend
        from skyswarm.core.backends.fast import FastWorld

        @register_backend
        class LowGravityWorld(FastWorld):
            name = "lowg"
            capabilities = replace(FastWorld.capabilities, threads=False)

            def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
                super().__init__(tick_s, gravity=1.62)  # m/s^2

        # then: skyswarm run hover --set simulation.physics=lowg
        # (with the module imported first, or installed with the entry point above)

    A backend written from scratch implements `add_bodies`, `add_ground`, `add_box`,
    `add_mesh`, `add_heightfield`, `apply_wrenches`, `apply_forces`, `step_physics`,
    `read_state`, `contacts`, `tracked_slots`, `remove` and `cast_rays` (for lidars; without
    it, declare `rays=False`); whatever scenery it cannot model it leaves out of
    `capabilities` (its method then raises ValueError), and a scenario that asks for it is
    refused with the key named. tests/core/test_backends_registry.py registers a
    test-only backend this way and flies a scenario with it.
    """

    name: ClassVar[str] = "world"  # the registry name, `[simulation] physics`
    capabilities: ClassVar[Capabilities] = Capabilities()

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

    def hold_wrenches(
        self, slots: np.ndarray, force_body: np.ndarray, torque_world: np.ndarray
    ) -> None:
        """`apply_wrenches` from arrays the caller leaves unchanged until the step, so a
        backend may read them then instead of adding them now (the fast one does, in its
        kernel); by default, `apply_wrenches`. A swarm applies its wrench this way."""
        self.apply_wrenches(slots, force_body, torque_world)

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

    def reset_bodies(
        self,
        slots: np.ndarray,
        position: np.ndarray,
        orientation: np.ndarray,
        linear_velocity: np.ndarray,
        angular_velocity: np.ndarray,
    ) -> None:
        """Teleport live bodies `slots` (n,): (n, 3) positions m, (n, 4) quaternions (x, y, z,
        w), (n, 3) world-frame velocities m/s and rad/s; forces already applied this tick stay.
        What an RL environment's per-episode reset does instead of rebuilding the world. By
        default the state arrays are written (a backend that integrates them in place); a
        backend with its own body store overrides it.

            world.reset_bodies(slots, pos, np.tile([0, 0, 0, 1.0], (n, 1)), zeros, zeros)
        """
        st = self.state
        st.position[slots] = position
        st.orientation[slots] = orientation
        st.linear_velocity[slots] = linear_velocity
        st.angular_velocity[slots] = angular_velocity

    @abstractmethod
    def set_mass(self, slots: np.ndarray, mass: np.ndarray, inertia: np.ndarray) -> None:
        """Give live bodies `slots` (n,) new (n,) masses kg and (n, 3) principal inertias
        kg m^2 from the next step on (an RL environment's per-episode domain randomisation).

            world.set_mass(slots, np.full(n, 1.1), np.tile([0.01, 0.01, 0.02], (n, 1)))
        """

    def cast_rays(
        self, origins: np.ndarray, directions: np.ndarray, max_range_m: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every ray of a sensor tick in one call: (R, 3) origins m and (R, 3) unit directions,
        world frame. Returns (R,) distances m to the nearest hit within `max_range_m` (inf: none)
        and (R,) what was hit: a body slot (>= 0), a scenery id (< 0) or `rays.MISS`.

        A ray that starts inside a solid (a box, a body) does not see that solid: a UAV's rays
        start at its own centre. Declared by `capabilities.rays`; without it, NotImplementedError.

            d, hit = world.cast_rays(np.array([[0, 0, 5.0]]), np.array([[0, 0, -1.0]]), 20.0)
            # d == [5.0], hit == [GROUND] over an empty ground plane
        """
        raise NotImplementedError(f"physics backend {self.name!r} casts no rays")

    def close(self) -> None:
        """Release the backend's resources (none by default)."""
        self.has_ground = self.has_ground  # nothing to release


# numba's OpenMP threads wait for the next parallel region spinning for a short while (about
# 1 ms on this 2-core AMD EPYC VM), then asleep. A tick runs its threaded passes (the flight
# kernel, the body step) a fraction of a millisecond apart; a thread that fell asleep in
# between costs a wake-up per pass, which made two threads only 1.15x one at 1,000 UAVs (1.53x
# spinning; docs/performance.md, Threads). libgomp's own default (OMP_WAIT_POLICY unset) spins
# ~7.5 ms; PASSIVE, this module's default until 2026-11-30, never. On a machine shared with
# other CPU-bound jobs a spinning thread takes the core the work needs: there
# `[simulation] threads = "auto"` measures and keeps one thread (core/thread_tuner.py), and a
# batch worker runs on its share of the cores. Read once, when numba starts its threads; a
# user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins.
SPIN_COUNT = "30000"
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)

# Below this many bodies (or agents) a compiled pass runs on one thread: starting numba's
# threads costs more than the work. Above it the parallel variant runs, bit-identical to the
# serial one (each body's arithmetic is its own), so the choice never changes a result. Where
# two threads pay, on a quiet 2-core machine (`python bench/threads.py --sizes 256 512 1000
# 1500 2048`, every pass threaded, 1 / 2 threads): 0.75 at 256, 0.93 at 512, 1.21 at 1,000
# (1.15-1.32 per round), 1.41 at 2,048. 1,000 is the first size that paid in every round; with
# another CPU-bound job no size pays, which `[simulation] threads = "auto"` measures per run.
# (It was 2,048 while one thread was the default, the vector env's threshold still,
# envs/vector.py.)
PARALLEL_MIN = 1000


def set_threads(count: int) -> int:
    """Run the threaded compiled passes on `count` of numba's threads (0: all it started,
    NUMBA_NUM_THREADS; more than that: all); returns the number set. Results never depend on
    it (the threaded variants are bit-identical); only speed does (bench/threads.py)."""
    top = numba.config.NUMBA_NUM_THREADS
    count = top if count == 0 else min(count, top)
    numba.set_num_threads(count)
    return count


_budget: int | None = None  # set_thread_budget's


def set_thread_budget(count: int | None) -> None:
    """The threads this process may use at most (a batch worker's share of the cores,
    app/batch_worker.py); None: every thread numba started. `[simulation] threads = "auto"`
    chooses between one and this (core/thread_tuner.py)."""
    global _budget
    _budget = None if count is None else max(1, int(count))


def thread_budget() -> int:
    """NUMBA_NUM_THREADS, or less after `set_thread_budget`."""
    top = numba.config.NUMBA_NUM_THREADS
    return top if _budget is None else min(_budget, top)


def threaded(n: int, at_least: int | None = None) -> bool:
    """Whether a compiled pass over `n` bodies should use numba's threads (more than one
    configured, see `numba.set_num_threads` and NUMBA_NUM_THREADS, and n >= PARALLEL_MIN, or
    >= `at_least` for a pass whose own crossover is higher)."""
    return n >= max(PARALLEL_MIN, at_least or 0) and _thread_count() > 1


_GET_NUM_THREADS = numba.get_num_threads


def _thread_count() -> int:
    """`numba.get_num_threads()` (this thread's count, as set by `numba.set_num_threads`):
    once numba's threads run, its compiled getter alone, without the two locks the public
    function takes at every call to start them (~1.5 against ~0.3 us, a few times a tick at
    4,096 UAVs). The public function whenever it was replaced (tests do) or numba has no
    such getter."""
    if numba.get_num_threads is _GET_NUM_THREADS and getattr(_layer, "_is_initialized", False):
        raw = getattr(_layer, "_get_num_threads", None)
        if raw is not None:
            return raw()
    return numba.get_num_threads()


# -- the registry -------------------------------------------------------------------------------
BACKEND_GROUP = "skyswarm.backends"  # entry-point group of third-party backends
# Shipped backends by name, as `module:Class`: imported when first asked for, never before (the
# fast backend's runs never import pybullet). A shipped backend is its module and one line here.
SHIPPED_BACKENDS: Mapping[str, str] = {
    "bullet": "skyswarm.core.backends.bullet:BulletWorld",
    "fast": "skyswarm.core.backends.fast:FastWorld",
}
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_registered: dict[str, type[World]] = {}  # by register_backend, and every class loaded


def register_backend(cls: type[World]) -> type[World]:
    """Register the World subclass `cls` under `cls.name` (a class decorator; returns `cls`).

    The name is lower-case letters, digits and `_`, starting with a letter; a name a shipped or
    installed backend already has, or another registered class, is a ValueError. Once
    registered, `[simulation] physics` names it. The default backend, counting its physics
    steps (a backend from scratch implements every abstract method of `World`):

        from skyswarm import Simulator, load_scenario
        from skyswarm.core.backends.bullet import BulletWorld  # the shipped default
        from skyswarm.extend import register_backend


        @register_backend
        class CountingWorld(BulletWorld):
            name = "counting"  # [simulation] physics = "counting"
            steps = 0

            def step_physics(self) -> None:
                super().step_physics()
                self.steps += 1


        overrides = ["simulation.physics=counting", "agents.count=1"]
        sim = Simulator.from_scenario(load_scenario("hover", overrides))
        sim.run(until_s=0.1)
        print(type(sim.world).__name__, sim.world.steps)  # CountingWorld 40
        sim.close()
    """
    if not (inspect.isclass(cls) and issubclass(cls, World)) or inspect.isabstract(cls):
        raise ValueError(f"{cls!r}: a backend is a concrete subclass of World")
    name = cls.__dict__.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{cls.__name__}.name = {name!r}: declare a lower-case identifier")
    taken, declared = _registered.get(name), _declared().get(name)
    own = f"{cls.__module__}:{cls.__qualname__}"  # an installed backend loading itself
    if (taken is not None and taken is not cls) or declared not in (None, own):
        raise ValueError(f"physics backend {name!r} is already registered ({taken or declared})")
    _registered[name] = cls
    return cls


def backend_names() -> tuple[str, ...]:
    """Every backend a scenario may name: shipped, installed (entry points), registered."""
    return tuple(dict.fromkeys([*SHIPPED_BACKENDS, *_declared(), *sorted(_registered)]))


def backend_class(name: str) -> type[World]:
    """The World subclass registered as `name`, its module imported on first use.

    ValueError for an unknown name, a target that is not a World subclass declaring `name`,
    or a module that fails to import (the message names the exception, one line)."""
    if name in _registered:
        return _registered[name]
    target = _declared().get(name)
    if target is None:
        raise ValueError(f"physics {name!r}: expected one of {', '.join(backend_names())}")
    module_name, _, attr = target.partition(":")
    try:  # a computed import, by design: the registry's targets are strings
        cls = getattr(importlib.import_module(module_name), attr, None)
    except Exception as exc:  # a broken plug-in: one line, no traceback
        raise ValueError(f"physics {name!r}: {target} fails to import ({exc!r})") from None
    if not (inspect.isclass(cls) and issubclass(cls, World)) or cls.__dict__.get("name") != name:
        raise ValueError(f"physics {name!r}: {target} is not a World subclass named {name!r}")
    _registered[name] = cls
    return cls


def _declared() -> dict[str, str]:
    """Backends known by `module:Class` string: installed entry points, then the shipped ones
    (a shipped name wins)."""
    found = {ep.name: ep.value for ep in _entry_points()}
    return {**found, **SHIPPED_BACKENDS}


def _entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    return _scan(tuple(sys.path))


@functools.lru_cache(maxsize=8)
def _scan(search_path: tuple[str, ...]) -> tuple[importlib.metadata.EntryPoint, ...]:
    """The group's entry points, scanned once per import path (a scan takes ~0.1 s)."""
    return tuple(importlib.metadata.entry_points(group=BACKEND_GROUP))


def make_world(physics: str = "bullet", tick_s: float = 0.0025, gravity: float = 9.81) -> World:
    """A backend by registered name ('bullet', 'fast', ...; see `backend_names`)."""
    return backend_class(physics)(tick_s, gravity)
