"""Scheduled-event actions that need a quadrotor, registered with core/events.py on import.

- `motor_fault` (`motor` = 0..3): that motor of each target UAV stops for good, as a physical
  propeller fault does (the collision monitor ends a UAV that then falls);
- `drain_battery` (`charge` = 0..1): each target's battery is set to that state of charge
  (0: empty, which the battery model turns into a `battery exhausted` fault); the scenario needs
  `[uav.battery] enabled = true`;
- `wind` (`speed_m_s`, `from_deg`): the mean wind of every swarm changes; the scenario needs
  `[wind] enabled = true` (the turbulence then follows the new speed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skyswarm.core.events import register_action, register_scenario_check
from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.avoidance import proximity_switched_off

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator


@dataclass(frozen=True)
class MotorFaultParams:
    motor: int = param(0, "index of the motor that stops (0..3)", ge=0, le=3)


@dataclass(frozen=True)
class DrainParams:
    charge: float = param(0.0, "state of charge the battery is set to, 0..1", ge=0.0, le=1.0)


@dataclass(frozen=True)
class WindParams:
    speed_m_s: float = param(doc="new mean wind speed at 20 ft (6.096 m), m/s", ge=0.0)
    from_deg: float = param(0.0, "compass direction the wind blows FROM, deg")


def _wind_fields(sim: Simulator) -> list[Any]:
    """The wind fields of the run's swarms (controllers with one; uav/swarm.py imports this
    module, so the Swarm class is not imported here)."""
    fields = (getattr(c, "wind_field", None) for c in sim.controllers)
    return [f for f in fields if f is not None]


def _motor_fault(sim: Simulator, params: MotorFaultParams, agents: list[Any]) -> None:
    from skyswarm.uav.agents import UavAgent

    for agent in agents:
        if isinstance(agent, UavAgent):
            agent.swarm.fail_motors(agent.index, [params.motor])
            agent.faults.append(f"event: motor {params.motor} at {sim.time_s:.3f} s")


def _drain(sim: Simulator, params: DrainParams, agents: list[Any]) -> None:
    from skyswarm.uav.agents import UavAgent

    for agent in agents:
        battery = agent.swarm.battery if isinstance(agent, UavAgent) else None
        if battery is not None:
            full = battery.config.capacity_wh * 3600.0
            battery.energy_j[agent.index] = params.charge * full  # 0: empty at the next tick


def _wind(sim: Simulator, params: WindParams, agents: list[Any]) -> None:
    for field in _wind_fields(sim):
        field.set_mean(params.speed_m_s, params.from_deg)


def _needs_battery(scenario: ScenarioConfig, params: Any, key: str, file: str) -> None:
    uav = scenario.sections.get("uav")
    battery = getattr(uav, "battery", None)
    if battery is None or not battery.enabled:
        raise ConfigError(file, f"{key}.action", "drain_battery", "[uav.battery] enabled = true")


def _needs_wind(scenario: ScenarioConfig, params: Any, key: str, file: str) -> None:
    if not scenario.wind.enabled:
        raise ConfigError(file, f"{key}.action", "wind", "[wind] enabled = true")


def _avoidance_needs_proximity(scenario: ScenarioConfig) -> None:
    """`[avoidance] enabled` (the default) needs UAVs that sense their neighbours: a scenario
    that switches the proximity sensor off must switch avoidance off too (uav/avoidance.py)."""
    if not scenario.avoidance.enabled:
        return
    sensors = getattr(scenario.sections.get("uav"), "sensors", None)
    if sensors is not None and proximity_switched_off(sensors):
        raise ConfigError(
            scenario.file,
            "avoidance.enabled",
            True,
            "false when the proximity sensor is off ([uav.sensors.proximity] enabled = false)",
        )


register_scenario_check(_avoidance_needs_proximity)
register_action(
    "motor_fault", MotorFaultParams, _motor_fault, needs_target=True, doc="a motor stops"
)
register_action(
    "drain_battery",
    DrainParams,
    _drain,
    needs_target=True,
    check=_needs_battery,
    doc="set the battery's charge",
)
register_action(
    "wind", WindParams, _wind, needs_target=False, check=_needs_wind, doc="change the mean wind"
)
