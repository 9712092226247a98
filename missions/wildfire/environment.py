"""The fire as an environment any mission can install: grid, terrain, ignitions, wind, schedule.

A mission that wants a fire declares the `[fire]` section (`sections = {"fire": FireConfig}`),
builds a `FireEnvironment` in its `setup()` and calls `start()`:

    class Smoke(Mission):
        sections = {"uav": UavSection, "fire": FireConfig}

        def setup(self) -> None:
            self.fire = FireEnvironment(self.sim, self.config)
            self.swarm = Swarm.from_scenario(self.sim, self.config)
            self.fire.start(lambda: self.swarm.wind_field.mean_direction[:2])

The environment reads the elevation (flat, a heightmap, or the `[world]` terrain), draws from a
child of the run's `environment` stream (spawned in the constructor, so where a mission builds
it fixes its place among the streams), lights the `[[fire.ignitions]]` when due, and steps the
grid every `fire.step_s` in the mean wind the mission's callable gives (default: the scenario's
`[wind]` section), so the spread follows a live `wind` event. `ignite()` starts a spot fire at
any time (the `ignite` event of `fire_tracking`); `spots` logs every ignition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from skyswarm.missions.wildfire.fire import FireConfig, FireGrid, load_heightmap

WindSource = Callable[[], np.ndarray]  # () -> (2,) mean wind towards, m/s at 20 ft


@dataclass
class Spot:
    """An ignition (number `source` of the grid) and when an observer first knew one of the
    cells burning from it (set by the mission that watches the fire)."""

    at_s: float
    center: tuple[float, float]
    source: int
    detected_s: float | None = None


class FireEnvironment:
    """The `[fire]` grid of a scenario, stepped on the simulator's clock (see the module doc)."""

    def __init__(self, sim: Any, scenario: Any) -> None:
        self.sim = sim
        self.cfg: FireConfig = scenario.section("fire")
        elevation = load_heightmap(self.cfg, scenario.base_dir, scenario.file, scenario.world)
        self.grid = FireGrid(self.cfg, sim.rng.environment.spawn(1)[0], elevation)
        wind = scenario.wind
        still = wind.direction[:2] * wind.speed_m_s if wind.enabled else np.zeros(2)
        self.wind: WindSource = lambda: np.asarray(still, dtype=float)
        self.pending = sorted(self.cfg.ignitions, key=lambda g: g.at_s)
        self.spots: list[Spot] = []
        self.on_ignite: Callable[[int, tuple[float, float]], None] | None = None

    def start(self, wind: WindSource | None = None) -> None:
        """Light the ignitions due now and step every `fire.step_s` from then on."""
        if wind is not None:
            self.wind = wind
        self._ignite_due()
        self.sim.every(self.cfg.step_s, self.step, self.cfg.step_s, name="fire")

    def ignite(self, center: tuple[float, float], size: tuple[float, float]) -> int:
        """Set the cells of a rectangle (centre, (width, height) m) burning now; logs a spot;
        returns the cells that caught."""
        source = self.grid.ignitions
        n = self.grid.ignite_at(self.grid.rect_mask(center, size), self.sim.time_s)
        self.spots.append(Spot(self.sim.time_s, (float(center[0]), float(center[1])), source))
        if self.on_ignite is not None:
            self.on_ignite(n, (float(center[0]), float(center[1])))
        return n

    def step(self) -> None:
        """One grid step in the present wind, then the ignitions that fell due."""
        self.grid.set_wind(self.wind())
        self.grid.step(self.sim.time_s)
        self._ignite_due()

    def _ignite_due(self) -> None:
        now = self.sim.time_s
        while self.pending and self.pending[0].at_s <= now + 1e-9:
            g = self.pending.pop(0)
            self.ignite(g.center, g.size)
