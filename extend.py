"""skyswarm.extend: the stable public API for code that extends skyswarm.

Anything not exported from `skyswarm` or `skyswarm.extend` is internal and may change without
notice; what is exported here keeps its names and signatures (docs/extending.md).

What is here, by what you are writing:

- a mission plug-in: `Mission` (hooks that do nothing by default), `param` and `ConfigError`
  for the config sections it declares (`Mission.sections`), `UavSection` for its `[uav]`
  airframe section, `Swarm` for its quadrotors, `ViewSource` for what the views show;
- a controller: `Swarm.control(period_s, fn)` with `fn` a `ControllerFn` that reads a
  `SwarmState` and writes commands through the `CommandInterface` (`Swarm.command`: position,
  velocity, attitude, body rates, motors; a bad array is a `CommandError`); `swarms_of(sim)`
  finds the swarms of a simulation built from a scenario;
- a hook in the tick: the phase Protocols `TickListener` (phases 2 and 6), `Controller`
  (phase 3), `EnvironmentForce` (phase 4), `DeathListener`, registered with
  `Simulator.add_pre_tick` / `add_controller` / `add_environment` / `add_post_tick` /
  `add_death_listener`; `EstimateSource`, `ModeSource` and `FaultCapable` for agents of your
  own;
- a sensor model: `Sensor`, `register_sensor`, and the `Truth` and `Setting` it is given;
- a physics backend: `World`, `Capabilities`, `register_backend`;
- a radio loss model: `LossModel`, `register_loss_model`;
- analysis: `load_results` / `Results` (pandas) and `read_trajectory` (numpy records).

    from skyswarm import Simulator, load_scenario
    from skyswarm.extend import swarms_of

    sim = Simulator.from_scenario(load_scenario("hover"))
    (swarm,) = swarms_of(sim)
    swarm.control(0.02, lambda state, command: command.velocity(state.index, [[0, 0, 1]] * state.n))
    sim.run(until_s=2.0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyswarm.core.backends import Capabilities, World, register_backend
from skyswarm.core.comms.channels import LossModel, register_loss_model
from skyswarm.core.hooks import (
    Controller,
    DeathListener,
    EnvironmentForce,
    EstimateSource,
    FaultCapable,
    ModeSource,
    TickListener,
    ViewSource,
)
from skyswarm.core.mission import Mission
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.results import Results, load_results
from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.commands import CommandError, CommandInterface, ControllerFn, SwarmState
from skyswarm.uav.config import UavSection
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor
from skyswarm.uav.swarm import Swarm

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator

__all__ = [
    "Capabilities",
    "CommandError",
    "CommandInterface",
    "ConfigError",
    "Controller",
    "ControllerFn",
    "DeathListener",
    "EnvironmentForce",
    "EstimateSource",
    "FaultCapable",
    "LossModel",
    "Mission",
    "ModeSource",
    "Results",
    "Sensor",
    "Setting",
    "Swarm",
    "SwarmState",
    "TickListener",
    "Truth",
    "UavSection",
    "ViewSource",
    "World",
    "load_results",
    "param",
    "read_trajectory",
    "register_backend",
    "register_loss_model",
    "register_sensor",
    "swarms_of",
]


def swarms_of(sim: Simulator) -> list[Swarm]:
    """The UAV swarms of a simulation, in the order they were built (a swarm is the phase-3
    controller of its UAVs, so they are the `Swarm`s among `sim.controllers`). Shipped UAV
    missions build one; a mission of your own may build several.

        sim = Simulator.from_scenario(load_scenario("waypoints"))
        (swarm,) = swarms_of(sim)
        print(swarm.n, swarm.ids)  # 3 [1 2 3]
    """
    return [c for c in sim.controllers if isinstance(c, Swarm)]
