"""Regenerate the README screenshots with the offscreen renderer (no display needed).

python docs/make_screenshots.py [CONFIG] [SECONDS]
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.gui.framing import default_camera, scene_extent, shown_points
from skyswarm.gui.offscreen import OffscreenCanvas
from skyswarm.gui.scene import LiveSource

DOCS = Path(__file__).resolve().parent


def main() -> None:
    config = sys.argv[1] if len(sys.argv) > 1 else str(DOCS.parent / "configs" / "waypoints.toml")
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    sim = Simulator.from_scenario(load_scenario(config))
    sim.run(until_s=seconds)
    source = LiveSource(sim)
    frame = source.frame()
    # Frame the agents, base stations and whatever the mission overlays (areas, coverage grid).
    everything = shown_points(frame)
    center, half = scene_extent(everything)
    canvas = OffscreenCanvas(source.scenery, (1280, 720), tuple(center), half)
    for kind in ("orbit", "top"):
        flying = frame.positions[frame.mobile]
        cam = default_camera(kind, everything if kind == "top" else flying)
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
