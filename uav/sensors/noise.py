"""The noise processes of the sensor models, vectorised, drawing only from the generator given.

Every process advances every `period_s`, a whole number of ticks, and is discretised exactly:

- Gauss–Markov / Ornstein–Uhlenbeck, stationary std sigma and time constant tau:
  x <- a x + sigma sqrt(1 - a^2) n, a = exp(-T / tau), started from the stationary law, so
  Var x = sigma^2 and corr(x_t, x_t+lag) = exp(-lag / tau) at every step;
- random walk (IMU bias), density q: b <- b + q sqrt(T) n;
- white noise: sigma n.
"""

from __future__ import annotations

import numpy as np


class GaussMarkov:
    """First-order Gauss–Markov (= Ornstein–Uhlenbeck) processes of one shape, exact steps.

    bias = GaussMarkov((n,), sigma=0.3, tau_s=300.0, dt_s=0.02, rng=rng)
    bias.step()  # (n,) m, one period later
    """

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
