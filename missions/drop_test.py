"""Drop test: boxes fall from a height onto the ground. Exercises the kernel with no quadrotor.

Each box free-falls (optionally pushed by a constant horizontal force) until it hits the ground;
the mission reports how far the physics backend's trajectory is from the closed-form
semi-implicit Euler solution while falling (it should be ~1e-9 m) and when each box landed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.backends import BodyShape, World
from skyswarm.core.mission import Mission
from skyswarm.core.schema import param

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator


@dataclass(frozen=True)
class DropTestConfig:
    height_m: float = param(10.0, "drop height of the box centres above the agents' z, m", ge=0.0)
    mass_kg: float = param(1.0, "box mass, kg", gt=0.0)
    size_m: float = param(0.2, "box edge length, m", gt=0.0)
    push_force_n: float = param(0.0, "constant force along +x on every box, N")
    beacon_hz: float = param(
        0.0, "with [comms]: each box broadcasts its id on the radio this often, Hz (0: never)", ge=0
    )
    telemetry_hz: float = param(
        0.0,
        "with [comms]: each box sends its height to every base station (long range), Hz",
        ge=0.0,
    )


class DropTest(Mission):
    description = "boxes dropped onto the ground (kernel check, no quadrotor)"
    sections = {"drop_test": DropTestConfig}

    def setup(self) -> None:
        cfg: DropTestConfig = self.config.section("drop_test")
        self.cfg = cfg
        world = self.sim.world
        specs = self.config.agents.resolved()
        starts = np.array([s.position for s in specs], dtype=float).reshape(-1, 3)
        starts[:, 2] += cfg.height_m
        half = cfg.size_m / 2
        slots = world.add_bodies(BodyShape(half_extents=(half, half, half)), cfg.mass_kg, starts)
        self.boxes = [PhysicalAgent(self.sim, s.id, slot) for s, slot in zip(specs, slots)]
        self.start = starts
        self.landed_s = np.full(len(self.boxes), np.nan)
        self.max_fall_error_m = 0.0
        self.slots = np.asarray(slots)
        if cfg.push_force_n:
            self.sim.add_controller(self._push)
        self._chatter(cfg)

    def _chatter(self, cfg: DropTestConfig) -> None:
        """With [comms]: radio beacons between the boxes and telemetry to the base stations,
        so both channels carry traffic (their counts are in the summary's `comms`)."""
        if self.sim.dispatcher is None:
            return
        stations = list(self.sim.dispatcher.base_stations)
        for box in self.boxes:
            if cfg.beacon_hz > 0:
                box.every(1.0 / cfg.beacon_hz, lambda b=box: b.transceiver.broadcast(b.id))
            if cfg.telemetry_hz > 0 and stations:
                box.every(1.0 / cfg.telemetry_hz, lambda b=box: self._telemetry(b, stations))

    def _telemetry(self, box: PhysicalAgent, stations: list) -> None:
        z = float(self.sim.world.state.position[box.slot, 2])
        for st in stations:
            box.transceiver.send(st, ("height_m", box.id, z), channel="long_range")

    def _push(self, sim: Simulator) -> None:
        """Phase 3: the configured push (N, +x) on every live box."""
        live = [box.slot for box in self.boxes if box.alive]
        force = np.zeros((len(live), 3))
        force[:, 0] = self.cfg.push_force_n
        sim.world.apply_forces(np.asarray(live, dtype=np.intp), force)

    def post_tick(self, world: World) -> None:
        z = world.state.position[self.slots, 2]
        n, dt, g = world.tick, world.tick_s, self.sim.settings.gravity
        # Both backends integrate semi-implicitly: v += g dt, then x += v dt, so after n ticks
        # z = z0 - g dt^2 n (n + 1) / 2 exactly, as long as nothing touches the box.
        expected = self.start[:, 2] - g * dt * dt * n * (n + 1) / 2
        falling = np.isnan(self.landed_s)
        touching = z <= self.cfg.size_m / 2 + 1e-3
        free = falling & ~touching
        if free.any():
            err = float(np.max(np.abs(z[free] - expected[free])))
            self.max_fall_error_m = max(self.max_fall_error_m, err)
        self.landed_s[falling & touching] = world.time_s

    def is_done(self) -> bool:
        if not self.boxes:
            return False
        return (
            bool(np.all(np.isfinite(self.landed_s)))
            and self.sim.time_s >= np.max(self.landed_s) + 0.5
        )

    def outcome(self) -> str | None:
        """ "target reached" once every box has landed (the run then ends half a second later)."""
        if self.boxes and bool(np.all(np.isfinite(self.landed_s))):
            return "target reached"
        return None

    def sample(self) -> dict[str, float]:
        z = self.sim.world.state.position[self.slots, 2]
        return {"mean_z_m": float(np.mean(z)), "landed": int(np.isfinite(self.landed_s).sum())}

    def metrics(self) -> dict[str, float]:
        return {
            "boxes": len(self.boxes),
            "landed": int(np.isfinite(self.landed_s).sum()),
            "max_fall_error_m": self.max_fall_error_m,
            "last_landing_s": float(np.nanmax(self.landed_s))
            if np.isfinite(self.landed_s).any()
            else None,
        }
