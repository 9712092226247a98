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
on alone with the plan. A member that comes to lead takes over the plan of the newest beacon it
heard, or its own plan when it led more recently than that beacon was sent (a split flock's
part whose leader meets a member of another part, follows it a few seconds, then leads again,
goes on with its own plan, not one heard long ago from a leader it left).

Split flocks (`split_lanes = "partition"`, partition.py): heartbeats name the leader
whose beacons the sender flies by and members note who was last heard far away, which tells a
leader its own part from members alive in another.
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


GRID_CACHE_CELLS = 1 << 22  # decoded coverage grids a flock keeps, cells (4 MB)


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
    _grids: dict[int, tuple[bytes, tuple[int, int], np.ndarray]] = field(
        default_factory=dict, repr=False
    )  # decoded coverage bits, by the identity of the bytes (see grid_of)
    _grid_cells: int = 0

    def grid_of(self, bits: bytes, area: int) -> np.ndarray:
        """`unpack(bits, areas[area].shape)`, read-only, decoded once per bytes object: one
        broadcast share reaches every member in range and the base station with the same
        payload. At most GRID_CACHE_CELLS cells are kept (then the cache starts again)."""
        shape = self.areas[area].shape
        hit = self._grids.get(id(bits))
        if hit is not None and hit[0] is bits and hit[1] == shape:
            return hit[2]
        grid = unpack(bits, shape)
        grid.flags.writeable = False
        if self._grid_cells + grid.size > GRID_CACHE_CELLS:
            self._grids.clear()
            self._grid_cells = 0
        self._grids[id(bits)] = (bits, shape, grid)  # holds `bits`: its id is not reused
        self._grid_cells += grid.size
        return grid


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
        pos, vel, yaw = self.sensed_state()
        return pos.copy(), vel.copy(), yaw

    def _look(self, pos: np.ndarray, yaw: float) -> None:
        """Mark the cells inside the camera footprint as seen."""
        if pos[2] < self.ctx.camera.min_altitude_m:
            return
        half = footprint_half_m(float(pos[2]), self.ctx.camera.fov_deg)
        xy = pos[:2]
        for area, seen, known in zip(self.ctx.areas, self.seen, self.known):
            hit = area.footprint(xy, yaw, half)
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
                            self.acked[k] |= self.ctx.grid_of(bits, k)
        split_m = self.ctx.flock.split_range_frac * self.ctx.radio_range_m
        hx, hy = float(here[0]), float(here[1])
        me, heard, last_heard, far = self.id, self.heard, self.last_heard, self.far
        near = split_m * (1.0 - 1e-12)  # |dx| + |dy| below this: nearer than split_m (_at_least)
        for m in self.transceiver.receive("radio"):
            p = m.payload
            if isinstance(p, CoverageMsg):
                if p.version == self._version(p.area):
                    self.known[p.area] |= self.ctx.grid_of(p.bits, p.area)
                continue
            if isinstance(p, _BEATS) and p.sender != me:
                last_heard[p.sender] = now
                self.ever_heard = True
                old = heard.get(p.sender)
                if old is None or old.time_s <= p.time_s:
                    heard[p.sender] = p
                    dx, dy = p.position[0] - hx, p.position[1] - hy
                    far[p.sender] = (
                        False if abs(dx) + abs(dy) < near else _at_least(dx, dy, split_m)
                    )

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
            self._follow(now, pos, leader, members)

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
        """The plan of the last leader heard (its latest beacon), or a fresh one. A member that
        led more recently than that beacon resumes its own plan (its part's lanes or interval,
        not the plan of a leader it left long ago). With shared lanes it took that old plan
        until 2026-11: in the 50-UAV ideal cell of the robustness matrix (20 m radio, 20 %
        loss) a part of one, UAV 45, went back every ~49 s from ~580 s to the end to a
        50-member plan crossing since 98 s (the newest beacon it had heard), re-planned it at
        its lane start, met the edge of the main part (a member of it, not its leader) and,
        leading again a few seconds later, took that old plan once more."""
        beacons = [b for b in self.heard.values() if isinstance(b, Beacon)]
        own = self._own_plan
        if beacons:
            newest = max(beacons, key=lambda b: b.time_s)
            if own is None or own[0] < newest.time_s:
                return newest.plan
        if own is not None:
            return own[1]
        return initial_plan(self.ctx.areas, self.ctx.starts, self.ctx.settings, now)

    def _follow(self, now: float, pos: np.ndarray, leader: int | None, members: set[int]) -> None:
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
        # scalar float arithmetic, operation for operation what the (2,) array formula
        # target = ahead(leader) + rel uhat + intent / gain + push, clipped to `reach`, does
        dt = now - beacon.time_s
        ux, uy = area.uhat.tolist()
        tx = (beacon.position[0] + dt * beacon.velocity[0]) + rel * ux
        ty = (beacon.position[1] + dt * beacon.velocity[1]) + rel * uy
        tx, ty = tx + beacon.intent[0] / self.gain, ty + beacon.intent[1] / self.gain
        hx, hy = float(pos[0]), float(pos[1])
        px, py = _push_xy(hx, hy, *self._peer_xy(now, members), f.separation_m)
        tx, ty = tx + px, ty + py
        sx, sy = tx - hx, ty - hy
        reach = f.catch_up_speed_m_s / self.gain
        dist = float(np.hypot(sx, sy))
        if dist > reach:
            tx, ty = hx + sx * (reach / dist), hy + sy * (reach / dist)
        self.goto(tx, ty, f.altitude_m, beacon.heading_deg)
        self.formation = (int(beacon.sender), rel, plan.area, plan.stage)

    def _push(self, here: np.ndarray, peers: Mapping[int, np.ndarray]) -> np.ndarray:
        """Separation: a target shift (m) away from members closer than `separation_m`."""
        xs = [float(p[0]) for p in peers.values()]
        ys = [float(p[1]) for p in peers.values()]
        sep = self.ctx.flock.separation_m
        return np.array(_push_xy(float(here[0]), float(here[1]), xs, ys, sep))

    def _peer_xy(self, now: float, members: set[int]) -> tuple[list[float], list[float]]:
        """`_peers` as two coordinate lists (m), in the same order, without the arrays."""
        xs, ys = [], []
        heard, me = self.heard, self.id
        for i in members:
            hb = heard.get(i)
            if hb is not None and i != me:
                dt = now - hb.time_s
                if dt > 1.0:  # min(dt, 1.0), NaN kept as min() keeps it
                    dt = 1.0
                xs.append(hb.position[0] + dt * hb.velocity[0])
                ys.append(hb.position[1] + dt * hb.velocity[1])
        return xs, ys

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


_BEATS = (Heartbeat, Beacon)


def _push_xy(
    hx: float, hy: float, xs: Sequence[float], ys: Sequence[float], sep: float
) -> tuple[float, float]:
    """The separation push (m) from (hx, hy) away from the peers at (xs[k], ys[k]): the sum, in
    the peers' order, of 1.5 (sep - d) (here - peer) / d over those with 1e-6 < d < sep m.

    A rounded hypot is never below its larger leg, so only peers within `sep` on both axes can
    be closer than `sep`: the distance is taken (np.hypot) for those alone. The sum is the
    array formula's floating-point operations in the same order (tests/missions/
    test_flock_push.py, test_flock_perf_identity.py)."""
    px = py = 0.0
    for x, y in zip(xs, ys):
        dx, dy = hx - x, hy - y
        if -sep < dx < sep and -sep < dy < sep:
            dist = float(np.hypot(dx, dy))
            if 1e-6 < dist < sep:
                k = 1.5 * (sep - dist)
                px, py = px + k * dx / dist, py + k * dy / dist
    return px, py


def _at_least(dx: float, dy: float, limit: float) -> bool:
    """`np.hypot(dx, dy) >= limit`, taking the hypot only near the limit. A hypot rounded
    within an ulp lies in [max(|dx|, |dy|), (|dx| + |dy|)(1 + 3e-16)], and its square within
    1e-15 of the rounded dx^2 + dy^2, so away from the limit the bounds decide (an infinite
    limit, the usual case, never takes the hypot); NaNs, huge and tiny values take it."""
    ax, ay = abs(dx), abs(dy)
    total = ax + ay
    if total < limit * (1.0 - 1e-12):
        return False
    if (ax if ax > ay else ay) >= limit and total == total:
        return True
    if 1e-100 < limit < 1e100 and total < 1e100:  # squares far from under- and overflow
        square, bound = dx * dx + dy * dy, limit * limit
        if square < bound * (1.0 - 1e-9):
            return False
        if square > bound * (1.0 + 1e-9):
            return True
    return bool(np.hypot(dx, dy) >= limit)


def _tup(v: np.ndarray) -> tuple[float, float, float]:
    x, y, z = v.tolist()
    return (x, y, z)


def _ahead(position: Sequence[float], velocity: Sequence[float], dt: float) -> np.ndarray:
    """(2,) m: the horizontal `position` moved on for `dt` s at `velocity` (the same float
    operations as with arrays, one array made)."""
    return np.array((position[0] + dt * velocity[0], position[1] + dt * velocity[1]))
