"""Control modes and the cascade that links them, vectorised over every UAV of a swarm.

The cascade has five stages, outermost first:

    position (x, y -> horizontal velocity)  altitude (z -> vertical speed)  heading (-> yaw rate)
    velocity (heading-frame vx, vy, vz -> acceleration -> roll/pitch targets and collective)
    attitude (roll, pitch angles and yaw rate -> angular accelerations -> torques) -> mixer

A mode is an object naming the stages it uses; where it enters, the cascade reads that
mode's setpoints instead of the stage above. Every tick computes every stage for every agent
in one pass and picks per agent with masks (no per-agent branches). Integrators of stages an
agent does not use are re-initialised when it enters them, so their idle values never matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.model import Airframe
from skyswarm.uav.pid import Pid, PidGains

STAGES = ("position", "altitude", "heading", "velocity", "attitude")


@dataclass(frozen=True)
class ControlConfig:
    """Limits and the gains of every loop (the [control] section of an airframe file)."""

    position: PidGains = param(doc="x, y error m -> velocity m/s")
    altitude: PidGains = param(doc="altitude error m -> vertical speed m/s")
    heading: PidGains = param(doc="heading error rad -> yaw rate rad/s")
    ground_speed: PidGains = param(doc="heading-frame vx, vy error m/s -> acceleration m/s^2")
    vertical_speed: PidGains = param(doc="vz error m/s -> acceleration m/s^2")
    attitude: PidGains = param(doc="roll, pitch error rad -> angular acceleration rad/s^2")
    yaw_rate: PidGains = param(doc="yaw-rate error rad/s -> angular acceleration rad/s^2")
    max_tilt_deg: float = param(30.0, "tilt the speed loops may command, deg", gt=0.0, lt=90.0)
    max_speed_m_s: float = param(8.0, "horizontal speed the position loop may command, m/s", gt=0)
    max_climb_m_s: float = param(4.0, "climb rate the altitude loop may command, m/s", gt=0.0)
    max_descent_m_s: float = param(2.5, "descent rate the altitude loop may command, m/s", gt=0)
    max_yaw_rate_deg_s: float = param(120.0, "yaw rate the heading loop may command, deg/s", gt=0)
    manual_torque_nm: tuple[float, float, float] = param(
        (0.5, 0.5, 0.1), "manual full-stick torque about body x, y, z, N m", gt=0.0
    )
    land_speed_m_s: float = param(0.5, "descent speed of land(), m/s", gt=0.0)

    def validate(self, path: str, file: str) -> None:
        if self.vertical_speed.out_limit >= 9.81:
            raise ConfigError(
                file,
                f"{path}.vertical_speed.out_limit",
                self.vertical_speed.out_limit,
                "less than g (9.81 m/s^2) so that the thrust vector always points up",
            )


@dataclass(frozen=True, eq=False)
class ControlMode:
    """A control mode: the cascade stages it uses and the setpoints it reads."""

    name: str
    stages: frozenset[str]
    inputs: str

    def uses(self, stage: str) -> bool:
        return stage in self.stages

    def __repr__(self) -> str:
        return f"<ControlMode {self.name}>"


_INNER = frozenset({"velocity", "attitude"})
MANUAL = ControlMode("Manual", frozenset(), "throttle 0..1, roll, pitch, yaw -1..1 to the mixer")
ATTITUDE = ControlMode(
    "Attitude", frozenset({"attitude"}), "roll, pitch (rad), yaw rate (rad/s), collective (N)"
)
GROUND_SPEED_AND_VERT_SPEED = ControlMode(
    "GroundSpeedAndVertSpeed", _INNER, "vx, vy (heading frame), vz (m/s), yaw rate (rad/s)"
)
GROUND_SPEED_AND_ALTITUDE = ControlMode(
    "GroundSpeedAndAltitude", _INNER | {"altitude"}, "vx, vy (m/s), altitude (m), yaw rate"
)
GROUND_SPEED_ALTITUDE_AND_HEADING = ControlMode(
    "GroundSpeedAltitudeAndHeading",
    _INNER | {"altitude", "heading"},
    "vx, vy (m/s), altitude (m), yaw (rad ENU)",
)
POSITION = ControlMode(
    "Position", _INNER | {"position", "altitude", "heading"}, "x, y (m), altitude (m), yaw (rad)"
)
MODES: tuple[ControlMode, ...] = (
    MANUAL,
    ATTITUDE,
    GROUND_SPEED_AND_VERT_SPEED,
    GROUND_SPEED_AND_ALTITUDE,
    GROUND_SPEED_ALTITUDE_AND_HEADING,
    POSITION,
)
# (modes, stages) table: row m says which stages MODES[m] uses; indexed by the mode array.
USES = np.array([[m.uses(s) for s in STAGES] for m in MODES], dtype=bool)


def mode_index(mode: ControlMode) -> int:
    return MODES.index(mode)


class Setpoints:
    """Per-agent setpoints of every mode's entry level, (N, ...) arrays."""

    def __init__(self, n: int) -> None:
        self.mode = np.zeros(n, dtype=np.intp)  # index into MODES
        self.position = np.zeros((n, 2))  # m, world x, y
        self.altitude = np.zeros(n)  # m
        self.yaw = np.zeros(n)  # rad, ENU
        self.velocity = np.zeros((n, 3))  # m/s: vx, vy heading frame, vz up
        self.attitude = np.zeros((n, 3))  # roll, pitch rad; yaw rate rad/s
        self.thrust = np.zeros(n)  # N, collective
        self.manual = np.zeros((n, 4))  # throttle 0..1, roll, pitch, yaw -1..1
        self.refresh_masks()

    def refresh_masks(self) -> None:
        """Rebuild the per-agent selection masks after a mode change."""
        uses = USES[self.mode]
        pos, alt, hdg, vel, att = (uses[:, i] for i in range(len(STAGES)))
        self.outer_drives_velocity = np.stack([pos, pos, alt], axis=1)  # (N, 3)
        self.velocity_drives_attitude = np.stack([vel, vel, hdg], axis=1)  # (N, 3)
        self.velocity_drives_thrust = vel.copy()  # (N,), contiguous for uav.kernel
        self.manual_mask = ~att[:, None]  # (N, 1)


@dataclass
class Measured:
    """What the cascade needs from the state arrays, all (N, ...) and SI."""

    position: np.ndarray  # (N, 3) m
    velocity: np.ndarray  # (N, 3) m/s world
    euler: np.ndarray  # (N, 3) roll, pitch, yaw rad
    body_rate: np.ndarray  # (N, 3) p, q, r rad/s
    up_z: np.ndarray  # (N,) world z of the body z axis (cos of the tilt)


class Cascade:
    """All stages for N agents: setpoints + measurements -> (N, 4) mixer demands."""

    def __init__(self, airframe: Airframe, cfg: ControlConfig, n: int, dt: float) -> None:
        self.cfg, self.dt, self.g = cfg, dt, 9.81
        self.mass = airframe.mass_kg
        self.inertia = np.asarray(airframe.inertia_kg_m2, dtype=float)
        self.outer = Pid([cfg.position, cfg.position, cfg.altitude, cfg.heading], n, dt)
        self.speed = Pid([cfg.ground_speed] * 2 + [cfg.vertical_speed], n, dt)
        self.attitude = Pid([cfg.attitude] * 2 + [cfg.yaw_rate], n, dt)
        yaw_rate = math.radians(cfg.max_yaw_rate_deg_s)
        self.outer_hi = np.array([np.inf, np.inf, cfg.max_climb_m_s, yaw_rate])
        self.outer_lo = np.array([-np.inf, -np.inf, -cfg.max_descent_m_s, -yaw_rate])
        self.tan_tilt = math.tan(math.radians(cfg.max_tilt_deg))
        self.min_up = math.cos(math.radians(airframe.max_tilt_deg))
        self.manual_scale = np.array([4 * airframe.max_thrust_n, *cfg.manual_torque_nm])
        self.prev_speed = np.zeros((n, 3))  # last measured heading-frame velocity
        self.prev_r = np.zeros(n)  # last measured yaw rate
        # Signals of the last tick, read when an agent switches mode (bumpless transfer).
        self.velocity_target = np.zeros((n, 3))
        self.attitude_target = np.zeros((n, 3))
        self.demand = np.zeros((n, 4))
        self.yaw_rate_command = np.zeros(n)  # rad/s, the heading loop's output

    def compute(self, sp: Setpoints, m: Measured) -> np.ndarray:
        """One tick of every stage; returns (N, 4) [collective N, torque x, y, z N m]."""
        yaw = m.euler[:, 2]
        cos, sin = np.cos(yaw), np.sin(yaw)
        vel_target = self._outer(sp, m, cos, sin)
        vx, vy = m.velocity[:, 0], m.velocity[:, 1]
        v_h = np.empty((len(yaw), 3))
        v_h[:, 0] = cos * vx + sin * vy
        v_h[:, 1] = cos * vy - sin * vx
        v_h[:, 2] = m.velocity[:, 2]
        accel = self.speed.update(vel_target - v_h, (v_h - self.prev_speed) / self.dt)
        self.prev_speed = v_h
        tilt_targets, collective = self._tilt(accel, m.up_z)
        att_target = np.where(sp.velocity_drives_attitude, tilt_targets, sp.attitude)
        r = m.body_rate[:, 2]
        rate = m.body_rate.copy()
        rate[:, 2] = (r - self.prev_r) / self.dt
        self.prev_r = r
        measured = m.euler.copy()
        measured[:, 2] = r
        error = att_target - measured
        torque = self.inertia * self.attitude.update(error, rate)
        demand = np.empty((len(yaw), 4))
        demand[:, 0] = np.where(sp.velocity_drives_thrust, collective, sp.thrust)
        demand[:, 1:] = torque
        demand = np.where(sp.manual_mask, sp.manual * self.manual_scale, demand)
        self.velocity_target, self.attitude_target, self.demand = vel_target, att_target, demand
        return demand

    def _outer(self, sp: Setpoints, m: Measured, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
        """Position, altitude and heading loops -> (N, 3) heading-frame velocity targets."""
        n = len(cos)
        error = np.empty((n, 4))
        error[:, :2] = sp.position - m.position[:, :2]
        error[:, 2] = sp.altitude - m.position[:, 2]
        error[:, 3] = (sp.yaw - m.euler[:, 2] + math.pi) % (2 * math.pi) - math.pi
        rate = np.empty((n, 4))
        rate[:, :3] = m.velocity
        rate[:, 3] = m.body_rate[:, 2]
        out = np.minimum(np.maximum(self.outer.update(error, rate), self.outer_lo), self.outer_hi)
        wx, wy = out[:, 0], out[:, 1]
        scale = np.minimum(1.0, self.cfg.max_speed_m_s / np.maximum(np.hypot(wx, wy), 1e-12))
        self.yaw_rate_command = out[:, 3]
        target = np.empty((n, 3))
        target[:, 0] = (cos * wx + sin * wy) * scale
        target[:, 1] = (cos * wy - sin * wx) * scale
        target[:, 2] = out[:, 2]
        return np.where(sp.outer_drives_velocity, target, sp.velocity)

    def _tilt(self, accel: np.ndarray, up_z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) heading-frame accelerations -> (N, 3) [roll, pitch, yaw-rate] targets (the
        heading loop's yaw rate) and (N,) collective thrust N, tilt limited."""
        vert = self.g + accel[:, 2]
        ax, ay = accel[:, 0], accel[:, 1]
        limit = vert * self.tan_tilt
        scale = np.minimum(1.0, limit / np.maximum(np.hypot(ax, ay), 1e-12))
        ax, ay = ax * scale, ay * scale
        out = np.empty((len(vert), 3))
        out[:, 0] = np.arctan2(-ay, np.hypot(ax, vert))
        out[:, 1] = np.arctan2(ax, vert)
        out[:, 2] = self.yaw_rate_command
        collective = self.mass * vert / np.maximum(up_z, self.min_up)
        return out, collective
