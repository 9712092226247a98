"""QRSim's battery sag (uav/battery.py, voltage_model): max thrust falls with the voltage."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.config import WorldConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.battery import BatteryConfig
from skyswarm.uav.swarm import Swarm


def hover(charge: float, seconds: float = 2.0, **kw) -> tuple[np.ndarray, Swarm]:
    battery = BatteryConfig(enabled=True, voltage_model=True, initial_charge=charge, **kw)
    sim = Simulator(world=WorldConfig())
    config = dataclasses.replace(CONFIG, battery=battery)
    swarm = Swarm(sim, config, [1], np.array([[0.0, 0.0, 10.0]]), np.zeros(1), hovering=True)
    z = run(sim, seconds, lambda: float(sim.world.state.position[swarm.rows][0, 2]))
    sim.close()
    return z, swarm


def test_max_thrust_is_linear_in_the_voltage_of_the_soc_curve() -> None:
    # 3 cells: 12.6 V full, 9.0 V empty; F_M = cvb0 + cvb1 V from max_thrust_n (5.886 N) at
    # 12.6 V down to 0.45 of it at 9.0 V, so half charge (3.815 V/cell) gives 0.824 of it.
    _, swarm = hover(1.0, 0.0025)
    b = swarm.battery
    f_max = CONFIG.airframe.max_thrust_n
    b.energy_j[:] = b.config.capacity_wh * 3600.0
    assert b.voltage[0] == pytest.approx(12.6)
    assert b.max_thrust[0] == pytest.approx(f_max)
    b.energy_j[:] = 1e-9
    assert b.voltage[0] == pytest.approx(9.0, abs=1e-6)
    assert b.max_thrust[0] == pytest.approx(0.45 * f_max, rel=1e-6)
    b.energy_j[:] = 0.5 * b.config.capacity_wh * 3600.0
    assert b.max_thrust[0] == pytest.approx(f_max * (0.45 + 0.55 * (3.815 - 3.0) / 1.2))


def test_a_discharged_uav_cannot_hold_altitude() -> None:
    # Hover needs half of max_thrust_n per motor (thrust-to-weight 2). At 2 % charge
    # (3.18 V/cell) F_M = (0.3 + 0.7 x 0.15) = 0.405 of it: 19 % short of hover, the UAV sinks
    # metres in 2 s. At 50 % charge F_M = 0.78 of it: it holds the spot to centimetres.
    low, _ = hover(0.02, thrust_at_empty=0.3)
    high, _ = hover(0.5, thrust_at_empty=0.3)
    assert 10.0 - low[-1] > 1.0
    assert abs(high[-1] - 10.0) < 0.05
