"""The video's colour conversion, done in the render process: a framebuffer's RGBA bytes as
OpenGL reads them (bottom row first) to planar yuv420p (I420: the Y plane, then U, then V; top
row first), BT.709 limited range, the chroma of each 2x2 block their mean.

ffmpeg then takes the frames as they are: 1.5 bytes a pixel through the pipe instead of 4, and
no swscale conversion (its RGBA -> yuv420p cost ~3.8 ms of ffmpeg's CPU a 720p frame; this
kernel ~1.5 ms, in a render process). docs/gui.md, "Where a video frame's CPU goes", has the
measurements and the picture's PSNR against the RGBA path.

The arithmetic is 32-bit fixed point (coefficients in units of 2**-16, rounded), unsigned so
that LLVM packs 8 pixels into each AVX2 operation: every Y value is the exact BT.709 value
(`gui.video.bt709_yuv`) rounded to the nearest code, every U and V the exact mean of its
block's four rounded likewise, but within 0.006 of a half, where the coefficients' rounding
may tip it. Integer arithmetic: the same bytes on every machine.
"""

from __future__ import annotations

import numpy as np
from numba import types as nb_types

from skyswarm.core.jit import ahead, njit

KR, KB = 0.2126, 0.0722  # BT.709 luma weights of red and blue (gui/video.py's)
KG = 1.0 - KR - KB
FRAC = 16  # fixed-point fraction bits
Y_SPAN, C_SPAN = 219.0 / 255.0, 224.0 / 255.0  # limited range: Y 16..235, U and V 16..240


def _fixed(x: float) -> np.uint32:
    return np.uint32(round(abs(x) * (1 << FRAC)))


# Y = 16 + Y_SPAN (KR R + KG G + KB B); U and V of the sum of a block's four pixels (hence / 4):
# U = 128 + C_SPAN (B - Y') / (2 (1 - KB)), V = 128 + C_SPAN (R - Y') / (2 (1 - KR)), Y' the
# luma before scaling. The negative terms are subtracted (unsigned arithmetic).
Y_R, Y_G, Y_B = (_fixed(Y_SPAN * k) for k in (KR, KG, KB))
U_R, U_G = (_fixed(C_SPAN * k / (2.0 * (1.0 - KB)) / 4.0) for k in (KR, KG))
U_B = _fixed(C_SPAN / 2.0 / 4.0)  # (1 - KB) / (2 (1 - KB))
V_G, V_B = (_fixed(C_SPAN * k / (2.0 * (1.0 - KR)) / 4.0) for k in (KG, KB))
V_R = _fixed(C_SPAN / 2.0 / 4.0)
HALF = np.uint32(1 << (FRAC - 1))  # rounds to the nearest code
Y_ZERO = np.uint32((16 << FRAC) + (1 << (FRAC - 1)))
C_ZERO = np.uint32((128 << FRAC) + (1 << (FRAC - 1)))
SHIFT = np.uint32(FRAC)
BYTE, PAIRS = np.uint32(0xFF), np.uint32(0x00FF00FF)  # one channel; channels 0 and 2 of a pixel
S8, S16, LOW16 = np.uint32(8), np.uint32(16), np.uint32(0xFFFF)


@njit(nogil=True)
def rgba_to_yuv420p(rgba: np.ndarray, y: np.ndarray, u: np.ndarray, v: np.ndarray) -> None:
    """Fill `y` (H, W), `u` and `v` (H/2, W/2) uint8, top row first, from `rgba` (H, W)
    uint32: each pixel's R, G, B, A bytes read as one little-endian word, bottom row first.

    One pass over each pair of rows, each pixel read once: its Y, and its R and B (and G) added
    to its column's sums in the 16-bit halves of a word; then each pair of columns' sums make a
    block's U and V (1.5 ms a 720p frame against 2.0 for a second pass over the picture)."""
    h, w = rgba.shape
    rb, ga = np.empty(w, np.uint32), np.empty(w, np.uint32)
    for j in range(h // 2):
        top, bottom = rgba[h - 1 - 2 * j], rgba[h - 2 - 2 * j]
        y0, y1 = y[2 * j], y[2 * j + 1]
        for i in range(w):
            a, c = top[i], bottom[i]
            y0[i] = np.uint8(
                (Y_R * (a & BYTE) + Y_G * ((a >> S8) & BYTE) + Y_B * ((a >> S16) & BYTE) + Y_ZERO)
                >> SHIFT
            )
            y1[i] = np.uint8(
                (Y_R * (c & BYTE) + Y_G * ((c >> S8) & BYTE) + Y_B * ((c >> S16) & BYTE) + Y_ZERO)
                >> SHIFT
            )
            rb[i] = (a & PAIRS) + (c & PAIRS)
            ga[i] = ((a >> S8) & PAIRS) + ((c >> S8) & PAIRS)
        uj, vj = u[j], v[j]
        for i in range(w // 2):
            s, t = rb[2 * i] + rb[2 * i + 1], ga[2 * i] + ga[2 * i + 1]
            r, g, b = s & LOW16, t & LOW16, s >> S16
            uj[i] = np.uint8((C_ZERO + U_B * b - U_R * r - U_G * g) >> SHIFT)
            vj[i] = np.uint8((C_ZERO + V_R * r - V_G * g - V_B * b) >> SHIFT)


_U4 = nb_types.Array(nb_types.uint32, 2, "C")
_U1 = nb_types.Array(nb_types.uint8, 2, "C")
SIGNATURE = (_U4, _U1, _U1, _U1)
ahead(rgba_to_yuv420p, SIGNATURE)


def prepare() -> None:
    """Compile the kernel, or load it from numba's cache: a render pool does it before it
    starts its processes, so that they load it rather than each compile it."""
    from skyswarm.core.kernel_loads import cached_loads_without_refresh

    with cached_loads_without_refresh():  # a cached kernel: no refresh of numba's context
        rgba_to_yuv420p.compile(SIGNATURE)


def yuv420p_planes(buffer: bytearray | memoryview | np.ndarray, size: tuple[int, int]) -> tuple:
    """The Y, U and V planes, (H, W) and (H/2, W/2) uint8 views, of the yuv420p frame of
    `size` (W, H) that `buffer` holds (W * H * 3 / 2 bytes)."""
    w, h = size
    flat = np.frombuffer(buffer, dtype=np.uint8)
    q = w * h // 4
    y = flat[: w * h].reshape(h, w)
    u = flat[w * h : w * h + q].reshape(h // 2, w // 2)
    return y, u, flat[w * h + q :].reshape(h // 2, w // 2)
