"""Motion trails: where each agent was over the last `length_s` seconds, as (N, T, 3) points.

`TrailBuffer` records a live run (one row of positions every TRAIL_EVERY_S of simulated time,
in a ring); `recorded_trail` cuts the same points out of a recording, so a replay draws the
trails the live view drew. Both are vectorised over agents: one array per frame, one draw call.

The renderer draws them with `TrailPass`, which keeps the points on the GPU as the TrailBuffer
keeps them (a ring of rows, `TrailRing`): a frame uploads the agents' positions (each trail's
last point) and the rows recorded since the last frame, and the segments are an index buffer
rebuilt only when a point is kept (every TRAIL_EVERY_S), instead of ~1 MB of line vertices
built in numpy and uploaded every frame (docs/performance.md, Window).

    trails = TrailBuffer(length_s=12.0)
    trails.record(frame)           # every GUI frame; keeps a point each TRAIL_EVERY_S
    ring = trails.view(frame)      # TrailRing: Renderer.render(trails=ring) draws it
    points = trails.points(frame)  # (N, T, 3) m, oldest first, the current position last
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import moderngl
import numpy as np

from skyswarm.gui.palette import TRAIL
from skyswarm.gui.scene import Frame
from skyswarm.gui.shaders import FLAT_FS, TRAIL_VS

TRAIL_EVERY_S = 0.2  # s of simulated time between trail points
DEFAULT_TRAIL_S = 12.0  # s: the trail length of `--trails` without a value, and of the L key
MAX_TRAIL_SEGMENTS = 20_000  # beyond, trails keep every k-th point (llvmpipe: ~0.5 ms / 1,000)

_EPOCHS = itertools.count(1)  # ring contents: a new number whenever a ring starts anew


@dataclass(frozen=True)
class TrailRing:
    """Trail points as a TrailBuffer keeps them: row k % C of `ring` holds the k-th point kept,
    the last min(count, C) rows are the trail, oldest first, and `now` is each trail's last
    point. A view of the buffer: valid until it records again.

    `epoch` names the ring's contents: two views with the same epoch hold the same rows up to
    the smaller count (a TrailBuffer's, from its last clear); `TrailPass` then uploads only the
    rows added since."""

    ring: np.ndarray  # (C, N, 3) m
    count: int  # points kept so far
    epoch: int
    now: np.ndarray  # (N, 3) m: the agents' positions in the frame drawn
    shown: np.ndarray | None = None  # (N,) bool: the agents whose trails are drawn; None: all

    @classmethod
    def of_points(cls, points: np.ndarray) -> TrailRing:
        """(N, T >= 1, 3) points, oldest first (`recorded_trail`): a ring of T - 1 rows."""
        pts = np.asarray(points, dtype=float)
        if pts.ndim != 3 or pts.shape[1] < 1 or pts.shape[2] != 3:
            raise ValueError(f"trail points must be (N, T >= 1, 3), got {pts.shape}")
        return cls(pts[:, :-1].transpose(1, 0, 2), pts.shape[1] - 1, next(_EPOCHS), pts[:, -1])

    @property
    def kept(self) -> int:
        """Points of each trail before `now`."""
        return min(self.count, len(self.ring))

    def rows(self) -> np.ndarray:
        """(kept,) ring rows of the trail's points, oldest first."""
        return np.arange(self.count - self.kept, self.count) % max(1, len(self.ring))

    def only(self, shown: np.ndarray) -> TrailRing:
        """The trails of the agents `shown` (N,) bool (and shown here) only."""
        keep = np.asarray(shown, dtype=bool)
        return replace(self, shown=keep if self.shown is None else self.shown & keep)

    def points(self) -> np.ndarray:
        """(M, T, 3) m: the shown agents' points, oldest first, then `now`."""
        pts = np.concatenate([self.ring[self.rows()], self.now[None]], axis=0).transpose(1, 0, 2)
        return pts if self.shown is None else pts[self.shown]


class TrailBuffer:
    """The last `length_s` seconds of positions of a live run's agents (module docstring)."""

    def __init__(self, length_s: float = DEFAULT_TRAIL_S) -> None:
        if not (length_s > 0 and math.isfinite(length_s)):
            raise ValueError(f"trail length must be a time > 0 s, got {length_s!r}")
        self.length_s = float(length_s)
        self.capacity = max(2, int(round(length_s / TRAIL_EVERY_S)))
        self._ring: np.ndarray | None = None  # (capacity, N, 3) m
        self._count = 0  # points recorded (the ring holds the last `capacity`)
        self._next_s = -math.inf
        self._ids: np.ndarray | None = None
        self._epoch = next(_EPOCHS)

    def clear(self) -> None:
        self._ring, self._count, self._next_s, self._ids = None, 0, -math.inf, None
        self._epoch = next(_EPOCHS)

    def record(self, frame: Frame) -> None:
        """Keep `frame`'s positions if TRAIL_EVERY_S has passed since the last point kept; a
        change of the agent set (an agent added) or time going back starts the trails anew."""
        if frame.time_s < self._next_s - TRAIL_EVERY_S:  # a reset or a seek back
            self.clear()
        if frame.time_s + 1e-9 < self._next_s:  # 1e-9: ticks * tick_s rounds either way
            return
        if self._ids is None or not np.array_equal(self._ids, frame.ids):
            self.clear()
            self._ids = frame.ids.copy()
            self._ring = np.empty((self.capacity, len(frame.ids), 3))
        assert self._ring is not None
        self._ring[self._count % self.capacity] = frame.positions
        self._count += 1
        self._next_s = frame.time_s + TRAIL_EVERY_S

    def view(self, frame: Frame) -> TrailRing | None:
        """The kept points and `frame`'s positions as a TrailRing (valid until the next
        `record`), or None when nothing is kept for `frame`'s agents."""
        if self._ring is None or self._ids is None or not np.array_equal(self._ids, frame.ids):
            return None
        return TrailRing(self._ring, self._count, self._epoch, frame.positions)

    def points(self, frame: Frame) -> np.ndarray:
        """(N, T, 3) m: each agent's kept points, oldest first, then its position in `frame`;
        (N, 0, 3) when nothing is kept for `frame`'s agents."""
        ring = self.view(frame)
        return np.zeros((len(frame.ids), 0, 3)) if ring is None else ring.points()


def recorded_trail(
    times: np.ndarray, positions: np.ndarray, time_s: float, length_s: float
) -> np.ndarray:
    """(N, T, 3) m trail points of a recording: `positions` (S, N, 3) sampled at `times` (S,)
    s, at the TRAIL_EVERY_S grid points within `length_s` before `time_s` (the grid a live
    TrailBuffer started at t = 0 keeps), then the sample shown at `time_s`."""
    if len(times) == 0:
        return np.zeros((positions.shape[1], 0, 3))
    last = math.floor((time_s + 1e-9) / TRAIL_EVERY_S)
    first = max(0, last - max(2, int(round(length_s / TRAIL_EVERY_S))) + 1)
    grid = np.arange(first, last + 1) * TRAIL_EVERY_S
    idx = np.maximum(0, np.searchsorted(times, grid + 1e-9, side="right") - 1)
    now = max(0, int(np.searchsorted(times, time_s + 1e-9, side="right")) - 1)
    return positions[np.r_[idx, now]].transpose(1, 0, 2)


LOOKS_UNIT = 3  # texture unit of TrailPass's colour table (the 2D images use unit 0)
LOOKS_W = 256  # texels per row of the colour table


class TrailPass:
    """Draws TrailRings: the points stay on the GPU between frames, in a vertex buffer laid out
    as the ring ((C + 1) rows of N points: the C ring rows, then `now`), drawn as GL_LINES
    through an index buffer of the segments; each vertex's colour is looked up by its row in a
    table (TRAIL's colour, the alpha rising from 0 at a trail's oldest point drawn to TRAIL's at
    the agent), so the vertex shader gives each point the colour a line vertex carrying it had.

    Per frame: `now` (N x 12 bytes) and the rows recorded since the last frame; when a point
    was kept or the shown agents change, the index buffer and the table (at most
    MAX_TRAIL_SEGMENTS segments: over it, every k-th point, counted back from the agent).
    Segments with an end not finite are left out. The picture is the one line vertices of
    position and RGBA gave (tests/gui/test_trail_pass.py), pixel for pixel."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=TRAIL_VS, fragment_shader=FLAT_FS)
        self.prog["u_looks"].value = LOOKS_UNIT
        self._vbo: moderngl.Buffer | None = None
        self._ibo: moderngl.Buffer | None = None
        self._vao: moderngl.VertexArray | None = None
        self._looks: moderngl.Texture | None = None
        self._shape = (-1, -1)  # (C, N) of the vertex buffer
        self._epoch, self._synced = 0, 0  # the ring on the GPU: its epoch, points uploaded
        self._finite = np.zeros((0, 0), dtype=bool)  # (C + 1, N): rows' points finite
        self._built: tuple | None = None  # what the index buffer and the table were built for
        self.segments = 0

    def draw(self, trails: TrailRing) -> None:
        """Draw `trails` with the program's `u_vp` (set by the renderer) and its GL state."""
        if len(trails.now) == 0:
            return
        self._sync(trails)
        self._build(trails)
        if self.segments and self._vao is not None and self._looks is not None:
            self._looks.use(LOOKS_UNIT)
            self._vao.render(moderngl.LINES, vertices=2 * self.segments)

    def _sync(self, trails: TrailRing) -> None:
        """Upload the ring rows recorded since the last sync (all of them for a new epoch or
        shape) and `now`."""
        c, n = len(trails.ring), len(trails.now)
        if (c, n) != self._shape:
            if self._vbo is not None:
                self._vbo.release()
            self._vbo = self.ctx.buffer(reserve=max(12, (c + 1) * n * 12))
            self._shape, self._epoch, self._built = (c, n), 0, None
            self._finite = np.ones((c + 1, n), dtype=bool)
            self._release_vao()
        assert self._vbo is not None
        stale = trails.epoch != self._epoch or not (0 <= trails.count - self._synced <= c)
        first = trails.count - trails.kept if stale else self._synced
        if c and first < trails.count:
            start, size = first % c, trails.count - first
            for a, b in ((start, min(c, start + size)), (0, max(0, start + size - c))):
                if b > a:
                    self._write_rows(a, trails.ring[a:b])
        self._write_rows(c, trails.now[None])
        self._epoch, self._synced = trails.epoch, trails.count

    def _write_rows(self, row: int, points: np.ndarray) -> None:
        data = np.ascontiguousarray(points, dtype=np.float32)  # (rows, N, 3)
        self._finite[row : row + len(data)] = np.isfinite(data).all(axis=2)
        self._vbo.write(data, offset=row * data.shape[1] * 12)  # type: ignore[union-attr]

    def _build(self, trails: TrailRing) -> None:
        """The segments' index buffer and the colour table, when what they depend on changed:
        the points kept, the agents shown, which points are finite."""
        c, n = self._shape
        shown = trails.shown
        key = (trails.count, c, n)  # the rows of the points (not the epoch: not their values)
        last = self._built
        if (
            last is not None
            and last[0] == key
            and _same_mask(last[1], shown)
            and np.array_equal(last[2], self._finite)
        ):
            return
        self._built = (key, None if shown is None else shown.copy(), self._finite.copy())
        agents = np.arange(n) if shown is None else np.flatnonzero(shown)
        t = trails.kept + 1
        place = np.arange(t)
        stride = -(-len(agents) * (t - 1) // MAX_TRAIL_SEGMENTS)  # ceil: every k-th point
        if stride > 1:
            place = place[::-stride][::-1]  # keeps the newest point (the agent)
        self.segments = 0
        if len(agents) == 0 or len(place) < 2:
            return
        row = np.append(trails.rows(), c)[place]  # (t',) vertex-buffer row of each point
        vid = row[None, :] * n + agents[:, None]  # (M, t') vertex ids
        seg = np.stack([vid[:, :-1], vid[:, 1:]], axis=2).reshape(-1, 2)
        finite = self._finite.reshape(-1)
        if not finite.all():
            seg = seg[finite[seg].all(axis=1)]
        self.segments = len(seg)
        looks = np.zeros((-(-(c + 1) // LOOKS_W) * LOOKS_W, 4), dtype=np.float32)
        looks[:, :3] = TRAIL[:3]
        looks[row, 3] = np.linspace(0.0, TRAIL[3], len(place), dtype=np.float32)
        self._upload(seg.astype(np.int32), looks)

    def _upload(self, segments: np.ndarray, looks: np.ndarray) -> None:
        size = (LOOKS_W, len(looks) // LOOKS_W)
        if self._looks is None or self._looks.size != size:
            if self._looks is not None:
                self._looks.release()
            self._looks = self.ctx.texture(size, 4, dtype="f4")
            self._looks.filter = moderngl.NEAREST, moderngl.NEAREST
        self._looks.write(looks)
        if len(segments) == 0:
            return
        if self._ibo is None or self._ibo.size < segments.nbytes:
            self._release_vao()
            if self._ibo is not None:
                self._ibo.release()
            self._ibo = self.ctx.buffer(reserve=max(segments.nbytes, 1 << 14), dynamic=True)
        else:
            self._ibo.orphan()  # a queued draw may still read the last segments
        self._ibo.write(segments)
        if self._vao is None:
            self._vao = self.ctx.vertex_array(
                self.prog,
                [(self._vbo, "3f", "in_position")],
                index_buffer=self._ibo,
                index_element_size=4,
            )
        self.prog["u_agents"].value = self._shape[1]

    def _release_vao(self) -> None:
        if self._vao is not None:
            self._vao.release()
            self._vao = None


def _same_mask(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return np.array_equal(a, b)
