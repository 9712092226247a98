"""The replay player: the live viewer's windows (3D with the panel, top view, subjective view),
with a time slider, play / pause and speed in place of the simulation controls.

The agent list shows each agent's role, control mode (from the run's timeline, core/timeline.py),
altitude, speed and alive state at the replay time; the HUD shows the mission's recorded lines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from skyswarm.gui.panel import PANEL_W, AgentRow, estimate_lines
from skyswarm.gui.replay import ReplaySource
from skyswarm.gui.scene import Frame
from skyswarm.gui.text import PAD_PX
from skyswarm.gui.trails import recorded_trail
from skyswarm.gui.views import (
    HELP_ACTION,
    RESET_ACTION,
    VIEW_ACTIONS,
    Action,
    ViewerBase,
    ViewOptions,
    selected_line,
)
from skyswarm.gui.windows import key

SLIDER_H = 16  # px
SLIDER_TRACK = (90, 98, 116, 255)
SLIDER_KNOB = (240, 200, 40, 255)
ACTIONS = (
    Action(key.SPACE, "Space", "Play", "toggle_pause", "play / pause"),
    Action(key.BRACKETLEFT, "[", "x1/2", "slower", "speed x 1/2"),
    Action(key.BRACKETRIGHT, "]", "x2", "faster", "speed x 2"),
    Action(key.LEFT, "Left", "-1 s", "back", "back 1 s"),
    Action(key.RIGHT, "Right", "+1 s", "forward", "forward 1 s"),
    Action(key.HOME, "Home", None, "rewind", "back to the start"),
    *VIEW_ACTIONS,
    HELP_ACTION,
    RESET_ACTION,
)


class ReplayApp(ViewerBase):
    """Host of the replay windows: playback clock, selection, slider."""

    actions = ACTIONS

    def __init__(
        self,
        source: ReplaySource,
        speed: float = 1.0,
        size: tuple[int, int] = (1280, 720),
        options: ViewOptions | None = None,
    ) -> None:
        self.source = source
        self.time_s = 0.0
        self.speed = speed
        self.paused = False
        super().__init__("skyswarm replay", size, options)

    def frame(self) -> Frame:
        return self.source.frame_at(self.time_s)

    def trail_points(self, frame: Frame) -> np.ndarray:
        """The recorded agents' trails (the live view's TRAIL_EVERY_S points); base stations,
        which do not move, get their position only."""
        src = self.source
        rec = recorded_trail(src.times, src.positions, frame.time_s, self.trail_s)
        fixed = np.repeat(src.station_positions[:, None], rec.shape[1], axis=1)
        return np.concatenate([rec, fixed], axis=0)

    def screenshot_dir(self) -> Path:
        return self.source.dir

    # -- playback -------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        if not self.paused:
            self.seek(self.time_s + dt * self.speed)
        self.animate_cameras(dt)

    def seek(self, time_s: float) -> None:
        self.time_s = float(np.clip(time_s, 0.0, self.source.duration_s))

    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def slower(self) -> None:
        self.speed /= 2

    def faster(self) -> None:
        self.speed *= 2

    def back(self) -> None:
        self.seek(self.time_s - 1.0)

    def forward(self) -> None:
        self.seek(self.time_s + 1.0)

    def rewind(self) -> None:
        self.seek(0.0)

    # -- panel ----------------------------------------------------------------------------
    def rows(self) -> list[AgentRow]:
        """One row per agent at the replay time, in frame order (base stations last)."""
        frame = self.frame()
        speed = np.linalg.norm(self.source.velocities_at(self.time_s), axis=1)
        modes = self.source.view_data(frame.time_s)[2]
        return [
            AgentRow(int(i), frame.roles[r], modes.get(str(i), "-"), float(p[2]), float(v), bool(a))
            for i, r, p, v, a in zip(
                frame.ids, frame.role_index, frame.positions, speed, frame.alive
            )
        ]

    def inspector_lines(self) -> list[str]:
        """The recorded part of the live inspector for the selected agent: id, role, leader,
        alive, mode and, with sensors on, its estimate vs truth and GPS error (the timeline's
        sample at or before the replay time)."""
        frame = self.frame()
        i = frame.index_of(self.selected)
        if i is None:
            return []
        leader = f"  {(frame.highlight or 'leader').upper()}" if frame.leaders[i] else ""
        mode = self.source.view_data(frame.time_s)[2].get(str(self.selected), "-")
        est = None if frame.estimates is None else frame.estimates[i]
        gps = None if frame.gps_fixes is None else frame.gps_fixes[i]
        return [
            f"agent {self.selected}  {frame.roles[int(frame.role_index[i])]}{leader}  "
            + ("alive" if frame.alive[i] else "dead"),
            f"mode {mode}",
            *estimate_lines(frame.positions[i], est, gps),
        ]

    def hud_lines(self) -> list[str]:
        frame = self.frame()
        return [
            "",  # room for the slider
            f"t = {frame.time_s:7.2f} / {self.source.duration_s:.2f} s",
            f"{'paused' if self.paused else 'playing'}   speed x{self.speed:g}",
            f"alive {int(frame.alive.sum())}/{len(frame.ids)}",
            *frame.hud,
            selected_line(frame, self.selected),
        ]

    def button_label(self, method: str, label: str) -> str:
        if method == "toggle_pause":
            return "Play" if self.paused else "Pause"
        return super().button_label(method, label)

    @property
    def slider_y(self) -> int:
        return self.panel.buttons_bottom + PAD_PX

    def _panel_input(self, kind: str, x: float, y: float, amount: float) -> None:
        if kind in ("click", "drag") and self.slider_y <= y <= self.slider_y + SLIDER_H:
            self.invalidate_panel()
            frac = (x - PAD_PX) / (PANEL_W - 2 * PAD_PX)
            self.seek(float(np.clip(frac, 0, 1)) * self.source.duration_s)
            return
        super()._panel_input(kind, x, y, amount)

    def panel_image(self, height: int) -> np.ndarray:
        img = super().panel_image(height).copy()
        x0, x1 = PAD_PX, PANEL_W - PAD_PX
        y0 = self.slider_y
        img[y0 + 6 : y0 + 10, x0:x1] = SLIDER_TRACK
        frac = self.time_s / self.source.duration_s if self.source.duration_s else 0.0
        kx = int(x0 + frac * (x1 - x0))
        img[y0 : y0 + SLIDER_H, max(x0, kx - 3) : kx + 3] = SLIDER_KNOB
        return img


def replay_window(
    results_dir: Path,
    speed: float = 1.0,
    size: tuple[int, int] = (1280, 720),
    options: ViewOptions | None = None,
) -> int:
    """Open the replay player on a results directory; returns 0 when its window is closed, 130
    on Ctrl-C."""
    from skyswarm.gui.windows import run_event_loop

    app = ReplayApp(ReplaySource(results_dir), speed, size, options)
    try:
        interrupted = run_event_loop(app.update)
    finally:
        app.shutdown()
    return 130 if interrupted else 0
