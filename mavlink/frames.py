"""ENU/FLU (skyswarm) <-> NED/FRD (MAVLink, PX4) for arrays of vehicles.

skyswarm's world frame is ENU (x east, y north, z up) with bodies FLU (x forward, y left, z up);
MAVLink's local frame is NED (x north, y east, z down) with bodies FRD. A vector maps by
`T = [[0, 1, 0], [1, 0, 0], [0, 0, -1]]` (ENU <-> NED, its own inverse) and a body vector by
`F = diag(1, -1, -1)` (FLU <-> FRD), so a body-to-world rotation maps as
`R_ned_frd = T @ R_enu_flu @ F` (and back the same way). Headings: yaw_ned = pi/2 - yaw_enu.

    ned = enu_to_ned(np.array([[1.0, 2.0, 3.0]]))   # [[2, 1, -3]]
"""

from __future__ import annotations

import numpy as np

from skyswarm.core.frames import euler_from_matrix, quat_to_matrix

T_ENU_NED = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
F_FLU_FRD = np.diag([1.0, -1.0, -1.0])


def enu_to_ned(v: np.ndarray) -> np.ndarray:
    """(n, 3) ENU vectors (positions m, velocities m/s) -> (n, 3) NED; also NED -> ENU."""
    v = np.asarray(v, dtype=float)
    return np.stack([v[..., 1], v[..., 0], -v[..., 2]], axis=-1)


ned_to_enu = enu_to_ned


def flu_to_frd(w: np.ndarray) -> np.ndarray:
    """(n, 3) body FLU vectors (rates rad/s) -> FRD; also FRD -> FLU."""
    w = np.asarray(w, dtype=float)
    return np.stack([w[..., 0], -w[..., 1], -w[..., 2]], axis=-1)


frd_to_flu = flu_to_frd


def rotation_ned(q_enu: np.ndarray) -> np.ndarray:
    """(n, 4) body-to-world quaternions ENU/FLU (x, y, z, w) -> (n, 3, 3) R_ned_frd."""
    r = quat_to_matrix(np.asarray(q_enu, dtype=float).reshape(-1, 4))
    return T_ENU_NED @ r @ F_FLU_FRD


def rotation_enu(r_ned: np.ndarray) -> np.ndarray:
    """(n, 3, 3) R_ned_frd -> (n, 3, 3) R_enu_flu."""
    return T_ENU_NED @ np.asarray(r_ned, dtype=float) @ F_FLU_FRD


def euler_ned(r_ned: np.ndarray) -> np.ndarray:
    """(n, 3) roll, pitch, yaw rad (aerospace ZYX) of (n, 3, 3) R_ned_frd; yaw from north,
    clockwise, in (-pi, pi]."""
    return euler_from_matrix(r_ned)


def matrix_to_quat_wxyz(r: np.ndarray) -> np.ndarray:
    """(n, 3, 3) rotations -> (n, 4) unit quaternions (w, x, y, z), w >= 0 (MAVLink's order)."""
    r = np.asarray(r, dtype=float).reshape(-1, 3, 3)
    tr = r[:, 0, 0] + r[:, 1, 1] + r[:, 2, 2]
    cand = np.stack(
        [
            1.0 + tr,
            1.0 + r[:, 0, 0] - r[:, 1, 1] - r[:, 2, 2],
            1.0 - r[:, 0, 0] + r[:, 1, 1] - r[:, 2, 2],
            1.0 - r[:, 0, 0] - r[:, 1, 1] + r[:, 2, 2],
        ],
        axis=1,
    )
    k = np.argmax(cand, axis=1)  # the largest component: no cancellation
    s = np.sqrt(np.maximum(cand[np.arange(len(r)), k], 1e-300)) * 2.0  # 4 |q_k|
    q = np.empty((len(r), 4))
    m = k == 0
    q[m, 0] = s[m] / 4
    q[m, 1] = (r[m, 2, 1] - r[m, 1, 2]) / s[m]
    q[m, 2] = (r[m, 0, 2] - r[m, 2, 0]) / s[m]
    q[m, 3] = (r[m, 1, 0] - r[m, 0, 1]) / s[m]
    m = k == 1
    q[m, 0] = (r[m, 2, 1] - r[m, 1, 2]) / s[m]
    q[m, 1] = s[m] / 4
    q[m, 2] = (r[m, 0, 1] + r[m, 1, 0]) / s[m]
    q[m, 3] = (r[m, 0, 2] + r[m, 2, 0]) / s[m]
    m = k == 2
    q[m, 0] = (r[m, 0, 2] - r[m, 2, 0]) / s[m]
    q[m, 1] = (r[m, 0, 1] + r[m, 1, 0]) / s[m]
    q[m, 2] = s[m] / 4
    q[m, 3] = (r[m, 1, 2] + r[m, 2, 1]) / s[m]
    m = k == 3
    q[m, 0] = (r[m, 1, 0] - r[m, 0, 1]) / s[m]
    q[m, 1] = (r[m, 0, 2] + r[m, 2, 0]) / s[m]
    q[m, 2] = (r[m, 1, 2] + r[m, 2, 1]) / s[m]
    q[m, 3] = s[m] / 4
    q *= np.where(q[:, :1] < 0.0, -1.0, 1.0)
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def quat_wxyz_to_matrix(q: np.ndarray) -> np.ndarray:
    """(n, 4) quaternions (w, x, y, z), normalised here -> (n, 3, 3) rotations."""
    q = np.asarray(q, dtype=float).reshape(-1, 4)
    q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
    return quat_to_matrix(q[:, [1, 2, 3, 0]])


def yaw_enu_to_ned(yaw: np.ndarray | float) -> np.ndarray:
    """ENU yaw (from east, counter-clockwise) -> NED yaw (from north, clockwise), rad in
    (-pi, pi]; its own inverse."""
    y = np.pi / 2 - np.asarray(yaw, dtype=float)
    return np.arctan2(np.sin(y), np.cos(y))


yaw_ned_to_enu = yaw_enu_to_ned
