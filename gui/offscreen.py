"""Offscreen rendering on an EGL standalone context: images, PNG frames and MP4 video.

Works with no DISPLAY (Mesa llvmpipe on a server). `Capture` renders a running simulation from a
post-tick listener at a fixed simulated frame rate; it only reads the world, so a run with
`--video` writes the same trajectory as a run without.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import moderngl
import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.framing import SwarmFollower, default_camera, scene_extent, shown_points
from skyswarm.gui.renderer import Renderer
from skyswarm.gui.scene import Frame, LiveSource, Scenery

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator
    from skyswarm.core.world import World


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
        self._pixels = bytearray(size[0] * size[1] * 3)  # reused by every read()

    def render(
        self,
        frame: Frame,
        camera: Camera,
        selected: int | None = None,
        overlay: Callable[[Renderer, tuple[int, int]], None] | None = None,
    ) -> np.ndarray:
        """(height, width, 3) uint8 image, top row first (valid until the next render)."""
        self.fbo.use()
        self.renderer.render(frame, camera, (0, 0, *self.size), selected)
        if overlay is not None:
            overlay(self.renderer, self.size)
        return self.read()

    def read(self) -> np.ndarray:
        """The framebuffer as (height, width, 3) uint8, top row first: a view of a buffer the
        next read() overwrites (copy it to keep it)."""
        w, h = self.size
        self.fbo.read_into(self._pixels, components=3, alignment=1)
        return np.frombuffer(self._pixels, dtype=np.uint8).reshape(h, w, 3)[::-1]

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


VIDEO_CRF = 26  # x264 constant rate factor: 23 is its default, +6 halves the bitrate
VIDEO_PRESET = "veryfast"  # x264 speed/size trade-off: encoding must not dominate a run


class VideoWriter:
    """MP4 (H.264, yuv420p, CRF VIDEO_CRF, preset VIDEO_PRESET) through imageio-ffmpeg's
    bundled ffmpeg binary."""

    def __init__(self, path: Path, size: tuple[int, int], fps: float) -> None:
        import imageio_ffmpeg

        if size[0] % 2 or size[1] % 2:
            raise ValueError(f"video size must be even in both axes for yuv420p, got {size}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._gen = imageio_ffmpeg.write_frames(
            str(path), size, fps=fps, codec="libx264", pix_fmt_out="yuv420p",
            macro_block_size=1, quality=None, ffmpeg_log_level="error",
            output_params=["-crf", str(VIDEO_CRF), "-preset", VIDEO_PRESET],
        )  # fmt: skip
        self._gen.send(None)
        self.frames = 0

    def write(self, image: np.ndarray) -> None:
        self._gen.send(np.ascontiguousarray(image).tobytes())
        self.frames += 1

    def close(self) -> None:
        self._gen.close()


def draw_hud(renderer: Renderer, size: tuple[int, int], frame: Frame) -> None:
    """The video overlay: time, alive agents and the mission's HUD lines top left, the colour
    legend bottom left."""
    from skyswarm.gui.renderer import legend_entries
    from skyswarm.gui.text import legend_image, text_image

    alive = frame.alive & frame.mobile
    line = f"t = {frame.time_s:6.2f} s   alive {int(alive.sum())}/{int(frame.mobile.sum())}"
    renderer.draw_image(text_image([line, *frame.hud]), 8, 8, size)
    legend = legend_image(legend_entries(frame))
    renderer.draw_image(legend, 8, size[1] - legend.shape[0] - 8, size)


class FrameWriter:
    """Numbered PNG files `frame_00000.png`, ... in a directory."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.frames = 0

    def write(self, image: np.ndarray) -> None:
        from PIL import Image

        Image.fromarray(image).save(self.dir / f"frame_{self.frames:05d}.png", compress_level=1)
        self.frames += 1

    def close(self) -> None:
        pass


class Capture:
    """Renders a Simulator to video and/or PNG frames at `fps` frames per simulated second.

    Frame k (k = 1, 2, ...) shows the state after the first tick with time >= k / fps, so a run
    of D seconds gives floor(D * fps) frames. The camera starts framing the agents and the
    mission overlays; with `follow` it then keeps the alive agents in view as they fly
    (gui/framing.py `SwarmFollower`).
    """

    def __init__(
        self,
        sim: Simulator,
        video: Path | None = None,
        frames: Path | None = None,
        fps: float = 30.0,
        size: tuple[int, int] = (1280, 720),
        camera: str = "orbit",
        hud: bool = True,
        follow: bool = True,
    ) -> None:
        self.sim = sim
        self.source = LiveSource(sim)
        first = self.source.frame()
        shown = shown_points(first)
        center, half = scene_extent(shown)
        self.canvas = OffscreenCanvas(self.source.scenery, size, tuple(center), half)
        self.camera = default_camera(camera, shown)
        self.follower = SwarmFollower(self.camera, size[0] / size[1]) if follow else None
        self.fps = fps
        self.hud = hud
        self.sinks: list[Any] = []
        if video is not None:
            self.sinks.append(VideoWriter(Path(video), size, fps))
        if frames is not None:
            self.sinks.append(FrameWriter(Path(frames)))
        self.count = 0
        sim.add_post_tick(self.post_tick)

    def post_tick(self, world: World) -> None:
        if world.time_s + 1e-9 < (self.count + 1) / self.fps:
            return
        self.count += 1
        frame = self._last_frame = self.source.frame()
        if self.follower is not None:
            self.follower.update(frame, 1.0 / self.fps)
        image = self.canvas.render(frame, self.camera, overlay=self._hud if self.hud else None)
        for sink in self.sinks:
            sink.write(image)

    def _hud(self, renderer: Renderer, size: tuple[int, int]) -> None:
        draw_hud(renderer, size, self._last_frame)

    def close(self) -> None:
        self.sim.remove_post_tick(self.post_tick)
        for sink in self.sinks:
            sink.close()
        self.canvas.release()
