"""The moderngl renderer: ground grid, scenery, instanced agents, overlays, 2D images (text).

Context-agnostic: give it any moderngl context (an EGL standalone context offscreen, or the one
pyglet's window made current) and bind the target framebuffer before `render()`. Agents are drawn
with one instanced draw call per mesh: a per-instance buffer holds the model matrix and colour.
"""

from __future__ import annotations

from collections.abc import Sequence

import moderngl
import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.meshes import Mesh, box_mesh, load_obj, role_lod_mesh, role_mesh
from skyswarm.gui.overlays import Lines, Quads, ground_cross
from skyswarm.gui.scene import Frame, Scenery
from skyswarm.gui.shaders import (
    FLAT_FS,
    FLAT_VS,
    GROUND_FS,
    GROUND_VS,
    IMAGE_FS,
    IMAGE_VS,
    MESH_FS,
    MESH_VS,
    SKY_FS,
    SKY_VS,
)

SKY = (0.62, 0.74, 0.86)
GROUND = (0.40, 0.45, 0.38)
GRID_MINOR = (0.52, 0.57, 0.50, 1.0)
GRID_MAJOR = (0.80, 0.82, 0.76, 1.0)
OBSTACLE = (0.55, 0.52, 0.48, 1.0)
SELECTED = (1.0, 0.9, 0.1, 1.0)
DEAD = (0.25, 0.25, 0.25, 1.0)
DEAD_CROSS = (0.85, 0.1, 0.1, 1.0)
DEAD_CROSS_M = 1.5  # m, half-size of the red X on the ground where an agent died
TRAIL = (0.95, 0.30, 0.75, 0.85)  # trails: magenta, unlike the grey grid and the role colours
ROLE_COLORS = {
    "uav": (0.95, 0.42, 0.08),
    "body": (0.15, 0.40, 0.95),
    "base": (0.10, 0.75, 0.25),
    "base_station": (0.62, 0.18, 0.86),  # mast drawn from assets/base_station.obj
}
LOD_PX = 10.0  # px: agents with a smaller projected radius are drawn as their bounding box
MARKER_PX = 4.0  # px: agents with a smaller projected radius also get a square role-colour dot
MARKER_SIZE_PX = 5.0  # px, edge of that dot: every alive agent covers >= 25 px of its colour
SHADOW_ALPHA = 0.45  # darkening of the ground right under an agent on the ground
SHADOW_FADE_M = 40.0  # m of height over which a shadow fades to a third of SHADOW_ALPHA
FOG_M = 600.0  # m: the ground fades into the horizon colour over this distance
GROUND_HALF_M = 20000.0  # m: the ground plane is this big, enough to look infinite
HORIZON = (0.80, 0.86, 0.92)  # sky colour at the horizon (SKY at the top of the view)
LEADER = (0.0, 0.78, 0.92)  # cyan: the mission's "leader" (Mission.role_members), any role
GHOST = (1.0, 1.0, 1.0, 0.45)  # the selected agent's estimated pose (sensors on): white, faint
GPS_FIX = (1.0, 0.25, 0.55, 1.0)  # its GPS fix (truth + GPS error): a small pink cross
PALETTE = [(0.8, 0.2, 0.8), (0.55, 0.85, 0.2), (0.6, 0.4, 0.2), (0.9, 0.2, 0.3)]


def role_color(role: str, index: int = 0) -> tuple[float, float, float]:
    return ROLE_COLORS.get(role, PALETTE[index % len(PALETTE)])


def model_matrices(positions: np.ndarray, quats: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """(N, 16) float32 column-major model matrices from (N, 3) positions and (N, 4) x,y,z,w."""
    x, y, z, w = (quats[:, i] for i in range(4))
    m = np.zeros((len(positions), 4, 4), dtype=np.float32)
    m[:, 0, 0] = 1 - 2 * (y * y + z * z)
    m[:, 0, 1] = 2 * (x * y - z * w)
    m[:, 0, 2] = 2 * (x * z + y * w)
    m[:, 1, 0] = 2 * (x * y + z * w)
    m[:, 1, 1] = 1 - 2 * (x * x + z * z)
    m[:, 1, 2] = 2 * (y * z - x * w)
    m[:, 2, 0] = 2 * (x * z - y * w)
    m[:, 2, 1] = 2 * (y * z + x * w)
    m[:, 2, 2] = 1 - 2 * (x * x + y * y)
    m[:, :3, :3] *= scale
    m[:, :3, 3] = positions
    m[:, 3, 3] = 1.0
    return m.transpose(0, 2, 1).reshape(-1, 16)


def _gl(matrix: np.ndarray) -> bytes:
    return np.ascontiguousarray(matrix.T, dtype=np.float32).tobytes()


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
            data = np.hstack([matrices, colors]).astype(np.float32)
            self.ibo.write(data.tobytes())  # type: ignore[union-attr]

    def draw(self) -> None:
        if self.count and self.vao is not None:
            self.vao.render(moderngl.TRIANGLES, instances=self.count)


class Renderer:
    """Draws a Frame through a Camera into the bound framebuffer's viewport."""

    def __init__(
        self,
        ctx: moderngl.Context,
        scenery: Scenery,
        center: Sequence[float] = (0.0, 0.0),
        half_extent_m: float = 50.0,
        agent_scale: float = 1.0,
    ) -> None:
        self.ctx = ctx
        self.agent_scale = agent_scale
        self.mesh_prog = ctx.program(vertex_shader=MESH_VS, fragment_shader=MESH_FS)
        self.flat_prog = ctx.program(vertex_shader=FLAT_VS, fragment_shader=FLAT_FS)
        self.image_prog = ctx.program(vertex_shader=IMAGE_VS, fragment_shader=IMAGE_FS)
        self.ground_prog = ctx.program(vertex_shader=GROUND_VS, fragment_shader=GROUND_FS)
        self.sky_prog = ctx.program(vertex_shader=SKY_VS, fragment_shader=SKY_FS)
        for name, value in (
            ("u_ground", GROUND), ("u_minor", GRID_MINOR[:3]), ("u_major", GRID_MAJOR[:3]),
            ("u_horizon", HORIZON), ("u_fog_m", FOG_M),
        ):  # fmt: skip
            self.ground_prog[name].value = value
        self.sky_prog["u_top"].value = SKY
        self.sky_prog["u_horizon"].value = HORIZON
        self.agents: dict[str, InstancedMesh] = {}
        self._static_flat = self._static_geometry(scenery, center, half_extent_m)
        self._obstacles = self._obstacle_meshes(scenery)
        self._dynamic = ctx.buffer(reserve=1 << 16, dynamic=True)
        uv = np.array([0, 0, 1, 0, 0, 1, 1, 1], dtype=np.float32)
        uv_buf = ctx.buffer(uv)
        self._quad_vao = ctx.vertex_array(self.image_prog, [(uv_buf, "2f", "in_uv")])
        self._sky_vao = ctx.vertex_array(self.sky_prog, [(uv_buf, "2f", "in_uv")])
        self._textures: dict[tuple[int, int], moderngl.Texture] = {}
        self._uploaded: dict[tuple[int, int], np.ndarray] = {}  # last image written per texture

    # -- static ---------------------------------------------------------------------------
    def _static_geometry(
        self, scenery: Scenery, center: Sequence[float], half: float
    ) -> moderngl.VertexArray | None:
        """One ground quad GROUND_HALF_M around the scene: the grid is drawn by its shader."""
        if not scenery.ground:
            return None
        cx, cy = (float(c) for c in center[:2])
        h = max(GROUND_HALF_M, 4.0 * half)
        g = np.array(
            [[cx - h, cy - h], [cx + h, cy - h], [cx + h, cy + h],
             [cx - h, cy - h], [cx + h, cy + h], [cx - h, cy + h]]
        )  # fmt: skip
        tris = np.c_[g, np.full(6, -0.002)].astype(np.float32)
        return self.ctx.vertex_array(
            self.ground_prog, [(self.ctx.buffer(tris.tobytes()), "3f", "in_position")]
        )

    def _obstacle_meshes(self, scenery: Scenery) -> list[InstancedMesh]:
        out = []
        if scenery.boxes:
            unit = InstancedMesh(self.ctx, self.mesh_prog, box_mesh())
            mats = []
            for center, size, yaw in scenery.boxes:
                q = np.array([0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])
                m = model_matrices(np.array([center]), q[None], 1.0).reshape(4, 4).T.copy()
                m[:3, :3] = m[:3, :3] @ np.diag(size)
                mats.append(m.T.reshape(16))
            unit.update(np.array(mats), np.tile(OBSTACLE, (len(mats), 1)))
            out.append(unit)
        for path, origin, scale in scenery.meshes:
            inst = InstancedMesh(self.ctx, self.mesh_prog, load_obj(path, scale))
            ident = np.array([[0.0, 0.0, 0.0, 1.0]])
            inst.update(model_matrices(np.array([origin]), ident), np.array([OBSTACLE]))
            out.append(inst)
        return out

    # -- per frame ------------------------------------------------------------------------
    def agent_radii(self, frame: Frame) -> np.ndarray:
        """(N,) bounding radius (m) of each agent's drawn mesh, for picking."""
        radii = np.array([role_mesh(r).radius * self.agent_scale for r in frame.roles] or [0.0])
        return radii[frame.role_index] if len(frame.ids) else np.zeros(0)

    def render(
        self,
        frame: Frame,
        camera: Camera,
        viewport: tuple[int, int, int, int],
        selected: int | None = None,
        trails: Sequence[np.ndarray] = (),
    ) -> None:
        """Clear `viewport` (x, y, w, h; GL origin bottom-left) and draw the scene in it."""
        ctx = self.ctx
        ctx.viewport = viewport
        ctx.scissor = viewport
        ctx.clear(*HORIZON, 1.0, depth=1.0)
        ctx.scissor = None
        camera.aspect = viewport[2] / max(1, viewport[3])
        vp = _gl(camera.matrix)
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self.flat_prog["u_vp"].write(vp)
        self.mesh_prog["u_vp"].write(vp)
        ctx.disable(moderngl.DEPTH_TEST)
        perspective = float(np.asarray(camera.projection)[3, 3]) == 0.0
        y0 = horizon_ndc(camera) if perspective else None
        if y0 is not None and y0 < 1.0:  # the gradient above the horizon only (fill-rate)
            self.sky_prog["u_y0"].value = max(-1.0, y0 - 0.02)
            self._sky_vao.render(moderngl.TRIANGLE_STRIP)
        if self._static_flat is not None:
            # Ground first, without depth: everything else is above it, and overlays lying on
            # the ground plane would z-fight with it at grazing angles.
            self.ground_prog["u_vp"].write(vp)
            self.ground_prog["u_eye"].value = tuple(camera_eye(camera))
            self.ground_prog["u_fog_m"].value = FOG_M if perspective else 1e9  # top: no horizon
            self._static_flat.render(moderngl.TRIANGLES)
        self._draw_shadows(frame)
        ctx.enable(moderngl.DEPTH_TEST)
        for inst in self._obstacles:
            inst.draw()
        self._draw_agents(frame, selected, camera)
        self._draw_lines(frame, selected, trails)
        ctx.disable(moderngl.DEPTH_TEST)

    def _draw_shadows(self, frame: Frame) -> None:
        """A soft dark disc on the ground under each alive agent (a blob shadow: the light is
        straight above), darker and smaller the lower the agent, so height reads at a glance."""
        ok = frame.alive & np.all(np.isfinite(frame.positions), axis=1) & frame.mobile
        if not ok.any():
            return
        pos = frame.positions[ok]
        radii = self.agent_radii(frame)[ok] * 1.1
        h = np.maximum(pos[:, 2], 0.0)
        alpha = SHADOW_ALPHA / (1.0 + 2.0 * h / SHADOW_FADE_M)
        n_seg = 16
        ang = np.linspace(0.0, 2 * np.pi, n_seg + 1)
        ring = np.c_[np.cos(ang), np.sin(ang)]  # (S + 1, 2)
        centre = np.c_[pos[:, :2], np.full(len(pos), 0.01)]
        rim = np.zeros((len(pos), n_seg + 1, 3))
        rim[..., :2] = pos[:, None, :2] + radii[:, None, None] * ring[None]
        rim[..., 2] = 0.01
        tri = np.stack(
            [np.repeat(centre[:, None], n_seg, axis=1), rim[:, :-1], rim[:, 1:]], axis=2
        )  # (N, S, 3, 3)
        col = np.zeros((len(pos), n_seg, 3, 4), dtype=np.float32)
        col[:, :, 0, 3] = alpha[:, None]  # opaque-ish centre, transparent rim: soft edge
        data = np.concatenate([tri.astype(np.float32), col], axis=-1).reshape(-1, 7)
        self._draw_flat([data], moderngl.TRIANGLES)

    def _draw_agents(self, frame: Frame, selected: int | None, camera: Camera) -> None:
        """Per role: one instanced call for the full mesh (agents larger than LOD_PX on screen)
        and one for its 12-triangle bounding box (the far ones); agents smaller than MARKER_PX
        also get a flat square dot of their colour, so no alive agent is ever under a pixel."""
        sel = frame.ids == selected if selected is not None else np.zeros(len(frame.ids), bool)
        px_per_m = projected_scale(camera, frame.positions, self.ctx.viewport[3])
        markers: list[np.ndarray] = []
        for k, role in enumerate(frame.roles):
            mask = frame.role_index == k
            pos, quat = frame.positions[mask], frame.orientations[mask]
            ok = np.all(np.isfinite(pos), axis=1)
            colors = np.tile((*role_color(role, k), 1.0), (len(pos), 1))
            colors[frame.leaders[mask], :3] = LEADER
            colors[~frame.alive[mask]] = DEAD
            colors[sel[mask]] = SELECTED
            alive = frame.alive[mask][ok]
            pos, quat, colors = pos[ok], quat[ok], colors[ok]
            radius_px = role_mesh(role).radius * self.agent_scale * px_per_m[mask][ok]
            near = radius_px >= LOD_PX
            for key, mesh_of, part in (
                (role, role_mesh, near),
                (role + "#lod", role_lod_mesh, ~near),
            ):
                inst = self.agents.get(key)
                if inst is None:
                    inst = self.agents[key] = InstancedMesh(self.ctx, self.mesh_prog, mesh_of(role))
                inst.update(model_matrices(pos[part], quat[part], self.agent_scale), colors[part])
                inst.draw()
            small = (radius_px < MARKER_PX) & alive
            if small.any():
                markers.append(_colored(pos[small], (0, 0, 0, 0)))
                markers[-1][:, 3:] = colors[small]
        if markers:
            self.ctx.point_size = MARKER_SIZE_PX
            self._draw_flat(markers, moderngl.POINTS)
        self._draw_ghost(frame, selected)

    def _draw_ghost(self, frame: Frame, selected: int | None) -> None:
        """The selected agent's estimated position (sensors on): its mesh, translucent white, at
        the estimate with the true attitude, a line from the truth to it, and a cross at its GPS
        fix."""
        i = frame.index_of(selected)
        if i is None or frame.estimates is None or not frame.alive[i]:
            return
        est, truth = frame.estimates[i], frame.positions[i]
        if not (np.all(np.isfinite(est)) and np.all(np.isfinite(truth))):
            return
        role = frame.roles[int(frame.role_index[i])]
        inst = self.agents.get(role + "#ghost")
        if inst is None:
            inst = self.agents[role + "#ghost"] = InstancedMesh(
                self.ctx, self.mesh_prog, role_mesh(role)
            )
        inst.update(
            model_matrices(est[None], frame.orientations[i][None], self.agent_scale),
            np.array([GHOST]),
        )
        self.ctx.depth_mask = False
        inst.draw()
        self.ctx.depth_mask = True
        lines = [_colored(np.array([truth, est]), GHOST[:3] + (0.9,))]
        if frame.gps_fixes is not None and np.all(np.isfinite(frame.gps_fixes[i])):
            r = max(0.1, role_mesh(role).radius * self.agent_scale * 0.5)
            g = frame.gps_fixes[i]
            cross = np.array(
                [
                    g - [r, 0, 0],
                    g + [r, 0, 0],
                    g - [0, r, 0],
                    g + [0, r, 0],
                    g - [0, 0, r],
                    g + [0, 0, r],
                ]
            )
            lines.append(_colored(cross, GPS_FIX))
        self._draw_flat(lines, moderngl.LINES)

    def _draw_lines(self, frame: Frame, selected: int | None, trails: Sequence[np.ndarray]) -> None:
        lines: list[np.ndarray] = []
        tris: list[np.ndarray] = []
        for ov in frame.overlays:
            if isinstance(ov, Lines):
                lines.append(_colored(ov.segments.reshape(-1, 3), ov.color))
            elif isinstance(ov, Quads):
                c = ov.corners
                tri = np.stack([c[:, 0], c[:, 1], c[:, 2], c[:, 0], c[:, 2], c[:, 3]], axis=1)
                tris.append(_colored(tri.reshape(-1, 3), ov.color))
        dead = ~frame.alive & np.all(np.isfinite(frame.positions), axis=1)
        if dead.any():
            cross = ground_cross(frame.positions[dead, :2], DEAD_CROSS_M)
            lines.append(_colored(cross.reshape(-1, 3), DEAD_CROSS))
        for trail in trails:
            if len(trail) > 1:
                seg = np.stack([trail[:-1], trail[1:]], axis=1).reshape(-1, 3)
                lines.append(_colored(seg, TRAIL))
        lines += self._station_drops(frame)
        pose = frame.pose_of(selected)
        if pose is not None and np.all(np.isfinite(pose[0])):
            p = pose[0]
            lines.append(_colored(np.array([p, [p[0], p[1], 0.0]]), SELECTED))
        self._draw_flat(tris, moderngl.TRIANGLES)
        self._draw_flat(lines, moderngl.LINES)

    def _station_drops(self, frame: Frame) -> list[np.ndarray]:
        """A line from each base station down to the ground, whatever its mast's height."""
        if "base_station" not in frame.roles:
            return []
        p = frame.positions[frame.role_index == frame.roles.index("base_station")]
        seg = np.stack([p, p * [1.0, 1.0, 0.0]], axis=1).reshape(-1, 3)
        return [_colored(seg, (*ROLE_COLORS["base_station"], 1.0))]

    def _draw_flat(self, parts: list[np.ndarray], mode: int) -> None:
        if not parts:
            return
        data = np.vstack(parts).astype(np.float32).tobytes()
        if len(data) > self._dynamic.size:
            self._dynamic.orphan(max(len(data), 2 * self._dynamic.size))
        self._dynamic.write(data)
        vao = self.ctx.vertex_array(
            self.flat_prog, [(self._dynamic, "3f 4f", "in_position", "in_color")]
        )
        vao.render(mode, vertices=len(data) // 28)
        vao.release()

    # -- 2D -------------------------------------------------------------------------------
    def draw_image(self, rgba: np.ndarray, x: int, y: int, target: tuple[int, int]) -> None:
        """Blend an (h, w, 4) uint8 image with its top-left at pixel (x, y) from the top-left
        of a `target` (width, height) framebuffer."""
        h, w = rgba.shape[:2]
        tex = self._textures.get((w, h))
        if tex is None:
            tex = self._textures[(w, h)] = self.ctx.texture((w, h), 4)
            tex.filter = moderngl.NEAREST, moderngl.NEAREST
        if self._uploaded.get((w, h)) is not rgba:  # the same image again: already on the GPU
            tex.write(np.ascontiguousarray(rgba, dtype=np.uint8).tobytes())
            self._uploaded[(w, h)] = rgba
        tw, th = target
        self.ctx.viewport = (0, 0, tw, th)
        rect = (2 * x / tw - 1, 1 - 2 * (y + h) / th, 2 * (x + w) / tw - 1, 1 - 2 * y / th)
        self.image_prog["u_rect"].value = rect
        self.ctx.enable(moderngl.BLEND)
        self.ctx.disable(moderngl.DEPTH_TEST)
        tex.use(0)
        self._quad_vao.render(moderngl.TRIANGLE_STRIP)


def legend_entries(frame: Frame) -> list[tuple[str, tuple[float, float, float]]]:
    """(label, RGB) per role in `frame`, "leader" when the mission names one (the other agents of
    its role are then labelled "ROLE (follower)"), and "dead" when an agent is: the legend."""
    leaders = frame.leaders
    out = []
    for k, role in enumerate(frame.roles):
        of_role = frame.role_index == k
        led = bool((leaders & of_role).any())
        if led and not (of_role & ~leaders).any():
            continue  # every agent of the role leads: only the "leader" entry
        out.append((f"{role} (follower)" if led else role, role_color(role, k)))
    if leaders.any():
        out.append(("leader", LEADER))
    if len(frame.alive) and not frame.alive.all():
        out.append(("dead", DEAD[:3]))
    return out


def horizon_ndc(camera: Camera) -> float | None:
    """Lowest NDC height of the horizon across the view (directions at infinity, level, ahead
    and 40 deg either side), or None when the camera looks too steeply down to see it."""
    m = np.asarray(camera.matrix, dtype=float)
    forward = -np.asarray(camera.view, dtype=float)[2, :3]
    level = np.array([forward[0], forward[1], 0.0])
    if np.linalg.norm(level) < 1e-6:
        return None if forward[2] < 0 else -1.0
    level /= np.linalg.norm(level)
    ys = []
    for a in (-0.7, 0.0, 0.7):
        c, s = np.cos(a), np.sin(a)
        d = np.array([c * level[0] - s * level[1], s * level[0] + c * level[1], 0.0, 0.0])
        clip = m @ d
        if clip[3] > 1e-9:
            ys.append(clip[1] / clip[3])
    return float(min(ys)) if ys else None


def camera_eye(camera: Camera) -> np.ndarray:
    """(3,) world position of the camera (for an orthographic camera: a point far above)."""
    inv = np.linalg.inv(np.asarray(camera.view, dtype=float))
    return inv[:3, 3]


def projected_scale(camera: Camera, points: np.ndarray, viewport_h: int) -> np.ndarray:
    """(N,) on-screen pixels per metre of size at each (N, 3) world point.

    From the projection alone (its y focal scale) and each point's clip-space w (its depth in
    front of a perspective camera, 1 for an orthographic one): the estimate does not depend on
    the direction the camera looks in.
    """
    proj, view = np.asarray(camera.projection, float), np.asarray(camera.view, float)
    pts = np.c_[np.asarray(points, float).reshape(-1, 3), np.ones(len(points))]
    w = np.abs(pts @ (proj[3] @ view))
    return np.abs(proj[1, 1]) * (viewport_h / 2) / np.maximum(w, 1e-6)


def _colored(points: np.ndarray, color: Sequence[float]) -> np.ndarray:
    """(N, 7) position + RGBA rows."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    return np.hstack([pts, np.tile(np.asarray(color, dtype=np.float32), (len(pts), 1))])
