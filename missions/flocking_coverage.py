"""Fault-tolerant leader-followers flocking area coverage: the reference case study.

A flock of camera UAVs inspects rectangular areas ([[areas]]: id, centre, size = (width across
the sweep, length along it), compass heading of the sweep). The leader plans a boustrophedon
sweep of each area along its heading with lanes one flock swath apart; followers hold slots
abeam the leader, so the flock sweeps `members x slot_m` at once (`slot_m` = footprint width x
(1 - overlap)). Each member's downward camera marks the coverage-grid cells (`cell_m`) under its
square footprint (half-size altitude x tan(fov / 2)) as seen. Members talk only over the radio
(heartbeats, the leader's beacon with the plan, coverage shares) and report their coverage to the
base station over the long-range link; the mission's coverage figure is what the base station
knows. Members silent for `timeout_s` are presumed dead; the survivors elect the lowest id they
hear as leader, close ranks and re-scout the cells the dead were responsible for and had not seen
(`flocking.rescout`). See missions/_flock.py and missions/_leader.py for the behaviour.

The run ends when the base station knows `coverage.target` of the cells of every area (of all
areas together with `coverage.per_area = false`), when every UAV is dead, or shortly after the
leader reports the plan exhausted. Its outcome (summary.json, exit code) is "target reached",
"plan exhausted" (the sweep ended short of the target: `areas_short` lists the areas below it),
or the simulator's "time limit" / "all agents lost". Scheduled events may name the role
"leader": every live member that believes it leads (a split flock has one per part), and
`leaders_over_time` records every change of who leads. At teardown the mission writes
`coverage.npz` into the results directory (the map layer of `skyswarm plot`, see core/plot.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from skyswarm.core.comms import BaseStation
from skyswarm.core.config import ScenarioConfig
from skyswarm.core.faults import DeathEvent
from skyswarm.core.mission import Mission
from skyswarm.core.schema import ConfigError, param
from skyswarm.missions._coverage import Area, footprint_half_m, pack, unpack
from skyswarm.missions._flock import (
    BaseAck,
    CameraConfig,
    CoverageMsg,
    FlockConfig,
    FlockContext,
    FlockUav,
    SweepDone,
)
from skyswarm.missions._leader import LeaderSettings
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm

THRESHOLDS = (0.5, 0.9, 0.95, 0.99)  # coverage fractions whose first time is reported


@dataclass(frozen=True)
class AreaConfig:
    """One `[[areas]]` table: a rectangle to explore."""

    id: int = param(doc="area id", ge=0)
    center: tuple[float, float] = param(doc="rectangle centre (x, y), m, ENU")
    size: tuple[float, float] = param(
        doc="(width across the sweep, length along the sweep heading), m", gt=0.0
    )
    heading_deg: float = param(0.0, "compass heading of the sweep (lanes run along it), deg")


@dataclass(frozen=True)
class CoverageConfig:
    """The `[coverage]` section: the grid, the reports and the end of the mission."""

    cell_m: float = param(1.0, "coverage-grid cell size, m", gt=0.0)
    target: float = param(
        0.99, "the mission ends when the base station knows this fraction", gt=0.0, le=1.0
    )
    share_period_s: float = param(
        1.0, "period of coverage shares between members, s", gt=0.0, period=True
    )
    report_period_s: float = param(
        1.0, "period of coverage reports to base stations, s", gt=0, period=True
    )
    metrics_period_s: float = param(
        0.1, "period of the mission's metric sampling, s", gt=0.0, period=True
    )
    per_area: bool = param(True, "the target holds for each area (false: all areas together)")


class FlockingCoverage(Mission):
    description = "leader-followers flock sweeps areas with cameras; re-scouts after failures"
    sections: ClassVar[dict[str, Any]] = {
        "uav": UavSection,
        "areas": tuple[AreaConfig, ...],
        "flocking": FlockConfig,
        "camera": CameraConfig,
        "coverage": CoverageConfig,
    }
    plot_results = True  # `skyswarm run` writes the plots of core/plot.py

    # -- setup ------------------------------------------------------------------------------
    def setup(self) -> None:
        cfg = self.config
        self.flock: FlockConfig = cfg.section("flocking")
        self.camera: CameraConfig = cfg.section("camera")
        self.cov: CoverageConfig = cfg.section("coverage")
        self.areas = self._areas()
        self.stations = self._stations()
        self.swarm = Swarm.from_scenario(self.sim, cfg, FlockUav)
        self.uavs: list[FlockUav] = list(self.swarm.agents)  # type: ignore[arg-type]
        half = footprint_half_m(self.flock.altitude_m, self.camera.fov_deg)
        self.slot_m = 2.0 * half * (1.0 - self.flock.overlap)
        ctx = FlockContext(
            self.flock,
            self.camera,
            self.cov.share_period_s,
            self.cov.report_period_s,
            self.areas,
            {int(a.id): xy.copy() for a, xy in zip(self.uavs, self.swarm.start_positions[:, :2])},
            self._settings(half, float(self.swarm.config.control.position.kp)),
            self._log,
            {int(st.id): np.asarray(st.position[:2], dtype=float) for st in self.stations},
        )
        tick = self.sim.world.tick_s
        spread = max(1, self.sim.world.ticks_for(self.flock.behaviour_period_s))
        for k, agent in enumerate(self.uavs):
            agent.join(ctx, (k % spread) * tick)
        self._init_state()
        for st in self.stations:
            st.every(0.1, lambda st=st: self._poll(st), name="coverage collector")
            if self.flock.mule:  # the data mule's acknowledgements
                st.every(self.cov.report_period_s, lambda st=st: self._ack(st), name="ack")
        self.sim.every(self.cov.metrics_period_s, self._measure, name="coverage metrics")
        self.sim.add_death_listener(self._on_death)

    @classmethod
    def memory_bytes(cls, scenario: ScenarioConfig) -> int:
        """The coverage grids: per cell an owner (8 B) and per-member seen maps (1 B each)."""
        cell = scenario.section("coverage").cell_m
        cells = sum(
            (a.size[0] / cell + 1) * (a.size[1] / cell + 1) for a in scenario.section("areas")
        )
        members = len(scenario.agents.list) or scenario.agents.count
        return int(min(cells * (64 + members), 2**62))

    @classmethod
    def check_config(cls, scenario: ScenarioConfig) -> None:
        ids = [a.id for a in scenario.section("areas")]
        if not ids:
            raise ConfigError(scenario.file, "areas", [], "at least one [[areas]] table")
        if len(set(ids)) != len(ids):
            raise ConfigError(scenario.file, "areas", ids, "distinct area ids")
        if not scenario.comms.base_stations:
            raise ConfigError(
                scenario.file,
                "comms.base_stations",
                [],
                "at least one [[comms.base_stations]]: the flock reports coverage to it",
            )

    def _areas(self) -> list[Area]:
        specs = self.config.section("areas")
        if not specs:
            raise ConfigError(self.config.file, "areas", [], "at least one [[areas]] table")
        ids = [a.id for a in specs]
        if len(set(ids)) != len(ids):
            raise ConfigError(self.config.file, "areas", ids, "distinct area ids")
        return [Area(a.id, a.center, a.size, a.heading_deg, self.cov.cell_m) for a in specs]

    def _stations(self) -> list[BaseStation]:
        found = list(getattr(self.sim.dispatcher, "base_stations", []))
        if not found:
            raise ConfigError(
                self.config.file,
                "comms.base_stations",
                [],
                "at least one [[comms.base_stations]]: the flock reports coverage to it",
            )
        return found

    def _settings(self, half: float, gain: float) -> LeaderSettings:
        f = self.flock
        return LeaderSettings(
            slot_m=self.slot_m,
            half_m=half,
            speed_m_s=f.speed_m_s,
            transit_speed_m_s=f.transit_speed_m_s,
            gain=gain,
            form_tolerance_m=f.form_tolerance_m,
            form_timeout_s=f.form_timeout_s,
            settle_s=f.settle_s,
            rescout=f.rescout,
            max_rescout_rounds=f.max_rescout_rounds,
            rescout_min_cells=f.rescout_min_cells,
            altitude_m=f.altitude_m,
        )

    def _init_state(self) -> None:
        self.base_known = [a.grid() for a in self.areas]  # what the base stations know
        self.true_seen = [a.grid() for a in self.areas]  # what any camera saw (diagnostic)
        self.owner = [np.full(a.shape, -1, dtype=np.int64) for a in self.areas]
        self.total_cells = sum(a.cells for a in self.areas)
        self.coverage = 0.0
        self.time_to: dict[float, float | None] = {t: None for t in THRESHOLDS}
        self.sweep_done_s: float | None = None
        self.done = False
        self.events: list[tuple[float, str, int, str]] = []
        self.acting_leader: int | None = None
        self.leader_changes: list[tuple[float, int]] = []
        self.leader_sets: list[tuple[float, tuple[int, ...]]] = []  # every change of who leads
        self.max_leaders = 0
        self._assigned: set[tuple[Any, ...]] = set()
        self.min_sep_now = float("nan")
        self.min_sep = float("inf")
        self.form_err_now = float("nan")
        self._form_sum, self._form_n, self.form_err_max = 0.0, 0, 0.0
        self.lost: list[int] = []

    # -- base station -----------------------------------------------------------------------
    def _poll(self, station: BaseStation) -> None:
        """The base station's collector: OR the reports into what it knows."""
        now = self.sim.time_s
        changed = False
        for m in station.transceiver.receive():
            p = m.payload
            if isinstance(p, CoverageMsg):
                self.base_known[p.area] |= unpack(p.bits, self.areas[p.area].shape)
                changed = True
            elif isinstance(p, SweepDone) and self.sweep_done_s is None:
                self.sweep_done_s = now
                self._log("sweep done", p.sender, "reported to the base station")
        if changed:
            self.coverage = sum(int(k.sum()) for k in self.base_known) / self.total_cells
            for t, at in self.time_to.items():
                if at is None and self.coverage >= t - 1e-12:
                    self.time_to[t] = now
        grace = 2.0 * self.cov.report_period_s
        finished = self.sweep_done_s is not None and now - self.sweep_done_s >= grace
        self.done = self.done or self.target_met() or finished

    def target_met(self) -> bool:
        """The base station knows `coverage.target` of each area (or of all, per_area off)."""
        target = self.cov.target - 1e-12
        if not self.cov.per_area:
            return self.coverage >= target
        return all(float(k.mean()) >= target for k in self.base_known)

    def areas_short(self) -> list[int]:
        """Ids of the areas whose known coverage is below the target."""
        return [a.id for a, k in zip(self.areas, self.base_known) if k.mean() < self.cov.target]

    def _ack(self, station) -> None:
        """Data mule: the base station tells the flock what it knows (long range)."""
        bits = tuple(pack(k) for k in self.base_known)
        size = sum(len(b) for b in bits) + 16
        station.transceiver.broadcast(
            BaseAck(int(station.id), self.sim.time_s, bits), channel="long_range", size_bytes=size
        )

    # -- instrumentation (true state; never fed back to the agents) --------------------------
    def _log(self, kind: str, agent_id: int, detail: str) -> None:
        self.events.append((self.sim.time_s, kind, agent_id, detail))
        if self.sim.recorder is not None:
            self.sim.recorder.event(kind, agent_id, detail)

    def _on_death(self, event: DeathEvent) -> None:
        if any(u.id == event.agent_id for u in self.uavs):
            self.lost.append(event.agent_id)
            if not any(u.alive for u in self.uavs):
                self.done = True

    def _measure(self) -> None:
        alive = [u for u in self.uavs if u.alive]
        for k, grid in enumerate(self.true_seen):
            for u in self.uavs:
                grid |= u.seen[k]
        leaders = [u for u in alive if u.leader is not None]
        who = tuple(u.id for u in leaders)
        if not self.leader_sets or self.leader_sets[-1][1] != who:
            self.leader_sets.append((self.sim.time_s, who))
            self.max_leaders = max(self.max_leaders, len(who))
        leader = min(leaders, key=lambda u: u.id) if leaders else None
        lid = leader.id if leader is not None else None
        if lid != self.acting_leader and lid is not None:
            self.leader_changes.append((self.sim.time_s, lid))
        self.acting_leader = lid
        if leader is not None:
            self._record_assignment(leader)
        state = self.sim.world.state
        pos = state.position[[u.slot for u in alive]] if alive else np.zeros((0, 3))
        if len(pos) > 1:
            d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
            d[np.diag_indices(len(pos))] = np.inf
            self.min_sep_now = float(d.min())
            self.min_sep = min(self.min_sep, self.min_sep_now)
        self.form_err_now = self._formation_error(alive)

    def _formation_error(self, alive: list[FlockUav]) -> float:
        """Mean horizontal distance (m) of sweeping followers from their true slots."""
        by_id = {u.id: u for u in alive}
        errors = []
        for u in alive:
            if u.formation is None or u.formation[3] != "sweep":
                continue
            lead = by_id.get(u.formation[0])
            if lead is None:
                continue
            slot = lead.position[:2] + u.formation[1] * self.areas[u.formation[2]].uhat
            errors.append(float(np.hypot(*(u.position[:2] - slot))))
        if not errors:
            return float("nan")
        err = float(np.mean(errors))
        self._form_sum, self._form_n = self._form_sum + err, self._form_n + 1
        self.form_err_max = max(self.form_err_max, max(errors))
        return err

    def _record_assignment(self, leader: FlockUav) -> None:
        """Responsibility map: the member whose slot strip covers each cell of a swept lane."""
        plan = leader.leader.plan if leader.leader is not None else None
        if plan is None or plan.stage != "sweep":
            return
        lane = plan.lanes[plan.lane]
        key = (lane, plan.offsets)
        if key in self._assigned:
            return
        self._assigned.add(key)
        area = self.areas[lane.area]
        half = footprint_half_m(self.flock.altitude_m, self.camera.fov_deg)
        v_lo, v_hi = min(lane.v0, lane.v1) - half, max(lane.v0, lane.v1) + half
        for member, off in plan.offsets:
            u = lane.u + off
            mask = area.strip_mask(u - self.slot_m / 2, u + self.slot_m / 2, v_lo, v_hi)
            self.owner[lane.area][mask] = member

    # -- hooks ------------------------------------------------------------------------------
    def is_done(self) -> bool:
        return self.done

    def outcome(self) -> str | None:
        if self.target_met():
            return "target reached"
        if self.sweep_done_s is not None and self.done and any(u.alive for u in self.uavs):
            return "plan exhausted"
        return None

    def role_members(self, role: str) -> list[int]:
        """ "leader": the live members that believe they lead (one per part of a split flock)."""
        if role == "leader":
            return [u.id for u in self.uavs if u.alive and u.leader_id == u.id]
        return []

    def sample(self) -> dict[str, float]:
        row: dict[str, float] = {"coverage": self.coverage}
        for area, known in zip(self.areas, self.base_known):
            row[f"coverage_area_{area.id}"] = float(known.mean())
        row["true_coverage"] = sum(int(g.sum()) for g in self.true_seen) / self.total_cells
        row["alive_uavs"] = int(self.swarm.alive.sum())
        row["leader_id"] = -1 if self.acting_leader is None else self.acting_leader
        row["min_separation_m"] = self.min_sep_now
        row["formation_error_m"] = self.form_err_now
        return row

    def uncovered_owned_by_dead(self) -> tuple[int, float]:
        """Cells the base station does not know as seen, and the fraction of them whose
        responsible member (the last slot strip assigned over them) is dead."""
        missing = np.concatenate([(~k).ravel() for k in self.base_known])
        owners = np.concatenate([o.ravel() for o in self.owner])[missing]
        n = int(missing.sum())
        return n, float(np.isin(owners, self.lost).mean()) if n else 0.0

    def metrics(self) -> dict[str, Any]:
        totals = self.sim.dispatcher.totals()
        lost_fates = ("lost_on_air", "out_of_range", "queue_overflow", "receiver_dead")
        uncovered, by_dead = self.uncovered_owned_by_dead()
        return {
            "coverage": self.coverage,
            "time_to_99_s": self.time_to[0.99],
            "time_to_95_s": self.time_to[0.95],
            "coverage_by_area": {
                str(a.id): float(k.mean()) for a, k in zip(self.areas, self.base_known)
            },
            "true_coverage": sum(int(g.sum()) for g in self.true_seen) / self.total_cells,
            "time_to_50_s": self.time_to[0.5],
            "time_to_90_s": self.time_to[0.9],
            "agents_lost": len(self.lost),
            "lost_ids": list(self.lost),
            "leader_changes": [[round(t, 3), i] for t, i in self.leader_changes],
            "leaders_over_time": [[round(t, 3), list(ids)] for t, ids in self.leader_sets],
            "max_simultaneous_leaders": self.max_leaders,
            "areas_short": self.areas_short(),
            "sweep_done_s": self.sweep_done_s,
            "rescout": self.flock.rescout,
            "uncovered_cells": uncovered,
            "uncovered_owned_by_dead": by_dead,
            "messages_sent": sum(c["sent"] for c in totals.values()),
            "messages_delivered": sum(c["delivered"] for c in totals.values()),
            "messages_lost": sum(c[f] for c in totals.values() for f in lost_fates),
            "min_separation_m": self.min_sep if np.isfinite(self.min_sep) else None,
            "formation_error_mean_m": self._form_sum / self._form_n if self._form_n else None,
            "formation_error_max_m": self.form_err_max if self._form_n else None,
            "slot_spacing_m": self.slot_m,
        }

    def teardown(self) -> None:
        if self.sim.recorder is None:
            return
        np.savez_compressed(self.sim.recorder.dir / "coverage.npz", **self.map_layer())

    def map_layer(self) -> dict[str, np.ndarray]:
        """The `coverage.npz` arrays read by core/plot.py (see its module doc)."""
        return {
            "areas": np.stack([a.corners() for a in self.areas]),
            "area_ids": np.array([a.id for a in self.areas]),
            "cell_polygons": np.concatenate([a.cell_polygons() for a in self.areas]),
            "cell_values": np.concatenate([k.ravel() for k in self.base_known]).astype(float),
            "cell_seen": np.concatenate([g.ravel() for g in self.true_seen]),
            "cell_owner": np.concatenate([o.ravel() for o in self.owner]),
            "cell_area": np.concatenate([np.full(a.cells, a.id) for a in self.areas]),
        }

    def hud(self) -> list[str]:
        """The views' headline: coverage known at the base station, the acting leader, state."""
        target = self.cov.target
        leader = "none" if self.acting_leader is None else str(self.acting_leader)
        state = "done" if self.done else ("sweep done" if self.sweep_done_s else "sweeping")
        return [
            f"coverage {100 * self.coverage:5.1f} % (target {100 * target:.0f} %)",
            f"leader {leader}   alive UAVs {int(self.swarm.alive.sum())}   {state}",
        ]

    def overlays(self) -> list[dict[str, Any]]:
        """Area outlines and the cells the base station knows as seen, as plain data for the
        GUI's overlay hook (gui/overlays.py): `segments` (M, 2, 3) / `corners` (M, 4, 3), m."""
        known = sum(int(k.sum()) for k in self.base_known)
        if getattr(self, "_overlay_key", None) != known:
            outlines = []
            for a in self.areas:
                c = np.c_[a.corners(), np.full(4, 0.03)]
                outlines.append(np.stack([c, np.roll(c, -1, axis=0)], axis=1))
            polys = [a.cell_polygons()[k.ravel()] for a, k in zip(self.areas, self.base_known)]
            cells = np.concatenate(polys)
            quads = np.concatenate([cells, np.full((*cells.shape[:2], 1), 0.02)], axis=2)
            self._overlays = [
                {"segments": np.concatenate(outlines), "color": (1.0, 0.85, 0.2, 1.0)},
                {"corners": quads, "color": (0.2, 0.8, 0.3, 0.35)},
            ]
            self._overlay_key = known
        return self._overlays
