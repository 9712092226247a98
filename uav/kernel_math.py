"""The scalar maths the flight kernel (uav/kernel.py) inlines into its loop over agents, each
the same bits as the library or numpy function it stands for, written so that the compiled
loop needs no call and no branch it would mispredict: NaN-propagating minimum and maximum
(`nan_min`, `nan_max`), their one-sided forms against a bound that is never NaN (`min_of`,
`max_of`), an angle wrapped into [-pi, pi) (`wrap`) and glibc's hypot (`hypot`).

tests/uav/test_kernel_clamps.py and tests/uav/test_kernel_hypot.py hold them to their
references bit for bit (signed zeros, infinities, NaN, every scale).
"""

from __future__ import annotations

import math

from skyswarm.core.jit import njit

# Compiled into each caller (the flight kernel's stages), with its options: numpy's error
# model, no fastmath (uav/kernel.py).
_STAGE = {"inline": "always", "error_model": "numpy", "nogil": True}


@njit(**_STAGE)
def nan_min(a: float, b: float) -> float:
    """np.minimum for scalars: NaN in, NaN out. Written as two selects without a branch (the
    compiled mixer's clamps were mispredicted branches on random demands: 50-65 ns per agent
    against 28 on steady ones, now 37 on both), the same bits, NaN and signed zeros included."""
    m = a if a < b else b
    return a + b if (a != a) | (b != b) else m


@njit(**_STAGE)
def nan_max(a: float, b: float) -> float:
    """np.maximum for scalars: NaN in, NaN out (selects, as `nan_min`)."""
    m = a if a > b else b
    return a + b if (a != a) | (b != b) else m


@njit(**_STAGE)
def max_of(x: float, k: float) -> float:
    """`nan_max(x, k)` where the bound `k` is never NaN (a gain, limit or literal of the
    kernel's constants, finite by the config's checks): one compare and one select. The
    same bits as `nan_max`, NaN and signed zeros included: x <= k gives k (x == k too, as
    `nan_max` gives its second operand on a tie), and a NaN x fails the test and is returned
    itself (`nan_max` returns x + k, the same quiet NaN). The NaN test `nan_max` needs for an
    operand that may be NaN on either side costs ~35 ns per agent over the ~40 clamps of a
    tick (docs/performance.md)."""
    return k if x <= k else x


@njit(**_STAGE)
def min_of(x: float, k: float) -> float:
    """`nan_min(x, k)` where the bound `k` is never NaN (see `max_of`): x >= k gives k."""
    return k if x >= k else x


@njit(**_STAGE)
def wrap(a: float) -> float:
    """An angle rad into [-pi, pi): `(a + pi) % (2 pi) - pi`, the same numbers, without the
    floating-point remainder when a + pi is already within one turn of [0, 2 pi) (there the
    remainder is exact: a + pi itself, or plus 2 pi for a negative one)."""
    x = a + math.pi
    if 0.0 <= x < 2.0 * math.pi:
        return x - math.pi
    if -2.0 * math.pi < x < 0.0:
        return (x + 2.0 * math.pi) - math.pi
    return x % (2.0 * math.pi) - math.pi


# glibc's hypot (>= 2.35; its x86-64 build has no FMA variant) scales inputs beyond these
# bounds: 2^511, 2^-459, and returns ax + ay when ay <= ax 2^-54 (sysdeps/ieee754/dbl-64/e_hypot.c)
HYPOT_LARGE, HYPOT_TINY, HYPOT_EPS = 2.0**511, 2.0**-459, 2.0**-54


@njit(**_STAGE)
def hypot(x: float, y: float) -> float:
    """math.hypot(x, y), the same bits as glibc's (2.35 on, x86-64): its common case written
    out (sqrt(ax^2 + ay^2) and Borges' correction, the same operations in the same order), the
    library called for the rest (inf, NaN, scaled or negligible operands). Inlined, it saves
    the call and the spill of every live register around it: three per agent and tick
    (tests/uav/test_kernel_hypot.py holds it to math.hypot bit for bit)."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.hypot(x, y)
    x, y = abs(x), abs(y)
    ax = y if x < y else x
    ay = x if x < y else y
    if ax > HYPOT_LARGE or ay < HYPOT_TINY or ay <= ax * HYPOT_EPS:
        return math.hypot(x, y)
    h = math.sqrt(ax * ax + ay * ay)
    if h <= 2.0 * ay:
        delta = h - ay
        t1 = ax * (2.0 * delta - ax)
        t2 = (delta - 2.0 * (ax - ay)) * delta
    else:
        delta = h - ax
        t1 = 2.0 * delta * (ax - 2.0 * ay)
        t2 = (4.0 * delta - ay) * ay + delta * delta
    return h - (t1 + t2) / (2.0 * h)
