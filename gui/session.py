"""A viewed run: the simulator stepped in the GUI's process, paced to wall clock x speed.

Stepping goes through `Simulator.step()` exactly as `Simulator.run()` does (same end tick, same
mission-done check), so a viewed run and a headless run of the same seed record the same
trajectory whatever the frame rate, pauses or speed changes.

The frame rate does not depend on the simulation's speed: each GUI frame gives the simulation
a wall-time budget (`frame_budget`: what is left of a FRAME_TARGET_S frame once the previous
frame was drawn, at least MIN_STEP_WALL_S), steps whole ticks until it is spent, then the views
draw the latest state. A simulation slower than real time then runs as fast as the budget allows
(the HUD shows the real-time factor) while the view stays fluid. Stepping and drawing share one
thread, so GUI commands (kill, mission commands) always act between two ticks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from skyswarm.core.agent import Agent

if TYPE_CHECKING:
    from pathlib import Path

    from skyswarm.core.simulator import Simulator

SimAttach = Callable[["Simulator", "Path | None"], Callable[[], None]]
"""What a viewer attaches to each run it builds (the first and each Reset's), e.g. the MAVLink
vehicles of `skyswarm view --mavlink`: called with the new simulator and its results directory
(None: not recorded), it returns the function that detaches and reports it when that run ends."""

MAX_STEP_WALL_S = 0.05  # s of wall time spent stepping per GUI frame before the GUI catches up
FRAME_TARGET_S = 1 / 30  # s: the frame period the stepping budget aims to keep (30 fps)
MIN_STEP_WALL_S = 0.004  # s: the least stepping time per frame (at least one tick is stepped)
STOP_CAUSE = "stopped by operator"
SPEED_LIMITS = (1 / 64, 256.0)
KILL_CAUSE = "killed by operator (GUI)"


class SimSession:
    """Start / pause / step / speed / kill for a Simulator viewed in real time."""

    def __init__(
        self,
        sim: Simulator,
        speed: float | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.sim = sim
        self.clock = clock  # wall clock, s (a fake one in tests)
        scenario = sim.scenario
        self.speed = float(speed if speed is not None else 1.0)
        self.started = bool(scenario.mission.auto_start) if scenario is not None else True
        self.paused = False
        self.finished = False
        self.reason = ""
        self.end_tick = sim.world.ticks_for_until(sim.settings.duration_s)
        self._owed_s = 0.0  # simulated seconds the clock owes the run
        self._rtf_window: list[tuple[float, float]] = []  # (wall s, sim s) samples

    @property
    def running(self) -> bool:
        return self.started and not self.paused and not self.finished

    @property
    def state(self) -> str:
        if self.finished:
            return f"finished ({self.reason})"
        if not self.started:
            return "waiting for Start"
        return "paused" if self.paused else "running"

    def advance(self, wall_dt: float, budget_s: float = MAX_STEP_WALL_S) -> int:
        """Step the ticks owed after `wall_dt` wall seconds at `speed`; returns ticks stepped.

        If stepping takes longer than `budget_s` the rest of the debt is dropped: the run goes
        slower than asked (the HUD shows the real-time factor) but the window stays responsive.
        """
        if not self.running:
            return 0
        tick_s = self.sim.world.tick_s
        self._owed_s += wall_dt * self.speed
        due = math.floor(self._owed_s / tick_s + 1e-9)
        deadline = self.clock() + budget_s
        done = 0
        while done < due and not self.finished:
            self._step()
            done += 1
            if self.clock() > deadline:
                break
        self._owed_s = 0.0 if done < due else self._owed_s - done * tick_s
        self._sample_rtf()
        return done

    def _step(self) -> None:
        sim = self.sim
        sim.step()
        if sim.world.tick >= self.end_tick:
            self._finish("duration")
        elif sim.mission is not None and sim.mission.is_done():
            self._finish("mission done")

    def _finish(self, reason: str) -> None:
        self.finished, self.reason = True, reason
        self.sim.stop_reason = reason

    @staticmethod
    def frame_budget(draw_s: float, target_s: float = FRAME_TARGET_S) -> float:
        """Stepping budget (s) for a frame whose drawing and event handling took `draw_s`: the
        rest of a `target_s` frame, between MIN_STEP_WALL_S and MAX_STEP_WALL_S."""
        return min(MAX_STEP_WALL_S, max(MIN_STEP_WALL_S, target_s - draw_s))

    def _sample_rtf(self) -> None:
        now = self.clock()
        self._rtf_window.append((now, self.sim.time_s))
        while len(self._rtf_window) > 2 and now - self._rtf_window[0][0] > 2.0:
            self._rtf_window.pop(0)

    @property
    def real_time_factor(self) -> float:
        """Simulated seconds per wall second over the last ~2 s of running."""
        if len(self._rtf_window) < 2:
            return 0.0
        (w0, s0), (w1, s1) = self._rtf_window[0], self._rtf_window[-1]
        return (s1 - s0) / (w1 - w0) if w1 > w0 else 0.0

    # -- commands -------------------------------------------------------------------------
    def start_or_pause(self) -> None:
        """Start a run waiting for Start; otherwise toggle pause."""
        if not self.started:
            self.started = True
        else:
            self.paused = not self.paused
        self._owed_s = 0.0
        self._rtf_window.clear()

    def step_once(self) -> None:
        """One tick, while paused or not yet started."""
        if not self.finished:
            self._step()

    def stop(self) -> None:
        """End the run now (the summary says STOP_CAUSE); the views keep showing its last state."""
        if not self.finished:
            self._finish(STOP_CAUSE)

    def faster(self) -> None:
        self.speed = min(self.speed * 2, SPEED_LIMITS[1])

    def slower(self) -> None:
        self.speed = max(self.speed / 2, SPEED_LIMITS[0])

    def kill(self, agent_id: int | None) -> bool:
        """Kill an agent through the simulator (recorded like any death); False if not alive."""
        agent: Agent | None = self.sim.agents.get(agent_id) if agent_id is not None else None
        return agent is not None and self.sim.kill(agent, KILL_CAUSE)
