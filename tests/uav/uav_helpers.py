"""Shared helpers of the uav tests: one simulator with a swarm, and stepping while sampling."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from skyswarm.core.config import WorldConfig
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.simulator import Simulator
from skyswarm.core.wind import WindConfig
from skyswarm.uav.config import UavConfig, load_uav_config
from skyswarm.uav.swarm import Swarm

CONFIG: UavConfig = load_uav_config()
# The simpler model (thrust lag, linear drag, no ground effect or gear), for closed forms of it
SIMPLE: UavConfig = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_simple.toml")


def make_swarm(
    positions: Any = ((0.0, 0.0, 10.0),),
    yaws: Any = None,
    hovering: bool = True,
    wind: WindConfig | None = None,
    config: UavConfig = CONFIG,
) -> tuple[Simulator, Swarm]:
    """A simulator with a ground plane and a swarm of `config` (the default airframe; calm air
    unless `wind` is given)."""
    sim = Simulator(world=WorldConfig())
    positions = np.asarray(positions, dtype=float)
    yaws = np.zeros(len(positions)) if yaws is None else np.asarray(yaws, dtype=float)
    ids = range(1, len(positions) + 1)
    swarm = Swarm(sim, config, ids, positions, yaws, hovering=hovering, wind=wind)
    return sim, swarm


def run(sim: Simulator, seconds: float, sample: Callable[[], Any] | None = None) -> np.ndarray:
    """Step `seconds` of simulated time; returns the samples taken after each tick (see
    `times` for their times)."""
    out = []
    for _ in range(round(seconds / sim.world.tick_s)):
        sim.step()
        if sample is not None:
            out.append(sample())
    return np.asarray(out)


def times(samples: np.ndarray, tick_s: float = 0.0025) -> np.ndarray:
    """Time (s) of each sample returned by `run`, counted from the start of that run."""
    return np.arange(1, len(samples) + 1) * tick_s


def settle_time(t: np.ndarray, error: np.ndarray, band: float) -> float:
    """The last time |error| is outside `band` (0 if never)."""
    outside = np.abs(error) > band
    return float(t[outside].max()) if outside.any() else 0.0
