"""The agents' pass of the renderer: blob shadows, instanced meshes with a level of detail,
minimum-size markers, and the selected agent's estimate ghost.

Sizes on screen come from the projection alone (`projected_scale`), so what an agent is drawn
as does not depend on the direction the camera looks in.
"""

from __future__ import annotations

from functools import lru_cache

import moderngl
import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.instancing import FlatBatches, InstancedMesh, model_matrices
from skyswarm.gui.meshes import role_lod_mesh, role_mesh
from skyswarm.gui.palette import (
    DEAD,
    GHOST,
    GPS_FIX,
    LEADER,
    LOD_PX,
    MARKER_DIAM_PX,
    MARKER_PX,
    MARKER_SIZE_PX,
    MARKER_UNTIL_PX,
    SELECTED,
    SHADOW_ALPHA,
    SHADOW_FADE_M,
    role_color,
)
from skyswarm.gui.scene import Frame
from skyswarm.gui.shaders import SHADOW_FS, SHADOW_VS


class DronePass:
    """Draws a Frame's agents with `mesh_prog` (instanced meshes) and `flat` (shadows, dots)."""

    def __init__(
        self,
        ctx: moderngl.Context,
        mesh_prog: moderngl.Program,
        flat: FlatBatches,
        agent_scale: float = 1.0,
        marker_prog: moderngl.Program | None = None,
    ) -> None:
        self.ctx, self.mesh_prog, self.flat = ctx, mesh_prog, flat
        self.marker_prog = marker_prog or flat.prog
        self.marker_batch = FlatBatches(ctx, self.marker_prog)
        self.agent_scale = agent_scale
        self.meshes: dict[str, InstancedMesh] = {}
        self.shadows = ShadowDiscs(ctx)
        self._shadow_of: tuple[np.ndarray, np.ndarray] | None = None  # (positions, radii) drawn

    def agent_radii(self, frame: Frame) -> np.ndarray:
        """(N,) bounding radius (m) of each agent's drawn mesh, for picking."""
        radii = np.array([role_radius(r) * self.agent_scale for r in frame.roles] or [0.0])
        return radii[frame.role_index] if len(frame.ids) else np.zeros(0)

    def draw_shadows(self, frame: Frame) -> None:
        """A soft dark disc on the ground under each alive agent (a blob shadow: the light is
        straight above), darker and smaller the lower the agent, so height reads at a glance:
        alpha SHADOW_ALPHA / (1 + 2 z / SHADOW_FADE_M) at its centre, 0 at its rim.

        One instanced call (`ShadowDiscs`); the discs are uploaded only when the agents'
        positions or sizes differ from the last ones drawn: the inset map draws the frame of
        the main view again."""
        ok = frame.alive & np.all(np.isfinite(frame.positions), axis=1) & frame.mobile
        if not ok.any():
            return
        pos = frame.positions[ok]
        radii = self.agent_radii(frame)[ok] * 1.1
        last = self._shadow_of
        if last is None or not (np.array_equal(last[0], pos) and np.array_equal(last[1], radii)):
            alpha = SHADOW_ALPHA / (1.0 + 2.0 * np.maximum(pos[:, 2], 0.0) / SHADOW_FADE_M)
            self.shadows.update(np.c_[pos[:, :2], radii, alpha])
            self._shadow_of = (pos, radii)
        self.shadows.draw()

    def draw_agents(
        self,
        frame: Frame,
        selected: int | None,
        camera: Camera,
        markers: bool = True,
        ids: bool = False,
        marker_px: float = MARKER_DIAM_PX,
    ) -> None:
        """Per role: one instanced call for the full mesh (agents larger than LOD_PX on screen)
        and one for its 12-triangle bounding box (the far ones).

        `markers` (the default): agents whose mesh would have a projected radius under
        MARKER_UNTIL_PX are drawn as a round marker `marker_px` across in their colour instead
        (role, leader, dead, selected). Off: the meshes at every size, and agents under
        MARKER_PX also get a MARKER_SIZE_PX square dot. `ids`: every agent in its ID colour
        (`id_colors`), unshaded, no estimate ghost: the ID buffer of gui/picking.py.

        An agent whose mesh's bounding sphere holds the camera's eye is not drawn: the camera
        rides inside it (FPV from its camera mount), and its own arms and rotors would be
        blobs across the picture (`inside_agents`)."""
        px_per_m = projected_scale(camera, frame.positions, self.ctx.viewport[3])
        inside = inside_agents(camera, frame.positions, self.agent_radii(frame))
        colors_all = id_colors(len(frame.ids)) if ids else agent_colors(frame, selected)
        self.mesh_prog["u_ids"].value = 1.0 if ids else 0.0
        dots: list[np.ndarray] = []
        for k, role in enumerate(frame.roles):
            mask = frame.role_index == k
            pos, quat = frame.positions[mask], frame.orientations[mask]
            ok = np.all(np.isfinite(pos), axis=1) & ~inside[mask]
            alive = frame.alive[mask][ok]
            pos, quat, colors = pos[ok], quat[ok], colors_all[mask][ok]
            radius_px = role_radius(role) * self.agent_scale * px_per_m[mask][ok]
            dot = (radius_px < MARKER_UNTIL_PX) if markers else (radius_px < MARKER_PX) & alive
            drawn = ~dot if markers else np.ones(len(pos), dtype=bool)
            near = radius_px >= LOD_PX
            for key, mesh_of, part in (
                (role, role_mesh, near & drawn),
                (role + "#lod", role_lod_mesh, ~near & drawn),
            ):
                inst = self.meshes.get(key)
                if inst is None:
                    inst = self.meshes[key] = InstancedMesh(self.ctx, self.mesh_prog, mesh_of(role))
                inst.update(model_matrices(pos[part], quat[part], self.agent_scale), colors[part])
                inst.draw()
            if dot.any():
                dots.append(np.hstack([pos[dot], colors[dot]]))
        self.mesh_prog["u_ids"].value = 0.0
        if dots:
            self.ctx.point_size = marker_px if markers else MARKER_SIZE_PX
            if markers:
                self.marker_prog["u_ids"].value = 1.0 if ids else 0.0
                self.marker_batch.draw("markers", dots, moderngl.POINTS)
            else:
                self.flat.draw("dots", dots, moderngl.POINTS)
        if not ids:
            self.draw_ghost(frame, selected)

    def draw_ghost(self, frame: Frame, selected: int | None) -> None:
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
        inst = self.meshes.get(role + "#ghost")
        if inst is None:
            inst = self.meshes[role + "#ghost"] = InstancedMesh(
                self.ctx, self.mesh_prog, role_mesh(role)
            )
        inst.update(
            model_matrices(est[None], frame.orientations[i][None], self.agent_scale),
            np.array([GHOST]),
        )
        self.ctx.depth_mask = False
        inst.draw()
        self.ctx.depth_mask = True
        lines = [colored(np.array([truth, est]), GHOST[:3] + (0.9,))]
        if frame.gps_fixes is not None and np.all(np.isfinite(frame.gps_fixes[i])):
            r = max(0.1, role_radius(role) * self.agent_scale * 0.5)
            axes = np.repeat(np.eye(3) * r, 2, axis=0) * np.tile([[-1.0], [1.0]], (3, 1))
            lines.append(colored(frame.gps_fixes[i] + axes, GPS_FIX))
        self.flat.draw("ghost", lines, moderngl.LINES)


class ShadowDiscs:
    """Blob shadows as one instanced draw of a ground quad per disc, the soft round edge drawn
    by the fragment shader (gui/shaders.py SHADOW_FS): 4 vertices a disc instead of a
    16-triangle fan's 48, which llvmpipe (offscreen video, windows under Xvfb) shaded, set up
    and binned one by one; the pixels are those of the fan within 2 % of the centre's alpha
    (the fan's rim is a 16-gon)."""

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=SHADOW_VS, fragment_shader=SHADOW_FS)
        corners = np.array([-1, -1, 1, -1, -1, 1, 1, 1], dtype=np.float32)
        self._corners = ctx.buffer(corners)
        self._discs: moderngl.Buffer | None = None
        self._vao: moderngl.VertexArray | None = None
        self.count = 0

    def update(self, discs: np.ndarray) -> None:
        """(N, 4) discs: centre x, y (m), radius (m), alpha at the centre."""
        data = np.ascontiguousarray(discs, dtype=np.float32)
        if self._discs is None or self._discs.size < data.nbytes:
            if self._discs is not None:
                self._vao.release()  # type: ignore[union-attr]
                self._discs.release()
            self._discs = self.ctx.buffer(reserve=max(data.nbytes, 1 << 12), dynamic=True)
            self._vao = self.ctx.vertex_array(
                self.prog,
                [(self._corners, "2f", "in_corner"), (self._discs, "4f/i", "in_disc")],
            )
        else:
            self._discs.orphan()  # a queued draw may still read the last discs
        self._discs.write(data)
        self.count = len(data)

    def draw(self) -> None:
        if self.count and self._vao is not None:
            self._vao.render(moderngl.TRIANGLE_STRIP, instances=self.count)


@lru_cache(maxsize=32)
def role_radius(role: str) -> float:
    """Bounding radius (m) of `role`'s mesh at scale 1 (`Mesh.radius`, a norm over its
    vertices: computed once, not three times a view per frame)."""
    return role_mesh(role).radius


def agent_colors(frame: Frame, selected: int | None) -> np.ndarray:
    """(N, 4) RGBA of each agent: its role colour, LEADER, DEAD or SELECTED (in that order)."""
    colors = np.ones((len(frame.ids), 4))
    for k, role in enumerate(frame.roles):
        colors[frame.role_index == k, :3] = role_color(role, k)
    colors[frame.leaders, :3] = LEADER
    colors[~frame.alive] = DEAD
    if selected is not None:
        colors[frame.ids == selected] = SELECTED
    return colors


def id_colors(n: int) -> np.ndarray:
    """(n, 4) colours encoding agent index i as the 24-bit number i + 1 in R, G, B (exact in
    an 8-bit framebuffer; 0 is "no agent"); `gui.picking.decode_ids` reads them back."""
    code = np.arange(1, n + 1)
    rgb = np.c_[code & 255, (code >> 8) & 255, (code >> 16) & 255] / 255.0
    return np.c_[rgb, np.ones(n)]


def inside_agents(camera: Camera, positions: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """(N,) bool: the camera's eye is within `radii` (N,) m of the agent at `positions` (N, 3),
    m. An orthographic camera's eye is a point far above the scene: inside none."""
    view = np.asarray(camera.view, dtype=float)
    if float(np.asarray(camera.projection)[3, 3]) != 0.0:  # orthographic
        return np.zeros(len(positions), dtype=bool)
    eye = np.linalg.inv(view)[:3, 3]
    gap = np.linalg.norm(np.asarray(positions, dtype=float).reshape(-1, 3) - eye, axis=1)
    return gap < np.asarray(radii, dtype=float)


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


def colored(points: np.ndarray, color: tuple[float, ...]) -> np.ndarray:
    """(N, 7) float32 position + RGBA rows."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    out = np.empty((len(pts), 7), dtype=np.float32)
    out[:, :3], out[:, 3:] = pts, color
    return out
