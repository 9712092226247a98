"""Sensor models of a swarm (QRSim's): what each UAV measures, vectorised over agents.

Every process draws only from the run's `sensors` stream and advances every `period_s`, a whole
number of ticks. The noise processes are discretised exactly:

- Gauss–Markov / Ornstein–Uhlenbeck, stationary std sigma and time constant tau:
  x <- a x + sigma sqrt(1 - a^2) n, a = exp(-T / tau), started from the stationary law, so
  Var x = sigma^2 and corr(x_t, x_t+lag) = exp(-lag / tau) at every step;
- random walk (IMU bias), density q: b <- b + q sqrt(T) n;
- white noise: sigma n.

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

import dataclasses
from dataclasses import dataclass
from typing import Literal

import numpy as np

from skyswarm.core.schema import ConfigError, param, ticks_exact


# -- configuration ----------------------------------------------------------------------------
@dataclass(frozen=True)
class GpsConfig:
    """[uav.sensors.gps]: unset keys come from the preset."""

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


@dataclass(frozen=True)
class BaroConfig:
    """[uav.sensors.baro]: barometric altitude = truth + Gauss–Markov bias + white noise."""

    enabled: bool | None = param(None, "measure altitude by barometer")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    bias_sigma_m: float | None = param(None, "bias, stationary std, m", ge=0.0)
    bias_tau_s: float | None = param(None, "bias time constant, s", gt=0.0)
    noise_sigma_m: float | None = param(None, "white measurement noise, m", ge=0.0)


@dataclass(frozen=True)
class ImuConfig:
    """[uav.sensors.imu]: gyros and accelerometers, white noise + bias random walk."""

    enabled: bool | None = param(None, "measure body rates and specific force by an IMU")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    gyro_sigma_rad_s: float | None = param(None, "gyro white noise, rad/s", ge=0.0)
    gyro_bias_walk: float | None = param(None, "gyro bias random walk, rad/s/sqrt(s)", ge=0.0)
    accel_sigma_m_s2: float | None = param(None, "accelerometer white noise, m/s^2", ge=0.0)
    accel_bias_walk: float | None = param(None, "accel bias random walk, m/s^2/sqrt(s)", ge=0.0)


@dataclass(frozen=True)
class AttitudeConfig:
    """[uav.sensors.attitude]: the AHRS roll/pitch = truth + Ornstein–Uhlenbeck noise."""

    enabled: bool | None = param(None, "roll and pitch from the AHRS model")
    sigma_rad: float | None = param(None, "stationary std of each angle's noise, rad", ge=0.0)
    tau_s: float | None = param(None, "time constant (1 / mean-reversion speed), s", gt=0.0)


@dataclass(frozen=True)
class CompassConfig:
    """[uav.sensors.compass]: magnetometer heading = truth + white noise."""

    enabled: bool | None = param(None, "measure heading by compass")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    sigma_rad: float | None = param(None, "white heading noise, rad", ge=0.0)


@dataclass(frozen=True)
class ProximityConfig:
    """[uav.sensors.proximity]: range and bearing of other UAVs (and boxes) in range and FOV."""

    enabled: bool | None = param(None, "scan for nearby UAVs and obstacles")
    period_s: float | None = param(None, "scan period, s (whole ticks)", gt=0.0)
    range_m: float | None = param(None, "detection range, m", gt=0.0)
    fov_deg: float | None = param(None, "horizontal field of view about the heading, deg", gt=0)
    range_sigma_m: float | None = param(None, "range noise, m", ge=0.0)
    bearing_sigma_rad: float | None = param(None, "bearing noise, rad", ge=0.0)


SENSOR_TABLES = {
    "gps": GpsConfig,
    "baro": BaroConfig,
    "imu": ImuConfig,
    "attitude": AttitudeConfig,
    "compass": CompassConfig,
    "proximity": ProximityConfig,
}

# Every sensor off: the UAVs act on the truth and nothing draws from the sensors stream.
_OFF = {name: {"enabled": False} for name in SENSOR_TABLES}
_QRSIM = {
    # The GPS numbers are the QRSim seed's (KeepSpot: PR_BETA 2000 s, PR_SIGMA 0.1746 m,
    # 13 satellites, fixes every 0.2 s); the rest are ours, Pelican-class (README, Sensors).
    "gps": dict(
        enabled=True,
        period_s=0.2,
        latency_s=0.0,
        satellites=13,
        min_satellites=0,
        pr_sigma_m=0.1746,
        pr_tau_s=2000.0,
        receiver_sigma_m=0.02,
    ),
    "baro": dict(
        enabled=True, period_s=0.02, bias_sigma_m=0.3, bias_tau_s=300.0, noise_sigma_m=0.05
    ),
    "imu": dict(
        enabled=True,
        period_s=0.0025,
        gyro_sigma_rad_s=0.005,
        gyro_bias_walk=1e-4,
        accel_sigma_m_s2=0.05,
        accel_bias_walk=1e-3,
    ),
    "attitude": dict(enabled=True, sigma_rad=0.005, tau_s=100.0),
    "compass": dict(enabled=True, period_s=0.02, sigma_rad=0.02),
    "proximity": dict(
        enabled=True,
        period_s=0.1,
        range_m=10.0,
        fov_deg=360.0,
        range_sigma_m=0.05,
        bearing_sigma_rad=0.02,
    ),
}
PRESETS = {"ideal": _OFF, "qrsim": _QRSIM}


@dataclass(frozen=True)
class SensorsConfig:
    """The [uav.sensors] table: a preset, per-sensor overrides, and what control acts on."""

    preset: Literal["ideal", "qrsim"] = param(
        "ideal", "ideal: the UAVs act on the truth (no sensors); qrsim: QRSim's sensor models"
    )
    control_on: Literal["estimate", "truth"] = param(
        "estimate", "controllers and behaviours act on the estimate, or on the truth"
    )
    gps_crossover_rad_s: float = param(
        1.0, "estimator: crossover between IMU and GPS (horizontal), rad/s", gt=0.0
    )
    baro_crossover_rad_s: float = param(
        2.0, "estimator: crossover between IMU and barometer (vertical), rad/s", gt=0.0
    )
    record_hz: float = param(
        10.0, "estimate-vs-truth rows written to sensors.csv, Hz; 0: none", ge=0.0
    )
    gps: GpsConfig = param(GpsConfig(), "GPS receiver ([uav.sensors.gps])")
    baro: BaroConfig = param(BaroConfig(), "barometric altimeter ([uav.sensors.baro])")
    imu: ImuConfig = param(ImuConfig(), "gyros and accelerometers ([uav.sensors.imu])")
    attitude: AttitudeConfig = param(AttitudeConfig(), "AHRS attitude ([uav.sensors.attitude])")
    compass: CompassConfig = param(CompassConfig(), "compass ([uav.sensors.compass])")
    proximity: ProximityConfig = param(ProximityConfig(), "proximity ([uav.sensors.proximity])")

    def resolved(self, name: str) -> dict:
        """Sensor `name`'s parameters: the preset's, overridden by the keys set in the file."""
        out = {k: None for k in (f.name for f in dataclasses.fields(SENSOR_TABLES[name]))}
        out.update(_QRSIM[name])  # every key gets a value, also for a sensor switched on
        if self.preset == "ideal":
            out["enabled"] = False
        for key, value in dataclasses.asdict(getattr(self, name)).items():
            if value is not None:
                out[key] = value
        return out

    @property
    def active(self) -> bool:
        """True if any sensor is on (else the swarm builds no sensor layer at all)."""
        return any(self.resolved(name)["enabled"] for name in SENSOR_TABLES)


def ticks_of(seconds: float, tick_s: float, key: str, allow_zero: bool = False) -> int:
    """`seconds` as whole ticks (>= 1, or >= 0 with `allow_zero`), else a one-line ConfigError."""
    n = ticks_exact(seconds, tick_s)
    if n is None or n < (0 if allow_zero else 1):
        raise ConfigError("", f"uav.sensors.{key}", seconds, f"a whole number of {tick_s} s ticks")
    return n


# -- noise processes --------------------------------------------------------------------------
class GaussMarkov:
    """First-order Gauss–Markov (= Ornstein–Uhlenbeck) processes of one shape, exact steps."""

    def __init__(
        self, shape: tuple[int, ...], sigma: float, tau_s: float, dt_s: float, rng
    ) -> None:
        self.rng = rng
        self.a = float(np.exp(-dt_s / tau_s))
        self.q = float(sigma * np.sqrt(1.0 - self.a**2))
        self.x = sigma * rng.standard_normal(shape)  # the stationary law from the start

    def step(self) -> np.ndarray:
        self.x *= self.a
        self.x += self.q * self.rng.standard_normal(self.x.shape)
        return self.x


class RandomWalk:
    """Bias random walks of one shape, starting at zero: b <- b + q sqrt(T) n."""

    def __init__(self, shape: tuple[int, ...], density: float, dt_s: float, rng) -> None:
        self.rng = rng
        self.q = float(density * np.sqrt(dt_s))
        self.x = np.zeros(shape)

    def step(self) -> np.ndarray:
        if self.q:
            self.x += self.q * self.rng.standard_normal(self.x.shape)
        return self.x


# -- GPS --------------------------------------------------------------------------------------
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

    def __init__(self, cfg: dict, n: int, rng) -> None:
        self.cfg, self.rng = cfg, rng
        s = int(cfg["satellites"])
        self.los = sky(s)
        self.pseudorange = GaussMarkov(
            (s,), cfg["pr_sigma_m"], cfg["pr_tau_s"], cfg["period_s"], rng
        )
        low = int(cfg["min_satellites"]) or s
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
        own = self.cfg["receiver_sigma_m"] * self.rng.standard_normal(self.seen.shape)
        self.error = np.einsum("nis,ns->ni", self.rows, shared[None, :] + own)
        return self.error

    def expected_horizontal_rms(self, receiver: int = 0) -> float:
        """sqrt(pr_sigma^2 + receiver_sigma^2) * HDOP of `receiver`, m: the stationary RMS of
        its horizontal error, from the configuration alone."""
        rows = self.rows[receiver]
        hdop = np.sqrt(np.sum(rows[:2] ** 2))
        sigma = np.hypot(self.cfg["pr_sigma_m"], self.cfg["receiver_sigma_m"])
        return float(sigma * hdop)


# -- proximity --------------------------------------------------------------------------------
@dataclass
class Scan:
    """One proximity scan of N agents: (N, M) arrays, M = N other UAVs then the boxes.

    `detected` bool; `range_m` and `bearing_rad` (relative to the heading, counter-clockwise)
    with noise, NaN where nothing is detected; `target` the target index (< N: agent index)."""

    detected: np.ndarray
    range_m: np.ndarray
    bearing_rad: np.ndarray


def scan(
    positions: np.ndarray,
    yaws: np.ndarray,
    alive: np.ndarray,
    boxes: np.ndarray,
    cfg: dict,
    rng,
) -> Scan:
    """Range/bearing of live UAVs and of the nearest point of each box (B, 6: centre, half
    size, axis-aligned) within `range_m` and `fov_deg` of each live agent; (N, N + B)."""
    n = len(positions)
    targets = positions
    if len(boxes):
        c, h = boxes[:, None, :3], boxes[:, None, 3:6]
        nearest = np.clip(positions[None, :, :], c - h, c + h)  # (B, N, 3)
        d_box = nearest - positions[None, :, :]
    rel = targets[None, :, :] - positions[:, None, :]  # (N, N, 3)
    if len(boxes):
        rel = np.concatenate([rel, d_box.transpose(1, 0, 2)], axis=1)
    dist = np.linalg.norm(rel, axis=2)
    bearing = np.arctan2(rel[..., 1], rel[..., 0]) - yaws[:, None]
    bearing = (bearing + np.pi) % (2 * np.pi) - np.pi
    half_fov = np.radians(cfg["fov_deg"]) / 2
    ok = (dist <= cfg["range_m"]) & (np.abs(bearing) <= half_fov + 1e-12)
    ok[:, :n] &= alive[None, :]
    ok[np.arange(n), np.arange(n)] = False
    ok &= alive[:, None]
    noisy_r = dist + cfg["range_sigma_m"] * rng.standard_normal(dist.shape)
    noisy_b = bearing + cfg["bearing_sigma_rad"] * rng.standard_normal(dist.shape)
    return Scan(ok, np.where(ok, noisy_r, np.nan), np.where(ok, noisy_b, np.nan))
