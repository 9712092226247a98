"""Offscreen rendering on an EGL standalone context: images, PNG frames and MP4 video.

Works with no DISPLAY (Mesa llvmpipe on a server). `Capture` renders a running simulation from a
post-tick listener at a fixed simulated frame rate; it only reads the world, so a run with
`--video` writes the same trajectory as a run without.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import moderngl
import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.framing import SwarmFollower, default_camera, scene_extent, shown_points
from skyswarm.gui.renderer import Renderer
from skyswarm.gui.scene import Frame, LiveSource, Scenery
from skyswarm.gui.video import ENCODER, Encoder, FrameWriter, VideoWriter, draw_hud

__all__ = [
    "Capture", "FrameWriter", "OffscreenCanvas", "VideoWriter", "default_camera", "draw_hud",
    "scene_extent", "standalone_context",
]  # fmt: skip

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
        self.renderer.render(frame, camera, (0, 0, *self.size), selected)
        if overlay is not None:
            overlay(self.renderer, self.size)

    def read_rgba_into(self, buffer: bytearray) -> None:
        """The framebuffer's RGBA bytes as OpenGL stores them, bottom row first, into `buffer`
        (width * height * 4 bytes): a plain copy (reading RGB makes the driver repack every
        pixel, and flipping the rows would be a second copy), for VideoWriter(pix_fmt="rgba"),
        whose write_into hands over its next free buffer."""
        self.fbo.read_into(buffer, components=4, alignment=1)

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


class Capture:
    """Renders a Simulator to video and/or PNG frames at `fps` frames per simulated second.

    Frame k (k = 1, 2, ...) shows the state after the first tick with time >= k / fps, so a run
    of D seconds gives floor(D * fps) frames. The camera starts framing the agents and the
    mission overlays; with `follow` it then keeps the alive agents in view as they fly
    (gui/framing.py `SwarmFollower`).

    With `process` the rendering and encoding run in a child process (`RenderWorker`): the
    simulation only snapshots the frame and the camera (a few kB; overlays only when they
    change) and goes on stepping while the previous frame is drawn and encoded, so on two cores
    the run costs about the larger of the two instead of their sum.
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
        process: bool = False,
        encoder: Encoder = ENCODER,
    ) -> None:
        self.sim = sim
        self.source = LiveSource(sim)
        first = self.source.frame()
        shown = shown_points(first)
        center, half = scene_extent(shown)
        self.camera = default_camera(camera, shown)
        self.follower = SwarmFollower(self.camera, size[0] / size[1]) if follow else None
        self.fps = fps
        spec = RenderSpec(
            self.source.scenery, size, tuple(center), half, video, frames, fps, hud, encoder
        )
        self.worker: RenderWorker | LocalRender = (
            RenderWorker(spec) if process else LocalRender(spec)
        )
        self.count = 0
        self._ended = False
        sim.add_post_tick(self.post_tick)

    def post_tick(self, world: World) -> None:
        if world.time_s + 1e-9 < (self.count + 1) / self.fps:
            return
        self.count += 1
        frame = self.source.frame()
        if self.follower is not None:
            self.follower.update(frame, 1.0 / self.fps)
        self.worker.submit(frame, self.camera)

    def end(self) -> None:
        """No more frames: a render process goes on drawing what is queued (while the caller
        writes its results) until close()."""
        if not self._ended:
            self._ended = True
            self.sim.remove_post_tick(self.post_tick)
            self.worker.end()

    def close(self) -> None:
        """end(), then wait until every frame is drawn and the files are complete."""
        self.end()
        self.worker.close()


@dataclass(frozen=True)
class RenderSpec:
    """What a renderer of a capture needs: scenery, size, grid placement and the sinks."""

    scenery: Scenery
    size: tuple[int, int]
    center: tuple[float, ...]
    half_extent_m: float
    video: Path | None
    frames: Path | None
    fps: float
    hud: bool
    encoder: Encoder = ENCODER


class LocalRender:
    """Renders and encodes each submitted frame at once, in this process. The video gets the
    framebuffer's RGBA bytes read straight into its writer's next buffer."""

    def __init__(self, spec: RenderSpec) -> None:
        self.canvas = OffscreenCanvas(spec.scenery, spec.size, spec.center, spec.half_extent_m)
        self.hud = spec.hud
        self.video: VideoWriter | None = None
        if spec.video is not None:
            self.video = VideoWriter(Path(spec.video), spec.size, spec.fps, "rgba", spec.encoder)
        self.frames = FrameWriter(Path(spec.frames)) if spec.frames is not None else None

    def submit(self, frame: Frame, camera: Camera) -> None:
        hud = (lambda r, size: draw_hud(r, size, frame)) if self.hud else None
        self.canvas.draw(frame, camera, overlay=hud)
        if self.video is not None:
            self.video.write_into(self.canvas.read_rgba_into)
        if self.frames is not None:
            self.frames.write(self.canvas.read())

    def end(self) -> None:
        """Nothing to do: every submitted frame is already drawn."""

    def close(self) -> None:
        for sink in (self.video, self.frames):
            if sink is not None:
                sink.close()
        self.canvas.release()


# Frames in flight to the render process before the simulation waits: 8 s of 30 fps video.
# The simulation makes frames ~4x faster than the render process and ffmpeg draw and encode
# them; a deep queue lets it run ahead and finish, after which both cores render and encode
# (reference run: 70-73 s against 85-89 s wall with 6 frames, measured alternately). A frame on
# the wire is the agents' state (~100 kB at 1,000 drones), not pixels.
QUEUE_FRAMES = 240


class RenderWorker:
    """A child process (spawned: no state shared with pybullet or numba) running a LocalRender.

    Frames travel pickled through a bounded queue; a frame's overlays are sent only when they
    differ from the last ones sent (None on the wire means "unchanged").
    """

    def __init__(self, spec: RenderSpec) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.queue = ctx.Queue(maxsize=QUEUE_FRAMES)
        self.errors = ctx.Queue()
        self.proc = ctx.Process(
            target=_render_loop, args=(spec, self.queue, self.errors), daemon=True
        )
        self.proc.start()
        self._sent_overlays: list[Any] | None = None
        self._ended = False

    def submit(self, frame: Frame, camera: Camera) -> None:
        if not self.proc.is_alive():
            self._raise()
        overlays = frame.overlays
        same = self._sent_overlays is not None and _same_overlays(overlays, self._sent_overlays)
        if not same:
            self._sent_overlays = overlays
        wire = replace(frame, overlays=None if same else overlays)  # type: ignore[arg-type]
        # Pickled now: the queue's feeder thread would pickle it later, and by then the camera
        # (moved by the follower every frame) and any reused array would show a later moment.
        self._put(pickle.dumps((wire, camera), protocol=pickle.HIGHEST_PROTOCOL))

    def end(self) -> None:
        """Tell the process there are no more frames (it drains the queue and exits)."""
        if not self._ended:
            self._ended = True
            self._put(None)

    def close(self) -> None:
        """end(), then wait for the process; raise what it failed with."""
        self.end()
        self.proc.join()
        self._raise()

    def _put(self, item: Any) -> None:
        """Queue `item`, waiting while QUEUE_FRAMES are in flight; raise if the process died."""
        import queue

        while True:
            try:
                self.queue.put(item, timeout=1.0)
                return
            except queue.Full:
                if not self.proc.is_alive():
                    self._raise()
                    raise RuntimeError("video render process ended early") from None

    def _raise(self) -> None:
        if not self.errors.empty():
            raise RuntimeError(f"video render process failed: {self.errors.get()}")
        if self.proc.exitcode not in (None, 0):
            raise RuntimeError(f"video render process exited with {self.proc.exitcode}")


def _render_loop(spec: RenderSpec, queue: Any, errors: Any) -> None:
    """The render process: frames from `queue` until None, into a LocalRender."""
    try:
        local = LocalRender(spec)
        overlays: list[Any] = []
        while (item := queue.get()) is not None:
            frame, camera = pickle.loads(item)
            if frame.overlays is None:
                frame.overlays = overlays
            overlays = frame.overlays
            local.submit(frame, camera)
        local.close()
    except BaseException as exc:  # reported to the parent, which raises it
        errors.put(f"{type(exc).__name__}: {exc}")
        raise


def _same_overlays(a: list[Any], b: list[Any]) -> bool:
    """True if two overlay lists draw the same (kind, colour and every coordinate)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if type(x) is not type(y) or x.color != y.color:
            return False
        ax = getattr(x, "segments", getattr(x, "corners", None))
        bx = getattr(y, "segments", getattr(y, "corners", None))
        if ax.shape != bx.shape or not np.array_equal(ax, bx):
            return False
    return True
