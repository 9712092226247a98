"""Text as RGBA images (Pillow), drawn by the renderer as textured quads.

Rendering text ourselves keeps the HUD, the panel and the help overlay identical in a window and
in offscreen video, and avoids mixing pyglet's own GL state with moderngl's.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONT_PX = 14
LINE_PX = 18
PAD_PX = 6
TEXT = (255, 255, 255, 255)
BACKDROP = (20, 24, 32, 190)


@lru_cache(maxsize=4)
def font(size: int = FONT_PX) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: the fixed bitmap font
        return ImageFont.load_default()


def text_image(
    lines: Sequence[str],
    width: int | None = None,
    color: tuple[int, int, int, int] = TEXT,
    backdrop: tuple[int, int, int, int] = BACKDROP,
) -> np.ndarray:
    """(h, w, 4) uint8 image of `lines` on a translucent backdrop."""
    f = font()
    if width is None:
        width = max((int(f.getlength(s)) for s in lines), default=0) + 2 * PAD_PX
    height = len(lines) * LINE_PX + 2 * PAD_PX
    img = Image.new("RGBA", (max(1, width), max(1, height)), backdrop)
    draw = ImageDraw.Draw(img)
    for i, s in enumerate(lines):
        draw.text((PAD_PX, PAD_PX + i * LINE_PX), s, font=f, fill=color)
    return np.asarray(img)


def legend_image(entries: Sequence[tuple[str, tuple[float, float, float]]]) -> np.ndarray:
    """(h, w, 4) uint8 legend: a colour swatch (RGB in 0..1) and a label per line."""
    f = font()
    sw = LINE_PX - 6
    width = max((int(f.getlength(s)) for s, _ in entries), default=0) + 3 * PAD_PX + sw
    img = Image.new("RGBA", (width, len(entries) * LINE_PX + 2 * PAD_PX), BACKDROP)
    draw = ImageDraw.Draw(img)
    for i, (label, rgb) in enumerate(entries):
        y = PAD_PX + i * LINE_PX
        fill = tuple(int(round(255 * c)) for c in rgb[:3]) + (255,)
        draw.rectangle((PAD_PX, y + 3, PAD_PX + sw, y + 3 + sw), fill=fill)
        draw.text((2 * PAD_PX + sw, y), label, font=f, fill=TEXT)
    return np.asarray(img)
