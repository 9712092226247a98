"""skyswarm: a simulator for swarms of quadrotor UAVs.

The public facade. Everything a script needs to run and script scenarios is here, and what
code that extends skyswarm (missions, controllers, sensors, backends) needs is in
`skyswarm.extend`; anything not exported from `skyswarm` or `skyswarm.extend` is internal and
may change (docs/extending.md).

    from skyswarm import load_results, load_scenario, run_scenario

    summary = run_scenario("hover", results_dir="out", overrides=["simulation.duration_s=5"])
    print(summary["metrics"])
    print(load_results("out").trajectory.head())  # pandas (the `skyswarm[data]` extra)

Names load on first use (PEP 562), so `import skyswarm` costs nothing and headless use never
imports the GUI. The layers and the tick are described in docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_EXPORTS = {
    "Simulator": "skyswarm.core.simulator",
    "RandomStreams": "skyswarm.core.simulator",
    "ScenarioConfig": "skyswarm.core.config",
    "scenario_from_dict": "skyswarm.core.config",
    "load_results": "skyswarm.core.results",
    "Results": "skyswarm.core.results",
    "load_scenario": "skyswarm.app.api",
    "run_scenario": "skyswarm.app.api",
    "run_sweep": "skyswarm.app.api",
    "Mission": "skyswarm.core.mission",
    "Agent": "skyswarm.core.agent",
    "PhysicalAgent": "skyswarm.core.agent",
    "ConfigError": "skyswarm.core.schema",
    "kill": "skyswarm.core.faults",
    "AutonomousUavAgent": "skyswarm.uav.agents",
    "UavAgent": "skyswarm.uav.agents",
    "Swarm": "skyswarm.uav.swarm",
}

__all__ = [
    "Agent",
    "AutonomousUavAgent",
    "ConfigError",
    "Mission",
    "PhysicalAgent",
    "RandomStreams",
    "Results",
    "ScenarioConfig",
    "Simulator",
    "Swarm",
    "UavAgent",
    "kill",
    "load_results",
    "load_scenario",
    "run_scenario",
    "run_sweep",
    "scenario_from_dict",
]
assert sorted(__all__) == sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'skyswarm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from skyswarm.app.api import load_scenario, run_scenario, run_sweep
    from skyswarm.core.agent import Agent, PhysicalAgent
    from skyswarm.core.config import ScenarioConfig, scenario_from_dict
    from skyswarm.core.faults import kill
    from skyswarm.core.mission import Mission
    from skyswarm.core.results import Results, load_results
    from skyswarm.core.schema import ConfigError
    from skyswarm.core.simulator import RandomStreams, Simulator
    from skyswarm.uav.agents import AutonomousUavAgent, UavAgent
    from skyswarm.uav.swarm import Swarm
