"""The ID buffer: which agent each pixel of a view shows, to measure what the user sees.

`Renderer.render_ids` draws every agent exactly as `render` does (mesh, far box or marker,
hidden by nearer agents and obstacles) in a colour encoding its index; the 2D parts drawn over
the scene (HUD, legend, inset map: gui/layout.py) hide what is under them.

    canvas = OffscreenCanvas(scenery, (1280, 720))
    counts = agent_pixels(canvas, frame, camera, Layout.of(frame, (1280, 720)).rects())
    counts[i]  # pixels of agent i (frame order) the user sees
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.offscreen import OffscreenCanvas
from skyswarm.gui.scene import Frame


def decode_ids(rgb: np.ndarray) -> np.ndarray:
    """(H, W) int64 agent index + 1 (0: no agent) of an (H, W, 3) uint8 ID image
    (`drones.id_colors`)."""
    c = rgb.astype(np.int64)
    return c[..., 0] | (c[..., 1] << 8) | (c[..., 2] << 16)


def id_image(canvas: OffscreenCanvas, frame: Frame, camera: Camera) -> np.ndarray:
    """(H, W) int64 index + 1 of the agent drawn at each pixel (top row first), 0 for none."""
    canvas.fbo.use()
    canvas.renderer.render_ids(frame, camera, (0, 0, *canvas.size))
    return decode_ids(canvas.read())


def agent_pixels(
    canvas: OffscreenCanvas,
    frame: Frame,
    camera: Camera,
    hidden: Sequence[tuple[int, int, int, int]] = (),
) -> np.ndarray:
    """(N,) pixels each agent of `frame` covers in `canvas`'s view through `camera`, not
    counting those under the `hidden` rectangles (x, y, w, h from the top-left)."""
    ids = id_image(canvas, frame, camera)
    for x, y, w, h in hidden:
        ids[max(0, y) : y + h, max(0, x) : x + w] = 0
    return np.bincount(ids.ravel(), minlength=len(frame.ids) + 1)[1 : len(frame.ids) + 1]
