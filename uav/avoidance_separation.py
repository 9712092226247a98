"""The avoidance layer's instrumentation, compiled: the smallest distance between two live UAVs
at a scan (uav/avoidance.py `Avoidance._measure`; never fed back into a command), as a norm of
the pair, tested against a KD-tree (tests/uav/test_avoidance_kernel.py,
tests/uav/test_avoidance_parallel.py).

The nearest tracked pair bounds the answer, so a grid of cells a hair larger than that bound
finds every nearer pair among the 27 cells around each UAV. `min_separation_parallel` is the
same search over fixed chunks of agents on numba's threads (Avoidance calls it when
core.backends.threaded(N)), each chunk's smallest then the smallest of those in order: the same
value with any number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.backends.spatial_hash import cell_hash
from skyswarm.core.jit import ahead, njit, prange
from skyswarm.uav.avoidance_steer import CHUNK  # agents per work item, the layer's fixed split


@njit(nogil=True)
def min_separation(pos, alive, target, head, nxt):  # pragma: no cover - compiled
    """The smallest distance between two `alive` (N,) UAVs at `pos` (N, 3) m (finite where
    alive), as np.linalg.norm of their difference, or inf when no pair in `target` (N, K) (each
    agent's tracks: indices into `pos`, -1 or >= N skipped) is one of live UAVs: that pair's
    distance U bounds the answer, so a grid of cells a hair larger than U finds every pair as
    near (each in one of the 27 cells around the other). `head` (T,) int64 (T a power of two)
    and `nxt` (N,) int64 are work space."""
    n = target.shape[0]
    best = _tracked_range(np.int64(0), n, pos, alive, target, np.inf)
    if not best < np.inf or best == 0.0:
        return best
    u = _buckets(pos, alive, best, head, nxt)
    return _nearest_range(np.int64(0), n, pos, alive, u, head, nxt, best)


@njit(nogil=True, parallel=True)
def min_separation_parallel(pos, alive, target, head, nxt):  # pragma: no cover - compiled
    """`min_separation` (the same arguments and value) on numba's threads, CHUNK agents per
    work item, each item's smallest distance then the smallest of those in order; the
    buckets are filled serially. Every distance is a number >= +0 (the positions of live UAVs
    are finite), and a min of such values is the same however it is grouped."""
    n = target.shape[0]
    chunks = (n + CHUNK - 1) // CHUNK
    low = np.empty(chunks)
    for ch in prange(chunks):
        low[ch] = _tracked_range(ch * CHUNK, min(n, (ch + 1) * CHUNK), pos, alive, target, np.inf)
    best = np.inf
    for ch in range(chunks):
        best = min(best, low[ch])
    if not best < np.inf or best == 0.0:
        return best
    u = _buckets(pos, alive, best, head, nxt)
    for ch in prange(chunks):
        lo, hi = ch * CHUNK, min(n, (ch + 1) * CHUNK)
        low[ch] = _nearest_range(lo, hi, pos, alive, u, head, nxt, np.inf)
    for ch in range(chunks):
        best = min(best, low[ch])
    return best


@njit(nogil=True)
def _tracked_range(lo, hi, pos, alive, target, best):  # pragma: no cover - compiled
    """`min_separation`'s bound: `best` and the distances of the tracked pairs of live UAVs
    of agents lo .. hi - 1, the smallest."""
    n, k = target.shape
    for i in range(lo, hi):
        if not alive[i]:
            continue
        for s in range(k):
            j = target[i, s]
            if 0 <= j < n and j != i and alive[j]:
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                dz = pos[j, 2] - pos[i, 2]
                best = min(best, math.sqrt(dx * dx + dy * dy + dz * dz))
    return best


@njit(nogil=True)
def _buckets(pos, alive, bound, head, nxt):  # pragma: no cover - compiled
    """`min_separation`'s grid for a nearest pair `bound` m apart: the live UAVs in chained
    buckets of its cells (`head`, `nxt`; a bucket may hold several cells). Returns the cell
    size, m: a millionth larger than the bound, so the roundings of x / u stay far inside
    that margin."""
    u = bound * (1.0 + 1e-6)
    mask = head.shape[0] - 1
    head[:] = -1
    for i in range(pos.shape[0]):
        if alive[i]:
            cx, cy, cz = _cell(pos, i, u)
            h = cell_hash(cx, cy, cz, mask)
            nxt[i] = head[h]
            head[h] = i
    return u


@njit(nogil=True)
def _nearest_range(lo, hi, pos, alive, u, head, nxt, best):  # pragma: no cover - compiled
    """`best` and the distances from each live agent of lo .. hi - 1 to the live UAVs of
    higher index in the 27 cells around it (`_buckets`), the smallest."""
    mask = head.shape[0] - 1
    for i in range(lo, hi):
        if not alive[i]:
            continue
        cx, cy, cz = _cell(pos, i, u)  # agent i's cell, once: its 27 neighbours offset it
        for ox in range(-1, 2):
            for oy in range(-1, 2):
                for oz in range(-1, 2):
                    j = head[cell_hash(cx + ox, cy + oy, cz + oz, mask)]
                    while j >= 0:
                        if j > i:
                            dx = pos[j, 0] - pos[i, 0]
                            dy = pos[j, 1] - pos[i, 1]
                            dz = pos[j, 2] - pos[i, 2]
                            best = min(best, math.sqrt(dx * dx + dy * dy + dz * dz))
                        j = nxt[j]
    return best


@njit(nogil=True, inline="always")
def _cell(pos, i, u):  # pragma: no cover - compiled
    """The integer grid cell (cells `u` m) of row i of `pos`."""
    return (
        np.int64(math.floor(pos[i, 0] / u)),
        np.int64(math.floor(pos[i, 1] / u)),
        np.int64(math.floor(pos[i, 2] / u)),
    )


# compiled before the clock (core/jit.py); every array C-contiguous (Avoidance makes them so)
ahead(min_separation, "f8[2] ?[1] i8[2] i8[1] i8[1]")
ahead(min_separation_parallel, "f8[2] ?[1] i8[2] i8[1] i8[1]")
