"""Wind: a mean wind with logarithmic shear plus Dryden turbulence (MIL-F-8785C, low altitude).

The atmosphere model of QRSim (De Nardi, CompLACS quadrotor simulator, UCL), for any set of
bodies that move through the air; it knows nothing of what the air then does to them (uav/ turns
it into body drag).

- Mean wind: `speed_m_s` at 20 ft (6.096 m) above the ground, blowing FROM the compass
  direction `from_deg` (meteorological convention: 270 is a west wind, blowing towards east).
  With `shear` its speed at height h is u20 ln(h/z0) / ln(20 ft/z0), z0 = 0.15 ft; at and
  below z0 it is zero.
- Turbulence (Dryden form, h and L in feet, converted to SI here and only here):
  sigma_w = 0.1 u20, sigma_u = sigma_v = sigma_w / (0.177 + 0.000823 h)^0.4,
  L_u = L_v = h / (0.177 + 0.000823 h)^1.2, L_w = h (MIL-F-8785C; QRSim's manual writes
  L_u = 2 L_v = 2 L_w, its code and the standard use these). h is clamped to [10, 1000] ft:
  the low-altitude model holds below 1000 ft, and below 10 ft L_w = h would make the
  vertical gust white noise. Each of the three axes of each body is a first-order
  Gauss-Markov process with time constant L / V (V the body's airspeed, the frozen-field
  hypothesis), integrated exactly over the update step T: x <- e^{-aT} x + sqrt(1 - e^{-2aT}) n,
  a = V / L, gust = sigma x. To first order in aT this is QRSim's x <- (1 - aT) x +
  sqrt(2aT) sigma n; unlike it, its variance stays sigma^2 at any T (the Euler form's is
  sigma^2 / (1 - aT/2)) and follows sigma at once when the height changes. The filter starts
  from its stationary distribution, so there is no spin-up. Gust axes: u along the mean
  wind, v horizontal to its left, w up.

Every draw comes from the generator handed in (the simulation's `environment` stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.geo import heading_to_yaw
from skyswarm.core.schema import ConfigError, param, ticks_exact

FT_M = 0.3048  # m per foot
REFERENCE_HEIGHT_FT = 20.0  # ft, height of the given mean wind speed (6.096 m)
Z0_FT = 0.15  # ft, surface roughness length of the shear law
TURBULENCE_MIN_FT, TURBULENCE_MAX_FT = 10.0, 1000.0  # ft, heights the Dryden scales use
MIN_AIRSPEED_M_S = 0.5  # m/s: a body drifting with the air still sees its gusts evolve


@dataclass(frozen=True)
class WindConfig:
    """The [wind] section of a scenario."""

    enabled: bool = param(False, "wind acts on the bodies (false: no wind work at all)")
    speed_m_s: float = param(0.0, "mean wind speed 6.096 m (20 ft) above the ground, m/s", ge=0.0)
    from_deg: float = param(
        0.0, "compass direction the wind blows FROM, deg (0 = north wind, 270 = west wind)"
    )
    shear: bool = param(True, "logarithmic shear: speed u20 ln(h/z0)/ln(20 ft/z0), z0 = 0.15 ft")
    turbulence: bool = param(False, "Dryden turbulence (MIL-F-8785C, low altitude) per body")
    update_hz: float = param(
        0.0, "wind recomputed this often, Hz (a whole number of ticks); 0: every tick", ge=0.0
    )

    def ticks_per_update(self, tick_s: float, file: str = "", path: str = "wind") -> int:
        """Ticks between two wind updates; ConfigError if `update_hz` is not whole ticks."""
        if self.update_hz == 0.0:
            return 1
        ticks = ticks_exact(1.0 / self.update_hz, tick_s)
        if ticks is None or ticks < 1:
            raise ConfigError(
                file,
                f"{path}.update_hz",
                self.update_hz,
                f"0 or a rate whose period is a whole number (>= 1) of {tick_s} s ticks",
            )
        return ticks

    @property
    def direction(self) -> np.ndarray:
        """(3,) unit vector, world ENU, the mean wind blows TOWARDS."""
        yaw = heading_to_yaw(self.from_deg)  # ENU angle of the direction it comes from
        return np.array([-math.cos(yaw), -math.sin(yaw), 0.0])


def shear_factor(height_m: np.ndarray) -> np.ndarray:
    """(N,) heights above the ground m -> (N,) mean wind speed / speed at 20 ft (0 below z0)."""
    h_ft = np.maximum(np.asarray(height_m, dtype=float) / FT_M, Z0_FT)
    return np.log(h_ft / Z0_FT) / math.log(REFERENCE_HEIGHT_FT / Z0_FT)


def dryden_scales(speed20_m_s: float, height_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Turbulence intensities and length scales along (u, v, w) at (N,) heights m.

    Returns (N, 3) sigma in m/s and (N, 3) L in m, for a mean wind of `speed20_m_s` at 20 ft.
    """
    h = np.clip(np.asarray(height_m, dtype=float) / FT_M, TURBULENCE_MIN_FT, TURBULENCE_MAX_FT)
    base = 0.177 + 0.000823 * h
    sigma_w = 0.1 * speed20_m_s  # m/s
    sigma_uv = sigma_w / base**0.4
    length_uv = h / base**1.2 * FT_M
    sigma = np.stack([sigma_uv, sigma_uv, np.full_like(h, sigma_w)], axis=1)
    length = np.stack([length_uv, length_uv, h * FT_M], axis=1)
    return sigma, length


class DrydenTurbulence:
    """Dryden gusts of N bodies: one unit-variance Gauss-Markov state per body and axis."""

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        self.rng = rng
        self.state: np.ndarray | None = None  # (N, 3) unit variance; None before the first step

    def step(
        self, sigma: np.ndarray, length: np.ndarray, airspeed: np.ndarray, dt: float
    ) -> np.ndarray:
        """Advance `dt` s: (N, 3) sigma m/s, (N, 3) L m, (N,) airspeed m/s -> (N, 3) gusts m/s
        along (u, v, w). The first call draws the stationary distribution instead."""
        noise = self.rng.standard_normal(sigma.shape)
        if self.state is None:
            self.state = noise
        else:
            v = np.maximum(airspeed, MIN_AIRSPEED_M_S)[:, None]
            phi = np.exp(-v * dt / length)
            self.state = phi * self.state + np.sqrt(1.0 - phi * phi) * noise
        return sigma * self.state


class WindField:
    """The wind at N bodies: mean wind (with shear) plus, optionally, their own turbulence."""

    def __init__(self, config: WindConfig, n: int, rng: np.random.Generator) -> None:
        self.config = config
        self.n = n
        towards = config.direction
        left = np.array([-towards[1], towards[0], 0.0])
        self.gust_axes = np.stack([towards, left, [0.0, 0.0, 1.0]])  # (3, 3) rows: u, v, w
        self.mean_direction = towards * config.speed_m_s  # m/s at 20 ft
        self.turbulence = DrydenTurbulence(n, rng) if config.turbulence else None
        self.velocity = np.zeros((n, 3))  # m/s, world ENU: the wind at each body
        self.gust = np.zeros((n, 3))  # m/s, world ENU: its turbulent part

    def mean(self, height_m: np.ndarray) -> np.ndarray:
        """(N,) heights m -> (N, 3) mean wind m/s, world ENU."""
        if not self.config.shear:
            return np.broadcast_to(self.mean_direction, (len(height_m), 3)).copy()
        return shear_factor(height_m)[:, None] * self.mean_direction

    def update(self, position: np.ndarray, velocity: np.ndarray, dt: float) -> np.ndarray:
        """Advance `dt` s and return (N, 3) wind m/s (also kept in `velocity`).

        (N, 3) positions m (z = height above the ground) and ground velocities m/s of the
        bodies; the turbulence runs at each body's airspeed against the previous wind.
        """
        height = position[:, 2]
        wind = self.mean(height)
        if self.turbulence is not None:
            airspeed = np.linalg.norm(velocity - self.velocity, axis=1)
            sigma, length = dryden_scales(self.config.speed_m_s, height)
            self.gust[:] = self.turbulence.step(sigma, length, airspeed, dt) @ self.gust_axes
            wind += self.gust
        self.velocity[:] = wind
        return self.velocity
