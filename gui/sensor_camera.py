"""The `egl` camera renderer of `[uav.sensors.camera]` (uav/sensors/camera.py): every camera of
a sample drawn into one atlas and read back once, with moderngl on an EGL context (no window:
Mesa llvmpipe on a server, a GPU where there is one).

Importing this module registers the renderer (app/api.py imports it when a scenario switches a
camera on). The camera has its own small program, not the GUI's: one RGBA32F target whose
channels are the exact outputs, written by the fragment shader:
- R: the view-space z-depth, m (linear; the depth buffer only decides what is in front);
- G: the segmentation value (agent id >= 0, or a negative class), exact in float32 below 2^24;
- B: the shaded colour packed as r + 256 g + 65536 b (integers below 2^24: exact);
- A: 1 where something was drawn, 0 for the sky.
It reuses the GUI's meshes (the UAV's OBJ, the unit box) and palette. The camera i is tile i
of a grid of ceil(sqrt(N)) columns; only the UAVs in its view are drawn there (`in_view`),
never its own.

    import skyswarm.gui.sensor_camera  # noqa: F401  (registers "egl")
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import moderngl
import numpy as np

from skyswarm.gui import palette
from skyswarm.gui.meshes import Mesh, box_mesh, flat_mesh, role_mesh
from skyswarm.uav.sensors.camera import (
    GROUND,
    NOTHING,
    OBSTACLE,
    TERRAIN,
    CameraImages,
    CameraScene,
    CameraViews,
    register_camera_renderer,
)

VS = """
#version 330
uniform mat4 u_proj;
uniform mat4 u_view;
uniform vec3 u_shift;  // added to world positions (the ground follows the camera)
in vec3 in_position;
in vec3 in_normal;
in mat4 in_model;
in vec4 in_color;      // rgb, a: drawn (1) or not (0, a dead UAV)
in float in_seg;
out vec3 v_eye;
out vec3 v_normal;
out vec3 v_color;
flat out float v_seg;
void main() {
    vec4 eye = u_view * (in_model * vec4(in_position, 1.0) + vec4(u_shift, 0.0));
    v_eye = eye.xyz;
    v_normal = mat3(in_model) * in_normal;
    v_color = in_color.rgb;
    v_seg = in_seg;
    bool hidden = in_color.a < 0.5;
    gl_Position = hidden ? vec4(2.0, 2.0, 2.0, 1.0) : u_proj * eye;  // outside: clipped
}
"""
FS = """
#version 330
in vec3 v_eye;
in vec3 v_normal;
in vec3 v_color;
flat in float v_seg;
out vec4 f_out;
void main() {
    vec3 light = normalize(vec3(0.3, 0.2, 1.0));
    float shade = 0.45 + 0.55 * max(dot(normalize(v_normal), light), 0.0);
    vec3 c = floor(clamp(v_color * shade, 0.0, 1.0) * 255.0 + 0.5);
    f_out = vec4(-v_eye.z, v_seg, c.r + 256.0 * c.g + 65536.0 * c.b, 1.0);
}
"""
GROUND_HALF_M = 20000.0  # m: the ground quad under each camera, as big as the GUI's
SKY_RGB = np.round(np.array(palette.SKY) * 255).astype(np.uint8)
_MESH_RGB = {TERRAIN: palette.GROUND, OBSTACLE: palette.OBSTACLE}  # colour by class
_CONTEXT: list[moderngl.Context] = []  # one EGL context for every renderer of the process


def egl_context() -> moderngl.Context:
    """The process's EGL standalone context (OpenGL 3.3), made on first use."""
    if not _CONTEXT:
        _CONTEXT.append(moderngl.create_standalone_context(require=330, backend="egl"))
    return _CONTEXT[0]


@contextmanager
def egl_current() -> Iterator[moderngl.Context]:
    """The process's EGL context made current for the block; after it, the EGL context that
    was current before (an offscreen canvas's) is current again, or with none, EGL is released
    from the thread: a window's GLX context (`skyswarm view`) draws in the same thread
    between samples, and pyglet does not detect its own context while an EGL one is current."""
    from skyswarm.gui.offscreen import _egl_release_thread

    before = _egl_current_context()
    with egl_context() as ctx:
        yield ctx
    if not before:
        _egl_release_thread()


def _egl_current_context() -> int:
    """The thread's current EGL context handle (0: none, or no libEGL)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("EGL")
    if not name:
        return 0
    get = ctypes.CDLL(name).eglGetCurrentContext
    get.restype = ctypes.c_void_p
    return int(get() or 0)


def _instances(models: np.ndarray, rgb: tuple, drawn: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """(K, 21) float32 per-instance rows: column-major model, RGBA (a: drawn), segmentation."""
    k = len(models)
    out = np.empty((k, 21), dtype=np.float32)
    out[:, :16] = np.transpose(models, (0, 2, 1)).reshape(k, 16)
    out[:, 16:19] = rgb[:3]
    out[:, 19] = drawn
    out[:, 20] = seg
    return out


def _box_models(scene: CameraScene) -> np.ndarray:
    """(B, 4, 4) unit box -> world: scale by size, yaw, translate."""
    b = len(scene.box_centers)
    c, s = np.cos(scene.box_yaw_rad), np.sin(scene.box_yaw_rad)
    m = np.zeros((b, 4, 4))
    m[:, 0, 0], m[:, 0, 1], m[:, 1, 0], m[:, 1, 1] = c, -s, s, c
    m[:, 2, 2] = m[:, 3, 3] = 1.0
    m[:, :3, :3] = m[:, :3, :3] * scene.box_sizes[:, None, :]
    m[:, :3, 3] = scene.box_centers
    return m


def _ground_mesh() -> Mesh:
    h = GROUND_HALF_M
    v = np.array([[-h, -h, 0.0], [h, -h, 0.0], [h, h, 0.0], [-h, h, 0.0]])
    return flat_mesh(v, np.array([[0, 1, 2], [0, 2, 3]]))


class EglCameraRenderer:
    """`CameraRenderer` (uav/sensors/camera.py) of (width, height) images of `scene`: all N
    cameras of a sample in one atlas, one framebuffer read per `render`. `reads` counts them.

        r = EglCameraRenderer(64, 64, scene)
        depth, rgb, seg = r.render(views)   # (N, 64, 64), (N, 64, 64, 3), (N, 64, 64)
    """

    def __init__(self, width: int, height: int, scene: CameraScene) -> None:
        with egl_current() as ctx:
            self._build(ctx, width, height, scene)

    def _build(self, ctx: moderngl.Context, width: int, height: int, scene: CameraScene) -> None:
        self.ctx = ctx
        self.size, self.scene = (width, height), scene
        self.prog = ctx.program(vertex_shader=VS, fragment_shader=FS)
        n = len(scene.ids)
        boxes = _instances(
            _box_models(scene), palette.OBSTACLE, np.ones(len(scene.box_centers)), OBSTACLE
        )
        self._boxes = self._vao(box_mesh(), boxes)
        ground = _instances(np.eye(4)[None], palette.GROUND, np.ones(1), GROUND)
        self._ground = self._vao(_ground_mesh(), ground)
        self._meshes = [  # static triangles in world coordinates: one identity instance each
            self._vao(flat_mesh(v, f), _instances(np.eye(4)[None], _MESH_RGB[c], np.ones(1), c))
            for v, f, c in scene.meshes
        ]
        self._uav_rgb = palette.role_color("uav", 0)
        mesh = role_mesh("uav")
        self._uavs = self._vao(mesh, np.zeros((max(n, 1), 21), np.float32))
        self._uav_radius = float(np.linalg.norm(mesh.vertices, axis=1).max())  # m
        self.cols = max(1, math.ceil(math.sqrt(n)))
        self.rows = max(1, math.ceil(n / self.cols))
        atlas = (self.cols * width, self.rows * height)
        limit = int(ctx.info["GL_MAX_RENDERBUFFER_SIZE"])
        if max(atlas) > limit:
            raise ValueError(f"camera atlas {atlas[0]}x{atlas[1]} px exceeds {limit} px")
        self.fbo = ctx.framebuffer(
            color_attachments=[ctx.renderbuffer(atlas, 4, dtype="f4")],
            depth_attachment=ctx.depth_renderbuffer(atlas),
        )
        self._pixels = bytearray(atlas[0] * atlas[1] * 16)
        self.reads = 0  # framebuffer read-backs so far (one per render)

    def _vao(self, mesh: Mesh, rows: np.ndarray) -> tuple[moderngl.VertexArray, moderngl.Buffer]:
        vbo = self.ctx.buffer(mesh.interleaved.tobytes())
        ibo = self.ctx.buffer(reserve=max(rows.nbytes, 84), dynamic=True)  # never empty
        if len(rows):
            ibo.write(rows.tobytes())
        vao = self.ctx.vertex_array(self.prog, [
            (vbo, "3f 3f", "in_position", "in_normal"),
            (ibo, "16f 4f 1f/i", "in_model", "in_color", "in_seg"),
        ])  # fmt: skip
        return vao, ibo

    def render(self, views: CameraViews) -> CameraImages:
        """Every camera of `views` drawn in its tile, then the atlas read back once (with the
        EGL context current: `egl_current`)."""
        with egl_current():
            return self._render(views)

    def _render(self, views: CameraViews) -> CameraImages:
        ctx, (w, h), n = self.ctx, self.size, len(views.view)
        models = np.zeros((n, 4, 4))
        models[:, :3, :3], models[:, :3, 3], models[:, 3, 3] = views.rotation, views.position, 1
        rows = _instances(models, self._uav_rgb, views.alive, self.scene.ids)
        seen = in_view(views, self._uav_radius)
        rot, t = views.view[:, :3, :3], views.view[:, :3, 3]
        self._eyes = -np.einsum("nji,nj->ni", rot, t)  # (N, 3) camera centres, m
        self.fbo.use()
        self.fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        ctx.enable(moderngl.DEPTH_TEST)
        ctx.disable(moderngl.BLEND | moderngl.CULL_FACE)
        self.prog["u_proj"].write(_gl(views.projection))
        for i in np.flatnonzero(views.alive):
            col, row = i % self.cols, i // self.cols
            ctx.viewport = (int(col * w), int((self.rows - 1 - row) * h), w, h)
            self.prog["u_view"].write(_gl(views.view[i]))
            self._draw(i, views, rows[seen[i]])
        self.fbo.read_into(self._pixels, components=4, dtype="f4", alignment=1)
        self.reads += 1
        return self._images(n)

    def _draw(self, i: int, views: CameraViews, uavs: np.ndarray) -> None:
        """Camera i's tile: boxes, terrain and mesh obstacles, the UAVs it may see (`uavs`:
        their instance rows), the ground under the camera. The UAVs' rows go to fresh storage
        (orphan): a queued draw of an earlier tile still reads the old one."""
        prog = self.prog
        prog["u_shift"].value = (0.0, 0.0, 0.0)
        if len(self.scene.box_centers):
            self._boxes[0].render(moderngl.TRIANGLES, instances=len(self.scene.box_centers))
        for vao, _ in self._meshes:
            vao.render(moderngl.TRIANGLES, instances=1)
        if len(uavs):
            self._uavs[1].orphan()
            self._uavs[1].write(uavs.tobytes())
            self._uavs[0].render(moderngl.TRIANGLES, instances=len(uavs))
        if self.scene.ground:
            x, y, _ = self._eyes[i]
            prog["u_shift"].value = (float(x), float(y), 0.0)
            self._ground[0].render(moderngl.TRIANGLES, instances=1)

    def _images(self, n: int) -> CameraImages:
        """The atlas (bottom row first) cut into N images, top row first, decoded."""
        w, h = self.size
        a = np.frombuffer(self._pixels, dtype=np.float32).reshape(self.rows * h, -1, 4)[::-1]
        tiles = a.reshape(self.rows, h, self.cols, w, 4).transpose(0, 2, 1, 3, 4)
        tiles = tiles.reshape(-1, h, w, 4)[:n]
        hit = tiles[..., 3] > 0.5
        depth = np.where(hit, tiles[..., 0], np.float32(np.inf)).astype(np.float32)
        seg = np.where(hit, np.rint(tiles[..., 1]), NOTHING).astype(np.int32)
        packed = np.rint(tiles[..., 2]).astype(np.int32)
        rgb = np.stack([packed & 255, (packed >> 8) & 255, packed >> 16], axis=-1).astype(np.uint8)
        rgb[~hit] = SKY_RGB
        return CameraImages(depth, rgb, seg)

    def release(self) -> None:
        """Free the GPU objects (the shared context stays)."""
        with egl_current():
            for vao, ibo in (self._boxes, self._ground, self._uavs, *self._meshes):
                vao.release()
                ibo.release()
            self.fbo.release()
            self.prog.release()


def in_view(views: CameraViews, radius_m: float) -> np.ndarray:
    """(N, N) bool: camera i may see agent j (its bounding sphere of `radius_m` meets the view
    frustum; conservative), j alive and not i. Only these are drawn in tile i: a UAV mesh is
    ~2,000 vertices, and llvmpipe's vertex work for every UAV in every tile would dominate."""
    n, p = len(views.view), views.projection
    eye = np.einsum("nij,mj->nmi", views.view[:, :3, :3], views.position)
    eye += views.view[:, None, :3, 3]
    depth = -eye[..., 2]  # (N, N) m along each camera's axis
    near, far = p[2, 3] / (p[2, 2] - 1), p[2, 3] / (p[2, 2] + 1)
    tx, ty = 1 / p[0, 0], 1 / p[1, 1]  # tangents of the half FOVs
    ok = (depth > near - radius_m) & (depth < far + radius_m)
    ok &= np.abs(eye[..., 0]) <= depth * tx + radius_m * np.hypot(1, tx)
    ok &= np.abs(eye[..., 1]) <= depth * ty + radius_m * np.hypot(1, ty)
    ok &= views.alive[None, :]
    ok[np.arange(n), np.arange(n)] = False  # a camera never draws its own UAV
    return ok


def _gl(matrix: np.ndarray) -> bytes:
    """A (4, 4) matrix as OpenGL's column-major float32 bytes."""
    return np.ascontiguousarray(np.asarray(matrix).T, dtype=np.float32).tobytes()


register_camera_renderer("egl", EglCameraRenderer)
