"""The ground of an offscreen picture, painted on the CPU under what OpenGL drew.

Mesa llvmpipe (the OpenGL of a machine without a GPU) shades each pixel of the ground quad
with `GROUND_FS` (gui/shaders.py): ~6.6 ms of a 720p video frame's CPU, the largest part of
the picture (docs/gui.md, "Where a video frame's CPU goes"). Through a level camera (one that
does not roll: its rows are horizontal on the ground) every ground point of a screen row lies
at the same view depth, so the fog is one `exp` a row and the grid's coordinates are linear
along the row: `paint_ground` draws the same grid, fades and fog, composited under the
framebuffer's pixels, in ~1.6 ms.

How the picture is put together: the renderer clears each view (the main view, the inset map,
a second view) to transparent black and leaves its ground out (`ground_later=True`);
everything else is drawn with its alpha accumulated (`blend_func` SRC_ALPHA,
ONE_MINUS_SRC_ALPHA for colour, ONE, ONE_MINUS_SRC_ALPHA for alpha), so a pixel holds a
premultiplied colour C and coverage A; after read-back, the ground G goes under it:
C + (1 - A) G, what blending over a drawn ground gives (to a rounding of each channel). The
view drawn last is painted first: its pixels come out opaque, so a view drawn earlier under it
leaves them as they are. A camera that rolls (none of the command line's cameras does: the
chase and FPV views look along level axes) keeps the OpenGL ground: `ground_view` returns None
for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import types as nb_types

from skyswarm.core.jit import ahead, njit
from skyswarm.gui.palette import FOG_M, GRID_MAJOR, GRID_MINOR, GROUND, HORIZON

__all__ = ["GroundView", "ground_view", "paint"]

# the shader's colours, rows: ground, minor lines, major lines, horizon (the fog's colour and
# the clear colour where no ground is)
COLOURS = np.array([GROUND[:3], GRID_MINOR[:3], GRID_MAJOR[:3], HORIZON[:3]], dtype=np.float64)
LEVEL_TOL = 1e-12  # |d(1/w)/du| / |1/w| below this: the camera does not roll


@dataclass(frozen=True)
class GroundView:
    """One view's ground: `viewport` (x, y, w, h, GL pixels from the bottom-left), `minv`
    (3, 3) mapping a pixel's (u, v, 1) in normalised device coordinates to (x, y, 1) / w on
    the ground plane (w: the clip-space w, the view depth of a perspective camera), the
    ground quad's centre (cx, cy) and half side m, the depth range drawn (near, far), and
    1 / the fog distance (0: no fog); `sky_from`: the viewport's rows from this one up hold no
    ground (the renderer draws the sky there only: OpenGL drew the ground over the sky's lowest
    rows)."""

    viewport: tuple[int, int, int, int]
    minv: np.ndarray
    center: tuple[float, float]
    half_m: float
    near: float
    far: float
    inv_fog: float
    sky_from: int

    def params(self) -> np.ndarray:
        """The kernels' `prm`: centre x, y, half side, near, far, 1 / fog, then COLOURS'
        rows (ground, minor lines, major lines, horizon), float64."""
        head = [*self.center, self.half_m, self.near, self.far, self.inv_fog]
        return np.r_[head, COLOURS.ravel()]


def ground_view(
    vp: np.ndarray,
    projection: np.ndarray,
    viewport: tuple[int, int, int, int],
    center: tuple[float, float],
    half_m: float,
    z: float,
    fog_m: float = FOG_M,
) -> GroundView | None:
    """The ground at height `z` seen through the view-projection `vp` (4, 4; `projection` its
    projection) in `viewport`, or None where `paint_ground` does not apply: a camera that
    rolls (its screen rows are not level on the ground) or looks along the ground plane."""
    cols = np.array([vp[:, 0], vp[:, 1], vp[:, 2] * z + vp[:, 3]]).T  # (x, y, 1) -> clip
    homography = cols[[0, 1, 3]]
    if abs(np.linalg.det(homography)) < 1e-300:
        return None
    minv = np.linalg.inv(homography)
    if abs(minv[2, 0]) > LEVEL_TOL * (abs(minv[2, 1]) + abs(minv[2, 2])):
        return None
    p = np.asarray(projection, dtype=np.float64)
    if p[3, 3] == 0.0:  # perspective: the near and far planes as view depths
        near, far = p[2, 3] / (p[2, 2] - 1.0), p[2, 3] / (p[2, 2] + 1.0)
        inv_fog = 1.0 / fog_m
    else:  # orthographic: w = 1 everywhere, no fog (the renderer's top view has none)
        near, far, inv_fog = -math.inf, math.inf, 0.0
    # the rows `paint_ground` paints (its own arithmetic, row by row)
    h = int(viewport[3])
    v = (np.arange(h) + 0.5) * (2.0 / h) - 1.0
    s = minv[2, 1] * v + minv[2, 2]
    with np.errstate(divide="ignore"):
        depth = np.where(s > 0.0, 1.0 / s, -1.0)
    rows = np.flatnonzero((s > 0.0) & (depth >= near) & (depth <= far))
    return GroundView(
        tuple(int(a) for a in viewport), minv, (float(center[0]), float(center[1])),
        float(half_m), float(near), float(far), inv_fog, int(rows[-1]) + 1 if len(rows) else 0,
    )  # fmt: skip


def paint(rgba: np.ndarray, view: GroundView) -> None:
    """Put `view`'s ground under the premultiplied pixels of `rgba` ((H, W) uint32, each
    pixel's R, G, B, A bytes as one little-endian word, bottom row first, as OpenGL reads
    them), in its viewport; pixels there come out opaque."""
    paint_ground(rgba, *view.viewport, view.minv, view.params())


_U = np.uint32
_F = np.float32


@njit(nogil=True)
def _under(row: np.ndarray, ground: np.ndarray) -> None:  # pragma: no cover - compiled
    """row = row + (255 - its alpha) / 255 x ground, per channel, each rounded; alpha 255.
    Channels 0 and 2 go through the 16-bit halves of one word (x / 255 as (x + 128 + (x +
    128) >> 8) >> 8, exact for x <= 255 x 255)."""
    for i in range(ground.shape[0]):
        p, q = row[i], ground[i]
        a = _U(255) - (p >> _U(24))
        rb = (q & _U(0x00FF00FF)) * a + _U(0x00800080)
        rb = ((rb + ((rb >> _U(8)) & _U(0x00FF00FF))) >> _U(8)) & _U(0x00FF00FF)
        g = ((q >> _U(8)) & _U(0xFF)) * a + _U(0x80)
        g = ((g + (g >> _U(8))) >> _U(8)) & _U(0xFF)
        row[i] = p + rb + (g << _U(8)) + (a << _U(24))


@njit(nogil=True)
def _byte(c: float) -> int:  # pragma: no cover - compiled
    """A colour channel 0..1 as the 8-bit level OpenGL stores it."""
    return int(round(min(max(c, 0.0), 1.0) * 255.0))


@njit(nogil=True, error_model="numpy")
def paint_ground(rgba, vx, vy, vw, vh, minv, prm):  # pragma: no cover - compiled
    """`paint`'s kernel: every row of the viewport (x, y, w, h) `_ground_row`."""
    index, ground = _row_buffers(vw)
    for j in range(vy, vy + vh):
        _ground_row(rgba[j, vx : vx + vw], j - vy, vw, vh, minv, prm, index, ground)


@njit(nogil=True)
def _row_buffers(vw):  # pragma: no cover - compiled
    """`_ground_row`'s pixel indices (float32) and its ground row (uint32), `vw` long."""
    index = np.empty(vw, np.float32)
    for i in range(vw):
        index[i] = _F(i)
    return index, np.empty(vw, np.uint32)


@njit(nogil=True, error_model="numpy")
def _ground_row(row, j, vw, vh, minv, prm, index, ground):  # pragma: no cover - compiled
    """The ground under `row`, the viewport's row `j` from its bottom (`vw` x `vh` pixels):
    the row's view depth 1 / s, the fog, and the ground coordinates x = xa + xb i,
    y = ya + yb i of its pixels i; per pixel `GROUND_FS`'s grid in float32 (its line coverage
    from the derivatives of the grid coordinate across one pixel, here exact instead of the
    2x2 block's differences) into `ground`, then `_under`. `prm`: `GroundView.params`."""
    su, sv = 2.0 / vw, 2.0 / vh
    cx, cy, half, near, far, inv_fog = prm[0], prm[1], prm[2], prm[3], prm[4], prm[5]
    g0, g1, g2 = _F(prm[6]), _F(prm[7]), _F(prm[8])
    n0, n1, n2 = _F(prm[9]), _F(prm[10]), _F(prm[11])
    j0, j1, j2 = _F(prm[12]), _F(prm[13]), _F(prm[14])
    h0, h1, h2 = prm[15], prm[16], prm[17]
    clear = _U(_byte(h0) | (_byte(h1) << 8) | (_byte(h2) << 16))
    fcx, fcy, fh = _F(cx), _F(cy), _F(half)
    u0 = 0.5 * su - 1.0  # the first pixel's centre
    v = (j + 0.5) * sv - 1.0
    s = minv[2, 1] * v + minv[2, 2]
    depth = 1.0 / s if s > 0.0 else -1.0
    if not (s > 0.0 and depth >= near and depth <= far):  # above the horizon, or clipped
        ground[:] = clear
        _under(row, ground)
        return
    e = math.exp(-depth * inv_fog)  # 1 - the fog
    f0, f1, f2 = _F(h0 * (1.0 - e)), _F(h1 * (1.0 - e)), _F(h2 * (1.0 - e))
    fe = _F(e)
    rx = minv[0, 1] * v + minv[0, 2]  # x * s at u = 0
    ry = minv[1, 1] * v + minv[1, 2]
    xa, xb = _F((minv[0, 0] * u0 + rx) * depth), _F(minv[0, 0] * su * depth)
    ya, yb = _F((minv[1, 0] * u0 + ry) * depth), _F(minv[1, 0] * su * depth)
    # one pixel up changes s by bs: d(x' / s)/dj = (m01 sv s - x' bs) / s^2, x' linear
    # in i; one pixel across changes x by xb
    bs = minv[2, 1] * sv
    d2 = depth * depth
    ex0 = _F((minv[0, 1] * sv * s - (minv[0, 0] * u0 + rx) * bs) * d2)
    ex1 = _F(-minv[0, 0] * su * bs * d2)
    ey0 = _F((minv[1, 1] * sv * s - (minv[1, 0] * u0 + ry) * bs) * d2)
    ey1 = _F(-minv[1, 0] * su * bs * d2)
    cdx, cdy = abs(xb), abs(yb)
    for i in range(vw):
        t = index[i]
        x = xa + xb * t
        y = ya + yb * t
        dx = max(cdx + abs(ex0 + ex1 * t), _F(1e-6))  # fwidth: m per pixel
        dy = max(cdy + abs(ey0 + ey1 * t), _F(1e-6))
        m_px = max(dx, dy)
        r = _F(1.0) / (dx * dy)
        rdx, rdy = dy * r, dx * r
        # the 1 m lines, 1 px wide: coverage 1 - clamp(distance / fwidth), faded out as
        # the cells shrink below 4 px (m_px 0.08 -> 0.25)
        gx = (_F(0.5) - abs(x - np.floor(x) - _F(0.5))) * rdx
        gy = (_F(0.5) - abs(y - np.floor(y) - _F(0.5))) * rdy
        cover = _F(1.0) - min(min(gx, gy), _F(1.0))
        k = min(max((m_px - _F(0.08)) * _F(1.0 / 0.17), _F(0.0)), _F(1.0))
        a = cover * (_F(1.0) - k * k * (_F(3.0) - _F(2.0) * k))
        c0, c1, c2 = g0 + (n0 - g0) * a, g1 + (n1 - g1) * a, g2 + (n2 - g2) * a
        # the 10 m lines, 1.5 px wide, faded out from m_px 0.8 to 2.5
        xt, yt = x * _F(0.1), y * _F(0.1)
        hx = (_F(0.5) - abs(xt - np.floor(xt) - _F(0.5))) * (rdx * _F(10.0))
        hy = (_F(0.5) - abs(yt - np.floor(yt) - _F(0.5))) * (rdy * _F(10.0))
        cover = _F(1.0) - min(max(min(hx, hy) - _F(0.25), _F(0.0)), _F(1.0))
        k = min(max((m_px - _F(0.8)) * _F(1.0 / 1.7), _F(0.0)), _F(1.0))
        a = cover * (_F(1.0) - k * k * (_F(3.0) - _F(2.0) * k))
        c0, c1, c2 = c0 + (j0 - c0) * a, c1 + (j1 - c1) * a, c2 + (j2 - c2) * a
        inside = (abs(x - fcx) < fh) & (abs(y - fcy) < fh)
        r0 = np.int32((f0 + c0 * fe) * _F(255.0) + _F(0.5))
        r1 = np.int32((f1 + c1 * fe) * _F(255.0) + _F(0.5))
        r2 = np.int32((f2 + c2 * fe) * _F(255.0) + _F(0.5))
        word = _U(r0 | (r1 << np.int32(8)) | (r2 << np.int32(16)))
        ground[i] = word if inside else clear
    _under(row, ground)


_ROWS = nb_types.Array(nb_types.uint32, 2, "C")
_M3 = nb_types.Array(nb_types.float64, 2, "C")
_V = nb_types.Array(nb_types.float64, 1, "C")
SIGNATURE = (_ROWS, *[nb_types.int64] * 4, _M3, _V)
ahead(paint_ground, SIGNATURE)


def prepare() -> None:
    """Compile the kernel, or load it from numba's cache (a render pool, before its
    processes start, as gui/yuv.py's; each canvas, before its first paint). Loaded this way
    a cached kernel skips numba's context refresh (core/kernel_loads.py), which imports ~320
    modules: ~0.4 s of CPU in each of a video's render processes at its first frame."""
    from skyswarm.core.kernel_loads import cached_loads_without_refresh

    with cached_loads_without_refresh():  # a cached kernel: no refresh of numba's context
        paint_ground.compile(SIGNATURE)
