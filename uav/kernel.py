"""The 400 Hz path compiled: cascade, mixer, motors and wrench for N agents in one numba call.

The numpy objects in uav/control.py, mixer.py, pid.py and model.py are the readable
implementation and own every constant; `FlightKernel` copies those constants once and runs the
same equations per agent in one compiled loop, writing the controller's state in place into the
very arrays the numpy objects hold (PID integrals, previous measurements, last targets, motor
thrusts), so bumpless switching and the agent API see no difference. Every stage runs for every
agent, as in the numpy cascade; the modes reach the kernel only as the per-agent selection masks
that `Setpoints.refresh_masks` builds when a mode changes. Tested against uav/reference.py and
the numpy path within 1e-9 (tests/uav/test_uav_reference.py).

numba is optional: without it `AVAILABLE` is False and the swarm runs the numpy path.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

try:
    from numba import njit

    AVAILABLE = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    AVAILABLE = False

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        return lambda fn: fn


if TYPE_CHECKING:
    from skyswarm.uav.control import Cascade, Setpoints
    from skyswarm.uav.mixer import Mixer
    from skyswarm.uav.model import Motors, WrenchModel
    from skyswarm.uav.pid import Pid

# Compiled with numpy's error model (x / 0 -> inf, no exception) and without fastmath, so the
# arithmetic is the numpy path's IEEE arithmetic.
_JIT = {"cache": True, "error_model": "numpy", "nogil": True}

# Rows of the (3, 5, 4) gain table: loop, then parameter, then axis (unused axes are zero).
OUTER, SPEED, ATTITUDE = 0, 1, 2
KP, KI_DT, KD, I_LIMIT, OUT_LIMIT = range(5)


@njit(inline="always", **_JIT)
def _min(a: float, b: float) -> float:
    """np.minimum for scalars: NaN in, NaN out."""
    if a != a or b != b:
        return a + b
    return a if a < b else b


@njit(inline="always", **_JIT)
def _max(a: float, b: float) -> float:
    """np.maximum for scalars: NaN in, NaN out."""
    if a != a or b != b:
        return a + b
    return a if a > b else b


@njit(inline="always", **_JIT)
def _pid(gains, loop, axis, integral, i, error, rate):  # noqa: ANN001, ANN202
    """One axis of uav.pid.Pid.update for agent i; updates integral[i, axis] in place."""
    kp, ki_dt, kd = gains[loop, KP, axis], gains[loop, KI_DT, axis], gains[loop, KD, axis]
    i_lim, out_lim = gains[loop, I_LIMIT, axis], gains[loop, OUT_LIMIT, axis]
    p_d = kp * error - kd * rate
    trial = _min(_max(integral[i, axis] + ki_dt * error, -i_lim), i_lim)
    raw = p_d + trial
    if not (abs(raw) > out_lim and error * raw > 0):
        integral[i, axis] = trial
    return _min(_max(p_d + integral[i, axis], -out_lim), out_lim)


@njit(**_JIT)
def fly(  # noqa: PLR0913, PLR0915 - one flat call keeps the per-tick dispatch cheap
    slots,  # (N,) int: state rows of the agents
    position,  # (capacity, 3) world state arrays (core.state.BodyState)
    orientation,  # (capacity, 4)
    velocity,  # (capacity, 3)
    omega,  # (capacity, 3)
    sp_position,  # setpoints (uav.control.Setpoints), (N, ...)
    sp_altitude,
    sp_yaw,
    sp_velocity,
    sp_attitude,
    sp_thrust,
    sp_manual,
    outer_drives_velocity,  # (N, 3) bool masks of the agents' modes
    velocity_drives_attitude,  # (N, 3) bool
    velocity_drives_thrust,  # (N,) bool
    manual_mask,  # (N, 1) bool
    gains,  # (3, 5, 4) see OUTER.., KP..
    outer_lo,  # (4,) limits of the outer loops' outputs
    outer_hi,  # (4,)
    inertia,  # (3,) kg m^2
    manual_scale,  # (4,)
    attitude_map,  # (2, 4) mixer
    yaw_map,  # (4,)
    yaw_abs,  # (4,)
    torque_map,  # (4, 3) thrusts -> body torque
    drag,  # (3,) -drag coefficients
    wind,  # (N, 3) wind m/s, world frame: the drag acts on the airspeed v - wind
    scalars,  # (9,) dt, g, mass, tan_tilt, min_up, max_speed, f_max, per_collective, alpha
    outer_i,  # (N, 4) controller state, updated in place
    speed_i,  # (N, 3)
    attitude_i,  # (N, 3)
    prev_speed,  # (N, 3)
    prev_r,  # (N,)
    velocity_target,  # (N, 3) outputs kept for bumpless switching
    attitude_target,  # (N, 3)
    demand,  # (N, 4)
    yaw_rate_command,  # (N,)
    alive,  # (N,) bool: dead agents' motors get a zero command
    motor_ok,  # (N, 4): 0 for a failed motor
    thrust,  # (N, 4) motor thrusts N, updated in place
    force,  # (N, 3) out: body-frame force N
    torque,  # (N, 3) out: world-frame torque N m
) -> None:
    dt, g, mass, tan_tilt, min_up = scalars[0], scalars[1], scalars[2], scalars[3], scalars[4]
    max_speed, f_max, per_collective, alpha = scalars[5], scalars[6], scalars[7], scalars[8]
    two_pi = 2.0 * math.pi
    r = np.empty((3, 3))
    out = np.empty(4)
    diff = np.empty(4)
    for i in range(slots.shape[0]):
        s = slots[i]
        # -- measurements (uav.swarm.Swarm.measure, uav.frames) ---------------------------
        x, y, z, w = orientation[s, 0], orientation[s, 1], orientation[s, 2], orientation[s, 3]
        xx, yy, zz = x * x, y * y, z * z
        xy, xz, yz = x * y, x * z, y * z
        wx, wy, wz = w * x, w * y, w * z
        r[0, 0] = 1 - 2 * (yy + zz)
        r[0, 1] = 2 * (xy - wz)
        r[0, 2] = 2 * (xz + wy)
        r[1, 0] = 2 * (xy + wz)
        r[1, 1] = 1 - 2 * (xx + zz)
        r[1, 2] = 2 * (yz - wx)
        r[2, 0] = 2 * (xz - wy)
        r[2, 1] = 2 * (yz + wx)
        r[2, 2] = 1 - 2 * (xx + yy)
        roll = math.atan2(r[2, 1], r[2, 2])
        pitch = math.asin(_min(_max(-r[2, 0], -1.0), 1.0))
        yaw = math.atan2(r[1, 0], r[0, 0])
        o0, o1, o2 = omega[s, 0], omega[s, 1], omega[s, 2]
        p = r[0, 0] * o0 + r[1, 0] * o1 + r[2, 0] * o2  # body rates: R^T omega
        q = r[0, 1] * o0 + r[1, 1] * o1 + r[2, 1] * o2
        rr = r[0, 2] * o0 + r[1, 2] * o1 + r[2, 2] * o2
        vx, vy, vz = velocity[s, 0], velocity[s, 1], velocity[s, 2]
        cos, sin = math.cos(yaw), math.sin(yaw)

        # -- outer loops: position, altitude, heading (Cascade._outer) --------------------
        e3 = (sp_yaw[i] - yaw + math.pi) % two_pi - math.pi
        out[0] = _pid(gains, OUTER, 0, outer_i, i, sp_position[i, 0] - position[s, 0], vx)
        out[1] = _pid(gains, OUTER, 1, outer_i, i, sp_position[i, 1] - position[s, 1], vy)
        out[2] = _pid(gains, OUTER, 2, outer_i, i, sp_altitude[i] - position[s, 2], vz)
        out[3] = _pid(gains, OUTER, 3, outer_i, i, e3, rr)
        for k in range(4):
            out[k] = _min(_max(out[k], outer_lo[k]), outer_hi[k])
        ox, oy = out[0], out[1]
        scale = _min(1.0, max_speed / _max(math.hypot(ox, oy), 1e-12))
        yaw_rate_command[i] = out[3]
        t0 = (cos * ox + sin * oy) * scale
        t1 = (cos * oy - sin * ox) * scale
        vt0 = t0 if outer_drives_velocity[i, 0] else sp_velocity[i, 0]
        vt1 = t1 if outer_drives_velocity[i, 1] else sp_velocity[i, 1]
        vt2 = out[2] if outer_drives_velocity[i, 2] else sp_velocity[i, 2]
        velocity_target[i, 0], velocity_target[i, 1], velocity_target[i, 2] = vt0, vt1, vt2

        # -- speed loops -> tilt and collective (Cascade.compute, Cascade._tilt) ----------
        h0, h1, h2 = cos * vx + sin * vy, cos * vy - sin * vx, vz
        a0 = _pid(gains, SPEED, 0, speed_i, i, vt0 - h0, (h0 - prev_speed[i, 0]) / dt)
        a1 = _pid(gains, SPEED, 1, speed_i, i, vt1 - h1, (h1 - prev_speed[i, 1]) / dt)
        a2 = _pid(gains, SPEED, 2, speed_i, i, vt2 - h2, (h2 - prev_speed[i, 2]) / dt)
        prev_speed[i, 0], prev_speed[i, 1], prev_speed[i, 2] = h0, h1, h2
        vert = g + a2
        tilt_scale = _min(1.0, vert * tan_tilt / _max(math.hypot(a0, a1), 1e-12))
        ax, ay = a0 * tilt_scale, a1 * tilt_scale
        at0 = math.atan2(-ay, math.hypot(ax, vert))
        at1 = math.atan2(ax, vert)
        at2 = out[3]
        collective = mass * vert / _max(r[2, 2], min_up)
        if not velocity_drives_attitude[i, 0]:
            at0 = sp_attitude[i, 0]
        if not velocity_drives_attitude[i, 1]:
            at1 = sp_attitude[i, 1]
        if not velocity_drives_attitude[i, 2]:
            at2 = sp_attitude[i, 2]
        attitude_target[i, 0], attitude_target[i, 1], attitude_target[i, 2] = at0, at1, at2

        # -- attitude loops -> torques, and the demand (Cascade.compute) -------------------
        r_dot = (rr - prev_r[i]) / dt
        prev_r[i] = rr
        tx = inertia[0] * _pid(gains, ATTITUDE, 0, attitude_i, i, at0 - roll, p)
        ty = inertia[1] * _pid(gains, ATTITUDE, 1, attitude_i, i, at1 - pitch, q)
        tz = inertia[2] * _pid(gains, ATTITUDE, 2, attitude_i, i, at2 - rr, r_dot)
        if manual_mask[i, 0]:
            d0, d1 = sp_manual[i, 0] * manual_scale[0], sp_manual[i, 1] * manual_scale[1]
            d2, d3 = sp_manual[i, 2] * manual_scale[2], sp_manual[i, 3] * manual_scale[3]
        else:
            d0 = collective if velocity_drives_thrust[i] else sp_thrust[i]
            d1, d2, d3 = tx, ty, tz
        demand[i, 0], demand[i, 1], demand[i, 2], demand[i, 3] = d0, d1, d2, d3

        # -- mixer (uav.mixer.Mixer.mix) ---------------------------------------------------
        for k in range(4):
            diff[k] = d1 * attitude_map[0, k] + d2 * attitude_map[1, k]
        hi = _max(_max(diff[0], diff[1]), _max(diff[2], diff[3]))
        lo = _min(_min(diff[0], diff[1]), _min(diff[2], diff[3]))
        shrink = _min(1.0, f_max / _max(hi - lo, 1e-12))
        coll = _min(_max(d0 * per_collective, -lo * shrink), f_max - hi * shrink)
        room = np.inf
        for k in range(4):
            diff[k] = diff[k] * shrink + coll  # the base thrusts
            yaw_k = d3 * yaw_map[k]
            room = _min(room, (f_max - diff[k] if yaw_k > 0 else diff[k]) / yaw_abs[k])
        fraction = _min(_max(room / _max(abs(d3), 1e-300), 0.0), 1.0)

        # -- motors (uav.model.Motors.step) and the wrench (uav.model.WrenchModel) ---------
        total, bx, by, bz = 0.0, 0.0, 0.0, 0.0
        for k in range(4):
            command = _min(_max(diff[k] + d3 * yaw_map[k] * fraction, 0.0), f_max)
            if not alive[i]:
                command = 0.0
            command *= motor_ok[i, k]
            f = thrust[i, k]
            f += alpha * (_min(_max(command, 0.0), f_max) - f)
            thrust[i, k] = f
            total += f
            bx += f * torque_map[k, 0]
            by += f * torque_map[k, 1]
            bz += f * torque_map[k, 2]
        ux, uy, uz = vx - wind[i, 0], vy - wind[i, 1], vz - wind[i, 2]  # exact for calm air
        force[i, 0] = drag[0] * (r[0, 0] * ux + r[1, 0] * uy + r[2, 0] * uz)
        force[i, 1] = drag[1] * (r[0, 1] * ux + r[1, 1] * uy + r[2, 1] * uz)
        force[i, 2] = drag[2] * (r[0, 2] * ux + r[1, 2] * uy + r[2, 2] * uz) + total
        torque[i, 0] = r[0, 0] * bx + r[0, 1] * by + r[0, 2] * bz
        torque[i, 1] = r[1, 0] * bx + r[1, 1] * by + r[1, 2] * bz
        torque[i, 2] = r[2, 0] * bx + r[2, 1] * by + r[2, 2] * bz


def _gain_table(*pids: Pid) -> np.ndarray:
    table = np.zeros((len(pids), 5, 4))
    for k, pid in enumerate(pids):
        axes = len(pid.kp)
        for j, values in enumerate((pid.kp, pid.ki_dt, pid.kd, pid.i_limit, pid.out_limit)):
            table[k, j, :axes] = values
    return table


class FlightKernel:
    """The compiled controller of one swarm: constants copied once from the numpy objects."""

    def __init__(
        self, cascade: Cascade, mixer: Mixer, motors: Motors, wrench: WrenchModel, slots
    ) -> None:
        self.slots = np.ascontiguousarray(slots, dtype=np.int64)
        self.gains = _gain_table(cascade.outer, cascade.speed, cascade.attitude)
        c = np.ascontiguousarray
        self.outer_lo, self.outer_hi = c(cascade.outer_lo), c(cascade.outer_hi)
        self.inertia, self.manual_scale = c(cascade.inertia), c(cascade.manual_scale)
        self.attitude_map, self.yaw_map = c(mixer.attitude_map), c(mixer.yaw_map)
        self.yaw_abs = c(mixer.yaw_abs)
        self.torque_map, self.drag = c(wrench.torque_map), c(wrench.drag)
        if motors.f_max != mixer.f_max:
            raise ValueError("the mixer and the motors disagree on the maximum thrust")
        self.scalars = np.array(
            [
                cascade.dt,
                cascade.g,
                cascade.mass,
                cascade.tan_tilt,
                cascade.min_up,
                cascade.cfg.max_speed_m_s,
                mixer.f_max,
                mixer.per_collective,
                motors.alpha,
            ]
        )

    def step(
        self,
        state,  # core.state.BodyState  # noqa: ANN001
        sp: Setpoints,
        cascade: Cascade,
        alive: np.ndarray,
        motor_ok: np.ndarray,
        thrust: np.ndarray,
        force: np.ndarray,
        torque: np.ndarray,
        wind: np.ndarray,
    ) -> None:
        """One tick for every agent; writes `thrust`, `force`, `torque` and the controller
        state in place (see `fly`). `wind`: (N, 3) m/s, world frame (zeros: calm air)."""
        fly(
            self.slots,
            state.position,
            state.orientation,
            state.linear_velocity,
            state.angular_velocity,
            sp.position,
            sp.altitude,
            sp.yaw,
            sp.velocity,
            sp.attitude,
            sp.thrust,
            sp.manual,
            sp.outer_drives_velocity,
            sp.velocity_drives_attitude,
            sp.velocity_drives_thrust,
            sp.manual_mask,
            self.gains,
            self.outer_lo,
            self.outer_hi,
            self.inertia,
            self.manual_scale,
            self.attitude_map,
            self.yaw_map,
            self.yaw_abs,
            self.torque_map,
            self.drag,
            wind,
            self.scalars,
            cascade.outer.integral,
            cascade.speed.integral,
            cascade.attitude.integral,
            cascade.prev_speed,
            cascade.prev_r,
            cascade.velocity_target,
            cascade.attitude_target,
            cascade.demand,
            cascade.yaw_rate_command,
            alive,
            motor_ok,
            thrust,
            force,
            torque,
        )
