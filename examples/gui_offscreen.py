"""Driving the GUI from a script: the flocking scenario rendered offscreen (EGL, no window or
display needed) to one PNG per simulated second while it runs, with the HUD and a camera that
follows the swarm. Needs the `skyswarm[gui]` extra.

    python examples/gui_offscreen.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import os
import sys
from pathlib import Path

import skyswarm
from skyswarm.gui.capture import Capture  # the GUI's scripting entry (needs skyswarm[gui])

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 3))


def main() -> None:
    scenario = skyswarm.load_scenario("boids", [f"simulation.duration_s={SECONDS}"])
    sim = skyswarm.Simulator.from_scenario(scenario)
    frames = Path("frames")
    capture = Capture(sim, frames=frames, fps=1.0, size=(640, 360), camera="orbit", hud=True)
    try:
        sim.run()
    finally:
        capture.close()  # every frame drawn and written
        sim.close()
    print(f"wrote {len(list(frames.glob('*.png')))} frames to {frames}/")


if __name__ == "__main__":
    main()
