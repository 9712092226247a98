"""Control on the estimate, compiled: the wrench from the true state, bit for bit the numpy
of uav/model.py.

With `control_on = "estimate"` the flight kernel computes the thrusts from the estimate and the
wrench is then recomputed from the true attitude, velocity and air (uav/swarm.py). In numpy
(`Swarm.measure` + `WrenchModel.compute`) that is some forty calls on (N, ...) arrays per tick,
where numpy's call overhead, not the arithmetic, is the cost (10 UAVs: 60 % of a qrsim run's
control phase). `TrueWrench` gives the same numbers from one compiled pass over the agents.

Bit for bit: the compiled code does what `WrenchModel.compute` does, operation for operation
and in numpy's order, checked on random inputs by tests/uav/test_estimation_kernel.py:
- `np.einsum("nji,nj->ni", R, v)` (R^T v) sums from zero in index order, ((0 + a) + b) + c;
  `np.einsum("nij,nj->ni", R, v)` (R v) sums as numpy 2's AVX-512 dot reduction does,
  ((0 + a) + (0 + c)) + (0 + b);
- `x.sum(axis=1)` of four values is (((0 + a) + b) + c) + d; `np.cross(a, b)` is a1 b2 - a2 b1, ...
What numpy computes with its own library code is left to numpy, called once per tick on the
whole swarm: the air density (its `**` is not glibc's `pow`) and the two matrix products of
the thrusts by the torque map (BLAS, with fused multiply-adds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skyswarm.core.frames import rotation_rows
from skyswarm.core.jit import ahead, njit
from skyswarm.uav.model import (
    GROUND_EFFECT_MIN_HEIGHT,
    ISA_EXPONENT,
    ISA_LAPSE,
    ISA_RHO0,
    WrenchModel,
)

# numpy's error model (x / 0 -> inf), no fastmath: plain IEEE arithmetic as written.
_JIT = {"error_model": "numpy", "nogil": True}


class TrueWrench:
    """`WrenchModel.compute` of a swarm's agents from the world's true state, compiled.

    wrench = TrueWrench(swarm.wrench, swarm.slots)
    force, torque = wrench(world.state, motors.thrust, swarm.wind)  # (N, 3) each, new
    """

    def __init__(self, model: WrenchModel, slots: np.ndarray) -> None:
        self.model = model
        self.slots = np.ascontiguousarray(slots, dtype=np.int64)
        radius = model.rotor_radius
        self.params = np.array(
            [float(model.quadratic), model.rotor_drag, model.k_f, radius,
             GROUND_EFFECT_MIN_HEIGHT * radius, ISA_LAPSE, ISA_RHO0],
        )  # fmt: skip
        self.drag = np.ascontiguousarray(model.drag, dtype=float)
        self.drag_quad = np.ascontiguousarray(model.drag_quad, dtype=float)
        self.arms = np.ascontiguousarray(model.arms, dtype=float)
        self._no_rho = np.zeros(len(self.slots))

    def __call__(
        self, state: Any, thrust: np.ndarray, wind: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) body-frame force N and (N, 3) world torque N m of the (N, 4) `thrust` N in
        the (N, 3) `wind` m/s, from `state` (core.state.BodyState) at the agents' slots:
        `WrenchModel.compute(thrust, R, v, wind, p, R^T omega)` with R, p, v, omega the truth."""
        model, n = self.model, len(self.slots)
        lift, base = np.empty((n, 4)), np.empty(n)
        air_and_lift(self.slots, state.position, thrust, self.params, lift, base)
        # numpy's own: the power of the air density, the BLAS products by the torque map
        rho = base**ISA_EXPONENT if model.quadratic else self._no_rho
        torque_body = lift @ model.torque_map
        if model.rotor_radius > 0.0:  # the reaction torque follows the rotor, not the ground
            torque_body[:, 2] = thrust @ model.torque_map[:, 2]
        force, torque = np.empty((n, 3)), np.empty((n, 3))
        true_wrench(
            self.slots, state.orientation, state.linear_velocity, state.angular_velocity,
            thrust, lift, wind, rho, torque_body, self.params, self.drag, self.drag_quad,
            self.arms, force, torque,
        )  # fmt: skip
        return force, torque


@njit(**_JIT)
def air_and_lift(slots, position, thrust, params, lift, base):  # pragma: no cover - compiled
    """What `WrenchModel.compute` computes before its matrix products, per agent k: `lift`
    (N, 4) the thrusts times the ground-effect ratio (ground_effect_ratio, or the thrusts
    without one) and `base` (N,) 1 - lapse h of air_density (h the height clamped to
    0..11 km), whose power numpy takes."""
    radius, low, lapse = params[3], params[4], params[5]
    for k in range(slots.shape[0]):
        z = position[slots[k], 2]
        base[k] = 1.0 - lapse * _min(_max(z, 0.0), 11000.0)
        if radius > 0.0:
            x = radius / (4.0 * _max(z, low))
            ratio = 1.0 / (1.0 - x * x)
            for m in range(4):
                lift[k, m] = thrust[k, m] * ratio
        else:
            for m in range(4):
                lift[k, m] = thrust[k, m]


@njit(**_JIT)
def true_wrench(
    slots, orientation, velocity, omega, thrust, lift, wind, rho, torque_body, params, drag,
    drag_quad, arms, force, torque,
):  # fmt: skip  # pragma: no cover - compiled
    """`WrenchModel.compute` per agent k at state row slots[k], written into `force` and
    `torque` (N, 3). From numpy: `lift` (N, 4) the thrusts with ground effect, `rho` (N,) the
    power (1 - lapse h)^exponent of the air density (quadratic drag), `torque_body` (N, 3)
    lift @ torque_map (its z from the thrusts without ground effect). `params`: quadratic
    (0/1), k_d, k_f, rotor radius, lowest ground-effect height, ISA lapse, sea-level density."""
    quadratic, k_d, k_f, rho0 = params[0] != 0.0, params[1], params[2], params[6]
    rates = np.empty(3)
    u = np.empty(3)
    tb = np.empty(3)
    for k in range(slots.shape[0]):
        s = slots[k]
        r = rotation_rows(
            orientation[s, 0], orientation[s, 1], orientation[s, 2], orientation[s, 3]
        )
        a0 = velocity[s, 0] - wind[k, 0]
        a1 = velocity[s, 1] - wind[k, 1]
        a2 = velocity[s, 2] - wind[k, 2]
        w0, w1, w2 = omega[s, 0], omega[s, 1], omega[s, 2]
        for i in range(3):  # einsum("nji,nj->ni"): R^T v, summed from zero in j order
            u[i] = ((0.0 + r[0][i] * a0) + r[1][i] * a1) + r[2][i] * a2
            rates[i] = ((0.0 + r[0][i] * w0) + r[1][i] * w1) + r[2][i] * w2
        for i in range(3):
            if quadratic:
                force[k, i] = ((drag_quad[i] * (rho0 * rho[k])) * abs(u[i])) * u[i]
            else:
                force[k, i] = drag[i] * u[i]
        force[k, 2] += (((0.0 + lift[k, 0]) + lift[k, 1]) + lift[k, 2]) + lift[k, 3]
        tb[0], tb[1], tb[2] = torque_body[k, 0], torque_body[k, 1], torque_body[k, 2]
        if k_d > 0.0:
            _rotor_drag(k, thrust, k_d, k_f, rates, u, arms, force, tb)
        # einsum("nij,nj->ni"): R tb, summed as numpy's dot reduction, (a + c) + b, each
        # term first added to a zero lane
        for i in range(3):
            p0, p1, p2 = r[i][0] * tb[0], r[i][1] * tb[1], r[i][2] * tb[2]
            torque[k, i] = ((0.0 + p0) + (0.0 + p2)) + (0.0 + p1)


@njit(inline="always", **_JIT)
def _rotor_drag(k, thrust, k_d, k_f, rates, u, arms, force, tb):  # pragma: no cover - compiled
    """Agent k's rotor drag, added to `force[k]` and the body torque `tb` as model.py does:
    h_m = -k_d omega_m (u + rates x arm_m), in-plane; force += sum h; tb += sum arm x h."""
    hs0, hs1, hs2 = 0.0, 0.0, 0.0
    cs0, cs1, cs2 = 0.0, 0.0, 0.0
    p, q, rr = rates[0], rates[1], rates[2]
    for m in range(4):
        e0, e1, e2 = arms[m, 0], arms[m, 1], arms[m, 2]
        scale = -k_d * np.sqrt(thrust[k, m] / k_f)
        h0 = scale * (u[0] + (q * e2 - rr * e1))
        h1 = scale * (u[1] + (rr * e0 - p * e2))
        h2 = 0.0  # in-plane only
        c0 = e1 * h2 - e2 * h1  # arm x h
        c1 = e2 * h0 - e0 * h2
        c2 = e0 * h1 - e1 * h0
        hs0, hs1, hs2 = hs0 + h0, hs1 + h1, hs2 + h2  # from zero, as numpy's sum
        cs0, cs1, cs2 = cs0 + c0, cs1 + c1, cs2 + c2
    force[k, 0] += hs0
    force[k, 1] += hs1
    force[k, 2] += hs2
    tb[0] += cs0
    tb[1] += cs1
    tb[2] += cs2


# The types TrueWrench calls the kernel with (compiled before the clock: core/jit.py).
ahead(true_wrench, "i8[1] " + "f8[2] " * 6 + "f8[1] f8[2] " + "f8[1] " * 3 + "f8[2] " * 3)


# -- the estimator's per-tick arithmetic (uav/estimation.py) --------------------------------
@njit(**_JIT)
def truth_arrays(
    slots, orientation, omega, velocity, last_velocity, dt, rot, rate, accel, ys, xs, clip
):  # fmt: skip  # pragma: no cover - compiled
    """`SensorSuite._truth`'s arithmetic for the agents at state rows `slots`: (N, 3, 3)
    `rot` (quat_to_matrix), (N, 3) body `rate` (einsum R^T omega), (N, 3) `accel` (velocity
    change over `dt`), and what euler_from_matrix hands numpy's arctan2 and arcsin: (N, 3)
    `ys`, `xs` (roll: R21, R22; unused: 0, 1; yaw: R10, R00) and (N,) `clip` (-R20 within
    [-1, 1])."""
    for k in range(slots.shape[0]):
        s = slots[k]
        r = rotation_rows(
            orientation[s, 0], orientation[s, 1], orientation[s, 2], orientation[s, 3]
        )
        w0, w1, w2 = omega[s, 0], omega[s, 1], omega[s, 2]
        for i in range(3):
            rot[k, i, 0], rot[k, i, 1], rot[k, i, 2] = r[i]
            rate[k, i] = ((0.0 + r[0][i] * w0) + r[1][i] * w1) + r[2][i] * w2
            accel[k, i] = (velocity[s, i] - last_velocity[k, i]) / dt
        ys[k, 0], xs[k, 0] = r[2][1], r[2][2]
        ys[k, 1], xs[k, 1] = 0.0, 1.0  # the pitch's column: arcsin's
        ys[k, 2], xs[k, 2] = r[1][0], r[0][0]
        clip[k] = _min(_max(-r[2][0], -1.0), 1.0)


@njit(**_JIT)
def attitude_and_propagation(
    euler, gyro, ahrs, heading, fresh, gain, dt, body_rate, quaternion, angular_velocity,
    rot_est, specific_force, g, position, velocity,
):  # fmt: skip  # pragma: no cover - compiled
    """`SensorSuite._update_attitude` and `_propagate` (uav/estimation.py) with the
    IMU, the AHRS and a heading input on, in place: rates from the gyros, roll and pitch from
    the AHRS, yaw gyro-propagated and pulled toward `heading` (N,) when `fresh` by `gain`;
    the quaternion, rotation and world rates of the estimate; position and velocity moved by
    the specific force rotated by it, gravity `g` removed."""
    half_dt2 = 0.5 * dt * dt
    for k in range(euler.shape[0]):
        b0, b1, b2 = gyro[k, 0], gyro[k, 1], gyro[k, 2]
        body_rate[k, 0], body_rate[k, 1], body_rate[k, 2] = b0, b1, b2
        euler[k, 0], euler[k, 1] = ahrs[k, 0], ahrs[k, 1]
        roll = euler[k, 0]
        yaw = euler[k, 2] + dt * (b1 * np.sin(roll) + b2 * np.cos(roll)) / np.cos(euler[k, 1])
        if fresh:
            yaw += gain * _wrap(heading[k] - yaw)
        yaw = _wrap(yaw)
        euler[k, 2] = yaw
        cr, sr = np.cos(euler[k, 0] / 2), np.sin(euler[k, 0] / 2)  # euler_to_quat
        cp, sp = np.cos(euler[k, 1] / 2), np.sin(euler[k, 1] / 2)
        cy, sy = np.cos(yaw / 2), np.sin(yaw / 2)
        qx = sr * cp * cy - cr * sp * sy
        qy = cr * sp * cy + sr * cp * sy
        qz = cr * cp * sy - sr * sp * cy
        qw = cr * cp * cy + sr * sp * sy
        quaternion[k, 0], quaternion[k, 1], quaternion[k, 2], quaternion[k, 3] = qx, qy, qz, qw
        r = rotation_rows(qx, qy, qz, qw)
        f0, f1, f2 = specific_force[k, 0], specific_force[k, 1], specific_force[k, 2]
        for i in range(3):
            rot_est[k, i, 0], rot_est[k, i, 1], rot_est[k, i, 2] = r[i]
            angular_velocity[k, i] = _dot_nij(r[i][0] * b0, r[i][1] * b1, r[i][2] * b2)
        for i in range(3):  # a = R f - g, p += dt v + dt^2/2 a, v += dt a
            a = _dot_nij(r[i][0] * f0, r[i][1] * f1, r[i][2] * f2) - g[i]
            position[k, i] += dt * velocity[k, i] + half_dt2 * a
            velocity[k, i] += dt * a


@njit(**_JIT)
def to_body(rot, v):  # pragma: no cover - compiled
    """np.einsum("nji,nj->ni", rot, v) of (N, 3, 3) rotations and (N, 3) world vectors: the
    (N, 3) body-frame vectors R^T v, summed from zero in index order as numpy does."""
    out = np.empty(v.shape)
    for k in range(v.shape[0]):
        v0, v1, v2 = v[k, 0], v[k, 1], v[k, 2]
        for i in range(3):
            out[k, i] = ((0.0 + rot[k, 0, i] * v0) + rot[k, 1, i] * v1) + rot[k, 2, i] * v2
    return out


@njit(inline="always", **_JIT)
def _dot_nij(p0, p1, p2):  # pragma: no cover - compiled
    """One row of einsum("nij,nj->ni") from its three products, as numpy sums them."""
    return ((0.0 + p0) + (0.0 + p2)) + (0.0 + p1)


@njit(inline="always", **_JIT)
def _wrap(a):  # pragma: no cover - compiled
    """core.geo.wrap_angle: (a + pi) % (2 pi) - pi."""
    return (a + np.pi) % (2 * np.pi) - np.pi


@njit(inline="always", **_JIT)
def _min(a, b):  # pragma: no cover - compiled
    """np.minimum of two floats (NaN in, NaN out)."""
    m = a if a < b else b
    return a + b if (a != a) | (b != b) else m


@njit(inline="always", **_JIT)
def _max(a, b):  # pragma: no cover - compiled
    """np.maximum of two floats (NaN in, NaN out)."""
    m = a if a > b else b
    return a + b if (a != a) | (b != b) else m


ahead(to_body, "f8[3] f8[2]")
ahead(air_and_lift, "i8[1] f8[2] f8[2] f8[1] f8[2] f8[1]")
ahead(truth_arrays, "i8[1] f8[2] f8[2] f8[2] f8[2] f8 f8[3] f8[2] f8[2] f8[2] f8[2] f8[1]")
ahead(
    attitude_and_propagation,
    "f8[2] f8[2] f8[2] f8[1] ? f8 f8 f8[2] f8[2] f8[2] f8[3] f8[2] f8[1] f8[2] f8[2]",
)
