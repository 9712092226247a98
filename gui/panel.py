"""The mission panel: buttons, HUD and the agent list, drawn with Pillow, hit-tested by rectangle.

Pixel coordinates here are panel-local, origin top-left, y down.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from skyswarm.gui.text import LINE_PX, PAD_PX, font

PANEL_W = 360  # px
BUTTON_W, BUTTON_H, BUTTONS_PER_ROW = 64, 24, 5
BG = (28, 32, 40, 255)
FG = (235, 235, 235, 255)
DIM = (150, 155, 165, 255)
BUTTON_BG = (60, 68, 84, 255)
HILITE = (120, 100, 20, 255)
DEAD_FG = (230, 90, 80, 255)
INSPECT_BG = (40, 46, 58, 255)
EDIT_FG = (255, 220, 90, 255)


@dataclass(frozen=True)
class Button:
    label: str
    action: str  # name of the app method it calls


MODE_W = 9  # characters of the mode column
MODE_WORDS = {"Ground": "G", "Speed": "S", "Vert": "V", "Altitude": "Alt", "Heading": "Hdg"}


def short_mode(name: str, width: int = MODE_W) -> str:
    """A control mode name that fits `width` characters: long CamelCase names are abbreviated
    word by word ("GroundSpeedAltitudeAndHeading" -> "GSAlt+Hdg"), then cut."""
    if len(name) <= width:
        return name
    words = re.findall(r"[A-Z][a-z]*|[^A-Z]+", name)
    short = "".join("+" if w == "And" else MODE_WORDS.get(w, w[:3]) for w in words)
    return short[:width]


@dataclass(frozen=True)
class AgentRow:
    agent_id: int
    role: str
    mode: str
    altitude_m: float
    speed_m_s: float
    alive: bool

    def text(self) -> str:
        state = "yes" if self.alive else "dead"
        return (
            f"{self.agent_id:>5} {self.role[:6]:<6} {short_mode(self.mode):<9} "
            f"{self.altitude_m:7.2f} {self.speed_m_s:6.2f} {state:>4}"
        )


LIST_HEADER = f"{'id':>5} {'role':<6} {'mode':<9} {'alt m':>7} {'spd':>6} {'live':>4}"


def estimate_lines(
    truth: np.ndarray, estimate: np.ndarray | None, gps_fix: np.ndarray | None
) -> list[str]:
    """The inspector's estimate lines of one agent (sensors on): how far its estimate is from
    its true position and its GPS error; [] when it has no finite estimate. The same text as the
    live inspector (gui/app.py `inspect`) so that a replay reads like the live view did; a test
    compares the two."""
    if estimate is None or not (np.all(np.isfinite(estimate)) and np.all(np.isfinite(truth))):
        return []
    out = [f"estimate off truth {float(np.linalg.norm(estimate - truth)):.2f} m (white ghost)"]
    if gps_fix is not None and np.all(np.isfinite(gps_fix)):
        gps = gps_fix - truth
        h, v = float(np.linalg.norm(gps[:2])), float(gps[2])
        out.append(f"GPS error {h:.2f} m horiz., {v:+.2f} m vert. (pink +)")
    return out


def filter_rows(rows: Sequence[AgentRow], text: str) -> list[AgentRow]:
    """Rows matching the filter `text`: every space-separated word must match a field — the id
    exactly (a number), else a prefix of the role or the mode (case-insensitive), or "alive" /
    "dead"."""
    words = text.lower().split()
    if not words:
        return list(rows)

    def match(row: AgentRow, w: str) -> bool:
        if w.isdigit():
            return row.agent_id == int(w)
        if w in ("alive", "dead"):
            return row.alive == (w == "alive")
        return row.role.lower().startswith(w) or row.mode.lower().startswith(w)

    return [r for r in rows if all(match(r, w) for w in words)]


class Panel:
    """Lays out `buttons`, HUD lines and the agent rows in a PANEL_W x height strip."""

    def __init__(self, buttons: Sequence[Button]) -> None:
        self.buttons = list(buttons)
        self.scroll = 0  # first agent row shown
        rows = (len(self.buttons) + BUTTONS_PER_ROW - 1) // BUTTONS_PER_ROW
        self.buttons_bottom = PAD_PX + rows * (BUTTON_H + 4)
        self.list_top = 0  # set by render(): y of the first agent row
        self.visible_rows = 0
        self._strip: tuple[tuple[tuple[str, ...], int], Image.Image] | None = None  # buttons
        self.words = WordTiles()  # the agent rows' words, kept between refreshes

    def button_rect(self, i: int) -> tuple[int, int, int, int]:
        r, c = divmod(i, BUTTONS_PER_ROW)
        x = PAD_PX + c * (BUTTON_W + 4)
        y = PAD_PX + r * (BUTTON_H + 4)
        return x, y, x + BUTTON_W, y + BUTTON_H

    def render(
        self,
        height: int,
        hud: Sequence[str],
        rows: Sequence[AgentRow],
        selected: int | None,
        inspector: Sequence[str] = (),
        filter_text: str = "",
        editing: bool = False,
        total: int | None = None,
        labels: Sequence[str] | None = None,
    ) -> np.ndarray:
        """(height, PANEL_W, 4) uint8 image of the panel: buttons, HUD lines, the selected agent's
        `inspector` lines, the filter line and the (filtered) agent `rows` of `total`."""
        f = font()
        img = Image.new("RGBA", (PANEL_W, max(1, height)), BG)
        draw = ImageDraw.Draw(img)
        self._draw_buttons(img, draw, labels)
        y = self.buttons_bottom + PAD_PX
        for line in hud:
            draw.text((PAD_PX, y), line, font=f, fill=FG)
            y += LINE_PX
        if inspector:
            y += PAD_PX // 2
            box = (0, y - 2, PANEL_W, y + len(inspector) * LINE_PX + 2)
            draw.rectangle(box, fill=INSPECT_BG)
            for line in inspector:
                draw.text((PAD_PX, y), line, font=f, fill=FG)
                y += LINE_PX
        y += PAD_PX
        visible = max(0, (height - y - 2 * LINE_PX - PAD_PX) // LINE_PX)
        self.scroll = int(np.clip(self.scroll, 0, max(0, len(rows) - visible)))
        total = len(rows) if total is None else total
        shown = f"{self.scroll + 1 if rows else 0}-{min(len(rows), self.scroll + visible)}"
        if editing:
            line, color = f"filter: {filter_text}_   (Enter: done, Esc: clear)", EDIT_FG
        elif filter_text:
            line, color = f"filter '{filter_text}': {shown} of {len(rows)} ({total})", EDIT_FG
        else:
            line, color = f"agents {shown} of {total}   / filter, wheel scroll", DIM
        draw.text((PAD_PX, y), line, font=f, fill=color)
        y += LINE_PX
        draw.text((PAD_PX, y), LIST_HEADER, font=f, fill=DIM)
        y += LINE_PX
        self.list_top = y
        self.visible_rows = visible
        for k, row in enumerate(rows[self.scroll : self.scroll + self.visible_rows]):
            ry = y + k * LINE_PX
            if row.agent_id == selected:
                draw.rectangle((0, ry, PANEL_W, ry + LINE_PX - 1), fill=HILITE)
            bg = HILITE if row.agent_id == selected else BG
            self.words.draw(img, draw, (PAD_PX, ry), row.text(), FG if row.alive else DEAD_FG, bg)
        return np.asarray(img)

    def _draw_buttons(
        self, img: Image.Image, draw: ImageDraw.ImageDraw, labels: Sequence[str] | None
    ) -> None:
        """The buttons with their `labels` (None: their own) in the strip above
        `buttons_bottom`; the strip is kept and pasted again while the labels are the same (a
        button's text costs ~1 ms of a panel refresh; nothing else is drawn in the strip)."""
        names = tuple(labels) if labels is not None else tuple(b.label for b in self.buttons)
        strip_h = min(self.buttons_bottom, img.height)
        if self._strip is not None and self._strip[0] == (names, strip_h):
            img.paste(self._strip[1], (0, 0))
            return
        f = font()
        for i, label in enumerate(names):
            x0, y0, x1, y1 = self.button_rect(i)
            draw.rectangle((x0, y0, x1, y1), fill=BUTTON_BG)
            tw = f.getlength(label)
            draw.text((x0 + (BUTTON_W - tw) / 2, y0 + 4), label, font=f, fill=FG)
        if strip_h > 0:
            self._strip = ((names, strip_h), img.crop((0, 0, PANEL_W, strip_h)))

    def hit(self, x: float, y: float, rows: Sequence[AgentRow]) -> tuple[str, object] | None:
        """("button", action) or ("agent", id) under panel pixel (x, y), or None."""
        for i, b in enumerate(self.buttons):
            x0, y0, x1, y1 = self.button_rect(i)
            if x0 <= x <= x1 and y0 <= y <= y1:
                return "button", b.action
        if y >= self.list_top:
            k = self.scroll + int((y - self.list_top) // LINE_PX)
            if k < min(len(rows), self.scroll + self.visible_rows):
                return "agent", rows[k].agent_id
        return None

    def ensure_visible(self, index: int) -> None:
        """Scroll so the agent row `index` is shown."""
        if index < self.scroll:
            self.scroll = index
        elif self.visible_rows and index >= self.scroll + self.visible_rows:
            self.scroll = index - self.visible_rows + 1


WORD = re.compile(r"\S+")
TILE_MARGIN_PX = 4  # px around a word's tile: room for its glyphs' bearings
MAX_TILES = 20_000  # word tiles kept (~1 kB each); beyond, the cache starts again


class WordTiles:
    """A line of text drawn word by word from kept tiles: the same pixels as one `draw.text`
    of the line, at a fraction of the cost when its words repeat (an agent row's id, role, mode
    and state do between refreshes; its altitude and speed often).

    Each word is drawn once per (word, sub-pixel x, colour, background) onto its background and
    kept cropped to its ink; a line is then its words' tiles pasted where `draw.text` puts those
    glyphs: at x + the advance of the text before the word (Pillow renders each glyph at its own
    sub-pixel pen position, and the words of a row are apart by spaces, so their inks never
    touch). A line whose words' inks would touch, or a font whose advances do not add up, is
    drawn whole (tests/gui/test_frame_cost.py compares the two on thousands of rows)."""

    def __init__(self) -> None:
        self._tiles: dict[tuple[str, float, tuple[int, ...], tuple[int, ...]], Any] = {}  # _tile
        self._advance: dict[str, float] = {}

    def draw(
        self,
        img: Image.Image,
        draw: ImageDraw.ImageDraw,
        xy: tuple[int, int],
        text: str,
        fill: tuple[int, ...],
        bg: tuple[int, ...],
    ) -> None:
        """Draw `text` at integer `xy` in `fill` over `bg` (what is under it in `img`)."""
        f = font()
        x, y = xy
        space = self._length(" ")
        placed: list[tuple[int, int, Image.Image]] = []  # (x, y, tile) of each word
        pen, last, right = float(x), 0, -(10**9)
        for m in WORD.finditer(text):
            pen += space * (m.start() - last)
            ix = int(pen)
            tile = self._tile(m.group(), pen - ix, fill, bg)
            if tile is not None:
                dx, dy, image = tile
                if image is None or ix + dx < right:  # inks would touch: one draw.text
                    draw.text(xy, text, font=f, fill=fill)
                    return
                placed.append((ix + dx, y + dy, image))
                right = ix + dx + image.width
            pen += self._length(m.group())
            last = m.end()
        for px, py, image in placed:
            img.paste(image, (px, py))

    def _length(self, word: str) -> float:
        got = self._advance.get(word)
        if got is None:
            got = self._advance[word] = font().getlength(word)
        return got

    def _tile(
        self, word: str, frac: float, fill: tuple[int, ...], bg: tuple[int, ...]
    ) -> tuple[int, int, Image.Image | None] | None:
        """(dx, dy, image): `word` drawn at sub-pixel offset `frac` over `bg`, cropped to its
        ink, the crop's top-left (dx, dy) from the integer pen position; None: no ink; image
        None: its ink reaches the tile's margin (drawn whole instead)."""
        key = (word, frac, tuple(fill), tuple(bg))
        if key in self._tiles:
            return self._tiles[key]
        if len(self._tiles) >= MAX_TILES:
            self._tiles.clear()
        m = TILE_MARGIN_PX
        w = int(self._length(word)) + 2 * m + 2
        tile = Image.new("RGBA", (w, LINE_PX + 2 * m), tuple(bg))
        ImageDraw.Draw(tile).text((m + frac, m), word, font=font(), fill=tuple(fill))
        ink = np.flatnonzero((np.asarray(tile) != np.asarray(bg, dtype=np.uint8)).any(axis=-1))
        out = None
        if len(ink):
            rows, cols = np.divmod(ink, w)
            x0, x1, y0, y1 = cols.min(), cols.max() + 1, rows.min(), rows.max() + 1
            if x0 == 0 or y0 == 0 or x1 == w or y1 == tile.height:  # maybe cut: not kept
                out = (0, 0, None)
            else:
                out = (int(x0) - m, int(y0) - m, tile.crop((int(x0), int(y0), int(x1), int(y1))))
        self._tiles[key] = out
        return out
