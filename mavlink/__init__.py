"""skyswarm.mavlink: every UAV a MAVLink 2 vehicle that ground stations, MAVSDK scripts and
swarm controllers fly over UDP, as they fly PX4 (docs/mavlink.md).

Layer: imports core and uav; the app imports it (`skyswarm run/view --mavlink`). pymavlink
(the `skyswarm[mavlink]` extra) is imported only when a service is attached.

    from skyswarm.mavlink import attach
    sim = Simulator.from_scenario(load_scenario("configs/mavlink.toml"))
    service = attach(sim)         # vehicle i: udp 127.0.0.1:14580+i -> 127.0.0.1:14540+i
    sim.run()
    service.close()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skyswarm.mavlink.config import MavlinkConfig

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator
    from skyswarm.mavlink.service import MavlinkService

__all__ = ["MavlinkConfig", "attach", "configured"]


def configured(sim: Simulator) -> MavlinkConfig:
    """The scenario's `[mavlink]` section (defaults without one)."""
    scenario = sim.scenario
    if scenario is not None and "mavlink" in scenario.sections:
        return scenario.section("mavlink")
    return MavlinkConfig()


def attach(sim: Simulator, config: MavlinkConfig | None = None) -> MavlinkService:
    """Start the MAVLink service of `sim` (after `Simulator.from_scenario`): binds every
    vehicle's socket now (ConfigError if a port is taken). In the `mavlink` scenario the ground
    station owns every UAV from the start; elsewhere the mission flies them until it takes one."""
    from skyswarm.mavlink.service import MavlinkService
    from skyswarm.mavlink.vehicles import MavlinkVehicles

    owns = isinstance(sim.mission, MavlinkVehicles)
    return MavlinkService(sim, config or configured(sim), ground_owns=owns)
