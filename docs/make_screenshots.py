"""Regenerate the README screenshots with the offscreen renderer (no display needed).

    python docs/make_screenshots.py [SECONDS]

Runs the reference scenario (configs/flocking_coverage.toml) for SECONDS (30) of simulated time,
recording it, and writes into docs/:

- screenshot_3d.png: the live 3D view close to the flock (quadrotor meshes, shadows, HUD, legend);
- screenshot_top.png: the top view of the whole area with the coverage overlay;
- screenshot_replay.png: the recorded run replayed at the same time (overlays from the timeline);
- screenshot_1000.png: a synthetic 1,000-drone swarm at the default camera.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.gui.camera import OrbitCamera
from skyswarm.gui.framing import default_camera, scene_extent, shown_points
from skyswarm.gui.offscreen import OffscreenCanvas, draw_hud
from skyswarm.gui.replay import ReplaySource
from skyswarm.gui.scene import Frame, LiveSource, Scenery

DOCS = Path(__file__).resolve().parent
SIZE = (1280, 720)


def save(image: np.ndarray, name: str) -> None:
    Image.fromarray(image).save(DOCS / name)
    print(f"wrote {DOCS / name}")


def swarm_1000() -> Frame:
    """1,000 drones in a loose 3D block, 2.5 m apart, with small random tilts."""
    rng = np.random.default_rng(1)
    n, side = 1000, 32
    i = np.arange(n)
    pos = np.c_[(i % side) * 2.5, (i // side) * 2.5, 12.0 + 3.0 * np.sin(i / 40.0)]
    pos[:, :2] += rng.uniform(-0.6, 0.6, (n, 2))
    q = rng.normal(size=(n, 4)) * [0.04, 0.04, 1.0, 1.0]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return Frame(10.0, i + 1, ["uav"], np.zeros(n, np.intp), pos, q, np.ones(n, bool))


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        scenario = load_scenario(DOCS.parent / "configs" / "flocking_coverage.toml")
        sim = Simulator.from_scenario(scenario, out)
        sim.run(until_s=seconds)
        source = LiveSource(sim)
        frame = source.frame()
        everything = shown_points(frame)
        center, half = scene_extent(everything)
        canvas = OffscreenCanvas(source.scenery, SIZE, tuple(center), half)
        hud = lambda r, size: draw_hud(r, size, frame)  # noqa: E731

        flying = frame.positions[frame.mobile & frame.alive]
        centroid = flying.mean(axis=0)
        close = OrbitCamera(tuple(centroid), distance=16.0, azimuth_deg=-115, elevation_deg=24)
        save(canvas.render(frame, close, overlay=hud), "screenshot_3d.png")
        top = default_camera("top", everything)
        save(canvas.render(frame, top, overlay=hud), "screenshot_top.png")
        sim.finish()
        sim.close()

        replay = ReplaySource(out).frame_at(frame.time_s)
        view = default_camera("orbit", everything)
        save(canvas.render(replay, view, overlay=lambda r, s: draw_hud(r, s, replay)),
             "screenshot_replay.png")  # fmt: skip
        canvas.release()

    big = swarm_1000()
    shown = shown_points(big)
    c, h = scene_extent(shown)
    canvas = OffscreenCanvas(Scenery(), SIZE, tuple(c), h)
    cam = default_camera("orbit", shown)
    save(canvas.render(big, cam, overlay=lambda r, s: draw_hud(r, s, big)), "screenshot_1000.png")
    canvas.release()


if __name__ == "__main__":
    main()
