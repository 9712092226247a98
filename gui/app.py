"""`skyswarm view`: the live viewer — main 3D window with the mission panel, top and subjective
views, keyboard shortcuts and a help overlay.

Every command is an `Action` (key, button, method): the keyboard, the panel buttons and the help
overlay are all generated from the one ACTIONS table.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gui.camera import ChaseCamera, FirstPersonCamera  # noqa: I001
from gui.offscreen import default_camera, scene_extent
from gui.panel import PANEL_W, AgentRow, Button, Panel
from gui.renderer import Renderer
from gui.scene import Frame, LiveSource
from gui.session import SimSession
from gui.text import text_image
from gui.windows import ViewWindow, key, run_event_loop  # first: sets pyglet options

if TYPE_CHECKING:
    from core.config import ScenarioConfig
    from core.simulator import Simulator
    from gui.joystick import JoystickHub

TRAIL_EVERY_S = 0.2  # s of simulated time between trail points
TRAIL_POINTS = 60


@dataclass(frozen=True)
class Action:
    key: int
    key_label: str
    button: str | None  # panel button label, None: keyboard only
    method: str  # ViewerApp method called
    help: str


ACTIONS = (
    Action(key.SPACE, "Space", "Start", "start_or_pause", "start / pause / resume"),
    Action(key.N, "N", "Step", "step_once", "advance one tick"),
    Action(key.BRACKETLEFT, "[", "x1/2", "slower", "speed x 1/2"),
    Action(key.BRACKETRIGHT, "]", "x2", "faster", "speed x 2"),
    Action(key.K, "K", "Kill", "kill_selected", "kill the selected agent"),
    Action(key.T, "T", "Top", "open_top_view", "open the 2D top view"),
    Action(key.V, "V", "Subj", "open_subjective_view", "open the subjective view"),
    Action(key.C, "C", "Chase", "toggle_subjective_mode", "subjective: chase / first person"),
    Action(key.TAB, "Tab", "Next", "select_next", "select the next alive agent"),
    Action(key.J, "J", "Joy", "toggle_joystick", "fly the selected agent by joystick / release"),
    Action(key.H, "H", "Help", "toggle_help", "show / hide this help"),
    Action(key.L, "L", None, "toggle_trails", "show / hide trails"),
    Action(key.R, "R", None, "reset_camera", "reset the 3D camera"),
)
MOUSE_HELP = (
    "left drag: orbit (top view: pan)   right / shift drag: pan",
    "wheel: zoom   click a drone or a list row: select   Esc: close window",
)


class ViewerApp:
    """Owns the session, the windows and the selection; windows call back into it."""

    def __init__(
        self, sim: Simulator, speed: float | None = None, size: tuple[int, int] = (1280, 720)
    ) -> None:
        self.session = SimSession(sim, speed)
        self.source = LiveSource(sim)
        self.selected: int | None = None
        self.show_help = False
        self.show_trails = False
        self.joystick: JoystickHub | None = None  # created at the first J
        self._frame: Frame | None = None
        self._frame_key: tuple[int, int] = (-1, -1)
        self._trail: deque[np.ndarray] = deque(maxlen=TRAIL_POINTS)
        self._next_trail_s = 0.0
        first = self.frame()
        self.center, self.half_extent = scene_extent(first.positions)
        self._renderers: dict[int, Renderer] = {}
        self.panel = Panel([Button(a.button, a.method) for a in ACTIONS if a.button])
        self.main = ViewWindow(
            self, default_camera("orbit", first.positions), "skyswarm - 3D view", size,
            side_px=PANEL_W, overlay=self._draw_main_overlay, side_input=self._panel_input,
        )  # fmt: skip
        self.windows: list[ViewWindow] = [self.main]
        self.top: ViewWindow | None = None
        self.subjective: ViewWindow | None = None

    # -- Host protocol --------------------------------------------------------------------
    def frame(self) -> Frame:
        sim = self.session.sim
        k = (sim.world.tick, len(sim.deaths))
        if self._frame is None or k != self._frame_key:
            self._frame, self._frame_key = self.source.frame(), k
        return self._frame

    def renderer_for(self, window: ViewWindow) -> Renderer:
        r = self._renderers.get(id(window))
        if r is None:
            sc = self.source.scenery
            r = self._renderers[id(window)] = Renderer(
                window.ctx, sc, self.center, self.half_extent
            )
        return r

    def on_key(self, symbol: int, modifiers: int) -> bool:
        for action in ACTIONS:
            if action.key == symbol:
                getattr(self, action.method)()
                return True
        return False

    def select(self, agent_id: int | None) -> None:
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
            if self.joystick is not None:
                self.joystick.close()
            for w in list(self.windows):
                w.close()

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
        from gui.joystick import JoystickHub

        if self.joystick is None:
            self.joystick = JoystickHub(self.session.sim, keyboard_window=self.main)
        if self.selected is None:
            self.select_next()
        self.joystick.toggle(self.selected)

    def toggle_help(self) -> None:
        self.show_help = not self.show_help

    def toggle_trails(self) -> None:
        self.show_trails = not self.show_trails
        self._trail.clear()
        self._next_trail_s = 0.0

    def reset_camera(self) -> None:
        self.main.camera = default_camera("orbit", self.frame().positions)

    def select_next(self) -> None:
        frame = self.frame()
        alive = frame.ids[frame.alive]
        if len(alive) == 0:
            return
        after = alive[alive > self.selected] if self.selected is not None else alive
        self.select(int(after[0] if len(after) else alive[0]))

    def open_top_view(self) -> ViewWindow:
        if self.top is None:
            cam = default_camera("top", self.frame().positions)
            self.top = ViewWindow(self, cam, "skyswarm - top view", (720, 720))
            self.windows.append(self.top)
        return self.top

    def open_subjective_view(self) -> ViewWindow:
        if self.selected is None:
            self.select_next()
        if self.subjective is None:
            cam = ChaseCamera(lambda: self.frame().pose_of(self.selected))
            self.subjective = ViewWindow(self, cam, "skyswarm - subjective view", (640, 480))
            self.windows.append(self.subjective)
        return self.subjective

    def toggle_subjective_mode(self) -> None:
        if self.subjective is None:
            return
        pose = self.subjective.camera.pose  # type: ignore[attr-defined]
        chase = isinstance(self.subjective.camera, ChaseCamera)
        self.subjective.camera = FirstPersonCamera(pose) if chase else ChaseCamera(pose)

    # -- panel ----------------------------------------------------------------------------
    def rows(self) -> list[AgentRow]:
        out = []
        for a in self.source.agents:
            p, v = np.asarray(a.position), np.asarray(a.velocity)
            mode = getattr(a, "mode", "")
            out.append(
                AgentRow(
                    int(a.id),
                    a.role,
                    str(getattr(mode, "name", mode)),
                    float(p[2]),
                    float(np.linalg.norm(v)) if a.alive else 0.0,
                    a.alive,
                )  # fmt: skip
            )
        return out

    def hud_lines(self) -> list[str]:
        s, sim = self.session, self.session.sim
        alive = sum(a.alive for a in sim.agents.values())
        lines = [
            f"t = {sim.time_s:8.2f} s   {s.state}",
            f"speed x{s.speed:g}   real-time factor {s.real_time_factor:5.2f}",
            f"alive {alive}/{len(sim.agents)}   {comms_text(sim)}",
        ]
        frame = self.frame()
        i = frame.index_of(self.selected)
        if i is not None:
            x, y, z = frame.positions[i]
            lines.append(f"selected {self.selected}: ({x:.1f}, {y:.1f}, {z:.1f}) m")
        else:
            lines.append("selected: none (click a drone or a row)")
        if self.joystick is not None:
            lines.append(self.joystick.status())
        return lines

    def _panel_input(self, kind: str, x: float, y: float, amount: float) -> None:
        if kind == "scroll":
            self.panel.scroll -= int(amount * 3)
            return
        hit = self.panel.hit(x, y, self.rows())
        if hit is None:
            return
        what, value = hit
        if what == "button":
            getattr(self, str(value))()
        else:
            self.select(int(value))  # type: ignore[arg-type]

    def _draw_main_overlay(self, window: ViewWindow, renderer: Renderer) -> None:
        w, h = window.fb_size
        img = self.panel.render(h, self.hud_lines(), self.rows(), self.selected)
        renderer.draw_image(img, w - PANEL_W, 0, (w, h))
        if self.show_help:
            lines = [f"{a.key_label:>6}   {a.help}" for a in ACTIONS] + ["", *MOUSE_HELP]
            help_img = text_image(lines)
            renderer.draw_image(help_img, 20, 20, (w, h))


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
    """Open the viewer on a scenario and run until its main window is closed."""
    from core.simulator import Simulator

    sim = Simulator.from_scenario(scenario, results_dir)
    app = ViewerApp(sim, speed, size)
    try:
        run_event_loop(app.update)
    finally:
        sim.finish()
        sim.close()
    return 0
