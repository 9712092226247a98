"""Drawing an RL environment: the offscreen renderer (gui/offscreen.py) aimed at one slot.

Imported only when an environment renders (it needs the `gui` extra: moderngl, pyglet).
"rgb_array" returns the offscreen frame; "human" shows the same frame in a pyglet window.

    view = EnvView(batch, window=False)
    image = view.draw(0)        # (480, 640, 3) uint8, slot 0 in the middle
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skyswarm.envs.batch import FlightBatch
from skyswarm.gui.camera import OrbitCamera
from skyswarm.gui.offscreen import OffscreenCanvas
from skyswarm.gui.scene import LiveSource, Scenery

SIZE = (640, 480)  # pixels
DISTANCE_M = 8.0  # m, camera to the slot's target


class EnvView:
    """An offscreen canvas and a camera orbiting a slot's target (and a window for "human")."""

    def __init__(
        self, batch: FlightBatch, window: bool = False, distance_m: float = DISTANCE_M
    ) -> None:
        self.batch = batch
        self.source = LiveSource(batch.sim)
        extent = 2.0 * distance_m
        # "human": the canvas draws on the window's own GL context. A standalone (EGL) context
        # beside the window's (GLX) one keeps the thread's GL calls after its first render, so
        # the window's blit went into the canvas's framebuffer and the window showed nothing.
        self.window: Any = _Window() if window else None
        ctx = self.window.moderngl_context() if window else None
        self.canvas = OffscreenCanvas(Scenery(), SIZE, (0.0, 0.0), extent, agent_scale=2.0, ctx=ctx)
        self.camera = OrbitCamera(distance=distance_m, azimuth_deg=-60.0, elevation_deg=20.0)

    def draw(self, slot: int) -> np.ndarray:
        """(H, W, 3) uint8: the world around slot `slot`'s target, the UAV and its neighbours."""
        return self.draw_at(self.batch.target[slot])

    def draw_at(self, point: np.ndarray) -> np.ndarray:
        """(H, W, 3) uint8: the world around `point` (3,) m (a swarm env's group centre)."""
        self.camera.target = np.asarray(point, dtype=float)
        image = self.canvas.render(self.source.frame(), self.camera).copy()
        if self.window is not None:
            self.window.show(image)
        return image

    def close(self) -> None:
        self.canvas.release()  # before the window: in "human" mode its GL context is the window's
        if self.window is not None:
            self.window.close()


class _Window:
    """A pyglet window that shows RGB frames (the "human" render mode)."""

    def __init__(self) -> None:
        import pyglet

        self.pyglet = pyglet
        self.win = pyglet.window.Window(*SIZE, caption="skyswarm env")

    def moderngl_context(self) -> Any:
        """A moderngl context on this window's GL context (the canvas draws into its own
        framebuffer there; `show` blits to the window's)."""
        import moderngl

        self.win.switch_to()
        self.ctx = moderngl.create_context(require=330)
        return self.ctx

    def show(self, image: np.ndarray) -> None:
        pg = self.pyglet
        self.win.switch_to()
        self.ctx.screen.use()  # the window's framebuffer, not the canvas's
        self.win.dispatch_events()
        data = np.ascontiguousarray(image[::-1]).tobytes()  # pyglet's rows go bottom up
        pg.image.ImageData(SIZE[0], SIZE[1], "RGB", data).blit(0, 0)
        self.win.flip()

    def close(self) -> None:
        self.win.close()
