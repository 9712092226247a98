"""Boids, one agent at a time: the per-agent reference of the swarm-level boids (missions/boids.py).

`steering` and `advance` are the rule for one boid in plain numpy (unit-tested by hand);
`ReferenceBoidAgent` steers with them from its own row of the same beacon table the swarm-level
behaviour reads, as a per-agent periodic task. tests/missions/test_boids_equivalence.py checks
that both give the same commands for the same inputs and the same flight (`[boids] reference`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.geo import heading_to_yaw, yaw_to_heading
from skyswarm.uav.agents import AutonomousUavAgent

if TYPE_CHECKING:
    from skyswarm.core.comms.beacons import BeaconNet
    from skyswarm.missions.boids import BoidsConfig


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


class ReferenceBoidAgent(AutonomousUavAgent):
    """A boid steered by its own per-agent task from its row of a shared beacon table."""

    def start_flocking(
        self, cfg: BoidsConfig, heading_deg: float, goal: np.ndarray | None, net: BeaconNet
    ) -> None:
        """Initial commanded velocity along `heading_deg` (at min speed); steer every period."""
        self.cfg, self.goal, self.net = cfg, goal, net
        self.dt = 1.0 / cfg.behaviour_hz
        yaw = heading_to_yaw(heading_deg)
        self.v_cmd = cfg.min_speed_m_s * np.array([math.cos(yaw), math.sin(yaw)])
        self.fixed_heading_deg = heading_deg
        self.every(self.dt, self.steer, name="boids.steer")

    def steer(self) -> None:
        """One behaviour step: the neighbours heard, steer, command the quadrotor."""
        table = self.net.table()
        row = table.row(self.index)
        rec, age = table.record[row], table.age_s[row]
        nb_p = rec[:, 0:2] + rec[:, 3:5] * age.reshape(-1, 1)  # dead reckoning to now
        p = self.sensed_position[:2].copy()
        v_meas = self.sensed_velocity[:2].copy()
        a = steering(p, self.v_cmd, nb_p, rec[:, 3:5], self.cfg, self.goal, v_meas)
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
