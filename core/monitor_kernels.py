"""Compiled per-tick passes of the post-tick monitors (phase 6): the collision monitor's
numerical guard with its copy of the velocities (core/collisions.py) and the hover mission's
position-error metric (missions/hover.py). One pass over the agents' rows each, where numpy
took four to six calls over the same arrays at 400 Hz; the same numbers to the bit (numpy's
pairwise summation of `np.add.reduce` reproduced in `add_reduce`).

    ok = guard_and_keep(position, velocity, lo, hi, prev, speed2, dist2)  # False: numpy's check
    total, peak = squared_errors(position, lo, start, sq)   # sum and max of |p - start|^2
"""

from __future__ import annotations

import numpy as np

from skyswarm.core.jit import ahead, njit

_opts = {"fastmath": False, "nogil": True}

# a row's |v|^2 times this at most the bound proves numpy's value (the same three squares
# summed, maybe in another order: a few 1e-16 apart) is at most the bound too
_MARGIN = 1.0 + 1e-12


@njit(**_opts)
def guard_and_keep(position, velocity, lo, hi, prev, speed2, dist2):  # pragma: no cover
    """Copy `velocity` (M, 3) m/s into `prev` (M, 3) (every row: the monitor's velocity before
    the next tick's contacts) and return True only if every row lo .. hi - 1 is certainly
    within the guard's limits: |v|^2 <= `speed2` and |p|^2 <= `dist2` (position (M, 3) m),
    finite. False when in doubt (a NaN, an inf, a row at or near a limit): the caller then
    runs the exact check."""
    m = velocity.shape[0]
    for i in range(m):
        prev[i, 0] = velocity[i, 0]
        prev[i, 1] = velocity[i, 1]
        prev[i, 2] = velocity[i, 2]
    ok = True
    for i in range(lo, hi):
        vx, vy, vz = velocity[i, 0], velocity[i, 1], velocity[i, 2]
        px, py, pz = position[i, 0], position[i, 1], position[i, 2]
        v2 = vx * vx + vy * vy + vz * vz
        p2 = px * px + py * py + pz * pz
        # (NaN compares false: not certain)
        if not (v2 * _MARGIN <= speed2 and p2 * _MARGIN <= dist2):
            ok = False
    return ok


@njit(**_opts)
def _block(a, lo, n):  # pragma: no cover - compiled
    """numpy's pairwise sum of a block a[lo:lo + n], n <= 128: a plain loop below 8, else
    eight partial sums combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then
    the remainder."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(**_opts)
def add_reduce(a):  # pragma: no cover - compiled
    """np.add.reduce of a contiguous (n,) float64 vector to the bit: numpy 2 adds its identity
    0.0 to the pairwise sum of all n (`pairwise_sum` of its loops: blocks of at most 128
    summed by `_block`, longer runs split in halves at a multiple of 8, left + right).
    The recursion runs on an explicit stack (numba's cache does not reload recursive
    functions); tests/core/test_monitor_kernels.py holds it to numpy."""
    lo_s = np.empty(64, dtype=np.int64)  # frames: start, length, 0 new / 1 left / 2 both done
    n_s = np.empty(64, dtype=np.int64)
    st = np.empty(64, dtype=np.int64)
    vals = np.empty(64)  # the sums of finished halves, left below right
    sp, vp = 0, 0
    lo_s[0], n_s[0], st[0] = 0, a.shape[0], 0
    while sp >= 0:
        lo, m = lo_s[sp], n_s[sp]
        if m <= 128:
            vals[vp] = _block(a, lo, m)
            vp += 1
            sp -= 1
            continue
        n2 = m // 2
        n2 -= n2 % 8
        if st[sp] == 0:  # the left half first
            st[sp] = 1
            sp += 1
            lo_s[sp], n_s[sp], st[sp] = lo, n2, 0
        elif st[sp] == 1:  # then the right half
            st[sp] = 2
            sp += 1
            lo_s[sp], n_s[sp], st[sp] = lo + n2, m - n2, 0
        else:  # left + right
            vals[vp - 2] = vals[vp - 2] + vals[vp - 1]
            vp -= 1
            sp -= 1
    return 0.0 + vals[0]


@njit(**_opts)
def squared_errors(position, lo, start, sq):  # pragma: no cover - compiled
    """sq[i] = |position[lo + i] - start[i]|^2 (m^2) for the n rows of `start` (n, 3) m, summed
    as numpy sums the three squared columns ((x + y) + z), n >= 1; returns (np.add.reduce(sq),
    np.maximum.reduce(sq)) to the bit (NaN if any is NaN)."""
    n = start.shape[0]
    for i in range(n):
        dx = position[lo + i, 0] - start[i, 0]
        dy = position[lo + i, 1] - start[i, 1]
        dz = position[lo + i, 2] - start[i, 2]
        sq[i] = (dx * dx + dy * dy) + dz * dz
    peak = sq[0]
    for i in range(1, n):
        x = sq[i]
        if peak != peak:
            break
        if x != x or x > peak:
            peak = x
    return add_reduce(sq), peak


# The types the monitors call them with (compiled before the clock: core/jit.py `ahead`).
ahead(guard_and_keep, "f8[2] f8[2] i8 i8 f8[2] f8 f8")
ahead(squared_errors, "f8[2] i8 f8[2] f8[1]")
ahead(add_reduce, "f8[1]")
