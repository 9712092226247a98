"""Obstacle field: UAVs cross a field of pillars and walls that no map holds, steering on their
lidar alone (configs/obstacle_field.toml).

Every UAV starts airborne at `altitude_m` and flies to its goal, `goal_offset_m` from its start
(the `mission` stream moves each goal sideways by up to `goal_jitter_m`). The mission reads
nothing of the scenario's obstacles: what the UAVs avoid, they see with `[uav.sensors.lidar]`
(a flat scan). With the lidar off they fly straight at their goals, through whatever stands in
the way.

The behaviour (`steer`, vectorised over agents, every `period_s`) is a corridor test over the
scan, in the manner of a vector field histogram: each beam's azimuth, and the goal's, is a
candidate heading; the clearance of a heading is how far the swarm can go along it before a
return falls inside a corridor `clearance_m` either side; the heading taken is the open one
(clearance beyond `lookahead_m`, or beyond the goal) nearest the goal, ties broken toward the
last heading; with none open, the most open one. The speed falls to zero at `stop_m` of
clearance, and a return closer than `stop_m` pushes the UAV straight away from it.

Outcome: "target reached" when every UAV is within `acceptance_m` of its goal; metrics count
the arrivals and the crashes into obstacles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.backends import World
from skyswarm.core.mission import Mission
from skyswarm.core.schema import param
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm


@dataclass(frozen=True)
class ObstacleFieldConfig:
    goal_offset_m: tuple[float, float] = param((50.0, 0.0), "goal minus start (x, y), m")
    goal_jitter_m: float = param(1.0, "goals move sideways by up to this (mission stream), m", ge=0)
    altitude_m: float = param(3.0, "flight altitude, m", gt=0.0)
    speed_m_s: float = param(2.0, "cruise speed, m/s", gt=0.0)
    period_s: float = param(0.05, "behaviour period, s (whole ticks)", gt=0.0, period=True)
    clearance_m: float = param(1.0, "half width of the corridor a heading needs, m", gt=0.0)
    lookahead_m: float = param(6.0, "a heading is open with this much clearance, m", gt=0.0)
    stop_m: float = param(0.9, "clearance at which the UAV stops (and is pushed back), m", gt=0)
    acceptance_m: float = param(1.0, "a goal counts as reached within this, m", gt=0.0)


@dataclass(frozen=True)
class Steering:
    """One behaviour step's output for k agents: velocity (k, 3) m/s world and heading (k,)
    rad, the chosen heading to keep as the next step's tie-break."""

    velocity: np.ndarray
    heading: np.ndarray


def steer(
    position: np.ndarray,
    goal: np.ndarray,
    last_heading: np.ndarray,
    ranges: np.ndarray | None,
    directions: np.ndarray | None,
    cfg: ObstacleFieldConfig,
) -> Steering:
    """The behaviour for k agents: positions and goals (k, 3) m, last headings (k,) rad, the
    lidar's ranges (k, M) m (NaN: no return) and world directions (k, M, 3), or None without
    a lidar (then straight at the goal)."""
    to_goal = goal[:, :2] - position[:, :2]
    dist = np.linalg.norm(to_goal, axis=1)
    goal_az = np.arctan2(to_goal[:, 1], to_goal[:, 0])
    if ranges is None:
        heading, speed, push = goal_az, np.full(len(goal), cfg.speed_m_s), np.zeros((len(goal), 2))
    else:
        heading, speed, push = _choose(goal_az, dist, last_heading, ranges, directions, cfg)
    speed = np.minimum(speed, 0.8 * dist)  # arrive without overshooting
    v = np.zeros((len(goal), 3))
    v[:, 0] = speed * np.cos(heading) + push[:, 0]
    v[:, 1] = speed * np.sin(heading) + push[:, 1]
    v[:, 2] = 1.0 * (goal[:, 2] - position[:, 2])  # hold the altitude, 1/s
    return Steering(v, heading)


def _choose(goal_az, dist, last, ranges, directions, cfg):
    """Heading (k,) rad, speed (k,) m/s and push-back (k, 2) m/s from the scan."""
    r = np.where(np.isfinite(ranges), ranges, 1e9)  # (k, M) m; no return: far away
    beam_az = np.arctan2(directions[..., 1], directions[..., 0])  # (k, M)
    cand = np.concatenate([goal_az[:, None], beam_az], axis=1)  # (k, C)
    delta = beam_az[:, None, :] - cand[:, :, None]  # (k, C, M): beam relative to candidate
    along, across = r[:, None, :] * np.cos(delta), np.abs(r[:, None, :] * np.sin(delta))
    blocked = (along > 0) & (across < cfg.clearance_m)
    clear = np.where(blocked, along, np.inf).min(axis=2)  # (k, C) m
    need = np.minimum(cfg.lookahead_m, dist)[:, None]
    open_ = clear >= need
    off_goal = np.abs(_wrap(cand - goal_az[:, None]))
    off_last = np.abs(_wrap(cand - last[:, None]))
    cost = np.where(open_, off_goal + 0.3 * off_last, np.inf)
    none_open = ~open_.any(axis=1)
    pick = np.where(none_open, np.argmax(clear, axis=1), np.argmin(cost, axis=1))
    rows = np.arange(len(cand))
    heading, c = cand[rows, pick], clear[rows, pick]
    span = cfg.lookahead_m - cfg.stop_m
    speed = cfg.speed_m_s * np.clip((np.minimum(c, cfg.lookahead_m) - cfg.stop_m) / span, 0, 1)
    near = r < cfg.stop_m  # returns too close: straight away from them
    away = -(directions[..., :2] * (cfg.stop_m - np.where(near, r, cfg.stop_m))[..., None])
    return heading, speed, 2.0 * away.sum(axis=1)


def _wrap(a: np.ndarray) -> np.ndarray:
    return (a + np.pi) % (2 * np.pi) - np.pi


class ObstacleField(Mission):
    description = "cross a field of unmapped pillars and walls, steering on the lidar"
    sections = {"uav": UavSection, "obstacle_field": ObstacleFieldConfig}

    def setup(self) -> None:
        cfg: ObstacleFieldConfig = self.config.section("obstacle_field")
        self.cfg = cfg
        self.swarm = sw = Swarm.from_scenario(
            self.sim, self.config, hovering=True, altitude_m=cfg.altitude_m
        )
        n = sw.n
        self.goal = sw.start_positions.copy()
        self.goal[:, :2] += cfg.goal_offset_m
        self.goal[:, 1] += self.sim.rng.mission.uniform(-cfg.goal_jitter_m, cfg.goal_jitter_m, n)
        self.goal[:, 2] = cfg.altitude_m
        d = self.goal[:, :2] - sw.start_positions[:, :2]
        self.heading = np.arctan2(d[:, 1], d[:, 0])
        self.arrived = np.zeros(n, dtype=bool)
        sw.control(cfg.period_s, self._behave)

    def _behave(self, state, command) -> None:
        idx = state.index
        lidar = self.swarm.sensors.sensor("lidar") if self.swarm.sensors else None
        ranges = None if lidar is None else lidar.ranges[idx]
        dirs = None if lidar is None else lidar.directions[idx]
        out = steer(state.position, self.goal[idx], self.heading[idx], ranges, dirs, self.cfg)
        self.heading[idx] = out.heading
        command.velocity(idx, out.velocity, yaw=np.zeros(len(idx)))

    def post_tick(self, world: World) -> None:
        pos = world.state.position[self.swarm.rows]
        self.arrived |= np.linalg.norm(pos - self.goal, axis=1) < self.cfg.acceptance_m

    def is_done(self) -> bool:
        live = self.swarm.alive  # done when every survivor arrived (or none is left)
        return bool(self.arrived[live].all())

    def outcome(self) -> str | None:
        if self.arrived.all():
            return "target reached"
        return None

    def metrics(self) -> dict[str, float]:
        crashes = [a.death_cause or "" for a in self.swarm.agents if not a.alive]
        return {
            "arrived": int(self.arrived.sum()),
            "obstacle_crashes": sum("obstacle" in c for c in crashes),
            "lost": len(crashes),
        }
