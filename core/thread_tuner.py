"""`[simulation] threads = "auto"`: the run measures whether numba's threads pay, and keeps
the faster.

Whether a second thread pays depends less on the swarm than on the machine at that moment
(docs/performance.md, Threads): on a quiet 2-core machine the threaded passes of a 10,000-UAV
fast run take 1.7x less wall time on two threads than on one; with one other CPU-bound job the
two threads are 0-6 % slower; with many jobs, anything. No fixed number is right on both, and
results never depend on it (core/backends `threaded`: the threaded passes are bit-identical),
so `Simulator.run` asks the clock:

- a probe flies four windows of `WINDOW_TICKS` ticks, A B B A (A the count in use, B the
  other: one thread and the process's thread budget), each starting on a multiple of
  `WINDOW_TICKS`; every tick of a window is timed, and the mean of its ticks without the
  `TRIMMED` slowest stands for it; the count whose two windows add up to less is kept; the
  A B B A order cancels a load that rises or falls steadily across the probe. The trim drops
  the ticks that also run a behaviour round, a beacon exchange or a 1 Hz task (a few in 80,
  mostly single-threaded code, and a 1 Hz task falls in one window of five: it would decide
  alone). It keeps a tail that many ticks have: beside another CPU-bound job, numba's second
  thread is often descheduled, and a quarter of the two-thread ticks then wait 3 ms for it
  while their median is still the faster one (docs/performance.md, Threads);
- then it holds that count for `FIRST_HOLD_TICKS`, doubled after each probe that confirms it
  (to `MAX_HOLD_TICKS`), back to the first hold after a probe that changes it: a machine
  whose load changes is re-measured within seconds, a steady one seldom.

Only `run()` tunes (stepping by hand runs on one thread: there is no loop to time), and only
with at least `core.backends.PARALLEL_MIN` live UAVs and a budget of two threads or more
(NUMBA_NUM_THREADS; a batch worker's share of the cores, `set_thread_budget`). Costs a compare
a tick, and a call a tick inside a window; a probe's wrong half is 2 windows in 4 at the slower
count, one probe per hold (at most 640 ticks in 1,920 at first, 320 in 25,920 once steady).

    tuner = ThreadTuner(budget=2, set_count=set_threads)
    tuner.resume(sim.world.tick, time.perf_counter())
    while ...:
        sim.step()
        if sim.world.tick >= tuner.next_tick:
            tuner.advance(sim.world.tick, time.perf_counter())
    tuner.finish(sim.world.tick)
    tuner.summary()  # {"setting": "auto", "ticks": {"1": 640, "2": 10560}, "probes": 3, ...}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

WINDOW_TICKS = 80  # 0.2 s at 400 Hz: two 10 Hz behaviour rounds, four 20 Hz samples
TRIMMED = 8  # a window's slowest ticks left out of its mean (behaviour rounds, a 1 Hz task)
FIRST_HOLD_TICKS = 1_600  # 4 s simulated between the first probes
MAX_HOLD_TICKS = 25_600  # 64 s simulated: a steady machine is probed about 1 % of the ticks


class ThreadTuner:
    """Chooses numba's thread count, 1 or `budget`, by the wall time of probe windows (module
    docstring). `set_count(n)` applies a count (core/backends `set_threads`)."""

    def __init__(self, budget: int, set_count: Callable[[int], Any]) -> None:
        if budget < 2:
            raise ValueError(f"a thread budget of {budget} leaves nothing to choose")
        self.counts = (1, budget)
        self._set_count = set_count
        self.count = 1  # in use; the first probe starts on the safe side
        self.hold_ticks = FIRST_HOLD_TICKS
        self.probes = 0  # probes decided
        self.changes = 0  # probes that changed the count
        self.ticks_on: dict[int, int] = {c: 0 for c in self.counts}
        self.next_tick = 0  # the tick at which `advance` wants to be called
        self._phase = "new"  # "lead-in" to a window's aligned start, "window", "hold"
        self._plan: list[int] = []  # the probe's counts still to fly, this window's first
        self._spent: dict[int, float] = {}  # the windows' trimmed mean tick, wall s, by count
        self._ticks_s: list[float] = []  # this window's ticks, wall s each
        self._window_end = 0
        self._counted = 0  # the tick up to which `ticks_on` holds the ticks flown
        self._mark_tick = 0  # start of the window being timed
        self._mark_s = 0.0
        set_count(self.count)

    def resume(self, tick: int, now_s: float) -> None:
        """(Re)start timing at `tick`: a run() begins, or begins again after the caller did
        something else between. A window goes on across the pause: its ticks are timed one by
        one, and the pause is no tick's time; a hold goes on to its end."""
        self._counted = tick
        self._set_count(self.count)  # another run may have set numba's count since
        if self._phase == "new":
            self._start_probe(tick, now_s)
        elif self._phase == "window":
            self._mark_tick, self._mark_s = tick, now_s

    def advance(self, tick: int, now_s: float) -> None:
        """Called at `tick` >= `next_tick`, with the wall clock: starts or closes a window, or
        ends a hold."""
        self.ticks_on[self.count] += tick - self._counted
        self._counted = tick
        if self._phase == "hold":
            self._start_probe(tick, now_s)
        elif self._phase == "lead-in":
            self._open_window(tick, now_s)
        else:  # a tick of the window flown
            self._ticks_s.append((now_s - self._mark_s) / (tick - self._mark_tick))
            self._mark_tick, self._mark_s = tick, now_s
            if tick < self._window_end:
                self.next_tick = tick + 1
                return
            done = self._plan.pop(0)
            self._spent[done] = self._spent.get(done, 0.0) + trimmed_mean(self._ticks_s)
            if self._plan:
                self._open_window(tick, now_s)
            else:
                self._decide(tick)

    def summary(self) -> dict[str, Any]:
        """What the run's summary reports under `threads` (a wall-clock field: it depends on
        the machine's load, never on the config; app/sweep_report.py WALL_CLOCK_KEYS)."""
        return {
            "setting": "auto",
            "ticks": {str(c): n for c, n in self.ticks_on.items()},
            "probes": self.probes,
            "changes": self.changes,
            "last": self.count,
        }

    # -- the probe ------------------------------------------------------------------------------
    def _other(self) -> int:
        return self.counts[1] if self.count == self.counts[0] else self.counts[0]

    def _start_probe(self, tick: int, now_s: float) -> None:
        a, b = self.count, self._other()
        self._plan = [a, b, b, a]
        self._spent = {}
        self._window_from(tick, now_s)

    def _window_from(self, tick: int, now_s: float) -> None:
        """The window at the plan's head opens now if `tick` is aligned, else the run flies on
        (the "lead-in") to the next multiple of WINDOW_TICKS and it opens there."""
        if tick % WINDOW_TICKS == 0:
            self._open_window(tick, now_s)
        else:
            self._phase = "lead-in"
            self.next_tick = (tick // WINDOW_TICKS + 1) * WINDOW_TICKS

    def _open_window(self, tick: int, now_s: float) -> None:
        self._phase = "window"
        self.count = self._plan[0]
        self._set_count(self.count)
        self._mark_tick, self._mark_s = tick, now_s
        self._ticks_s = []
        self._window_end = tick + WINDOW_TICKS
        self.next_tick = tick + 1

    def _decide(self, tick: int) -> None:
        a = self.count  # the probe ends on A, the count in use before it
        b = self._other()
        self.probes += 1
        if self._spent[b] < self._spent[a]:
            self.count = b
            self.changes += 1
            self.hold_ticks = FIRST_HOLD_TICKS
        else:
            self.hold_ticks = min(2 * self.hold_ticks, MAX_HOLD_TICKS)
        self._set_count(self.count)
        self._phase = "hold"
        self.next_tick = tick + self.hold_ticks

    def finish(self, tick: int) -> None:
        """Count the ticks flown since the last `advance` (a run() ends)."""
        self.ticks_on[self.count] += tick - self._counted
        self._counted = tick


def trimmed_mean(ticks_s: list[float]) -> float:
    """The mean of `ticks_s` without its `TRIMMED` largest (all of them if that leaves none)."""
    kept = sorted(ticks_s)[: len(ticks_s) - TRIMMED] or ticks_s
    return sum(kept) / len(kept)
