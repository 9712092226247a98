"""A flock held off its lane does not stall for good; a part that leads again keeps its plan.

The 50-UAV ideal cell of the robustness matrix (20 m radio, 20 % loss, seed 5674071896781963072)
stalled at 42.3 % coverage from ~530 s to its 2,000 s limit: leader 1's part swept lane 1 with
6 slots while 43 members of other parts joined it; they flew by the stale slots of the plans they
had followed (up to 6 members on one slot), and the crowd held the leader 17 m short of the lane
end, in `sweep`, where slots never changed. UAV 45, a part of one, meanwhile took over a
50-member plan crossing since 98 s each time it led again (every ~49 s). These tests pin the
rules that end that: joiners get a slot at once, a held sweep waits where it is, and a member
that leads again keeps its own newer plan.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from test_flocking_split_lanes import AREA, STARTS, leader_at, settings

from skyswarm.missions.flocking_coverage.flock import FlockUav
from skyswarm.missions.flocking_coverage.leader import (
    Leader,
    initial_plan,
    slot_offsets,
)
from skyswarm.missions.flocking_coverage.messages import Beacon

SETTINGS = settings(partition=False)  # the reference area's, shared lanes
MEMBERS = set(range(1, 11))


def _sweeping(since: float) -> Leader:
    """Leader 1 of members 1-10 sweeping lane 1 (u 0 m, v 48.9 to -48.9 m) since `since` s with
    slots for members 1-5 only."""
    return leader_at("sweep", since, (5, 4, 3, 2, 1), swath_m=5 * SETTINGS.slot_m)


def _at(lead: Leader, v: float) -> np.ndarray:
    """Leader 1's point (m) at `v` m along its current lane."""
    return lead._lane_point(1, lead.plan.lanes[lead.plan.lane], v)


def _step(lead: Leader, here: np.ndarray, now: float, members: set[int]) -> np.ndarray:
    """One behaviour step of leader 1 at `here`, its members heard 1 m apart along y."""
    peers = {i: here + np.array([0.0, 1.0 * i]) for i in members - {1}}
    return lead.step(1, here, members, peers, [AREA.grid()], now, 6.0).target


def _slots(lead: Leader) -> list[int]:
    return [i for i, _ in lead.plan.offsets]


def test_members_that_join_during_a_lane_get_a_slot_at_once() -> None:
    """Members 6-10 join leader 1's part 10 m into lane 1 (in the 50-UAV cell, 43 members of
    other parts joined one part of 6 during a lane). They get slots at once, placed where they
    are across the sweep (here to the right of 1, 2-10 m beside it), the old
    members keeping their order: 10 slots 3.28 m apart, the formation widened around the same
    lane, which is not re-planned (same lanes, still sweeping since 100 s). A member that falls
    silent during the lane keeps its slot until the next lane start (where `wait` closes ranks
    and re-plans for the swath left)."""
    lead = _sweeping(100.0)
    lanes = lead.plan.lanes
    here = _at(lead, lanes[1].v0 - 10.0)
    _step(lead, here, 103.0, {1, 2, 3, 4, 5})
    assert _slots(lead) == [5, 4, 3, 2, 1]
    right = {i: here + (i - 5) * 2.0 * AREA.uhat for i in range(6, 11)}  # 2-10 m right of 1
    lead.step(1, here, MEMBERS, right, [AREA.grid()], 103.1, 6.0)
    assert _slots(lead) == [5, 4, 3, 2, 1, 6, 7, 8, 9, 10]
    offsets = [off for _, off in lead.plan.offsets]
    assert np.diff(offsets) == pytest.approx([SETTINGS.slot_m] * 9)
    assert lead.plan.lanes == lanes and lead.plan.stage == "sweep"
    assert lead.plan.stage_since_s == 100.0 and lead.plan.swath_m == 5 * SETTINGS.slot_m
    _step(lead, here, 103.2, {1, 2, 3})
    assert _slots(lead) == [5, 4, 3, 2, 1, 6, 7, 8, 9, 10]


def test_a_sweep_held_off_its_lane_end_waits_where_it_is_after_the_form_timeout() -> None:
    """Held 20 m into lane 1 from 100 s: still sweeping at 115 s (the timeout, 15 s, not
    exceeded), then `wait` at 115.1 s on the spot: lane 1 now starts at v 28.9 m, where the
    leader is, and the wait's target is that point (not the old start, 20 m behind). The
    members not on their slots, the wait ends after its own timeout: the sweep goes on from
    the cut, its target ahead of the leader (towards v1), not back."""
    lead = _sweeping(100.0)
    first, lane, *rest = lead.plan.lanes
    assert (lane.v0, lane.v1) == pytest.approx((48.9, -48.9), abs=0.1)
    v = lane.v0 - 20.0
    held = _at(lead, v)
    members = {1, 2, 3, 4, 5}
    for now in (100.0, 110.0, 115.0):
        _step(lead, held, now, members)
        assert lead.plan.stage == "sweep"
    target = _step(lead, held, 115.1, members)
    assert lead.plan.stage == "wait" and lead.plan.stage_since_s == 115.1
    cut = lead.plan.lanes[1]
    assert (cut.u, cut.v0, cut.v1) == pytest.approx((lane.u, v, lane.v1), abs=1e-6)
    assert lead.plan.lanes[0] == first and lead.plan.lanes[2:] == tuple(rest)
    assert np.hypot(*(target - held)) < 1e-6
    _step(lead, held, 130.1, members)
    assert lead.plan.stage == "wait"  # 15 s, not more
    _step(lead, held, 130.2, members)
    assert lead.plan.stage == "sweep" and lead.plan.lanes[1] == cut
    target = _step(lead, held, 130.3, members)
    ahead = AREA.to_area(target)[1] - v
    assert ahead == pytest.approx(-3.0, abs=1e-6)  # speed / gain along the lane, towards v1


def test_a_sweep_at_speed_is_never_cut_short() -> None:
    """A leader flying lane 1 at 3 m/s (0.3 m per 0.1 s behaviour step) sweeps it to its end,
    33 s, without a wait, and goes on to cross to lane 2; one that creeps 0.6 m every 14 s
    (gaining more than 0.5 m within each 15 s) is not cut either."""
    lead = _sweeping(100.0)
    lane = lead.plan.lanes[1]
    now, v = 100.0, lane.v0
    while lead.plan.stage == "sweep":
        _step(lead, _at(lead, v), now, MEMBERS)
        now, v = round(now + 0.1, 1), max(v - 0.3, lane.v1)
    assert lead.plan.stage == "cross" and lead.plan.lane == 2
    assert now == pytest.approx(100.0 + (lane.v0 - lane.v1 - 0.3) / 3.0, abs=0.2)
    lead = _sweeping(100.0)
    for k in range(10):
        _step(lead, _at(lead, lane.v0 - 0.6 * k), 100.0 + 14.0 * k, MEMBERS)
        assert lead.plan.stage == "sweep"


def _member(own: tuple[float, object] | None, beacons: dict[int, Beacon]) -> SimpleNamespace:
    """What `FlockUav._takeover_plan` reads of a member: what it heard, its own plan."""
    ctx = SimpleNamespace(settings=SETTINGS, areas=[AREA], starts=STARTS)
    return SimpleNamespace(heard=beacons, _own_plan=own, ctx=ctx)


def test_a_member_that_leads_again_resumes_its_own_newer_plan_with_shared_lanes() -> None:
    """Member 9 led its own plan until 300 s; the newest beacon it heard is leader 1's of 98 s.
    Leading again at 310 s it goes on with its own plan (before: leader 1's, of 98 s, with the
    whole flock's 10 slots); a beacon newer than its own plan still wins."""
    old = initial_plan([AREA], STARTS, SETTINGS, 0.0)
    mine = replace(old, offsets=slot_offsets((9,), SETTINGS.slot_m), stage="sweep", lane=2)
    beacon = Beacon(1, 98.0, (0.0, 0.0, 6.0), (0.0, 0.0, 0.0), 60.0, (0.0, 0.0), old)
    m = _member((300.0, mine), {1: beacon})
    assert FlockUav._takeover_plan(m, 310.0) is mine
    m = _member((90.0, mine), {1: beacon})
    assert FlockUav._takeover_plan(m, 310.0) is old
    assert FlockUav._takeover_plan(_member(None, {1: beacon}), 310.0) is old
