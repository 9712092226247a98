"""Waypoints: every UAV takes off and flies a list of waypoints in Position mode.

Waypoints are (x, y, z) in m, relative to each agent's start (x, y) so that a formation flies
the same pattern side by side. A waypoint counts as reached within `acceptance_radius_m`; the
mission is done when every live agent has reached the last one. `[[waypoints.groups]]` give
some agents their own list (e.g. two groups flying through each other, configs/crossing.toml).

Outcome: "target reached" when every agent reached its last waypoint; "plan exhausted" when the
survivors did but some agents were lost on the way.

Scheduled event `move_waypoint` (`index`, `point`): waypoint `index` of the targets (every agent
without a target) becomes `point`; an agent flying to it turns to the new point at once.
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
class WaypointGroup:
    """One `[[waypoints.groups]]` table: agents that fly their own waypoints."""

    ids: tuple[int, ...] = param(doc="agent ids of the group", length=(1, None))
    points: tuple[tuple[float, float, float], ...] = param(
        doc="waypoints (x, y, z), m, relative to each agent's start x, y", length=(1, None)
    )


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
    groups: tuple[WaypointGroup, ...] = param(
        (), "agents with their own waypoints ([[waypoints.groups]]); the others fly `points`"
    )

    def validate(self, path: str, file: str) -> None:
        if not self.points:
            raise ConfigError(file, f"{path}.points", [], "at least one waypoint")
        seen: set[int] = set()
        for i, g in enumerate(self.groups):
            if seen & set(g.ids) or len(set(g.ids)) != len(g.ids):
                raise ConfigError(file, f"{path}.groups[{i}].ids", list(g.ids), "ids in one group")
            seen |= set(g.ids)

    def points_of(self, agent_id: int) -> tuple[tuple[float, float, float], ...]:
        for g in self.groups:
            if agent_id in g.ids:
                return g.points
        return self.points


@dataclass(frozen=True)
class MoveWaypoint:
    """Keys of the `move_waypoint` event."""

    index: int = param(doc="which waypoint (0 = the first)", ge=0)
    point: tuple[float, float, float] = param(doc="its new (x, y, z), m, relative to the start")


class Waypoints(Mission):
    description = "fly a list of waypoints in Position mode, with an acceptance radius"
    sections = {"uav": UavSection, "waypoints": WaypointsConfig}
    event_actions = {"move_waypoint": MoveWaypoint}

    @classmethod
    def check_config(cls, scenario) -> None:
        cfg: WaypointsConfig = scenario.section("waypoints")
        shortest = min([len(cfg.points), *(len(g.points) for g in cfg.groups)])
        for ev in scenario.events:
            if ev.action == "move_waypoint" and ev.params.index >= shortest:
                raise ConfigError(
                    scenario.file,
                    f"events[{ev.index}].index",
                    ev.params.index,
                    f"a waypoint index below {shortest} (the shortest list)",
                )

    def on_event(self, action: str, params: MoveWaypoint, targets: list[int]) -> None:
        chosen = set(targets) if targets else {a.id for a in self.swarm.agents}
        for k, agent in enumerate(self.swarm.agents):
            if agent.id in chosen and agent.alive:
                points = list(self.points[k])
                points[params.index] = params.point
                self.points[k] = tuple(points)
                if self.next[k] == params.index:
                    self._fly_to(k, agent)

    def setup(self) -> None:
        cfg: WaypointsConfig = self.config.section("waypoints")
        self.cfg = cfg
        self.swarm = Swarm.from_scenario(self.sim, self.config)
        self.origin = self.swarm.start_positions[:, :2]
        self.points = [cfg.points_of(a.id) for a in self.swarm.agents]
        self.last = np.array([len(p) for p in self.points])
        self.next = np.zeros(self.swarm.n, dtype=int)
        self.reached_s: list[list[float]] = [[] for _ in range(self.swarm.n)]
        for k, agent in enumerate(self.swarm.agents):
            self._fly_to(k, agent)
            agent.every(
                cfg.check_period_s, lambda k=k, a=agent: self._check(k, a), name="waypoints"
            )

    def _fly_to(self, k: int, agent: AutonomousUavAgent) -> None:
        x, y, z = self.points[k][self.next[k]]
        agent.goto(self.origin[k, 0] + x, self.origin[k, 1] + y, z)

    def _check(self, k: int, agent: AutonomousUavAgent) -> None:
        if self.next[k] >= self.last[k]:
            return
        if agent.target_distance <= self.cfg.acceptance_radius_m:
            self.reached_s[k].append(self.sim.time_s)
            self.next[k] += 1
            if self.next[k] < self.last[k]:
                self._fly_to(k, agent)

    def is_done(self) -> bool:
        done = self.next >= self.last
        return bool(np.all(done | ~self.swarm.alive))

    def outcome(self) -> str | None:
        if not self.is_done() or not self.swarm.alive.any():
            return None  # running, or every UAV lost (the simulator says so)
        return "target reached" if self.swarm.alive.all() else "plan exhausted"

    def sample(self) -> dict[str, float]:
        return {"waypoints_reached": int(self.next.sum())}

    def metrics(self) -> dict[str, float]:
        finished = [r[-1] for r, n, m in zip(self.reached_s, self.next, self.last) if n >= m]
        return {
            "waypoints": int(self.last.sum()),  # over every UAV (shared and group points)
            "reached": int(self.next.sum()),
            "agents_finished": len(finished),
            "last_finish_s": max(finished) if finished else None,
        }
