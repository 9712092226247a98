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
from skyswarm.uav.model import WrenchModel, air_density, ground_effect_ratio

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
        self.rows = self.slots  # numpy's gathers of the same rows
        self.params = np.array(
            [float(model.quadratic), model.rotor_drag, model.k_f, model.rotor_radius]
        )
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
        model = self.model
        height = state.position[self.rows, 2]
        rho = air_density(height) if model.quadratic else self._no_rho
        lift = thrust
        if model.rotor_radius > 0.0:
            lift = thrust * ground_effect_ratio(height, model.rotor_radius)[:, None]
        torque_body = lift @ model.torque_map
        if model.rotor_radius > 0.0:  # the reaction torque follows the rotor, not the ground
            torque_body[:, 2] = thrust @ model.torque_map[:, 2]
        force = np.empty((len(self.slots), 3))
        torque = np.empty((len(self.slots), 3))
        true_wrench(
            self.slots, state.orientation, state.linear_velocity, state.angular_velocity,
            np.ascontiguousarray(thrust), np.ascontiguousarray(lift), wind, rho,
            torque_body, self.params, self.drag, self.drag_quad, self.arms, force, torque,
        )  # fmt: skip
        return force, torque


@njit(**_JIT)
def true_wrench(
    slots, orientation, velocity, omega, thrust, lift, wind, rho, torque_body, params, drag,
    drag_quad, arms, force, torque,
):  # fmt: skip  # pragma: no cover - compiled
    """`WrenchModel.compute` per agent k at state row slots[k], written into `force` and
    `torque` (N, 3). `lift` (N, 4) the thrusts with ground effect, `rho` (N,) the air density
    (quadratic drag), `torque_body` (N, 3) lift @ torque_map (its z from the thrusts with
    ground effect), all from numpy; `params`: quadratic (0/1), k_d, k_f, rotor radius."""
    quadratic, k_d, k_f = params[0] != 0.0, params[1], params[2]
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
                force[k, i] = ((drag_quad[i] * rho[k]) * abs(u[i])) * u[i]
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
