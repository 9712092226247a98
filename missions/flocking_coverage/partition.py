"""Split flocks: which part works which cells, decided by each part alone.

A radio range shorter than the flock cuts it into parts that cannot talk; each part elects its
own leader (the lowest id it hears). With `flocking.split_lanes = "partition"` the parts divide
the work without a word, by a rule every part evaluates from what it alone knows (its members,
the members it lost, its coverage map and the roster every member has from the start):

1. *Who is elsewhere.* A member is presumed alive in another part, not dead, when it fell silent
   while it was far away: its last message came from at least `split_range_frac` x the radio's
   rated range. A member that drifts out of range is last heard near the edge of the range; a
   member that dies is last heard wherever it flew, usually close to the leader (it held a slot
   in the formation); a member never heard was never with this part. Members still heard that
   fly by the beacons of a leader presumed elsewhere belong to that part too (their heartbeats
   name it; a member holding, with no leader's beacon to follow, names none). With hysteresis
   (`PartMembership`): a member last heard far away leaves the part only after a silence of
   3 x the timeout (the part's far edge sits near the range, and its members' messages come and
   go); one last heard close by leaves at the timeout, as in an unsplit flock.
2. *Which strip is mine.* The roster in take-off slot order (left to right across the sweep,
   the order of the first plan: the same for every member, whatever plan it inherited later) is
   cut down to the members alive (heard or elsewhere). Each area's width is divided into equal
   strips, one per member of that list, in that order; a part works the hull of its members'
   strips (one `u` interval), and there only the cells its coverage map still misses (lanes
   planned like re-scouting, starting at the interval's edge that borders another part, so that
   parts sweep away from each other). A line formation splits into runs of neighbours, so the
   intervals of two parts are complementary; three or more parts work the same way, each from
   its own members only. Parts that interleave (a member of one between two of another) would
   overlap: the interval is the hull.
3. *Merging.* The rule is re-applied whenever a part's membership changes at a lane start, in
   the settle or the done stage: newcomers (the parts met) widen the hull to the union of the
   parts' strips, and once no member is elsewhere the interval is the whole area. Newcomers are
   placed in the formation where they are across the sweep (no crossing), and the part hovers
   `settle_s` first so that their coverage shares arrive: it then re-plans over every cell of
   the union that the merged knowledge still misses. Members of the part itself coming back
   after a silence bring little news: the part re-plans at once, without the hover.

4. *Orphaned strips.* A member presumed elsewhere may in fact have died far from its part's
   leader: nobody works its strip then. A part that has finished its interval and waited
   `orphan_wait_s` (`ORPHAN_WAIT_FORMS` x `form_timeout_s`, 45 s by default) in the done stage
   with members still elsewhere and no merge takes the whole area: it plans lanes over every
   cell its own map misses, as an unsplit flock re-scouts. Its map lacks what the other parts
   swept since the split, so it flies some of that again (or meets them and merges). With seed 1
   30 UAVs at 60 m reach 99 % at 98.2 s (docs/missions.md), before any part could have
   waited 45 s.

The strips split the whole area, not only what is left, so that parts that took over plans of
different ages still agree; the price is balance: a part whose strips were swept before the
split has little to do. A part that has finished its interval does not report the sweep done
(the others may still be working); after taking the whole area (rule 4) it does, once that is
swept. Without anybody elsewhere the plan is handled as in an unsplit flock (close ranks,
re-plan the lanes left).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.missions.coverage import Area, Lane, plan_holes

ORPHAN_WAIT_FORMS = 3.0  # rule 4: a finished part waits this many form timeouts (45 s)

if TYPE_CHECKING:
    from skyswarm.missions.flocking_coverage.leader import LeaderSettings, PlanSnapshot


def share_of(
    roster: Sequence[int], part: set[int], band: tuple[float, float]
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The interval of `band` (u, m) that `part` works and its fraction (from, to) of the band.

    `roster` lists the live members left to right (slot order); each holds an equal strip of the
    band. None when no member of `part` is on the roster."""
    ks = [k for k, i in enumerate(roster) if i in part]
    if not ks:
        return None
    n = len(roster)
    f0, f1 = min(ks) / n, (max(ks) + 1) / n
    lo, hi = band
    return (lo + f0 * (hi - lo), lo + f1 * (hi - lo)), (f0, f1)


def area_share(area: Area, fraction: tuple[float, float]) -> tuple[float, float]:
    """A part's interval (u, m) of an area from its fraction of the area's width."""
    w = area.width
    return -w / 2 + fraction[0] * w, -w / 2 + fraction[1] * w


def within(holes: np.ndarray, area: Area, share: tuple[float, float] | None) -> np.ndarray:
    """The cells of `holes` ((n_u, n_v) bool) whose centre lies in the interval `share`."""
    if share is None:
        return holes
    cols = (area.u_centres >= share[0]) & (area.u_centres < share[1])
    return holes & cols[:, None]


def split_view(
    me: int,
    members: set[int],
    roster: Sequence[int],
    far: Mapping[int, bool],
    follows: Mapping[int, int | None],
) -> tuple[set[int], frozenset[int]]:
    """(my part, members presumed alive elsewhere) from one member's own view.

    `members` are the ids it heard within the timeout (itself included); `far[i]` says whether
    member i's last message came from beyond the split distance (a member never heard counts as
    far: it was never in this part); `follows[i]` is the leader whose beacons member i's last
    heartbeat said it flies by. See the module doc, rule 1."""
    gone = {i for i in roster if i not in members and far.get(i, True)}
    away = {i for i in members if i != me and follows.get(i) in gone}
    return members - away, frozenset(gone | away)


class PartMembership:
    """Who is in this leader's part, with hysteresis (partition mode only).

    A member at the far edge of the part is near the radio's range: its messages come and go,
    and every change of membership would re-plan the part's lanes. So a member last heard far
    away stays in the part (keeps its slot and strip) until it has been silent `hold_s` longer
    than the timeout; a member last heard close by (dead, most likely) leaves at the timeout as in
    an unsplit flock, and one heard again joins at once (it flies by this part's beacons). The
    hold is 2 x the timeout (`FlockUav`): with seed 1, 10 UAVs at 20 m reached 99 % at 212.1 s
    with 1 x, 194.1 s with 2 x and 203.1 s with 5 x when it was chosen (docs/missions.md; the
    partitioned run takes 181.1 s on today's code, the shared one 189.1 s; seeds 2 and 3: 309.1 s
    and 211.1 s against 188.1 s and 189.1 s)."""

    def __init__(self, timeout_s: float, hold_s: float) -> None:
        self.limit_s = timeout_s + hold_s
        self.part: set[int] | None = None

    def update(
        self,
        me: int,
        members: set[int],
        last_heard: Mapping[int, float],
        far: Mapping[int, bool],
        now: float,
    ) -> set[int]:
        """The part from `members` (heard within the timeout) and the previous part."""
        limit = self.limit_s
        kept = {
            i
            for i in (self.part or ())
            if far.get(i, False) and now - last_heard.get(i, -math.inf) <= limit
        }
        self.part = members | kept | {me}
        return set(self.part)


class SplitPlanning:
    """The leader's side of rules 2 and 3 (mixed into `Leader`, whose plan state it edits)."""

    plan: PlanSnapshot
    areas: Sequence[Area]
    s: LeaderSettings
    _where: tuple[np.ndarray | None, Mapping[int, np.ndarray]]
    _known: Sequence[np.ndarray]

    def _close_ranks(self, members: set[int], now: float) -> bool:
        raise NotImplementedError

    def _stage(self, stage: str, now: float, **changes: Any) -> None:
        raise NotImplementedError

    def _regroup_parts(self, members: set[int], elsewhere: frozenset[int], now: float) -> bool:
        """Apply rules 2 and 3 after a change of membership; False if the flock is not split
        (nobody elsewhere, no interval held): the caller then handles it as unsplit."""
        p = self.plan
        if not elsewhere and p.share is None:
            return False
        joined = bool(members - set(dict(p.offsets)))
        if p.claimed and not joined:
            return False  # rule 4: the part works the whole area until it meets another
        roster = [i for i in self.s.order if i in members or i in elsewhere]
        area = self.areas[p.area]
        mine = share_of(roster, members, (-area.width / 2, area.width / 2))
        if mine is None:
            return False
        share, frac = mine if elsewhere else (None, None)
        if not joined and share is not None and p.share is not None:
            if p.share[0] - 1e-9 <= share[0] and share[1] <= p.share[1] + 1e-9:
                # losses only: keep the interval (a member at the edge of the range flickers in
                # and out; its strip stays here) and close ranks as an unsplit flock would
                return False
        self._close_ranks(members, now)
        self.plan = replace(
            self.plan,
            share=share,
            part=frac,
            part_ids=tuple(sorted(members)),
            rounds=0,
            claimed=False,
        )
        if members - set(dict(p.offsets)) - set(p.part_ids):
            # the parts met: hover while the newcomers' coverage shares arrive (members of this
            # part coming back after a silence bring little news: re-plan at once)
            self._stage("settle", now)
            return True
        lanes = self._part_lanes(p.area)
        if lanes:
            swath = len(self.plan.offsets) * self.s.slot_m
            self._stage("cross", now, lanes=tuple(lanes), lane=0, swath_m=swath)
        else:
            self._stage("settle", now)
        return True

    def _claim_orphans(self, elsewhere: frozenset[int], now: float) -> bool:
        """Rule 4: a part done with its interval that has waited `orphan_wait_s` with members
        still elsewhere takes the whole area; True if it did."""
        p = self.plan
        if p.share is None or not elsewhere or now - p.stage_since_s < self.s.orphan_wait_s:
            return False
        self.plan = replace(p, share=None, part=None, rounds=0, claimed=True)
        lanes = self._part_lanes(p.area)
        if lanes:
            swath = len(self.plan.offsets) * self.s.slot_m
            self._stage("cross", now, lanes=tuple(lanes), lane=0, swath_m=swath)
        else:
            self._stage("done", now)  # nothing left that it knows of: it reports the sweep done
        return True

    def _part_lanes(self, index: int) -> list[Lane]:
        """Lanes over what this part's knowledge misses of its interval of area `index`,
        starting at the edge next to another part (rule 2)."""
        p = self.plan
        area = self.areas[index]
        here = self._where[0]
        u, v = area.to_area(here) if here is not None else (0.0, 0.0)
        if p.part is not None and (p.part[0] > 1e-9) != (p.part[1] < 1 - 1e-9):
            u = -1e9 if p.part[0] > 1e-9 else 1e9  # a part on one side only: start next to it
        return plan_holes(
            area,
            index,
            within(~self._known[index], area, p.share),
            len(self.plan.offsets) * self.s.slot_m,
            (float(u), float(v)),
            0.5 * self.s.half_m,
            self.s.rescout_min_cells,
            self.s.slot_m,
        )
