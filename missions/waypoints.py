"""Waypoints: every UAV takes off and flies a list of waypoints in Position mode.

Waypoints are (x, y, z) in m, relative to each agent's start (x, y) so that a formation flies
the same pattern side by side. A waypoint counts as reached within `acceptance_radius_m`; the
mission is done when every live agent has reached the last one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.config import ConfigError
from skyswarm.core.mission import Mission
from skyswarm.core.schema import param
from skyswarm.uav.agents import AutonomousUavAgent
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm


@dataclass(frozen=True)
class WaypointsConfig:
    points: tuple[tuple[float, float, float], ...] = param(
        ((0.0, 0.0, 5.0),), "waypoints (x, y, z), m, relative to each agent's start x, y"
    )
    acceptance_radius_m: float = param(
        0.5, "distance at which a waypoint counts as reached, m", gt=0
    )
    check_period_s: float = param(
        0.1, "how often agents check their progress, s", gt=0.0, period=True
    )

    def validate(self, path: str, file: str) -> None:
        if not self.points:
            raise ConfigError(file, f"{path}.points", [], "at least one waypoint")


class Waypoints(Mission):
    description = "fly a list of waypoints in Position mode, with an acceptance radius"
    sections = {"uav": UavSection, "waypoints": WaypointsConfig}

    def setup(self) -> None:
        cfg: WaypointsConfig = self.config.section("waypoints")
        self.cfg = cfg
        self.swarm = Swarm.from_scenario(self.sim, self.config)
        self.origin = self.swarm.start_positions[:, :2]
        self.next = np.zeros(self.swarm.n, dtype=int)
        self.reached_s: list[list[float]] = [[] for _ in range(self.swarm.n)]
        for k, agent in enumerate(self.swarm.agents):
            self._fly_to(k, agent)
            agent.every(
                cfg.check_period_s, lambda k=k, a=agent: self._check(k, a), name="waypoints"
            )

    def _fly_to(self, k: int, agent: AutonomousUavAgent) -> None:
        x, y, z = self.cfg.points[self.next[k]]
        agent.goto(self.origin[k, 0] + x, self.origin[k, 1] + y, z)

    def _check(self, k: int, agent: AutonomousUavAgent) -> None:
        if self.next[k] >= len(self.cfg.points):
            return
        if agent.target_distance <= self.cfg.acceptance_radius_m:
            self.reached_s[k].append(self.sim.time_s)
            self.next[k] += 1
            if self.next[k] < len(self.cfg.points):
                self._fly_to(k, agent)

    def is_done(self) -> bool:
        done = self.next >= len(self.cfg.points)
        return bool(np.all(done | ~self.swarm.alive))

    def sample(self) -> dict[str, float]:
        return {"waypoints_reached": int(self.next.sum())}

    def metrics(self) -> dict[str, float]:
        finished = [r[-1] for r, n in zip(self.reached_s, self.next) if n >= len(self.cfg.points)]
        return {
            "waypoints": len(self.cfg.points),
            "reached": int(self.next.sum()),
            "agents_finished": len(finished),
            "last_finish_s": max(finished) if finished else None,
        }
