"""Agents: logical ones (no body, e.g. a base station) and physical ones (a body in the world).

An agent object is a thin handle: its state lives in the world's arrays, read through properties.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NewType

import numpy as np

from skyswarm.core.tasks import Task

if TYPE_CHECKING:
    from skyswarm.core.hooks import EstimateSource, ModeSource
    from skyswarm.core.simulator import Simulator

AgentId = NewType("AgentId", int)


class Agent:
    """A logical agent: an id, a role, periodic tasks, alive or killed (with cause and time).

    Random faults strike only agents that also implement `core.hooks.FaultCapable`. Subclass it
    for an agent without a body (a base station, a logger): it joins the simulation when built
    and acts through its periodic tasks (`every`):

        from skyswarm import Agent, Simulator, load_scenario


        class Logger(Agent):
            '''Counts the UAVs alive every 0.1 s.'''

            role = "logger"

            def __init__(self, sim: Simulator, agent_id: int) -> None:
                super().__init__(sim, agent_id)
                self.counts: list[int] = []
                self.every(0.1, self.count)

            def count(self) -> None:
                self.counts.append(sum(a.alive for a in self.sim.physical_agents))
                if len(self.counts) == 3:
                    raise RuntimeError("log disk full")  # an error in a task kills its agent


        sim = Simulator.from_scenario(load_scenario("hover", ["agents.count=2"]))
        logger = Logger(sim, agent_id=100)  # the UAVs are agents 1 and 2
        sim.run(until_s=0.5)
        print(logger.counts)  # [2, 2, 2]: its task stopped when it died
        print(logger.alive, logger.death_cause)  # False software fault: RuntimeError: log disk full
        print(sim.summary()["alive"])  # 2: the UAVs fly on
        sim.close()

    (With `[simulation] strict = true` the error stops the run instead.)
    """

    role = "agent"

    def __init__(self, sim: Simulator, agent_id: int, name: str | None = None) -> None:
        self.sim = sim
        self.id = AgentId(int(agent_id))
        self.name = name or f"{self.role}-{self.id}"
        self.alive = True
        self.death_cause: str | None = None
        self.death_time_s: float | None = None
        self.transceiver: Any = None  # set by the comms dispatcher when the agent joins it
        self.faults: list[str] = []  # faults it suffered and survived so far (physical mode)
        sim.add_agent(self)

    def every(
        self,
        period_s: float,
        fn: Callable[[], Any],
        phase_s: float = 0.0,
        deadline_s: float | None = None,
        name: str | None = None,
    ) -> Task:
        """Run `fn()` periodically while this agent lives; an exception in it kills the agent."""
        return self.sim.every(period_s, fn, phase_s, deadline_s, owner=self, name=name)

    def on_killed(self, cause: str) -> None:
        """Hook for subclasses: release resources when the agent is killed."""

    @property
    def position(self) -> np.ndarray | None:
        """Logical agents have no pose unless a subclass gives them one."""
        return None

    def mode_name(self) -> str:
        """Name of the control mode it flies in now, for the views and the timeline ("-": none;
        `uav.agents.UavAgent` names its cascade mode, e.g. "POSITION")."""
        return "-"

    def mode_row(self) -> tuple[ModeSource, int] | None:
        """The group that holds this agent's control mode in an array, and its row there
        (`core.hooks.ModeSource`: the timeline then reads the array instead of calling
        `mode_name()` on every look); None when only `mode_name()` tells (the default)."""
        return None

    def estimate_row(self) -> tuple[EstimateSource, int] | None:
        """The group whose state estimate this agent flies on, and its row there
        (`core.hooks.EstimateSource`); None when it acts on the truth (the default)."""
        return None

    def heard_from(self) -> Mapping[int, float] | None:
        """{agent id: simulated time s this agent last heard from it}, for the viewer's
        inspector; None when the agent keeps no such record (the default; a flocking member
        keeps one)."""
        return None

    def __repr__(self) -> str:
        state = "alive" if self.alive else f"dead: {self.death_cause}"
        return f"<{type(self).__name__} {self.id} ({state})>"


class PhysicalAgent(Agent):
    """An agent with a body in the world, named by its state `slot` (never a backend's body id);
    pose and velocity are views into the world's state arrays. A UAV is one (`UavAgent`); the
    drop test's boxes are plain ones, falling from 10 m:

        from skyswarm import PhysicalAgent, Simulator, load_scenario

        sim = Simulator.from_scenario(load_scenario("drop_test", ["agents.count=2"]))
        box = sim.physical_agents[0]
        print(isinstance(box, PhysicalAgent), box.role)  # True body
        z0 = float(box.position[2])  # a copy: `position` is a view that moves with the body
        sim.run(until_s=0.3)
        print(round(z0 - box.position[2], 2))  # 0.45 m fallen (1/2 g t^2 = 0.44)
        print(box.velocity.round(2))  # [ 0.    0.   -2.94]: m/s, world ENU
        sim.close()
    """

    role = "body"
    crashable = False  # collisions kill it (UAVs); boxes of a drop test may touch freely

    def __init__(self, sim: Simulator, agent_id: int, slot: int, name: str | None = None) -> None:
        self.slot = int(slot)
        super().__init__(sim, agent_id, name)
        sim.world.set_owner(self.slot, self)

    @property
    def position(self) -> np.ndarray:
        """(3,) m, world ENU."""
        return self.sim.world.state.position[self.slot]

    @property
    def orientation(self) -> np.ndarray:
        """(4,) quaternion x, y, z, w."""
        return self.sim.world.state.orientation[self.slot]

    @property
    def velocity(self) -> np.ndarray:
        """(3,) m/s, world frame."""
        return self.sim.world.state.linear_velocity[self.slot]

    @property
    def angular_velocity(self) -> np.ndarray:
        """(3,) rad/s, world frame."""
        return self.sim.world.state.angular_velocity[self.slot]
