"""GPU vertex streams of the renderer: instanced meshes and flat-coloured vertex batches.

Every per-frame upload goes to storage no queued draw of the current frame still reads (the
buffer is orphaned first, or each batch has a buffer of its own): on a software rasteriser
(Mesa llvmpipe, offscreen video) rewriting a buffer that a queued draw uses makes the driver
flush the queued part of the frame first.
"""

from __future__ import annotations

import moderngl
import numpy as np

from skyswarm.core.frames import quat_to_matrix
from skyswarm.gui.meshes import Mesh

FLAT_STRIDE = 28  # bytes per flat vertex: position 3 float32 + RGBA 4 float32


def model_matrices(positions: np.ndarray, quats: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(N, 16) float32 column-major model matrices from (N, 3) positions and (N, 4) x,y,z,w."""
    m = np.zeros((len(positions), 4, 4), dtype=np.float32)
    m[:, :3, :3] = quat_to_matrix(quats)  # computed in float64, stored as float32
    m[:, :3, :3] *= scale
    m[:, :3, 3] = positions
    m[:, 3, 3] = 1.0
    return m.transpose(0, 2, 1).reshape(-1, 16)


class InstancedMesh:
    """One mesh, any number of instances, one draw call."""

    def __init__(self, ctx: moderngl.Context, prog: moderngl.Program, mesh: Mesh) -> None:
        self.ctx, self.mesh = ctx, mesh
        self.vbo = ctx.buffer(mesh.interleaved.tobytes())
        self.capacity = 0
        self.ibo: moderngl.Buffer | None = None
        self.vao: moderngl.VertexArray | None = None
        self.prog = prog
        self.count = 0

    def update(self, matrices: np.ndarray, colors: np.ndarray) -> None:
        """(N, 16) column-major matrices and (N, 4) RGBA colours of this frame's instances."""
        n = len(matrices)
        if n > self.capacity:
            self.capacity = max(n, 2 * self.capacity, 16)
            if self.ibo is not None:
                self.ibo.release()
                self.vao.release()  # type: ignore[union-attr]
            self.ibo = self.ctx.buffer(reserve=self.capacity * 80, dynamic=True)
            self.vao = self.ctx.vertex_array(
                self.prog,
                [
                    (self.vbo, "3f 3f", "in_position", "in_normal"),
                    (self.ibo, "16f 4f/i", "in_model", "in_color"),
                ],
            )
        self.count = n
        if n:
            data = np.empty((n, 20), dtype=np.float32)
            data[:, :16], data[:, 16:] = matrices, colors
            self.ibo.orphan()  # type: ignore[union-attr]
            self.ibo.write(data)  # type: ignore[union-attr]

    def draw(self) -> None:
        if self.count and self.vao is not None:
            self.vao.render(moderngl.TRIANGLES, instances=self.count)


class FlatBatches:
    """Flat-coloured vertices ((N, 7): position, RGBA) drawn by `prog`, one buffer per named
    batch (shadows, markers, overlay lines, ...), kept between frames.

    A batch drawn with the same `key` object as its last upload (compared by identity; the
    object is kept, so its id cannot be reused) is drawn again without an upload: the mission
    overlays (thousands of coverage quads) change far less often than once per frame.
    """

    def __init__(self, ctx: moderngl.Context, prog: moderngl.Program) -> None:
        self.ctx, self.prog = ctx, prog
        self._slots: dict[str, tuple[moderngl.Buffer, moderngl.VertexArray]] = {}
        self._keys: dict[str, tuple[object, int]] = {}

    def is_current(self, name: str, key: object) -> bool:
        """True if batch `name` was last uploaded with this very `key` object."""
        last = self._keys.get(name)
        return last is not None and last[0] is key

    def draw(
        self, name: str, parts: list[np.ndarray], mode: int, key: object | None = None
    ) -> None:
        """Upload the (N, 7) `parts` (unless `key` matches the last upload) and draw them."""
        if key is not None and self.is_current(name, key):
            count = self._keys[name][1]
        else:
            data = np.vstack(parts).astype(np.float32, copy=False) if parts else None
            count = 0 if data is None else len(data)
            if count:
                self._upload(name, data)  # type: ignore[arg-type]
            self._keys[name] = (key, count)
        if count:
            self._slots[name][1].render(mode, vertices=count)

    def _upload(self, name: str, data: np.ndarray) -> None:
        nbytes = data.nbytes
        slot = self._slots.get(name)
        if slot is None or slot[0].size < nbytes:
            size = max(nbytes, 2 * slot[0].size if slot else 1 << 14)
            if slot is not None:
                slot[1].release()
                slot[0].release()
            buf = self.ctx.buffer(reserve=size, dynamic=True)
            vao = self.ctx.vertex_array(self.prog, [(buf, "3f 4f", "in_position", "in_color")])
            slot = self._slots[name] = (buf, vao)
        else:
            slot[0].orphan()
        slot[0].write(np.ascontiguousarray(data))
