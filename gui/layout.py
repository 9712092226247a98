"""Where the 2D parts of a view sit over the scene: the HUD (top left), the legend (bottom left)
and the inset map of the whole area (top right), in pixels of the scene's viewport.

The framing (gui/framing.py `SwarmFraming`) keeps the drones out of these corners, and the ID
buffer (gui/picking.py) counts a drone's pixels under them as hidden: what the user sees.

    layout = Layout.of(frame, (1280, 720))
    layout.inset        # (x, y, w, h) from the top-left, pixels
    layout.keep_out()   # the corners as NDC (sx, sy, ex, ey) for the framing
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from skyswarm.gui.scene import Frame

MARGIN_PX = 8  # px between a 2D part and the edge of the view
INSET_FRACTION = 0.3  # the inset map's side, as a fraction of the view's height
INSET_MIN_PX = 120  # px: no inset map in a view smaller than this
HUD_TEMPLATE = "t = 0000.00 s   alive 0000/0000"  # the widest first HUD line of a video
Rect = tuple[int, int, int, int]  # x, y, w, h in pixels from the top-left


def gl_rect(rect: Rect, height: int) -> Rect:
    """`rect` (x, y, w, h from the top-left of a framebuffer `height` px tall) in GL pixels
    (from the bottom-left)."""
    x, y, w, h = rect
    return x, height - y - h, w, h


@lru_cache(maxsize=256)
def text_px(line: str) -> int:
    """Width of `line` in the HUD's font, whole pixels (kept: a video asks for the same few
    lines every frame, and measuring one with FreeType costs ~0.1 ms)."""
    from skyswarm.gui.text import font

    return int(font().getlength(line))


@dataclass(frozen=True)
class Layout:
    """The 2D parts over a `size` (width, height) view; None: that part is not drawn."""

    size: tuple[int, int]
    hud: Rect | None = None
    legend: Rect | None = None
    inset: Rect | None = None
    pip: Rect | None = None  # a second view over this one (gui/multiview.py)

    @classmethod
    def of(
        cls,
        frame: Frame,
        size: tuple[int, int],
        hud: bool = True,
        inset: bool = True,
        pip: Rect | None = None,
    ) -> Layout:
        """The video's layout (gui/video.py `draw_hud`) for `frame`: HUD and legend with
        `hud`, the inset map with `inset` (and a view of at least INSET_MIN_PX / FRACTION),
        and the `pip` rectangle of a picture-in-picture (gui/multiview.py)."""
        from skyswarm.gui.renderer import legend_entries
        from skyswarm.gui.text import LINE_PX, PAD_PX

        w, h = size
        hud_rect = legend_rect = inset_rect = None
        if hud:
            lines = (HUD_TEMPLATE, *frame.hud)
            width = max(text_px(s) for s in lines) + 2 * PAD_PX
            hud_rect = (MARGIN_PX, MARGIN_PX, width, len(lines) * LINE_PX + 2 * PAD_PX)
            legend = legend_entries(frame)
            lw = max((text_px(s) for s, _ in legend), default=0)
            lh = len(legend) * LINE_PX + 2 * PAD_PX
            lw += 3 * PAD_PX + LINE_PX - 6
            legend_rect = (MARGIN_PX, h - lh - MARGIN_PX, lw, lh)
        side = int(h * INSET_FRACTION)
        if inset and side >= INSET_MIN_PX:
            inset_rect = (w - side - MARGIN_PX, MARGIN_PX, side, side)
        return cls(size, hud_rect, legend_rect, inset_rect, pip)

    def rects(self) -> list[Rect]:
        return [r for r in (self.hud, self.legend, self.inset, self.pip) if r is not None]

    def keep_out(self) -> list[tuple[float, float, float, float]]:
        """Each part as a corner region of NDC: (sx, sy, ex, ey) holds the points with
        sx * x > ex and sy * y > ey (sx, sy = +-1: the corner's side; ex, ey > 0 where the
        part's inner edges are). A part reaching the middle of the view is left out."""
        w, h = self.size
        out = []
        for x, y, rw, rh in self.rects():
            left, top = x + rw / 2 < w / 2, y + rh / 2 < h / 2
            inner_x = (x + rw) if left else x  # the edge nearer the middle, px
            inner_y = (y + rh) if top else y
            ex, ey = abs(2 * inner_x / w - 1), abs(1 - 2 * inner_y / h)
            if (left and inner_x >= w / 2) or (not left and inner_x <= w / 2):
                continue
            if (top and inner_y >= h / 2) or (not top and inner_y <= h / 2):
                continue
            out.append((-1.0 if left else 1.0, 1.0 if top else -1.0, ex, ey))
        return out
