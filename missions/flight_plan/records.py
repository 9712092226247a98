"""What the executor measures: cross-track error per flown leg, and the per-UAV summary.

Bounded whatever the run length: the executor keeps the first `MAX_LOGGED` leg records (and
leg ends, fly-over misses, flown geometry); later legs fold into one running total
(`LegRecord.absorb`), so the metrics still count every sample. The summary lists the first
`MAX_LISTED` legs and counts the rest (`legs_flown`, `legs_not_listed`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyswarm.missions.flight_plan.executor import Executor


MAX_LOGGED = 1000  # per UAV: leg records, leg ends, fly-over misses, flown leg geometry
MAX_LISTED = 100  # per UAV: legs listed in summary.json; the rest are counted


@dataclass
class LegRecord:
    """Cross-track statistics of one flown leg (instance)."""

    id: str
    kind: str
    stage: str
    start_s: float
    end_s: float = math.nan
    n: int = 0
    sum_sq: float = 0.0
    max_abs: float = 0.0
    straight: bool = True  # only line segments were sampled
    n_line: int = 0  # samples on line segments (the straight parts of the leg)
    sum_sq_line: float = 0.0
    max_line: float = 0.0
    legs: int = 1  # legs this record stands for (more for the running total)

    def add(self, cross: float, straight: bool) -> None:
        self.n += 1
        self.sum_sq += cross * cross
        self.max_abs = max(self.max_abs, abs(cross))
        self.straight = self.straight and straight
        if straight:
            self.n_line += 1
            self.sum_sq_line += cross * cross
            self.max_line = max(self.max_line, abs(cross))

    def absorb(self, other: LegRecord) -> None:
        """Add `other`'s samples to this record (a running total of legs not kept)."""
        self.n += other.n
        self.sum_sq += other.sum_sq
        self.max_abs = max(self.max_abs, other.max_abs)
        self.n_line += other.n_line
        self.sum_sq_line += other.sum_sq_line
        self.max_line = max(self.max_line, other.max_line)
        self.legs += other.legs

    def as_dict(self) -> dict[str, Any]:
        rms = math.sqrt(self.sum_sq / self.n) if self.n else None
        return {
            "id": self.id,
            "kind": self.kind,
            "stage": self.stage,
            "duration_s": round(self.end_s - self.start_s, 4),
            "xte_rms_m": rms,
            "xte_max_m": self.max_abs if self.n else None,
        }


def summary(ex: Executor) -> Mapping[str, Any]:
    """The UAV's state and its first `MAX_LISTED` completed legs; `legs_flown` counts all."""
    done = [r for r in ex.records if not math.isnan(r.end_s)]
    flown = len(done) + ex.folded.legs
    return {
        "state": ex.state,
        "emergency": ex.emergency or None,
        "waypoints_passed": ex.waypoints_passed,
        "stage_s": {k: round(v, 4) for k, v in ex.stage_s.items()},
        "legs": [r.as_dict() for r in done[:MAX_LISTED]],
        "legs_flown": flown,
        "legs_not_listed": max(0, flown - MAX_LISTED),
    }


def capped_append(items: list, item: Any) -> None:
    """Append while the list holds fewer than `MAX_LOGGED` items (a log bounded in size)."""
    if len(items) < MAX_LOGGED:
        items.append(item)
