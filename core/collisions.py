"""Collision monitor and numerical guard: post-tick listeners that kill agents through `kill()`.

Only agents that can crash (`PhysicalAgent.crashable`, true for UAVs) are judged; boxes of a drop
test may rest on each other. Rules, from the tick's contact report (core/backends: pairs of
body slots and scenery ids):
- crashable agent touches another agent: both die (if crashable), each cause naming the other;
- crashable agent touches static scenery (ground, terrain, obstacle): it dies unless this is a
  landing, i.e. its speed just before contact is below `landing_speed_mps` and its tilt below
  `landing_tilt_deg`. An agent resting on the ground has speed ~0, so it is never killed.
The numerical guard kills an agent whose state is not finite or absurd (beyond `max_speed_mps` or
`max_distance_m` from the origin) so that one blown-up body cannot corrupt a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.geo import tilt_deg
from skyswarm.core.schema import param
from skyswarm.core.state import rows_of_slots

try:  # numpy.einsum's C function (what np.einsum calls without `optimize`), else np.einsum
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # pragma: no cover - another numpy's layout
    _einsum = np.einsum

if TYPE_CHECKING:
    from skyswarm.core.backends import ContactReport, World
    from skyswarm.core.simulator import Simulator


@dataclass(frozen=True)
class CollisionConfig:
    enabled: bool = param(True, "kill crashable agents on collisions")
    landing_speed_mps: float = param(
        1.0, "slower contacts with the ground or obstacles are landings, m/s", ge=0.0
    )
    landing_tilt_deg: float = param(
        30.0, "landings need a tilt below this, degrees", ge=0.0, le=180.0
    )
    # Bullet clamps body speeds at 100 m/s: a body at the clamp has already blown up.
    max_speed_mps: float = param(99.0, "numerical guard: faster bodies are blown up, m/s", gt=0.0)
    max_distance_m: float = param(1.0e6, "numerical guard: farther bodies are blown up, m", gt=0.0)


class CollisionMonitor:
    """Post-tick: judge this tick's contacts; keep each body's velocity for the next judgement."""

    def __init__(self, sim: Simulator, config: CollisionConfig) -> None:
        # imported here, not at the top: the config schema imports this module, and a bad
        # scenario is refused before numba is (tests/app/test_cli_imports.py)
        from skyswarm.core.monitor_kernels import guard_and_keep

        self._guard_and_keep = guard_and_keep
        self.sim = sim
        self.config = config
        self._prev_velocity = sim.world.state.linear_velocity.copy()
        self.landings = 0
        self._slots_key: np.ndarray | None = None  # world.tracked_slots the rows below are for
        self._rows: slice | np.ndarray = slice(0, 0)
        self._crash_key = -1  # number of agents the crashable-slot cache was built for
        self._crash_slots = np.zeros(0, dtype=bool)

    def post_tick(self, world: World) -> None:
        state = world.state
        contacts = world.contacts
        if contacts and self.config.enabled:
            self._judge(world, contacts)
        velocity = state.linear_velocity
        if self._prev_velocity.shape != velocity.shape:
            self._prev_velocity = np.empty_like(velocity)
        if not self._guard(world):  # (its compiled pass copies the velocities when it passes)
            np.copyto(self._prev_velocity, velocity)  # no new array per tick

    def _judge(self, world: World, contacts: ContactReport) -> None:
        """Pairs of slots (>= 0) and scenery ids (< 0), in the report's order.

        Vectorised: which contacts can kill is decided over arrays (crashable owners, speed
        before contact, tilt); Python runs only for the contacts that kill, in report order."""
        a, b = contacts.a, contacts.b
        crash = self._crashable_slots(world)
        n = len(crash)
        ca = (a >= 0) & (a < n)
        cb = (b >= 0) & (b < n)
        crash_a = np.zeros(len(a), dtype=bool)
        crash_b = np.zeros(len(b), dtype=bool)
        crash_a[ca] = crash[a[ca]]
        crash_b[cb] = crash[b[cb]]
        pair = (a >= 0) & (b >= 0) & (crash_a | crash_b)
        # one end a crashable body, the other scenery: a crash unless a landing
        body = np.where(b < 0, a, b)
        on_scenery = ((b < 0) & crash_a) | ((a < 0) & crash_b)
        hard = np.zeros(len(a), dtype=bool)
        speed, tilt = np.zeros(len(a)), np.zeros(len(a))  # of the scenery contacts, by row
        k = np.flatnonzero(on_scenery)
        if len(k):
            slots = body[k]
            v = self._prev_velocity[slots]
            speed[k] = np.sqrt(np.einsum("ij,ij->i", v, v))
            tilt[k] = tilt_deg(world.state.orientation[slots])
            cfg = self.config
            land = (speed[k] < cfg.landing_speed_mps) & (tilt[k] < cfg.landing_tilt_deg)
            hard[k[~land]] = True
        owner = world.owner_of_slot
        for i in np.flatnonzero(pair | hard).tolist():
            if pair[i]:
                self._agents_collide(owner(int(a[i])), owner(int(b[i])))
            else:
                agent = owner(int(body[i]))
                scenery = int(b[i] if b[i] < 0 else a[i])
                self._crash(agent, scenery, world, float(speed[i]), float(tilt[i]))

    def _crashable_slots(self, world: World) -> np.ndarray:
        """(slots,) bool: the body's owner is a crashable agent (cached: an agent's body and
        kind never change, so the cache is rebuilt only when agents are added)."""
        key = len(self.sim.agents)
        if key != self._crash_key:
            agents = [a for a in self.sim.physical_agents if _crashable(a)]
            slots = np.array([a.slot for a in agents], dtype=np.intp)
            crash = np.zeros(int(slots.max(initial=-1)) + 1, dtype=bool)
            crash[slots] = True
            self._crash_slots, self._crash_key = crash, key
        return self._crash_slots

    def _agents_collide(self, a: PhysicalAgent | None, b: PhysicalAgent | None) -> None:
        if a is None or b is None:
            return
        for me, other in ((a, b), (b, a)):
            if _crashable(me) and me.alive:
                self.sim.kill(me, self._cause(me, f"collision: with agent {other.id}"))

    def _crash(
        self, agent: PhysicalAgent | None, scenery: int, world: World, speed: float, tilt: float
    ) -> None:
        if agent is None or not (_crashable(agent) and agent.alive):
            return
        cause = f"crash: into {world.scenery_name(scenery)} at {speed:.2f} m/s, tilt {tilt:.0f} deg"
        self.sim.kill(agent, self._cause(agent, cause))

    @staticmethod
    def _cause(agent: PhysicalAgent, cause: str) -> str:
        """The cause, naming the faults the agent survived until now (physical mode)."""
        return f"{cause} (after {'; '.join(agent.faults)})" if agent.faults else cause

    def _all_within_limits(self, pos: np.ndarray, vel: np.ndarray) -> bool:
        """Fast path of the guard, (n, 3) arrays: True only if no body can be blown up. A NaN
        or inf makes every comparison false, so anything doubtful takes the exact checks."""
        speed2, dist2 = self.config.max_speed_mps**2, self.config.max_distance_m**2
        # The sums over all bodies bound each body's value (einsum: no overflow warnings; its
        # C function, without the Python wrapper's argument handling: 40 % of a call's cost).
        if _einsum("ij,ij->", vel, vel) <= speed2 and _einsum("ij,ij->", pos, pos) <= dist2:
            return True
        return bool(
            np.einsum("ij,ij->i", vel, vel).max() <= speed2
            and np.einsum("ij,ij->i", pos, pos).max() <= dist2
        )

    def _guard(self, world: World) -> bool:
        """Kill the tracked bodies whose state blew up; True when every body passed the
        compiled pass, which also copied the velocities into `_prev_velocity` (one pass over
        the rows instead of two sums and a copy: core/monitor_kernels.py)."""
        state = world.state
        slots = world.tracked_slots
        if len(slots) == 0:
            return False
        if slots is not self._slots_key:  # the tracked set changed
            self._slots_key, self._rows = slots, rows_of_slots(slots)
        rows, pos, vel = self._rows, state.position, state.linear_velocity
        if isinstance(rows, slice) and _plain(pos) and _plain(vel) and _plain(self._prev_velocity):
            speed2, dist2 = self.config.max_speed_mps**2, self.config.max_distance_m**2
            if self._guard_and_keep(
                pos, vel, rows.start, rows.stop, self._prev_velocity, speed2, dist2
            ):
                return True
        if self._all_within_limits(pos[rows], vel[rows]):
            return False
        pos = state.position[slots]
        vel = state.linear_velocity[slots]
        bad = ~np.isfinite(pos).all(axis=1) | ~np.isfinite(vel).all(axis=1)
        bad |= np.einsum("ij,ij->i", vel, vel) > self.config.max_speed_mps**2
        bad |= np.einsum("ij,ij->i", pos, pos) > self.config.max_distance_m**2
        if not bad.any():
            return False
        for slot in slots[bad]:
            agent = world.owner_of_slot(int(slot))
            if agent is not None and agent.alive:
                self.sim.kill(
                    agent,
                    f"numerical: state blew up (position {state.position[slot].round(3).tolist()}, "
                    f"velocity {state.linear_velocity[slot].round(3).tolist()})",
                )
        return False


def _plain(a: np.ndarray) -> bool:
    """(M, 3) float64, C-contiguous: the arrays the compiled guard is compiled for."""
    return a.dtype == np.float64 and a.ndim == 2 and a.shape[1] == 3 and a.flags.c_contiguous


def _crashable(owner: object) -> bool:
    """Whether a body's owner dies on impact (a body may be owned by something not an agent)."""
    return isinstance(owner, PhysicalAgent) and owner.crashable
