"""The fast backend's integration block by block: up to BLOCK bodies at a time, each step of
the integrator one loop over the block, so that the compiler runs it on SIMD lanes (8 bodies
a lane set with AVX-512) instead of one body after another.

core/backends/fast_kernel.py `_step_range` steps its bodies through here (`step_block`). A
block is integrated into a scratch first. If no body of it ends the tick near the ground or the
terrain, and the world has no boxes, the scratch is written back, with the forces zeroed, no
contacts and the Verlet list's test, as `_step_range` does for such a body. Otherwise nothing
is written and the caller steps the block body by body (contacts need it: they are rare, at
take-off and landing). Every body's arithmetic is fast_kernel's `_integrate`, operation for
operation in the same order (IEEE arithmetic is the same on a lane as on a scalar register; no
fastmath), so both paths give the same bits (tests/core/test_fast_block.py). The library's
sines and cosines run in plain loops of their own over the block (glibc's results, as before).

The scratch `t` holds one row of BLOCK floats per quantity, at the offsets below (row k at k
BLOCK): loops that read and write only such rows at constant distances are what the compiler
vectorises without run-time alias checks. Each loop is a function of its own (numba's
variables would otherwise live from one loop into the next, which stops the vectoriser).
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.core.frames import rotation_rows, to_body, to_world
from skyswarm.core.jit import njit

# numpy's error model: a division by zero in a lane whose result is not selected (a body at
# rest) gives inf or NaN instead of an exception; fast_kernel's own divisors are never zero.
_JIT = {"error_model": "numpy", "fastmath": False, "nogil": True}

# Bodies per block (ns a body, one thread, 10,000 hovering: 32 -> 33, 64 -> 33, 128 -> 31): 64
# keeps a block that must go body by body (one body near the ground sends it) small.
BLOCK = 64

# Rows of the scratch `t` (offsets): the state and forces copied in, then the integrator's
# intermediate values, then what is written back.
(
    QX, QY, QZ, QW, V0, V1, V2, W0, W1, W2, P0, P1, P2, IM, I0, I1, I2, F0, F1, F2, T0, T1, T2,
    FW0, FW1, FW2, RAD,
    R00, R01, R02, R10, R11, R12, R20, R21, R22, L0, L1, L2, A0, A1, A2, WN, ANG, C1, S1,
    B0, B1, B2, WB, HH, SH, CH, NEAR,
    NROW,
) = range(0, 55 * BLOCK, BLOCK)  # fmt: skip


@njit(**_JIT)
def _gather(lo, nb, t, slots, pos, quat, vel, omega, inv_m, inertia, radius, fb, tw, fw, xf, xt,
            x0):  # fmt: skip
    """Copy the block's rows into `t`, the held wrench added as `_step_range` adds it."""
    for j in range(nb):
        i = lo + j
        s = np.uint64(slots[i])
        t[QX + j], t[QY + j], t[QZ + j], t[QW + j] = quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3]
        t[V0 + j], t[V1 + j], t[V2 + j] = vel[s, 0], vel[s, 1], vel[s, 2]
        t[W0 + j], t[W1 + j], t[W2 + j] = omega[s, 0], omega[s, 1], omega[s, 2]
        t[P0 + j], t[P1 + j], t[P2 + j] = pos[s, 0], pos[s, 1], pos[s, 2]
        t[IM + j], t[RAD + j] = inv_m[s], radius[s]
        t[I0 + j], t[I1 + j], t[I2 + j] = inertia[s, 0], inertia[s, 1], inertia[s, 2]
        f0, f1, f2 = fb[s, 0], fb[s, 1], fb[s, 2]
        q0, q1, q2 = tw[s, 0], tw[s, 1], tw[s, 2]
        k = slots[i] - x0
        if 0 <= k < len(xf):
            f0, f1, f2 = f0 + xf[k, 0], f1 + xf[k, 1], f2 + xf[k, 2]
            q0, q1, q2 = q0 + xt[k, 0], q1 + xt[k, 1], q2 + xt[k, 2]
        t[F0 + j], t[F1 + j], t[F2 + j] = f0, f1, f2
        t[T0 + j], t[T1 + j], t[T2 + j] = q0, q1, q2
        t[FW0 + j], t[FW1 + j], t[FW2 + j] = fw[s, 0], fw[s, 1], fw[s, 2]


@njit(**_JIT)
def _momentum(nb, t, g, dt):
    """The velocity after the force, the body-frame angular momentum after the torque, and
    the operands of the half-step turn of it (`_turn`'s rate and angle)."""
    for j in range(nb):
        r = rotation_rows(t[QX + j], t[QY + j], t[QZ + j], t[QW + j])
        t[R00 + j], t[R01 + j], t[R02 + j] = r[0]
        t[R10 + j], t[R11 + j], t[R12 + j] = r[1]
        t[R20 + j], t[R21 + j], t[R22 + j] = r[2]
        f0, f1, f2 = to_world(r, t[F0 + j], t[F1 + j], t[F2 + j])
        m = t[IM + j]
        t[V0 + j] = t[V0 + j] + ((f0 + t[FW0 + j]) * m) * dt
        t[V1 + j] = t[V1 + j] + ((f1 + t[FW1 + j]) * m) * dt
        t[V2 + j] = (t[V2 + j] + ((f2 + t[FW2 + j]) * m) * dt) - g * dt
        i0, i1, i2 = t[I0 + j], t[I1 + j], t[I2 + j]
        w0, w1, w2 = to_body(r, t[W0 + j], t[W1 + j], t[W2 + j])
        q0, q1, q2 = to_body(r, t[T0 + j], t[T1 + j], t[T2 + j])
        l0, l1, l2 = i0 * w0 + q0 * dt, i1 * w1 + q1 * dt, i2 * w2 + q2 * dt
        t[L0 + j], t[L1 + j], t[L2 + j] = l0, l1, l2
        a0, a1, a2 = l0 / i0, l1 / i1, l2 / i2
        t[A0 + j], t[A1 + j], t[A2 + j] = a0, a1, a2
        wn = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
        t[WN + j], t[ANG + j] = wn, wn * (-0.5 * dt)


@njit(**_JIT)
def _sincos(nb, t, angle, sin_row, cos_row):
    """The library's sine and cosine of row `angle`."""
    for j in range(nb):
        t[cos_row + j], t[sin_row + j] = math.cos(t[angle + j]), math.sin(t[angle + j])


@njit(**_JIT)
def _midpoint(nb, t, dt):
    """fast_kernel `_turn`: the momentum turned half a step by its own rate; the midpoint
    rate; the position after the velocity; the half angle of the step's turn."""
    for j in range(nb):
        v0, v1, v2 = t[L0 + j], t[L1 + j], t[L2 + j]
        wn = t[WN + j]
        ux, uy, uz = t[A0 + j] / wn, t[A1 + j] / wn, t[A2 + j] / wn
        c, sn = t[C1 + j], t[S1 + j]
        d = (ux * v0 + uy * v1 + uz * v2) * (1.0 - c)
        cx, cy, cz = uy * v2 - uz * v1, uz * v0 - ux * v2, ux * v1 - uy * v0
        still = wn == 0.0
        h0 = v0 if still else v0 * c + cx * sn + ux * d
        h1 = v1 if still else v1 * c + cy * sn + uy * d
        h2 = v2 if still else v2 * c + cz * sn + uz * d
        w0, w1, w2 = h0 / t[I0 + j], h1 / t[I1 + j], h2 / t[I2 + j]
        t[B0 + j], t[B1 + j], t[B2 + j] = w0, w1, w2
        t[P0 + j] += t[V0 + j] * dt
        t[P1 + j] += t[V1 + j] * dt
        t[P2 + j] += t[V2 + j] * dt
        wm = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        t[WB + j], t[HH + j] = wm, 0.5 * wm * dt


@njit(inline="always", **_JIT)
def turn_step(l0, l1, l2, w0, w1, w2, wn, sin_h, cos_h, x, y, z, w):
    """The step's turn (fast_kernel `_integrate`, a body rate `w` of size wn > 0 and the sine
    and cosine of half its angle): the body-frame momentum `l` turned by -wn dt about w
    (Rodrigues, with cos = 1 - 2 sin_h^2, sin = -2 sin_h cos_h), and the quaternion (x, y, z,
    w) times [sin_h w / wn, cos_h], renormalised."""
    c, sn = 1.0 - 2.0 * sin_h * sin_h, -2.0 * sin_h * cos_h
    ux, uy, uz = w0 / wn, w1 / wn, w2 / wn
    d = (ux * l0 + uy * l1 + uz * l2) * (1.0 - c)
    cx, cy, cz = uy * l2 - uz * l1, uz * l0 - ux * l2, ux * l1 - uy * l0
    m0, m1, m2 = l0 * c + cx * sn + ux * d, l1 * c + cy * sn + uy * d, l2 * c + cz * sn + uz * d
    sh = sin_h / wn
    bx, by, bz, bw = w0 * sh, w1 * sh, w2 * sh, cos_h
    nx = w * bx + x * bw + y * bz - z * by
    ny = w * by - x * bz + y * bw + z * bx
    nz = w * bz + x * by - y * bx + z * bw
    nw = w * bw - x * bx - y * by - z * bz
    inv = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
    return (m0, m1, m2), (nx * inv, ny * inv, nz * inv, nw * inv)


@njit(**_JIT)
def _turn_body(nb, t, ground, margin, terrain, terrain_top):
    """The step's turn of the body (quaternion) and of its momentum, the end rate in the
    world frame; NEAR flags a body that may touch the ground or the terrain."""
    for j in range(nb):
        l0, l1, l2 = t[L0 + j], t[L1 + j], t[L2 + j]
        w0, w1, w2 = t[B0 + j], t[B1 + j], t[B2 + j]
        wn = t[WB + j]
        x, y, z, w = t[QX + j], t[QY + j], t[QZ + j], t[QW + j]
        (m0, m1, m2), (nx, ny, nz, nw) = turn_step(
            l0, l1, l2, w0, w1, w2, wn, t[SH + j], t[CH + j], x, y, z, w
        )
        turning = wn > 0.0
        x = nx if turning else x
        y = ny if turning else y
        z = nz if turning else z
        w = nw if turning else w
        l0 = m0 if turning else l0
        l1 = m1 if turning else l1
        l2 = m2 if turning else l2
        t[QX + j], t[QY + j], t[QZ + j], t[QW + j] = x, y, z, w
        r = rotation_rows(nx, ny, nz, nw)
        e0, e1, e2 = l0 / t[I0 + j], l1 / t[I1 + j], l2 / t[I2 + j]
        o0, o1, o2 = to_world(r, e0, e1, e2)
        k0, k1, k2 = to_world(
            (
                (t[R00 + j], t[R01 + j], t[R02 + j]),
                (t[R10 + j], t[R11 + j], t[R12 + j]),
                (t[R20 + j], t[R21 + j], t[R22 + j]),
            ),
            e0, e1, e2,
        )  # fmt: skip
        t[W0 + j] = o0 if turning else k0
        t[W1 + j] = o1 if turning else k1
        t[W2 + j] = o2 if turning else k2
        low = t[P2 + j] - t[RAD + j]
        near = (ground & (low < margin)) | (terrain & (low < terrain_top + margin))
        t[NEAR + j] = 1.0 if near else 0.0


@njit(**_JIT)
def _commit(lo, nb, t, slots, pos, quat, vel, omega, fb, tw, fw, c_count, ref, lim2, check):
    """Write the block back: state rows, forces zeroed, no contacts; returns how many bodies
    ended more than the limit from their Verlet reference row (NaN too)."""
    far = 0
    for j in range(nb):
        i = lo + j
        s = np.uint64(slots[i])
        pos[s, 0], pos[s, 1], pos[s, 2] = t[P0 + j], t[P1 + j], t[P2 + j]
        vel[s, 0], vel[s, 1], vel[s, 2] = t[V0 + j], t[V1 + j], t[V2 + j]
        quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3] = t[QX + j], t[QY + j], t[QZ + j], t[QW + j]
        omega[s, 0], omega[s, 1], omega[s, 2] = t[W0 + j], t[W1 + j], t[W2 + j]
        for k in range(3):
            fb[s, k] = 0.0
            tw[s, k] = 0.0
            fw[s, k] = 0.0
        c_count[i] = 0
        if check:
            d0, d1, d2 = t[P0 + j] - ref[i, 0], t[P1 + j] - ref[i, 1], t[P2 + j] - ref[i, 2]
            if not d0 * d0 + d1 * d1 + d2 * d2 <= lim2:
                far += 1
    return far


@njit(**_JIT)
def step_block(
    lo, nb, t, slots, pos, quat, vel, omega, inv_m, inertia, radius, fb, tw, fw, par, has_boxes,
    has_terrain, c_count, ref, limit, xf, xt, x0,
):  # fmt: skip
    """One tick of bodies lo .. lo + nb - 1 (nb <= BLOCK) of fast_kernel `_step_range`'s
    arguments (`par` its CONSTANTS record, `t` an (NROW,) scratch), when none of them touches
    anything: returns (True, bodies far) with every row written as `_step_range` writes it;
    or (False, 0) with nothing written, when the world has boxes or a body of the block ends
    near the ground or the terrain (the caller steps them body by body)."""
    if has_boxes:
        return False, 0
    g, dt = par.g, par.dt
    _gather(lo, nb, t, slots, pos, quat, vel, omega, inv_m, inertia, radius, fb, tw, fw, xf, xt, x0)
    _momentum(nb, t, g, dt)
    _sincos(nb, t, ANG, S1, C1)
    _midpoint(nb, t, dt)
    _sincos(nb, t, HH, SH, CH)
    _turn_body(nb, t, par.ground, par.margin, has_terrain, par.terrain_top)
    for j in range(nb):
        if t[NEAR + j] != 0.0:
            return False, 0
    check = ref.shape[0] == len(slots)
    return True, _commit(
        lo, nb, t, slots, pos, quat, vel, omega, fb, tw, fw, c_count, ref, limit * limit, check
    )
