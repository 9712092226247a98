"""Regenerate the README screenshots with the offscreen renderer (no display needed).

python docs/make_screenshots.py [CONFIG] [SECONDS]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from PIL import Image

from core.config import load_scenario
from core.simulator import Simulator
from gui.offscreen import OffscreenCanvas, default_camera, scene_extent
from gui.scene import LiveSource

DOCS = Path(__file__).resolve().parent


def main() -> None:
    config = sys.argv[1] if len(sys.argv) > 1 else str(DOCS.parent / "configs" / "waypoints.toml")
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    sim = Simulator.from_scenario(load_scenario(config))
    sim.run(until_s=seconds)
    source = LiveSource(sim)
    frame = source.frame()
    # Frame the agents and whatever the mission overlays (areas, coverage grid).
    shown = [frame.positions.reshape(-1, 3)]
    for ov in frame.overlays:
        pts = getattr(ov, "segments", getattr(ov, "corners", None))
        if pts is not None:
            shown.append(np.asarray(pts, dtype=float).reshape(-1, 3))
    everything = np.vstack(shown)
    center, half = scene_extent(everything)
    canvas = OffscreenCanvas(source.scenery, (1280, 720), tuple(center), half)
    for kind in ("orbit", "top"):
        cam = default_camera(kind, everything if kind == "top" else frame.positions)
        if kind == "orbit":
            cam.distance *= 0.6  # type: ignore[attr-defined]
        image = canvas.render(frame, cam, selected=int(frame.ids[0]))
        name = "screenshot_3d.png" if kind == "orbit" else "screenshot_top.png"
        Image.fromarray(image).save(DOCS / name)
        print(f"wrote {DOCS / name}")
    canvas.release()
    sim.close()


if __name__ == "__main__":
    main()
