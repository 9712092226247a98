"""Boids: Reynolds flocking (separation, alignment, cohesion) from broadcast states only.

Every UAV beacons what it senses of itself (position, velocity) on the radio at `broadcast_hz`
(core/comms/beacons.py: one vectorised pass per beacon tick) and each keeps the latest beacon heard
from each neighbour. At `behaviour_hz` one swarm-level behaviour (uav/group.py) steers every
boid at once from those tables alone, in one compiled pass (missions/_boids_steering.py); no
agent ever reads another agent's true state from the simulator, so with the radio cut the flock
does not form. `[boids] reference = true` steers
with the per-agent reference instead (missions/_boids_reference.py, one task per boid): same
inputs, same commands within 1e-9 (tests/missions/test_boids_equivalence.py). The steering
acceleration (m/s^2, horizontal) is

    a = k_sep * sum_j (r_sep / d_j - 1) * unit(p - p_j)   over neighbours with d_j < r_sep
      + k_ali * (mean_j v_j - v)                           alignment
      + k_coh * (mean_j p_j - p)                           cohesion
      + k_mig * (v0 * unit(goal - p) - v)                  migration (only with a goal)
      + k_spd * (v0 - |v|) * unit(v)                       cruise-speed regulation

over the neighbours heard within `neighbour_timeout_s`, closer than `perception_radius_m` (and at
most the `max_neighbours` nearest). |a| is capped at `max_accel_m_s2`, separation first (the
other terms share what it leaves, Reynolds' prioritised allocation); the boid's commanded
velocity v integrates a over the behaviour period and stays within [min_speed, max_speed]. The
quadrotor flies v at a fixed altitude (GroundSpeedAltitudeAndHeading), nose along v or at its
start heading; v is turned into the heading frame of the yaw it measures at each command.

Metrics, at `metrics_hz` from the true state: polarisation (|mean of unit horizontal velocity
vectors|), cohesion radius (mean and max horizontal distance to the centroid), minimum 3D
separation between live UAVs, collisions (deaths whose cause is "collision").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.spatial import cKDTree

from skyswarm.core.geo import heading_to_yaw, yaw_to_heading
from skyswarm.core.mission import Mission
from skyswarm.core.schema import ConfigError, param
from skyswarm.missions._boids_reference import ReferenceBoidAgent, advance, steering
from skyswarm.missions._boids_steering import (
    advance_all,
    closest_pair,
    steering_all,
    steering_csr,
)
from skyswarm.uav.config import UavSection
from skyswarm.uav.group import Commands, GroupInputs
from skyswarm.uav.swarm import Swarm

__all__ = ["Boids", "BoidsConfig", "advance", "advance_all", "flock_metrics", "steering"]
__all__ += ["steering_all", "steering_csr"]


@dataclass(frozen=True)
class BoidsConfig:
    """The `[boids]` section: steering gains, limits, rates and the optional migration goal."""

    altitude_m: float = param(10.0, "flight altitude of every UAV, m", gt=0.0)
    random_headings: bool = param(True, "start headings uniform in [0, 360) (rng.mission)")
    cruise_speed_m_s: float = param(3.0, "preferred horizontal speed v0, m/s", gt=0.0)
    min_speed_m_s: float = param(1.0, "lowest commanded horizontal speed, m/s", ge=0.0)
    max_speed_m_s: float = param(5.0, "highest commanded horizontal speed, m/s", gt=0.0)
    max_accel_m_s2: float = param(5.0, "cap on the steering acceleration, m/s^2", gt=0.0)
    perception_radius_m: float = param(25.0, "neighbours farther than this are ignored, m", gt=0)
    max_neighbours: int = param(0, "steer from at most this many nearest (0: all)", ge=0)
    separation_radius_m: float = param(5.0, "separation acts below this distance, m", gt=0.0)
    lookahead_s: float = param(
        1.0, "separation acts on the closest approach this far ahead, s", ge=0
    )
    separation_gain: float = param(6.0, "k_sep, m/s^2", ge=0.0)
    alignment_gain: float = param(1.0, "k_ali, 1/s", ge=0.0)
    cohesion_gain: float = param(0.1, "k_coh, 1/s^2", ge=0.0)
    speed_gain: float = param(0.5, "k_spd, 1/s", ge=0.0)
    goal: tuple[float, ...] = param((), "migration goal (x, y), m; empty: no migration")
    migration_gain: float = param(0.3, "k_mig, 1/s", ge=0.0)
    goal_radius_m: float = param(10.0, "the flock has reached the goal within this, m", gt=0.0)
    heading_mode: Literal["velocity", "fixed"] = param(
        "velocity", "velocity: nose along the commanded velocity; fixed: keep the start heading"
    )
    behaviour_hz: float = param(10.0, "steering rate per UAV, Hz", gt=0.0, rate=True)
    broadcast_hz: float = param(10.0, "state broadcast rate per UAV, Hz", gt=0.0, rate=True)
    neighbour_timeout_s: float = param(1.0, "forget a neighbour not heard for this long, s", gt=0)
    metrics_hz: float = param(20.0, "rate of the flock metrics, Hz", gt=0.0, rate=True)
    order_threshold: float = param(0.9, "polarisation that counts as ordered", gt=0.0, le=1.0)
    reference: bool = param(
        False, "steer with the per-agent reference (missions/_boids_reference.py), for tests"
    )

    def validate(self, path: str, file: str) -> None:
        if len(self.goal) not in (0, 2):
            raise ConfigError(file, f"{path}.goal", list(self.goal), "[] or [x, y] in m")
        if not self.min_speed_m_s <= self.cruise_speed_m_s <= self.max_speed_m_s:
            raise ConfigError(
                file,
                f"{path}.cruise_speed_m_s",
                self.cruise_speed_m_s,
                f"between min_speed_m_s ({self.min_speed_m_s}) and max_speed_m_s "
                f"({self.max_speed_m_s})",
            )


def flock_metrics(pos: np.ndarray, vel: np.ndarray) -> tuple[float, float, float, float]:
    """Polarisation, mean and max horizontal distance to the centroid (m), minimum separation
    (m, inf for fewer than two) of (N, 3) positions m and velocities m/s."""
    if len(pos) == 0:
        return math.nan, math.nan, math.nan, math.inf
    vh = vel[:, :2]
    unit = vh / np.maximum(np.hypot(vh[:, 0], vh[:, 1]), 1e-9)[:, None]
    polarisation = float(np.hypot(*unit.mean(axis=0)))
    r = np.hypot(*(pos[:, :2] - pos[:, :2].mean(axis=0)).T)
    min_sep = math.inf
    if len(pos) > 1:
        found = closest_pair(pos)  # compiled, the KD-tree's number (None: ask the KD-tree)
        if found is None:
            d, _ = cKDTree(pos).query(pos, k=2)
            found = float(d[:, 1].min())
        min_sep = found
    return polarisation, float(r.mean()), float(r.max()), min_sep


# -- the mission -----------------------------------------------------------------------------
class Boids(Mission):
    description = "Reynolds flocking from state beacons, optional migration goal"
    sections = {"uav": UavSection, "boids": BoidsConfig}
    duration_is_target = True  # flock for the duration: "target reached" if nobody is lost

    def setup(self) -> None:
        cfg: BoidsConfig = self.config.section("boids")
        self.cfg = cfg
        specs = self.config.agents.resolved()
        n = len(specs)
        if cfg.random_headings:
            headings = self.sim.rng.mission.uniform(0.0, 360.0, n)
        else:
            headings = np.array([s.heading_deg for s in specs], dtype=float)
        self.headings = np.asarray(headings, dtype=float).reshape(n)
        self.swarm = Swarm.from_scenario(
            self.sim,
            self.config,
            ReferenceBoidAgent if cfg.reference else None,
            hovering=True,
            altitude_m=cfg.altitude_m,
            yaws=np.asarray(heading_to_yaw(self.headings)).reshape(n),
        )
        start = self.swarm.start_positions
        self.goal = np.array(cfg.goal, dtype=float) if cfg.goal else None
        self.beacons = self.swarm.beacons(
            1.0 / cfg.broadcast_hz, channel="radio", timeout_s=cfg.neighbour_timeout_s
        )
        if cfg.reference:  # one task per agent, same inputs (tests/missions/test_boids_*)
            for k, agent in enumerate(self.swarm.agents):
                agent.start_flocking(cfg, float(self.headings[k]), self.goal, self.beacons)  # type: ignore[attr-defined]
        else:
            self.behaviour = self.swarm.behave(
                1.0 / cfg.behaviour_hz, self.steer, beacons=self.beacons, name="boids.steer"
            )
            yaw = np.asarray(heading_to_yaw(self.headings), dtype=float).reshape(n)
            self.behaviour.memory["v_cmd"] = cfg.min_speed_m_s * np.column_stack(
                [np.cos(yaw), np.sin(yaw)]
            )
        self.polarisation = math.nan
        self.cohesion_m = self.cohesion_max_m = math.nan
        self.min_sep_now_m = self.min_separation_m = math.inf
        self.max_cohesion_m = 0.0
        self.time_to_order_s: float | None = None
        self.time_to_goal_s: float | None = None
        self.centroid = start[:, :2].mean(axis=0) if n else np.zeros(2)
        self.start_centroid = self.centroid.copy()
        self.sim.every(1.0 / cfg.metrics_hz, self._measure, name="boids.metrics")

    def steer(self, g: GroupInputs) -> Commands:
        """The swarm-level behaviour: every alive boid steers from the beacons it heard."""
        cfg = self.cfg
        nb = g.neighbours()
        v_cmd = g.memory["v_cmd"]
        v = v_cmd[g.index]
        a = steering_csr(  # neighbours' positions dead-reckoned to now inside
            g.position[:, :2],
            v,
            g.velocity[:, :2],
            nb.indptr,
            nb.position[:, :2],
            nb.velocity[:, :2],
            nb.age_s,
            cfg,
            self.goal,
        )
        w = advance_all(v, a, g.dt, cfg)
        v_cmd[g.index] = w
        if cfg.heading_mode == "velocity":
            heading = np.asarray(yaw_to_heading(np.arctan2(w[:, 1], w[:, 0])), dtype=float)
        else:
            heading = self.headings[g.index]
        return Commands(velocity=w, altitude=np.full(g.n, cfg.altitude_m), heading_deg=heading)

    def _measure(self) -> None:
        """Flock metrics from the true state of the live UAVs (vectorised)."""
        alive = self.swarm.alive
        if not alive.any():
            return
        state = self.sim.world.state
        pos = state.position[self.swarm.rows][alive]
        vel = state.linear_velocity[self.swarm.rows][alive]
        self.polarisation, self.cohesion_m, self.cohesion_max_m, self.min_sep_now_m = flock_metrics(
            pos, vel
        )
        self.min_separation_m = min(self.min_separation_m, self.min_sep_now_m)
        self.max_cohesion_m = max(self.max_cohesion_m, self.cohesion_m)
        self.centroid = pos[:, :2].mean(axis=0)
        now = self.sim.time_s
        if self.time_to_order_s is None and self.polarisation >= self.cfg.order_threshold:
            self.time_to_order_s = now
        if self.goal is not None and self.time_to_goal_s is None:
            if np.hypot(*(self.centroid - self.goal)) <= self.cfg.goal_radius_m:
                self.time_to_goal_s = now

    @property
    def collisions(self) -> int:
        """UAVs killed by collisions so far."""
        return sum(d.kind == "collision" for d in self.sim.deaths)

    def goal_distance_m(self) -> float:
        """Horizontal distance from the flock centroid to the goal, m (NaN without a goal)."""
        return math.nan if self.goal is None else float(np.hypot(*(self.centroid - self.goal)))

    def sample(self) -> dict[str, float]:
        return {
            "polarisation": self.polarisation,
            "cohesion_radius_m": self.cohesion_m,
            "max_distance_to_centroid_m": self.cohesion_max_m,
            "min_separation_m": self.min_sep_now_m,
            "centroid_x_m": float(self.centroid[0]),
            "centroid_y_m": float(self.centroid[1]),
            "goal_distance_m": self.goal_distance_m(),
            "collisions": self.collisions,
        }

    def metrics(self) -> dict[str, Any]:
        shift = self.centroid - self.start_centroid
        return {
            "polarisation": self.polarisation,
            "time_to_order_s": self.time_to_order_s,
            "cohesion_radius_m": self.cohesion_m,
            "max_cohesion_radius_m": self.max_cohesion_m,
            "min_separation_m": _finite_or_none(self.min_separation_m),
            "collisions": self.collisions,
            "alive": int(self.swarm.alive.sum()),
            "centroid_shift_m": [float(shift[0]), float(shift[1])],
            "goal_distance_m": _finite_or_none(self.goal_distance_m()),
            "time_to_goal_s": self.time_to_goal_s,
        }


def _finite_or_none(x: float) -> float | None:
    """JSON has no NaN or infinity: an undefined figure is reported as None."""
    return x if math.isfinite(x) else None
