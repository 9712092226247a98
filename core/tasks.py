"""Time-triggered periodic tasks: period, phase, deadline accounting (the time-triggered
message-triggered object model, TMO, of Park, Kim et al.).

A task runs at ticks `phase + k * period` (both whole numbers of ticks). Its execution time is
measured on the wall clock; with a deadline, each run that takes longer counts as a miss.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskStats:
    """Execution statistics of one task, or aggregated over tasks sharing a name."""

    runs: int = 0
    total_s: float = 0.0  # wall-clock seconds spent in the task
    max_s: float = 0.0
    deadline_misses: int = 0

    @property
    def mean_s(self) -> float:
        return self.total_s / self.runs if self.runs else 0.0

    def merge(self, other: TaskStats) -> None:
        self.runs += other.runs
        self.total_s += other.total_s
        self.max_s = max(self.max_s, other.max_s)
        self.deadline_misses += other.deadline_misses

    def as_dict(self) -> dict[str, float | int]:
        return {
            "runs": self.runs,
            "mean_ms": self.mean_s * 1e3,
            "max_ms": self.max_s * 1e3,
            "deadline_misses": self.deadline_misses,
        }


@dataclass(eq=False)
class Task:
    fn: Callable[[], Any]
    period_ticks: int
    phase_ticks: int
    deadline_s: float | None
    name: str
    owner: Any = None  # the agent or mission the task belongs to
    next_tick: int = 0
    seq: int = 0  # registration order; breaks ties between tasks due on the same tick
    cancelled: bool = False
    paused: bool = False  # skipped and dropped from the schedule until resumed
    stats: TaskStats = field(default_factory=TaskStats)

    def cancel(self) -> None:
        self.cancelled = True


class TaskScheduler:
    """Keeps tasks in buckets by due tick; runs the due ones in registration order."""

    def __init__(self, ticks_for: Callable[[float, str], int]) -> None:
        self._ticks_for = ticks_for
        self._due: dict[int, list[Task]] = {}
        self._seq = 0
        self.tasks: list[Task] = []
        self.on_error: Callable[[Task, BaseException], None] | None = None

    def every(
        self,
        period_s: float,
        fn: Callable[[], Any],
        phase_s: float = 0.0,
        deadline_s: float | None = None,
        *,
        now_tick: int = 0,
        owner: Any = None,
        name: str | None = None,
    ) -> Task:
        """Run `fn()` every `period_s` seconds, first at the first tick >= now with that phase."""
        period = self._ticks_for(period_s, "task period")
        if period < 1:
            raise ValueError(f"task period {period_s!r} s must be at least one tick")
        phase = self._ticks_for(phase_s, "task phase")
        if deadline_s is not None and not deadline_s > 0:
            raise ValueError(f"task deadline {deadline_s!r} s must be positive")
        first = phase if now_tick <= phase else phase + -(-(now_tick - phase) // period) * period
        self._seq += 1
        task = Task(
            fn=fn,
            period_ticks=period,
            phase_ticks=phase,
            deadline_s=deadline_s,
            name=name or getattr(fn, "__qualname__", repr(fn)),
            owner=owner,
            next_tick=first,
            seq=self._seq,
        )
        self.tasks.append(task)
        self._due.setdefault(first, []).append(task)
        return task

    def run_due(self, tick: int) -> None:
        """Run the tasks due at `tick`, then those the run registered for this same tick (a
        task started inside another on its own grid runs now, not never), until none is left."""
        while bucket := self._due.pop(tick, None):
            self._run_bucket(tick, bucket)

    def _run_bucket(self, tick: int, bucket: list[Task]) -> None:
        if len(bucket) > 1:
            bucket.sort(key=lambda t: t.seq)
        clock = time.perf_counter
        for task in bucket:
            if task.cancelled or task.paused:
                continue
            t0 = clock()
            try:
                task.fn()
            except Exception as exc:  # a behaviour bug is a flight-software fault of its owner
                if self.on_error is None:
                    raise
                self.on_error(task, exc)
            dt = clock() - t0
            st = task.stats
            st.runs += 1
            st.total_s += dt
            if dt > st.max_s:
                st.max_s = dt
            if task.deadline_s is not None and dt > task.deadline_s:
                st.deadline_misses += 1
            if not task.cancelled:
                task.next_tick = tick + task.period_ticks
                self._due.setdefault(task.next_tick, []).append(task)

    def cancel_owned_by(self, owner: Any) -> None:
        for task in self.tasks:
            if task.owner is owner:
                task.cancel()

    def pause_owned_by(self, owner: Any) -> list[Task]:
        """Suspend `owner`'s live tasks (e.g. while a pilot flies the agent); returns them."""
        paused = [t for t in self.tasks if t.owner is owner and not (t.cancelled or t.paused)]
        for task in paused:
            task.paused = True
        return paused

    def resume_owned_by(self, owner: Any, now_tick: int) -> None:
        """Resume `owner`'s paused tasks at their first tick >= `now_tick` (the first tick not
        yet run) on their own period grid, so the schedule keeps its phase."""
        for task in self.tasks:
            if task.owner is not owner or not task.paused:
                continue
            task.paused = False
            if task.cancelled or task.next_tick >= now_tick:
                continue  # still queued in a bucket not yet run
            k = -(-(now_tick - task.next_tick) // task.period_ticks)
            task.next_tick += k * task.period_ticks
            self._due.setdefault(task.next_tick, []).append(task)

    def summary(self) -> dict[str, dict[str, float | int]]:
        """Statistics aggregated by task name (many agents share one behaviour task)."""
        agg: dict[str, TaskStats] = {}
        for task in self.tasks:
            agg.setdefault(task.name, TaskStats()).merge(task.stats)
        return {name: st.as_dict() for name, st in sorted(agg.items())}
