"""Two cameras in one picture: picture-in-picture and side-by-side layouts of the offscreen
views (`run --video/--frames`, `replay --video/--frames`, `snapshot` with `--layout`).

- single (default): one view, the `--camera`.
- pip: the `--camera` view fills the picture; a second view (`--second-camera`, default top
  framing the whole swarm; chase when the main camera is top) sits in the bottom-right
  corner, PIP_FRACTION of the width, with a frame; the main view's framing keeps the drones
  out from under it.
- side: the picture is split down the middle: the `--camera` view (with HUD, legend and inset
  map) on the left, the second view on the right.

Each view has its own gui/director.py `Director` sized to its own rectangle, so the second view
frames the swarm (or rides `--target`) as it would alone.

    views = MultiView(LayoutSpec("pip"), CameraSpec("chase", target=3), (1920, 1080), frame)
    main, second = views.update(frame)
    canvas.compose(frame, main, second=second, layout=views.layout)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from skyswarm.gui.camera import Camera
from skyswarm.gui.director import CameraSpec, Director
from skyswarm.gui.scene import Frame

LAYOUTS = ("single", "pip", "side")
PIP_FRACTION = 0.3  # the picture-in-picture's width, as a fraction of the picture's
PIP_MARGIN_PX = 8  # px between the picture-in-picture and the picture's edges
DIVIDER_PX = 2  # px: the line between the two views of "side"
PIP_MARKER_PX = 8.0  # px across: far drones in the picture-in-picture
DIVIDER_RGBA = (20, 24, 32, 255)  # the line between the two views of "side"
Rect = tuple[int, int, int, int]  # x, y, w, h in pixels from the top-left


@dataclass(frozen=True)
class LayoutSpec:
    """A picture's layout (module docstring) and its second view's camera (None: top, or
    chase behind the main camera's target when the main camera is top).

    LayoutSpec("side", CameraSpec("chase", target=3))
    """

    name: str = "single"
    second: CameraSpec | None = None

    def __post_init__(self) -> None:
        if self.name not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {self.name!r}")

    def second_spec(self, main: CameraSpec) -> CameraSpec:
        """The second view's camera: `second`, else top framing the whole swarm (when `main` is
        top: chase behind `main`'s target)."""
        if self.second is not None:
            return self.second
        if main.name == "top":
            return CameraSpec("chase", target=main.target)
        return CameraSpec("top")  # the whole swarm, whichever UAV the main camera rides


def main_rect(layout: str, size: tuple[int, int]) -> Rect:
    """Where the main view is drawn in a `size` (width, height) picture: all of it, or the left
    half for "side"."""
    w, h = size
    return (0, 0, w // 2, h) if layout == "side" else (0, 0, w, h)


def second_rect(layout: str, size: tuple[int, int]) -> Rect | None:
    """Where the second view is drawn (x, y, w, h from the top-left), None for "single"."""
    w, h = size
    if layout == "pip":
        pw = int(w * PIP_FRACTION)
        ph = int(pw * h / max(1, w))
        return (w - pw - PIP_MARGIN_PX, h - ph - PIP_MARGIN_PX, pw, ph)
    if layout == "side":
        return (w // 2 + DIVIDER_PX, 0, w - w // 2 - DIVIDER_PX, h)
    return None


@lru_cache(maxsize=4)
def divider(height: int) -> np.ndarray:
    """(height, DIVIDER_PX, 4) uint8: the line between the two views of "side" (one image per
    height: uploaded once, gui/renderer.py `draw_image`)."""
    img = np.full((height, DIVIDER_PX, 4), DIVIDER_RGBA, dtype=np.uint8)
    img.flags.writeable = False
    return img


class MultiView:
    """The directors of a picture's views: the main one (`spec`) and, for "pip" and "side",
    the second (`layout.second_spec`), each moved by `update(frame)`."""

    def __init__(
        self,
        layout: LayoutSpec,
        spec: CameraSpec,
        size: tuple[int, int],
        first: Frame,
        hud: bool = True,
        inset: bool = True,
    ) -> None:
        from skyswarm.gui.layout import Layout

        self.layout, self.size = layout, size
        main = main_rect(layout.name, size)
        keep_out = Layout.of(first, main[2:], hud, inset, pip=self.pip_rect).keep_out()
        self.main = Director(spec, main[2:], keep_out, first)
        rect = second_rect(layout.name, size)
        self.second: Director | None = None
        if rect is not None:
            self.second = Director(layout.second_spec(spec), rect[2:], None, first)

    @property
    def pip_rect(self) -> Rect | None:
        """The picture-in-picture over the main view ("pip" only)."""
        return second_rect("pip", self.size) if self.layout.name == "pip" else None

    def update(self, frame: Frame) -> tuple[Camera, Camera | None]:
        """Move both cameras for `frame`; (main, second or None)."""
        main = self.main.update(frame)
        second = self.second.update(frame) if self.second is not None else None
        return main, second
