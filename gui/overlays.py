"""Mission overlays as the views draw them: `Lines` and `Quads`.

A mission that draws areas, paths or a coverage grid overrides `Mission.overlays()` (declared,
with a do-nothing default, on the Mission base in core/mission.py; the contract is
`core.hooks.ViewSource`). Missions must not import gui/ (imports point gui -> missions, never
back), so they return plain data (`core.hooks.Overlay`): a mapping (or any object) with
`segments` (M, 2, 3) or `corners` (M, 4, 3) and an optional RGBA `color`; `overlays_of` turns
those into the `Lines` and `Quads` below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from skyswarm.core.hooks import ViewSource

Color = tuple[float, float, float, float]  # linear RGBA in [0, 1]


@dataclass(frozen=True)
class Lines:
    """Line segments: `segments` is an (M, 2, 3) array of endpoints in m, world ENU."""

    segments: np.ndarray
    color: Color = (1.0, 1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        seg = np.asarray(self.segments, dtype=np.float32).reshape(-1, 2, 3)
        object.__setattr__(self, "segments", seg)


@dataclass(frozen=True)
class Quads:
    """Filled quads: `corners` is an (M, 4, 3) array in m, corners in drawing order."""

    corners: np.ndarray
    color: Color = (0.2, 0.6, 1.0, 0.35)

    def __post_init__(self) -> None:
        c = np.asarray(self.corners, dtype=np.float32).reshape(-1, 4, 3)
        object.__setattr__(self, "corners", c)


Overlay = Lines | Quads


def overlays_of(mission: ViewSource) -> list[Overlay]:
    """The overlays `mission` draws now (`Mission.overlays()`), as Lines and Quads."""
    return as_overlays(mission.overlays())


def as_overlays(items: Any) -> list[Overlay]:
    """Plain overlay data (mappings or objects with `segments` / `corners` and `color`) as
    Lines and Quads; items with neither are skipped."""
    return [ov for ov in map(_as_overlay, items) if ov is not None]


def _as_overlay(item: Any) -> Overlay | None:
    if isinstance(item, Lines | Quads):
        return item
    get = item.get if isinstance(item, dict) else lambda k, d=None: getattr(item, k, d)
    color = get("color")
    for key, cls in (("segments", Lines), ("corners", Quads)):
        data = get(key)
        if data is not None:
            return cls(data) if color is None else cls(data, tuple(color))
    return None


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
