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
- `turbulence_order = 2`: v and w get MIL-F-8785C's second-order Dryden shape instead,
  H(s) = sigma sqrt(L / pi V) (1 + sqrt(3) L s / V) / (1 + L s / V)^2, PSD
  sigma^2 L / pi (1 + 3 (L Omega)^2) / (1 + (L Omega)^2)^2 (u stays first order, which is its
  exact Dryden form). Realised as two chained lags x1' = -a x1 + x2, x2' = -a x2 + noise,
  gust = sigma (alpha u1 + beta u2) on the states scaled to unit variance (u1, u2 then have
  correlation 1/sqrt(2) at any a, alpha = (1 - sqrt(3)) / 2, beta = sqrt(3/2)), stepped by the
  exact transition e^{-aT} [[1, sqrt(2) aT], [0, 1]] with the exact noise covariance
  C - Phi C Phi^T. Order 2 is the default (within 10 % of the standard's PSD); order 1 keeps
  QRSim's first-order v and w for reproducing its results, and is up to 2x off the standard's
  PSD at low and -33 % at high frequency.

Every draw comes from the generator handed in (the simulation's `environment` stream).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

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
    turbulence_order: Literal[1, 2] = param(
        2, "Dryden v, w shaping filters: 2 MIL-F-8785C second-order, 1 first-order (QRSim's)"
    )
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

    def model_summary(self) -> str:
        """The wind model in use, for `skyswarm validate`: 'off', or the mean wind and the
        turbulence with its Dryden order (`WindConfig(enabled=True).model_summary()`)."""
        order = f"Dryden order {self.turbulence_order}"
        if not self.enabled:
            return f"off (turbulence, when on: {order})"
        shear = ", log shear" if self.shear else ""
        gusts = f"turbulence {order}" if self.turbulence else f"no turbulence ({order} if on)"
        return f"{self.speed_m_s:g} m/s from {self.from_deg:g} deg{shear}, {gusts}"

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


# Second-order Dryden (v, w) on unit-variance states: their correlation and output weights.
SECOND_ORDER_RHO = 1.0 / math.sqrt(2.0)
SECOND_ORDER_WEIGHTS = ((1.0 - math.sqrt(3.0)) / 2.0, math.sqrt(1.5))  # alpha, beta: variance 1


def second_order_noise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cholesky factor (l11, l21, l22) of the exact one-step noise covariance of the
    unit-variance second-order Dryden states, at x = a T (any shape): Q = C - Phi C Phi^T.
    Below x = 0.01 the entries use their series (they cancel to O(x^3) in closed form)."""
    e2 = np.exp(-2.0 * x)
    small = x < 0.01
    xs = np.where(small, x, 0.0)
    q11 = np.where(
        small,
        xs**3 * (4.0 / 3.0 - 2.0 * xs + 1.6 * xs**2 - (8.0 / 9.0) * xs**3 + (8.0 / 21.0) * xs**4),
        1.0 - e2 * (1.0 + 2.0 * x + 2.0 * x * x),
    )
    q12 = SECOND_ORDER_RHO * np.where(
        small,
        xs**2
        * (2.0 - (8.0 / 3.0) * xs + 2.0 * xs**2 - (16.0 / 15.0) * xs**3 + (4.0 / 9.0) * xs**4),
        1.0 - e2 * (1.0 + 2.0 * x),
    )
    q22 = -np.expm1(-2.0 * x)
    l11 = np.sqrt(q11)
    l21 = q12 / l11
    l22 = np.sqrt(np.maximum(q22 - l21 * l21, 0.0))
    return l11, l21, l22


class DrydenTurbulence:
    """Dryden gusts of N bodies: one unit-variance Gauss-Markov state per body and axis
    (`order` 1), or for v and w two chained unit-variance states each (`order` 2)."""

    def __init__(self, n: int, rng: np.random.Generator, order: int = 2) -> None:
        self.rng = rng
        self.order = order
        self.state: np.ndarray | None = None  # (N, 3) unit variance; None before the first step
        self.pair: np.ndarray | None = None  # order 2: (N, 2, 2) v, w -> (u1, u2)

    def step(
        self, sigma: np.ndarray, length: np.ndarray, airspeed: np.ndarray, dt: float
    ) -> np.ndarray:
        """Advance `dt` s: (N, 3) sigma m/s, (N, 3) L m, (N,) airspeed m/s -> (N, 3) gusts m/s
        along (u, v, w). The first call draws the stationary distribution instead."""
        if self.order == 2:
            return self._step_second_order(sigma, length, airspeed, dt)
        noise = self.rng.standard_normal(sigma.shape)
        if self.state is None:
            self.state = noise
        else:
            v = np.maximum(airspeed, MIN_AIRSPEED_M_S)[:, None]
            phi = np.exp(-v * dt / length)
            self.state = phi * self.state + np.sqrt(1.0 - phi * phi) * noise
        return sigma * self.state

    def _step_second_order(
        self, sigma: np.ndarray, length: np.ndarray, airspeed: np.ndarray, dt: float
    ) -> np.ndarray:
        n = len(sigma)
        noise = self.rng.standard_normal((n, 5))  # u, then v and w: two each
        rho = SECOND_ORDER_RHO
        if self.state is None or self.pair is None:
            self.state = noise[:, :1].copy()
            n1, n2 = noise[:, 1::2], noise[:, 2::2]  # (N, 2): v, w
            self.pair = np.stack([n1, rho * n1 + math.sqrt(1.0 - rho * rho) * n2], axis=2)
        else:
            v = np.maximum(airspeed, MIN_AIRSPEED_M_S)[:, None]
            x = v * dt / length  # (N, 3) a T
            phi = np.exp(-x)
            self.state = phi[:, :1] * self.state + np.sqrt(1.0 - phi[:, :1] ** 2) * noise[:, :1]
            xv, pv = x[:, 1:], phi[:, 1:]  # (N, 2) v, w
            l11, l21, l22 = second_order_noise(xv)
            u1, u2 = self.pair[..., 0], self.pair[..., 1]
            n1, n2 = noise[:, 1::2], noise[:, 2::2]
            new1 = pv * (u1 + math.sqrt(2.0) * xv * u2) + l11 * n1
            new2 = pv * u2 + l21 * n1 + l22 * n2
            self.pair = np.stack([new1, new2], axis=2)
        alpha, beta = SECOND_ORDER_WEIGHTS
        unit = np.concatenate([self.state, alpha * self.pair[..., 0] + beta * self.pair[..., 1]], 1)
        return sigma * unit


class WindField:
    """The wind at N bodies: mean wind (with shear) plus, optionally, their own turbulence."""

    def __init__(self, config: WindConfig, n: int, rng: np.random.Generator) -> None:
        self.config = config
        self.n = n
        towards = config.direction
        left = np.array([-towards[1], towards[0], 0.0])
        self.gust_axes = np.stack([towards, left, [0.0, 0.0, 1.0]])  # (3, 3) rows: u, v, w
        self.mean_direction = towards * config.speed_m_s  # m/s at 20 ft
        self.turbulence = (
            DrydenTurbulence(n, rng, config.turbulence_order) if config.turbulence else None
        )
        self.velocity = np.zeros((n, 3))  # m/s, world ENU: the wind at each body
        self.gust = np.zeros((n, 3))  # m/s, world ENU: its turbulent part

    def set_mean(self, speed_m_s: float, from_deg: float) -> None:
        """Change the mean wind (a scheduled `wind` event): new speed at 20 ft and direction;
        the turbulence keeps its state and takes its intensities from the new speed."""
        import dataclasses

        self.config = dataclasses.replace(self.config, speed_m_s=speed_m_s, from_deg=from_deg)
        towards = self.config.direction
        left = np.array([-towards[1], towards[0], 0.0])
        self.gust_axes = np.stack([towards, left, [0.0, 0.0, 1.0]])
        self.mean_direction = towards * speed_m_s

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
