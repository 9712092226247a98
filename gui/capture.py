"""Capturing a running simulation: video and PNG frames at a fixed simulated frame rate, drawn
in this process or by a pool of render processes.

`Capture` is a post-tick listener: it only reads the world, so a run with `--video` writes the
same trajectory as a run without. With `process` it hands each frame (the agents' state and the
camera, a few kB) to a `RenderPool` and the simulation steps on.

The pool: worker process j of W draws frames j, j + W, j + 2W, ... (EGL; Mesa llvmpipe on a
server, where the GPU is the CPU) and reads each into a slot of shared memory; a collector
thread of this process hands the slots to the ffmpeg writer in frame order. A frame's drawing
has a single-threaded part (Python, the driver's front end) and a rasteriser part spread over
the cores; with two workers one rasterises while the other runs its single-threaded part, so
both cores stay busy (README, Benchmarks, Video: the reference run's video ~8 % sooner than
with one render process, for the same CPU). The frames are pixel-identical either way.
"""

from __future__ import annotations

import os
import pickle
import queue
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyswarm.gui import ground, yuv
from skyswarm.gui.camera import Camera
from skyswarm.gui.director import CameraSpec
from skyswarm.gui.framing import scene_extent, shown_points
from skyswarm.gui.groups import group_lines
from skyswarm.gui.multiview import LayoutSpec, MultiView, second_rect
from skyswarm.gui.offscreen import OffscreenCanvas
from skyswarm.gui.proximity import ProximityLimits, proximity_lines
from skyswarm.gui.scene import Frame, LiveSource, Scenery
from skyswarm.gui.sensor_views import Sensed
from skyswarm.gui.video import ENCODER, PIX_FMTS, VIDEO_FMT, Encoder, FrameWriter, VideoWriter

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator

# Render processes of a pool (1 on a single-core machine): two keep two cores busy.
WORKERS = 2


def raster_threads(cores: int, workers: int) -> int:
    """llvmpipe's rasteriser threads for each of `workers` render processes on `cores` CPUs
    (its LP_NUM_THREADS; it starts one per core by default): none, rasterising in the drawing
    thread, where the render processes, the simulation and ffmpeg already keep every core
    busy; else the cores left over, shared. On 2 cores the picture has little left for
    llvmpipe since its ground is painted on the CPU (gui/ground.py), and its threads' hand-offs
    cost more than they save: 8.5-8.7 CPU ms a frame without them against 9.1-10.7 with one or
    two (docs/gui.md, "The render processes' start and llvmpipe's threads")."""
    return max(0, (cores - 2) // max(1, workers))


# Frames in flight to the pool before the simulation waits: 8 s of 30 fps video. The simulation
# makes frames ~4x faster than they are drawn and encoded; a deep queue lets it run ahead and
# finish, after which both cores render and encode. A frame on the wire is the agents' state
# (~100 kB at 1,000 drones), not pixels.
QUEUE_FRAMES = 240
# Shared memory for finished frames: at most this many bytes, at least one slot per worker and
# one for the writer (8 slots of a 720p yuv420p frame: 11 MB).
SLOTS_MAX, SLOT_BYTES = 8, 32 << 20
WAIT_S = 0.2  # how often a waiting collector looks for a dead worker or the end
ERROR_WAIT_S = 2.0  # how long a dead worker's error message may take to arrive


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
    inset: bool = True  # the inset map of the whole area, top right
    markers: bool = True  # far drones as markers (gui/drones.py)
    layout: str = "single"  # gui/multiview.py LAYOUTS: one view, picture-in-picture, side by side
    proximity: bool = False  # rings by the nearest neighbour's distance (gui/proximity.py)
    groups: bool = False  # a line from each member to its group's leader (gui/groups.py)


class Capture:
    """Renders a Simulator to video and/or PNG frames at `fps` frames per simulated second.

    Frame k (k = 1, 2, ...) shows the state after the first tick with time >= k / fps, so a run
    of D seconds gives floor(D * fps) frames. `camera` (a name or a gui/director.py
    `CameraSpec`) moves with each frame (the default keeps the alive UAVs large in the frame);
    with `follow` False it stays where the first frame put it. `layout` (gui/multiview.py)
    adds a second camera's view, picture-in-picture or side by side; `proximity` the
    proximity rings (gui/proximity.py); `groups` the lines from members to their group's
    leader (gui/groups.py); `lidar` the lidar beams (of `camera.target`, else of
    every UAV) and `sensor_camera` a UAV's camera in a corner (gui/sensor_views.py). With
    `process` the frames are drawn and encoded by a `RenderPool` while the simulation steps
    on.
    """

    def __init__(
        self,
        sim: Simulator,
        video: Path | None = None,
        frames: Path | None = None,
        fps: float = 30.0,
        size: tuple[int, int] = (1280, 720),
        camera: str | CameraSpec = "swarm",
        hud: bool = True,
        follow: bool = True,
        process: bool = False,
        encoder: Encoder = ENCODER,
        workers: int | None = None,
        inset: bool = True,
        markers: bool = True,
        layout: LayoutSpec | None = None,
        proximity: bool = False,
        lidar: bool = False,
        sensor_camera: bool = False,
        groups: bool = False,
    ) -> None:
        self.sim = sim
        self.source = LiveSource(sim)
        first = self.source.frame()
        shown = shown_points(first)
        center, half = scene_extent(shown)
        spec_cam = camera if isinstance(camera, CameraSpec) else CameraSpec(camera)
        layout = layout or LayoutSpec()
        self.views = MultiView(layout, spec_cam, size, first, hud, inset)
        self.director = self.views.main
        self.views.update(first)
        self.follow = follow
        self.fps = fps
        spec = RenderSpec(
            self.source.scenery, size, tuple(center), half, video, frames, fps, hud, encoder,
            inset, markers, layout.name, proximity, groups,
        )  # fmt: skip
        self.sensing = (spec_cam.target, lidar, sensor_camera) if lidar or sensor_camera else None
        self.worker: RenderPool | LocalRender = (
            RenderPool(spec, workers) if process else LocalRender(spec)
        )
        self.count = 0
        self._ended = False
        sim.add_post_tick(self.post_tick)

    def post_tick(self, world: World) -> None:
        if world.time_s + 1e-9 < (self.count + 1) / self.fps:
            return
        self.count += 1
        frame = self.source.frame()
        if self.follow:
            self.views.update(frame)
        second = self.views.second.camera.fixed() if self.views.second is not None else None
        sensed = Sensed.of(self.source.agents, *self.sensing) if self.sensing else None
        # fixed(): a chase camera's pose is a callable
        self.worker.submit(frame, self.camera.fixed(), second, sensed)

    @property
    def camera(self) -> Camera:
        return self.director.camera

    def end(self) -> None:
        """No more frames: the render processes go on drawing what is queued (while the caller
        writes its results) until close()."""
        if not self._ended:
            self._ended = True
            self.sim.remove_post_tick(self.post_tick)
            self.worker.end()

    def close(self) -> None:
        """end(), then wait until every frame is drawn and the files are complete."""
        self.end()
        self.worker.close()


class LocalRender:
    """Draws and encodes each submitted frame at once, in this process. The video gets the
    framebuffer converted to yuv420p straight into its writer's next buffer."""

    def __init__(self, spec: RenderSpec) -> None:
        self.canvas = OffscreenCanvas(spec.scenery, spec.size, spec.center, spec.half_extent_m)
        self.canvas.renderer.markers = spec.markers
        self.hud, self.inset, self.layout = spec.hud, spec.inset, spec.layout
        self.proximity = ProximityLimits.of(spec.scenery) if spec.proximity else None
        self.groups = spec.groups
        self.video: VideoWriter | None = None
        if spec.video is not None:
            self.video = VideoWriter(Path(spec.video), spec.size, spec.fps, VIDEO_FMT, spec.encoder)
        self.frames = FrameWriter(Path(spec.frames)) if spec.frames is not None else None

    def draw(
        self,
        frame: Frame,
        camera: Camera,
        second: Camera | None = None,
        sensed: Sensed | None = None,
    ) -> None:
        """Draw `frame` (with the HUD, the inset map, the `second` view of the layout and
        what is `sensed`) into the canvas's framebuffer."""
        extra = group_lines(frame) if self.groups else []
        extra += proximity_lines(frame, self.proximity) if self.proximity is not None else []
        extra += sensed.lines if sensed is not None else []
        self.canvas.compose(frame, camera, self.hud, self.inset, None, second, self.layout, extra)
        if sensed is not None and sensed.pip is not None:
            w, h = self.canvas.size
            pip = second_rect(self.layout, self.canvas.size) if self.layout == "pip" else None
            bottom = pip[1] if pip is not None else h
            ph, pw = sensed.pip.shape[:2]
            self.canvas.renderer.draw_image(sensed.pip, w - pw - 8, bottom - ph - 8, (w, h))

    def submit(
        self,
        frame: Frame,
        camera: Camera,
        second: Camera | None = None,
        sensed: Sensed | None = None,
    ) -> None:
        self.draw(frame, camera, second, sensed)
        if self.video is not None:
            self.video.write_into(self.canvas.read_yuv420p_into)
        if self.frames is not None:
            self.frames.write(self.canvas.read())

    def end(self) -> None:
        """Nothing to do: every submitted frame is already drawn."""

    def close(self) -> None:
        for sink in (self.video, self.frames):
            if sink is not None:
                sink.close()
        self.canvas.release()


class RenderPool:
    """`workers` render processes (spawned: no state shared with pybullet or numba) drawing
    alternate frames; the video is written here, in frame order, from shared memory.

    Frames travel pickled through one bounded queue per worker; a frame's overlays go to a
    worker only when they differ from the last ones sent to it (None: unchanged).
    """

    def __init__(self, spec: RenderSpec, workers: int | None = None) -> None:
        import multiprocessing as mp
        from multiprocessing.shared_memory import SharedMemory

        ctx = mp.get_context("spawn")
        n = workers if workers is not None else (WORKERS if (os.cpu_count() or 1) > 1 else 1)
        self.errors = ctx.Queue()
        self.video: VideoWriter | None = None
        slots = None
        ground.prepare()  # the workers' kernels compiled (or loaded) once, here
        if spec.video is not None:
            yuv.prepare()
            self.frame_bytes = int(spec.size[0] * spec.size[1] * PIX_FMTS[VIDEO_FMT])
            self.n_slots = max(n + 1, min(SLOTS_MAX, SLOT_BYTES // self.frame_bytes))
            self.shm = SharedMemory(create=True, size=self.n_slots * self.frame_bytes)
            self.free = [ctx.Semaphore(1) for _ in range(self.n_slots)]
            self.ready = [ctx.Semaphore(0) for _ in range(self.n_slots)]
            self.views = [self._slot(k) for k in range(self.n_slots)]
            slots = (self.shm.name, self.n_slots, self.frame_bytes, self.free, self.ready)
            self.video = VideoWriter(Path(spec.video), spec.size, spec.fps, VIDEO_FMT, spec.encoder)
        drawn = replace(spec, video=None)  # the workers draw; only this process encodes
        self.queues = [ctx.Queue(maxsize=max(1, QUEUE_FRAMES // n)) for _ in range(n)]
        lp = raster_threads(os.cpu_count() or 1, n)
        self.procs = [
            ctx.Process(
                target=_render_loop, args=(drawn, q, self.errors, slots, j, lp), daemon=True
            )
            for j, q in enumerate(self.queues)
        ]
        for p in self.procs:
            p.start()
        self._sent: list[list[Any] | None] = [None] * n
        self.count = 0
        self.total: int | None = None  # frames submitted, once end() is called
        self.failure: str | None = None
        self._closed = False
        self._collector: threading.Thread | None = None
        if self.video is not None:
            self._collector = threading.Thread(
                target=self._collect, name="frame-collector", daemon=True
            )
            self._collector.start()

    def _slot(self, k: int) -> memoryview:
        return self.shm.buf[k * self.frame_bytes : (k + 1) * self.frame_bytes]

    def submit(
        self,
        frame: Frame,
        camera: Camera,
        second: Camera | None = None,
        sensed: Sensed | None = None,
    ) -> None:
        self._check()
        j = self.count % len(self.procs)
        overlays, sent = frame.overlays, self._sent[j]
        same = sent is not None and _same_overlays(overlays, sent)
        if not same:
            self._sent[j] = overlays
        wire = replace(frame, overlays=None if same else overlays)  # type: ignore[arg-type]
        # Pickled now: the queue's feeder thread would pickle it later, and by then the camera
        # (moved by the follower every frame) and any reused array would show a later moment.
        item = pickle.dumps(
            (self.count, wire, camera, second, sensed), protocol=pickle.HIGHEST_PROTOCOL
        )
        self._put(j, item)
        self.count += 1

    def end(self) -> None:
        """Tell the workers there are no more frames (they drain their queues and exit)."""
        if self.total is None:
            self.total = self.count
            for j in range(len(self.procs)):
                self._put(j, None)

    def close(self) -> None:
        """end(), wait for the workers and the video, free the shared memory; raise what
        failed (again at a second call)."""
        if self._closed:
            self._check()
            return
        self._closed = True
        try:
            self.end()
        except RuntimeError:
            pass  # a worker failed: raised below, after the cleanup
        if self._collector is not None:
            self._collector.join()  # at the last frame, or at a worker's failure
        for p in self.procs:
            if self.failure is not None:
                p.terminate()  # it may wait for a slot nobody will free
            p.join()
        for q in self.queues:  # frames a dead worker never took must not hold up our exit
            q.cancel_join_thread()
            q.close()
        error: RuntimeError | None = None
        try:
            self._check()
        except RuntimeError as exc:
            error = exc
        if self.video is not None:
            try:
                self.video.close()
            except RuntimeError as exc:
                error = error or exc
            finally:
                self._release_slots()
        if error is not None:
            raise error

    def _release_slots(self) -> None:
        for v in self.views:
            v.release()
        self.shm.close()
        self.shm.unlink()

    def _collect(self) -> None:
        """The collector thread: frame k's slot, once its worker has filled it, to the video
        writer, whose feeder frees the slot when it has written it to ffmpeg."""
        k = 0
        while self.total is None or k < self.total:
            s = k % self.n_slots
            if not self.ready[s].acquire(timeout=WAIT_S):
                if self.total is not None and k >= self.total:
                    # end() came while this waited for a frame that is not coming: its worker
                    # has exited normally by now (it was judged a failure, "exited with 0")
                    return
                owner = self.procs[k % len(self.procs)]
                if owner.exitcode is not None and not self.ready[s].acquire(timeout=WAIT_S):
                    if self.failure is None:  # the first failure is the one reported
                        self.failure = self._exit_reason(owner)
                    return
                continue
            try:
                self.video.write_shared(self.views[s], self.free[s].release)  # type: ignore[union-attr]
            except (RuntimeError, ValueError) as exc:  # ffmpeg stopped
                if self.failure is None:
                    self.failure = str(exc)
                return
            k += 1

    def _put(self, j: int, item: bytes | None) -> None:
        """Queue `item` for worker j, waiting while its queue is full; raise if it died."""
        while True:
            try:
                self.queues[j].put(item, timeout=1.0)
                return
            except queue.Full:
                self._check()

    def _worker_error(self, wait_s: float = 0.0) -> str | None:
        try:
            return self.errors.get(timeout=wait_s) if wait_s > 0 else self.errors.get_nowait()
        except queue.Empty:
            return None

    def _exit_reason(self, proc: Any) -> str:
        """Why a worker that exited failed: the error it reported (it puts it on the queue
        just before it exits; on a loaded machine the message can arrive after the exit is
        seen, so wait a moment for it), else its exit code."""
        return self._worker_error(ERROR_WAIT_S) or f"exited with {proc.exitcode}"

    def _check(self) -> None:
        """Raise if a worker or the video writer failed. A worker that fails reports why and
        exits (`_render_loop`), so its exit code is what is looked at for every frame (one
        waitpid each); the error queue only once one has exited (polling it, a lock and a
        pipe's poll, cost the simulation ~0.2 ms a frame)."""
        if self.failure is None:
            for p in self.procs:
                if p.exitcode not in (None, 0):
                    self.failure = self._exit_reason(p)
                    break
        if self.failure is not None:
            raise RuntimeError(f"video render process failed: {self.failure}")


def _render_loop(
    spec: RenderSpec, frames: Any, errors: Any, slots: Any, worker: int, raster: int
) -> None:
    """A worker: frames from its queue until None, drawn into a LocalRender; each read into its
    slot of shared memory (video) and/or saved as PNG frame k. `raster`: llvmpipe's threads
    (`raster_threads`), unless the environment sets LP_NUM_THREADS already."""
    # read by Mesa when the context's display starts, in LocalRender
    os.environ.setdefault("LP_NUM_THREADS", str(raster))
    try:
        local = LocalRender(spec)
        views: list[memoryview] = []
        if slots is not None:
            from multiprocessing.shared_memory import SharedMemory

            name, n_slots, nbytes, free, ready = slots
            shm = SharedMemory(name=name)  # the pool, which made it, unlinks it
            views = [shm.buf[k * nbytes : (k + 1) * nbytes] for k in range(n_slots)]
        overlays: list[Any] = []
        if slots is not None:
            yuv.prepare()  # before the first frame: loaded without numba's context refresh
        while (item := frames.get()) is not None:
            k, frame, camera, second, sensed = pickle.loads(item)
            if frame.overlays is None:
                frame.overlays = overlays
            overlays = frame.overlays
            local.draw(frame, camera, second, sensed)
            if views:
                s = k % len(views)
                free[s].acquire()
                local.canvas.read_yuv420p_into(views[s])
                ready[s].release()
            if local.frames is not None:
                local.frames.write(local.canvas.read(), index=k)
        for v in views:
            v.release()
        if slots is not None:
            shm.close()
        local.close()
    except BaseException as exc:  # reported to the pool, which raises it
        errors.put(f"worker {worker}: {type(exc).__name__}: {exc}")
        raise


def _same_overlays(a: list[Any], b: list[Any]) -> bool:
    """True if two overlay lists draw the same (kind, colour and every coordinate)."""
    import numpy as np

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
