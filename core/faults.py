"""Killing agents. `kill()` is the one way an agent dies: collisions, faults, the GUI all use it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.agent import Agent, PhysicalAgent

if TYPE_CHECKING:
    from core.simulator import Simulator


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


def _finite_tuple(v: np.ndarray) -> tuple[float, float, float] | None:
    return tuple(float(x) for x in v) if np.all(np.isfinite(v)) else None  # type: ignore[return-value]
