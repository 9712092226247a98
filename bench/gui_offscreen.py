"""Offscreen rendering speed: frames per second at 1280x720 for 100, 500 and 1,000 drones.

Each frame is what `run --video` does per frame: upload the instance buffer (model matrix +
colour per drone), draw the grid and all drones (one instanced draw call), read the pixels back.
Drones fly in a grid at 10 m with random attitudes; the mesh is the uav role's
(assets/quadrotor.obj, or the fallback box when that file is absent).

    python bench/gui_offscreen.py            # table on stdout, JSON in bench/results/
    python bench/gui_offscreen.py --layers RUN [STEP]
        # where a video frame's CPU goes: the recorded run RUN (`skyswarm run ... --out RUN`)
        # drawn as `run --video` draws it (follow camera, inset map, HUD; every STEP-th frame,
        # default 10), and again with one part left out at a time, alternated in chunks of 10
        # frames in one process: CPU ms a frame of the process (llvmpipe's rasteriser threads
        # included) and of the drawing thread (Python and the driver's front end); every
        # variant's canvas on one context (each on its own, they drew with the last one made)
    python bench/gui_offscreen.py --ground RUN [STEP]
        # the ground drawn other ways through the same cameras (every STEP-th frame, default
        # 20): the clear, the sky, the ground (GROUND_VARIANTS) and the read-back, CPU ms a
        # frame, alternated in chunks of 10 frames; the grid as a mipmapped texture or as GL
        # lines costs more on llvmpipe than the procedural grid (docs/gui.md)
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.gui.meshes import ASSETS_DIR, ROLE_ASSETS, role_mesh
from skyswarm.gui.offscreen import OffscreenCanvas, default_camera, scene_extent
from skyswarm.gui.scene import Frame, Scenery

SIZE = (1280, 720)
COUNTS = (100, 500, 1000)
FRAMES = 60
TARGET_FPS = 30.0


def swarm(n: int, rng: np.random.Generator) -> Frame:
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    pos = np.c_[(i % side) * 2.0, (i // side) * 2.0, 10.0 + rng.uniform(-1, 1, n)]
    q = rng.normal(size=(n, 4)) * [0.05, 0.05, 1.0, 1.0]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return Frame(0.0, i.astype(np.int64), ["uav"], np.zeros(n, np.intp), pos, q, np.ones(n, bool))


def bench(n: int) -> dict[str, float]:
    rng = np.random.default_rng(n)
    frame = swarm(n, rng)
    center, half = scene_extent(frame.positions)
    canvas = OffscreenCanvas(Scenery(), SIZE, tuple(center), half)
    cam = default_camera("orbit", frame.positions)
    canvas.render(frame, cam)  # warm-up: shader compile, buffer allocation
    start = time.perf_counter()
    for _ in range(FRAMES):
        frame.positions[:, 2] += 0.01  # the swarm moves: new instance data every frame
        cam.azimuth_deg += 0.5  # type: ignore[attr-defined]
        canvas.render(frame, cam)
    elapsed = time.perf_counter() - start
    canvas.release()
    return {"drones": n, "fps": FRAMES / elapsed, "ms_per_frame": 1000 * elapsed / FRAMES}


# What each --layers variant leaves out of the video's picture (the first draws all of it).
LAYER_VARIANTS = {
    "full": "nothing: the video's picture, read back as the render process reads it",
    "no ground": "the ground and its grid (main view and inset)",
    "no sky": "the sky gradient",
    "no shadows": "the drones' blob shadows",
    "no agents": "the drones (meshes and markers)",
    "no lines": "the lines over the agents (dead crosses, drops)",
    "no overlays": "the mission's overlays (coverage quads, area lines)",
    "no inset": "the inset map",
    "no HUD": "the HUD and the legend",
    "no 2D images": "every image (HUD, legend, the inset's frame)",
    "clear only": "the clear and the read-back alone",
}


def video_cameras(run: Path, step: int) -> tuple[Any, tuple[float, ...], float, list]:
    """The recorded `run` (a ReplaySource), its scene's centre and half extent, and every
    `step`-th (frame, camera) of its video: the follow camera moved at every frame, as
    `run --video` moves it."""
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.framing import shown_points
    from skyswarm.gui.multiview import LayoutSpec, MultiView
    from skyswarm.gui.replay import ReplaySource

    src = ReplaySource(run)
    first = src.frame_at(0.0)
    center, half = scene_extent(shown_points(first))
    views = MultiView(LayoutSpec(), CameraSpec("swarm"), SIZE, first)
    items = []
    for k in range(1, int(np.floor(src.duration_s * 30 + 1e-6)) + 1):
        frame = src.frame_at(k / 30)
        cam, _ = views.update(frame)
        if k % step == 0:
            items.append((frame, cam.fixed()))
    return src, tuple(center), half, items


def layer_costs(run: Path, step: int = 10, chunk: int = 10) -> dict[str, dict[str, float]]:
    """CPU ms a frame of the video's picture of the recorded `run`, whole and without each
    part (LAYER_VARIANTS), each variant on its own canvas, alternated every `chunk` frames."""
    from dataclasses import replace

    from skyswarm.gui.offscreen import standalone_context

    src, center, half, items = video_cameras(run, step)
    pixels = bytearray(SIZE[0] * SIZE[1] * 4)
    # One context for every canvas: a standalone context is made current when it is created,
    # and moderngl does not switch to an object's context when it is used, so canvases on
    # contexts of their own would all draw with the last one made (objects of the same names).
    ctx = standalone_context()
    canvases = {
        v: OffscreenCanvas(src.scenery, SIZE, tuple(center), half, ctx=ctx) for v in LAYER_VARIANTS
    }

    class Skip:
        def render(self, *args: object, **kwargs: object) -> None:
            pass

    for v, c in canvases.items():
        r = c.renderer
        skip = lambda *args, **kwargs: None  # noqa: E731
        if v == "no ground":  # neither drawn (a rolling camera) nor painted (gui/ground.py)
            r._static_flat = r._ground = None
        elif v == "no sky":
            r._sky_vao = Skip()
        elif v == "no shadows":
            r.drones.draw_shadows = skip
        elif v == "no agents":
            r.drones.draw_agents = skip
        elif v == "no lines":
            r._draw_lines = skip
        elif v == "no 2D images":
            r.draw_image = skip

    def draw(v: str, frame: Frame, cam: object) -> None:
        c = canvases[v]
        if v == "clear only":
            c.fbo.use()
            c.ctx.clear(0.0, 0.0, 0.0, 1.0)
        else:
            frame = replace(frame, overlays=[]) if v == "no overlays" else frame
            c.compose(frame, cam, v != "no HUD", v != "no inset")  # type: ignore[arg-type]
        c.read_rgba_into(pixels)

    for v in canvases:  # warm-up: shaders, buffers, text
        for frame, cam in items[:3]:
            draw(v, frame, cam)
    spent = {v: np.zeros(2) for v in canvases}
    for start in range(0, len(items), chunk):
        for v in canvases:
            t0 = np.array([time.process_time(), time.thread_time()])
            for frame, cam in items[start : start + chunk]:
                draw(v, frame, cam)
            spent[v] += np.array([time.process_time(), time.thread_time()]) - t0
    for c in canvases.values():
        c.release()
    ctx.release()
    n = len(items)
    return {
        v: {"cpu_ms": 1000 * s[0] / n, "main_ms": 1000 * s[1] / n, "frames": n}
        for v, s in spent.items()
    }


def main_layers(run: Path, step: int) -> None:
    import os

    rows = layer_costs(run, step)
    full = rows["full"]["cpu_ms"]
    print(
        f"video picture of {run} at {SIZE[0]}x{SIZE[1]}, {rows['full']['frames']} frames"
        f" (every {step}th); load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'left out':<14}{'CPU ms':>8}{'drawing thread':>16}{'part, CPU ms':>14}")
    for v, r in rows.items():
        part = full - r["cpu_ms"] if v != "full" else 0.0
        print(f"{v:<14}{r['cpu_ms']:>8.2f}{r['main_ms']:>16.2f}{part:>14.2f}")
    path = Path(__file__).resolve().parent / "results" / "gui_offscreen_layers.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"run": str(run), "step": step, "rows": rows}, indent=1))
    print(f"wrote {path}")


# --ground: the ground of the video's picture drawn other ways (clear, sky, ground, read-back).
GROUND_VARIANTS = {
    "procedural": "GROUND_FS as the renderer draws it: 1 m / 10 m lines and fog per pixel",
    "fog only": "GROUND_FS without the grid: the ground colour fogged per pixel",
    "flat": "one colour, no fog, no grid",
    "texture trilinear": "the grid from a mipmapped 10 m texture (each level drawn at its scale, "
    "1280 px at level 0), LINEAR_MIPMAP_LINEAR, fog per pixel",
    "texture bilinear": "that texture's level 0 alone, LINEAR (no mipmaps: aliases far away), "
    "no fog",
    "GL lines": "the ground fogged per pixel, and the grid as GL lines (1 px, 2 px) out to where "
    "each level fades, faded and fogged per fragment",
}
_TEX_VS = """
#version 330
uniform mat4 u_vp;
in vec3 in_position;
out vec2 v_uv;
void main() { gl_Position = u_vp * vec4(in_position, 1.0); v_uv = in_position.xy * 0.1; }
"""
_FOG = "1.0 - exp2(-1.442695 / (gl_FragCoord.w * u_fog_m))"
_TEX_FS = """
#version 330
uniform sampler2D u_grid;
uniform vec3 u_horizon;
uniform float u_fog_m;
in vec2 v_uv;
out vec4 f_color;
void main() { f_color = vec4(mix(texture(u_grid, v_uv).rgb, u_horizon, FOG), 1.0); }
""".replace("FOG", _FOG)
_PLAIN_FS = """
#version 330
uniform sampler2D u_grid;
in vec2 v_uv;
out vec4 f_color;
void main() { f_color = texture(u_grid, v_uv); }
"""
_COLOR_FS = """
#version 330
uniform vec3 u_ground;
uniform vec3 u_horizon;
uniform float u_fog_m;
out vec4 f_color;
void main() { f_color = vec4(mix(u_ground, u_horizon, FOG_ON * (FOG)), 1.0); }
""".replace("FOG)", _FOG + ")")
_LINE_VS = """
#version 330
uniform mat4 u_vp;
in vec3 in_position;
out vec3 v_world;
void main() { gl_Position = u_vp * vec4(in_position, 1.0); v_world = in_position; }
"""
# a pixel spans ~D^2 px_rad / h m of ground at distance D from an eye h above it
_LINE_FS = """
#version 330
uniform vec3 u_eye;
uniform float u_px_rad;
uniform vec2 u_fade;
uniform vec3 u_color;
uniform vec3 u_horizon;
uniform float u_fog_m;
in vec3 v_world;
out vec4 f_color;
void main() {
    vec3 d = v_world - u_eye;
    float a = 1.0 - smoothstep(u_fade.x, u_fade.y, dot(d, d) * u_px_rad / max(u_eye.z, 0.05));
    if (a <= 0.0) discard;
    f_color = vec4(mix(u_color, u_horizon, FOG), a);
}
""".replace("FOG", _FOG)


def grid_levels(n0: int = 1280) -> list[np.ndarray]:
    """(n, n, 4) uint8 mip levels of a 10 m grid tile, each drawn at its own scale as
    GROUND_FS draws the grid where a pixel spans a texel: lines 1 texel (minor) and 1.5 texels
    (major) wide, faded out by the texel's size in m with GROUND_FS's thresholds."""
    from skyswarm.gui.palette import GRID_MAJOR, GRID_MINOR, GROUND

    def smooth(e0: float, e1: float, x: float) -> float:
        t = min(max((x - e0) / (e1 - e0), 0.0), 1.0)
        return t * t * (3 - 2 * t)

    def band(n: int, step: float, width: float) -> np.ndarray:
        """(n,) coverage of each texel of a 10 m tile of n by lines `width` m wide every
        `step` m."""
        t = 10.0 / n
        lo = np.arange(n) * t
        c = np.zeros(n)
        for k in np.arange(-step, 10.0 + step, step):
            c += np.clip(np.minimum(lo + t, k + width / 2) - np.maximum(lo, k - width / 2), 0, None)
        return np.clip(c / t, 0.0, 1.0)

    levels, n = [], n0
    while True:
        t = 10.0 / n
        minor = band(n, 1.0, t) * (1 - smooth(0.08, 0.25, t))
        major = band(n, 10.0, 1.5 * t) * (1 - smooth(0.8, 2.5, t))
        a1 = np.maximum(minor[:, None], minor[None, :])[..., None]
        a2 = np.maximum(major[:, None], major[None, :])[..., None]
        rgb = (np.asarray(GROUND) * (1 - a1) + np.asarray(GRID_MINOR[:3]) * a1) * (1 - a2)
        rgb += np.asarray(GRID_MAJOR[:3]) * a2
        levels.append(np.concatenate([np.round(255 * rgb), np.full((n, n, 1), 255.0)], -1))
        if n == 1:
            return [lv.astype(np.uint8) for lv in levels]
        n //= 2


def _grid_lines(xy: np.ndarray, radius: float, step: float) -> np.ndarray:
    """(2 L, 3) vertices of the grid lines `step` m apart crossing the square of half-side
    `radius` around `xy` (at most 2,400 a direction)."""
    radius = min(radius, 1200 * step)
    lo = np.floor((xy - radius) / step) * step
    hi = np.ceil((xy + radius) / step) * step
    xs, ys = (np.arange(lo[i], hi[i] + step / 2, step) for i in (0, 1))
    v = np.zeros((len(xs) + len(ys), 2, 3))
    v[: len(xs), :, 0], v[: len(xs), 0, 1], v[: len(xs), 1, 1] = xs[:, None], lo[1], hi[1]
    v[len(xs) :, :, 1], v[len(xs) :, 0, 0], v[len(xs) :, 1, 0] = ys[:, None], lo[0], hi[0]
    v[..., 2] = -0.001
    return v.reshape(-1, 3)


def ground_costs(run: Path, step: int = 20, chunk: int = 10) -> dict[str, dict[str, float]]:
    """CPU ms a frame of the clear, the sky, the ground (GROUND_VARIANTS) and the read-back,
    through the cameras of the recorded `run`'s video, the variants alternated every `chunk`
    frames on one context."""
    import math

    import moderngl

    from skyswarm.gui.offscreen import standalone_context
    from skyswarm.gui.palette import FOG_M, GRID_MAJOR, GRID_MINOR, GROUND, GROUND_HALF_M, HORIZON
    from skyswarm.gui.renderer import _gl, horizon_ndc

    src, center, half, items = video_cameras(run, step)
    ctx = standalone_context()
    canvas = OffscreenCanvas(src.scenery, SIZE, center, half, ctx=ctx)
    r = canvas.renderer
    quad = r._static_flat
    h = max(GROUND_HALF_M, 4.0 * half)  # the renderer's ground quad, for the other programs
    g = np.array([[-h, -h], [h, -h], [h, h], [-h, -h], [h, h], [-h, h]]) + np.asarray(center[:2])
    buf = ctx.buffer(np.c_[g, np.full(6, -0.002)].astype(np.float32).tobytes())

    def program(vs: str, fs: str) -> tuple[moderngl.Program, moderngl.VertexArray]:
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        for name, value in (("u_ground", GROUND), ("u_horizon", HORIZON), ("u_fog_m", FOG_M)):
            if name in prog:
                prog[name].value = value
        return prog, ctx.vertex_array(prog, [(buf, "3f", "in_position")])

    color_vs = _TEX_VS.replace("out vec2 v_uv;", "").replace("v_uv = in_position.xy * 0.1;", "")
    fog_only = program(color_vs, _COLOR_FS.replace("FOG_ON", "1.0"))
    flat = program(color_vs, _COLOR_FS.replace("FOG_ON", "0.0"))
    tri = program(_TEX_VS, _TEX_FS)
    plain = program(_TEX_VS, _PLAIN_FS)
    levels = grid_levels()
    mipmapped = ctx.texture(levels[0].shape[:2], 4, levels[0].tobytes())
    mipmapped.build_mipmaps()
    for k, lv in enumerate(levels[1:], 1):
        mipmapped.write(lv.tobytes(), level=k)
    mipmapped.filter = moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR
    single = ctx.texture(levels[0].shape[:2], 4, levels[0].tobytes())
    single.filter = moderngl.LINEAR, moderngl.LINEAR
    for t in (mipmapped, single):
        t.repeat_x = t.repeat_y = True
    lines = ctx.program(vertex_shader=_LINE_VS, fragment_shader=_LINE_FS)
    lines["u_horizon"].value, lines["u_fog_m"].value = HORIZON, FOG_M
    line_buf = ctx.buffer(reserve=4 * 2 * 2 * 2402 * 12, dynamic=True)
    line_vao = ctx.vertex_array(lines, [(line_buf, "3f", "in_position")])
    pixels = bytearray(SIZE[0] * SIZE[1] * 4)

    def draw(v: str, cam: Any) -> None:
        canvas.fbo.use()
        fixed, _ = r._begin(cam, (0, 0, *SIZE), HORIZON)
        ctx.disable(moderngl.DEPTH_TEST)
        ctx.disable(moderngl.BLEND)
        y0 = horizon_ndc(fixed)
        if y0 is not None and y0 < 1.0:
            r.sky_prog["u_y0"].value = max(-1.0, y0 - 0.02)
            r._sky_vao.render(moderngl.TRIANGLE_STRIP)
        vp = _gl(fixed.matrix)
        if v == "procedural":
            r.ground_prog["u_vp"].write(vp)
            r.ground_prog["u_fog_m"].value = FOG_M
            quad.render(moderngl.TRIANGLES)
        elif v in ("texture trilinear", "texture bilinear"):
            prog, vao = tri if v == "texture trilinear" else plain
            (mipmapped if v == "texture trilinear" else single).use(1)
            prog["u_grid"].value = 1
            prog["u_vp"].write(vp)
            vao.render(moderngl.TRIANGLES)
        else:
            prog, vao = flat if v == "flat" else fog_only
            prog["u_vp"].write(vp)
            vao.render(moderngl.TRIANGLES)
        if v == "GL lines":
            view = np.asarray(fixed.view)
            eye = -view[:3, :3].T @ view[:3, 3]
            px_rad = 2.0 / (float(np.asarray(fixed.projection)[1, 1]) * SIZE[1])
            h = max(float(eye[2]), 0.05)
            minor = _grid_lines(eye[:2], math.sqrt(0.25 * h / px_rad), 1.0)
            major = _grid_lines(eye[:2], math.sqrt(2.5 * h / px_rad), 10.0)
            line_buf.orphan()
            line_buf.write(np.concatenate([minor, major]).astype(np.float32).tobytes())
            lines["u_vp"].write(vp)
            lines["u_eye"].value = tuple(eye)
            lines["u_px_rad"].value = px_rad
            ctx.enable(moderngl.BLEND)
            ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
            for (fade, color, width), first, count in (
                (((0.08, 0.25), GRID_MINOR[:3], 1.0), 0, len(minor)),
                (((0.8, 2.5), GRID_MAJOR[:3], 2.0), len(minor), len(major)),
            ):
                lines["u_fade"].value, lines["u_color"].value = fade, color
                ctx.line_width = width
                line_vao.render(moderngl.LINES, vertices=count, first=first)
            ctx.line_width = 1.0
        canvas.read_rgba_into(pixels)

    for v in GROUND_VARIANTS:  # warm-up: shaders, textures
        for _, cam in items[:3]:
            draw(v, cam)
    spent = dict.fromkeys(GROUND_VARIANTS, 0.0)
    for start in range(0, len(items), chunk):
        for v in GROUND_VARIANTS:
            t0 = time.process_time()
            for _, cam in items[start : start + chunk]:
                draw(v, cam)
            spent[v] += time.process_time() - t0
    canvas.release()
    ctx.release()
    n = len(items)
    return {v: {"cpu_ms": 1000 * t / n, "frames": n} for v, t in spent.items()}


def main_ground(run: Path, step: int) -> None:
    import os

    rows = ground_costs(run, step)
    print(
        f"ground of the video picture of {run} at {SIZE[0]}x{SIZE[1]} (clear, sky, ground, "
        f"read-back), {rows['flat']['frames']} frames (every {step}th); load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    for v, row in rows.items():
        print(f"{v:<18}{row['cpu_ms']:>8.2f} CPU ms   {GROUND_VARIANTS[v]}")
    path = Path(__file__).resolve().parent / "results" / "gui_offscreen_ground.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"run": str(run), "step": step, "rows": rows}, indent=1))
    print(f"wrote {path}")


def main() -> None:
    import sys

    if "--ground" in sys.argv[1:]:
        args = sys.argv[sys.argv.index("--ground") + 1 :]
        main_ground(Path(args[0]), int(args[1]) if len(args) > 1 else 20)
        return
    if "--layers" in sys.argv[1:]:
        args = sys.argv[sys.argv.index("--layers") + 1 :]
        main_layers(Path(args[0]), int(args[1]) if len(args) > 1 else 10)
        return
    mesh_file = ASSETS_DIR / ROLE_ASSETS["uav"]
    triangles = len(role_mesh("uav").vertices) // 3
    rows = [bench(n) for n in COUNTS]
    print(
        f"offscreen {SIZE[0]}x{SIZE[1]}, mesh {mesh_file.name if mesh_file.is_file() else 'box'}"
        f" ({triangles} triangles), {FRAMES} frames each incl. read-back"
    )
    print(f"{'drones':>7} {'fps':>8} {'ms/frame':>9}")
    for r in rows:
        print(f"{r['drones']:>7} {r['fps']:8.1f} {r['ms_per_frame']:9.2f}")
    import moderngl

    from skyswarm.gui.offscreen import standalone_context

    ctx = standalone_context()
    renderer = ctx.info["GL_RENDERER"]
    ctx.release()
    out = {
        "size": list(SIZE),
        "frames": FRAMES,
        "mesh": mesh_file.name if mesh_file.is_file() else "fallback box",
        "mesh_triangles": triangles,
        "gl_renderer": renderer,
        "moderngl": moderngl.__version__,
        "cpu": platform.processor() or platform.machine(),
        "target_fps_at_1000": TARGET_FPS,
        "results": rows,
    }
    path = Path(__file__).resolve().parent / "results" / "gui_offscreen.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
