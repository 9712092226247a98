"""Rotations: quaternions (x, y, z, w) -> rotation matrices and Euler angles.

Euler angles are the aerospace Z-Y-X sequence in the FLU body / ENU world frames:
R = Rz(yaw) Ry(pitch) Rx(roll); positive pitch puts the nose down, positive roll the left side up.

`rotation_rows` and `euler_angles` are written once for plain floats (the one-agent reference,
uav/reference.py) and numpy arrays element-wise (`quat_to_matrix`, `euler_from_matrix` for N
bodies at once). uav/kernel.py compiles its own copy (numba's on-disk cache would not see an
edit here); tests/uav/test_uav_reference.py holds the two together.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Three rows of three entries, each a float or an (N,) array: R[i][j].
Rows = tuple[tuple[Any, Any, Any], tuple[Any, Any, Any], tuple[Any, Any, Any]]


def rotation_rows(x: Any, y: Any, z: Any, w: Any) -> Rows:
    """Unit quaternion (x, y, z, w) -> body-to-world rotation R as three rows.

    Floats or equal-shape arrays (element-wise); no normalisation."""
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    return (
        (1 - 2 * (yy + zz), 2 * (xy - wz), 2 * (xz + wy)),
        (2 * (xy + wz), 1 - 2 * (xx + zz), 2 * (yz - wx)),
        (2 * (xz - wy), 2 * (yz + wx), 1 - 2 * (xx + yy)),
    )


def euler_angles(r: Rows) -> tuple[Any, Any, Any]:
    """Rotation rows -> (roll, pitch, yaw) in rad, Z-Y-X. Floats or arrays element-wise; the
    clamp before arcsin keeps rounding from leaving [-1, 1] and lets NaN through."""
    roll = np.arctan2(r[2][1], r[2][2])
    pitch = np.arcsin(np.minimum(np.maximum(-r[2][0], -1.0), 1.0))
    yaw = np.arctan2(r[1][0], r[0][0])
    return roll, pitch, yaw


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(N, 4) quaternions (x, y, z, w) -> (N, 3, 3) body-to-world rotation matrices."""
    rows = rotation_rows(q[:, 0], q[:, 1], q[:, 2], q[:, 3])
    r = np.empty((len(q), 3, 3))
    for i in range(3):
        for j in range(3):
            r[:, i, j] = rows[i][j]
    return r


def euler_from_matrix(r: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotation matrices -> (N, 3) roll, pitch, yaw in rad (Z-Y-X)."""
    rows = r.transpose(1, 2, 0)  # rows[i][j] is the (N,) column of R[i, j]
    return np.stack(euler_angles(rows), axis=1)  # type: ignore[arg-type]


def yaw_quaternion(yaw: np.ndarray) -> np.ndarray:
    """(N,) ENU yaw in rad -> (N, 4) quaternions (x, y, z, w) of a level body."""
    yaw = np.asarray(yaw, dtype=float)
    q = np.zeros((len(yaw), 4))
    q[:, 2] = np.sin(yaw / 2)
    q[:, 3] = np.cos(yaw / 2)
    return q
