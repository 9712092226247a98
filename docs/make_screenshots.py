"""Regenerate the screenshots of the README and the docs with the offscreen renderer (no display
needed).

    python docs/make_screenshots.py [SECONDS]

Runs the reference scenario (configs/flocking_coverage.toml) for SECONDS (30) of simulated time,
recording it, and writes into docs/:

- screenshot_3d.png: the live 3D view close to the flock and its leader (quadrotor meshes,
  shadows, HUD, legend);
- screenshot_top.png: the top view of the whole area with the coverage overlay;
- screenshot_replay.png: the recorded run replayed at the same time (overlays from the timeline);
- screenshot_1000.png: a synthetic 1,000-drone swarm at the default camera;
- screenshot_window.png: the whole viewer window (Xvfb; skipped without it) of the same scenario
  with `qrsim` sensors: the 3D camera following the selected follower, the panel's inspector,
  and the ghost of the drone at its estimated position.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
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
        lead = frame.positions[frame.leaders & frame.alive]
        # Between the flock's centre and its leader (cyan), so both followers and leader show.
        focus = (flying.mean(axis=0) + lead[0]) / 2 if len(lead) else flying.mean(axis=0)
        close = OrbitCamera(tuple(focus), distance=12.0, azimuth_deg=-125, elevation_deg=20)
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


def window(seconds: float) -> None:
    """The viewer window under Xvfb (its own display :96 when none is set)."""
    xvfb = None
    if not os.environ.get("DISPLAY"):
        binary = shutil.which("Xvfb")
        if binary is None:
            print("no DISPLAY and no Xvfb: screenshot_window.png not made")
            return
        xvfb = subprocess.Popen([binary, ":96", "-screen", "0", "1920x1080x24"])
        os.environ["DISPLAY"] = ":96"
        time.sleep(1.0)
    try:
        from skyswarm.gui.app import ViewerApp

        scenario = load_scenario(
            DOCS.parent / "configs" / "flocking_coverage.toml", ["uav.sensors.preset='qrsim'"]
        )
        sim = Simulator.from_scenario(scenario)
        sim.run(until_s=seconds)
        app = ViewerApp(sim, size=SIZE)
        frame = app.frame()
        followers = frame.ids[frame.mobile & frame.alive & ~frame.leaders]
        app.select(int(followers[len(followers) // 2]))
        app.toggle_follow()
        cam = app.main.camera
        cam.distance, cam.azimuth_deg, cam.elevation_deg = 7.0, -100.0, 22.0
        for _ in range(60):
            app.animate_cameras(0.05)  # 3 s of following: on the drone
        app.main.render_now()
        save(app.main.screenshot(), "screenshot_window.png")
        app.shutdown()
        sim.close()
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()


if __name__ == "__main__":
    main()
    window(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
