"""Bumpless mode switching: setpoints and integrators initialised from the current state.

For the agents switching, every setpoint the new mode reads starts at the value the cascade
used at that level last tick (if the old mode drove that level) or at the measured value;
an outer loop newly entered gets a target whose proportional output equals the current rate
(so it takes over smoothly and then brings the agent to rest); the speed integrators of a newly
entered velocity stage start at the acceleration the current attitude target implies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from skyswarm.uav.control import (
    ALT,
    ATT,
    HDG,
    MOT,
    POS,
    RATES,
    USES,
    VEL,
    WORLD,
    ControlMode,
    Measured,
    mode_index,
)

if TYPE_CHECKING:
    from skyswarm.uav.swarm import Swarm


def enter_mode(swarm: Swarm, idx: np.ndarray, mode: ControlMode, m: Measured) -> None:
    """Switch agents `idx` ((k,) indices) to `mode`; `m` holds everyone's measurements."""
    sp, cas = swarm.setpoints, swarm.cascade
    old = USES[sp.mode[idx]]  # (k, stages)
    new = USES[mode_index(mode)]
    fresh = ~old & new  # stages the agents enter now
    pos, vel = m.position[idx], m.velocity[idx]
    roll, pitch, yaw = m.euler[idx, 0], m.euler[idx, 1], m.euler[idx, 2]
    r = m.body_rate[idx, 2]
    cos, sin = np.cos(yaw), np.sin(yaw)
    v_h = np.stack(
        [cos * vel[:, 0] + sin * vel[:, 1], cos * vel[:, 1] - sin * vel[:, 0], vel[:, 2]], 1
    )

    # Entry-level setpoints: what the cascade used last tick, or what is measured.
    had_vel, had_att = old[:, VEL : VEL + 1], old[:, ATT : ATT + 1]
    sp.velocity[idx] = np.where(had_vel, cas.velocity_target[idx], v_h)
    measured_att = np.stack([roll, pitch, r], axis=1)
    sp.attitude[idx] = np.where(had_att, cas.attitude_target[idx], measured_att)
    demand = cas.demand[idx]
    sp.thrust[idx] = demand[:, 0]
    sp.manual[idx] = np.clip(demand / cas.manual_scale, [0, -1, -1, -1], 1)
    sp.yaw_hold[idx] = 0  # Attitude enters on the yaw rate it measures (command_attitude sets 1)
    _enter_new_levels(swarm, idx, old, new, m, cos, sin)

    # Outer loops entered now: P output equals the current rate, integral empty.
    kp = cas.outer.kp
    xy = fresh[:, POS]
    sp.position[idx[xy]] = pos[xy, :2] + vel[xy, :2] / max(kp[0], 1e-9)
    alt = fresh[:, ALT]
    sp.altitude[idx[alt]] = pos[alt, 2] + vel[alt, 2] / max(kp[2], 1e-9)
    hdg = fresh[:, HDG]
    sp.yaw[idx[hdg]] = yaw[hdg] + r[hdg] / max(kp[3], 1e-9)
    integral = cas.outer.integral
    integral[idx[xy], :2] = 0.0
    integral[idx[alt], 2] = 0.0
    integral[idx[hdg], 3] = 0.0

    # Speed loops entered now: integral = the acceleration the attitude target implies.
    v_new = fresh[:, VEL]
    if v_new.any():
        accel = np.where(had_att, _implied_accel(swarm, idx, m), 0.0)
        cas.speed.reset(idx[v_new], accel[v_new])
        cas.prev_speed[idx[v_new]] = v_h[v_new]
    a_new = fresh[:, ATT]
    if a_new.any():
        cas.attitude.reset(idx[a_new], 0.0)
        cas.prev_r[idx[a_new]] = r[a_new]
    sp.mode[idx] = mode_index(mode)


def _implied_accel(swarm: Swarm, idx: np.ndarray, m: Measured) -> np.ndarray:
    """(k, 3) heading-frame acceleration m/s^2 that gives the last roll/pitch target and
    collective (the inverse of the cascade's tilt step)."""
    cas = swarm.cascade
    roll, pitch = cas.attitude_target[idx, 0], cas.attitude_target[idx, 1]
    up = np.maximum(m.up_z[idx], cas.min_up)
    vert = cas.demand[idx, 0] * up / cas.mass
    ax = vert * np.tan(pitch)
    ay = -np.tan(roll) * np.hypot(ax, vert)
    return np.stack([ax, ay, vert - cas.g], axis=1)


def _enter_new_levels(
    swarm: Swarm,
    idx: np.ndarray,
    old: np.ndarray,
    new: np.ndarray,
    m: Measured,
    cos: np.ndarray,
    sin: np.ndarray,
) -> None:
    """Setpoints of the command levels below the cascade (uav/commands.py): a world-frame
    velocity starts at the heading-frame one turned by the yaw; body rates at the measured
    ones (the rate loops' integrals empty, as their memory is the attitude loops'); motor
    commands at the thrusts the motors give now."""
    sp, cas = swarm.setpoints, swarm.cascade
    if new[WORLD]:
        vh = sp.velocity[idx]
        sp.velocity[idx, 0] = cos * vh[:, 0] - sin * vh[:, 1]
        sp.velocity[idx, 1] = sin * vh[:, 0] + cos * vh[:, 1]
    sp.rates[idx] = m.body_rate[idx]
    switched = old[:, RATES] != new[RATES]  # angle loops <-> rate loops: other integrals
    cas.attitude.integral[idx[switched], :2] = 0.0
    cas.prev_pq[idx] = m.body_rate[idx, :2]
    if new[MOT]:
        sp.motors[idx] = swarm.motors.thrust[idx]
