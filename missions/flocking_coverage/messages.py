"""The flock's messages: what members and base stations put on the air (see flock.py).

Every message is an immutable payload; receivers keep the newest per sender. Sizes on the air
are the channel's default message size except coverage grids, sent with their packed size.
"""

from __future__ import annotations

from dataclasses import dataclass

from skyswarm.missions.flocking_coverage.leader import PlanSnapshot


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A follower's periodic "I am alive, here" (radio broadcast)."""

    sender: int
    time_s: float  # s, when sent
    position: tuple[float, float, float]  # m, the sender's own estimate
    velocity: tuple[float, float, float]  # m/s
    leader: int | None = None  # whose beacons the sender flies by (None: holding, no leader)


@dataclass(frozen=True, slots=True)
class Beacon:
    """The leader's periodic state and plan (radio broadcast); also its heartbeat."""

    sender: int
    time_s: float
    position: tuple[float, float, float]
    velocity: tuple[float, float, float]
    heading_deg: float  # compass, the heading the flock should hold
    intent: tuple[float, float]  # m/s, the horizontal velocity the leader commands itself
    plan: PlanSnapshot


@dataclass(frozen=True, slots=True)
class CoverageMsg:
    """Cells of one area the sender knows as seen (radio share or base-station report)."""

    sender: int
    area: int  # index of the area
    bits: bytes  # `pack()`ed (n_u, n_v) grid of cells known to be seen
    version: int = 0  # the area's geometry version (a moved area's old grids are void)


@dataclass(frozen=True, slots=True)
class SweepDone:
    """The leader to the base stations: the plan is exhausted (long range)."""

    sender: int
    time_s: float


@dataclass(frozen=True, slots=True)
class BaseAck:
    """A base station's acknowledgement: the cells it knows as seen, per area (long range)."""

    sender: int
    time_s: float
    bits: tuple[bytes, ...]  # `pack()`ed grid per area
    versions: tuple[int, ...] = ()  # geometry version per area (see CoverageMsg)
