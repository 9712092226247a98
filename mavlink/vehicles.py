"""The `mavlink` scenario's mission: UAVs landed and disarmed, waiting for a ground station.

It only builds the swarm (on the ground, motors off) and does nothing else: every UAV belongs
to the MAVLink ground station from the start (`MavlinkService(..., ground_owns=True)`; the app
attaches the service, configs/mavlink.toml switches `[mavlink] enabled` on).

    skyswarm run mavlink --realtime
"""

from __future__ import annotations

from skyswarm.core.mission import Mission
from skyswarm.mavlink.config import MavlinkConfig
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm


class MavlinkVehicles(Mission):
    description = "UAVs on the ground, disarmed, flown only by MAVLink ground stations"
    sections = {"uav": UavSection, "mavlink": MavlinkConfig}
    duration_is_target = True  # outcome: "target reached" when every UAV lasts the run

    def setup(self) -> None:
        self.swarm = Swarm.from_scenario(self.sim, self.config, hovering=False)

    def metrics(self) -> dict[str, float]:
        return {"alive": int(self.swarm.alive.sum())}
