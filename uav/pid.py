"""PID loops over arrays: N agents x k axes, the gains per axis and the integrators.

The update itself runs in uav/kernel.py (compiled, `_pid`) and uav/reference.py (`pid_step`):
- the integral is stored as its contribution to the output (output units), clamped to
  +-i_limit, and frozen while the output saturates in the direction of the error
  (conditional integration: no windup);
- derivative on the measurement: the caller passes the measurement's rate of change, so a
  setpoint step gives no derivative kick and angle loops can use the gyro directly;
- `reset(mask, integral)` re-initialises chosen agents (bumpless mode switching).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import param


@dataclass(frozen=True)
class PidGains:
    """One loop's gains. Units depend on the loop (see the airframe file's comments)."""

    kp: float = param(doc="proportional gain, output per unit error", ge=0.0)
    ki: float = param(0.0, "integral gain, output per unit error per s", ge=0.0)
    kd: float = param(0.0, "derivative gain on the measurement, output per unit rate", ge=0.0)
    i_limit: float = param(1.0, "largest magnitude of the integral contribution", ge=0.0)
    out_limit: float = param(1.0, "largest magnitude of the output", gt=0.0)


class Pid:
    """Gains and integrators of one loop over N agents x k axes; axis j uses `gains[j]`."""

    def __init__(self, gains: Sequence[PidGains], integral: np.ndarray, dt: float) -> None:
        """`integral`: the (N, k) array (output units) this loop's integrals live in, updated
        in place (a view into the cascade's memory); `dt` s, the tick."""
        if integral.ndim != 2 or integral.shape[1] != len(gains):
            raise ValueError(
                f"integral must be shape (n, {len(gains)}), currently {integral.shape}"
            )
        self.kp = np.array([g.kp for g in gains], dtype=float)  # (k,)
        self.ki_dt = np.array([g.ki * dt for g in gains], dtype=float)  # (k,) per tick
        self.kd = np.array([g.kd for g in gains], dtype=float)  # (k,)
        self.i_limit = np.array([g.i_limit for g in gains], dtype=float)  # (k,)
        self.out_limit = np.array([g.out_limit for g in gains], dtype=float)  # (k,)
        self.integral = integral

    def reset(self, mask: np.ndarray, integral: np.ndarray | float = 0.0) -> None:
        """Set the integral of agents `mask` ((N,) bool or index array) to `integral`
        ((n_masked, k) or scalar), clamped to +-i_limit."""
        value = np.broadcast_to(integral, self.integral[mask].shape)
        self.integral[mask] = np.clip(value, -self.i_limit, self.i_limit)
