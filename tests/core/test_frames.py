"""core/frames.py: the one definition of the rotations, compiled and numpy alike."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from skyswarm.core.backends import fast_kernel, spatial_hash
from skyswarm.core.frames import (
    euler_angles,
    euler_from_matrix,
    quat_to_matrix,
    rotation_matrix,
    rotation_rows,
    to_body,
    to_world,
    yaw_angle,
    yaw_quaternion,
)


def quat_from_euler(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """(x, y, z, w) of R = Rz(yaw) Ry(pitch) Rx(roll), by the half-angle product."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return np.array(
        [
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ]
    )


@njit
def compiled_euler(q: np.ndarray) -> np.ndarray:
    """The kernels' path: rows from the quaternion, then the angles, per row of q (N, 4)."""
    out = np.empty((q.shape[0], 3))
    for i in range(q.shape[0]):
        a = euler_angles(rotation_rows(q[i, 0], q[i, 1], q[i, 2], q[i, 3]))
        out[i, 0], out[i, 1], out[i, 2] = a
    return out


def test_known_rotations_by_hand() -> None:
    s = math.sqrt(0.5)
    yaw90 = rotation_rows(0.0, 0.0, s, s)  # nose (body x) turns to the north (world y)
    assert np.allclose(to_world(yaw90, 1.0, 0.0, 0.0), (0.0, 1.0, 0.0), atol=1e-15)
    roll90 = rotation_rows(s, 0.0, 0.0, s)  # left side up: body y points up
    assert np.allclose(to_world(roll90, 0.0, 1.0, 0.0), (0.0, 0.0, 1.0), atol=1e-15)
    # the world's up, seen from a body pitched 90 degrees nose down, is its forward x
    pitch90 = rotation_rows(0.0, s, 0.0, s)
    assert np.allclose(to_body(pitch90, 0.0, 0.0, 1.0), (-1.0, 0.0, 0.0), atol=1e-15)
    assert rotation_rows(0.0, 0.0, 0.0, 1.0) == ((1, 0, 0), (0, 1, 0), (0, 0, 1))


def test_euler_angles_round_trip_and_the_clamp() -> None:
    for angles in [(0.3, -0.2, 1.1), (-1.2, 0.7, -3.0), (0.0, 0.0, math.pi - 1e-9)]:
        got = euler_angles(rotation_rows(*quat_from_euler(*angles)))
        assert np.allclose(got, angles, atol=1e-12), (got, angles)
    # pitch +90 degrees with a quaternion 1e-9 too long: R[2][0] < -1 by rounding; the clamp
    # gives exactly pi / 2 instead of NaN
    q = quat_from_euler(0.0, math.pi / 2, 0.0) * (1 + 1e-9)
    assert rotation_rows(*q)[2][0] < -1.0
    assert euler_angles(rotation_rows(*q))[1] == math.pi / 2
    assert all(math.isnan(a) for a in euler_angles(rotation_rows(math.nan, 0.0, 0.0, 1.0)))


def test_to_body_undoes_to_world() -> None:
    rng = np.random.default_rng(5)
    for q in rng.normal(size=(50, 4)):
        r = rotation_rows(*(q / np.linalg.norm(q)))
        v = rng.normal(size=3)
        assert np.allclose(to_body(r, *to_world(r, *v)), v, atol=1e-14)


def test_compiled_and_numpy_callers_agree_bit_for_bit() -> None:
    """The fast backend's array form, the kernels' rows and the numpy wrapper are one formula:
    the same bits for unit and non-unit quaternions, half turns and the identity."""
    rng = np.random.default_rng(3)
    q = np.vstack([rng.normal(size=(300, 4)), [[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0]]])
    batch = quat_to_matrix(q)
    one = np.empty((3, 3))
    for k in range(len(q)):
        rotation_matrix(q[k], one)
        assert np.array_equal(one, batch[k])
        assert np.array_equal(np.array(rotation_rows(*q[k])), batch[k])
    # numpy's vectorised arcsin/arctan2 may round differently from libm's in the last bit
    assert np.allclose(compiled_euler(q), euler_from_matrix(batch), rtol=0, atol=1e-15)


def test_every_kernel_uses_the_one_definition() -> None:
    assert fast_kernel._rot is rotation_matrix
    assert spatial_hash._rot is rotation_matrix


def test_yaw_quaternion_is_level_and_turns_by_the_yaw() -> None:
    q = yaw_quaternion(np.array([0.0, math.pi / 2, -math.pi]))
    assert np.allclose(euler_from_matrix(quat_to_matrix(q))[:2, 2], [0.0, math.pi / 2])
    assert np.allclose(np.abs(euler_from_matrix(quat_to_matrix(q))[2, 2]), math.pi)
    assert np.array_equal(q[:, :2], np.zeros((3, 2)))


@njit
def compiled_yaw(q: np.ndarray) -> np.ndarray:
    out = np.empty(q.shape[0])
    for i in range(q.shape[0]):
        out[i] = yaw_angle(rotation_rows(q[i, 0], q[i, 1], q[i, 2], q[i, 3]))
    return out


def test_yaw_angle_is_the_yaw_of_euler_angles_bit_for_bit() -> None:
    """The kernels' yaw alone (BodyRates reads no roll or pitch) equals euler_angles' third
    angle exactly, on random rotations, yaw +-pi and a NaN quaternion."""
    q = np.random.default_rng(3).normal(size=(10_000, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q = np.vstack([q, [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, -1.0, 0.0], [np.nan, 0.0, 0.0, 1.0]])
    got, want = compiled_yaw(q), compiled_euler(q)[:, 2]
    assert np.array_equal(got, want, equal_nan=True)
    assert got[-3] == math.pi and math.isnan(got[-1])
