"""Offscreen rendering speed: frames per second at 1280x720 for 100, 500 and 1,000 drones.

Each frame is what `run --video` does per frame: upload the instance buffer (model matrix +
colour per drone), draw the grid and all drones (one instanced draw call), read the pixels back.
Drones fly in a grid at 10 m with random attitudes; the mesh is the uav role's
(assets/quadrotor.obj, or the fallback box when that file is absent).

    python bench/gui_offscreen.py            # table on stdout, JSON in bench/results/
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


def main() -> None:
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
