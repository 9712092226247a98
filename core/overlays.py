"""Mission overlays as data: `Lines` and `Quads`, and `as_overlay`, the one reading of what a
mission's `overlays()` returns (`core.hooks.Overlay`) that the timeline (core/timeline.py) and
the views (gui/overlays.py re-exports these names) share.

A mission returns, per item, either a mapping with `segments` (M, 2, 3) line endpoints or
`corners` (M, 4, 3) filled quads, m world ENU, and an optional linear RGBA `color` (4 floats in
[0, 1]), or a `Lines` / `Quads` built directly. Those are the only shapes core reads: an object
of any other type is refused with a TypeError naming it, never searched for attributes by name
(docs/architecture.md, Contracts between floors).

    as_overlay({"segments": segs})                        # Lines(segs, (1, 1, 1, 1))
    as_overlay({"corners": quads, "color": (1, 0, 0, 1)}) # Quads(quads, (1, 0, 0, 1))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Color = tuple[float, float, float, float]  # linear RGBA in [0, 1]


@dataclass(frozen=True)
class Lines:
    """Line segments: `segments` is an (M, 2, 3) float32 array of endpoints in m, world ENU."""

    segments: np.ndarray
    color: Color = (1.0, 1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        seg = np.asarray(self.segments, dtype=np.float32).reshape(-1, 2, 3)
        object.__setattr__(self, "segments", seg)


@dataclass(frozen=True)
class Quads:
    """Filled quads: `corners` is an (M, 4, 3) float32 array in m, corners in drawing order."""

    corners: np.ndarray
    color: Color = (0.2, 0.6, 1.0, 0.35)

    def __post_init__(self) -> None:
        c = np.asarray(self.corners, dtype=np.float32).reshape(-1, 4, 3)
        object.__setattr__(self, "corners", c)


KINDS = {"segments": Lines, "corners": Quads}  # a mapping's key -> its type; segments first


def as_overlay(item: Any) -> Lines | Quads | None:
    """One overlay item as Lines or Quads: itself if it is one; a mapping by its `segments`
    (looked at first) or `corners` key, None when it has neither; the type's default colour
    when `color` is missing, None or empty (timelines written before colours were resolved
    hold `[]` for "none given"). TypeError for any other type, ValueError for a colour that
    is not four numbers."""
    if isinstance(item, Lines | Quads):
        return item
    if not isinstance(item, Mapping):
        raise TypeError(
            f"overlay item {item!r} is a {type(item).__name__}: expected a mapping with "
            "'segments' or 'corners' (core.hooks.Overlay), or a core.overlays Lines or Quads"
        )
    for key, cls in KINDS.items():
        data = item.get(key)
        if data is None:
            continue
        color = item.get("color")
        if color is None or len(color) == 0:
            return cls(data)
        rgba = tuple(float(c) for c in color)
        if len(rgba) != 4:
            raise ValueError(f"overlay color {color!r}: expected 4 floats (linear RGBA)")
        r, g, b, a = rgba
        return cls(data, (r, g, b, a))
    return None
