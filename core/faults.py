"""Killing agents and random faults.

`kill()` is the one way an agent dies: collisions, faults, software errors and the GUI all use
it. Causes start with their category ("collision", "crash", "propeller failure", "software
fault", ...), which the summary counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from skyswarm.core.agent import Agent, PhysicalAgent
from skyswarm.core.collisions import CollisionConfig
from skyswarm.core.schema import param

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator
    from skyswarm.core.world import World


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
    transceiver goes silent). Returns False if the agent was already dead.
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
        sim.world.remove_body(agent.body_id)
    event = DeathEvent(sim.time_s, sim.tick, int(agent.id), cause, position, velocity, detail)
    sim.deaths.append(event)
    if sim.recorder is not None:
        sim.recorder.death(event)
    for listener in list(sim.death_listeners):
        listener(event)
    return True


def _finite_tuple(v: np.ndarray | None) -> tuple[float, float, float] | None:
    if v is None:
        return None
    return tuple(float(x) for x in v) if np.all(np.isfinite(v)) else None  # type: ignore[return-value]


@dataclass(frozen=True)
class FaultRates:
    """Rates of the random fault processes, per agent and flight hour (exponential times)."""

    propeller_failure: float = param(0.0, "propeller breaks, per flight hour", ge=0.0)
    software_failure: float = param(0.0, "flight software crashes, per flight hour", ge=0.0)


@dataclass(frozen=True)
class BatteryConfig:
    """A simple battery: draw grows with thrust as P = hover_power_w * (T / (m g)) ** 1.5."""

    enabled: bool = param(False, "drain a battery and fail the agent when it is empty")
    capacity_wh: float = param(60.0, "usable energy, Wh", gt=0.0)
    initial_charge: float = param(1.0, "initial state of charge, 0..1", gt=0.0, le=1.0)
    hover_power_w: float = param(180.0, "electrical power at hover thrust, W", gt=0.0)
    exponent: float = param(1.5, "power ~ thrust ** exponent (1.5: momentum theory)", gt=0.0)


@dataclass(frozen=True)
class FaultsConfig:
    mode: Literal["kill", "physical"] = param(
        "kill", "kill: a faulted agent is removed at once; physical: the fault plays out"
    )
    rates: FaultRates = param(FaultRates(), "random fault processes ([faults.rates])")
    battery: BatteryConfig = param(BatteryConfig(), "battery model ([faults.battery])")
    collisions: CollisionConfig = param(CollisionConfig(), "collision rules ([faults.collisions])")


PROCESSES = ("propeller failure", "software failure")


class FaultInjector:
    """Post-tick: fires each fault-prone agent's random faults at their drawn times.

    Times are drawn when an agent is watched: one exponential per (agent, process), agents in
    id order, all from the simulation's faults stream, so the same seed gives the same faults.
    In `kill` mode the agent dies at once; in `physical` mode its `apply_fault(kind, detail)`
    plays the fault out (a dead motor, cut power) and the collision monitor ends it.
    """

    def __init__(self, sim: Simulator, config: FaultsConfig) -> None:
        self.sim = sim
        self.config = config
        rates = config.rates
        self.rate_per_s = np.array([rates.propeller_failure, rates.software_failure]) / 3600.0
        self._agents: list[Agent] = []
        self._due = np.zeros((0, len(PROCESSES)))  # s, time of each pending fault
        self._initial = self._due.copy()
        self._next = np.inf
        self.history: list[tuple[float, int, str]] = []  # (time s, agent id, fault)

    def watch(self, agents: list[Agent]) -> None:
        """Start the fault processes of `agents` now (sorted by id for reproducibility)."""
        agents = sorted(agents, key=lambda a: a.id)
        rng = self.sim.rng.faults
        scale = np.divide(1.0, self.rate_per_s, out=np.full(2, np.inf), where=self.rate_per_s > 0)
        draws = np.where(
            np.isfinite(scale),
            rng.exponential(
                np.where(np.isfinite(scale), scale, 1.0), size=(len(agents), len(PROCESSES))
            ),
            np.inf,
        )
        self._agents.extend(agents)
        self._due = np.vstack([self._due, self.sim.time_s + draws])
        self._initial = self._due.copy()
        self._next = float(self._due.min(initial=np.inf))

    def watch_times(self) -> np.ndarray:
        """(agents, processes) drawn fault times, s, in watch order (inf: rate 0 or fired)."""
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
                self.inject(agent, PROCESSES[c])
        self._next = float(self._due.min(initial=np.inf))

    def inject(self, agent: Agent, kind: str, detail: str = "") -> None:
        """Fault `agent` now: kill it, or in physical mode let the agent play the fault out."""
        sim = self.sim
        if kind == "propeller failure" and not detail:
            detail = f"motor {int(sim.rng.faults.integers(0, 4))}"
        self.history.append((sim.time_s, int(agent.id), kind))
        text = f"{kind}: {detail + ' ' if detail else ''}at {sim.time_s:.3f} s"
        apply = getattr(agent, "apply_fault", None)
        if self.config.mode == "physical" and apply is not None and apply(kind, detail):
            agent.faults.append(text)  # type: ignore[attr-defined]
            if sim.recorder is not None:
                sim.recorder.event("fault", int(agent.id), text, _finite_tuple(agent.position))
            return
        sim.kill(agent, text)
