"""Plain one-agent reference of the compiled flight kernel (scalars and lists, no arrays).

Written straight from the equations, one agent at a time, with `if` where uav/kernel.py selects
per agent by mode, and with its own mixer geometry, so that tests can check the kernel against
it on random states and edge cases (tests/uav/test_uav_reference.py). Its rotations are
core/frames.py's, the ones every kernel compiles in (checked against pybullet in
tests/uav/test_uav_model.py). Slow by design; never used in a run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from skyswarm.core.frames import euler_angles, rotation_rows, to_body, to_world
from skyswarm.core.geo import wrap_angle
from skyswarm.uav.control import ControlConfig, ControlMode
from skyswarm.uav.model import Airframe
from skyswarm.uav.pid import PidGains

Vec = list[float]


def quat_to_matrix(q: Vec) -> list[Vec]:
    """(x, y, z, w) -> the 3 x 3 body-to-world rotation as lists."""
    return [list(row) for row in rotation_rows(*q)]


def euler(r: list[Vec]) -> Vec:
    """Rotation -> [roll, pitch, yaw] rad."""
    return list(euler_angles(_rows(r)))


def rotate(r: list[Vec], v: Vec) -> Vec:
    """R v."""
    return list(to_world(_rows(r), *v))


def rotate_back(r: list[Vec], v: Vec) -> Vec:
    """R^T v."""
    return list(to_body(_rows(r), *v))


def _rows(r: list[Vec]) -> tuple:
    """Lists of floats -> the rows as tuples, as the compiled rotations take them."""
    return tuple(tuple(float(a) for a in row) for row in r)


def pid_step(
    g: PidGains, integral: float, error: float, rate: float, dt: float
) -> tuple[float, float]:
    """One axis of one loop (uav/pid.py): returns (output, new integral)."""
    p_d = g.kp * error - g.kd * rate
    trial = min(max(integral + g.ki * dt * error, -g.i_limit), g.i_limit)
    raw = p_d + trial
    if not (abs(raw) > g.out_limit and error * raw > 0):
        integral = trial
    return min(max(p_d + integral, -g.out_limit), g.out_limit), integral


@dataclass
class AgentState:
    """Everything the controller of one agent remembers between ticks."""

    outer_i: Vec = field(default_factory=lambda: [0.0] * 4)
    speed_i: Vec = field(default_factory=lambda: [0.0] * 3)
    attitude_i: Vec = field(default_factory=lambda: [0.0] * 3)
    prev_speed: Vec = field(default_factory=lambda: [0.0] * 3)
    prev_r: float = 0.0
    thrust: Vec = field(default_factory=lambda: [0.0] * 4)
    prev_pq: Vec = field(default_factory=lambda: [0.0] * 2)


@dataclass
class AgentSetpoints:
    """One agent's mode and the setpoints of every mode's entry level."""

    mode: ControlMode
    position: Vec  # x, y m
    altitude: float  # m
    yaw: float  # rad
    velocity: Vec  # vx, vy heading frame, vz m/s
    attitude: Vec  # roll, pitch rad, yaw rate rad/s
    thrust: float  # N
    manual: Vec  # throttle 0..1, roll, pitch, yaw -1..1
    yaw_hold: bool = False  # Attitude: the heading loop holds `yaw` (no yaw-rate setpoint)
    rates: Vec = field(default_factory=lambda: [0.0] * 3)  # BodyRates: p, q, r rad/s
    motors: Vec = field(default_factory=lambda: [0.0] * 4)  # Motors: N per motor


def control(
    af: Airframe,
    cfg: ControlConfig,
    dt: float,
    sp: AgentSetpoints,
    s: AgentState,
    pos: Vec,
    quat: Vec,
    vel: Vec,
    omega: Vec,
    g: float = 9.81,
) -> Vec:
    """One tick of the cascade for one agent -> [collective N, torque x, y, z N m]; `g` m/s^2."""
    r = quat_to_matrix(quat)
    roll, pitch, yaw = euler(r)
    rate = rotate_back(r, omega)
    if not sp.mode.uses("attitude"):
        scale = [4 * af.max_thrust_n, *cfg.manual_torque_nm]
        return [sp.manual[i] * scale[i] for i in range(4)]
    c, sn = math.cos(yaw), math.sin(yaw)
    v_h = [c * vel[0] + sn * vel[1], c * vel[1] - sn * vel[0], vel[2]]
    att_target = list(sp.attitude)
    thrust = sp.thrust
    if sp.mode.uses("velocity"):
        target, yaw_rate = outer_loops(cfg, dt, sp, s, pos, vel, yaw, rate[2])
        att_target[0], att_target[1], thrust = speed_loops(af, cfg, dt, s, target, v_h, r[2][2], g)
        s.prev_speed = v_h  # other modes leave it to bumpless entry into the velocity stage
        if sp.mode.uses("heading"):
            att_target[2] = yaw_rate
    elif sp.yaw_hold:  # Attitude with a yaw angle: the heading loop gives the yaw rate
        att_target[2] = outer_loops(cfg, dt, sp, s, pos, vel, yaw, rate[2])[1]
    gains = [cfg.attitude, cfg.attitude, cfg.yaw_rate]
    err = [att_target[0] - roll, att_target[1] - pitch, att_target[2] - rate[2]]
    rates = [rate[0], rate[1], (rate[2] - s.prev_r) / dt]
    if sp.mode.uses("rates"):  # BodyRates: rate loops on p, q, r, D on their derivatives
        gains = [cfg.body_rate, cfg.body_rate, cfg.yaw_rate]
        err = [sp.rates[k] - rate[k] for k in range(3)]
        rates = [(rate[0] - s.prev_pq[0]) / dt, (rate[1] - s.prev_pq[1]) / dt, rates[2]]
    s.prev_r = rate[2]
    s.prev_pq = [rate[0], rate[1]]
    demand = [thrust]
    for k in range(3):
        o, s.attitude_i[k] = pid_step(gains[k], s.attitude_i[k], err[k], rates[k], dt)
        demand.append(af.inertia_kg_m2[k] * o)
    return demand


def outer_loops(
    cfg: ControlConfig,
    dt: float,
    sp: AgentSetpoints,
    s: AgentState,
    pos: Vec,
    vel: Vec,
    yaw: float,
    yaw_rate: float,
) -> tuple[Vec, float]:
    """Position, altitude and heading loops -> the heading-frame velocity target m/s (the
    mode's own setpoint where it does not use a loop) and the heading loop's yaw rate rad/s."""
    target = list(sp.velocity)
    gains = [cfg.position, cfg.position, cfg.altitude, cfg.heading]
    err = [sp.position[0] - pos[0], sp.position[1] - pos[1], sp.altitude - pos[2]]
    err.append(float(wrap_angle(sp.yaw - yaw)))
    rates = [vel[0], vel[1], vel[2], yaw_rate]
    # The loops the mode uses, and always the heading loop (Attitude's yaw hold reads its
    # integral); the others' integrals idle (bumpless entry empties them).
    runs = [sp.mode.uses("position")] * 2 + [sp.mode.uses("altitude"), True]
    out = [0.0] * 4
    for k in range(4):
        if runs[k]:
            out[k], s.outer_i[k] = pid_step(gains[k], s.outer_i[k], err[k], rates[k], dt)
    out[2] = min(max(out[2], -cfg.max_descent_m_s), cfg.max_climb_m_s)
    ymax = math.radians(cfg.max_yaw_rate_deg_s)
    out[3] = min(max(out[3], -ymax), ymax)
    if sp.mode.uses("world"):  # world-frame velocity setpoint -> heading frame
        c, sn = math.cos(yaw), math.sin(yaw)
        target[0] = c * sp.velocity[0] + sn * sp.velocity[1]
        target[1] = c * sp.velocity[1] - sn * sp.velocity[0]
    elif sp.mode.uses("position"):
        c, sn = math.cos(yaw), math.sin(yaw)
        sc = min(1.0, cfg.max_speed_m_s / max(math.hypot(out[0], out[1]), 1e-12))
        target[0] = (c * out[0] + sn * out[1]) * sc
        target[1] = (c * out[1] - sn * out[0]) * sc
    if sp.mode.uses("altitude"):
        target[2] = out[2]
    return target, out[3]


def speed_loops(
    af: Airframe,
    cfg: ControlConfig,
    dt: float,
    s: AgentState,
    target: Vec,
    v_h: Vec,
    up_z: float,
    g: float = 9.81,
) -> tuple[float, float, float]:
    """Heading-frame velocity target and measurement m/s -> (roll rad, pitch rad) targets and
    the collective N (feed-forward m g), the tilt limited to cfg.max_tilt_deg; `up_z` is
    cos(tilt); the vertical acceleration is kept above -0.9 g."""
    gains = [cfg.ground_speed, cfg.ground_speed, cfg.vertical_speed]
    acc = []
    for k in range(3):
        d = (v_h[k] - s.prev_speed[k]) / dt
        o, s.speed_i[k] = pid_step(gains[k], s.speed_i[k], target[k] - v_h[k], d, dt)
        acc.append(o)
    vert = max(g + acc[2], 0.1 * g)
    lim = vert * math.tan(math.radians(cfg.max_tilt_deg))
    sc = min(1.0, lim / max(math.hypot(acc[0], acc[1]), 1e-12))
    ax, ay = acc[0] * sc, acc[1] * sc
    up = max(up_z, math.cos(math.radians(af.max_tilt_deg)))
    return math.atan2(-ay, math.hypot(ax, vert)), math.atan2(ax, vert), af.mass_kg * vert / up


def mix(af: Airframe, demand: Vec) -> Vec:
    """[collective, torque x, y, z] -> four thrusts, roll/pitch before collective before yaw."""
    f_max, arm, k = af.max_thrust_n, af.arm_length_m, af.reaction_coefficient_m
    angles = [math.radians(a) for a in (45.0, 135.0, 225.0, 315.0)]
    xs = [arm * math.cos(a) for a in angles]
    ys = [arm * math.sin(a) for a in angles]
    # The X's allocation is orthogonal: each demand maps onto its own motor pattern.
    diff = [
        demand[1] * ys[i] / sum(y * y for y in ys) - demand[2] * xs[i] / sum(x * x for x in xs)
        for i in range(4)
    ]
    yaw_pat = [-af.spin[i] / (4 * k) for i in range(4)]
    span = max(diff) - min(diff)
    if span > f_max:
        diff = [d * f_max / span for d in diff]
    coll = min(max(demand[0] / 4, -min(diff)), f_max - max(diff))
    base = [d + coll for d in diff]
    yaw = [demand[3] * p for p in yaw_pat]
    room = min((f_max - base[i] if yaw[i] > 0 else base[i]) / abs(yaw_pat[i]) for i in range(4))
    frac = min(max(room / max(abs(demand[3]), 1e-300), 0.0), 1.0)
    return [min(max(base[i] + yaw[i] * frac, 0.0), f_max) for i in range(4)]


def motor_step(af: Airframe, thrust: Vec, command: Vec, dt: float) -> Vec:
    """Four thrusts N one tick `dt` s later: the thrust (thrust_lag) or the rotor speed
    sqrt(f / k_f) (rotor_speed) lags towards the saturated command."""
    alpha = 1.0 - math.exp(-dt / af.motor_time_constant_s)
    out = []
    for f, c in zip(thrust, command):
        c = min(max(c, 0.0), af.max_thrust_n)
        if af.rotor_model == "rotor_speed":
            kf = af.thrust_coefficient_n_s2
            w = math.sqrt(f / kf)
            w = w + alpha * (math.sqrt(c / kf) - w)
            out.append(min(kf * w * w, af.max_thrust_n))
        else:
            out.append(f + alpha * (c - f))
    return out


def wrench(
    af: Airframe,
    thrust: Vec,
    quat: Vec,
    vel: Vec,
    wind: Sequence[float] = (0.0, 0.0, 0.0),
    height: float = 0.0,
    body_rate: Sequence[float] = (0.0, 0.0, 0.0),
) -> tuple[Vec, Vec]:
    """Four thrusts N, velocity and wind m/s (world), height m and body rates rad/s ->
    (body-frame force N, world-frame torque N m); the drag acts on the airspeed vel - wind."""
    r = quat_to_matrix(quat)
    v_b = rotate_back(r, [vel[i] - wind[i] for i in range(3)])
    if af.drag_model == "quadratic":
        h = min(max(height, 0.0), 11000.0)
        rho = 1.225 * (1.0 - 2.25577e-5 * h) ** 4.2559  # ISA troposphere
        force = [-0.5 * af.drag_areas_m2[i] * rho * abs(v_b[i]) * v_b[i] for i in range(3)]
    else:
        force = [-af.drag_coefficients[i] * v_b[i] for i in range(3)]
    gain = 1.0
    radius = af.rotor_radius_m
    if radius > 0.0:  # Cheeseman-Bennett
        gain = 1.0 / (1.0 - (radius / (4.0 * max(height, 0.5 * radius))) ** 2)
    force[2] += sum(thrust) * gain
    tau = [0.0, 0.0, 0.0]
    for i, a in enumerate((45.0, 135.0, 225.0, 315.0)):
        x = af.arm_length_m * math.cos(math.radians(a))
        y = af.arm_length_m * math.sin(math.radians(a))
        tau[0] += y * thrust[i] * gain  # r x (0, 0, f)
        tau[1] -= x * thrust[i] * gain
        tau[2] -= af.spin[i] * af.reaction_coefficient_m * thrust[i]
        if af.rotor_drag_coefficient > 0.0:  # RotorPy: -k_d omega (in-plane local airspeed)
            omega = math.sqrt(thrust[i] / af.thrust_coefficient_n_s2)
            local_x = v_b[0] - body_rate[2] * y
            local_y = v_b[1] + body_rate[2] * x
            hx = -af.rotor_drag_coefficient * omega * local_x
            hy = -af.rotor_drag_coefficient * omega * local_y
            force[0] += hx
            force[1] += hy
            tau[2] += x * hy - y * hx
    return force, rotate(r, tau)
