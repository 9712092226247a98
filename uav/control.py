"""Control modes, the cascade's configuration, and its per-agent state for a swarm.

The cascade has five stages, outermost first:

    position (x, y -> horizontal velocity)  altitude (z -> vertical speed)  heading (-> yaw rate)
    velocity (heading-frame vx, vy, vz -> acceleration -> roll/pitch targets and collective)
    attitude (roll, pitch angles and yaw rate -> angular accelerations -> torques) -> mixer

A mode is an object naming the stages it uses; where it enters, the cascade reads that
mode's setpoints instead of the stage above. The stages run in uav/kernel.py (compiled, the
mode picking per agent which stages run and which output feeds the next stage) and in
uav/reference.py (one agent). This module holds what they share: the modes, the gains and
limits, and the per-agent setpoints and controller memory as record arrays whose named fields
are views (`Setpoints.altitude` is a column of `Setpoints.records`). Integrators of stages an
agent does not use are re-initialised when it enters them, so their idle values never matter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import param
from skyswarm.uav.model import Airframe
from skyswarm.uav.pid import Pid, PidGains

# The five cascade stages, then three switches a mode may set: `rates` (the attitude stage runs
# body-rate loops on p, q, r instead of angle loops), `motors` (per-motor commands replace the
# mixer's output), `world` (the velocity setpoint is world-frame ENU, turned into the heading
# frame with the sensed yaw on every tick).
STAGES = ("position", "altitude", "heading", "velocity", "attitude", "rates", "motors", "world")
POS, ALT, HDG, VEL, ATT, RATES, MOT, WORLD = range(len(STAGES))  # columns of USES


@dataclass(frozen=True)
class ControlConfig:
    """Limits and the gains of every loop (the [control] section of an airframe file)."""

    position: PidGains = param(doc="x, y error m -> velocity m/s")
    altitude: PidGains = param(doc="altitude error m -> vertical speed m/s")
    heading: PidGains = param(doc="heading error rad -> yaw rate rad/s")
    ground_speed: PidGains = param(doc="heading-frame vx, vy error m/s -> acceleration m/s^2")
    vertical_speed: PidGains = param(
        doc="vz error m/s -> acceleration m/s^2 (any limit: the flight kernel keeps the"
        " vertical acceleration above -0.9 g of the world, so the thrust always points up)"
    )
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
    body_rate: PidGains = param(
        PidGains(kp=25.0, ki=5.0, kd=0.0, i_limit=10.0, out_limit=120.0),
        "BodyRates mode: roll, pitch rate error rad/s -> angular acceleration rad/s^2 "
        "(yaw uses yaw_rate)",
    )
    max_body_rate_deg_s: float = param(
        360.0, "roll and pitch rate a BodyRates command may ask for, deg/s", gt=0.0
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
    "Attitude",
    frozenset({"attitude"}),
    "roll, pitch (rad), yaw rate (rad/s) or yaw (rad) with yaw_hold, collective (N)",
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
VELOCITY = ControlMode(
    "Velocity", _INNER | {"world"}, "vx, vy, vz world frame ENU (m/s), yaw rate (rad/s)"
)
VELOCITY_AND_HEADING = ControlMode(
    "VelocityAndHeading", _INNER | {"world", "heading"}, "vx, vy, vz world ENU (m/s), yaw (rad)"
)
BODY_RATES = ControlMode(
    "BodyRates", frozenset({"attitude", "rates"}), "body rates p, q, r (rad/s), collective (N)"
)
MOTORS = ControlMode("Motors", frozenset({"motors"}), "four motor thrust commands (N)")
# New modes go at the end: a mode's index is what the kernel, the recorder and replay store.
MODES: tuple[ControlMode, ...] = (
    MANUAL,
    ATTITUDE,
    GROUND_SPEED_AND_VERT_SPEED,
    GROUND_SPEED_AND_ALTITUDE,
    GROUND_SPEED_ALTITUDE_AND_HEADING,
    POSITION,
    VELOCITY,
    VELOCITY_AND_HEADING,
    BODY_RATES,
    MOTORS,
)
# (modes, stages) table: row m says which stages MODES[m] uses; indexed by the mode array.
USES = np.array([[m.uses(s) for s in STAGES] for m in MODES], dtype=bool)


def mode_index(mode: ControlMode) -> int:
    return MODES.index(mode)


# One record per agent: the setpoints of every mode's entry level (Setpoints.records).
SETPOINT = np.dtype(
    [
        ("mode", np.intp),  # index into MODES
        ("position", "f8", (2,)),  # m, world x, y
        ("altitude", "f8"),  # m
        ("yaw", "f8"),  # rad, ENU
        ("velocity", "f8", (3,)),  # m/s: vx, vy heading frame, vz up
        ("attitude", "f8", (3,)),  # roll, pitch rad; yaw rate rad/s
        ("thrust", "f8"),  # N, collective
        ("manual", "f8", (4,)),  # throttle 0..1, roll, pitch, yaw -1..1
        ("yaw_hold", "u1"),  # Attitude: 1 = hold the yaw angle `yaw` instead of a yaw rate
        ("rates", "f8", (3,)),  # BodyRates: p, q, r rad/s, body frame
        ("motors", "f8", (4,)),  # Motors: thrust command of each motor, N
    ]
)

# One record per agent: what the cascade remembers between ticks (Cascade.memory).
MEMORY = np.dtype(
    [
        ("outer_i", "f8", (4,)),  # integrals of the x, y, altitude, heading loops (m/s, rad/s)
        ("speed_i", "f8", (3,)),  # integrals of the vx, vy, vz loops, m/s^2
        ("attitude_i", "f8", (3,)),  # integrals of the roll, pitch, yaw-rate loops, rad/s^2
        ("prev_speed", "f8", (3,)),  # last measured heading-frame velocity, m/s
        ("prev_r", "f8"),  # last measured yaw rate, rad/s
        # Signals of the last tick, read when an agent switches mode (bumpless transfer):
        ("velocity_target", "f8", (3,)),  # heading-frame m/s
        ("attitude_target", "f8", (3,)),  # roll, pitch rad, yaw rate rad/s
        ("demand", "f8", (4,)),  # collective N, torque x, y, z N m
        ("yaw_rate_command", "f8"),  # rad/s, the heading loop's output
        ("prev_pq", "f8", (2,)),  # last measured roll and pitch rates p, q, rad/s
    ]
)


class Setpoints:
    """Per-agent setpoints of every mode's entry level: `records` (N,) of SETPOINT, and one
    attribute per field, a writable view into it (`position` (N, 2), `altitude` (N,), ...)."""

    def __init__(self, n: int) -> None:
        self.records = np.zeros(n, SETPOINT)  # read by uav.kernel each tick
        self.mode = self.records["mode"]  # (N,) index into MODES
        self.position = self.records["position"]  # (N, 2) m
        self.altitude = self.records["altitude"]  # (N,) m
        self.yaw = self.records["yaw"]  # (N,) rad
        self.velocity = self.records["velocity"]  # (N, 3) m/s
        self.attitude = self.records["attitude"]  # (N, 3) rad, rad, rad/s
        self.yaw_hold = self.records["yaw_hold"]  # (N,) 1: Attitude holds `yaw` (heading loop)
        self.thrust = self.records["thrust"]  # (N,) N
        self.manual = self.records["manual"]  # (N, 4) sticks
        self.rates = self.records["rates"]  # (N, 3) rad/s body rates (BodyRates)
        self.motors = self.records["motors"]  # (N, 4) N per motor (Motors)


@dataclass
class Measured:
    """What bumpless switching needs from the state arrays, all (N, ...) and SI."""

    position: np.ndarray  # (N, 3) m
    velocity: np.ndarray  # (N, 3) m/s world
    euler: np.ndarray  # (N, 3) roll, pitch, yaw rad
    body_rate: np.ndarray  # (N, 3) p, q, r rad/s
    up_z: np.ndarray  # (N,) world z of the body z axis (cos of the tilt)


class Cascade:
    """The cascade of N agents: its constants (from the airframe and [control]) and its memory
    `memory` (N,) of MEMORY, updated in place by uav.kernel; the loops' integrals
    (`outer.integral` ...) and the last tick's signals (`demand` ...) are views into it."""

    def __init__(
        self, airframe: Airframe, cfg: ControlConfig, n: int, dt: float, g: float = 9.81
    ) -> None:
        """`g` m/s^2: the world's gravity (the speed loops feed forward m g / cos tilt)."""
        self.dt, self.g = dt, g  # s, m/s^2
        self.mass = airframe.mass_kg
        self.inertia = np.asarray(airframe.inertia_kg_m2, dtype=float)  # (3,) kg m^2
        self.memory = np.zeros(n, MEMORY)
        m = self.memory
        self.retune(cfg, airframe)
        self.manual_scale = np.array([4 * airframe.max_thrust_n, *cfg.manual_torque_nm])  # (4,)
        self.prev_speed = m["prev_speed"]  # (N, 3) m/s
        self.prev_r = m["prev_r"]  # (N,) rad/s
        self.velocity_target = m["velocity_target"]  # (N, 3) m/s
        self.attitude_target = m["attitude_target"]  # (N, 3)
        self.demand = m["demand"]  # (N, 4)
        self.yaw_rate_command = m["yaw_rate_command"]  # (N,) rad/s
        self.prev_pq = m["prev_pq"]  # (N, 2) rad/s

    def retune(self, cfg: ControlConfig, airframe: Airframe) -> None:
        """Gains and limits from `cfg` (the loops' integrals are kept). The compiled kernel
        reads them from its packed constants: `Swarm.retune` re-packs them."""
        self.cfg, dt, m = cfg, self.dt, self.memory
        self.outer = Pid([cfg.position, cfg.position, cfg.altitude, cfg.heading], m["outer_i"], dt)
        self.speed = Pid([cfg.ground_speed] * 2 + [cfg.vertical_speed], m["speed_i"], dt)
        self.attitude = Pid([cfg.attitude] * 2 + [cfg.yaw_rate], m["attitude_i"], dt)
        # BodyRates: rate loops on p, q (and r, the yaw-rate loop), integrating into the same
        # memory as the attitude loops (reset when an agent enters or leaves BodyRates).
        self.rate = Pid([cfg.body_rate] * 2 + [cfg.yaw_rate], m["attitude_i"], dt)
        yaw_rate = math.radians(cfg.max_yaw_rate_deg_s)
        self.outer_hi = np.array([np.inf, np.inf, cfg.max_climb_m_s, yaw_rate])  # (4,)
        self.outer_lo = np.array([-np.inf, -np.inf, -cfg.max_descent_m_s, -yaw_rate])
        self.tan_tilt = math.tan(math.radians(cfg.max_tilt_deg))
        self.min_up = math.cos(math.radians(airframe.max_tilt_deg))
