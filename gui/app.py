"""`skyswarm view`: the live viewer — main 3D window with the mission panel, top and subjective
views, keyboard shortcuts and a help overlay.

Every command is an `Action` (key, button, method): the keyboard, the panel buttons and the help
overlay are all generated from the one ACTIONS table. The windows, the panel and the selection are
shared with the replay player (gui/views.py `ViewerBase`).
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.gui.panel import AgentRow
from skyswarm.gui.scene import Frame, LiveSource
from skyswarm.gui.session import SimSession
from skyswarm.gui.views import (
    HELP_ACTION,
    RESET_ACTION,
    VIEW_ACTIONS,
    Action,
    ViewerBase,
    mode_label,
    selected_line,
)
from skyswarm.gui.windows import key, run_event_loop

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.joystick import JoystickHub

TRAIL_EVERY_S = 0.2  # s of simulated time between trail points
TRAIL_POINTS = 60

ACTIONS = (
    Action(key.SPACE, "Space", "Start", "start_or_pause", "start / pause / resume"),
    Action(key.N, "N", "Step", "step_once", "advance one tick"),
    Action(key.BRACKETLEFT, "[", "x1/2", "slower", "speed x 1/2"),
    Action(key.BRACKETRIGHT, "]", "x2", "faster", "speed x 2"),
    Action(key.K, "K", "Kill", "kill_selected", "kill the selected agent"),
    *VIEW_ACTIONS,
    Action(key.J, "J", "Joy", "toggle_joystick", "fly the selected agent by joystick / release"),
    HELP_ACTION,
    Action(key.L, "L", None, "toggle_trails", "show / hide trails"),
    RESET_ACTION,
)


class ViewerApp(ViewerBase):
    """The live viewer: a SimSession stepped by the GUI loop, shown in the shared views."""

    actions = ACTIONS

    def __init__(
        self, sim: Simulator, speed: float | None = None, size: tuple[int, int] = (1280, 720)
    ) -> None:
        self.session = SimSession(sim, speed)
        self.source = LiveSource(sim)
        self.show_trails = False
        self.joystick: JoystickHub | None = None  # created at the first J
        self._frame: Frame | None = None
        self._frame_key: tuple[int, int] = (-1, -1)
        self._trail: deque[np.ndarray] = deque(maxlen=TRAIL_POINTS)
        self._next_trail_s = 0.0
        super().__init__("skyswarm", size)

    # -- Host protocol --------------------------------------------------------------------
    def frame(self) -> Frame:
        sim = self.session.sim
        k = (sim.world.tick, len(sim.deaths))
        if self._frame is None or k != self._frame_key:
            self._frame, self._frame_key = self.source.frame(), k
        return self._frame

    def shutdown(self) -> None:
        if self.joystick is not None:
            self.joystick.close()
        super().shutdown()

    def trails(self) -> list[np.ndarray]:
        if not self.show_trails or not self._trail:
            return []
        hist = np.stack(list(self._trail), axis=1)  # (N, T, 3)
        return [hist[i] for i in range(hist.shape[0])]

    # -- loop -----------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        if self.joystick is not None:
            self.joystick.poll()
        self.session.advance(dt)
        sim = self.session.sim
        if self.show_trails and sim.time_s >= self._next_trail_s:
            pos = self.frame().positions
            if self._trail and self._trail[-1].shape != pos.shape:
                self._trail.clear()
            self._trail.append(pos)
            self._next_trail_s = sim.time_s + TRAIL_EVERY_S

    # -- actions --------------------------------------------------------------------------
    def start_or_pause(self) -> None:
        self.session.start_or_pause()

    def step_once(self) -> None:
        self.session.step_once()

    def slower(self) -> None:
        self.session.slower()

    def faster(self) -> None:
        self.session.faster()

    def kill_selected(self) -> None:
        self.session.kill(self.selected)

    def toggle_joystick(self) -> None:
        from skyswarm.gui.joystick import JoystickHub

        if self.joystick is None:
            self.joystick = JoystickHub(self.session.sim, keyboard_window=self.main)
        if self.selected is None:
            self.select_next()
        self.joystick.toggle(self.selected)

    def toggle_trails(self) -> None:
        self.show_trails = not self.show_trails
        self._trail.clear()
        self._next_trail_s = 0.0

    # -- panel ----------------------------------------------------------------------------
    def rows(self) -> list[AgentRow]:
        """One row per drawn agent, in frame order (base stations last)."""
        out = []
        for a in self.source.agents:
            p = np.asarray(a.position, dtype=float)
            v = np.asarray(getattr(a, "velocity", np.zeros(3)), dtype=float)
            speed = float(np.linalg.norm(v)) if a.alive else 0.0
            out.append(AgentRow(int(a.id), a.role, mode_label(a), float(p[2]), speed, a.alive))
        return out

    def hud_lines(self) -> list[str]:
        s, sim = self.session, self.session.sim
        alive = sum(a.alive for a in sim.agents.values())
        lines = [
            f"t = {sim.time_s:8.2f} s   {s.state}",
            f"speed x{s.speed:g}   real-time factor {s.real_time_factor:5.2f}",
            f"alive {alive}/{len(sim.agents)}   {comms_text(sim)}",
            *self.frame().hud,
            selected_line(self.frame(), self.selected),
        ]
        if self.joystick is not None:
            lines.append(self.joystick.status())
        return lines


LOST_FATES = ("over_bandwidth", "out_of_range", "lost_on_air", "receiver_dead", "queue_overflow")


def comms_text(sim: Simulator) -> str:
    """Messages delivered / lost, from the comms dispatcher's `comms.CHANNEL.FATE` totals."""
    disp = sim.dispatcher
    if disp is None or not hasattr(disp, "sample"):
        return "msgs: no comms"
    try:
        totals = disp.sample()
    except Exception:  # the HUD must not take the viewer down with a comms bug
        return "msgs: n/a"
    fate = {k: v for k, v in totals.items() if isinstance(v, int)}
    delivered = sum(v for k, v in fate.items() if k.endswith(".delivered"))
    lost = sum(v for k, v in fate.items() if k.rsplit(".", 1)[-1] in LOST_FATES)
    return f"msgs {delivered} ok / {lost} lost"


def view_scenario(
    scenario: ScenarioConfig,
    speed: float | None = None,
    size: tuple[int, int] = (1280, 720),
    results_dir: Path | None = None,
) -> int:
    """Open the viewer on a scenario and run until its main window is closed (Esc or the close
    button: returns 0) or Ctrl-C (returns 130); either way the summary is written."""
    from skyswarm.core.simulator import Simulator

    sim = Simulator.from_scenario(scenario, results_dir)
    app = ViewerApp(sim, speed, size)
    interrupted = False
    try:
        interrupted = run_event_loop(app.update)
    finally:
        app.shutdown()
        if not app.session.finished:
            sim.stop_reason = "interrupted" if interrupted else "window closed"
        sim.finish()
        sim.close()
    return 130 if interrupted else 0
