"""What the executor measures: cross-track error per flown leg, and the per-UAV summary."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skyswarm.missions.flight_plan.executor import Executor


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

    def add(self, cross: float, straight: bool) -> None:
        self.n += 1
        self.sum_sq += cross * cross
        self.max_abs = max(self.max_abs, abs(cross))
        self.straight = self.straight and straight
        if straight:
            self.n_line += 1
            self.sum_sq_line += cross * cross
            self.max_line = max(self.max_line, abs(cross))

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
    return {
        "state": ex.state,
        "emergency": ex.emergency or None,
        "waypoints_passed": ex.waypoints_passed,
        "stage_s": {k: round(v, 4) for k, v in ex.stage_s.items()},
        "legs": [r.as_dict() for r in ex.records if not math.isnan(r.end_s)],
    }
