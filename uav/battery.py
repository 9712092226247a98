"""A simple battery per UAV: energy drains with thrust; an empty battery is a fault.

Electrical power follows momentum theory, P = P_hover * (T / (m g)) ** k with k = 1.5 by
default, g the world's gravity: hovering draws `hover_power_w` on any planet, and twice the
thrust draws 2.8 times the power. The check for empty batteries is one vectorised comparison
per tick. Configured per scenario in the `[uav.battery]` table (`BatteryConfig`); off by
default.

With `voltage_model = true` the pack also sags as QRSim models it: the voltage follows a LiPo
state-of-charge curve (`cells` in series, 4.2 V per cell full, 3.0 V empty) and each motor's
largest thrust falls linearly with it, F_M = Cvb0 + Cvb1 V (QRSim's form), from the airframe's
`max_thrust_n` at full charge to `thrust_at_empty` of it at the empty voltage. Motor thrusts
above F_M are cut each tick, so a discharged UAV whose F_M is below hover thrust sinks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.schema import ConfigError, param

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
    voltage_model: bool = param(False, "max thrust falls with the pack voltage (QRSim)")
    cells: int = param(3, "LiPo cells in series (voltage_model)", ge=1)
    thrust_at_empty: float = param(
        0.45, "max thrust at the empty voltage, fraction of max_thrust_n", gt=0.0, le=1.0
    )


# LiPo open-circuit voltage per cell against state of charge (a typical discharge curve).
SOC = np.array([0.0, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 1.0])
CELL_V = np.array([3.0, 3.45, 3.6, 3.7, 3.78, 3.85, 3.95, 4.05, 4.2])


class Battery:
    """The batteries of one swarm: (N,) energy in J, drained each tick in phase 3."""

    def __init__(self, swarm: Swarm, config: BatteryConfig) -> None:
        self.swarm = swarm
        self.config = config
        self.energy_j = np.full(swarm.n, config.capacity_wh * 3600.0 * config.initial_charge)
        self._per_tick = config.hover_power_w * swarm.dt  # J drawn per tick at hover thrust
        # N: the hover thrust in the swarm's world, so a hover draws hover_power_w at any g
        self._weight = swarm.config.airframe.weight_n(swarm.g)
        if self._weight <= 0.0:
            raise ConfigError(
                swarm.config.file,
                "simulation.gravity",
                swarm.g,
                "> 0 with [uav.battery] (its power is relative to the hover thrust m g)",
            )
        f_max = swarm.config.airframe.max_thrust_n
        c = config.cells
        # F_M = cvb0 + cvb1 V through (c 4.2 V, f_max) and (c 3.0 V, thrust_at_empty f_max)
        self.cvb1 = f_max * (1.0 - config.thrust_at_empty) / (c * (CELL_V[-1] - CELL_V[0]))
        self.cvb0 = f_max - self.cvb1 * c * CELL_V[-1]

    @property
    def voltage(self) -> np.ndarray:
        """(N,) pack voltage, V, from the state of charge."""
        soc = np.clip(self.charge, 0.0, 1.0)
        return self.config.cells * np.interp(soc, SOC, CELL_V)

    @property
    def max_thrust(self) -> np.ndarray:
        """(N,) largest thrust per motor at the present voltage, N (QRSim's F_M)."""
        return self.cvb0 + self.cvb1 * self.voltage

    @property
    def charge(self) -> np.ndarray:
        """(N,) state of charge, 0..1."""
        return self.energy_j / (self.config.capacity_wh * 3600.0)

    def drain(self, thrust: np.ndarray) -> bool:
        """(N, 4) motor thrusts (N) of this tick; an agent whose battery runs empty suffers the
        `battery exhausted` fault once (the simulator's fault injector plays it out). With the
        voltage model, thrusts above F_M are cut in place; True if any was."""
        limited = False
        if self.config.voltage_model:
            cap = self.max_thrust[:, None]
            over = thrust > cap
            if over.any():
                np.minimum(thrust, cap, out=thrust)
                limited = True
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
        return limited
