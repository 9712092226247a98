"""The flock leader's plan: stages, lanes, formation slots, re-planning and re-scouting.

The plan is a small state machine advanced by the leader at its behaviour rate:

    form -> cross -> wait -> sweep -> (cross -> wait -> sweep)* -> settle -> [re-scout] -> done

- `form`: hover at the take-off point until every member is on its slot (or `form_timeout_s`).
- `cross`: fly (speed-limited) to the start of the next lane, the flock following abeam. A
  leader that comes no nearer its lane start (by `STALL_STEP_M`) for `form_timeout_s` goes on to
  `wait` where it is: something it will not fly through holds it off (a member without a slot
  yet parked on the spot, which the leader's avoidance keeps its distance from); `wait` then
  gives every member a slot, and the flock moves on.
- `wait`: at a lane start, wait until the members are on their slots (or `form_timeout_s`). With
  re-scouting on, a changed membership is handled here: the survivors close ranks and the lanes
  left in the area are re-planned for the narrower swath.
- `sweep`: fly the lane at `speed_m_s`. A leader that comes no nearer the lane's end (by
  `STALL_STEP_M`) for `form_timeout_s` goes on to `wait` where it is, the rest of the lane
  starting there (as in `cross`, something it will not fly through holds it off; `wait` gives
  every member a slot and re-plans the rest of the lane for the swath it has).
- `settle`: after an area's last lane, hover `settle_s` so that the members' last coverage shares
  arrive; then, with re-scouting on, plan lanes over the cells still unseen in the leader's own
  knowledge (those the dead members were responsible for), up to `max_rescout_rounds` times.
- `done`: every area swept; hover.

Joining on the way (shared lanes, re-scouting on): a member heard without a slot in `cross`
or `sweep` (parts of a split flock that meet) gets one at once, placed where it is across the
sweep among the others, who keep their order; the lanes stay (the wider formation, centred on
the lane, sweeps what the planned swath did and more) and a member that falls silent keeps its
slot until the next lane start, where `wait` closes ranks and re-plans. Until 2026-11 slots
changed only at lane starts: a joiner flew by its slot in the plan it followed before, several
on one spot, and in the 50-UAV ideal cell of the robustness matrix (20 m radio, 20 % loss) 43
members of other parts crowded a part of 6 during one lane and held its leader 17 m short of
the lane end from ~500 s to the 2,000 s limit, at 42.3 % coverage (the `sweep` bound alone:
99 % at 842.1 s; with slots at once: 556.1 s). Partitioned parts (partition.py) still merge at
lane starts (rule 3 tells newcomers from the slots).

Slots: each member has a cross-track offset (m, along the area's `u` axis) from the flock centre,
one `slot_m` apart, ordered by position across the sweep so that forming never crosses paths.
The whole state travels in every beacon (`PlanSnapshot`) so that a new leader resumes the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from skyswarm.missions.coverage import Area, Lane, plan_holes, plan_lanes
from skyswarm.missions.flocking_coverage.partition import SplitPlanning, area_share, within


@dataclass(frozen=True)
class PlanSnapshot:
    """The leader's plan as broadcast in beacons (immutable, shared by receivers)."""

    area: int  # index of the area being explored
    lanes: tuple[Lane, ...]
    lane: int  # index of the current (or next) lane
    stage: str  # form, cross, wait, sweep, settle, done
    offsets: tuple[tuple[int, float], ...]  # (member id, cross-track offset m), by offset
    swath_m: float  # swath the lanes were planned for, m
    rounds: int  # re-scouting rounds done in this area
    stage_since_s: float  # time the stage began, s
    # Split flock (partition.py): the `u` interval (m) of the area this part works,
    # its fraction of the flock's width, and the part's members when it split (None/(): whole).
    share: tuple[float, float] | None = None
    part: tuple[float, float] | None = None
    part_ids: tuple[int, ...] = ()
    claimed: bool = False  # this part took the whole area (orphaned strips, _partition rule 4)
    reopen: tuple[int, ...] = ()  # finished areas moved by an event, to sweep again
    reached: int = 0  # the furthest area index the plan has started

    def offset_of(self, member: int) -> float | None:
        for i, off in self.offsets:
            if i == member:
                return off
        return None


# A crossing (sweeping) leader that has not come this much nearer its lane start (end) for
# `form_timeout_s` is held off it (see `cross` and `sweep` above), m.
STALL_STEP_M = 0.5


@dataclass(frozen=True)
class LeaderSettings:
    """What the leader's planning needs from the mission's configuration (m, s, m/s)."""

    slot_m: float
    half_m: float  # camera footprint half-size at the flight altitude
    speed_m_s: float
    transit_speed_m_s: float
    gain: float  # position-loop gain of the autopilot, 1/s
    form_tolerance_m: float
    form_timeout_s: float
    settle_s: float
    rescout: bool
    max_rescout_rounds: int
    rescout_min_cells: int
    altitude_m: float
    partition: bool = False  # split flocks divide the area (flocking.split_lanes)
    order: tuple[
        int, ...
    ] = ()  # member ids in take-off slot order (missions/flocking_coverage/partition.py)
    orphan_wait_s: float = math.inf  # a finished part takes the whole area after this (rule 4)


@dataclass(frozen=True)
class LeaderCommand:
    """Where the leader flies next: a Position-mode target (m) and a compass heading (deg)."""

    target: np.ndarray  # (2,) m
    heading_deg: float


def slot_offsets(order: Sequence[int], slot_m: float) -> tuple[tuple[int, float], ...]:
    """Offsets (m) of members listed left to right, centred on the flock centre."""
    n = len(order)
    return tuple((int(i), (k - (n - 1) / 2) * slot_m) for k, i in enumerate(order))


def slot_order(area: Area, starts: Mapping[int, np.ndarray]) -> tuple[int, ...]:
    """Member ids left to right across `area`'s sweep, from their positions (id -> (2,) m)."""
    return tuple(sorted(starts, key=lambda i: (float(area.to_area(starts[i])[0]), i)))


def initial_plan(
    areas: Sequence[Area],
    starts: Mapping[int, np.ndarray],
    s: LeaderSettings,
    now: float,
) -> PlanSnapshot:
    """The plan of a flock whose members start at `starts` (id -> (2,) m): slots ordered
    across the first area's sweep, lanes from the area corner nearest the flock."""
    order = slot_order(areas[0], starts)
    centroid = np.mean([starts[i] for i in order], axis=0)
    lanes = _area_lanes(areas, 0, len(order) * s.slot_m, centroid, s)
    return PlanSnapshot(
        0, tuple(lanes), 0, "form", slot_offsets(order, s.slot_m), len(order) * s.slot_m, 0, now
    )


def _area_lanes(
    areas: Sequence[Area],
    index: int,
    swath: float,
    here: np.ndarray,
    s: LeaderSettings,
    band: tuple[float, float] | None = None,
) -> list[Lane]:
    """Lanes over a whole area (or its `u` interval `band`, m), starting at the corner nearest
    `here` ((2,) m world)."""
    area = areas[index]
    u, v = area.to_area(here)
    lo, hi = band if band is not None else (-area.width / 2, area.width / 2)
    margin = area.length / 2 - 0.5 * s.half_m
    return plan_lanes(index, (lo, hi), swath, (-margin, margin), u > 0.5 * (lo + hi), v < 0)


class Leader(SplitPlanning):
    """The plan and its execution, held by the member currently leading."""

    def __init__(self, plan: PlanSnapshot, areas: Sequence[Area], settings: LeaderSettings) -> None:
        self.plan = plan
        self.areas = areas
        self.s = settings
        self._anchor: np.ndarray | None = None  # where the leader hovers in this stage, m
        self._me = -1  # the leading member's id, and its position and its peers' (step())
        self._where: tuple[np.ndarray | None, Mapping[int, np.ndarray]] = (None, {})
        self._anchor_key: tuple[str, float] | None = None
        self._known: Sequence[np.ndarray] = ()  # the leader's coverage knowledge (step())
        # the crossing's progress: (stage, since, lane), the nearest it came to the lane start m
        # and when
        self._progress: tuple[tuple[str, float, int], float, float] | None = None

    # -- helpers ----------------------------------------------------------------------------
    def _stage(self, stage: str, now: float, **changes: object) -> None:
        self.plan = replace(self.plan, stage=stage, stage_since_s=now, **changes)

    def _offsets(self) -> dict[int, float]:
        return dict(self.plan.offsets)

    def formed(self, me: int, here: np.ndarray, peers: Mapping[int, np.ndarray]) -> bool:
        """True when every member heard lies within `form_tolerance_m` of its slot."""
        offsets = self._offsets()
        mine = offsets.get(me, 0.0)
        uhat = self.areas[self.plan.area].uhat
        for member, pos in peers.items():
            off = offsets.get(member)
            if off is None:
                continue
            slot = here + (off - mine) * uhat
            if float(np.hypot(*(pos - slot))) > self.s.form_tolerance_m:
                return False
        return True

    def _close_ranks(self, members: set[int], now: float) -> bool:
        """Re-assign slots to `members` (keeping their order); True if anything changed.

        A member without a slot (one that joins, e.g. when two parts of a split flock meet) is
        put where it is across the sweep, as heard, among the others, so that forming the
        merged flock crosses no paths; one never heard goes to the right end."""
        offsets = self._offsets()
        if set(offsets) == members:
            return False
        key = dict(offsets)
        here, peers = self._where
        if here is not None:
            uhat = self.areas[self.plan.area].uhat
            mine = offsets.get(self._me, 0.0)
            for i in members - set(offsets):
                if i in peers:
                    key[i] = mine + float((peers[i] - here) @ uhat)
        order = sorted(members, key=lambda i: (key.get(i, math.inf), i))
        self.plan = replace(self.plan, offsets=slot_offsets(order, self.s.slot_m))
        return True

    # -- the state machine ------------------------------------------------------------------
    def step(
        self,
        me: int,
        here: np.ndarray,
        members: set[int],
        peers: Mapping[int, np.ndarray],
        known: Sequence[np.ndarray],
        now: float,
        altitude_m: float,
        elsewhere: frozenset[int] = frozenset(),
    ) -> LeaderCommand:
        """Advance the plan and return the leader's command.

        `here` (2,) m is the leader's own position; `members` the ids of its part (itself
        included); `peers` the last positions heard from them (m); `known` its own coverage
        knowledge per area; `elsewhere` the members it presumes alive in other parts of a split
        flock (missions/flocking_coverage/partition.py).
        """
        self._me, self._where = me, (here, peers)
        self._known = known
        p = self.plan
        changed = set(dict(p.offsets)) != members
        if self.s.partition and changed and p.stage in ("settle", "done"):
            if self._regroup_parts(members, elsewhere, now):
                p = self.plan
        if self.s.rescout and not self.s.partition and p.stage in ("cross", "sweep"):
            if members - set(dict(p.offsets)):  # joined on the way: a slot now (module doc)
                self._close_ranks(members | set(dict(p.offsets)), now)
                p = self.plan
        if p.stage == "form":
            if altitude_m >= 0.8 * self.s.altitude_m and (
                self.formed(me, here, peers) or now - p.stage_since_s > self.s.form_timeout_s
            ):
                self._stage("cross", now)
            return self._hold(here, now)
        if p.stage == "cross":
            lane = p.lanes[p.lane]
            goal = self._lane_point(me, lane, lane.v0)
            dist = float(np.hypot(*(goal - here)))
            if dist < 0.7 or self._stalled(dist, now):
                self._stage("wait", now)
            return self._fly(here, goal, self.s.transit_speed_m_s, lane)
        if p.stage == "wait":
            lane = p.lanes[p.lane]
            if self.s.rescout and changed:
                if not (self.s.partition and self._regroup_parts(members, elsewhere, now)):
                    self._close_ranks(members, now)  # survivors close ranks
                    self._replan_rest(now)
                return self.step(me, here, members, peers, known, now, altitude_m, elsewhere)
            timeout = now - p.stage_since_s > self.s.form_timeout_s
            if self.formed(me, here, peers) or timeout:
                self._stage("sweep", now)
            return LeaderCommand(self._lane_point(me, lane, lane.v0), self._heading(lane))
        if p.stage == "sweep":
            return self._sweep(me, here, now)
        if p.stage == "settle":
            if now - p.stage_since_s >= self.s.settle_s:
                self._next_work(here, members, known, now)
            return self._hold(here, now)
        if self.s.partition and self._claim_orphans(elsewhere, now):  # done, split
            return self.step(me, here, members, peers, known, now, altitude_m, elsewhere)
        return self._hold(here, now)  # done

    def _stalled(self, dist: float, now: float) -> bool:
        """True when the crossing (sweeping) leader, `dist` m from its lane start (end), has come
        no nearer it by `STALL_STEP_M` for `form_timeout_s` in this stage and lane."""
        p = self.plan
        key = (p.stage, p.stage_since_s, p.lane)
        if (
            self._progress is None
            or self._progress[0] != key
            or dist < self._progress[1] - STALL_STEP_M
        ):
            self._progress = (key, dist, now)
            return False
        return now - self._progress[2] > self.s.form_timeout_s

    def _sweep(self, me: int, here: np.ndarray, now: float) -> LeaderCommand:
        p = self.plan
        lane = p.lanes[p.lane]
        area = self.areas[lane.area]
        direction = 1.0 if lane.v1 >= lane.v0 else -1.0
        v = float(area.to_area(here)[1])
        left = direction * (lane.v1 - v)
        if self._stalled(left, now):
            # held off its lane: wait where it is (the rest of the lane starts here) and let
            # `wait` give every member a slot
            rest = replace(lane, v0=v)
            self._stage("wait", now, lanes=p.lanes[: p.lane] + (rest,) + p.lanes[p.lane + 1 :])
            return LeaderCommand(self._lane_point(me, rest, v), self._heading(lane))
        if left < 0.3:
            if p.lane + 1 < len(p.lanes):
                self._stage("cross", now, lane=p.lane + 1)
            else:
                self._stage("settle", now)
            return LeaderCommand(self._lane_point(me, lane, lane.v1), self._heading(lane))
        ahead = v + direction * self.s.speed_m_s / self.s.gain
        ahead = min(ahead, lane.v1) if direction > 0 else max(ahead, lane.v1)
        return LeaderCommand(self._lane_point(me, lane, ahead), self._heading(lane))

    def _next_work(
        self, here: np.ndarray, members: set[int], known: Sequence[np.ndarray], now: float
    ) -> None:
        """After an area's lanes: re-scout its unseen cells, or go on to the next area."""
        p = self.plan
        if self.s.rescout and p.rounds < self.s.max_rescout_rounds:
            self._close_ranks(members, now)
            lanes = self._holes(p.area, here, known)
            if lanes:
                swath = len(self.plan.offsets) * self.s.slot_m
                self._stage(
                    "cross", now, lanes=tuple(lanes), lane=0, swath_m=swath, rounds=p.rounds + 1
                )
                return
        while p.reopen:  # an area moved after the flock had left it
            k, rest = p.reopen[0], p.reopen[1:]
            lanes = self._holes(k, here, known)
            p = self.plan = replace(self.plan, reopen=rest)
            if lanes:
                swath = len(self.plan.offsets) * self.s.slot_m
                self._stage("cross", now, area=k, lanes=tuple(lanes), lane=0, swath_m=swath)
                self.plan = replace(self.plan, rounds=0)
                return
        nxt = p.reached + 1
        if nxt < len(self.areas):
            if self.s.rescout:
                self._close_ranks(members, now)
            swath = len(self.plan.offsets) * self.s.slot_m
            share = area_share(self.areas[nxt], p.part) if p.part is not None else None
            lanes = _area_lanes(self.areas, nxt, swath, here, self.s, share)
            self._stage(
                "cross",
                now,
                area=nxt,
                lanes=tuple(lanes),
                lane=0,
                swath_m=swath,
                rounds=0,
                share=share,
                reached=nxt,
            )
            return
        self._stage("done", now)

    def _holes(self, index: int, here: np.ndarray, known: Sequence[np.ndarray]) -> list[Lane]:
        """Re-scouting lanes over the cells of area `index` missing from `known` (inside this
        part's interval while the flock is split)."""
        area = self.areas[index]
        share = self.plan.share if index == self.plan.area else None
        u, v = area.to_area(here)
        return plan_holes(
            area,
            index,
            within(~known[index], area, share),
            len(self.plan.offsets) * self.s.slot_m,
            (float(u), float(v)),
            0.5 * self.s.half_m,
            self.s.rescout_min_cells,
            self.s.slot_m,
        )

    def area_moved(self, index: int, here: np.ndarray, known: Sequence[np.ndarray], now: float):
        """Area `index` was moved (an event): sweep what `known` misses of it in its new place.

        The area being worked is re-planned now (its uncovered cells); one already left is
        swept again once the current area is finished; one not reached yet needs nothing (its
        lanes are planned on arrival, in area coordinates)."""
        p = self.plan
        if index > p.reached:
            return
        if index == p.area and p.stage != "done":
            if p.stage == "form":
                return  # the lanes are in area coordinates: they moved with the area
            lanes = self._holes(index, here, known)
            if lanes:
                swath = len(p.offsets) * self.s.slot_m
                self._stage("cross", now, lanes=tuple(lanes), lane=0, swath_m=swath, rounds=0)
            else:
                self._stage("settle", now)
            return
        if index not in p.reopen:
            self.plan = replace(p, reopen=p.reopen + (index,))
        if p.stage == "done":
            self._stage("settle", now)

    def _replan_rest(self, now: float) -> None:
        """Re-plan the lanes not flown yet in this area for the swath of the current slots.

        The new lanes cover what the leader's knowledge still misses of the band the old ones
        spanned (their hull, widened by half the old swath), as re-scouting lanes do: a flock
        whose membership changes at a lane start (members at the edge of a split flock's radio
        range come and go) neither sweeps again what it has seen nor drifts off the cells it
        was after (re-planning a band, the band grows by half a swath at each change). Nothing
        missing there: the lanes left are done (settle, then the next work)."""
        p = self.plan
        rest = p.lanes[p.lane :]
        area = self.areas[p.area]
        swath = len(p.offsets) * self.s.slot_m
        lo = max(-area.width / 2, min(ln.u for ln in rest) - p.swath_m / 2)
        hi = min(area.width / 2, max(ln.u for ln in rest) + p.swath_m / 2)
        descending = rest[0].u > rest[-1].u or (len(rest) == 1 and rest[0].u > 0)
        cols = (area.u_centres >= lo) & (area.u_centres <= hi)
        lanes = plan_holes(
            area,
            p.area,
            ~self._known[p.area] & cols[:, None],
            swath,
            (math.copysign(1e9, 1.0 if descending else -1.0), rest[0].v0),
            0.5 * self.s.half_m,
            self.s.rescout_min_cells,
            self.s.slot_m,
        )
        if not lanes:
            self._stage("settle", now, swath_m=swath)
            return
        self._stage("cross", now, lanes=p.lanes[: p.lane] + tuple(lanes), swath_m=swath)

    # -- commands ---------------------------------------------------------------------------
    def _lane_point(self, me: int, lane: Lane, v: float) -> np.ndarray:
        off = self._offsets().get(me, 0.0)
        return self.areas[lane.area].to_world(lane.u + off, v)

    def _heading(self, lane: Lane) -> float:
        return self.areas[lane.area].sweep_heading(lane.v1 >= lane.v0)

    def _fly(self, here: np.ndarray, goal: np.ndarray, speed: float, lane: Lane) -> LeaderCommand:
        step = goal - here
        dist = float(np.hypot(*step))
        reach = speed / self.s.gain  # the position loop turns this lead into `speed`
        target = goal if dist <= reach else here + step * (reach / dist)
        return LeaderCommand(target, self._heading(lane))

    def _hold(self, here: np.ndarray, now: float) -> LeaderCommand:
        p = self.plan
        lane = p.lanes[min(p.lane, len(p.lanes) - 1)] if p.lanes else None
        heading = self._heading(lane) if lane is not None else self.areas[p.area].heading_deg
        if self._anchor is None or self._anchor_key != (p.stage, p.stage_since_s):
            self._anchor = here.copy()
            self._anchor_key = (p.stage, p.stage_since_s)
        return LeaderCommand(self._anchor, heading)
