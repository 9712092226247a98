"""Offscreen rendering on an EGL standalone context: images, PNG frames and MP4 video.

Works with no DISPLAY (Mesa llvmpipe on a server). gui/capture.py renders a running simulation
with it (`run --video`), gui/replay.py a recorded one (`replay --video`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import moderngl
import numpy as np

from skyswarm.gui import ground
from skyswarm.gui.camera import Camera
from skyswarm.gui.director import inset_camera
from skyswarm.gui.framing import default_camera, scene_extent
from skyswarm.gui.layout import Layout, gl_rect
from skyswarm.gui.renderer import Renderer
from skyswarm.gui.scene import Frame, Scenery
from skyswarm.gui.video import FrameWriter, VideoWriter, draw_hud

__all__ = [
    "FrameWriter", "OffscreenCanvas", "VideoWriter", "default_camera", "draw_hud",
    "scene_extent", "standalone_context",
]  # fmt: skip


def standalone_context() -> moderngl.Context:
    """An OpenGL 3.3+ context with no window: EGL first (headless), then the platform default."""
    try:
        return moderngl.create_standalone_context(require=330, backend="egl")
    except Exception:  # no libEGL: try GLX/WGL/CGL, which needs a display
        return moderngl.create_standalone_context(require=330)


class OffscreenCanvas:
    """A renderer drawing into an RGBA framebuffer of `size` (width, height) pixels."""

    def __init__(
        self,
        scenery: Scenery,
        size: tuple[int, int] = (1280, 720),
        center: tuple[float, ...] = (0.0, 0.0),
        half_extent_m: float = 50.0,
        agent_scale: float = 1.0,
        ctx: moderngl.Context | None = None,
    ) -> None:
        self._own_ctx = ctx is None
        self.ctx = ctx or standalone_context()
        self.size = size
        self.fbo = self.ctx.framebuffer(
            color_attachments=[self.ctx.renderbuffer(size, 4)],
            depth_attachment=self.ctx.depth_renderbuffer(size),
        )
        self.renderer = Renderer(self.ctx, scenery, center, half_extent_m, agent_scale)
        ground.prepare()  # the kernel that paints the ground of every read (`_ground`)
        self._pixels = np.empty((size[1], size[0], 3), np.uint8)  # reused by every read()
        self._rgba: np.ndarray | None = None  # (H, W) uint32, made by the first read

    def render(
        self,
        frame: Frame,
        camera: Camera,
        selected: int | None = None,
        overlay: Callable[[Renderer, tuple[int, int]], None] | None = None,
    ) -> np.ndarray:
        """(height, width, 3) uint8 image, top row first (valid until the next render)."""
        self.draw(frame, camera, selected, overlay)
        return self.read()

    def draw(
        self,
        frame: Frame,
        camera: Camera,
        selected: int | None = None,
        overlay: Callable[[Renderer, tuple[int, int]], None] | None = None,
    ) -> None:
        """Draw into the framebuffer, to be read with read() or read_rgba_into()."""
        self.fbo.use()
        self.renderer.render(frame, camera, (0, 0, *self.size), selected, ground_later=True)
        if overlay is not None:
            overlay(self.renderer, self.size)

    def compose(
        self,
        frame: Frame,
        camera: Camera,
        hud: bool = True,
        inset: bool = True,
        selected: int | None = None,
        second: Camera | None = None,
        layout: str = "single",
        extra: Sequence[np.ndarray] = (),
    ) -> Layout:
        """Draw the video's picture: the scene, the inset map of the whole area (top right)
        and the HUD and legend (`draw_hud`), as gui/layout.py places them; with `layout` "pip"
        or "side" also the `second` camera's view where gui/multiview.py puts it; `extra` lines
        (position + RGBA rows: proximity rings) in every view. Returns the main view's layout
        (its rects hide the scene: gui/picking.py)."""
        from skyswarm.gui.multiview import PIP_MARKER_PX, divider, main_rect, second_rect

        rect = second_rect(layout, self.size) if second is not None else None
        mx, my, mw, mh = main_rect(layout, self.size) if rect is not None else (0, 0, *self.size)
        pip = rect if layout == "pip" else None
        view = Layout.of(frame, (mw, mh), hud, inset, pip=pip)
        self.fbo.use()
        viewport = (mx, self.size[1] - my - mh, mw, mh)
        covered = [gl_rect(view.inset, self.size[1])] if view.inset is not None else []
        self.renderer.render(
            frame, camera, viewport, selected, extra=extra, covered=covered, ground_later=True
        )
        if rect is not None and second is not None:
            if layout == "pip":
                self.renderer.render_inset(
                    frame, second, rect, self.size, PIP_MARKER_PX, extra, ground_later=True
                )  # fmt: skip
            else:
                self.renderer.render_view(
                    frame, second, rect, self.size, extra=extra, ground_later=True
                )  # fmt: skip
                self.renderer.draw_image(divider(self.size[1]), mw, 0, self.size)
        if view.inset is not None:
            self.renderer.render_inset(
                frame, inset_camera(frame), view.inset, self.size, ground_later=True
            )  # fmt: skip
        if hud:
            draw_hud(self.renderer, self.size, frame)
        return view

    def read_rgba_into(self, buffer: bytearray | memoryview) -> None:
        """The picture's RGBA bytes as OpenGL stores them, bottom row first, into `buffer`
        (width * height * 4 bytes), the ground painted in (`_ground`), for
        VideoWriter(pix_fmt="rgba"), whose write_into hands over its next free buffer."""
        w, h = self.size
        self.fbo.read_into(buffer, components=4, alignment=1)
        self._ground(np.frombuffer(buffer, dtype=np.uint32).reshape(h, w))

    def read_yuv420p_into(self, buffer: bytearray | memoryview) -> None:
        """The picture as planar yuv420p, BT.709 limited range, top row first, into
        `buffer` (width * height * 3 / 2 bytes), for VideoWriter(pix_fmt="yuv420p"): the
        RGBA bytes read as they are stored, the ground painted in, converted by gui/yuv.py."""
        from skyswarm.gui.yuv import rgba_to_yuv420p, yuv420p_planes

        rgba = self._read_rgba()
        rgba_to_yuv420p(rgba, *yuv420p_planes(buffer, self.size))

    def read(self) -> np.ndarray:
        """The picture as (height, width, 3) uint8, top row first: a buffer the next read()
        overwrites (copy it to keep it)."""
        w, h = self.size
        rgba = self._read_rgba().view(np.uint8).reshape(h, w, 4)
        np.copyto(self._pixels, rgba[::-1, :, :3])
        return self._pixels

    def _read_rgba(self) -> np.ndarray:
        """The framebuffer read into the canvas's (H, W) uint32 buffer (bottom row first),
        the ground painted in."""
        w, h = self.size
        if self._rgba is None:
            self._rgba = np.empty((h, w), dtype=np.uint32)
        self.fbo.read_into(self._rgba, components=4, alignment=1)
        self._ground(self._rgba)
        return self._rgba

    def _ground(self, rgba: np.ndarray) -> None:
        """Paint the last drawing's ground (the renderer's `ground_views`, gui/ground.py)
        under the pixels of `rgba`, as read back."""
        from skyswarm.gui.ground import paint

        for view in self.renderer.ground_views:
            paint(rgba, view)

    def release(self) -> None:
        """Free the framebuffer, and the context if this canvas made it (an EGL context left
        current would stop a later pyglet window's GLX context from being detected)."""
        self.fbo.release()
        if self._own_ctx:
            self.ctx.release()
            _egl_release_thread()


def _egl_release_thread() -> None:
    """Unbind EGL from this thread (glcontext's release leaves its context current)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("EGL")
    if name:
        try:
            ctypes.CDLL(name).eglReleaseThread()
        except (OSError, AttributeError):
            pass
