"""Flock members: what a camera UAV of the coverage flock senses, says, hears and does.

A `FlockUav` knows only its own state (position, velocity, yaw, altitude: what its own sensors
give), the mission's static plan inputs (the areas, the roster of member ids and their start
positions) and what reaches it over the radio. Nothing here reads another agent's state from the
simulator.

Radio traffic (broadcast on `radio`):
- `Heartbeat` from every follower every `heartbeat_period_s`: its position and velocity;
- `Beacon` from the leader every behaviour period: position, velocity, heading and the whole plan
  (`PlanSnapshot`), which doubles as the leader's heartbeat;
- `CoverageMsg` every `share_period_s`: the sender's coverage knowledge of each area (packed
  bits; cumulative, so a lost share is made good by the next one).
`CoverageMsg` also goes to the base stations on `long_range` every `report_period_s`, and the
leader adds `SweepDone` once the plan is exhausted.

Data mule (`flocking.mule = true`): each base station acknowledges what it knows (`BaseAck` on
`long_range`, every report period). A leader whose plan is exhausted while its knowledge is not
all acknowledged (the base station is out of the long-range link's reach, or was cut) flies the
flock towards the nearest base station until an acknowledgement covers everything it knows, then
holds there. Off by default (no acknowledgements, no extra traffic).

Membership and leadership. A member silent for `timeout_s` is presumed dead. The leader is the
lowest id among the members an agent has heard within the timeout, itself included (every agent
applies this rule to its own view, so the survivors agree once their views agree). Lost link: an
agent that has never heard any member accepts only the pre-agreed leader (the lowest id of the
roster) and hovers where it is once that leader falls silent; a leader that loses everyone goes
on alone with the plan.

Split flocks (`split_lanes = "partition"`, partition.py): heartbeats name the leader
whose beacons the sender flies by and members note who was last heard far away, which tells a
leader its own part from members alive in another; one that leads again resumes its own plan
when it is newer than every beacon heard.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from skyswarm.core.schema import param
from skyswarm.missions.coverage import Area, carry_over, footprint_half_m, pack, unpack
from skyswarm.missions.flocking_coverage.leader import (
    Leader,
    LeaderCommand,
    LeaderSettings,
    PlanSnapshot,
    initial_plan,
)
from skyswarm.missions.flocking_coverage.messages import (
    BaseAck,
    Beacon,
    CoverageMsg,
    Heartbeat,
    SweepDone,
)
from skyswarm.missions.flocking_coverage.partition import PartMembership, split_view
from skyswarm.uav.agents import AutonomousUavAgent


@dataclass(frozen=True)
class FlockConfig:
    """The `[flocking]` section: flight, formation, membership and re-scouting."""

    altitude_m: float = param(6.0, "flight altitude of every member, m", gt=0.0)
    speed_m_s: float = param(3.0, "speed of the flock along a lane, m/s", gt=0.0)
    transit_speed_m_s: float = param(4.0, "speed of the leader between lanes, m/s", gt=0.0)
    catch_up_speed_m_s: float = param(6.0, "top speed of a follower joining its slot, m/s", gt=0)
    overlap: float = param(
        0.25,
        "overlap of neighbouring footprints: slot spacing = (1 - overlap) x footprint",
        ge=0.0,
        lt=1.0,
    )
    behaviour_period_s: float = param(
        0.1, "period of each member's behaviour task, s", gt=0, period=True
    )
    heartbeat_period_s: float = param(
        0.2, "period of followers' heartbeats, s", gt=0.0, period=True
    )
    timeout_s: float = param(2.0, "a member silent this long is presumed dead, s", gt=0.0)
    separation_m: float = param(2.0, "members closer than this push apart, m", ge=0.0)
    form_tolerance_m: float = param(1.5, "a member this close to its slot is formed, m", gt=0)
    form_timeout_s: float = param(15.0, "longest wait for the formation at a lane start, s", gt=0)
    settle_s: float = param(2.5, "hover after an area's lanes before re-planning, s", ge=0.0)
    rescout: bool = param(True, "re-scout what dead members were responsible for")
    max_rescout_rounds: int = param(3, "re-scouting rounds per area, at most", ge=0)
    rescout_min_cells: int = param(4, "smaller groups of unseen cells are not re-scouted", ge=1)
    mule: bool | None = param(
        None,
        "data mule: fly the flock's coverage to a base station it cannot reach by radio "
        "(unset: on when a corner of an area is beyond every base station's long-range link)",
    )
    split_lanes: Literal["partition", "shared"] = param(
        "shared",
        "split flock: each part works its own strips of the area (partition) or all work all",
    )
    split_range_frac: float = param(
        0.75,
        "a member last heard beyond this fraction of the radio range is presumed in another part",
        gt=0.0,
        le=1.0,
    )


@dataclass(frozen=True)
class CameraConfig:
    """The `[camera]` section: every member's downward camera."""

    fov_deg: float = param(40.0, "full angle of the square field of view, deg", gt=0.0, lt=170.0)
    min_altitude_m: float = param(2.0, "below this height the camera records nothing, m", ge=0)


@dataclass
class FlockContext:
    """What the mission hands every member: configuration, areas, roster, instrumentation."""

    flock: FlockConfig
    camera: CameraConfig
    share_period_s: float
    report_period_s: float
    areas: Sequence[Area]
    starts: Mapping[int, np.ndarray]  # roster: member id -> (2,) start position, m
    settings: LeaderSettings
    log: Callable[[str, int, str], None]  # (event kind, agent id, detail) for the results
    stations: Mapping[int, np.ndarray] | None = None  # base station id -> (2,) m (data mule)
    radio_range_m: float = math.inf  # the radio's rated range (split flocks), m
    versions: list[int] = field(default_factory=list)  # geometry version per area (move_area)


class FlockUav(AutonomousUavAgent):
    """A camera UAV of the flock (leader or follower). Call `join(context, phase_s)` once."""

    def join(self, ctx: FlockContext, phase_s: float) -> None:
        """Install the behaviour, heartbeat and coverage tasks; `phase_s` spreads members."""
        self.ctx = ctx
        f = ctx.flock
        self.gain = float(self.swarm.config.control.position.kp)  # own autopilot, 1/s
        self.leader_id: int | None = None
        self.flies_with: int | None = None  # the leader whose beacons this member follows
        self._own_plan: tuple[float, PlanSnapshot] | None = None  # (time, plan) last led
        self.leader: Leader | None = None  # the plan, while this member leads
        self.last_heard: dict[int, float] = {i: 0.0 for i in ctx.starts if i != self.id}
        self.heard: dict[int, Heartbeat | Beacon] = {}
        self.far: dict[int, bool] = {}  # last message from beyond the split distance
        self.ever_heard = False
        self.seen = [a.grid() for a in ctx.areas]  # what its own camera saw
        self.known = [a.grid() for a in ctx.areas]  # seen, by itself or by members it heard
        self.formation: tuple[int, float, int, str] | None = None  # for the formation metric
        self.slot_offset: float | None = None
        self._hold_xy: np.ndarray | None = None
        self.acked: list[np.ndarray] | None = [a.grid() for a in ctx.areas] if f.mule else None
        self._mule_hold: np.ndarray | None = None
        self.every(f.behaviour_period_s, self._behave, phase_s, name="flock")
        self.every(f.heartbeat_period_s, self._heartbeat, phase_s, name="heartbeat")
        self.every(ctx.share_period_s, self._share, phase_s, name="share")
        self.every(ctx.report_period_s, self._report, phase_s, name="report")

    # -- sensing ----------------------------------------------------------------------------
    def _own_state(self) -> tuple[np.ndarray, np.ndarray, float]:
        """Own position (3,) m, velocity (3,) m/s and ENU yaw (rad), from own sensors."""
        return self.sensed_position.copy(), self.sensed_velocity.copy(), self.sensed_yaw

    def _look(self, pos: np.ndarray, yaw: float) -> None:
        """Mark the cells inside the camera footprint as seen."""
        if pos[2] < self.ctx.camera.min_altitude_m:
            return
        half = footprint_half_m(float(pos[2]), self.ctx.camera.fov_deg)
        for area, seen, known in zip(self.ctx.areas, self.seen, self.known):
            hit = area.footprint(pos[:2], yaw, half)
            if hit is not None:
                su, sv, block = hit
                seen[su, sv] |= block
                known[su, sv] |= block

    def _version(self, area: int) -> int:
        return self.ctx.versions[area] if self.ctx.versions else 0

    def _listen(self, now: float, here: np.ndarray) -> None:
        if self.acked is not None:
            for m in self.transceiver.receive("long_range"):
                if isinstance(m.payload, BaseAck):
                    ack = m.payload
                    for k, bits in enumerate(ack.bits):
                        if not ack.versions or ack.versions[k] == self._version(k):
                            self.acked[k] |= unpack(bits, self.ctx.areas[k].shape)
        split_m = self.ctx.flock.split_range_frac * self.ctx.radio_range_m
        for m in self.transceiver.receive("radio"):
            p = m.payload
            if isinstance(p, CoverageMsg):
                if p.version == self._version(p.area):
                    self.known[p.area] |= unpack(p.bits, self.ctx.areas[p.area].shape)
                continue
            if isinstance(p, Heartbeat | Beacon) and p.sender != self.id:
                self.last_heard[p.sender] = now
                self.ever_heard = True
                old = self.heard.get(p.sender)
                if old is None or old.time_s <= p.time_s:
                    self.heard[p.sender] = p
                    d = float(np.hypot(p.position[0] - here[0], p.position[1] - here[1]))
                    self.far[p.sender] = d >= split_m

    # -- membership -------------------------------------------------------------------------
    def heard_from(self) -> Mapping[int, float]:
        """{member id: time s its beacon was last heard} (core.agent.Agent.heard_from)."""
        return self.last_heard

    def members(self, now: float) -> set[int]:
        """Ids this member believes alive: itself and those heard within the timeout."""
        limit = self.ctx.flock.timeout_s
        return {self.id} | {i for i, t in self.last_heard.items() if now - t <= limit}

    def _elect(self, now: float, members: set[int]) -> int | None:
        """The leader by the lowest-id rule; None on lost link (see the module doc)."""
        if self.ever_heard:
            return min(members)
        first = min(self.ctx.starts)
        return first if first in members else None

    # -- behaviour --------------------------------------------------------------------------
    def _behave(self) -> None:
        now = self.sim.time_s
        pos, vel, yaw = self._own_state()
        self._listen(now, pos)
        self._look(pos, yaw)
        members = self.members(now)
        leader = self._elect(now, members)
        if leader != self.leader_id:
            self.ctx.log("leader", self.id, f"follows {leader}" if leader != self.id else "leads")
            self.leader_id = leader
        if leader == self.id:
            self._lead(now, pos, vel, members)
        else:
            self.leader = None
            self._follow(now, pos, leader)

    def _peers(self, now: float, members: set[int]) -> dict[int, np.ndarray]:
        """Last heard horizontal positions (m) of the members, extrapolated to `now`."""
        out = {}
        for i in members:
            hb = self.heard.get(i)
            if hb is not None and i != self.id:
                out[i] = _ahead(hb.position, hb.velocity, min(now - hb.time_s, 1.0))
        return out

    def _lead(self, now: float, pos: np.ndarray, vel: np.ndarray, members: set[int]) -> None:
        ctx = self.ctx
        if self.leader is None:
            self.leader = Leader(self._takeover_plan(now), ctx.areas, ctx.settings)
            self._part = PartMembership(ctx.flock.timeout_s, 2.0 * ctx.flock.timeout_s)
            self.ctx.log("plan", self.id, f"stage {self.leader.plan.stage}")
        peers = self._peers(now, members)
        part, elsewhere = members, frozenset[int]()
        if ctx.settings.partition:
            follows = {i: b.leader for i, b in self.heard.items() if isinstance(b, Heartbeat)}
            roster = [i for i, _ in self.leader.plan.offsets]
            held = self._part.update(self.id, members, self.last_heard, self.far, now)
            part, elsewhere = split_view(self.id, held, roster, self.far, follows)
        lead, share = self.leader, self.leader.plan.share
        cmd = lead.step(self.id, pos[:2], part, peers, self.known, now, float(pos[2]), elsewhere)
        self._own_plan = (now, lead.plan)
        if lead.plan.share != share:  # split / merged: into events.csv
            s = lead.plan.share
            ids = " ".join(map(str, lead.plan.part_ids))
            whole = "whole area: the others silent" if lead.plan.claimed else "merged"
            what = f"split: u {s[0]:.1f} to {s[1]:.1f} m, part {ids}" if s else whole
            ctx.log("lanes", self.id, what)
        if self.acked is not None and self.leader.plan.stage == "done":
            cmd = self._mule(pos[:2], cmd)
        target = cmd.target + self._push(pos[:2], peers)
        self.goto(float(target[0]), float(target[1]), ctx.flock.altitude_m, cmd.heading_deg)
        self.formation = None
        plan = self.leader.plan
        self.slot_offset = plan.offset_of(self.id)
        intent = self.gain * (target - pos[:2])  # what the position loop will ask for, m/s
        speed = float(np.hypot(*intent))
        if speed > ctx.flock.catch_up_speed_m_s:
            intent *= ctx.flock.catch_up_speed_m_s / speed
        beacon = Beacon(
            self.id,
            now,
            _tup(pos),
            _tup(vel),
            cmd.heading_deg,
            (float(intent[0]), float(intent[1])),
            plan,
        )
        self.transceiver.broadcast(beacon, channel="radio")

    def _unreported(self) -> bool:
        """True while some cell this member knows is not in a base station's acknowledgement."""
        assert self.acked is not None
        return any(bool((k & ~a).any()) for k, a in zip(self.known, self.acked))

    def _mule(self, here: np.ndarray, cmd: LeaderCommand) -> LeaderCommand:
        """Plan exhausted: carry what is not acknowledged towards the nearest base station."""
        stations = self.ctx.stations or {}
        if not stations or not self._unreported():
            if self._mule_hold is None:
                self._mule_hold = here.copy()  # reported: hold here (not back at the sweep end)
            return LeaderCommand(self._mule_hold, cmd.heading_deg)
        self._mule_hold = None
        goal = min(stations.values(), key=lambda p: float(np.hypot(*(p - here))))
        step = goal - here
        dist = float(np.hypot(*step))
        reach = self.ctx.settings.transit_speed_m_s / self.gain
        target = goal if dist <= reach else here + step * (reach / dist)
        return LeaderCommand(target, cmd.heading_deg)

    def _takeover_plan(self, now: float) -> PlanSnapshot:
        """The plan of the last leader heard (its latest beacon), or a fresh one. Partitioning
        on, a member that led more recently than that beacon resumes its own plan (a part's
        interval, not the plan of a leader it left long ago)."""
        beacons = [b for b in self.heard.values() if isinstance(b, Beacon)]
        own = self._own_plan if self.ctx.settings.partition else None
        if beacons:
            newest = max(beacons, key=lambda b: b.time_s)
            if own is None or own[0] < newest.time_s:
                return newest.plan
        if own is not None:
            return own[1]
        return initial_plan(self.ctx.areas, self.ctx.starts, self.ctx.settings, now)

    def _follow(self, now: float, pos: np.ndarray, leader: int | None) -> None:
        f = self.ctx.flock
        beacon = self.heard.get(leader) if leader is not None else None
        fresh = isinstance(beacon, Beacon) and now - beacon.time_s <= f.timeout_s
        self.flies_with = beacon.sender if fresh else None  # type: ignore[union-attr]
        climbing = pos[2] < 0.5 * f.altitude_m
        if not fresh or climbing:
            self.formation = None
            if self._hold_xy is None:
                self._hold_xy = pos[:2].copy()
            heading = beacon.heading_deg if isinstance(beacon, Beacon) else None
            self.goto(float(self._hold_xy[0]), float(self._hold_xy[1]), f.altitude_m, heading)
            return
        self._hold_xy = None
        plan = beacon.plan
        area = self.ctx.areas[plan.area]
        mine = plan.offset_of(self.id)
        if mine is not None:
            self.slot_offset = mine
        rel = (self.slot_offset or 0.0) - (plan.offset_of(beacon.sender) or 0.0)
        lead_xy = _ahead(beacon.position, beacon.velocity, now - beacon.time_s)
        slot = lead_xy + rel * area.uhat
        target = slot + np.array(beacon.intent) / self.gain  # the leader's intent, fed forward
        members = self.members(now)
        target = target + self._push(pos[:2], self._peers(now, members))
        step = target - pos[:2]
        reach = f.catch_up_speed_m_s / self.gain
        dist = float(np.hypot(*step))
        if dist > reach:
            target = pos[:2] + step * (reach / dist)
        self.goto(float(target[0]), float(target[1]), f.altitude_m, beacon.heading_deg)
        self.formation = (int(beacon.sender), rel, plan.area, plan.stage)

    def _push(self, here: np.ndarray, peers: Mapping[int, np.ndarray]) -> np.ndarray:
        """Separation: a target shift (m) away from members closer than `separation_m`."""
        sep = self.ctx.flock.separation_m
        push = np.zeros(2)
        if not peers:
            return push
        d = here - np.array(list(peers.values()))  # (k, 2), in the peers' order
        dist = np.hypot(d[:, 0], d[:, 1])
        for k in np.flatnonzero((dist > 1e-6) & (dist < sep)).tolist():
            push += 1.5 * (sep - dist[k]) * d[k] / dist[k]
        return push

    # -- radio ------------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        if self.leader_id == self.id:
            return  # the leader's beacons are its heartbeats
        pos, vel, _ = self._own_state()
        hb = Heartbeat(self.id, self.sim.time_s, _tup(pos), _tup(vel), self.flies_with)
        self.transceiver.broadcast(hb, channel="radio")

    def _coverage_msgs(self) -> list[CoverageMsg]:
        return [
            CoverageMsg(self.id, k, pack(known), self._version(k))
            for k, known in enumerate(self.known)
            if known.any()
        ]

    def _share(self) -> None:
        for msg in self._coverage_msgs():
            self.transceiver.broadcast(msg, channel="radio", size_bytes=len(msg.bits) + 16)

    def _report(self) -> None:
        for msg in self._coverage_msgs():
            self.transceiver.broadcast(msg, channel="long_range", size_bytes=len(msg.bits) + 16)
        plan = self.leader.plan if self.leader is not None else None
        if plan is not None and plan.stage == "done" and plan.share is None:
            # a part of a split flock that finished its interval says nothing: others may not
            self.transceiver.broadcast(SweepDone(self.id, self.sim.time_s), channel="long_range")

    # -- events -----------------------------------------------------------------------------
    def area_moved(self, index: int, old: Area, new: Area) -> None:
        """Area `index` moved (`move_area` event): carry this member's maps over to the new
        cells (seen if its centre lay in a seen cell); leading, re-plan the unseen ones."""
        for grids in (self.seen, self.known, self.acked):
            if grids is not None:
                grids[index] = carry_over(old, grids[index], new, False)
        if self.leader is not None:
            self.leader.area_moved(index, self.sensed_position[:2], self.known, self.sim.time_s)


def _tup(v: np.ndarray) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def _ahead(position: Sequence[float], velocity: Sequence[float], dt: float) -> np.ndarray:
    """(2,) m: the horizontal `position` moved on for `dt` s at `velocity` (the same float
    operations as with arrays, one array made)."""
    return np.array((position[0] + dt * velocity[0], position[1] + dt * velocity[1]))
