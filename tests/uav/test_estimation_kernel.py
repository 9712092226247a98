"""uav/estimation_kernel.py: the compiled per-tick work of control on the estimate is the numpy
it replaces bit for bit: the wrench from the true state (WrenchModel.compute), the truth the
sensors read (SensorSuite._truth), the attitude update and propagation of the estimate.
tests/uav/test_estimation.py flies them; the numbers of whole runs are pinned there.

These compare against numpy on this machine: numpy's own summation order for einsum("nij")
is its AVX-512 reduction's (see the module), so on a CPU without AVX-512 numpy itself sums
differently, and a failure here says which of the two changed."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.core.geo import wrap_angle
from skyswarm.uav.estimation import euler_to_quat
from skyswarm.uav.estimation_kernel import (
    TrueWrench,
    attitude_and_propagation,
    to_body,
    truth_arrays,
)
from skyswarm.uav.model import Airframe, WrenchModel

BASE = {
    "mass_kg": 1.2,
    "arm_length_m": 0.17,
    "inertia_kg_m2": (0.0123, 0.0123, 0.0224),
    "max_thrust_n": 5.886,
    "motor_time_constant_s": 0.02,
    "yaw_torque_coefficient_m": 0.016,
}
ROTOR = {
    "rotor_model": "rotor_speed",
    "thrust_coefficient_n_s2": 4.8645e-6,
    "torque_coefficient_n_m_s2": 7.7832e-8,
}
AIRFRAMES = {  # every branch of WrenchModel.compute
    "linear": {"drag_coefficients": (0.1, 0.1, 0.2)},
    "quad_x": {  # configs/airframes/quad_x.toml: quadratic drag, rotor drag, ground effect
        **ROTOR,
        "rotor_drag_coefficient": 1e-4,
        "rotor_radius_m": 0.127,
        "drag_model": "quadratic",
        "drag_areas_m2": (0.02, 0.02, 0.04),
    },
    "ground_effect": {"rotor_radius_m": 0.127},
    "rotor_drag_linear": {**ROTOR, "rotor_drag_coefficient": 1e-4, "drag_coefficients": (0.1,) * 3},
}


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


@pytest.mark.parametrize("name", list(AIRFRAMES))
@pytest.mark.parametrize("n", [1, 2, 10, 31])
def test_true_wrench_is_wrench_model_compute_bit_for_bit(name: str, n: int) -> None:
    model = WrenchModel(Airframe(**BASE, **AIRFRAMES[name]))
    rng = np.random.default_rng(n)
    for trial in range(60):
        capacity = n + 3  # the agents' rows are some rows of the world's arrays
        slots = rng.permutation(capacity)[:n] if trial % 2 else np.arange(n)
        q = rng.standard_normal((capacity, 4))
        q /= np.linalg.norm(q, axis=1)[:, None]
        state = SimpleNamespace(
            position=rng.uniform(-1.0, 30.0, (capacity, 3)),  # below ground: clamped heights
            orientation=q,
            linear_velocity=5.0 * rng.standard_normal((capacity, 3)),
            angular_velocity=rng.standard_normal((capacity, 3)),
        )
        thrust = rng.uniform(0.0, 5.886, (n, 4))
        wind = rng.standard_normal((n, 3)) if trial % 3 else np.zeros((n, 3))
        if trial % 4 == 0:  # at rest, level, motors off: the signed zeros must agree too
            state.orientation[:] = (0.0, 0.0, 0.0, 1.0)
            state.angular_velocity[rng.random((capacity, 3)) < 0.5] = 0.0
            state.linear_velocity[rng.random((capacity, 3)) < 0.5] = 0.0
            thrust[rng.random((n, 4)) < 0.5] = 0.0
        rot = quat_to_matrix(state.orientation[slots])
        rates = np.einsum("nji,nj->ni", rot, state.angular_velocity[slots])
        velocity, position = state.linear_velocity[slots], state.position[slots]
        want = model.compute(thrust, rot, velocity, wind, position, rates)
        got = TrueWrench(model, slots)(state, thrust, wind)
        for w, g in zip(want, got):
            assert np.array_equal(bits(w), bits(g)), (name, n, trial)


def unit_quaternions(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.standard_normal((n, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    q[::5] = (0.0, 0.0, 0.0, 1.0)  # level: exact zeros in R
    q[1::7] = (0.0, 0.0, np.sin(1.5), np.cos(1.5))  # yaw only, near the +-pi seam
    return q


@pytest.mark.parametrize("n", [1, 4, 10, 33])
def test_truth_arrays_are_numpy_bit_for_bit(n: int) -> None:
    # SensorSuite._truth: quat_to_matrix, the body rates R^T omega, the acceleration over the
    # tick and euler_from_matrix, from rows `slots` of the world's arrays
    rng = np.random.default_rng(n)
    for _ in range(40):
        capacity = n + 2
        slots = rng.permutation(capacity)[:n]
        q = unit_quaternions(rng, capacity)
        omega, velocity = rng.standard_normal((capacity, 3)), rng.standard_normal((capacity, 3))
        omega[::3] = 0.0
        last, dt = rng.standard_normal((n, 3)), 0.0025
        rot, rate, accel = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3))
        ys, xs, clip = np.empty((n, 3)), np.empty((n, 3)), np.empty(n)
        truth_arrays(slots, q, omega, velocity, last, dt, rot, rate, accel, ys, xs, clip)
        euler = np.arctan2(ys, xs)  # as SensorSuite._truth finishes it
        euler[:, 1] = np.arcsin(clip)
        want_rot = quat_to_matrix(q[slots])
        assert np.array_equal(bits(rot), bits(want_rot))
        assert np.array_equal(bits(rate), bits(np.einsum("nji,nj->ni", want_rot, omega[slots])))
        assert np.array_equal(bits(accel), bits((velocity[slots] - last) / dt))
        assert np.array_equal(bits(euler), bits(euler_from_matrix(want_rot)))
        v = rng.standard_normal((n, 3))
        assert np.array_equal(bits(to_body(rot, v)), bits(np.einsum("nji,nj->ni", rot, v)))


def numpy_attitude_and_propagation(e, gyro, ahrs, yaw, fresh, gain, dt, sf, g, p, v):
    """uav/estimation.py's numpy update as it was (IMU, AHRS and heading on), on copies."""
    e, p, v = e.copy(), p.copy(), v.copy()
    body_rate = gyro.copy()
    e[:, :2] = ahrs[:, :2]
    roll, q_, r_ = e[:, 0], body_rate[:, 1], body_rate[:, 2]
    e[:, 2] += dt * (q_ * np.sin(roll) + r_ * np.cos(roll)) / np.cos(e[:, 1])
    if fresh:
        e[:, 2] += gain * wrap_angle(yaw - e[:, 2])
    e[:, 2] = wrap_angle(e[:, 2])
    quaternion = euler_to_quat(e)
    rot = quat_to_matrix(quaternion)
    angular_velocity = np.einsum("nij,nj->ni", rot, body_rate)
    a = np.einsum("nij,nj->ni", rot, sf) - g
    p += dt * v + (0.5 * dt * dt) * a
    v += dt * a
    return e, body_rate, quaternion, angular_velocity, p, v


@pytest.mark.parametrize("n", [1, 3, 10, 32])
def test_attitude_and_propagation_is_the_numpy_update_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    g, dt, gain = np.array([0.0, 0.0, 9.81]), 0.0025, 0.02
    for trial in range(60):
        e = rng.uniform(-np.pi, np.pi, (n, 3)) * (0.3, 0.3, 1.0)
        e[::4, 2] = np.pi - 1e-9  # at the seam: the wrap must agree
        gyro, ahrs = rng.standard_normal((n, 3)), rng.uniform(-0.5, 0.5, (n, 3))
        gyro[::3] = 0.0
        yaw = rng.uniform(-4.0, 4.0, n)  # compass readings are not wrapped
        sf = rng.standard_normal((n, 3)) + (0.0, 0.0, 9.81)
        p, v = rng.uniform(-50, 50, (n, 3)), rng.standard_normal((n, 3))
        fresh = trial % 2 == 0
        want = numpy_attitude_and_propagation(e, gyro, ahrs, yaw, fresh, gain, dt, sf, g, p, v)
        body_rate, quaternion, angular_velocity = (
            np.empty((n, 3)),
            np.empty((n, 4)),
            np.empty((n, 3)),
        )
        rot = np.empty((n, 3, 3))
        attitude_and_propagation(
            e, gyro, ahrs, yaw, fresh, gain, dt, body_rate, quaternion, angular_velocity, rot,
            sf, g, p, v,
        )  # fmt: skip
        for w, got in zip(want, (e, body_rate, quaternion, angular_velocity, p, v)):
            assert np.array_equal(bits(w), bits(got)), trial
