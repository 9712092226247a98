"""The replay player: a 3D window with a side panel holding a time slider, play/pause, speed."""

from __future__ import annotations

import numpy as np

from gui.offscreen import default_camera, scene_extent  # noqa: I001
from gui.panel import PANEL_W, Button, Panel
from gui.renderer import Renderer
from gui.replay import ReplaySource
from gui.scene import Frame
from gui.text import PAD_PX
from gui.windows import ViewWindow, key  # first: sets pyglet options

SLIDER_H = 16  # px
BUTTONS = (
    Button("Play", "toggle_pause"),
    Button("x1/2", "slower"),
    Button("x2", "faster"),
    Button("-1 s", "back"),
    Button("+1 s", "forward"),
)
KEYS = {
    key.SPACE: "toggle_pause",
    key.BRACKETLEFT: "slower",
    key.BRACKETRIGHT: "faster",
    key.LEFT: "back",
    key.RIGHT: "forward",
    key.HOME: "rewind",
}


class ReplayApp:
    """Host of the replay window: playback clock, selection, slider."""

    def __init__(
        self, source: ReplaySource, speed: float = 1.0, size: tuple[int, int] = (1280, 720)
    ) -> None:
        self.source = source
        self.time_s = 0.0
        self.speed = speed
        self.paused = False
        self.selected: int | None = None
        first = source.frame_at(0.0)
        self.center, self.half_extent = scene_extent(first.positions)
        self.panel = Panel(BUTTONS)
        self._renderer: Renderer | None = None
        self.main = ViewWindow(
            self, default_camera("orbit", first.positions), "skyswarm - replay", size,
            side_px=PANEL_W, overlay=self._draw_panel, side_input=self._panel_input,
        )  # fmt: skip
        self.windows = [self.main]

    # -- Host protocol --------------------------------------------------------------------
    def frame(self) -> Frame:
        return self.source.frame_at(self.time_s)

    def renderer_for(self, window: ViewWindow) -> Renderer:
        if self._renderer is None:
            sc = self.source.scenery
            self._renderer = Renderer(window.ctx, sc, self.center, self.half_extent)
        return self._renderer

    def on_key(self, symbol: int, modifiers: int) -> bool:
        method = KEYS.get(symbol)
        if method is not None:
            getattr(self, method)()
        return method is not None

    def select(self, agent_id: int | None) -> None:
        self.selected = agent_id

    def window_closed(self, window: ViewWindow) -> None:
        self.windows.clear()

    # -- playback -------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        if not self.paused:
            self.seek(self.time_s + dt * self.speed)

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
    @property
    def slider_y(self) -> int:
        return self.panel.buttons_bottom + PAD_PX

    def _panel_input(self, kind: str, x: float, y: float, amount: float) -> None:
        if kind in ("click", "drag") and self.slider_y <= y <= self.slider_y + SLIDER_H:
            frac = (x - PAD_PX) / (PANEL_W - 2 * PAD_PX)
            self.seek(float(np.clip(frac, 0, 1)) * self.source.duration_s)
            return
        hit = self.panel.hit(x, y, []) if kind == "click" else None
        if hit is not None and hit[0] == "button":
            getattr(self, str(hit[1]))()

    def _draw_panel(self, window: ViewWindow, renderer: Renderer) -> None:
        w, h = window.fb_size
        frame = self.frame()
        hud = [
            "",  # room for the slider
            f"t = {frame.time_s:7.2f} / {self.source.duration_s:.2f} s",
            f"{'paused' if self.paused else 'playing'}   speed x{self.speed:g}",
            f"alive {int(frame.alive.sum())}/{len(frame.ids)}",
            "Space play/pause  [ ] speed  <- -> 1 s  Home",
        ]
        img = self.panel.render(h, hud, [], self.selected).copy()
        x0, x1 = PAD_PX, PANEL_W - PAD_PX
        y0 = self.slider_y
        img[y0 + 6 : y0 + 10, x0:x1] = (90, 98, 116, 255)
        frac = self.time_s / self.source.duration_s if self.source.duration_s else 0.0
        kx = int(x0 + frac * (x1 - x0))
        img[y0 : y0 + SLIDER_H, max(x0, kx - 3) : kx + 3] = (240, 200, 40, 255)
        renderer.draw_image(img, w - PANEL_W, 0, (w, h))
