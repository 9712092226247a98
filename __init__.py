"""skyswarm: a simulator for swarms of quadrotor UAVs.

The public facade. Everything a script needs to run and script scenarios is here; the modules
under skyswarm.core, .uav, .missions, .gui and .app are internal and may change.

    from skyswarm import load_scenario, run_scenario

    summary = run_scenario("hover", results_dir="out", overrides=["simulation.duration_s=5"])
    print(summary["metrics"])

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
    "load_scenario": "skyswarm.app.api",
    "run_scenario": "skyswarm.app.api",
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
    "ScenarioConfig",
    "Simulator",
    "Swarm",
    "UavAgent",
    "kill",
    "load_scenario",
    "run_scenario",
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
    from skyswarm.app.api import load_scenario, run_scenario
    from skyswarm.core.agent import Agent, PhysicalAgent
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.faults import kill
    from skyswarm.core.mission import Mission
    from skyswarm.core.schema import ConfigError
    from skyswarm.core.simulator import RandomStreams, Simulator
    from skyswarm.uav.agents import AutonomousUavAgent, UavAgent
    from skyswarm.uav.swarm import Swarm
