"""The avoidance layer's every-tick half, compiled (steps 2, 5, 6 and 7 of uav/avoidance.py's
module doc): `steer` reads each active agent's command from its setpoint record and its
position through the state rows, flies it (or the guard's escape) through the barrier's
half-planes of the last scan (uav/avoidance_kernel.py) and the airframe's top speed and, when
any velocity changed, writes the records the flight kernel flies (`write`, in each agent's
mode): into a copy (`steer`), or lent to the swarm's own records for the flight kernel's call
(`steer_lent`, then `give_back`; `steer_lent_parallel` on numba's threads from
`STEER_PARALLEL_MIN` agents, bit-identical). Also here: what the layer does with each control
mode (`mode_kinds`), the command of a setpoint record (`commanded_velocity`, which the scan
reads too), and the agents' yaws without a gather (`yaw_terms`).

    kind = mode_kinds()            # per mode index: 0 untouched, 1 Position, 2 heading, 3 world
    n, guards = steer(active, kind, records, state_position, rows, yaw, have_yaw, push, escape,
                      guarded, normal, cap, slack, kp, max_speed, passes, pos, v_out, changed,
                      copy)       # n > 0: fly `copy`

Same bits as the numpy reference (tests/uav/test_avoidance_kernel.py).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skyswarm.core.jit import ahead, njit, prange
from skyswarm.uav import control as ctl
from skyswarm.uav.control import SETPOINT

UNTOUCHED, POSITION, HEADING_FRAME, WORLD_FRAME = 0, 1, 2, 3


def mode_kinds() -> np.ndarray:
    """(len(MODES),) int64: what the layer does with each control mode (index = mode index):
    Position (1) and the velocity modes in the heading frame (2) or the world frame (3) are
    steered; Manual, Attitude, BodyRates and Motors (0) are left alone."""
    kind = np.zeros(len(ctl.MODES), dtype=np.int64)
    kind[ctl.mode_index(ctl.POSITION)] = POSITION
    for m in (
        ctl.GROUND_SPEED_AND_VERT_SPEED,
        ctl.GROUND_SPEED_AND_ALTITUDE,
        ctl.GROUND_SPEED_ALTITUDE_AND_HEADING,
    ):
        kind[ctl.mode_index(m)] = HEADING_FRAME
    for m in (ctl.VELOCITY, ctl.VELOCITY_AND_HEADING):
        kind[ctl.mode_index(m)] = WORLD_FRAME
    return kind


# |(x, y)|^2 times this below a bound b^2 proves hypot(x, y) (1 + 1e-9) < b: the roundings of
# the squares, their sum, libm's hypot (< 1 ulp) and the products are each ~1e-16
SURELY = 1.0 + 3e-9


@njit(nogil=True)
def surely_within(x, y, bound):  # pragma: no cover - compiled
    """True only if hypot(x, y) (1 + 1e-9) < `bound` for certain, from the squares alone (no
    libm call); False when in doubt (near the bound, bound <= 0, NaN, squares that overflow or
    a bound whose square underflows): the caller then takes the exact test."""
    s2 = x * x + y * y
    bb = bound * bound  # (inf for a huge bound: s2 < 1e300 keeps |(x, y)| far below it)
    return bound > 0.0 and bb > 1e-300 and s2 < 1e300 and s2 * SURELY < bb


@njit(nogil=True)
def unscaled(x, y, max_speed):  # pragma: no cover - compiled
    """True only if min(1, max_speed / max(hypot(x, y), 1e-12)) is 1.0 for certain (so the
    product by it changes nothing), without the libm call; False when in doubt."""
    return max_speed >= 1e-12 and surely_within(x, y, max_speed)


@njit(nogil=True)
def commanded_velocity(kind, sp, x, y, yaw, kp, max_speed):  # pragma: no cover - compiled
    """(vx, vy) world m/s that setpoint record `sp` commands an agent at (x, y) with ENU `yaw`
    (step 2 of the module doc); `kind` is the mode's entry of `mode_kinds()`."""
    if kind == POSITION:
        ex = kp * (sp.position[0] - x)
        ey = kp * (sp.position[1] - y)
        if unscaled(ex, ey, max_speed):  # the scale below is 1.0, and x 1.0 changes nothing
            return ex, ey
        scale = min(1.0, max_speed / max(math.hypot(ex, ey), 1e-12))
        return ex * scale, ey * scale
    if kind == HEADING_FRAME:
        c, s = math.cos(yaw), math.sin(yaw)
        return c * sp.velocity[0] - s * sp.velocity[1], s * sp.velocity[0] + c * sp.velocity[1]
    return sp.velocity[0], sp.velocity[1]


@njit(nogil=True)
def steer(
    active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal, cap,
    slack, kp, max_speed, passes, pos, v_out, changed, out,
):  # pragma: no cover - compiled  # fmt: skip
    """Steps 5-7 for the `active` (N,) agents whose mode `kind` (by mode index) is steered:
    the command from `records` (N,) SETPOINT, own position `source[rows[i]]` ((M, 3) m, read
    into `pos` (N, 3)) and `yaw` (N,) rad, plus `push` (N, 2) m/s (or the guard's `escape`
    (N, 2) where `guarded`), projected `passes` times onto each half-plane
    v.normal[i, j] <= cap[i, j] (the nearest, j = 0, last), then limited to `max_speed`;
    `slack` (N,) m/s is each agent's smallest cap (`scan_push`): a velocity whose size is
    below it meets every half-plane (|v.n| <= |v|, |n| = 1), so its passes are skipped, which
    changes nothing (each would find no cap exceeded). Out: `v_out` (N, 2) m/s and
    `changed` (N,) bool (the velocity differs from the command); when any changed, `out`
    (N,) SETPOINT is `records` with those velocities written in (`write`). Returns (agents
    changed, of them flown by the guard), or (-1, 0) as soon as an agent in a heading-frame
    mode meets `have_yaw` False (nothing written to `out`: call again with the yaws)."""
    n_changed, n_guard = _steer_pass(
        active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal, cap,
        slack, kp, max_speed, passes, pos, v_out, changed,
    )  # fmt: skip
    if n_changed > 0:
        for i in range(records.shape[0]):
            out[i] = records[i]
        write(out, changed, kind, pos, yaw, v_out, kp)
    return n_changed, n_guard


@njit(nogil=True)
def steer_lent(
    active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal, cap,
    slack, kp, max_speed, passes, pos, v_out, changed, saved,
):  # pragma: no cover - compiled  # fmt: skip
    """`steer` without the copy: the changed velocities are written into `records` itself
    (the swarm's own setpoints), the values they replace kept in `saved` (N, 2) (the Position
    target's x, y or the velocity's vx, vy) for `give_back`, which the caller runs as soon as
    the flight kernel has flown them. A tick of a moving flock changes a few agents: this
    writes those instead of copying every record (185 bytes each). Same return as `steer`."""
    n_changed, n_guard = _steer_pass(
        active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal, cap,
        slack, kp, max_speed, passes, pos, v_out, changed,
    )  # fmt: skip
    if n_changed > 0:
        _lend_range(
            np.int64(0), changed.shape[0], records, changed, kind, pos, yaw, v_out, kp, saved
        )
    return n_changed, n_guard


@njit(nogil=True)
def _lend_range(lo, hi, records, changed, kind, pos, yaw, v_out, kp, saved):  # pragma: no cover
    """Agents lo .. hi - 1 of `steer_lent`'s writes: each changed agent's replaced values into
    `saved`, then its velocity into its own record (`write`)."""
    for i in range(lo, hi):
        if changed[i]:
            sp = records[i]
            if kind[sp.mode] == POSITION:
                saved[i, 0], saved[i, 1] = sp.position[0], sp.position[1]
            else:
                saved[i, 0], saved[i, 1] = sp.velocity[0], sp.velocity[1]
    _write_range(lo, hi, records, changed, kind, pos, yaw, v_out, kp)


# Agents per work item of the avoidance layer's threaded passes (`steer_lent_parallel`, the
# scan's in uav/avoidance_kernel.py and avoidance_separation.py): a fixed split, as
# uav/kernel.py's CHUNK.
CHUNK = 256
# From this many agents (and two threads) the steer runs on numba's threads, by the whole
# tick on a quiet 2-core machine (docs/performance.md, Threads): a hover's steer does little
# for each agent (~12 ns at 1,000), and a parallel region cost the tick 6 % at 3,000 UAVs and
# nothing at 10,000; a moving flock's projections are heavier (0.8 ms a tick at 10,000 boids),
# and there two threads gave the whole tick +8 %.
STEER_PARALLEL_MIN = 4096


@njit(nogil=True, parallel=True)
def steer_lent_parallel(
    active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal, cap,
    slack, kp, max_speed, passes, pos, v_out, changed, saved,
):  # pragma: no cover - compiled  # fmt: skip
    """`steer_lent` (the same arguments and return) on numba's threads, CHUNK agents per work
    item: every agent reads its own rows and writes only its own, with the same operations
    as `steer_lent`, so `v_out`, `changed`, `records` and `saved` are bit-identical with any
    number of threads. (-1, 0), a heading-frame agent without the yaws, may leave other
    chunks' rows written where `steer_lent` stops at that agent: the caller calls again with
    the yaws either way, which writes every row.)"""
    n = active.shape[0]
    chunks = (n + CHUNK - 1) // CHUNK
    counts = np.empty((chunks, 2), dtype=np.int64)
    for ch in prange(chunks):
        c, g = _steer_range(
            ch * CHUNK, min(n, (ch + 1) * CHUNK), active, kind, records, source, rows, yaw,
            have_yaw, push, escape, guarded, normal, cap, slack, kp, max_speed, passes, pos,
            v_out, changed,
        )  # fmt: skip
        counts[ch, 0], counts[ch, 1] = c, g
    n_changed, n_guard = 0, 0
    for ch in range(chunks):
        if counts[ch, 0] < 0:
            return -1, 0
        n_changed += counts[ch, 0]
        n_guard += counts[ch, 1]
    if n_changed > 0:
        for ch in prange(chunks):
            _lend_range(
                ch * CHUNK, min(n, (ch + 1) * CHUNK), records, changed, kind, pos, yaw, v_out,
                kp, saved,
            )  # fmt: skip
    return n_changed, n_guard


@njit(nogil=True)
def give_back(records, changed, kind, saved):  # pragma: no cover - compiled
    """Undo `steer_lent`: the `changed` agents' records get back the values kept in `saved`."""
    for i in range(changed.shape[0]):
        if changed[i]:
            sp = records[i]
            if kind[sp.mode] == POSITION:
                sp.position[0], sp.position[1] = saved[i, 0], saved[i, 1]
            else:
                sp.velocity[0], sp.velocity[1] = saved[i, 0], saved[i, 1]


@njit(nogil=True)
def yaw_terms(orientation, rows, num, den):  # pragma: no cover - compiled
    """The two arguments of core.geo.yaw_of's arctan2 for the quaternions (x, y, z, w) in rows
    `rows` (N,) of `orientation` (M, 4), without gathering them: `num` = 2 (w z + x y) and
    `den` = 1 - 2 (y^2 + z^2), (N,) each, the same operations in the same order, so numpy's
    arctan2 of them is yaw_of's to the bit (tests/uav/test_avoidance_kernel.py)."""
    for k in range(rows.shape[0]):
        r = rows[k]
        x, y, z, w = orientation[r, 0], orientation[r, 1], orientation[r, 2], orientation[r, 3]
        num[k] = 2.0 * (w * z + x * y)
        den[k] = 1.0 - 2.0 * (y * y + z * z)


@njit(nogil=True)
def _steer_pass(
    active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal, cap,
    slack, kp, max_speed, passes, pos, v_out, changed,
):  # pragma: no cover - compiled  # fmt: skip
    """`steer`'s pass over the agents: `v_out`, `changed`, `pos`; returns (changed, of them
    guarded) or (-1, 0) (see `steer`)."""
    return _steer_range(
        np.int64(0), active.shape[0], active, kind, records, source, rows, yaw, have_yaw, push,
        escape, guarded, normal, cap, slack, kp, max_speed, passes, pos, v_out, changed,
    )  # fmt: skip


@njit(nogil=True)
def _steer_range(
    lo, hi, active, kind, records, source, rows, yaw, have_yaw, push, escape, guarded, normal,
    cap, slack, kp, max_speed, passes, pos, v_out, changed,
):  # pragma: no cover - compiled  # fmt: skip
    """`_steer_pass` for the agents lo .. hi - 1 (each reads and writes only its own rows)."""
    n_changed, n_guard = 0, 0
    k = normal.shape[1]
    for i in range(lo, hi):
        changed[i] = False
        if not active[i]:
            continue
        mk = kind[records[i].mode]
        if mk == 0:
            continue
        if mk == HEADING_FRAME and not have_yaw:
            return -1, 0
        r = rows[i]
        pos[i, 0], pos[i, 1], pos[i, 2] = source[r, 0], source[r, 1], source[r, 2]
        c0, c1 = commanded_velocity(mk, records[i], pos[i, 0], pos[i, 1], yaw[i], kp, max_speed)
        if guarded[i]:
            v0, v1 = escape[i, 0], escape[i, 1]
        else:
            v0, v1 = c0 + push[i, 0], c1 + push[i, 1]
        # a margin of 1e-9 for the roundings of |v|, v.n and |n| (each a few 1e-16)
        inside = surely_within(v0, v1, slack[i]) or math.hypot(v0, v1) * (1.0 + 1e-9) < slack[i]
        for _ in range(0 if inside else passes):
            moved = False
            for j in range(k - 1, -1, -1):
                over = max(v0 * normal[i, j, 0] + v1 * normal[i, j, 1] - cap[i, j], 0.0)
                if over > 0.0:
                    v0 = v0 - over * normal[i, j, 0]
                    v1 = v1 - over * normal[i, j, 1]
                    moved = True
            if not moved:  # a pass that changed nothing: the next ones would not either
                break
        if not unscaled(v0, v1, max_speed):  # (else the scale is 1.0, x 1.0 changes nothing)
            scale = min(1.0, max_speed / max(math.hypot(v0, v1), 1e-12))
            v0 *= scale
            v1 *= scale
        v_out[i, 0], v_out[i, 1] = v0, v1
        if abs(v0 - c0) + abs(v1 - c1) > 1e-9:
            changed[i] = True
            n_changed += 1
            if guarded[i]:
                n_guard += 1
    return n_changed, n_guard


@njit(nogil=True)
def write(records, changed, kind, pos, yaw, v, kp):  # pragma: no cover - compiled
    """Velocities `v` (N, 2) m/s of the `changed` agents into `records` (a copy of the
    setpoints), in each agent's mode: a Position target v / kp ahead of `pos`, or the velocity
    (heading frame from `yaw`, or world)."""
    _write_range(np.int64(0), changed.shape[0], records, changed, kind, pos, yaw, v, kp)


@njit(nogil=True)
def _write_range(lo, hi, records, changed, kind, pos, yaw, v, kp):  # pragma: no cover - compiled
    """`write` for the agents lo .. hi - 1."""
    for i in range(lo, hi):
        if not changed[i]:
            continue
        sp = records[i]
        mk = kind[sp.mode]
        if mk == POSITION:
            sp.position[0] = pos[i, 0] + v[i, 0] / kp
            sp.position[1] = pos[i, 1] + v[i, 1] / kp
        elif mk == HEADING_FRAME:
            c, s = math.cos(yaw[i]), math.sin(yaw[i])
            sp.velocity[0] = c * v[i, 0] + s * v[i, 1]
            sp.velocity[1] = -s * v[i, 0] + c * v[i, 1]
        elif mk == WORLD_FRAME:
            sp.velocity[0] = v[i, 0]
            sp.velocity[1] = v[i, 1]


_RECORDS = numba.typeof(np.zeros(1, SETPOINT))
# compiled before the clock (core/jit.py); every array C-contiguous (Avoidance makes them so)
ahead(
    steer,
    ("?[1]", "i8[1]", _RECORDS, "f8[2]", "i8[1]", "f8[1]", "?", "f8[2]", "f8[2]", "?[1]",
     "f8[3]", "f8[2]", "f8[1]", "f8", "f8", "i8", "f8[2]", "f8[2]", "?[1]", _RECORDS),
)  # fmt: skip
_LENT = (
    "?[1]", "i8[1]", _RECORDS, "f8[2]", "i8[1]", "f8[1]", "?", "f8[2]", "f8[2]", "?[1]", "f8[3]",
    "f8[2]", "f8[1]", "f8", "f8", "i8", "f8[2]", "f8[2]", "?[1]", "f8[2]",
)  # fmt: skip
ahead(steer_lent, _LENT)
ahead(steer_lent_parallel, _LENT)
ahead(give_back, (_RECORDS, "?[1]", "i8[1]", "f8[2]"))
ahead(yaw_terms, "f8[2] i8[1] f8[1] f8[1]")
