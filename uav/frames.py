"""Rotations of many bodies at once: quaternions (x, y, z, w) -> matrices and Euler angles.

Euler angles are the aerospace Z-Y-X sequence in the FLU body / ENU world frames:
R = Rz(yaw) Ry(pitch) Rx(roll); positive pitch puts the nose down, positive roll the left side up.
"""

from __future__ import annotations

import numpy as np


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """(N, 4) quaternions (x, y, z, w) -> (N, 3, 3) body-to-world rotation matrices."""
    x, y, z, w = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    r = np.empty((len(q), 3, 3))
    r[:, 0, 0] = 1 - 2 * (yy + zz)
    r[:, 0, 1] = 2 * (xy - wz)
    r[:, 0, 2] = 2 * (xz + wy)
    r[:, 1, 0] = 2 * (xy + wz)
    r[:, 1, 1] = 1 - 2 * (xx + zz)
    r[:, 1, 2] = 2 * (yz - wx)
    r[:, 2, 0] = 2 * (xz - wy)
    r[:, 2, 1] = 2 * (yz + wx)
    r[:, 2, 2] = 1 - 2 * (xx + yy)
    return r


def euler_from_matrix(r: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotation matrices -> (N, 3) roll, pitch, yaw in rad (Z-Y-X)."""
    out = np.empty((len(r), 3))
    out[:, 0] = np.arctan2(r[:, 2, 1], r[:, 2, 2])
    out[:, 1] = np.arcsin(np.clip(-r[:, 2, 0], -1.0, 1.0))
    out[:, 2] = np.arctan2(r[:, 1, 0], r[:, 0, 0])
    return out


def yaw_quaternion(yaw: np.ndarray) -> np.ndarray:
    """(N,) ENU yaw in rad -> (N, 4) quaternions (x, y, z, w) of a level body."""
    yaw = np.asarray(yaw, dtype=float)
    q = np.zeros((len(yaw), 4))
    q[:, 2] = np.sin(yaw / 2)
    q[:, 3] = np.cos(yaw / 2)
    return q
