"""Fire tracking: a swarm of thermal-camera UAVs finds a wildfire, shares out its front, follows
it and keeps a base station's perimeter map fresh.

The fire (missions/wildfire/fire.py, installed by environment.py) burns on its grid every
`fire.step_s` from the run's environment stream, in the swarm's live mean wind; the cameras
(missions/wildfire/thermal.py) miss cells from the sensors stream. The UAVs
(missions/wildfire/agents.py) search, then follow the segment the base station
(missions/wildfire/base.py) assigns them, and report every frame by radio; a scenario event
`ignite` (x, y, size) starts a spot fire.

Metrics, from the true state (never fed back): the fraction of the true front (burning cells next
to unburnt fuel) inside some live UAV's footprint, sampled every `metrics_period_s` and averaged
from `settle_s` after the base station first knew of the fire; the map's staleness (age of its
oldest segment, s); the detection delay of each ignition (time until the base station knew a
burning cell descending from it); UAVs lost. The outcome is "target reached" once the base
station has a perimeter and a UAV is alive to track it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from skyswarm.core.comms.dispatcher import BaseStation
from skyswarm.core.config import ScenarioConfig
from skyswarm.core.faults import DeathEvent
from skyswarm.core.mission import Mission
from skyswarm.core.schema import ConfigError, param
from skyswarm.missions.wildfire.agents import FireContext, FireUav, TrackingConfig
from skyswarm.missions.wildfire.base import Assignment, FireMap, FireReport, plan_arcs
from skyswarm.missions.wildfire.environment import FireEnvironment, Spot
from skyswarm.missions.wildfire.fire import FireConfig, load_heightmap
from skyswarm.missions.wildfire.thermal import ThermalConfig, in_view
from skyswarm.missions.wildfire.views import fire_overlays, save_record
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm


@dataclass(frozen=True)
class IgniteAction:
    """Parameters of the `ignite` event: a spot fire."""

    center: tuple[float, float] = param(doc="(x, y) centre, m, ENU", length=2)
    size: tuple[float, float] = param((0.0, 0.0), "(width, height) m; 0 x 0: one cell", ge=0.0)


class FireTracking(Mission):
    description = "thermal-camera swarm finds a wildfire, shares out and follows its front"
    sections: ClassVar[dict[str, Any]] = {
        "uav": UavSection,
        "fire": FireConfig,
        "thermal": ThermalConfig,
        "tracking": TrackingConfig,
    }
    event_actions: ClassVar[dict[str, type]] = {"ignite": IgniteAction}
    plot_results = True

    @classmethod
    def check_config(cls, scenario: ScenarioConfig) -> None:
        if not scenario.comms.base_stations:
            raise ConfigError(
                scenario.file,
                "comms.base_stations",
                [],
                "at least one [[comms.base_stations]]: the swarm reports the fire to it",
            )
        fit = scenario.section("tracking").fit
        if fit not in ("tls", "ols"):
            raise ConfigError(scenario.file, "tracking.fit", fit, "tls or ols")
        load_heightmap(scenario.section("fire"), scenario.base_dir, scenario.file, scenario.world)

    @classmethod
    def memory_bytes(cls, scenario: ScenarioConfig) -> int:
        ny, nx = scenario.section("fire").shape
        return int(ny * nx * 120)  # grid, probabilities (8 directions), base map

    # -- setup ------------------------------------------------------------------------------
    def setup(self) -> None:
        cfg = self.config
        self.check_config(cfg)
        self.fire_cfg: FireConfig = cfg.section("fire")
        self.cfg: TrackingConfig = cfg.section("tracking")
        thermal: ThermalConfig = cfg.section("thermal")
        self.thermal = thermal
        self.fire = FireEnvironment(self.sim, cfg)
        self.grid = self.fire.grid
        self.fire.on_ignite = self._on_ignite
        self.swarm = Swarm.from_scenario(self.sim, cfg, FireUav)
        self.uavs: list[FireUav] = list(self.swarm.agents)  # type: ignore[arg-type]
        self.station: BaseStation = list(self.sim.dispatcher.base_stations)[0]
        ctx = FireContext(
            self.cfg, thermal, self.grid, self.sim.rng.sensors.spawn(1)[0], len(self.uavs)
        )
        spread = max(1, self.sim.world.ticks_for(self.cfg.behaviour_period_s))
        for k, uav in enumerate(self.uavs):
            uav.join(ctx, k, (k % spread) * self.sim.world.tick_s)
        ny, nx = self.grid.shape
        jj, ii = np.mgrid[0:ny, 0:nx]
        self.map = FireMap(self.grid.shape, self.grid.fuel, self.grid.centres(jj, ii))
        self.assignment: Assignment | None = None
        self._assigned_cells = 0
        self._members: set[int] = set()
        self.heard: dict[int, float] = {}
        self.reported_xy: dict[int, np.ndarray] = {}
        self.rebalances: list[tuple[float, str, int]] = []
        self.lost: list[int] = []
        self.detected_s: float | None = None
        self._init_metrics()
        self.fire.start(self._wind_xy)
        self.station.every(self.cfg.poll_period_s, self._poll, name="fire map")
        self.sim.every(self.cfg.metrics_period_s, self._measure, name="fire metrics")
        self.sim.add_death_listener(self._on_death)

    def _init_metrics(self) -> None:
        self.front_frac = float("nan")
        self.map_age_s = float("nan")
        self.cell_age_s = float("nan")
        self.frac_sum, self.frac_n, self.frac_min = 0.0, 0, float("inf")
        self.age_max = 0.0
        self.series: list[tuple[float, float, float]] = []  # (t, front fraction, map age)

    # -- fire -------------------------------------------------------------------------------
    def _wind_xy(self) -> np.ndarray:
        field = self.swarm.wind_field
        if field is not None:
            return np.asarray(field.mean_direction[:2], dtype=float)
        wind = self.config.wind
        return wind.direction[:2] * wind.speed_m_s if wind.enabled else np.zeros(2)

    @property
    def spots(self) -> list[Spot]:
        """Every ignition, with when the base station first knew of it (the delay metric)."""
        return self.fire.spots

    def _on_ignite(self, n: int, center: tuple[float, float]) -> None:
        self._log("ignite", -1, f"{n} cells at ({center[0]:.0f}, {center[1]:.0f})")

    def on_event(self, action: str, params: Any, targets: list[int]) -> None:
        if action == "ignite":
            self.fire.ignite(params.center, params.size)

    # -- base station -----------------------------------------------------------------------
    def _poll(self) -> None:
        now = self.sim.time_s
        for m in self.station.transceiver.receive():
            p = m.payload
            if isinstance(p, FireReport):
                self.map.add(p, now)
                self.heard[p.sender] = now
                self.reported_xy[p.sender] = np.asarray(p.position)
        if self.map.ever_hot.any() and self.detected_s is None:
            self.detected_s = now
        self._detect_spots(now)
        per = self.map.perimeter()
        count = int(per.sum())
        if count == 0:
            return
        members = {i for i, t in self.heard.items() if now - t <= self.cfg.timeout_s}
        reason = self._rebalance_reason(now, members, count)
        if reason:
            self._assign(now, per, members, reason)

    def _rebalance_reason(self, now: float, members: set[int], count: int) -> str:
        a = self.assignment
        if a is None:
            return "fire detected"
        if not self.cfg.rebalance:
            return ""
        if members != self._members:
            return "members changed"
        if count >= (1.0 + self.cfg.growth) * self._assigned_cells:
            return "front grew"
        if now - a.time_s >= self.cfg.refresh_s - 1e-9:
            return "refresh"
        return ""

    def _assign(self, now: float, per: np.ndarray, members: set[int], reason: str) -> None:
        if not members:
            return
        c = self.map.centroid()
        ref = self.assignment.arcs[0].lo if self.assignment and self.assignment.arcs else 0.0
        trackers = sorted(members)
        if len(trackers) > self.cfg.spotters:  # the highest ids search on (at least one tracks)
            trackers = trackers[: len(trackers) - self.cfg.spotters]
        uavs = {i: self.reported_xy[i] for i in trackers}
        self._members = set(members)
        arcs = plan_arcs(self.map.centres[per], c, uavs, ref)
        seq = self.assignment.seq + 1 if self.assignment else 1
        self.assignment = Assignment(seq, now, (float(c[0]), float(c[1])), arcs)
        self._assigned_cells = int(per.sum())
        self.rebalances.append((now, reason, len(arcs)))
        if reason != "refresh":
            self._log("rebalance", -1, f"{reason}: {len(arcs)} segments")
        self.station.transceiver.broadcast(self.assignment, channel="long_range")

    def _detect_spots(self, now: float) -> None:
        pending = [s for s in self.spots if s.detected_s is None]
        if not pending or not self.map.ever_hot.any():
            return
        known = set(np.unique(self.grid.source[self.map.ever_hot]).tolist())
        for s in pending:
            if s.source in known:
                s.detected_s = now

    # -- metrics (true state) ---------------------------------------------------------------
    def _measure(self) -> None:
        now = self.sim.time_s
        front = self.grid.front()
        alive = [u for u in self.uavs if u.alive]
        pos = np.array([u.position for u in alive]).reshape(-1, 3)
        n_front = int(front.sum())
        seen = in_view(self.grid, pos, self.thermal)
        self.front_frac = float((front & seen).sum() / n_front) if n_front else float("nan")
        ages = np.zeros(0)
        if self.assignment is not None:
            c = np.asarray(self.assignment.centroid)
            ages = self.map.segment_ages(c, self.cfg.map_segments, now)
        self.map_age_s = float(ages.max()) if len(ages) else float("nan")
        per = self.map.perimeter()
        self.cell_age_s = float(now - self.map.last_seen[per].min()) if per.any() else float("nan")
        if self.detected_s is not None and now >= self.detected_s + self.cfg.settle_s:
            if n_front:
                self.frac_sum += self.front_frac
                self.frac_n += 1
                self.frac_min = min(self.frac_min, self.front_frac)
            if len(ages):
                self.age_max = max(self.age_max, self.map_age_s)
            self.series.append((now, self.front_frac, self.map_age_s))

    def _on_death(self, event: DeathEvent) -> None:
        if any(u.id == event.agent_id for u in self.uavs):
            self.lost.append(event.agent_id)

    def _log(self, kind: str, agent_id: int, detail: str) -> None:
        if self.sim.recorder is not None:
            self.sim.recorder.event(kind, agent_id, detail)

    # -- hooks ------------------------------------------------------------------------------
    def outcome(self) -> str | None:
        if self.detected_s is not None and self.swarm.alive.any():
            return "target reached"
        return None

    def sample(self) -> dict[str, float]:
        burning, burnt = self.grid.counts()
        return {
            "burning_cells": burning,
            "burnt_cells": burnt,
            "front_in_view": self.front_frac,
            "map_age_s": self.map_age_s,
            "perimeter_cell_age_s": self.cell_age_s,
            "known_perimeter_cells": int(self.map.perimeter().sum()),
            "segments": len(self.assignment.arcs) if self.assignment else 0,
            "alive_uavs": int(self.swarm.alive.sum()),
        }

    def metrics(self) -> dict[str, Any]:
        burning, burnt = self.grid.counts()
        delays = [None if s.detected_s is None else s.detected_s - s.at_s for s in self.spots]
        return {
            "first_detection_s": self.detected_s,
            "front_in_view_mean": self.frac_sum / self.frac_n if self.frac_n else None,
            "front_in_view_min": self.frac_min if self.frac_n else None,
            "map_age_max_s": self.age_max if self.frac_n else None,
            "detection_delays_s": delays,
            "uavs_lost": len(self.lost),
            "lost_ids": list(self.lost),
            "rebalances": [[round(t, 3), why, n] for t, why, n in self.rebalances],
            "burning_cells": burning,
            "burnt_cells": burnt,
            "fire_steps": self.grid.steps,
        }

    def teardown(self) -> None:
        if self.sim.recorder is not None:
            save_record(self.sim.recorder.dir / "fire.npz", self.grid, self.map.first_hot_s)

    def hud(self) -> list[str]:
        burning, burnt = self.grid.counts()
        frac = "-" if np.isnan(self.front_frac) else f"{100 * self.front_frac:4.0f} %"
        age = "-" if np.isnan(self.map_age_s) else f"{self.map_age_s:4.1f} s"
        return [
            f"fire: {burning} burning, {burnt} burnt cells   front in view {frac}",
            f"map age {age}   segments {len(self.assignment.arcs) if self.assignment else 0}"
            f"   alive UAVs {int(self.swarm.alive.sum())}",
        ]

    def overlays(self) -> list[dict[str, Any]]:
        """Fire cells and the known perimeter as plain arrays (missions/wildfire/views.py)."""
        key = (self.grid.steps, self.map.version, len(self.spots))
        if getattr(self, "_overlay_key", None) != key:
            self._overlays = fire_overlays(self.grid, self.map.burnt_area())
            self._overlay_key = key
        return self._overlays
