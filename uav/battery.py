"""A simple battery per UAV: energy drains with thrust; an empty battery is a fault.

Electrical power follows momentum theory, P = P_hover * (T / (m g)) ** k with k = 1.5 by
default: hovering draws `hover_power_w`, and twice the thrust draws 2.8 times the power. The
check for empty batteries is one vectorised comparison per tick. Configured per scenario in the
`[uav.battery]` table (`BatteryConfig`); off by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.schema import param

if TYPE_CHECKING:
    from skyswarm.uav.swarm import Swarm

EXHAUSTED = "battery exhausted"  # the fault kind an empty battery injects


@dataclass(frozen=True)
class BatteryConfig:
    """A simple battery: draw grows with thrust as P = hover_power_w * (T / (m g)) ** 1.5."""

    enabled: bool = param(False, "drain a battery and fail the UAV when it is empty")
    capacity_wh: float = param(60.0, "usable energy, Wh", gt=0.0)
    initial_charge: float = param(1.0, "initial state of charge, 0..1", gt=0.0, le=1.0)
    hover_power_w: float = param(180.0, "electrical power at hover thrust, W", gt=0.0)
    exponent: float = param(1.5, "power ~ thrust ** exponent (1.5: momentum theory)", gt=0.0)


class Battery:
    """The batteries of one swarm: (N,) energy in J, drained each tick in phase 3."""

    def __init__(self, swarm: Swarm, config: BatteryConfig) -> None:
        self.swarm = swarm
        self.config = config
        self.energy_j = np.full(swarm.n, config.capacity_wh * 3600.0 * config.initial_charge)
        self._per_tick = config.hover_power_w * swarm.dt  # J drawn per tick at hover thrust
        self._weight = swarm.config.airframe.weight_n

    @property
    def charge(self) -> np.ndarray:
        """(N,) state of charge, 0..1."""
        return self.energy_j / (self.config.capacity_wh * 3600.0)

    def drain(self, thrust: np.ndarray) -> None:
        """(N, 4) motor thrusts (N) of this tick; an agent whose battery runs empty suffers the
        `battery exhausted` fault once (the simulator's fault injector plays it out)."""
        load = thrust.sum(axis=1) / self._weight
        self.energy_j -= self._per_tick * load**self.config.exponent
        empty = (self.energy_j <= 0.0) & self.swarm.alive
        if empty.any():
            injector = self.swarm.sim.fault_injector
            for k in np.flatnonzero(empty):
                agent = self.swarm.agents[k]
                if EXHAUSTED not in " ".join(agent.faults):
                    injector.inject(agent, EXHAUSTED)
            self.energy_j[empty] = np.maximum(self.energy_j[empty], 0.0) - 1e-12
