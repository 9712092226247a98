"""The avoidance layer's per-tick step, compiled: steps 2, 5, 6 and 7 of uav/avoidance.py's
module doc for every agent in one call (the tick's 400 Hz path; the scan-rate terms stay in
numpy there, but for `track`, step 1's update of the (N, K) tracks keyed by target index).

`steer` reads each active agent's command from its setpoint record, flies it (or the guard's
escape) through the barrier's half-planes and the airframe's top speed, and says which agents'
velocity changed; `write` puts those velocities into a copy of the setpoint records, in each
agent's mode. The arithmetic is the one the numpy version did, operation for operation.

    kind = mode_kinds()            # per mode index: 0 untouched, 1 Position, 2 heading, 3 world
    n, guards = steer(active, kind, records, pos, yaw, push, escape, guarded, normal, cap,
                      kp, max_speed, passes, v_out, changed)
    if n:
        copy = records.copy()
        write(copy, changed, kind, pos, yaw, v_out, kp)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skyswarm.core.jit import ahead, njit
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


@njit(nogil=True)
def commanded_velocity(kind, sp, x, y, yaw, kp, max_speed):  # pragma: no cover - compiled
    """(vx, vy) world m/s that setpoint record `sp` commands an agent at (x, y) with ENU `yaw`
    (step 2 of the module doc); `kind` is the mode's entry of `mode_kinds()`."""
    if kind == POSITION:
        ex = kp * (sp.position[0] - x)
        ey = kp * (sp.position[1] - y)
        scale = min(1.0, max_speed / max(math.hypot(ex, ey), 1e-12))
        return ex * scale, ey * scale
    if kind == HEADING_FRAME:
        c, s = math.cos(yaw), math.sin(yaw)
        return c * sp.velocity[0] - s * sp.velocity[1], s * sp.velocity[0] + c * sp.velocity[1]
    return sp.velocity[0], sp.velocity[1]


@njit(nogil=True)
def steer(
    active, kind, records, pos, yaw, push, escape, guarded, normal, cap, kp, max_speed, passes,
    v_out, changed,
):  # pragma: no cover - compiled  # fmt: skip
    """Steps 5-7 for the `active` (N,) agents whose mode `kind` (by mode index) is steered:
    the command from `records` (N,) SETPOINT and own `pos` (N, 3) m / `yaw` (N,) rad, plus
    `push` (N, 2) m/s (or the guard's `escape` (N, 2) where `guarded`), projected `passes`
    times onto each half-plane v.normal[i, j] <= cap[i, j] (the nearest, j = 0, last), then
    limited to `max_speed`. Out: `v_out` (N, 2) m/s and `changed` (N,) bool (the velocity
    differs from the command). Returns (agents changed, of them flown by the guard)."""
    n_changed, n_guard = 0, 0
    k = normal.shape[1]
    for i in range(active.shape[0]):
        changed[i] = False
        if not active[i]:
            continue
        mk = kind[records[i].mode]
        if mk == 0:
            continue
        c0, c1 = commanded_velocity(mk, records[i], pos[i, 0], pos[i, 1], yaw[i], kp, max_speed)
        if guarded[i]:
            v0, v1 = escape[i, 0], escape[i, 1]
        else:
            v0, v1 = c0 + push[i, 0], c1 + push[i, 1]
        for _ in range(passes):
            moved = False
            for j in range(k - 1, -1, -1):
                over = max(v0 * normal[i, j, 0] + v1 * normal[i, j, 1] - cap[i, j], 0.0)
                if over > 0.0:
                    v0 = v0 - over * normal[i, j, 0]
                    v1 = v1 - over * normal[i, j, 1]
                    moved = True
            if not moved:  # a pass that changed nothing: the next ones would not either
                break
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
def track(target, meas, prev_target, p, v, a, b, dt, p_out, v_out):  # pragma: no cover
    """Step 1's alpha-beta update of the (N, K) tracks: slot s of agent i holds `target[i, s]`
    (-1: nothing seen) measured at `meas[i, s]` (2,) m; the slot that target held at the last
    scan (`prev_target`, tracks `p` m and `v` m/s) predicts it, dt s later, and the residual
    corrects it with gains a and b / dt; a target without a track starts one at its
    measurement, at rest. Out: `p_out`, `v_out` (N, K, 2)."""
    n, k = target.shape
    for i in range(n):
        for s in range(k):
            q = -1
            if target[i, s] >= 0:
                for r in range(k):
                    if prev_target[i, r] == target[i, s]:
                        q = r
                        break
            for c in range(2):
                if q < 0:
                    p_out[i, s, c] = meas[i, s, c]
                    v_out[i, s, c] = 0.0
                else:
                    pred = p[i, q, c] + dt * v[i, q, c]
                    res = meas[i, s, c] - pred
                    p_out[i, s, c] = pred + a * res
                    v_out[i, s, c] = v[i, q, c] + (b / dt) * res


@njit(nogil=True)
def write(records, changed, kind, pos, yaw, v, kp):  # pragma: no cover - compiled
    """Velocities `v` (N, 2) m/s of the `changed` agents into `records` (a copy of the
    setpoints), in each agent's mode: a Position target v / kp ahead of `pos`, or the velocity
    (heading frame from `yaw`, or world)."""
    for i in range(changed.shape[0]):
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
    ("?[1]", "i8[1]", _RECORDS, "f8[2]", "f8[1]", "f8[2]", "f8[2]", "?[1]", "f8[3]", "f8[2]",
     "f8", "f8", "i8", "f8[2]", "?[1]"),
)  # fmt: skip
ahead(track, "i8[2] f8[3] i8[2] f8[3] f8[3] f8 f8 f8 f8[3] f8[3]")
ahead(write, (_RECORDS, "?[1]", "i8[1]", "f8[2]", "f8[1]", "f8[2]", "f8"))
