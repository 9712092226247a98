"""Killing agents and random faults.

`kill()` is the one way an agent dies: collisions, faults, software errors and the GUI all use
it. Causes start with their category ("collision", "crash", "software fault", or the kind of a
random fault), which the summary counts.

The fault injector knows fault *processes* only: each `FaultCapable` agent (core/hooks.py) names
its fault kinds and their rates, says which part a fault strikes and plays it out. What a fault
does to a body (a quadrotor's motor, its battery) lives with that body's type, in uav/.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

import numpy as np

from skyswarm.core.agent import Agent, PhysicalAgent
from skyswarm.core.collisions import CollisionConfig
from skyswarm.core.hooks import FaultCapable
from skyswarm.core.schema import param

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator


@dataclass(frozen=True)
class DeathEvent:
    time_s: float
    tick: int
    agent_id: int
    cause: str
    position: tuple[float, float, float] | None  # m, world ENU, where it died
    velocity: tuple[float, float, float] | None  # m/s
    detail: str = ""  # e.g. the traceback of a software fault

    @property
    def kind(self) -> str:
        """The cause's category (text before the first colon), for counting."""
        return self.cause.split(":", 1)[0].strip()


def kill(sim: Simulator, agent: Agent, cause: str, detail: str = "") -> bool:
    """Kill `agent`: mark it dead, stop its tasks, take its body out of the world, record it.

    The agent's own `on_killed` hook runs first (a UAV masks itself out of the swarm arrays, a
    transceiver goes silent). Returns False if the agent was already dead. The cause's text
    before the first colon is its kind, which the summary counts (`deaths_by_cause`).

        from skyswarm import Simulator, kill, load_scenario
        from skyswarm.extend import swarms_of

        sim = Simulator.from_scenario(load_scenario("hover", ["agents.count=3"]))
        (swarm,) = swarms_of(sim)
        uav = swarm.agents[1]
        print(kill(sim, uav, "crash: hit by a bird"))  # True
        print(kill(sim, uav, "crash: again"))  # False: it was dead already
        sim.run(until_s=0.1)  # the others fly on
        print(swarm.alive)  # [ True False  True]
        print(uav.alive, uav.death_time_s, sim.deaths[0].cause)  # False 0.0 crash: hit by a bird
        summary = sim.finish()
        print(summary["alive"], summary["deaths_by_cause"])  # 2 {'crash': 1}
        sim.close()
    """
    if not agent.alive:
        return False
    position = velocity = None
    if isinstance(agent, PhysicalAgent):
        position = _finite_tuple(agent.position)
        velocity = _finite_tuple(agent.velocity)
    agent.alive = False
    agent.death_cause = cause
    agent.death_time_s = sim.time_s
    sim.tasks.cancel_owned_by(agent)
    agent.on_killed(cause)
    if isinstance(agent, PhysicalAgent):
        sim.world.remove(agent.slot)
    event = DeathEvent(sim.time_s, sim.tick, int(agent.id), cause, position, velocity, detail)
    sim.deaths.append(event)
    if sim.recorder is not None:
        sim.recorder.death(event)
    for listener in sim.death_listeners:
        listener(event)
    return True


def software_fault(sim: Simulator, agent: Agent, exc: BaseException) -> bool:
    """Kill `agent` for an exception its own code raised: the cause names the exception, the
    detail holds the formatted traceback. False if it was already dead."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return kill(sim, agent, f"software fault: {type(exc).__name__}: {exc}", tb)


def _finite_tuple(v: np.ndarray | None) -> tuple[float, float, float] | None:
    if v is None:
        return None
    return tuple(float(x) for x in v) if np.all(np.isfinite(v)) else None  # type: ignore[return-value]


@dataclass(frozen=True)
class FaultsConfig:
    """What faults do and when collisions kill. The random fault processes and their rates
    belong to the agents' types (a UAV's are in its mission's [uav.fault_rates] section)."""

    mode: Literal["kill", "physical"] = param(
        "kill", "kill: a faulted agent is removed at once; physical: the fault plays out"
    )
    collisions: CollisionConfig = param(CollisionConfig(), "collision rules ([faults.collisions])")


class FaultInjector:
    """Post-tick: fires each watched agent's random faults at their drawn times.

    Times are drawn when agents are watched: one exponential per (agent, fault kind) from the
    agents' `fault_rates()`, agents in id order, kinds in order of first appearance, all from the
    simulation's faults stream, so the same seed gives the same faults. In `kill` mode the agent
    dies at once; in `physical` mode its `apply_fault(kind, detail)` plays the fault out (a dead
    motor, cut power) and the collision monitor ends it. Without `Simulator.install_faults` the
    injector watches nobody and `inject` kills (`kill` mode).
    """

    def __init__(self, sim: Simulator, mode: Literal["kill", "physical"] = "kill") -> None:
        self.sim = sim
        self.mode = mode
        self.kinds: list[str] = []  # fault kinds, the columns of the arrays below
        self._agents: list[Agent] = []
        self._due = np.zeros((0, 0))  # s, time of each pending fault (inf: none)
        self._initial = self._due.copy()
        self._next = np.inf
        self.history: list[tuple[float, int, str]] = []  # (time s, agent id, fault kind)

    def watch(self, agents: Iterable[Agent]) -> None:
        """Start the fault processes of `agents` (FaultCapable) now, sorted by id."""
        agents = sorted(agents, key=lambda a: a.id)
        for a in agents:
            if not isinstance(a, FaultCapable):
                raise TypeError(f"{a!r} is not FaultCapable (core/hooks.py): no faults to watch")
        rates = [cast(FaultCapable, a).fault_rates() for a in agents]
        for kind in (k for r in rates for k in r):
            if kind not in self.kinds:
                self.kinds.append(kind)
        kinds = self.kinds
        per_hour = np.array([[r.get(k, 0.0) for k in kinds] for r in rates], dtype=float)
        per_hour = per_hour.reshape(len(agents), len(kinds))  # (agents, kinds), per hour
        if np.any(per_hour < 0) or not np.all(np.isfinite(per_hour)):
            raise ValueError(f"fault rates must be finite and >= 0 per hour, got {rates}")
        rate_per_s = per_hour / 3600.0
        scale = np.divide(
            1.0, rate_per_s, out=np.full(rate_per_s.shape, np.inf), where=rate_per_s > 0
        )
        finite = np.isfinite(scale)
        # One draw per (agent, kind), rate 0 included, so one rate never shifts another's times.
        draws = np.where(
            finite, self.sim.rng.faults.exponential(np.where(finite, scale, 1.0)), np.inf
        )
        self._agents.extend(agents)
        grown = np.full((len(self._due), len(kinds)), np.inf)
        grown[:, : self._due.shape[1]] = self._due
        self._due = np.vstack([grown, self.sim.time_s + draws])
        self._initial = self._due.copy()
        self._next = float(self._due.min(initial=np.inf))

    def watch_times(self) -> np.ndarray:
        """(agents, kinds) drawn fault times, s, in watch order (inf: rate 0)."""
        return self._initial.copy()

    def post_tick(self, world: World) -> None:
        if world.time_s < self._next:
            return
        now = world.time_s
        rows, cols = np.nonzero(self._due <= now)
        order = np.lexsort((cols, [self._agents[r].id for r in rows], self._due[rows, cols]))
        for k in order:
            r, c = rows[k], cols[k]
            self._due[r, c] = np.inf
            agent = self._agents[r]
            if agent.alive:
                self.inject(agent, self.kinds[c])
        self._next = float(self._due.min(initial=np.inf))

    def inject(self, agent: Agent, kind: str, detail: str = "") -> None:
        """Fault `agent` now: kill it, or in physical mode let the agent play the fault out.

        Without a `detail` a fault-capable agent says which part fails (it may draw from the
        faults stream); the cause then reads "<kind>: <detail> at <t> s".
        """
        sim = self.sim
        capable = isinstance(agent, FaultCapable)
        if capable and not detail:
            detail = agent.fault_detail(kind, sim.rng.faults)
        self.history.append((sim.time_s, int(agent.id), kind))
        text = f"{kind}: {detail + ' ' if detail else ''}at {sim.time_s:.3f} s"
        if self.mode == "physical" and capable and agent.apply_fault(kind, detail):
            agent.faults.append(text)
            if sim.recorder is not None:
                sim.recorder.event("fault", int(agent.id), text, _finite_tuple(agent.position))
            return
        sim.kill(agent, text)
