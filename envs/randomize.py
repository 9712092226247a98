"""Domain randomisation of the RL environments: per-episode physical and channel parameters,
drawn from the env's generator (seeded by `reset(seed=)`: same seed, same draws, bit for bit).

Each range is (low, high), uniform; a range with low == high draws nothing (the generator's
stream is then exactly as without randomisation). Per episode, after the start, the draws come
in the order mass, motor constant, motor lag. What is drawn when:

| field | what | drawn |
| --- | --- | --- |
| `mass_scale` | the body's mass and inertia x s (the controller still assumes the nominal) | per agent, each episode (also at autoreset) |
| `motor_constant_scale` | each motor's thrust per command x s (k_f x s; the controller still assumes the nominal) | per agent, each episode |
| `motor_lag_scale` | the motors' time constant (the airframe's `motor_time_constant_s`) x s | per agent, each episode |
| `wind_speed_m_s` | mean wind speed, from a uniform random direction (Dryden turbulence on if > 0) | each simulator build: every reset of a swarm env, a seeded reset of the others |
| `radio_loss` | the radio channel's loss probability | each swarm-env reset |
| `sensors` | a `[uav.sensors]` preset chosen uniformly from the tuple (empty: the settings') | each simulator build |

    rand = Randomization(mass_scale=(0.8, 1.2), motor_lag_scale=(0.5, 2.0), wind_speed_m_s=(0, 5))
    env = gymnasium.make("skyswarm/Hover-v0", randomize=rand)
"""  # noqa: E501  (the table)

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.wind import WindConfig
from skyswarm.envs.tasks import finite_real
from skyswarm.uav.config import Airframe
from skyswarm.uav.sensors.config import PRESETS

Range = tuple[float, float]


@dataclass(frozen=True)
class Randomization:
    """The ranges of the module table; the defaults randomise nothing."""

    mass_scale: Range = (1.0, 1.0)
    motor_constant_scale: Range = (1.0, 1.0)
    motor_lag_scale: Range = (1.0, 1.0)
    wind_speed_m_s: Range = (0.0, 0.0)  # m/s
    radio_loss: Range | None = None  # None: the channel's configured loss
    sensors: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in SCALES + ("wind_speed_m_s", "radio_loss"):
            r = getattr(self, name)
            if r is not None and not (_pair(r) and 0.0 <= r[0] <= r[1]):
                raise ValueError(
                    f"randomize {name} {r!r}: expected (low, high), finite, 0 <= low <= high"
                )
        for name in SCALES:
            if getattr(self, name)[0] <= 0.0:
                raise ValueError(f"randomize {name} {getattr(self, name)!r}: expected low > 0")
        if self.radio_loss is not None and self.radio_loss[1] > 1.0:
            raise ValueError(f"randomize radio_loss {self.radio_loss!r}: expected within [0, 1]")
        if any(p not in PRESETS for p in self.sensors):
            names = " and/or ".join(map(repr, PRESETS))
            raise ValueError(f"randomize sensors {self.sensors!r}: expected presets {names}")

    def masses(
        self, rng: np.random.Generator, k: int, airframe: Airframe
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(k,) masses kg and (k, 3) inertias kg m^2 for k new episodes, or None when off."""
        s = _scales(rng, k, self.mass_scale)
        if s is None:
            return None
        return airframe.mass_kg * s, np.asarray(airframe.inertia_kg_m2, dtype=float) * s[:, None]

    def motors(
        self, rng: np.random.Generator, k: int, airframe: Airframe
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(k,) thrust scales and (k,) motor time constants s for k new episodes (the
        arguments of uav.model.Motors.set_params), or None when both are off."""
        gain = _scales(rng, k, self.motor_constant_scale)
        lag = _scales(rng, k, self.motor_lag_scale)
        if gain is None and lag is None:
            return None
        ones = np.ones(k)
        tau = airframe.motor_time_constant_s * (ones if lag is None else lag)
        return (ones if gain is None else gain), tau

    def wind(self, rng: np.random.Generator, base: WindConfig | None) -> WindConfig | None:
        """The wind of a new simulator: `base` when off, else a random speed and direction."""
        lo, hi = self.wind_speed_m_s
        if hi == 0.0:
            return base
        speed = float(rng.uniform(lo, hi))
        return WindConfig(
            enabled=True,
            speed_m_s=speed,
            from_deg=float(rng.uniform(0.0, 360.0)),
            turbulence=speed > 0.0,
        )

    def loss(self, rng: np.random.Generator, base: float) -> float:
        """The radio's loss probability of a new episode."""
        if self.radio_loss is None:
            return base
        lo, hi = self.radio_loss
        return float(rng.uniform(lo, hi)) if hi > lo else lo

    def sensor_preset(self, rng: np.random.Generator, base: str) -> str:
        """The `[uav.sensors]` preset of a new simulator."""
        if not self.sensors:
            return base
        return self.sensors[int(rng.integers(len(self.sensors)))]


SCALES = ("mass_scale", "motor_constant_scale", "motor_lag_scale")  # factors on a nominal value


def _pair(r: object) -> bool:
    """Whether `r` is a (low, high) pair of finite real numbers (not bools)."""
    return (
        isinstance(r, (tuple, list, np.ndarray)) and len(r) == 2 and all(finite_real(x) for x in r)
    )


def _scales(rng: np.random.Generator, k: int, r: Range) -> np.ndarray | None:
    """(k,) factors uniform in `r`, None for (1, 1); nothing drawn when low == high."""
    lo, hi = r
    if lo == hi == 1.0:
        return None
    return rng.uniform(lo, hi, k) if hi > lo else np.full(k, float(lo))
