"""The moderngl renderer: sky, ground grid, scenery, the agents' pass, overlays, 2D images (text).

Context-agnostic: give it any moderngl context (an EGL standalone context offscreen, or the one
pyglet's window made current) and bind the target framebuffer before `render()`. The agents
are drawn by `gui/drones.py` (one instanced draw call per mesh); colours and sizes live in
`gui/palette.py` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import moderngl
import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.drones import DronePass, colored, projected_scale
from skyswarm.gui.ground import GroundView, ground_view
from skyswarm.gui.instancing import FlatBatches, InstancedMesh, model_matrices
from skyswarm.gui.meshes import box_mesh, load_obj
from skyswarm.gui.overlays import Lines, Quads, ground_cross
from skyswarm.gui.palette import (  # re-exported: the views and tests name them from here
    DEAD,
    DEAD_CROSS,
    DEAD_CROSS_M,
    FOG_M,
    GHOST,
    GPS_FIX,
    GRID_MAJOR,
    GRID_MINOR,
    GROUND,
    GROUND_HALF_M,
    GROUND_OVERLAY_M,
    HORIZON,
    LEADER,
    LOD_PX,
    MARKER_DIAM_PX,
    MARKER_PX,
    MARKER_SIZE_PX,
    OBSTACLE,
    PALETTE,
    ROLE_COLORS,
    SELECTED,
    SKY,
    TRAIL,
    role_color,
)
from skyswarm.gui.scene import Frame, Scenery
from skyswarm.gui.shaders import (
    FLAT_FS,
    FLAT_VS,
    GROUND_FS,
    GROUND_VS,
    IMAGE_FS,
    IMAGE_VS,
    MARKER_FS,
    MESH_FS,
    MESH_VS,
    SKY_FS,
    SKY_VS,
)
from skyswarm.gui.trails import MAX_TRAIL_SEGMENTS, TrailPass, TrailRing

GROUND_Z = -0.002  # m: the ground quad's height, under the overlays lying at 0

# gui/layout.py's Rect (x, y, w, h in pixels from the top-left), not imported: layout imports
# this module
Rect = tuple[int, int, int, int]

__all__ = [
    "DEAD", "GHOST", "GPS_FIX", "GRID_MAJOR", "GRID_MINOR", "LEADER", "LOD_PX", "MARKER_PX",
    "MARKER_SIZE_PX", "PALETTE", "ROLE_COLORS", "SELECTED", "SKY", "TRAIL", "InstancedMesh",
    "MAX_TRAIL_SEGMENTS", "Renderer", "camera_eye", "horizon_ndc", "legend_entries",
    "model_matrices", "projected_scale", "role_color",
]  # fmt: skip


def _gl(matrix: np.ndarray) -> bytes:
    return np.ascontiguousarray(matrix.T, dtype=np.float32).tobytes()


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
        self._ground: tuple[tuple[float, float], float] | None = None  # centre, half side
        self._static_flat = self._static_geometry(scenery, center, half_extent_m)
        # the views' grounds left to the caller by the last drawing with ground_later=True,
        # the view drawn last first (`render_view`)
        self.ground_views: list[GroundView] = []
        self._obstacles = self._obstacle_meshes(scenery)
        self.marker_prog = ctx.program(vertex_shader=FLAT_VS, fragment_shader=MARKER_FS)
        self.flat = FlatBatches(ctx, self.flat_prog)
        self.drones = DronePass(ctx, self.mesh_prog, self.flat, agent_scale, self.marker_prog)
        self.trail_pass = TrailPass(ctx)
        self.markers = True  # drones far away drawn as markers (drones.py); False: meshes only
        self.dead = True  # dead agents where they fell, and their ground crosses
        self.leader = True  # the mission's leader(s) in the LEADER colour (Frame.shown)
        self.occluders: list[tuple[int, int, int, int]] = []  # 2D images drawn since render()
        uv = np.array([0, 0, 1, 0, 0, 1, 1, 1], dtype=np.float32)
        uv_buf = ctx.buffer(uv)
        self._quad_vao = ctx.vertex_array(self.image_prog, [(uv_buf, "2f", "in_uv")])
        self._sky_vao = ctx.vertex_array(self.sky_prog, [(uv_buf, "2f", "in_uv")])
        # Two textures per image size, written in turn: writing the texture the last draw of
        # that size used (still bound) makes llvmpipe rasterise the frame queued so far first,
        # which costs a video frame ~0.8 ms (HUD text, new every frame).
        self._textures: dict[tuple[int, int], tuple[moderngl.Texture, moderngl.Texture]] = {}
        # (slot, image, opaque) last uploaded, by size
        self._uploaded: dict[tuple[int, int], tuple[int, np.ndarray, bool]] = {}

    # -- static ---------------------------------------------------------------------------
    def _static_geometry(
        self, scenery: Scenery, center: Sequence[float], half: float
    ) -> moderngl.VertexArray | None:
        """One ground quad GROUND_HALF_M around the scene: the grid is drawn by its shader."""
        if not scenery.ground:
            return None
        cx, cy = (float(c) for c in center[:2])
        h = max(GROUND_HALF_M, 4.0 * half)
        self._ground = ((cx, cy), h)
        g = np.array(
            [[cx - h, cy - h], [cx + h, cy - h], [cx + h, cy + h],
             [cx - h, cy - h], [cx + h, cy + h], [cx - h, cy + h]]
        )  # fmt: skip
        tris = np.c_[g, np.full(6, GROUND_Z)].astype(np.float32)
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

    @property
    def agents(self) -> dict[str, InstancedMesh]:
        """The agents' instanced meshes by key: role, role + "#lod" (box), role + "#ghost"."""
        return self.drones.meshes

    # -- per frame ------------------------------------------------------------------------
    def agent_radii(self, frame: Frame) -> np.ndarray:
        """(N,) bounding radius (m) of each agent's drawn mesh, for picking."""
        return self.drones.agent_radii(frame)

    def render(
        self,
        frame: Frame,
        camera: Camera,
        viewport: tuple[int, int, int, int],
        selected: int | None = None,
        trails: TrailRing | np.ndarray | None = None,
        marker_px: float = MARKER_DIAM_PX,
        extra: Sequence[np.ndarray] = (),
        clear_all: bool = False,
        covered: Sequence[Rect] = (),
        ground_later: bool = False,
    ) -> None:
        """Clear `viewport` (x, y, w, h; GL origin bottom-left) and draw the scene in it;
        far drones as markers `marker_px` across (with `self.markers`); `trails` (a TrailRing,
        or (N, T, 3) points, oldest first: gui/trails.py) fading in from their oldest point;
        `extra` lines (vertex rows position + RGBA, two per line: e.g. gui/links.py) over the
        agents; the dead and the leader's colour as `self.dead` and `self.leader` say
        (`Frame.shown`).

        `clear_all`: clear the whole framebuffer, for a caller that covers the rest with
        opaque pixels (the window's panel): llvmpipe clears a whole buffer in its bins, a part
        of it by drawing a quad (~2-3 ms at 1280x720).

        `covered`: rects (x, y, w, h, GL pixels) that the caller covers afterwards with opaque
        pixels (the inset map: `render_inset` clears its rect first); the ground and the
        overlays lying on it, the frame's largest fills, are not drawn there (scissored around
        them: the pixels elsewhere are those of the unscissored draw).

        `ground_later`: leave the ground to the caller, which paints it on the CPU under the
        pixels it reads back (gui/ground.py; an offscreen canvas): the viewport is cleared to
        transparent black and `ground_views` says where the ground goes. Through a camera
        that rolls the ground is drawn here as usual, and `ground_views` is empty (as after
        any other render; `render_view` puts its own before those it keeps)."""
        frame = frame.shown(self.dead, self.leader)
        ctx = self.ctx
        self.occluders = []
        camera, later = self._begin(camera, viewport, HORIZON, clear_all, ground_later)
        self.ground_views = [] if later is None else [later]
        vp = _gl(camera.matrix)
        ctx.disable(moderngl.DEPTH_TEST)
        ctx.disable(moderngl.BLEND)  # sky and ground are opaque: blending would read each pixel
        perspective = float(np.asarray(camera.projection)[3, 3]) == 0.0
        y0 = horizon_ndc(camera) if perspective else None
        if y0 is not None and y0 < 1.0:  # the gradient above the horizon only (fill-rate)
            self.sky_prog["u_y0"].value = max(-1.0, y0 - 0.02)
            if later is not None:  # not over the rows of the ground painted later
                x, y, w, h = viewport
                ctx.scissor = (x, y + later.sky_from, w, h - later.sky_from)
            self._sky_vao.render(moderngl.TRIANGLE_STRIP)
            ctx.scissor = None
        shown = uncovered(viewport, covered) if covered else [None]
        if self._static_flat is not None and later is None:
            # Ground first, without depth: everything else is above it, and overlays lying on
            # the ground plane would z-fight with it at grazing angles.
            self.ground_prog["u_vp"].write(vp)
            self.ground_prog["u_fog_m"].value = FOG_M if perspective else 1e9  # top: no horizon
            for rect in shown:
                ctx.scissor = rect
                self._static_flat.render(moderngl.TRIANGLES)
            ctx.scissor = None
        ctx.enable(moderngl.BLEND)
        # the colour blended as always; the alpha accumulated as coverage, so that a pixel over
        # a transparent clear holds the premultiplied colour the ground goes under (ground.py)
        ctx.blend_func = (
            moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA, moderngl.ONE,
            moderngl.ONE_MINUS_SRC_ALPHA,
        )  # fmt: skip
        self.drones.draw_shadows(frame)
        # Overlays lying on the ground, in a scene with no obstacles or terrain, need no depth
        # test: whatever is in front of a ground point is above the ground and drawn later
        # (a depth test over the coverage cells costs a video frame ~0.8 ms on llvmpipe).
        for rect in shown:
            ctx.scissor = rect
            self._draw_overlays(frame.overlays, ground=True)
        ctx.scissor = None
        ctx.enable(moderngl.DEPTH_TEST)
        for inst in self._obstacles:
            inst.draw()
        self.drones.draw_agents(frame, selected, camera, self.markers, marker_px=marker_px)
        self._draw_overlays(frame.overlays, ground=False)
        self._draw_lines(frame, selected, trails, extra)
        ctx.disable(moderngl.DEPTH_TEST)

    def _begin(
        self,
        camera: Camera,
        viewport: tuple[int, int, int, int],
        clear: Sequence[float],
        clear_all: bool = False,
        ground_later: bool = False,
    ) -> tuple[Camera, GroundView | None]:
        """Clear `viewport` (`clear_all`: the whole framebuffer) to `clear` (RGB); the camera
        fixed for it, its matrix uploaded; with `ground_later` and a ground that gui/ground.py
        can paint through this camera, its GroundView, the viewport cleared to transparent
        black instead."""
        ctx = self.ctx
        camera.aspect = viewport[2] / max(1, viewport[3])
        fixed = camera.fixed()
        later = None
        if ground_later and self._ground is not None:
            center, half = self._ground
            later = ground_view(
                fixed.matrix, fixed.projection, viewport, center, half, GROUND_Z
            )  # fmt: skip
        ctx.viewport = viewport
        ctx.scissor = None if clear_all else viewport
        if later is None:
            ctx.clear(*clear, 1.0, depth=1.0)
        else:
            ctx.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
        ctx.scissor = None
        vp = _gl(fixed.matrix)
        progs = (self.flat_prog, self.mesh_prog, self.marker_prog, self.drones.shadows.prog)
        for prog in (*progs, self.trail_pass.prog):
            prog["u_vp"].write(vp)
        return fixed, later

    def render_ids(self, frame: Frame, camera: Camera, viewport: tuple[int, int, int, int]) -> None:
        """The ID buffer of what `render` draws with the same arguments: each agent's pixels in
        its `drones.id_colors` colour, exactly the geometry drawn (mesh, box or marker, depth
        tested against each other and the obstacles), 0 elsewhere (gui/picking.py reads it)."""
        ctx = self.ctx
        camera, _ = self._begin(camera, viewport, (0.0, 0.0, 0.0))
        self.ground_views = []
        ctx.disable(moderngl.BLEND)
        ctx.enable(moderngl.DEPTH_TEST)
        fbo = ctx.fbo
        fbo.color_mask = (False, False, False, False)  # obstacles hide agents, in no colour
        for inst in self._obstacles:
            inst.draw()
        fbo.color_mask = (True, True, True, True)
        self.drones.draw_agents(frame, None, camera, self.markers, ids=True)
        ctx.disable(moderngl.DEPTH_TEST)

    def render_inset(
        self,
        frame: Frame,
        camera: Camera,
        rect: tuple[int, int, int, int],
        target: tuple[int, int],
        marker_px: float | None = None,
        extra: Sequence[np.ndarray] = (),
        ground_later: bool = False,
    ) -> None:
        """A second view (the inset map: gui/layout.py; a picture-in-picture: gui/multiview.py)
        in `rect` (x, y, w, h from the top-left of the `target` (width, height) framebuffer),
        markers `marker_px` across (None: INSET_MARKER_PX), and a frame around it; it counts
        as an occluder of the main view (`occluders`). `ground_later`: as `render_view`'s.

        The frame is drawn as its four sides: an image of the whole rect, transparent inside,
        blended every pixel of the view again (~47,000 at 720p) to leave it as it was."""
        x, y, w, h = rect
        self.render_view(
            frame, camera, rect, target, marker_px or INSET_MARKER_PX, extra, ground_later
        )  # fmt: skip
        kept = len(self.occluders)
        for image, dx, dy in _border_sides(w, h):
            self.draw_image(image, x + dx, y + dy, target)
        self.occluders[kept:] = [rect]

    def render_view(
        self,
        frame: Frame,
        camera: Camera,
        rect: tuple[int, int, int, int],
        target: tuple[int, int],
        marker_px: float = MARKER_DIAM_PX,
        extra: Sequence[np.ndarray] = (),
        ground_later: bool = False,
    ) -> None:
        """The scene through `camera` in `rect` (x, y, w, h from the top-left of `target`),
        with `extra` lines, without touching `occluders` (the side-by-side view of
        gui/multiview.py); its own ground drawn here, opaque over the main view's, or with
        `ground_later` (an offscreen canvas) left to the caller as the main view's is: its
        GroundView goes before those kept in `ground_views`, so that it is painted first
        and the pixels it makes opaque keep it (the inset map's top view: 0.19 ms of CPU a
        video frame less than llvmpipe's shading)."""
        x, y, w, h = rect
        kept, ground = self.occluders, self.ground_views
        viewport = (x, target[1] - y - h, w, h)
        self.render(
            frame, camera, viewport, marker_px=marker_px, extra=extra, ground_later=ground_later
        )  # fmt: skip
        self.occluders, self.ground_views = kept, [*self.ground_views, *ground]

    def _draw_lines(
        self,
        frame: Frame,
        selected: int | None,
        trails: TrailRing | np.ndarray | None,
        extra: Sequence[np.ndarray] = (),
    ) -> None:
        """In this order: the `extra` lines, the crosses of the dead, the trails (kept on the
        GPU: `TrailPass`), base-station drops and the selection's drop."""
        lines: list[np.ndarray] = list(extra)
        dead = ~frame.alive & np.all(np.isfinite(frame.positions), axis=1)
        if dead.any():
            cross = ground_cross(frame.positions[dead, :2], DEAD_CROSS_M)
            lines.append(colored(cross.reshape(-1, 3), DEAD_CROSS))
        self.flat.draw("lines", lines, moderngl.LINES)
        if isinstance(trails, np.ndarray):
            trails = TrailRing.of_points(trails) if trails.ndim == 3 and trails.shape[1] else None
        if trails is not None:
            self.trail_pass.draw(trails)
        lines = self._station_drops(frame)
        pose = frame.pose_of(selected)
        if pose is not None and np.all(np.isfinite(pose[0])):
            p = pose[0]
            lines.append(colored(np.array([p, [p[0], p[1], 0.0]]), SELECTED))
        self.flat.draw("lines_after", lines, moderngl.LINES)

    def _draw_overlays(self, overlays: list[Lines | Quads], ground: bool) -> None:
        """Quads then lines of the mission overlays that lie on the ground (`ground`: every
        vertex within GROUND_OVERLAY_M of it, in a scene without obstacles) or of the others.
        The vertices are built and uploaded only when `overlays` is not the list object drawn
        last (a video's render process keeps the list while the mission's do not change)."""
        names = ("ground_tris", "ground_lines") if ground else ("overlay_tris", "overlay_lines")
        if self.flat.is_current(names[0], overlays):
            self.flat.draw(names[0], [], moderngl.TRIANGLES, key=overlays)
            self.flat.draw(names[1], [], moderngl.LINES, key=overlays)
            return
        lines: list[np.ndarray] = []
        tris: list[np.ndarray] = []
        for ov in overlays:
            if self._on_ground(ov) != ground:
                continue
            if isinstance(ov, Lines):
                lines.append(colored(ov.segments.reshape(-1, 3), ov.color))
            elif isinstance(ov, Quads):
                c = ov.corners
                tri = np.stack([c[:, 0], c[:, 1], c[:, 2], c[:, 0], c[:, 2], c[:, 3]], axis=1)
                tris.append(colored(tri.reshape(-1, 3), ov.color))
        self.flat.draw(names[0], tris, moderngl.TRIANGLES, key=overlays)
        self.flat.draw(names[1], lines, moderngl.LINES, key=overlays)

    def _on_ground(self, overlay: Lines | Quads) -> bool:
        if self._obstacles:
            return False
        points = overlay.segments if isinstance(overlay, Lines) else overlay.corners
        return not len(points) or bool(np.abs(points[..., 2]).max() <= GROUND_OVERLAY_M)

    def _station_drops(self, frame: Frame) -> list[np.ndarray]:
        """A line from each base station down to the ground, whatever its mast's height."""
        if "base_station" not in frame.roles:
            return []
        p = frame.positions[frame.role_index == frame.roles.index("base_station")]
        seg = np.stack([p, p * [1.0, 1.0, 0.0]], axis=1).reshape(-1, 3)
        return [colored(seg, (*ROLE_COLORS["base_station"], 1.0))]

    # -- 2D -------------------------------------------------------------------------------
    def draw_image(self, rgba: np.ndarray, x: int, y: int, target: tuple[int, int]) -> None:
        """Blend an (h, w, 4) uint8 image with its top-left at pixel (x, y) from the top-left
        of a `target` (width, height) framebuffer."""
        h, w = rgba.shape[:2]
        pair = self._textures.get((w, h))
        if pair is None:
            pair = self._textures[(w, h)] = (
                self.ctx.texture((w, h), 4),
                self.ctx.texture((w, h), 4),
            )
            for t in pair:
                t.filter = moderngl.NEAREST, moderngl.NEAREST
        slot, last, opaque = self._uploaded.get((w, h), (1, None, False))
        if last is not rgba:  # the same image again: already on the GPU
            slot = 1 - slot
            pixels = np.ascontiguousarray(rgba, dtype=np.uint8)
            pair[slot].write(pixels.tobytes())
            opaque = bool(pixels[..., 3].min() == 255)
            self._uploaded[(w, h)] = (slot, rgba, opaque)
        tex = pair[slot]
        tw, th = target
        self.occluders.append((x, y, w, h))
        self.ctx.viewport = (0, 0, tw, th)
        rect = (2 * x / tw - 1, 1 - 2 * (y + h) / th, 2 * (x + w) / tw - 1, 1 - 2 * y / th)
        self.image_prog["u_rect"].value = rect
        # An opaque image (the panel: a quarter of the window) is copied, not blended: the
        # same pixels, without llvmpipe reading each one under it.
        (self.ctx.disable if opaque else self.ctx.enable)(moderngl.BLEND)
        self.ctx.disable(moderngl.DEPTH_TEST)
        tex.use(0)
        self._quad_vao.render(moderngl.TRIANGLE_STRIP)


def uncovered(viewport: Rect, covered: Sequence[Rect]) -> list[Rect]:
    """Rects (x, y, w, h) that tile the part of `viewport` outside every `covered` rect (all
    in the same pixel coordinates): the scissors of `Renderer.render`'s large fills."""
    parts = [viewport]
    for cx, cy, cw, ch in covered:
        out = []
        for x, y, w, h in parts:
            x0, y0 = max(x, cx), max(y, cy)
            x1, y1 = min(x + w, cx + cw), min(y + h, cy + ch)
            if x0 >= x1 or y0 >= y1:
                out.append((x, y, w, h))
                continue
            pieces = [
                (x, y, x0 - x, h),  # left of the covered rect, full height
                (x1, y, x + w - x1, h),  # right of it
                (x0, y, x1 - x0, y0 - y),  # below it, between the two
                (x0, y1, x1 - x0, y + h - y1),  # above it
            ]
            out += [p for p in pieces if p[2] > 0 and p[3] > 0]
        parts = out
    return parts


INSET_MARKER_PX = 6.0  # px across: drones on the inset map
INSET_BORDER = (20, 24, 32, 230)  # RGBA of the inset map's frame


@lru_cache(maxsize=16)
def _border_sides(w: int, h: int, px: int = 2) -> tuple[tuple[np.ndarray, int, int], ...]:
    """(image, x, y) of each side of a frame `px` wide around a (w, h) rect: top, bottom
    (full width), left, right (between them); the same image objects for the same size (an
    image drawn again is not uploaded again: Renderer.draw_image)."""

    def side(width: int, height: int) -> np.ndarray:
        return np.full((height, width, 4), INSET_BORDER, dtype=np.uint8)

    across, down = side(w, min(px, h)), side(min(px, w), max(0, h - 2 * px))
    sides = [(across, 0, 0), (across, 0, h - px), (down, 0, px), (down, w - px, px)]
    return tuple((img, dx, dy) for img, dx, dy in sides if img.size)


HIGHLIGHT_LABEL = "leader"  # the highlighted role's legend label when the frame names none


def legend_entries(frame: Frame) -> list[tuple[str, tuple[float, float, float]]]:
    """(label, RGB) per role in `frame`; the highlighted role (`Frame.highlight`, the mission's
    `highlight_role`; "leader" when unnamed) in the LEADER colour, only while an agent holds it
    (the other agents of a role holding it are then "ROLE (follower)" for "leader", else
    "ROLE"); and "dead" when an agent is: the legend."""
    leaders = frame.leaders
    name = frame.highlight or HIGHLIGHT_LABEL
    out = []
    for k, role in enumerate(frame.roles):
        of_role = frame.role_index == k
        led = bool((leaders & of_role).any())
        if led and not (of_role & ~leaders).any():
            continue  # every agent of the role is highlighted: only the highlight's entry
        label = f"{role} (follower)" if led and name == "leader" else role
        out.append((label, role_color(role, k)))
    if leaders.any():
        out.append((name, LEADER))
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
