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
        # included) and of the drawing thread (Python and the driver's front end)
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

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


def layer_costs(run: Path, step: int = 10, chunk: int = 10) -> dict[str, dict[str, float]]:
    """CPU ms a frame of the video's picture of the recorded `run`, whole and without each
    part (LAYER_VARIANTS), each variant on its own canvas, alternated every `chunk` frames."""
    from dataclasses import replace

    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.framing import shown_points
    from skyswarm.gui.multiview import LayoutSpec, MultiView
    from skyswarm.gui.replay import ReplaySource

    src = ReplaySource(run)
    first = src.frame_at(0.0)
    center, half = scene_extent(shown_points(first))
    views = MultiView(LayoutSpec(), CameraSpec("swarm"), SIZE, first)
    items = []  # (frame, camera): the follow camera moved at every frame, as in the video
    for k in range(1, int(np.floor(src.duration_s * 30 + 1e-6)) + 1):
        frame = src.frame_at(k / 30)
        cam, _ = views.update(frame)
        if k % step == 0:
            items.append((frame, cam.fixed()))
    pixels = bytearray(SIZE[0] * SIZE[1] * 4)
    canvases = {v: OffscreenCanvas(src.scenery, SIZE, tuple(center), half) for v in LAYER_VARIANTS}

    class Skip:
        def render(self, *args: object, **kwargs: object) -> None:
            pass

    for v, c in canvases.items():
        r = c.renderer
        skip = lambda *args, **kwargs: None  # noqa: E731
        if v == "no ground":
            r._static_flat = None
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


def main() -> None:
    import sys

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
