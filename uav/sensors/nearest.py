"""The proximity sensor's search, compiled: for each live agent, the K nearest live UAVs and boxes
within range and field of view, found through a uniform grid of the UAVs (cells of the range's
size: a dense table of the cells' bounding box when it is small, else hashed), so a scan costs
O(N K) memory and about O(N x the UAVs within a cell's neighbourhood) time instead of the
(N, N) of every pair. The agents of one cell share one walk of the 27 cells around it.

The result is exactly that of testing every pair: a UAV within `range_m` lies in the agent's
cell or one of its 26 neighbours; boxes (few) are tested one by one. The K kept are the nearest
by true distance (ties by target index), so the order the grid visits the UAVs in never shows;
they are then stored in order of target index (as the dense model's columns: a sum over the
slots adds in the same order), empty slots last.

    target = np.empty((n, k), np.int64); rel = np.empty((n, k, 3)); dist = np.empty((n, k))
    nearest_targets(pos, yaw, alive, boxes, range_m, half_fov, target, rel, dist)
    # target[i, s]: one of the K nearest, by index (< n: a UAV, n + b: box b; -1: none),
    # rel[i, s] its nearest point minus pos[i] (m), dist[i, s] its distance (m, inf where none)
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.jit import ahead, njit, prange


@njit(nogil=True)
def _key(cx, cy, cz, mask):  # pragma: no cover - compiled
    return ((cx * 73856093) ^ (cy * 19349663) ^ (cz * 83492791)) & mask


@njit(nogil=True)
def _grid(pos, alive, h):  # pragma: no cover - compiled
    """The hashed grid of the live agents: per agent its integer cell (n, 3) and the next agent
    of its bucket (-1: end), per bucket (2^m >= 2 n of them) its first agent; and the mask."""
    n = pos.shape[0]
    size = 1
    while size < 2 * n:
        size *= 2
    mask = size - 1
    head = np.full(size, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    cell = np.zeros((n, 3), dtype=np.int64)
    for i in range(n):
        if not alive[i]:
            continue
        for a in range(3):
            cell[i, a] = int(math.floor(pos[i, a] / h))
        b = _key(cell[i, 0], cell[i, 1], cell[i, 2], mask)
        nxt[i] = head[b]
        head[b] = i
    return cell, head, nxt, mask


@njit(nogil=True)
def _shift(i, s, target, rel, dist):  # pragma: no cover - compiled
    """Agent i's slot s - 1 moved one place down, into slot s (the insertion sorts' step)."""
    target[i, s], dist[i, s] = target[i, s - 1], dist[i, s - 1]
    rel[i, s, 0], rel[i, s, 1], rel[i, s, 2] = rel[i, s - 1, 0], rel[i, s - 1, 1], rel[i, s - 1, 2]


@njit(nogil=True)
def _offer(i, t, d, dx, dy, dz, target, rel, dist):  # pragma: no cover - compiled
    """Insert target `t` at distance `d` (offset dx, dy, dz) into agent i's slots, kept sorted
    by (distance, index); dropped when all slots are nearer."""
    k = target.shape[1]
    last = k - 1
    if d > dist[i, last] or (d == dist[i, last] and target[i, last] >= 0 and t > target[i, last]):
        return
    _sink(i, last, t, d, dx, dy, dz, target, rel, dist)


@njit(nogil=True)
def _sink(i, s, t, d, dx, dy, dz, target, rel, dist):  # pragma: no cover - compiled
    """Target `t` (distance `d`, offset dx, dy, dz) into agent i's slot `s` or the first slot
    above it whose (distance, index) is not larger, the slots between moved one place down
    (the insertion step of `_offer` and `_rank`)."""
    while s > 0 and (d < dist[i, s - 1] or (d == dist[i, s - 1] and t < target[i, s - 1])):
        _shift(i, s, target, rel, dist)
        s -= 1
    target[i, s], dist[i, s] = t, d
    rel[i, s, 0], rel[i, s, 1], rel[i, s, 2] = dx, dy, dz


@njit(nogil=True)
def _visible(dx, dy, d, yaw, range_m, half_fov):  # pragma: no cover - compiled
    """In range and in the field of view about heading `yaw` (the dense scan's tests)."""
    if d > range_m:
        return False
    if half_fov >= math.pi:  # all round: every bearing, wrapped to [-pi, pi), is within
        return True
    b = math.atan2(dy, dx) - yaw
    b = (b + math.pi) % (2.0 * math.pi) - math.pi
    return abs(b) <= half_fov + 1e-12


@njit(nogil=True)
def _take(i, c, ranked, t, d, dx, dy, dz, target, rel, dist):  # pragma: no cover - compiled
    """Target `t` at distance `d` (offset dx, dy, dz) for agent i, whose first `c` slots are
    filled: while they are not `ranked` and fewer than K, appended in visit order (K or fewer
    in range: all of them are kept, and only their order by index matters); at the K + 1-th
    (or a NaN distance) the slots are ranked by (distance, index) as `_offer` keeps them, and
    `_offer` from then on. Either way the K kept are the K smallest by (distance, index), the
    same set whatever the visit order. Returns (c, ranked)."""
    if not ranked:
        if c < target.shape[1] and d == d:
            target[i, c], dist[i, c] = t, d
            rel[i, c, 0], rel[i, c, 1], rel[i, c, 2] = dx, dy, dz
            return c + 1, False
        _rank(i, c, target, rel, dist)
    _offer(i, t, d, dx, dy, dz, target, rel, dist)
    return c, True


@njit(nogil=True)
def _rank(i, c, target, rel, dist):  # pragma: no cover - compiled
    """Sort agent i's first `c` slots (finite distances) by (distance, index): the state
    `_offer` would have built from the same targets (the slots after them are empty)."""
    for s in range(1, c):
        t, d = target[i, s], dist[i, s]
        _sink(i, s, t, d, rel[i, s, 0], rel[i, s, 1], rel[i, s, 2], target, rel, dist)


@njit(nogil=True)
def _groups(cell, head, nxt, alive, mask):  # pragma: no cover - compiled
    """The live agents grouped by cell, the groups in order of their lowest index (rows are
    then written in about index order): `members` (M,) agent indices group after group (each
    group in its bucket's chain order) and `start` (G + 1,) each group's offset into it."""
    n = cell.shape[0]
    members = np.empty(n, dtype=np.int64)
    start = np.empty(n + 1, dtype=np.int64)
    grouped = np.zeros(n, dtype=np.bool_)
    g, m = 0, 0
    for i in range(n):
        if not alive[i] or grouped[i]:
            continue
        start[g] = m
        g += 1
        q = head[_key(cell[i, 0], cell[i, 1], cell[i, 2], mask)]
        while q >= 0:  # i's bucket: the agents of i's cell (i among them)
            if cell[q, 0] == cell[i, 0] and cell[q, 1] == cell[i, 1] and cell[q, 2] == cell[i, 2]:
                grouped[q] = True
                members[m] = q
                m += 1
            q = nxt[q]
    start[g] = m
    return members, start[: g + 1]


DENSE_MAX_CELLS = 8  # a dense table of cells while it has at most this many per live agent
# int64's bounds as plain ints (np.iinfo inside a kernel makes its cached code import
# numba.np.arraymath, and with it scipy.linalg: ~0.3 s of every process that loads it)
I64_MAX, I64_MIN = int(np.iinfo(np.int64).max), int(np.iinfo(np.int64).min)


@njit(nogil=True)
def _dense(cell, alive):  # pragma: no cover - compiled
    """The live agents sorted by cell through a dense table of the cells' bounding box (a
    counting sort, each cell's agents in order of index), when the box has at most
    DENSE_MAX_CELLS cells per live agent and finite cells: (members (M,), start (G + 1,) of
    each occupied cell's group in id order, lo (3,) and ext (3,) of the box, first (C + 1,)
    each cell id's offset into members), or ext[0] = 0 when not."""
    n = cell.shape[0]
    lo = np.full(3, I64_MAX, dtype=np.int64)
    hi = np.full(3, I64_MIN, dtype=np.int64)
    live = 0
    for i in range(n):
        if alive[i]:
            live += 1
            for a in range(3):
                lo[a] = min(lo[a], cell[i, a])
                hi[a] = max(hi[a], cell[i, a])
    ext = np.zeros(3, dtype=np.int64)
    members = np.empty(live, dtype=np.int64)
    if live == 0:
        return members, np.zeros(1, dtype=np.int64), lo, ext, np.zeros(1, dtype=np.int64)
    size = 1
    for a in range(3):  # (a NaN or huge position: a cell far out of any table)
        if lo[a] < -(1 << 40) or hi[a] > (1 << 40):
            return members, np.zeros(1, dtype=np.int64), lo, ext, np.zeros(1, dtype=np.int64)
        size *= hi[a] - lo[a] + 1
        if size > DENSE_MAX_CELLS * live + 64:
            return members, np.zeros(1, dtype=np.int64), lo, ext, np.zeros(1, dtype=np.int64)
    for a in range(3):
        ext[a] = hi[a] - lo[a] + 1
    first = np.zeros(size + 1, dtype=np.int64)
    for i in range(n):
        if alive[i]:
            first[_cell_id(cell[i, 0], cell[i, 1], cell[i, 2], lo, ext) + 1] += 1
    groups = 0
    for c in range(size):
        groups += first[c + 1] > 0
        first[c + 1] += first[c]
    fill = first[:-1].copy()
    for i in range(n):
        if alive[i]:
            c = _cell_id(cell[i, 0], cell[i, 1], cell[i, 2], lo, ext)
            members[fill[c]] = i
            fill[c] += 1
    start = np.empty(groups + 1, dtype=np.int64)
    g = 0
    for c in range(size):
        if first[c + 1] > first[c]:
            start[g] = first[c]
            g += 1
    start[groups] = live
    return members, start, lo, ext, first


@njit(nogil=True)
def _cell_id(cx, cy, cz, lo, ext):  # pragma: no cover - compiled
    return ((cx - lo[0]) * ext[1] + (cy - lo[1])) * ext[2] + (cz - lo[2])


@njit(nogil=True)
def _gather(i0, cell, head, nxt, mask, lo, ext, first, members, cand):  # pragma: no cover
    """The live UAVs of agent i0's cell and the 26 around into `cand`; returns how many: from
    the dense table when there is one (ext[0] > 0), else from the hashed grid's chains."""
    nc = 0
    for m in range(27):
        cx = cell[i0, 0] + m // 9 - 1
        cy = cell[i0, 1] + (m // 3) % 3 - 1
        cz = cell[i0, 2] + m % 3 - 1
        if ext[0] > 0:
            if not (
                lo[0] <= cx < lo[0] + ext[0]
                and lo[1] <= cy < lo[1] + ext[1]
                and lo[2] <= cz < lo[2] + ext[2]
            ):
                continue
            c = _cell_id(cx, cy, cz, lo, ext)
            for t in range(first[c], first[c + 1]):
                cand[nc] = members[t]
                nc += 1
        else:
            j = head[_key(cx, cy, cz, mask)]
            while j >= 0:
                if cell[j, 0] == cx and cell[j, 1] == cy and cell[j, 2] == cz:
                    cand[nc] = j
                    nc += 1
                j = nxt[j]
    return nc


@njit(nogil=True)
def _group(
    g, members, start, pos, yaw, boxes, range_m, half_fov, reach2, cell, head, nxt, mask,
    lo, ext, first, target, rel, dist, cand, cpos, d2,
):  # pragma: no cover - compiled  # fmt: skip
    """The slots of group g's agents (alive, one cell): the UAVs of the cell and the 26 around
    are gathered once (`_gather`, into `cand` and their positions into `cpos`, work space),
    then for each agent their squared distances (`d2`, one pass without branches), and the
    ones in range offered (itself left out; in any order: `_take` keeps the same slots), then
    the boxes; reads the shared grid, writes the group's rows."""
    n, k = target.shape
    all_round = half_fov >= math.pi  # (`_visible`'s tests, the first two here)
    nc = _gather(members[start[g]], cell, head, nxt, mask, lo, ext, first, members, cand)
    for q in range(nc):
        j = cand[q]
        cpos[q, 0], cpos[q, 1], cpos[q, 2] = pos[j, 0], pos[j, 1], pos[j, 2]
    for t in range(start[g], start[g + 1]):
        i = members[t]
        x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
        for q in range(nc):
            dx = cpos[q, 0] - x
            dy = cpos[q, 1] - y
            dz = cpos[q, 2] - z
            d2[q] = dx * dx + dy * dy + dz * dz
        c, ranked = 0, False
        for q in range(nc):
            if d2[q] <= reach2 and cand[q] != i:  # (the exact test on the root follows)
                d = math.sqrt(d2[q])
                dx, dy = cpos[q, 0] - x, cpos[q, 1] - y
                if not d > range_m and (
                    all_round or _visible(dx, dy, d, yaw[i], range_m, half_fov)
                ):
                    dz = cpos[q, 2] - z
                    if not ranked and c < k:  # `_take`'s append, here (a call costs more)
                        target[i, c], dist[i, c] = cand[q], d
                        rel[i, c, 0], rel[i, c, 1], rel[i, c, 2] = dx, dy, dz
                        c += 1
                    else:
                        c, ranked = _take(i, c, ranked, cand[q], d, dx, dy, dz, target, rel, dist)
        for b in range(boxes.shape[0]):
            dx = min(max(x, boxes[b, 0] - boxes[b, 3]), boxes[b, 0] + boxes[b, 3])
            dy = min(max(y, boxes[b, 1] - boxes[b, 4]), boxes[b, 1] + boxes[b, 4])
            dz = min(max(z, boxes[b, 2] - boxes[b, 5]), boxes[b, 2] + boxes[b, 5])
            dx, dy, dz = dx - x, dy - y, dz - z
            d = math.sqrt(dx * dx + dy * dy + dz * dz)
            if _visible(dx, dy, d, yaw[i], range_m, half_fov):
                c, ranked = _take(i, c, ranked, n + b, d, dx, dy, dz, target, rel, dist)
        _by_index(i, target, rel, dist)


@njit(nogil=True)
def _search_setup(pos, alive, range_m, target, rel, dist):  # pragma: no cover - compiled
    """The empty slots, the grid and the groups (dense when it can be, else the hashed
    grid's), and the size of the work space a group needs (27 cells of the fullest)."""
    target[:] = -1
    rel[:] = 0.0
    dist[:] = np.inf
    cell, head, nxt, mask = _grid(pos, alive, range_m)
    members, start, lo, ext, first = _dense(cell, alive)
    if ext[0] == 0:
        members, start = _groups(cell, head, nxt, alive, mask)
    fullest = 0
    for g in range(start.shape[0] - 1):
        fullest = max(fullest, start[g + 1] - start[g])
    work = min(pos.shape[0], 27 * fullest)
    return cell, head, nxt, mask, members, start, lo, ext, first, work


@njit(nogil=True)
def nearest_targets(
    pos, yaw, alive, boxes, range_m, half_fov, target, rel, dist
):  # pragma: no cover - compiled
    """Fill `target` (N, K) int64, `rel` (N, K, 3) m and `dist` (N, K) m with each live agent's
    K nearest live UAVs (index j < N, not itself) and boxes (index N + b; `boxes` (B, 6): centre
    and half size, axis-aligned, its nearest point) within `range_m` m and `half_fov` rad of its
    heading `yaw` (N,) rad, in order of target index; empty slots (last): -1, 0, inf. Dead
    agents see nothing. `dist` is `sqrt((dx^2 + dy^2) + dz^2)` of `rel`, numpy's
    `linalg.norm(rel, axis=2)` to the bit. The agents of a cell share one walk of the 27
    cells around it (`_group`)."""
    cell, head, nxt, mask, members, start, lo, ext, first, work = _search_setup(
        pos, alive, range_m, target, rel, dist
    )
    reach2 = (range_m * (1.0 + 1e-9)) ** 2  # a cheap pre-test, never tighter than the root's
    cand, cpos, d2 = np.empty(work, dtype=np.int64), np.empty((work, 3)), np.empty(work)
    for g in range(start.shape[0] - 1):
        _group(
            g, members, start, pos, yaw, boxes, range_m, half_fov, reach2, cell, head, nxt,
            mask, lo, ext, first, target, rel, dist, cand, cpos, d2,
        )  # fmt: skip


CHUNKS = 256  # the threaded search's groups, in at most this many chunks shared by the threads


@njit(nogil=True, parallel=True)
def nearest_targets_parallel(
    pos, yaw, alive, boxes, range_m, half_fov, target, rel, dist
):  # pragma: no cover - compiled
    """`nearest_targets` with the groups split in chunks over numba's threads: each reads the
    shared grid and writes only its own agents' rows, so the result is the same to the bit."""
    cell, head, nxt, mask, members, start, lo, ext, first, work = _search_setup(
        pos, alive, range_m, target, rel, dist
    )
    reach2 = (range_m * (1.0 + 1e-9)) ** 2
    groups = start.shape[0] - 1
    chunks = min(groups, CHUNKS)  # (not from numba.get_num_threads(): that defeats the cache)
    for ch in prange(chunks):
        cand, cpos, d2 = np.empty(work, dtype=np.int64), np.empty((work, 3)), np.empty(work)
        for g in range(ch * groups // chunks, (ch + 1) * groups // chunks):
            _group(
                g, members, start, pos, yaw, boxes, range_m, half_fov, reach2, cell, head,
                nxt, mask, lo, ext, first, target, rel, dist, cand, cpos, d2,
            )  # fmt: skip


@njit(nogil=True)
def _by_index(i, target, rel, dist):  # pragma: no cover - compiled
    """Reorder agent i's filled slots (the first ones) by target index (insertion sort)."""
    for s in range(1, target.shape[1]):
        t = target[i, s]
        if t < 0:
            return
        d, x, y, z = dist[i, s], rel[i, s, 0], rel[i, s, 1], rel[i, s, 2]
        r = s
        while r > 0 and target[i, r - 1] > t:
            _shift(i, r, target, rel, dist)
            r -= 1
        target[i, r], dist[i, r] = t, d
        rel[i, r, 0], rel[i, r, 1], rel[i, r, 2] = x, y, z


TWO_PI = 2.0 * math.pi  # (2 * np.pi, the same float)


@njit(nogil=True)
def remainder(a, b):  # pragma: no cover - compiled
    """numpy's `a % b` of floats (npy_divmod's modulus): fmod, exact in any libm, moved to the
    sign of b; fmod(a, b) is a itself when 0 < a < b (no call then)."""
    if 0.0 < a < b:
        return a
    mod = np.fmod(a, b)  # (LLVM frem: a call to libm fmod)
    if mod != 0.0 or mod != mod:  # (C's `if (mod)`: NaN too)
        if (b < 0.0) != (mod < 0.0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@njit(nogil=True)
def scan_values(
    target, dist, rel, heading, yaw, z_range, z_bearing, range_sigma, bearing_sigma,
    range_m, bearing, horizontal,
):  # pragma: no cover - compiled  # fmt: skip
    """What uav/sensors/proximity.py `scan` computes around numpy's arctan2s, in one pass and
    to the bit of numpy's expressions: `range_m` = dist + range_sigma z_range and `bearing` =
    ((heading - yaw + pi) % 2 pi - pi) + bearing_sigma z_bearing in the filled slots
    (`target` >= 0; NaN in the empty ones), `heading` (N, K) being np.arctan2 of `rel`'s y and
    x, and `horizontal` = hypot(rel x, rel y) (N, K) everywhere (libm's hypot, numpy's)."""
    n, k = target.shape
    for i in range(n):
        for s in range(k):
            x, y = rel[i, s, 0], rel[i, s, 1]
            horizontal[i, s] = 0.0 if (x == 0.0 and y == 0.0) else math.hypot(x, y)
            if target[i, s] >= 0:
                b = remainder((heading[i, s] - yaw[i]) + math.pi, TWO_PI) - math.pi
                range_m[i, s] = dist[i, s] + range_sigma * z_range[i, s]
                bearing[i, s] = b + bearing_sigma * z_bearing[i, s]
            else:
                range_m[i, s] = np.nan
                bearing[i, s] = np.nan


@njit(nogil=True)
def mask_empty(target, values):  # pragma: no cover - compiled
    """NaN into `values` (N, K) where `target` (N, K) is empty (< 0): np.where(ok, values,
    nan) in place."""
    n, k = target.shape
    for i in range(n):
        for s in range(k):
            if target[i, s] < 0:
                values[i, s] = np.nan


# compiled before the clock (core/jit.py); every array C-contiguous (scan makes them so)
_SIG = "f8[2] f8[1] ?[1] f8[2] f8 f8 i8[2] f8[3] f8[2]"
ahead(nearest_targets, _SIG)
ahead(nearest_targets_parallel, _SIG)
ahead(scan_values, "i8[2] f8[2] f8[3] f8[2] f8[1] f8[2] f8[2] f8 f8 f8[2] f8[2] f8[2]")
ahead(mask_empty, "i8[2] f8[2]")
