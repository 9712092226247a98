"""X mixer: (collective, roll, pitch, yaw) demands -> four motor thrusts, with saturation.

Priority when the motors cannot deliver everything: roll and pitch first (scaled down only if
their differential alone exceeds the thrust range), then collective (shifted to make room),
and yaw last (scaled down to what is left).
"""

from __future__ import annotations

import numpy as np

from skyswarm.uav.model import Airframe


class Mixer:
    """Inverse of the airframe's allocation matrix, applied to (N, 4) demands."""

    def __init__(self, airframe: Airframe) -> None:
        inv = np.linalg.inv(airframe.allocation)  # (4, 4): thrusts = inv @ demand
        self.f_max = airframe.max_thrust_n
        self.per_collective = float(inv[0, 0])  # 1/4 for the symmetric X
        self.attitude_map = inv[:, 1:3].T.copy()  # (2, 4)
        self.yaw_map = inv[:, 3].copy()  # (4,)
        self.yaw_abs = np.maximum(np.abs(self.yaw_map), 1e-12)

    def mix(self, demand: np.ndarray) -> np.ndarray:
        """(N, 4) [collective N, torque x, y, z N m] -> (N, 4) thrusts in [0, f_max] N."""
        f_max = self.f_max
        diff = demand[:, 1:3] @ self.attitude_map  # (N, 4) roll/pitch differential
        hi, lo = diff.max(axis=1), diff.min(axis=1)
        shrink = np.minimum(1.0, f_max / np.maximum(hi - lo, 1e-12))
        diff *= shrink[:, None]
        collective = np.minimum(
            np.maximum(demand[:, 0] * self.per_collective, -lo * shrink), f_max - hi * shrink
        )
        base = diff + collective[:, None]
        # Yaw gets the largest fraction of its demand that keeps every motor in range.
        yaw = demand[:, 3:4] * self.yaw_map  # (N, 4)
        room = np.where(yaw > 0, f_max - base, base) / self.yaw_abs  # N m of yaw each allows
        needed = np.abs(demand[:, 3])
        fraction = np.minimum(np.maximum(room.min(axis=1) / np.maximum(needed, 1e-300), 0.0), 1.0)
        return np.minimum(np.maximum(base + yaw * fraction[:, None], 0.0), f_max)
