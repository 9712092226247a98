"""A PID controller over arrays: N agents x k axes, updated in one vectorised pass.

- gains per axis, shape (k,);
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
    """PID on (N, k) arrays; axis j uses `gains[j]`."""

    def __init__(self, gains: Sequence[PidGains], n: int, dt: float) -> None:
        self.kp = np.array([g.kp for g in gains], dtype=float)
        self.ki_dt = np.array([g.ki * dt for g in gains], dtype=float)
        self.kd = np.array([g.kd for g in gains], dtype=float)
        self.i_limit = np.array([g.i_limit for g in gains], dtype=float)
        self.out_limit = np.array([g.out_limit for g in gains], dtype=float)
        self._i_lo, self._out_lo = -self.i_limit, -self.out_limit
        self.integral = np.zeros((n, len(gains)))  # output units

    def update(self, error: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """(N, k) error and (N, k) measurement rate -> (N, k) output, clamped to +-out_limit."""
        p_d = self.kp * error - self.kd * rate
        # np.minimum/np.maximum: np.clip's Python wrapper costs more than the work at N ~ 100.
        trial = np.minimum(np.maximum(self.integral + self.ki_dt * error, self._i_lo), self.i_limit)
        raw = p_d + trial
        # Saturated and the error pushes further into saturation: keep the old integral.
        winding = (np.abs(raw) > self.out_limit) & (error * raw > 0)
        self.integral = np.where(winding, self.integral, trial)
        return np.minimum(np.maximum(p_d + self.integral, self._out_lo), self.out_limit)

    def reset(self, mask: np.ndarray, integral: np.ndarray | float = 0.0) -> None:
        """Set the integral of agents `mask` ((N,) bool or index array) to `integral`
        ((n_masked, k) or scalar), clamped to +-i_limit."""
        value = np.broadcast_to(integral, self.integral[mask].shape)
        self.integral[mask] = np.clip(value, -self.i_limit, self.i_limit)
