"""The flight kernel block by block: up to BLOCK agents that fly the same mode, each stage of the
cascade one loop over the block, so that the compiler runs the stage's arithmetic on SIMD lanes
(8 agents a lane set with AVX-512) instead of one agent after another.

uav/kernel.py flies a swarm through here (`_fly_range`): a block whose agents share a mode goes
through `fly_block`, any other block agent by agent through the kernel's own stages. Every
agent's arithmetic is the per-agent path's, operation for operation in the same order (IEEE
arithmetic is the same on a lane as on a scalar register; no fastmath, no fused multiply-add),
so the two paths give the same bits (tests/uav/test_kernel_block.py). What a lane cannot do:
- the library calls (the Euler angles' arctangents and arcsine, the yaw's sine and cosine, the
  air density's power, the speed loops' two arctangents) run in plain loops of their own over
  the block, glibc's correctly rounded results as before;
- the per-agent path's rare branches into the library (`hypot` with an operand beyond glibc's
  scaling bounds, inf or NaN; `wrap` of an angle more than a turn out) are not taken: the lanes
  compute the common case and flag the agent, and the block's flagged agents are flown again
  by the per-agent path (`fly_block` returns how many; `_fly_range` redoes them) from their
  rows, which the block writes back only for the agents it did not flag.
The block's inputs are first copied into `t`, a scratch of NROW / BLOCK rows of BLOCK floats
(one row per quantity, at the offsets R00 .. below), and its outputs copied back at the end:
loops that read and write only such rows at constant distances from each other are what the
compiler vectorises without run-time alias checks. Measured (`python bench/flight_kernel.py`,
docs/performance.md): 90 against 156 ns an agent on a 10,000-UAV hover, one thread.

The stages are compiled apart (not inlined into one function): one function per loop keeps each
loop's values its own, which the vectoriser needs.
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.frames import euler_angles, rotation_rows
from skyswarm.core.jit import njit
from skyswarm.uav.kernel_layout import (
    ALT,
    ATT,
    ATTITUDE,
    GAIN,
    HDG,
    I_LIMIT,
    KD,
    KI_DT,
    KP,
    LAG,
    MOT,
    OUT_LIMIT,
    OUTER,
    POS,
    RATE,
    RATES,
    SPEED,
    VEL,
    WORLD,
)  # fmt: skip
from skyswarm.uav.kernel_math import (
    HYPOT_EPS,
    HYPOT_LARGE,
    HYPOT_TINY,
    max_of,
    min_of,
    nan_max,
    nan_min,
)

_JIT = {"error_model": "numpy", "nogil": True}  # as uav/kernel.py: plain IEEE arithmetic
_IN = {"inline": "always", **_JIT}

# Agents per block, measured on a 10,000-UAV hover (ns an agent, one thread): 32 -> 98, 64 ->
# 95, 128 -> 149, where the scratch (104 rows, 106 KB) no longer fits the 48 KB L1 data cache.
BLOCK = 64
TWO_PI = 2.0 * math.pi

# Rows of the scratch `t`, as offsets (row k starts at k BLOCK): the state and its rotation,
# then the angles, the setpoints, the memory, the stages' signals, the commands and the motors.
(
    R00, R01, R02, R10, R11, R12, R20, R21, R22, X, Y, Z, VX, VY, VZ, P, Q, RR,
    ROLL, PITCH, YAW, COS, SIN, RHO,
    SPX, SPY, SALT, SYAW, SV0, SV1, SV2, SA0, SA1, SA2, STH, SM0, SM1, SM2, SM3, SHOLD,
    SR0, SR1, SR2, SMO0, SMO1, SMO2, SMO3,
    OI0, OI1, OI2, OI3, SI0, SI1, SI2, AI0, AI1, AI2, PS0, PS1, PS2, PR, PP0, PP1,
    YRC, VT0, VT1, VT2, AT0, AT1, AT2, D0, D1, D2, D3,
    COLL, LA, LB, LC, LD, M0, M1, M2, M3, REDO,
    TH0, TH1, TH2, TH3, F0, F1, F2, T0, T1, T2, ALPHA, SGAIN, OK0, OK1, OK2, OK3, ALV, WX, WY, WZ,
    NROW,
) = range(0, 105 * BLOCK, BLOCK)  # fmt: skip
# The quaternion and the world angular velocity pass through rows that the rotation then
# frees: (x, y, z, w) through ROLL .. COS, omega through P, Q, RR (turned into body rates).
QX, QY, QZ, QW = ROLL, PITCH, YAW, COS


@njit(**_JIT)
def same_mode(setpoints: np.ndarray, lo: int, hi: int) -> bool:
    """Whether the agents lo .. hi - 1 all fly one mode."""
    mode = setpoints[lo].mode
    for i in range(lo + 1, hi):
        if setpoints[i].mode != mode:
            return False
    return True


@njit(**_IN)
def _hypot(x, y):
    """(h, ok): uav/kernel_math.py's `hypot` (glibc's) without a branch: its common case, and
    glibc's `ax + ay` for an operand negligible against the other (a zero one too); ok is
    False where glibc would scale the operands or was handed inf or NaN (h is then not its)."""
    fin = math.isfinite(x) & math.isfinite(y)
    x, y = abs(x), abs(y)
    ax = y if x < y else x
    ay = x if x < y else y
    large, tiny = ax > HYPOT_LARGE, ay < HYPOT_TINY
    plain = (
        (large & (ay <= ax * HYPOT_EPS))
        | (~large & tiny & (ax >= ay / HYPOT_EPS))
        | (~large & ~tiny & (ay <= ax * HYPOT_EPS))
    )
    ok = fin & (plain | (~large & ~tiny))
    h = math.sqrt(ax * ax + ay * ay)
    d1 = h - ay  # glibc's correction, both of its branches, one selected
    t1a = ax * (2.0 * d1 - ax)
    t2a = (d1 - 2.0 * (ax - ay)) * d1
    d2 = h - ax
    t1b = 2.0 * d2 * (ax - 2.0 * ay)
    t2b = (4.0 * d2 - ay) * ay + d2 * d2
    first = h <= 2.0 * ay
    t1 = t1a if first else t1b
    t2 = t2a if first else t2b
    k = h - (t1 + t2) / (2.0 * h)
    return (ax + ay) if plain else k, ok


@njit(**_IN)
def _wrap(a):
    """(wrapped, ok): kernel_math's `wrap` where a + pi is in (-2 pi, 4 pi), which holds any
    difference of two angles in [-pi, pi]; ok False elsewhere, and for NaN. On [2 pi, 4 pi)
    its floating-point remainder by 2 pi is exact and is x - 2 pi, itself exact (Sterbenz)."""
    x = a + math.pi
    inner = (0.0 <= x) & (x < TWO_PI)
    below = (-TWO_PI < x) & (x < 0.0)
    above = (TWO_PI <= x) & (x < 2.0 * TWO_PI)
    out = (x + TWO_PI) - math.pi if below else (x - TWO_PI) - math.pi
    return (x - math.pi) if inner else out, inner | below | above


@njit(**_IN)
def pid(gains, kept, error, rate):
    """One PID axis on values (uav/pid.py), `gains` one axis's (`gains`): (output, the integral
    to keep: the old one when saturated with the error pushing further in, else the trial
    one). Both paths' PID: inlined into uav/kernel.py's `_pid` and into the block's loops."""
    kp, ki_dt, kd, i_lim, out_lim = gains
    p_d = kp * error - kd * rate
    trial = min_of(max_of(kept + ki_dt * error, -i_lim), i_lim)
    raw = p_d + trial
    saturated = (abs(raw) > out_lim) & (error * raw > 0)
    kept = kept if saturated else trial
    return min_of(max_of(p_d + kept, -out_lim), out_lim), kept


@njit(**_IN)
def gains(c, loop, axis):
    """One axis of one loop's gains, (kp, ki dt, kd, integral limit, output limit): values
    the loops keep in registers."""
    g = c.gains
    return (
        g[loop, KP, axis], g[loop, KI_DT, axis], g[loop, KD, axis], g[loop, I_LIMIT, axis],
        g[loop, OUT_LIMIT, axis],
    )  # fmt: skip


@njit(**_JIT)
def _gather(lo, nb, t, slots, position, orientation, velocity, omega, setpoints, memory, thrust,
            alive, motor_ok, motor, wind, uses):  # fmt: skip
    """Copy the block's rows into `t`: state, the setpoints its mode reads, memory, motors."""
    for j in range(nb):
        i = np.uint64(lo + j)
        s = np.uint64(slots[i])
        t[QX + j], t[QY + j] = orientation[s, 0], orientation[s, 1]
        t[QZ + j], t[QW + j] = orientation[s, 2], orientation[s, 3]
        t[X + j], t[Y + j], t[Z + j] = position[s, 0], position[s, 1], position[s, 2]
        t[VX + j], t[VY + j], t[VZ + j] = velocity[s, 0], velocity[s, 1], velocity[s, 2]
        t[P + j], t[Q + j], t[RR + j] = omega[s, 0], omega[s, 1], omega[s, 2]
        sp, mem = setpoints[i], memory[i]
        t[SPX + j], t[SPY + j] = sp.position[0], sp.position[1]
        t[SALT + j], t[SYAW + j] = sp.altitude, sp.yaw
        t[SV0 + j], t[SV1 + j], t[SV2 + j] = sp.velocity[0], sp.velocity[1], sp.velocity[2]
        t[SA0 + j], t[SA1 + j], t[SA2 + j] = sp.attitude[0], sp.attitude[1], sp.attitude[2]
        t[STH + j], t[SHOLD + j] = sp.thrust, sp.yaw_hold
        if not uses[ATT]:
            t[SM0 + j], t[SM1 + j] = sp.manual[0], sp.manual[1]
            t[SM2 + j], t[SM3 + j] = sp.manual[2], sp.manual[3]
        if uses[RATES]:
            t[SR0 + j], t[SR1 + j], t[SR2 + j] = sp.rates[0], sp.rates[1], sp.rates[2]
        if uses[MOT]:
            t[SMO0 + j], t[SMO1 + j] = sp.motors[0], sp.motors[1]
            t[SMO2 + j], t[SMO3 + j] = sp.motors[2], sp.motors[3]
        t[OI0 + j], t[OI1 + j] = mem.outer_i[0], mem.outer_i[1]
        t[OI2 + j], t[OI3 + j] = mem.outer_i[2], mem.outer_i[3]
        t[SI0 + j], t[SI1 + j], t[SI2 + j] = mem.speed_i[0], mem.speed_i[1], mem.speed_i[2]
        t[AI0 + j], t[AI1 + j] = mem.attitude_i[0], mem.attitude_i[1]
        t[AI2 + j] = mem.attitude_i[2]
        t[PS0 + j], t[PS1 + j] = mem.prev_speed[0], mem.prev_speed[1]
        t[PS2 + j] = mem.prev_speed[2]
        t[PR + j], t[PP0 + j], t[PP1 + j] = mem.prev_r, mem.prev_pq[0], mem.prev_pq[1]
        t[TH0 + j], t[TH1 + j] = thrust[i, 0], thrust[i, 1]
        t[TH2 + j], t[TH3 + j] = thrust[i, 2], thrust[i, 3]
        t[ALPHA + j], t[SGAIN + j] = motor[i, LAG], motor[i, GAIN]
        t[ALV + j] = 1.0 if alive[i] else 0.0
        t[OK0 + j], t[OK1 + j] = motor_ok[i, 0], motor_ok[i, 1]
        t[OK2 + j], t[OK3 + j] = motor_ok[i, 2], motor_ok[i, 3]
        t[WX + j], t[WY + j], t[WZ + j] = wind[i, 0], wind[i, 1], wind[i, 2]
        t[REDO + j] = 0.0


@njit(**_JIT)
def _rotate(nb, t):
    """The rotation rows from the quaternion, and the body rates from the world's omega
    (core/frames.py's rotation_rows, to_body)."""
    for j in range(nb):
        r = rotation_rows(t[QX + j], t[QY + j], t[QZ + j], t[QW + j])
        w0, w1, w2 = t[P + j], t[Q + j], t[RR + j]
        t[R00 + j], t[R01 + j], t[R02 + j] = r[0]
        t[R10 + j], t[R11 + j], t[R12 + j] = r[1]
        t[R20 + j], t[R21 + j], t[R22 + j] = r[2]
        t[P + j] = r[0][0] * w0 + r[1][0] * w1 + r[2][0] * w2
        t[Q + j] = r[0][1] * w0 + r[1][1] * w1 + r[2][1] * w2
        t[RR + j] = r[0][2] * w0 + r[1][2] * w1 + r[2][2] * w2


@njit(**_JIT)
def _angles(nb, t, c, uses):
    """The library's part of `_sense` and the air density (uav/kernel.py): the Euler angles
    (only the yaw in BodyRates), the yaw's cosine and sine where the velocity stage runs."""
    for j in range(nb):
        r = (
            (t[R00 + j], t[R01 + j], t[R02 + j]),
            (t[R10 + j], t[R11 + j], t[R12 + j]),
            (t[R20 + j], t[R21 + j], t[R22 + j]),
        )
        if uses[RATES]:
            roll, pitch, yaw = 0.0, 0.0, np.arctan2(r[1][0], r[0][0])
        else:
            roll, pitch, yaw = euler_angles(r)
        t[ROLL + j], t[PITCH + j], t[YAW + j] = roll, pitch, yaw
        if uses[VEL]:
            t[COS + j], t[SIN + j] = math.cos(yaw), math.sin(yaw)
        else:
            t[COS + j], t[SIN + j] = 0.0, 0.0
        if c.quadratic:
            h = min_of(max_of(t[Z + j], 0.0), 11000.0)
            t[RHO + j] = c.isa[0] * (1.0 - c.isa[1] * h) ** c.isa[2]


@njit(**_JIT)
def _heading(nb, t, c):
    """The heading loop (every mode): the yaw-rate command; flags a yaw error `wrap` would
    take the library's remainder for."""
    g = gains(c, OUTER, 3)
    lo, hi = c.outer_lo[3], c.outer_hi[3]
    for j in range(nb):
        e3, ok = _wrap(t[SYAW + j] - t[YAW + j])
        o3, t[OI3 + j] = pid(g, t[OI3 + j], e3, t[RR + j])
        t[YRC + j] = min_of(max_of(o3, lo), hi)
        t[REDO + j] += 0.0 if ok else 1.0


@njit(**_JIT)
def _world_velocity(nb, t):
    """A world-frame velocity setpoint into the heading frame."""
    for j in range(nb):
        cs, sn = t[COS + j], t[SIN + j]
        t[VT0 + j] = cs * t[SV0 + j] + sn * t[SV1 + j]
        t[VT1 + j] = cs * t[SV1 + j] - sn * t[SV0 + j]


@njit(**_JIT)
def _position(nb, t, c):
    """The x, y position loops -> heading-frame velocity target, speed limited."""
    g0, g1 = gains(c, OUTER, 0), gains(c, OUTER, 1)
    lo0, hi0, lo1, hi1 = c.outer_lo[0], c.outer_hi[0], c.outer_lo[1], c.outer_hi[1]
    vmax = c.max_speed
    for j in range(nb):
        o0, t[OI0 + j] = pid(g0, t[OI0 + j], t[SPX + j] - t[X + j], t[VX + j])
        o1, t[OI1 + j] = pid(g1, t[OI1 + j], t[SPY + j] - t[Y + j], t[VY + j])
        o0 = min_of(max_of(o0, lo0), hi0)
        o1 = min_of(max_of(o1, lo1), hi1)
        speed, ok = _hypot(o0, o1)
        scale = min_of(vmax / max_of(speed, 1e-12), 1.0)
        cs, sn = t[COS + j], t[SIN + j]
        t[VT0 + j] = (cs * o0 + sn * o1) * scale
        t[VT1 + j] = (cs * o1 - sn * o0) * scale
        t[REDO + j] += 0.0 if ok else 1.0


@njit(**_JIT)
def _copy(nb, t, dst, src):
    for j in range(nb):
        t[dst + j] = t[src + j]


@njit(**_JIT)
def _altitude(nb, t, c):
    """The altitude loop -> vertical velocity target."""
    g = gains(c, OUTER, 2)
    lo, hi = c.outer_lo[2], c.outer_hi[2]
    for j in range(nb):
        o2, t[OI2 + j] = pid(g, t[OI2 + j], t[SALT + j] - t[Z + j], t[VZ + j])
        t[VT2 + j] = min_of(max_of(o2, lo), hi)


@njit(**_JIT)
def _speed(nb, t, c):
    """The velocity stage's loops up to its two arctangents (their operands in LA .. LD):
    the collective, the integrals, the measured velocity kept."""
    g0, g1, g2 = gains(c, SPEED, 0), gains(c, SPEED, 1), gains(c, SPEED, 2)
    dt, gg, tan_tilt, mass, min_up = c.dt, c.g, c.tan_tilt, c.mass, c.min_up
    for j in range(nb):
        cs, sn = t[COS + j], t[SIN + j]
        vx, vy = t[VX + j], t[VY + j]
        h0, h1, h2 = cs * vx + sn * vy, cs * vy - sn * vx, t[VZ + j]
        e0, e1, e2 = t[VT0 + j] - h0, t[VT1 + j] - h1, t[VT2 + j] - h2
        a0, t[SI0 + j] = pid(g0, t[SI0 + j], e0, (h0 - t[PS0 + j]) / dt)
        a1, t[SI1 + j] = pid(g1, t[SI1 + j], e1, (h1 - t[PS1 + j]) / dt)
        a2, t[SI2 + j] = pid(g2, t[SI2 + j], e2, (h2 - t[PS2 + j]) / dt)
        t[PS0 + j], t[PS1 + j], t[PS2 + j] = h0, h1, h2
        vert = max_of(gg + a2, 0.1 * gg)
        tilt, ok1 = _hypot(a0, a1)
        tilt_scale = min_of(vert * tan_tilt / max_of(tilt, 1e-12), 1.0)
        ax, ay = a0 * tilt_scale, a1 * tilt_scale
        t[COLL + j] = mass * vert / max_of(t[R22 + j], min_up)
        across, ok2 = _hypot(ax, vert)
        t[LA + j], t[LB + j], t[LC + j], t[LD + j] = -ay, across, ax, vert
        t[REDO + j] += 0.0 if (ok1 & ok2) else 1.0


@njit(**_JIT)
def _tilt(nb, t):
    """The velocity stage's roll and pitch targets (the library's arctangents)."""
    for j in range(nb):
        t[AT0 + j] = math.atan2(t[LA + j], t[LB + j])
        t[AT1 + j] = math.atan2(t[LC + j], t[LD + j])


@njit(**_JIT)
def _held_yaw(nb, t):
    """Attitude's yaw: the heading loop's rate where the setpoint holds a yaw angle."""
    for j in range(nb):
        t[AT2 + j] = t[YRC + j] if t[SHOLD + j] != 0.0 else t[SA2 + j]


@njit(**_JIT)
def _rate_loops(nb, t, c):
    """BodyRates: the loops on the setpoint's body-rate errors, D on the measured angular
    acceleration -> torque demand; keeps the measured rates."""
    g0, g1, g2 = gains(c, RATE, 0), gains(c, RATE, 1), gains(c, RATE, 2)
    dt, i0, i1, i2 = c.dt, c.inertia[0], c.inertia[1], c.inertia[2]
    for j in range(nb):
        p, q, rr = t[P + j], t[Q + j], t[RR + j]
        r_dot = (rr - t[PR + j]) / dt
        p_dot = (p - t[PP0 + j]) / dt
        q_dot = (q - t[PP1 + j]) / dt
        x0, t[AI0 + j] = pid(g0, t[AI0 + j], t[SR0 + j] - p, p_dot)
        x1, t[AI1 + j] = pid(g1, t[AI1 + j], t[SR1 + j] - q, q_dot)
        x2, t[AI2 + j] = pid(g2, t[AI2 + j], t[SR2 + j] - rr, r_dot)
        t[D1 + j], t[D2 + j], t[D3 + j] = i0 * x0, i1 * x1, i2 * x2
        t[PR + j], t[PP0 + j], t[PP1 + j] = rr, p, q


@njit(**_JIT)
def _angle_loops(nb, t, c):
    """The attitude loops on the roll, pitch and yaw-rate targets -> torque demand; keeps the
    measured rates."""
    g0, g1, g2 = gains(c, ATTITUDE, 0), gains(c, ATTITUDE, 1), gains(c, ATTITUDE, 2)
    dt, i0, i1, i2 = c.dt, c.inertia[0], c.inertia[1], c.inertia[2]
    for j in range(nb):
        p, q, rr = t[P + j], t[Q + j], t[RR + j]
        r_dot = (rr - t[PR + j]) / dt
        x0, t[AI0 + j] = pid(g0, t[AI0 + j], t[AT0 + j] - t[ROLL + j], p)
        x1, t[AI1 + j] = pid(g1, t[AI1 + j], t[AT1 + j] - t[PITCH + j], q)
        x2, t[AI2 + j] = pid(g2, t[AI2 + j], t[AT2 + j] - rr, r_dot)
        t[D1 + j], t[D2 + j], t[D3 + j] = i0 * x0, i1 * x1, i2 * x2
        t[PR + j], t[PP0 + j], t[PP1 + j] = rr, p, q


@njit(**_JIT)
def _sticks(nb, t, c):
    """Manual: the sticks, scaled, are the demand."""
    s0, s1, s2, s3 = c.manual_scale[0], c.manual_scale[1], c.manual_scale[2], c.manual_scale[3]
    for j in range(nb):
        t[D0 + j], t[D1 + j] = t[SM0 + j] * s0, t[SM1 + j] * s1
        t[D2 + j], t[D3 + j] = t[SM2 + j] * s2, t[SM3 + j] * s3


@njit(**_IN)
def base(m, shrink, coll, d3, yaw_k, yaw_abs, f_max, room):
    """A motor's base thrust N (its roll and pitch share shrunk, plus the collective) and the
    yaw room N m left after it: both paths' (uav/kernel.py `_base` calls it)."""
    base = m * shrink + coll
    return base, nan_min(room, (f_max - base if d3 * yaw_k > 0 else base) / yaw_abs)


@njit(**_JIT)
def _mix(nb, t, c):
    """The mixer (uav/kernel.py `_mix`): demand -> the four motor commands N."""
    am, ym, ya = c.attitude_map, c.yaw_map, c.yaw_abs
    a00, a01, a02, a03 = am[0, 0], am[0, 1], am[0, 2], am[0, 3]
    a10, a11, a12, a13 = am[1, 0], am[1, 1], am[1, 2], am[1, 3]
    y0, y1, y2, y3 = ym[0], ym[1], ym[2], ym[3]
    b0, b1, b2, b3 = ya[0], ya[1], ya[2], ya[3]
    fm, pc = c.f_max, c.per_collective
    for j in range(nb):
        d0, d1, d2, d3 = t[D0 + j], t[D1 + j], t[D2 + j], t[D3 + j]
        m0 = d1 * a00 + d2 * a10
        m1 = d1 * a01 + d2 * a11
        m2 = d1 * a02 + d2 * a12
        m3 = d1 * a03 + d2 * a13
        hi = nan_max(nan_max(m0, m1), nan_max(m2, m3))
        lo = nan_min(nan_min(m0, m1), nan_min(m2, m3))
        shrink = min_of(fm / max_of(hi - lo, 1e-12), 1.0)
        coll = nan_min(nan_max(d0 * pc, -lo * shrink), fm - hi * shrink)
        room = np.inf
        m0, room = base(m0, shrink, coll, d3, y0, b0, fm, room)
        m1, room = base(m1, shrink, coll, d3, y1, b1, fm, room)
        m2, room = base(m2, shrink, coll, d3, y2, b2, fm, room)
        m3, room = base(m3, shrink, coll, d3, y3, b3, fm, room)
        fraction = min_of(max_of(room / max_of(abs(d3), 1e-300), 0.0), 1.0)
        t[M0 + j] = min_of(max_of(m0 + d3 * y0 * fraction, 0.0), fm)
        t[M1 + j] = min_of(max_of(m1 + d3 * y1 * fraction, 0.0), fm)
        t[M2 + j] = min_of(max_of(m2 + d3 * y2 * fraction, 0.0), fm)
        t[M3 + j] = min_of(max_of(m3 + d3 * y3 * fraction, 0.0), fm)


@njit(**_JIT)
def _commands(nb, t, direct):
    """The motor commands: the setpoint's own in Motors (`direct`), times each motor's health;
    a dead agent's all 0.0."""
    for j in range(nb):
        live = t[ALV + j] != 0.0
        m0 = t[SMO0 + j] if direct else t[M0 + j]
        m1 = t[SMO1 + j] if direct else t[M1 + j]
        m2 = t[SMO2 + j] if direct else t[M2 + j]
        m3 = t[SMO3 + j] if direct else t[M3 + j]
        t[M0 + j] = m0 * t[OK0 + j] if live else 0.0
        t[M1 + j] = m1 * t[OK1 + j] if live else 0.0
        t[M2 + j] = m2 * t[OK2 + j] if live else 0.0
        t[M3 + j] = m3 * t[OK3 + j] if live else 0.0


@njit(**_IN)
def _motor(f, command, f_max, alpha, s, k_f, k_f0, f_top, speed_state):
    """One motor's thrust after its lag (uav/kernel.py `_motors_and_wrench`), both models
    computed and the airframe's selected."""
    cmd = min_of(max_of(command, 0.0), f_max)
    w = math.sqrt(f / k_f)
    w += alpha * (math.sqrt(cmd / k_f0) - w)
    spun = min_of(k_f * w * w, f_top)
    lagged = f + alpha * (s * cmd - f)
    return spun if speed_state else lagged


@njit(**_JIT)
def _motors(nb, t, c):
    """The motors' lag -> thrusts, and their sums: lift (ground effect), body torque x, y
    (in T0, T1), the drag torque z (T2), the total (F2)."""
    k_f0, radius, speed_state, f_max = c.k_f, c.rotor_radius, c.speed_state, c.f_max
    tm = c.torque_map
    x0, y0, z0 = tm[0, 0], tm[0, 1], tm[0, 2]
    x1, y1, z1 = tm[1, 0], tm[1, 1], tm[1, 2]
    x2, y2, z2 = tm[2, 0], tm[2, 1], tm[2, 2]
    x3, y3, z3 = tm[3, 0], tm[3, 1], tm[3, 2]
    ground = radius > 0.0
    for j in range(nb):
        alpha, s = t[ALPHA + j], t[SGAIN + j]
        k_f, f_top = k_f0 * s, f_max * s
        ratio = radius / (4.0 * max_of(t[Z + j], 0.5 * radius))
        gain = 1.0 / (1.0 - ratio * ratio) if ground else 1.0  # f * 1.0 is f to the bit
        f0 = _motor(t[TH0 + j], t[M0 + j], f_max, alpha, s, k_f, k_f0, f_top, speed_state)
        f1 = _motor(t[TH1 + j], t[M1 + j], f_max, alpha, s, k_f, k_f0, f_top, speed_state)
        f2 = _motor(t[TH2 + j], t[M2 + j], f_max, alpha, s, k_f, k_f0, f_top, speed_state)
        f3 = _motor(t[TH3 + j], t[M3 + j], f_max, alpha, s, k_f, k_f0, f_top, speed_state)
        t[TH0 + j], t[TH1 + j], t[TH2 + j], t[TH3 + j] = f0, f1, f2, f3
        l0, l1, l2, l3 = f0 * gain, f1 * gain, f2 * gain, f3 * gain
        t[F2 + j] = (((0.0 + l0) + l1) + l2) + l3
        t[T0 + j] = (((0.0 + l0 * x0) + l1 * x1) + l2 * x2) + l3 * x3
        t[T1 + j] = (((0.0 + l0 * y0) + l1 * y1) + l2 * y2) + l3 * y3
        t[T2 + j] = (((0.0 + f0 * z0) + f1 * z1) + f2 * z2) + f3 * z3


@njit(**_IN)
def _drag(t, j, quadratic, q0, q1, q2, l0, l1, l2):
    """Body-frame airspeed u0, u1 and the body force with drag (both models computed, the
    airframe's selected)."""
    a0, a1, a2 = t[VX + j] - t[WX + j], t[VY + j] - t[WY + j], t[VZ + j] - t[WZ + j]
    u0 = t[R00 + j] * a0 + t[R10 + j] * a1 + t[R20 + j] * a2
    u1 = t[R01 + j] * a0 + t[R11 + j] * a1 + t[R21 + j] * a2
    u2 = t[R02 + j] * a0 + t[R12 + j] * a1 + t[R22 + j] * a2
    total, rho = t[F2 + j], t[RHO + j]
    f0 = q0 * rho * abs(u0) * u0 if quadratic else l0 * u0
    f1 = q1 * rho * abs(u1) * u1 if quadratic else l1 * u1
    f2 = q2 * rho * abs(u2) * u2 + total if quadratic else l2 * u2 + total
    return u0, u1, f0, f1, f2


@njit(**_IN)
def _torque(t, j, bz):
    """The body torque (T0, T1 and `bz`) into the world frame, in T0 .. T2."""
    bx, by = t[T0 + j], t[T1 + j]
    t[T0 + j] = t[R00 + j] * bx + t[R01 + j] * by + t[R02 + j] * bz
    t[T1 + j] = t[R10 + j] * bx + t[R11 + j] * by + t[R12 + j] * bz
    t[T2 + j] = t[R20 + j] * bx + t[R21 + j] * by + t[R22 + j] * bz


@njit(**_JIT)
def _wrench(nb, t, c):
    """Body drag -> the body force F0 .. F2, the world torque T0 .. T2 (no rotor drag)."""
    dq, dl = c.drag_quad, c.drag
    q0, q1, q2, l0, l1, l2 = dq[0], dq[1], dq[2], dl[0], dl[1], dl[2]
    quadratic = c.quadratic != 0
    for j in range(nb):
        _, _, f0, f1, f2 = _drag(t, j, quadratic, q0, q1, q2, l0, l1, l2)
        t[F0 + j], t[F1 + j], t[F2 + j] = f0, f1, f2
        _torque(t, j, t[T2 + j])


@njit(**_IN)
def _rotor(u0, u1, rr, ax, ay, k, f, k_f):
    """Rotor drag at the arm point (ax, ay, 0), -k_d omega times the in-plane airspeed; `k`
    is -k_d."""
    lx = u0 - rr * ay
    ly = u1 + rr * ax
    scale = k * math.sqrt(f / k_f)
    return scale * lx, scale * ly


@njit(**_JIT)
def _wrench_rotors(nb, t, c):
    """`_wrench` with rotor drag, motor by motor as uav/kernel.py adds it."""
    dq, dl, arms = c.drag_quad, c.drag, c.arms
    q0, q1, q2, l0, l1, l2 = dq[0], dq[1], dq[2], dl[0], dl[1], dl[2]
    quadratic = c.quadratic != 0
    k, k_f0 = -c.rotor_drag, c.k_f
    ax0, ay0, ax1, ay1 = arms[0, 0], arms[0, 1], arms[1, 0], arms[1, 1]
    ax2, ay2, ax3, ay3 = arms[2, 0], arms[2, 1], arms[3, 0], arms[3, 1]
    for j in range(nb):
        u0, u1, f0, f1, f2 = _drag(t, j, quadratic, q0, q1, q2, l0, l1, l2)
        k_f, rr, bz = k_f0 * t[SGAIN + j], t[RR + j], t[T2 + j]
        hx, hy = _rotor(u0, u1, rr, ax0, ay0, k, t[TH0 + j], k_f)
        f0, f1, bz = f0 + hx, f1 + hy, bz + (ax0 * hy - ay0 * hx)
        hx, hy = _rotor(u0, u1, rr, ax1, ay1, k, t[TH1 + j], k_f)
        f0, f1, bz = f0 + hx, f1 + hy, bz + (ax1 * hy - ay1 * hx)
        hx, hy = _rotor(u0, u1, rr, ax2, ay2, k, t[TH2 + j], k_f)
        f0, f1, bz = f0 + hx, f1 + hy, bz + (ax2 * hy - ay2 * hx)
        hx, hy = _rotor(u0, u1, rr, ax3, ay3, k, t[TH3 + j], k_f)
        f0, f1, bz = f0 + hx, f1 + hy, bz + (ax3 * hy - ay3 * hx)
        t[F0 + j], t[F1 + j], t[F2 + j] = f0, f1, f2
        _torque(t, j, bz)


@njit(**_JIT)
def _commit(lo, nb, t, memory, thrust, force, torque):
    """Copy the block's results out of `t`, but for the flagged agents (REDO): their rows stay
    as they were for the per-agent path. Returns how many are flagged."""
    redo = 0
    for j in range(nb):
        if t[REDO + j] != 0.0:
            redo += 1
            continue
        i = np.uint64(lo + j)
        mem = memory[i]
        mem.outer_i[0], mem.outer_i[1] = t[OI0 + j], t[OI1 + j]
        mem.outer_i[2], mem.outer_i[3] = t[OI2 + j], t[OI3 + j]
        mem.speed_i[0], mem.speed_i[1], mem.speed_i[2] = t[SI0 + j], t[SI1 + j], t[SI2 + j]
        mem.attitude_i[0], mem.attitude_i[1] = t[AI0 + j], t[AI1 + j]
        mem.attitude_i[2] = t[AI2 + j]
        mem.prev_speed[0], mem.prev_speed[1] = t[PS0 + j], t[PS1 + j]
        mem.prev_speed[2] = t[PS2 + j]
        mem.prev_r, mem.prev_pq[0], mem.prev_pq[1] = t[PR + j], t[PP0 + j], t[PP1 + j]
        mem.velocity_target[0], mem.velocity_target[1] = t[VT0 + j], t[VT1 + j]
        mem.velocity_target[2] = t[VT2 + j]
        mem.attitude_target[0], mem.attitude_target[1] = t[AT0 + j], t[AT1 + j]
        mem.attitude_target[2] = t[AT2 + j]
        mem.demand[0], mem.demand[1], mem.demand[2] = t[D0 + j], t[D1 + j], t[D2 + j]
        mem.demand[3] = t[D3 + j]
        mem.yaw_rate_command = t[YRC + j]
        thrust[i, 0], thrust[i, 1] = t[TH0 + j], t[TH1 + j]
        thrust[i, 2], thrust[i, 3] = t[TH2 + j], t[TH3 + j]
        force[i, 0], force[i, 1], force[i, 2] = t[F0 + j], t[F1 + j], t[F2 + j]
        torque[i, 0], torque[i, 1], torque[i, 2] = t[T0 + j], t[T1 + j], t[T2 + j]
    return redo


@njit(**_JIT)
def fly_block(
    lo, nb, t, slots, position, orientation, velocity, omega, c, setpoints, memory, thrust,
    alive, motor_ok, motor, wind, force, torque,
):  # fmt: skip
    """One tick of the agents lo .. lo + nb - 1 (nb <= BLOCK), which all fly the mode of
    agent `lo` (`same_mode`): uav/kernel.py `fly`'s arguments, `c` its constants record and
    `t` an (NROW,) scratch. Writes what `fly` writes for every agent but those it flags in
    `t`'s REDO row (left untouched, for the per-agent path); returns how many it flagged."""
    uses = c.uses[setpoints[lo].mode]
    _gather(
        lo, nb, t, slots, position, orientation, velocity, omega, setpoints, memory, thrust,
        alive, motor_ok, motor, wind, uses,
    )  # fmt: skip
    _rotate(nb, t)
    _angles(nb, t, c, uses)
    _heading(nb, t, c)
    if uses[WORLD]:
        _world_velocity(nb, t)
    elif uses[POS]:
        _position(nb, t, c)
    else:
        _copy(nb, t, VT0, SV0)
        _copy(nb, t, VT1, SV1)
    if uses[ALT]:
        _altitude(nb, t, c)
    else:
        _copy(nb, t, VT2, SV2)
    if uses[VEL]:
        _speed(nb, t, c)
        _tilt(nb, t)
    else:
        _copy(nb, t, AT0, SA0)
        _copy(nb, t, AT1, SA1)
    if uses[HDG]:
        _copy(nb, t, AT2, YRC)
    elif uses[VEL]:
        _copy(nb, t, AT2, SA2)
    else:
        _held_yaw(nb, t)
    if uses[RATES]:
        _rate_loops(nb, t, c)
    else:
        _angle_loops(nb, t, c)
    if not uses[ATT]:
        _sticks(nb, t, c)
    elif uses[VEL]:
        _copy(nb, t, D0, COLL)
    else:
        _copy(nb, t, D0, STH)
    _mix(nb, t, c)
    _commands(nb, t, uses[MOT] != 0)
    _motors(nb, t, c)
    if c.rotor_drag > 0.0:
        _wrench_rotors(nb, t, c)
    else:
        _wrench(nb, t, c)
    return _commit(lo, nb, t, memory, thrust, force, torque)
