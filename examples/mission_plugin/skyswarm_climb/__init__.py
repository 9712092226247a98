"""An example mission plug-in: every UAV climbs from its start to `[climb] altitude_m` and the
run ends when all live UAVs are within `tolerance_m` of it. Written against `skyswarm.extend`
only.

    pip install examples/mission_plugin
    skyswarm run examples/mission_plugin/climb.toml
"""

from dataclasses import dataclass

import numpy as np

from skyswarm.extend import ConfigError, Mission, Swarm, UavSection, param


@dataclass(frozen=True)
class ClimbConfig:
    """The [climb] section."""

    altitude_m: float = param(8.0, "target height, m", gt=0.0)
    tolerance_m: float = param(0.2, "counts as there within this, m", gt=0.0)

    def validate(self, path: str, file: str) -> None:
        if self.altitude_m > 120.0:
            raise ConfigError(file, f"{path}.altitude_m", self.altitude_m, "at most 120 m")


class Climb(Mission):
    description = "every UAV climbs to [climb] altitude_m"
    sections = {"uav": UavSection, "climb": ClimbConfig}

    def setup(self) -> None:
        self.cfg: ClimbConfig = self.config.section("climb")
        self.swarm = Swarm.from_scenario(self.sim, self.config, hovering=True, altitude_m=2.0)
        target = self.swarm.start_positions.copy()
        target[:, 2] = self.cfg.altitude_m
        self.swarm.command.position(None, target)
        self.arrived_s: float | None = None

    def post_tick(self, world) -> None:
        if self.arrived_s is None and self._there():
            self.arrived_s = world.time_s

    def _there(self) -> bool:
        z = self.sim.world.state.position[self.swarm.slots, 2]
        alive = self.swarm.alive
        return bool(
            alive.any() and (np.abs(z - self.cfg.altitude_m) < self.cfg.tolerance_m)[alive].all()
        )

    def is_done(self) -> bool:
        return self.arrived_s is not None

    def outcome(self) -> str | None:
        if self.arrived_s is None:
            return None
        return "target reached" if self.swarm.alive.all() else "plan exhausted"

    def metrics(self) -> dict:
        return {"arrived_s": self.arrived_s}

    def sample(self) -> dict:
        z = self.sim.world.state.position[self.swarm.slots, 2]
        return {"mean_z_m": float(z.mean())}
