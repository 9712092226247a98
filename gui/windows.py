"""pyglet windows, each with its own camera and moderngl renderer, forwarding input to a host.

A host (the live viewer or the replay player) provides the frame to draw, the selection and the
actions; a `ViewWindow` only turns mouse input into camera moves and picks.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import pyglet

pyglet.options["shadow_window"] = False  # no hidden window: works with and without DISPLAY
import moderngl  # noqa: E402
import pyglet.window  # noqa: E402
from pyglet.window import key, mouse  # noqa: E402

from skyswarm.gui.camera import Camera, TopCamera  # noqa: E402
from skyswarm.gui.renderer import Renderer  # noqa: E402
from skyswarm.gui.scene import Frame, pick  # noqa: E402
from skyswarm.gui.trails import TrailRing  # noqa: E402

CLICK_SLOP_PX = 3  # a press and release closer than this is a click, not a drag


class Host(Protocol):
    """What a window needs from the application that owns it."""

    selected: int | None
    typing: bool  # a text field has the keyboard: Esc goes to it

    def frame(self) -> Frame: ...

    def prepare(self, window: ViewWindow) -> None:
        """Before `window` draws: move its camera for the frame drawn (gui/director.py)."""
        ...

    def camera_moved(self, window: ViewWindow) -> None:
        """The user dragged or zoomed `window`'s camera: it stays where they put it."""
        ...

    def trail_ring(self) -> TrailRing | None:
        """The trails to draw (gui/trails.py), or None."""
        ...

    def extra_lines(self) -> list[np.ndarray]:
        """More lines to draw (vertex rows position + RGBA, two per line): radio links."""
        ...

    def on_text(self, text: str) -> None: ...

    def renderer_for(self, window: ViewWindow) -> Renderer: ...

    def on_key(self, symbol: int, modifiers: int) -> bool: ...

    def select(self, agent_id: int | None) -> None: ...

    def window_closed(self, window: ViewWindow) -> None: ...


def gl_config() -> pyglet.gl.Config:
    return pyglet.gl.Config(
        major_version=3, minor_version=3, forward_compatible=True, double_buffer=True, depth_size=24
    )


class ViewWindow(pyglet.window.Window):
    """One view: a camera drawn in the window's scene area (left of `side_px`)."""

    def __init__(
        self,
        host: Host,
        camera: Camera,
        title: str,
        size: tuple[int, int],
        side_px: int = 0,
        overlay: Callable[[ViewWindow, Renderer], None] | None = None,
        side_input: Callable[[str, float, float, float], None] | None = None,
        covered: Callable[[ViewWindow], list[tuple[int, int, int, int]]] | None = None,
    ) -> None:
        super().__init__(
            width=size[0], height=size[1], caption=title, resizable=True, config=gl_config()
        )
        self.host = host
        self.camera = camera
        self.side_px = side_px  # width of a panel on the right, drawn by `overlay`
        self.overlay = overlay
        self.side_input = side_input  # ("click" | "scroll", x, y from the panel's top-left, amount)
        # the rects (GL pixels) `overlay` covers with opaque pixels: Renderer.render(covered=)
        self.covered = covered
        self.ctx = moderngl.create_context()
        self._press: tuple[int, int] | None = None
        self._closing = False

    # -- drawing --------------------------------------------------------------------------
    @property
    def fb_size(self) -> tuple[int, int]:
        return self.get_framebuffer_size()

    @property
    def scene_viewport(self) -> tuple[int, int, int, int]:
        w, h = self.fb_size
        return 0, 0, max(1, w - self.side_px), h

    def on_draw(self) -> None:
        self.switch_to()
        self.ctx.screen.use()
        self._draw()

    def _draw(self) -> None:
        """Draw the view into the bound framebuffer: the scene, then the overlay."""
        self.host.prepare(self)
        renderer = self.host.renderer_for(self)
        if isinstance(self.camera, TopCamera):
            self.camera.viewport_height = self.scene_viewport[3]
        # With a panel (opaque, drawn by `overlay` over the rest of the window), the whole
        # framebuffer is cleared at once (Renderer.render: llvmpipe's fast clear).
        renderer.render(
            self.host.frame(), self.camera, self.scene_viewport, self.host.selected,
            self.host.trail_ring(), extra=self.host.extra_lines(),
            clear_all=self.side_px > 0 and self.overlay is not None,
            covered=self.covered(self) if self.covered is not None else (),
        )  # fmt: skip
        if self.overlay is not None:
            self.overlay(self, renderer)

    def render_now(self) -> None:
        """Draw into the back buffer without flipping (tests: no event loop)."""
        self.on_draw()

    def screenshot(self) -> np.ndarray:
        """(height, width, 3) uint8, top row first: the view drawn now into an offscreen
        framebuffer of the window's size (reading the window's own framebuffer under pyglet
        leaves GL_INVALID_OPERATION pending, which pyglet raises at its next GL call)."""
        self.switch_to()
        w, h = self.fb_size
        fbo = self.ctx.framebuffer(
            color_attachments=[self.ctx.renderbuffer((w, h), 4)],
            depth_attachment=self.ctx.depth_renderbuffer((w, h)),
        )
        try:
            fbo.use()
            self._draw()
            raw = fbo.read(viewport=(0, 0, w, h), components=3, alignment=1)
        finally:
            self.ctx.screen.use()
            for part in (*fbo.color_attachments, fbo.depth_attachment, fbo):
                part.release()
        return np.frombuffer(raw, dtype=np.uint8).reshape(h, w, 3)[::-1].copy()

    # -- input ----------------------------------------------------------------------------
    def in_scene(self, x: float, y: float) -> bool:
        return x < self.scene_viewport[2]

    def on_key_press(self, symbol: int, modifiers: int) -> bool:
        if symbol == key.ESCAPE and not self.host.typing:
            self.request_close()
            return True
        return bool(self.host.on_key(symbol, modifiers))

    def on_text(self, text: str) -> None:
        """Typed characters (the panel's agent filter while it is being edited)."""
        self.host.on_text(text)

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> None:
        self._press = (x, y)
        self._side("click", x, y, 0.0)

    def _side(self, kind: str, x: float, y: float, amount: float) -> None:
        if self.side_input is not None and not self.in_scene(x, y):
            self.side_input(kind, x - self.scene_viewport[2], self.fb_size[1] - y, amount)

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, mods: int) -> None:
        if self._press is not None and self.in_scene(*self._press):
            pan = bool(buttons & (mouse.RIGHT | mouse.MIDDLE)) or bool(mods & key.MOD_SHIFT)
            self.camera.drag(dx, dy, pan=pan)
            self.host.camera_moved(self)
        else:
            self._side("drag", x, y, 0.0)

    def on_mouse_release(self, x: int, y: int, button: int, modifiers: int) -> None:
        press, self._press = self._press, None
        if press is None or button != mouse.LEFT:
            return
        if abs(x - press[0]) > CLICK_SLOP_PX or abs(y - press[1]) > CLICK_SLOP_PX:
            return
        if self.in_scene(x, y):
            self.host.select(self.pick(x, y))

    def pick(self, x: float, y: float) -> int | None:
        """Agent under window pixel (x, y) (pyglet: origin bottom-left), or None."""
        _, _, w, h = self.scene_viewport
        self.camera.aspect = w / h
        origin, direction = self.camera.ray(x, h - y, w, h)
        frame = self.host.frame()
        radii = self.host.renderer_for(self).agent_radii(frame)
        return pick(frame, origin, direction, np.maximum(radii, 0.15))

    def on_mouse_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> None:
        if self.in_scene(x, y):
            _, _, w, h = self.scene_viewport
            self.camera.zoom_at(scroll_y, x, h - y, w, h)
            self.host.camera_moved(self)
        self._side("scroll", x, y, scroll_y)

    def on_close(self) -> None:
        """The close button: the same path as Esc."""
        self.request_close()

    def request_close(self) -> None:
        """Esc or the close button: tell the host (closing the main window ends the app), then
        close. `close()` alone does not dispatch on_close, so both inputs route through here."""
        if self._closing:
            return
        self._closing = True
        self.host.window_closed(self)
        self.close()


def run_event_loop(update: Callable[[float], Any], fps: float = 60.0) -> bool:
    """Run pyglet's loop, calling `update(dt)` each frame, until every window is closed or
    SIGINT (Ctrl-C) arrives; returns True if it was interrupted (the caller closes the windows).

    The handler only asks the loop to exit: raising KeyboardInterrupt inside pyglet's event
    dispatch (a ctypes callback) would be swallowed and leave the viewer running.
    """
    interrupted = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupted
        interrupted = True
        pyglet.app.exit()

    previous = signal.signal(signal.SIGINT, on_sigint)
    pyglet.clock.schedule_interval(update, 1.0 / fps)
    try:
        pyglet.app.run(interval=1.0 / fps)
    finally:
        pyglet.clock.unschedule(update)
        signal.signal(signal.SIGINT, previous)
    return interrupted
