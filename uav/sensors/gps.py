"""The GPS, `[uav.sensors.gps]`; it feeds the estimator's position input.

GPS (QRSim's GPSSpaceSegmentGM + GPSReceiver): every satellite in view has one pseudorange error,
a Gauss–Markov process shared by all receivers; each receiver adds its own white noise per
pseudorange and solves by least squares, so its position error is P (e_shared + e_own), with P the
position rows of the pseudo-inverse of its geometry matrix [-u_k, 1]. Receivers that see the same
satellites have almost the same error (their difference is only the receiver noise). The sky is a
fixed, deterministic layout of `satellites` directions (elevation 15..85 deg): over a run of
minutes the constellation moves by a few degrees, which this leaves out. The configured sigma is
the stationary std of each pseudorange error; the horizontal RMS error is then
sqrt(pr_sigma^2 + receiver_sigma^2) * HDOP (`GpsModel.expected_horizontal_rms`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor, ticks_of
from skyswarm.uav.sensors.noise import GaussMarkov


@dataclass(frozen=True)
class GpsConfig:
    """GPS receiver: shared Gauss–Markov pseudorange errors + receiver noise, least squares"""

    enabled: bool | None = param(None, "fix the position by GPS (off: the estimate is truth)")
    period_s: float | None = param(None, "fix period, s (a whole number of ticks)", gt=0.0)
    latency_s: float | None = param(None, "age of a fix when it arrives, s (whole ticks)", ge=0.0)
    satellites: int | None = param(None, "satellites in view (shared pseudorange errors)", ge=4)
    min_satellites: int | None = param(
        None, "each receiver uses a random 4 <= k <= satellites of them; 0: all", ge=0
    )
    pr_sigma_m: float | None = param(None, "pseudorange error, stationary std, m", ge=0.0)
    pr_tau_s: float | None = param(None, "pseudorange error time constant, s", gt=0.0)
    receiver_sigma_m: float | None = param(None, "receiver white noise per pseudorange, m", ge=0.0)


def sky(satellites: int) -> np.ndarray:
    """(S, 3) unit line-of-sight vectors (ENU) of a fixed, evenly spread sky: azimuths by the
    golden angle, elevations 15..85 deg by a low-discrepancy sequence."""
    k = np.arange(satellites)
    az = np.radians(137.50776 * k)
    el = np.radians(15.0 + 70.0 * ((0.5 + 0.6180339887 * k) % 1.0))
    return np.stack([np.cos(el) * np.sin(az), np.cos(el) * np.cos(az), np.sin(el)], axis=1)


def solution_rows(los: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """(3, S) position rows of the least-squares pseudo-inverse for the satellites `seen`
    (bool (S,)); unseen satellites get zero columns."""
    geometry = np.hstack([-los[seen], np.ones((int(seen.sum()), 1))])
    rows = np.zeros((3, len(los)))
    rows[:, seen] = np.linalg.pinv(geometry)[:3]
    return rows


class GpsModel:
    """Shared pseudorange errors and the receivers of N agents: `step()` -> (N, 3) errors, m."""

    def __init__(self, cfg: GpsConfig, n: int, rng) -> None:
        self.cfg, self.rng = cfg, rng
        s = int(cfg.satellites)
        self.los = sky(s)
        self.pseudorange = GaussMarkov((s,), cfg.pr_sigma_m, cfg.pr_tau_s, cfg.period_s, rng)
        low = int(cfg.min_satellites) or s
        if not 4 <= low <= s:
            raise ConfigError(
                "", "uav.sensors.gps.min_satellites", low, f"0 or 4..satellites ({s})"
            )
        self.seen = np.ones((n, s), dtype=bool)
        if low < s:  # each receiver drops a random set of satellites, for good
            for i in range(n):
                k = int(rng.integers(low, s + 1))
                self.seen[i] = False
                self.seen[i, rng.choice(s, k, replace=False)] = True
        self.rows = np.stack([solution_rows(self.los, seen) for seen in self.seen])  # (N, 3, S)
        self.error = np.zeros((n, 3))

    def step(self) -> np.ndarray:
        """Advance the shared errors one fix period; each receiver's (N, 3) position error, m."""
        shared = self.pseudorange.step()
        own = self.cfg.receiver_sigma_m * self.rng.standard_normal(self.seen.shape)
        self.error = np.einsum("nis,ns->ni", self.rows, shared[None, :] + own)
        return self.error

    def expected_horizontal_rms(self, receiver: int = 0) -> float:
        """sqrt(pr_sigma^2 + receiver_sigma^2) * HDOP of `receiver`, m: the stationary RMS of
        its horizontal error, from the configuration alone."""
        rows = self.rows[receiver]
        hdop = np.sqrt(np.sum(rows[:2] ** 2))
        sigma = np.hypot(self.cfg.pr_sigma_m, self.cfg.receiver_sigma_m)
        return float(sigma * hdop)


@register_sensor
class Gps(Sensor):
    """Fixes of N receivers: `error` (N, 3) m, the last fix minus the truth (at the start, the
    shared errors' view without receiver noise); fixes arrive `latency` ticks after they are
    taken (`arrivals`)."""

    # The QRSim seed's numbers (KeepSpot: PR_BETA 2000 s, PR_SIGMA 0.1746 m, 13 satellites,
    # fixes every 0.2 s).
    name = "gps"
    Config = GpsConfig
    defaults = GpsConfig(
        enabled=True,
        period_s=0.2,
        latency_s=0.0,
        satellites=13,
        min_satellites=0,
        pr_sigma_m=0.1746,
        pr_tau_s=2000.0,
        receiver_sigma_m=0.02,
    )
    feeds = "position"
    columns = ("gps_ex", "gps_ey", "gps_ez")

    def __init__(self, cfg: GpsConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        n = self.n
        self.model = model = GpsModel(cfg, n, self.rng)
        self.error = model.error = np.einsum(
            "nis,ns->ni", model.rows, np.broadcast_to(model.pseudorange.x, (n, len(model.los)))
        )
        self.latency = ticks_of(cfg.latency_s, setting.dt_s, "gps.latency_s", allow_zero=True)
        self._pending: deque[tuple[int, np.ndarray]] = deque()  # (arrival tick, (N, 3) fix)

    def sample(self, tick: int, truth: Truth) -> None:
        self.error = self.model.step()
        self._pending.append((tick + self.latency, truth.position + self.error))

    def arrivals(self, tick: int) -> Iterator[np.ndarray]:
        """The (N, 3) fixes, m, that arrive at `tick`, oldest first."""
        while self._pending and self._pending[0][0] <= tick:
            yield self._pending.popleft()[1]

    def record(self) -> np.ndarray:
        return self.error
