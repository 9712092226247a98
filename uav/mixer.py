"""X mixer: the constants that turn (collective, roll, pitch, yaw) demands into four motor
thrusts, with saturation (the mixing itself runs in uav/kernel.py, `_mix`, and in
uav/reference.py, `mix`).

Priority when the motors cannot deliver everything: roll and pitch first (scaled down only if
their differential alone exceeds the thrust range), then collective (shifted to make room),
and yaw last (scaled down to what is left).
"""

from __future__ import annotations

import numpy as np

from skyswarm.uav.model import Airframe


class Mixer:
    """The inverse of the airframe's allocation matrix, split by demand."""

    def __init__(self, airframe: Airframe) -> None:
        inv = np.linalg.inv(airframe.allocation)  # (4, 4): thrusts = inv @ demand
        self.f_max = airframe.max_thrust_n  # N per motor
        self.per_collective = float(inv[0, 0])  # N per N of collective: 1/4 for the symmetric X
        self.attitude_map = inv[:, 1:3].T.copy()  # (2, 4) N per N m of roll, pitch torque
        self.yaw_map = inv[:, 3].copy()  # (4,) N per N m of yaw torque
        self.yaw_abs = np.maximum(np.abs(self.yaw_map), 1e-12)  # (4,)
