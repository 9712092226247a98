"""A simple battery per UAV: energy drains with thrust; an empty battery is a fault.

Electrical power follows momentum theory, P = P_hover * (T / (m g)) ** k with k = 1.5 by
default: hovering draws `hover_power_w`, and twice the thrust draws 2.8 times the power. The
check for empty batteries is one vectorised comparison per tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from skyswarm.core.faults import BatteryConfig, FaultInjector
    from skyswarm.uav.swarm import Swarm


class Battery:
    def __init__(self, swarm: Swarm, config: BatteryConfig, injector: FaultInjector) -> None:
        self.swarm = swarm
        self.config = config
        self.injector = injector
        self.energy_j = np.full(swarm.n, config.capacity_wh * 3600.0 * config.initial_charge)
        self._per_tick = config.hover_power_w * swarm.dt  # J drawn per tick at hover thrust
        self._weight = swarm.config.airframe.weight_n

    @property
    def charge(self) -> np.ndarray:
        """(N,) state of charge, 0..1."""
        return self.energy_j / (self.config.capacity_wh * 3600.0)

    def drain(self, thrust: np.ndarray) -> None:
        """(N, 4) motor thrusts (N) of this tick."""
        load = thrust.sum(axis=1) / self._weight
        self.energy_j -= self._per_tick * load**self.config.exponent
        empty = (self.energy_j <= 0.0) & self.swarm.alive
        if empty.any():
            for k in np.flatnonzero(empty):
                agent = self.swarm.agents[k]
                if "battery exhausted" not in " ".join(agent.faults):
                    self.injector.inject(agent, "battery exhausted")
            self.energy_j[empty] = np.maximum(self.energy_j[empty], 0.0) - 1e-12
