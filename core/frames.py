"""Rotations, written once: quaternions (x, y, z, w) -> rotation matrices, Euler angles, and
vectors between the body and world frames, for every kernel and every numpy caller.

World ENU, body FLU (docs/architecture.md, Frames). Euler angles are the aerospace Z-Y-X
sequence: R = Rz(yaw) Ry(pitch) Rx(roll); positive pitch puts the nose down, positive roll the
left side up. R maps body to world: v_world = R v_body.

Each formula is one numba function (core/jit.py keeps the compiled callers fresh when it is
edited). Compiled kernels call them on scalars: uav/kernel.py holds R as three rows (tuples),
the fast backend (core/backends/fast_kernel.py, spatial_hash.py) as a (3, 3) array
(`rotation_matrix`). Plain Python calls the same functions (uav/reference.py, on floats), and
the numpy wrappers below run the same Python body (`py_func`) element-wise on arrays of N
bodies, so every caller does the same arithmetic in the same order.

Usage:

    r = rotation_rows(0.0, 0.0, math.sin(0.5), math.cos(0.5))   # yaw 1 rad, three rows
    roll, pitch, yaw = euler_angles(r)                           # (0.0, 0.0, 1.0)
    to_world(r, 1.0, 0.0, 0.0)                                   # (cos 1, sin 1, 0)
    quat_to_matrix(np.array([[0.0, 0.0, 0.0, 1.0]]))             # (1, 3, 3) identity
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skyswarm.core.jit import njit

# Three rows of three entries, each a float (compiled, plain Python) or an (N,) array (numpy).
Rows = tuple[tuple[Any, Any, Any], tuple[Any, Any, Any], tuple[Any, Any, Any]]
_STAGE = {"inline": "always", "nogil": True}  # compiled into each caller with its options


@njit(**_STAGE)
def rotation_rows(x: Any, y: Any, z: Any, w: Any) -> Rows:
    """Unit quaternion (x, y, z, w) -> body-to-world rotation R as three rows; no
    normalisation."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return (
        (1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)),
        (2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)),
        (2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)),
    )


@njit(**_STAGE)
def euler_angles(r: Any) -> tuple[Any, Any, Any]:
    """Rotation rows (or a (3, 3) matrix) -> (roll, pitch, yaw) rad, Z-Y-X. The clamp before
    arcsin keeps rounding from leaving [-1, 1] and lets NaN through."""
    pitch = np.arcsin(np.minimum(np.maximum(-r[2][0], -1.0), 1.0))
    return np.arctan2(r[2][1], r[2][2]), pitch, np.arctan2(r[1][0], r[0][0])


@njit(**_STAGE)
def yaw_angle(r: Any) -> Any:
    """Rotation rows (or a (3, 3) matrix) -> the yaw of `euler_angles` alone, rad, the same
    operation (a caller that needs no roll or pitch skips their arcsin and arctan2)."""
    return np.arctan2(r[1][0], r[0][0])


@njit(**_STAGE)
def to_world(r: Any, v0: Any, v1: Any, v2: Any) -> tuple[Any, Any, Any]:
    """R v: a body-frame vector (v0, v1, v2) in the world frame."""
    return (
        r[0][0] * v0 + r[0][1] * v1 + r[0][2] * v2,
        r[1][0] * v0 + r[1][1] * v1 + r[1][2] * v2,
        r[2][0] * v0 + r[2][1] * v1 + r[2][2] * v2,
    )


@njit(**_STAGE)
def transpose(r: Any) -> Rows:
    """R^T as three rows: the world-to-body rotation."""
    return (r[0][0], r[1][0], r[2][0]), (r[0][1], r[1][1], r[2][1]), (r[0][2], r[1][2], r[2][2])


@njit(**_STAGE)
def to_body(r: Any, v0: Any, v1: Any, v2: Any) -> tuple[Any, Any, Any]:
    """R^T v: a world-frame vector (v0, v1, v2) in the body frame."""
    return to_world(transpose(r), v0, v1, v2)


@njit(nogil=True)
def rotation_matrix(q: np.ndarray, out: np.ndarray) -> None:
    """(4,) quaternion (x, y, z, w) -> its (3, 3) body-to-world rotation, written into `out`
    (no allocation: the fast backend calls it per body and tick)."""
    r = rotation_rows(q[0], q[1], q[2], q[3])
    out[0, 0], out[0, 1], out[0, 2] = r[0]  # constant indices: no tuple lookup at run time
    out[1, 0], out[1, 1], out[1, 2] = r[1]
    out[2, 0], out[2, 1], out[2, 2] = r[2]


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(N, 4) quaternions (x, y, z, w) -> (N, 3, 3) body-to-world rotation matrices."""
    rows = rotation_rows.py_func(q[:, 0], q[:, 1], q[:, 2], q[:, 3])
    r = np.empty((len(q), 3, 3))
    for i in range(3):
        for j in range(3):
            r[:, i, j] = rows[i][j]
    return r


def euler_from_matrix(r: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotation matrices -> (N, 3) roll, pitch, yaw in rad (Z-Y-X)."""
    rows = r.transpose(1, 2, 0)  # rows[i][j] is the (N,) column of R[i, j]
    return np.stack(euler_angles.py_func(rows), axis=1)


def yaw_quaternion(yaw: np.ndarray) -> np.ndarray:
    """(N,) ENU yaw in rad -> (N, 4) quaternions (x, y, z, w) of a level body."""
    yaw = np.asarray(yaw, dtype=float)
    q = np.zeros((len(yaw), 4))
    q[:, 2] = np.sin(yaw / 2)
    q[:, 3] = np.cos(yaw / 2)
    return q
