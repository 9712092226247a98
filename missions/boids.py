"""Boids: Reynolds flocking (separation, alignment, cohesion) from broadcast states only.

Every UAV broadcasts what it senses of itself (position, velocity) on the radio at
`broadcast_hz` and keeps the latest state heard from each neighbour. At `behaviour_hz` it steers
from that table alone; no agent ever reads another agent's true state from the simulator, so
with the radio cut the flock does not form. The steering acceleration (m/s^2, horizontal) is

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

from skyswarm.core.comms import Message
from skyswarm.core.geo import heading_to_yaw, yaw_to_heading
from skyswarm.core.mission import Mission
from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.agents import AutonomousUavAgent
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm


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


# -- the steering rule (pure functions, unit-tested) ----------------------------------------
def steering(
    p: np.ndarray,
    v: np.ndarray,
    nb_p: np.ndarray,
    nb_v: np.ndarray,
    cfg: BoidsConfig,
    goal: np.ndarray | None = None,
    v_meas: np.ndarray | None = None,
) -> np.ndarray:
    """(2,) steering acceleration, m/s^2, capped at `cfg.max_accel_m_s2`.

    `p`, `v`: (2,) own position m and (commanded) velocity m/s; `nb_p`, `nb_v`: (K, 2)
    neighbours' positions and velocities as heard; `goal`: (2,) m or None; `v_meas`: (2,) own
    measured velocity m/s for the collision prediction (default `v`).
    """
    a_sep, a_rest = np.zeros(2), np.zeros(2)
    speed = math.hypot(v[0], v[1])
    if speed > 1e-9:
        a_rest += cfg.speed_gain * (cfg.cruise_speed_m_s - speed) * v / speed
    if goal is not None:
        to_goal = goal - p
        dist = math.hypot(to_goal[0], to_goal[1])
        if dist > 1e-9:
            a_rest += cfg.migration_gain * (cfg.cruise_speed_m_s * to_goal / dist - v)
    if len(nb_p):
        offset = p - nb_p  # (K, 2) from each neighbour to me
        d = np.hypot(offset[:, 0], offset[:, 1])
        near = d < cfg.perception_radius_m
        if cfg.max_neighbours and near.sum() > cfg.max_neighbours:
            near &= d <= np.partition(d[near], cfg.max_neighbours - 1)[cfg.max_neighbours - 1]
        offset, d, nv = offset[near], d[near], nb_v[near]
        if len(d):
            gap = _closest_approach(offset, (v if v_meas is None else v_meas) - nv, cfg)
            dg = np.hypot(gap[:, 0], gap[:, 1])
            close = dg < cfg.separation_radius_m
            dc = np.maximum(dg[close], 1e-3)
            push = (cfg.separation_radius_m / dc - 1.0) / dc  # unit vector scaled by the weight
            a_sep = cfg.separation_gain * (push[:, None] * gap[close]).sum(axis=0)
            a_rest += cfg.alignment_gain * (nv.mean(axis=0) - v)
            a_rest += cfg.cohesion_gain * (-offset.mean(axis=0))  # centroid - p
    # Prioritised allocation (Reynolds 1987): avoiding collisions takes the acceleration budget
    # first, the other urges share what is left.
    a_sep = _capped(a_sep, cfg.max_accel_m_s2)
    budget = cfg.max_accel_m_s2 - math.hypot(a_sep[0], a_sep[1])
    return a_sep + _capped(a_rest, budget)


def _closest_approach(offset: np.ndarray, rel_v: np.ndarray, cfg: BoidsConfig) -> np.ndarray:
    """(K, 2) offsets m from each neighbour to me at our closest approach within the next
    `lookahead_s` s, flying straight at relative velocity `rel_v` (K, 2) m/s (now, if we part).

    Reynolds' unaligned collision avoidance: a quadrotor needs about half a second to change its
    velocity, so separation must act on where the pair is heading, not only where it is.
    """
    rel_v = np.broadcast_to(rel_v, offset.shape)
    closing = -np.einsum("ij,ij->i", offset, rel_v)
    t = np.clip(closing / np.maximum(np.einsum("ij,ij->i", rel_v, rel_v), 1e-9), 0.0, None)
    return offset + rel_v * np.minimum(t, cfg.lookahead_s)[:, None]


def _capped(a: np.ndarray, limit: float) -> np.ndarray:
    """`a` (2,) scaled down to a norm of at most `limit` (>= 0)."""
    norm = math.hypot(a[0], a[1])
    return a * (max(limit, 0.0) / norm) if norm > limit else a


def advance(v: np.ndarray, a: np.ndarray, dt: float, cfg: BoidsConfig) -> np.ndarray:
    """(2,) commanded velocity after `dt` s of acceleration `a`, speed within the limits, m/s."""
    w = v + a * dt
    speed = math.hypot(w[0], w[1])
    if speed < 1e-9:  # keep the old direction rather than stopping dead
        w, speed = v, max(math.hypot(v[0], v[1]), 1e-9)
    lo, hi = cfg.min_speed_m_s, cfg.max_speed_m_s
    return w * (min(max(speed, lo), hi) / speed)


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
        d, _ = cKDTree(pos).query(pos, k=2)
        min_sep = float(d[:, 1].min())
    return polarisation, float(r.mean()), float(r.max()), min_sep


# -- the agent -------------------------------------------------------------------------------
class BoidAgent(AutonomousUavAgent):
    """A UAV that flocks from the states its neighbours broadcast (and its own sensing)."""

    def start_flocking(
        self, cfg: BoidsConfig, heading_deg: float, goal: np.ndarray | None, phase_s: float
    ) -> None:
        """Set the initial commanded velocity along `heading_deg` and start the periodic tasks."""
        self.cfg, self.goal = cfg, goal
        self.dt = 1.0 / cfg.behaviour_hz
        yaw = heading_to_yaw(heading_deg)
        self.v_cmd = cfg.min_speed_m_s * np.array([math.cos(yaw), math.sin(yaw)])
        self.fixed_heading_deg = heading_deg
        self.heard: dict[int, tuple[int, np.ndarray]] = {}  # id -> (send tick, x y vx vy)
        self.timeout_ticks = round(cfg.neighbour_timeout_s / self.sim.world.tick_s)
        self.every(1.0 / cfg.broadcast_hz, self.broadcast_state, phase_s, name="boids.broadcast")
        self.every(self.dt, self.steer, phase_s, name="boids.steer")

    def broadcast_state(self) -> None:
        """Broadcast (x, y, z, vx, vy, vz), m and m/s, as sensed by this UAV."""
        p, v = self.sensed_position, self.sensed_velocity
        self.transceiver.broadcast((*p.tolist(), *v.tolist()), "radio")

    def listen(self) -> None:
        """Merge received states into the neighbour table; forget those gone silent."""
        msg: Message
        for msg in self.transceiver.receive("radio"):
            old = self.heard.get(msg.sender)
            if old is None or old[0] < msg.send_tick:
                x, y, _, vx, vy, _ = msg.payload
                self.heard[msg.sender] = (msg.send_tick, np.array([x, y, vx, vy]))
        oldest = self.sim.tick - self.timeout_ticks
        for sender in [s for s, (t, _) in self.heard.items() if t < oldest]:
            del self.heard[sender]

    def steer(self) -> None:
        """One behaviour step: listen, steer, command the quadrotor."""
        self.listen()
        heard = list(self.heard.values())
        table = np.array([s for _, s in heard]).reshape(-1, 4)
        age_s = (self.sim.tick - np.array([t for t, _ in heard])) * self.sim.world.tick_s
        nb_p = table[:, :2] + table[:, 2:] * age_s.reshape(-1, 1)  # dead reckoning to now
        p = self.sensed_position[:2].copy()
        v_meas = self.sensed_velocity[:2].copy()
        a = steering(p, self.v_cmd, nb_p, table[:, 2:], self.cfg, self.goal, v_meas)
        self.v_cmd = advance(self.v_cmd, a, self.dt, self.cfg)
        self._command(self.v_cmd)

    def _command(self, w: np.ndarray) -> None:
        """Fly world-frame horizontal velocity `w` (2,) m/s at the mission altitude."""
        yaw = self.sensed_yaw  # measured
        c, s = math.cos(yaw), math.sin(yaw)
        vx, vy = c * w[0] + s * w[1], c * w[1] - s * w[0]  # heading frame
        if self.cfg.heading_mode == "velocity":
            heading = float(yaw_to_heading(math.atan2(w[1], w[0])))
        else:
            heading = self.fixed_heading_deg
        self.fly(vx, vy, self.cfg.altitude_m, heading)


# -- the mission -----------------------------------------------------------------------------
class Boids(Mission):
    description = "Reynolds flocking from broadcast neighbour states, optional migration goal"
    sections = {"uav": UavSection, "boids": BoidsConfig}

    def setup(self) -> None:
        cfg: BoidsConfig = self.config.section("boids")
        self.cfg = cfg
        tick_s = self.sim.world.tick_s  # the rates are whole ticks: checked at validation
        specs = self.config.agents.resolved()
        n = len(specs)
        if cfg.random_headings:
            headings = self.sim.rng.mission.uniform(0.0, 360.0, n)
        else:
            headings = np.array([s.heading_deg for s in specs], dtype=float)
        self.swarm = Swarm.from_scenario(
            self.sim,
            self.config,
            BoidAgent,
            hovering=True,
            altitude_m=cfg.altitude_m,
            yaws=np.asarray(heading_to_yaw(headings)).reshape(n),
        )
        start = self.swarm.start_positions
        self.goal = np.array(cfg.goal, dtype=float) if cfg.goal else None
        period_ticks = self.sim.world.ticks_for(1.0 / cfg.behaviour_hz, "boids.behaviour_hz")
        for k, agent in enumerate(self.swarm.agents):
            phase_s = ((k * period_ticks) // max(n, 1)) * tick_s  # spread the load over a period
            agent.start_flocking(cfg, float(headings[k]), self.goal, phase_s)  # type: ignore[attr-defined]
        self.polarisation = math.nan
        self.cohesion_m = self.cohesion_max_m = math.nan
        self.min_sep_now_m = self.min_separation_m = math.inf
        self.max_cohesion_m = 0.0
        self.time_to_order_s: float | None = None
        self.time_to_goal_s: float | None = None
        self.centroid = start[:, :2].mean(axis=0) if n else np.zeros(2)
        self.start_centroid = self.centroid.copy()
        self.sim.every(1.0 / cfg.metrics_hz, self._measure, name="boids.metrics")

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
