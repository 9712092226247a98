"""What the live viewer and the replay player share: the main window with the mission panel, the
top and subjective views, the selection, the help overlay and the `Action` table behind them.

Every command is an `Action` (key, button, method): a subclass lists its own actions followed by
VIEW_ACTIONS, and the keyboard, the panel buttons and the help overlay are generated from that one
table. A subclass sets `self.source` (anything with `.scenery`) before calling `__init__`, and
implements `frame()`, `rows()` and `hud_lines()`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from skyswarm.gui.camera import ChaseCamera, FirstPersonCamera  # noqa: I001
from skyswarm.gui.framing import default_camera, scene_extent, shown_points
from skyswarm.gui.panel import PANEL_W, AgentRow, Button, Panel
from skyswarm.gui.renderer import Renderer, legend_entries
from skyswarm.gui.scene import Frame
from skyswarm.gui.text import legend_image, text_image
from skyswarm.gui.windows import ViewWindow, key  # first: sets pyglet options


@dataclass(frozen=True)
class Action:
    key: int
    key_label: str
    button: str | None  # panel button label, None: keyboard only
    method: str  # method of the app called
    help: str


VIEW_ACTIONS = (
    Action(key.T, "T", "Top", "open_top_view", "open the 2D top view"),
    Action(key.V, "V", "Subj", "open_subjective_view", "open the subjective view"),
    Action(key.C, "C", "Chase", "toggle_subjective_mode", "subjective: chase / first person"),
    Action(key.TAB, "Tab", "Next", "select_next", "select the next alive agent"),
)
HELP_ACTION = Action(key.H, "H", "Help", "toggle_help", "show / hide this help")
RESET_ACTION = Action(key.R, "R", None, "reset_camera", "reset the 3D camera")
PANEL_REFRESH_S = 0.2  # s of wall time: the panel's text is redrawn at 5 Hz, or at once on input
MOUSE_HELP = (
    "left drag: orbit (top view: pan)   right / shift drag: pan",
    "wheel: zoom   click a drone or a list row: select   Esc: close window",
)


class ViewerBase:
    """Owns the windows and the selection; the windows call back into it (windows.Host)."""

    actions: tuple[Action, ...] = (*VIEW_ACTIONS, HELP_ACTION, RESET_ACTION)
    source: Any  # set by the subclass: has `.scenery`

    def __init__(self, name: str, size: tuple[int, int]) -> None:
        self.name = name  # window titles: "NAME - 3D view", "NAME - top view", ...
        self.selected: int | None = None
        self.show_help = False
        shown = shown_points(self.frame())
        self.center, self.half_extent = scene_extent(shown)
        self._renderers: dict[int, Renderer] = {}
        self.panel = Panel([Button(a.button, a.method) for a in self.actions if a.button])
        self.main = ViewWindow(
            self, default_camera("orbit", shown), f"{name} - 3D view", size,
            side_px=PANEL_W, overlay=self._draw_main_overlay, side_input=self._panel_input,
        )  # fmt: skip
        self.windows: list[ViewWindow] = [self.main]
        self.top: ViewWindow | None = None
        self.subjective: ViewWindow | None = None
        self._panel_cache: tuple[float, int, np.ndarray] | None = None  # (wall s, height, image)
        self._legend: tuple[list[Any], np.ndarray] | None = None  # (entries, image)

    # -- to implement ---------------------------------------------------------------------
    def frame(self) -> Frame:
        raise NotImplementedError

    def rows(self) -> list[AgentRow]:
        raise NotImplementedError

    def hud_lines(self) -> list[str]:
        raise NotImplementedError

    # -- Host protocol --------------------------------------------------------------------
    def renderer_for(self, window: ViewWindow) -> Renderer:
        r = self._renderers.get(id(window))
        if r is None:
            r = self._renderers[id(window)] = Renderer(
                window.ctx, self.source.scenery, self.center, self.half_extent
            )
        return r

    def on_key(self, symbol: int, modifiers: int) -> bool:
        self.invalidate_panel()
        for action in self.actions:
            if action.key == symbol:
                getattr(self, action.method)()
                return True
        return False

    def select(self, agent_id: int | None) -> None:
        self.invalidate_panel()
        self.selected = agent_id
        i = self.frame().index_of(agent_id)
        if i is not None:
            self.panel.ensure_visible(i)

    def window_closed(self, window: ViewWindow) -> None:
        self._renderers.pop(id(window), None)
        if window in self.windows:
            self.windows.remove(window)
        if window is self.top:
            self.top = None
        if window is self.subjective:
            self.subjective = None
        if window is self.main:
            self.shutdown()

    def shutdown(self) -> None:
        """Close every window this app opened; pyglet's loop ends with the last one."""
        for w in list(self.windows):
            w._closing = True  # noqa: SLF001 - closing on the host's behalf, no callback
            w.close()
        self.windows.clear()
        self.top = self.subjective = None

    # -- view actions ---------------------------------------------------------------------
    def toggle_help(self) -> None:
        self.show_help = not self.show_help

    def reset_camera(self) -> None:
        self.main.camera = default_camera("orbit", shown_points(self.frame()))

    def select_next(self) -> None:
        frame = self.frame()
        alive = frame.ids[frame.alive]
        if len(alive) == 0:
            return
        after = alive[alive > self.selected] if self.selected is not None else alive
        self.select(int(after[0] if len(after) else alive[0]))

    def open_top_view(self) -> ViewWindow:
        if self.top is None:
            cam = default_camera("top", shown_points(self.frame()))
            self.top = ViewWindow(self, cam, f"{self.name} - top view", (720, 720))
            self.windows.append(self.top)
        return self.top

    def open_subjective_view(self) -> ViewWindow:
        if self.selected is None:
            self.select_next()
        if self.subjective is None:
            cam = ChaseCamera(lambda: self.frame().pose_of(self.selected))
            title = f"{self.name} - subjective view"
            self.subjective = ViewWindow(self, cam, title, (640, 480))
            self.windows.append(self.subjective)
        return self.subjective

    def toggle_subjective_mode(self) -> None:
        if self.subjective is None:
            return
        pose = self.subjective.camera.pose  # type: ignore[attr-defined]
        chase = isinstance(self.subjective.camera, ChaseCamera)
        self.subjective.camera = FirstPersonCamera(pose) if chase else ChaseCamera(pose)

    # -- panel ----------------------------------------------------------------------------
    def invalidate_panel(self) -> None:
        """Redraw the panel at the next frame (after input), not at the next 5 Hz refresh."""
        self._panel_cache = None

    def _panel_input(self, kind: str, x: float, y: float, amount: float) -> None:
        self.invalidate_panel()
        if kind == "scroll":
            self.panel.scroll -= int(amount * 3)
            return
        if kind != "click":
            return
        hit = self.panel.hit(x, y, self.rows())
        if hit is None:
            return
        what, value = hit
        if what == "button":
            getattr(self, str(value))()
        else:
            self.select(int(value))  # type: ignore[arg-type]

    def panel_image(self, height: int) -> np.ndarray:
        """(height, PANEL_W, 4) uint8: buttons, HUD and the agent list."""
        return self.panel.render(height, self.hud_lines(), self.rows(), self.selected)

    def _draw_main_overlay(self, window: ViewWindow, renderer: Renderer) -> None:
        w, h = window.fb_size
        now = time.monotonic()
        cache = self._panel_cache
        if cache is None or cache[1] != h or now - cache[0] >= PANEL_REFRESH_S:
            # Text rendering and the texture upload cost more than the 3D scene under llvmpipe:
            # the same image object is not uploaded again (Renderer.draw_image).
            cache = self._panel_cache = (now, h, self.panel_image(h))
        renderer.draw_image(cache[2], w - PANEL_W, 0, (w, h))
        legend = legend_entries(self.frame())
        if self._legend is None or self._legend[0] != legend:
            self._legend = (legend, legend_image(legend))
        renderer.draw_image(self._legend[1], 8, h - self._legend[1].shape[0] - 8, (w, h))
        if self.show_help:
            lines = [f"{a.key_label:>6}   {a.help}" for a in self.actions] + ["", *MOUSE_HELP]
            renderer.draw_image(text_image(lines), 20, 20, (w, h))


def mode_label(agent: Any) -> str:
    """The control mode's name of an agent (a mode object's `name`, not its repr); "-" if the
    agent has no mode (base stations, drop-test bodies)."""
    mode = getattr(agent, "mode", None)
    if mode is None or mode == "":
        return "-"
    return str(getattr(mode, "name", mode))


def selected_line(frame: Frame, selected: int | None) -> str:
    """HUD line of the selected agent's position, m."""
    i = frame.index_of(selected)
    if i is None:
        return "selected: none (click a drone or a row)"
    x, y, z = frame.positions[i]
    return f"selected {selected}: ({x:.1f}, {y:.1f}, {z:.1f}) m"
