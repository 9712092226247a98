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
(`flocking.rescout`). See flock.py and leader.py for the behaviour; a flock
split by a short radio range can divide the area between its parts (`flocking.split_lanes`,
partition.py). The scheduled event `move_area` moves an area while the flock works
(see `FlockingCoverage.move_area`).

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

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from skyswarm.core.comms.dispatcher import BaseStation
from skyswarm.core.config import ScenarioConfig
from skyswarm.core.faults import DeathEvent
from skyswarm.core.mission import Mission
from skyswarm.core.schema import ConfigError, param
from skyswarm.missions.coverage import Area, carry_over, footprint_half_m, pack
from skyswarm.missions.flocking_coverage.flock import (
    BaseAck,
    CameraConfig,
    CoverageMsg,
    FlockConfig,
    FlockContext,
    FlockUav,
    SweepDone,
)
from skyswarm.missions.flocking_coverage.leader import LeaderSettings, slot_order
from skyswarm.missions.flocking_coverage.partition import ORPHAN_WAIT_FORMS
from skyswarm.missions.flocking_coverage.report import FlockReport
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm

THRESHOLDS = (0.5, 0.9, 0.95, 0.99)  # coverage fractions whose first time is reported
UNDELIVERED_S = 30.0  # s: the flock done, the base station silent this long ends the run


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


@dataclass(frozen=True)
class MoveArea:
    """Keys of the `move_area` event: an area is moved (and may turn); its size is kept."""

    area: int = param(doc="id of the [[areas]] table to move", ge=0)
    center: tuple[float, float] = param(doc="its new centre (x, y), m, ENU")
    heading_deg: float | None = param(None, "its new sweep heading, compass deg (default: kept)")


class FlockingCoverage(FlockReport, Mission):
    description = "leader-followers flock sweeps areas with cameras; re-scouts after failures"
    sections: ClassVar[dict[str, Any]] = {
        "uav": UavSection,
        "areas": tuple[AreaConfig, ...],
        "flocking": FlockConfig,
        "camera": CameraConfig,
        "coverage": CoverageConfig,
    }
    plot_results = True  # `skyswarm run` writes the plots of core/plot.py
    event_actions: ClassVar[dict[str, type]] = {"move_area": MoveArea}
    highlight_role: ClassVar[str | None] = "leader"  # the views colour the acting leader(s)

    # -- setup ------------------------------------------------------------------------------
    def setup(self) -> None:
        cfg = self.config
        self.flock: FlockConfig = cfg.section("flocking")
        self.camera: CameraConfig = cfg.section("camera")
        self.cov: CoverageConfig = cfg.section("coverage")
        self.areas = self._areas()
        self.stations = self._stations()
        if self.flock.mule is None:  # detected: is every area within the long-range link?
            self.flock = dataclasses.replace(self.flock, mule=self.base_out_of_reach())
        self.swarm = Swarm.from_scenario(self.sim, cfg, FlockUav)
        self.uavs: list[FlockUav] = list(self.swarm.agents)  # type: ignore[arg-type]
        half = footprint_half_m(self.flock.altitude_m, self.camera.fov_deg)
        self.slot_m = 2.0 * half * (1.0 - self.flock.overlap)
        starts = {int(a.id): xy.copy() for a, xy in zip(self.uavs, self.swarm.start_positions)}
        starts = {i: xy[:2] for i, xy in starts.items()}
        ctx = FlockContext(
            self.flock,
            self.camera,
            self.cov.share_period_s,
            self.cov.report_period_s,
            self.areas,
            starts,
            self._settings(half, float(self.swarm.config.control.position.kp), starts),
            self._log,
            {int(st.id): np.asarray(st.position[:2], dtype=float) for st in self.stations},
            self._radio_range(),
            [0] * len(self.areas),
        )
        self.ctx = ctx
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
        for ev in scenario.events:
            if ev.action == "move_area" and ev.params.area not in ids:
                names = ", ".join(map(str, ids))
                raise ConfigError(
                    scenario.file,
                    f"events[{ev.index}].area",
                    ev.params.area,
                    f"an area id ({names})",
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

    def base_out_of_reach(self) -> bool:
        """True when some corner of an area, at the flock's altitude, is beyond the long-range
        link's range of every base station: reports from there never arrive (data mule)."""
        link = self.config.comms.channels.get("long_range")
        reach = float(link.range_m) if link is not None else 0.0
        if math.isinf(reach):
            return False
        corners = np.concatenate([a.corners() for a in self.areas])  # (4 A, 2) m
        alt = self.flock.altitude_m
        far = np.ones(len(corners), dtype=bool)
        for st in self.stations:
            x, y, z = (float(c) for c in st.position)
            d = np.sqrt((corners[:, 0] - x) ** 2 + (corners[:, 1] - y) ** 2 + (alt - z) ** 2)
            far &= d > reach
        return bool(far.any())

    def _radio_range(self) -> float:
        """The radio's rated range (m): members know it, as they know their roster."""
        radio = self.config.comms.channels.get("radio")
        return float(radio.range_m) if radio is not None else math.inf

    def _settings(self, half: float, gain: float, starts: dict[int, np.ndarray]) -> LeaderSettings:
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
            partition=f.split_lanes == "partition",
            order=slot_order(self.areas[0], starts),
            orphan_wait_s=ORPHAN_WAIT_FORMS * f.form_timeout_s,
        )

    def _init_state(self) -> None:
        self.base_known = [a.grid() for a in self.areas]  # what the base stations know
        self.true_seen = [a.grid() for a in self.areas]  # what any camera saw (diagnostic)
        self.owner = [np.full(a.shape, -1, dtype=np.int64) for a in self.areas]
        self.total_cells = sum(a.cells for a in self.areas)
        self.coverage = 0.0
        self.time_to: dict[float, float | None] = {t: None for t in THRESHOLDS}
        self.sweep_done_s: float | None = None
        self.plan_done_s: float | None = None  # when every live leader's plan ended (truth)
        self.undelivered = False  # ended: the flock is done, the base station cannot be told
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
            if isinstance(p, CoverageMsg) and p.version == self.ctx.versions[p.area]:
                self.base_known[p.area] |= self.ctx.grid_of(p.bits, p.area)
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

    def check_delivery(self, now: float, leaders_done: bool) -> None:
        """Instrumentation (10 Hz): end the run, honestly, when every live leader's plan is done
        but the base station has not heard enough: UNDELIVERED_S after that (plus, with the data
        mule, its flight from the areas to a base station at transit speed, `mule_flight_m`)."""
        if not leaders_done or self.sweep_done_s is not None or self.target_met():
            self.plan_done_s = None if not leaders_done else self.plan_done_s
            return
        if self.plan_done_s is None:
            self.plan_done_s = now
        wait = UNDELIVERED_S
        if self.flock.mule:
            wait += self.mule_flight_m() / self.flock.transit_speed_m_s
        if now - self.plan_done_s >= wait:
            self.undelivered = self.done = True
            self._log("undelivered", -1, f"base station knows {self.coverage:.1%}")

    def mule_flight_m(self) -> float:
        """Horizontal distance (m) the data mule may have to fly once the sweep is done, from
        wherever in the areas the plan ends: the least, over the base stations, of the
        farthest area corner's distance to it (the mule flies to the nearest station, never
        farther than that one). Measured from the areas, where the flock is, not from the ENU
        origin: an area 400 m from a base station at the origin is a 100 s flight at 4 m/s."""
        corners = np.concatenate([a.corners() for a in self.areas])  # (4 A, 2) m
        sites = np.array([np.asarray(st.position[:2], dtype=float) for st in self.stations])
        gaps = np.linalg.norm(corners[:, None, :] - sites[None, :, :], axis=2)  # (4 A, S) m
        return float(gaps.max(axis=0).min())

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
            BaseAck(int(station.id), self.sim.time_s, bits, tuple(self.ctx.versions)),
            channel="long_range",
            size_bytes=size,
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

    # -- events -----------------------------------------------------------------------------
    def on_event(self, action: str, params: Any, targets: list[int]) -> None:
        if action == "move_area":
            self.move_area(params)

    def move_area(self, params: MoveArea) -> None:
        """Move an area: new geometry for everyone (the mission's plan inputs, uploaded to every
        member), what the base station and each member knew carried over to the new cells, and
        the leaders re-plan the cells still unseen. Coverage messages in flight for the old
        geometry are void (their version is stale)."""
        k = next(i for i, a in enumerate(self.areas) if a.id == params.area)
        old = self.areas[k]
        heading = old.heading_deg if params.heading_deg is None else params.heading_deg
        new = Area(old.id, params.center, (old.width, old.length), heading, self.cov.cell_m)
        self.base_known[k] = carry_over(old, self.base_known[k], new, False)
        self.true_seen[k] = carry_over(old, self.true_seen[k], new, False)
        self.owner[k] = carry_over(old, self.owner[k], new, -1)
        self.areas[k] = new  # the list the members' context and the leaders share
        self.ctx.versions[k] += 1
        self._assigned.clear()
        for u in self.uavs:
            if u.alive:
                u.area_moved(k, old, new)
        self.coverage = sum(int(g.sum()) for g in self.base_known) / self.total_cells
        self._log("move_area", -1, f"area {old.id} to ({new.center[0]:.1f}, {new.center[1]:.1f})")

    # -- hooks ------------------------------------------------------------------------------
    def is_done(self) -> bool:
        return self.done

    def outcome(self) -> str | None:
        if self.target_met():
            return "target reached"
        if self.undelivered:
            return "base station not informed"
        if self.sweep_done_s is not None and self.done and any(u.alive for u in self.uavs):
            return "plan exhausted"
        return None

    def role_members(self, role: str) -> list[int]:
        """ "leader": the live members that believe they lead (one per part of a split flock)."""
        if role == "leader":
            return [u.id for u in self.uavs if u.alive and u.leader_id == u.id]
        return []

    def group_leaders(self) -> dict[int, int]:
        """{member id: the leader of its part} of the live members: each member follows the
        lowest id it hears (`FlockUav.leader_id`, updated at the behaviour rate), which may
        itself follow a lower one; the chain ends at a member that leads itself (one per part
        of a split flock: `role_members("leader")`). A member whose chain reaches a dead or
        undecided member is in no part (not a key)."""
        follows = {u.id: u.leader_id for u in self.uavs if u.alive}
        out: dict[int, int] = {}
        for uid in follows:
            lead, seen = uid, 0
            while lead in follows and follows[lead] != lead and seen <= len(follows):
                lead, seen = follows[lead], seen + 1  # ids fall along a chain: no cycle
            if lead in follows and follows[lead] == lead:
                out[uid] = lead
        return out
