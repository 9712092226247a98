"""Mission overlays as the views draw them: `Lines` and `Quads`.

A mission that draws areas, paths or a coverage grid overrides `Mission.overlays()` (declared,
with a do-nothing default, on the Mission base in core/mission.py; the contract is
`core.hooks.ViewSource`). Missions must not import gui/ (imports point gui -> missions, never
back), so they return plain data (`core.hooks.Overlay`): a mapping with `segments` (M, 2, 3)
or `corners` (M, 4, 3) and an optional RGBA `color`, or the `Lines` and `Quads` of
core/overlays.py (re-exported here); `overlays_of` turns those into Lines and Quads, read the
same way as the timeline records them (`core.overlays.as_overlay`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skyswarm.core.hooks import ViewSource
from skyswarm.core.overlays import Color, Lines, Quads, as_overlay

__all__ = [
    "Color", "Lines", "Overlay", "Quads", "as_overlays", "ground_cross", "overlays_of", "rectangle"
]  # fmt: skip

Overlay = Lines | Quads


def overlays_of(mission: ViewSource) -> list[Overlay]:
    """The overlays `mission` draws now (`Mission.overlays()`), as Lines and Quads."""
    return as_overlays(mission.overlays())


def as_overlays(items: Any) -> list[Overlay]:
    """Plain overlay data (`core.hooks.Overlay`: mappings with `segments` / `corners` and
    `color`, or Lines and Quads) as Lines and Quads; mappings with neither key are skipped."""
    return [ov for ov in map(as_overlay, items) if ov is not None]


def rectangle(x0: float, y0: float, x1: float, y1: float, z: float = 0.02) -> np.ndarray:
    """(4, 3) corners of an axis-aligned ground rectangle, m."""
    return np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]], dtype=np.float32)


def ground_cross(xy: np.ndarray, half_m: float = 0.5, z: float = 0.03) -> np.ndarray:
    """(2 N, 2, 3) segments of an X centred on each of the (N, 2) ground points."""
    xy = np.asarray(xy, dtype=np.float32).reshape(-1, 2)
    out = np.zeros((len(xy), 2, 2, 3), dtype=np.float32)
    for k, sign in enumerate((1.0, -1.0)):
        out[:, k, 0, :2] = xy + np.array([-half_m, -sign * half_m])
        out[:, k, 1, :2] = xy + np.array([half_m, sign * half_m])
    out[..., 2] = z
    return out.reshape(-1, 2, 3)
