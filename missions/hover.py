"""Hover / keep-spot (QRSim's KeepSpot task): every UAV holds its start position.

UAVs start airborne at their configured position (z from the agent spec, or `altitude_m`) in
Position mode. The reward of each tick is -|p - p0|^2 (m^2), averaged over agents; the mission
reports its mean over the run and the RMS and largest position errors, all counted from
`settle_s` on. In calm air these are zero to rounding; the task is meant for wind (a [wind]
section, see configs/hover_wind.toml), where the mission also reports the air the UAVs held
their spots in (mean wind and RMS gust at the agents, m/s) and how far they leaned into it
(mean and largest tilt, deg), and samples the mean wind speed in the time series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.backends import World
from skyswarm.core.geo import tilt_deg
from skyswarm.core.mission import Mission
from skyswarm.core.monitor_kernels import squared_errors
from skyswarm.core.schema import param
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm


@dataclass(frozen=True)
class HoverConfig:
    altitude_m: float = param(10.0, "hover height of agents whose spec has z = 0, m", gt=0.0)
    settle_s: float = param(1.0, "time before the reward starts counting, s", ge=0.0)


class Hover(Mission):
    description = "keep-spot: hold the start position; reward = -squared distance"
    sections = {"uav": UavSection, "hover": HoverConfig}
    duration_is_target = True  # outcome: "target reached" when every UAV holds on to the end

    def setup(self) -> None:
        cfg: HoverConfig = self.config.section("hover")
        self.cfg = cfg
        self.swarm = Swarm.from_scenario(
            self.sim, self.config, hovering=True, altitude_m=cfg.altitude_m
        )
        self.start = self.swarm.start_positions
        n = self.swarm.n
        self._d, self._sq = np.empty((n, 3)), np.empty(n)  # post_tick's work space
        self.reward_sum = 0.0
        self.sq_sum = 0.0
        self.samples = 0
        self.max_error_m = 0.0
        self.windy = self.swarm.wind_field is not None
        self.wind_sum = self.gust_sq_sum = self.tilt_sum = self.max_tilt_deg = 0.0

    def post_tick(self, world: World) -> None:
        if world.time_s < self.cfg.settle_s:
            return
        alive = self.swarm.alive
        rows, position = self.swarm.rows, world.state.position
        if alive.all() and isinstance(rows, slice) and position.flags.c_contiguous:
            # (the usual tick) one compiled pass into a reused buffer, numpy's sums to the bit
            total, peak = squared_errors(position, rows.start, self.start, self._sq)
            n = len(self._sq)
        else:
            if alive.all():  # into reused buffers: no gather, no new arrays
                d = np.subtract(position[rows], self.start, out=self._d)
                np.multiply(d, d, out=d)  # what `** 2` computes
                # np.sum(axis=1) of the three columns adds them in order: (x + y) + z
                sq = np.add(d[:, 0], d[:, 1], out=self._sq)
                np.add(sq, d[:, 2], out=sq)
            elif alive.any():
                pos = position[rows][alive]
                sq = np.sum((pos - self.start[alive]) ** 2, axis=1)
            else:
                return
            total, peak, n = np.add.reduce(sq), np.maximum.reduce(sq), len(sq)
        mean = float(total) / n  # sq.mean(), to the bit
        self.reward_sum -= mean
        self.sq_sum += mean
        self.samples += 1
        self.max_error_m = max(self.max_error_m, float(np.sqrt(peak)))
        if self.windy:
            self._sample_wind(world, alive)

    def _sample_wind(self, world: World, alive: np.ndarray) -> None:
        """Accumulate the wind and gust speeds at the live agents (m/s) and their tilt (deg)."""
        field = self.swarm.wind_field
        assert field is not None
        self.wind_sum += float(np.linalg.norm(field.velocity[alive], axis=1).mean())
        self.gust_sq_sum += float(np.sum(field.gust[alive] ** 2, axis=1).mean())
        tilt = tilt_deg(world.state.orientation[self.swarm.rows][alive])
        self.tilt_sum += float(tilt.mean())
        self.max_tilt_deg = max(self.max_tilt_deg, float(tilt.max()))

    def sample(self) -> dict[str, float]:
        pos = self.sim.world.state.position[self.swarm.rows]
        alive = self.swarm.alive
        err = np.linalg.norm(pos - self.start, axis=1)[alive]
        out = {"mean_error_m": float(err.mean()) if len(err) else float("nan")}
        if self.windy:
            wind = self.swarm.wind[alive]
            out["wind_m_s"] = float(np.linalg.norm(wind, axis=1).mean()) if len(wind) else 0.0
        return out

    def metrics(self) -> dict[str, float]:
        n = max(self.samples, 1)
        out = {
            "mean_reward_m2": self.reward_sum / n,
            "rms_error_m": float(np.sqrt(self.sq_sum / n)),
            "max_error_m": self.max_error_m,
            "alive": int(self.swarm.alive.sum()),
        }
        sensors = self.swarm.sensors
        if sensors is not None:  # [uav.sensors]: how far the UAVs' estimates were off, m
            out["est_rms_error_m"] = sensors.rms_error_m()
        if self.windy:
            out["mean_wind_m_s"] = self.wind_sum / n
            out["rms_gust_m_s"] = float(np.sqrt(self.gust_sq_sum / n))
            out["mean_tilt_deg"] = self.tilt_sum / n
            out["max_tilt_deg"] = self.max_tilt_deg
        return out
