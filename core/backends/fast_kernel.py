"""Compiled kernels of the fast backend (numba): rigid-body integration with ground, terrain
and box contact (the spatial hash of body-body contacts is core/backends/spatial_hash.py).
`step_bodies` runs on one thread, `step_bodies_parallel` on numba's threads in fixed chunks
of bodies, with bit-identical results (each body reads and writes only its own rows).
Rotations are core/frames.py's (`rotation_matrix`), the one definition every kernel compiles
in; core/jit.py keeps the cache fresh across files. The world's constants (gravity, tick,
ground, contact margin, box corners, terrain grid) reach the kernel as one CONSTANTS record.

Integrator, per body and tick (semi-implicit Euler for translation, as Bullet's: free fall
after n ticks is z0 - g dt^2 n (n + 1) / 2 exactly):
  v += (R f_body + f_world) / m dt - g z dt;  x += v dt
  L_b = I w_b + R^T tau dt (body-frame angular momentum, torque first);
  w_m = I^-1 (L_b rotated by -|w| dt / 2 about w = I^-1 L_b)   (the midpoint body rate);
  q <- q (x) exp(w_m dt / 2), renormalised;  L_b <- L_b rotated by -|w_m| dt about w_m;
  w_b = I^-1 L_b.
The body turns by w_m dt and L_b by -w_m dt, so the world angular momentum R L_b of a
torque-free body is conserved to rounding (direction and size); the rotational energy is not
an invariant of the scheme: it stays within 0.1 % over 10 s of tumbling at 2.5 ms
(tests/core/test_backends.py).
Contacts (ground plane z = 0, static boxes) act on the corners of each body's box: one
inelastic impulse per body and surface at the centroid of its corners that went through (one
corner: that corner, so a tilted touchdown rights the body; four level corners: below the
centre of mass, so a body at rest stays at rest without creeping), with Coulomb friction at the
same point (effective mass of the point, normal and tangent); then the penetration is removed
by moving the centre of mass along the normal. A body at rest sinks g dt^2 (0.06 mm at 2.5 ms)
per tick and is lifted back.
Terrain (a height grid, `terrain_height`): every corner within the contact margin of the
terrain's local plane is a contact point, solved by sequential impulses (normal and Coulomb
friction, accumulated and clamped, a few sweeps as Bullet's solver), then the body is lifted
straight up out of the terrain, so a body rests on a slope without creeping.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skyswarm.core.backends.fast_block import BLOCK, NROW, step_block, turn_step
from skyswarm.core.frames import rotation_matrix as _rot
from skyswarm.core.frames import rotation_rows, to_body, to_world
from skyswarm.core.jit import ahead, njit, prange

FRICTION = 0.5  # Coulomb coefficient at the ground and boxes (Bullet's 1.0 x 0.5 default)
_SIGNS = np.array(
    [[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)]
)  # (8, 3) the corners of a unit box

_opts = {"fastmath": False, "nogil": True}

# The one record of a world's constants that `step_bodies` reads (a (1,) array).
CONSTANTS = np.dtype(
    [
        ("g", "f8"),  # m/s^2, gravity along -z
        ("dt", "f8"),  # s, one tick
        ("ground", "?"),  # the ground plane z = 0 is there
        ("margin", "f8"),  # m, shapes closer than this touch
        ("signs", "f8", (8, 3)),  # the corners of a unit box
        ("terrain_x0", "f8"),  # m, the terrain grid's first column
        ("terrain_y0", "f8"),  # m, its first row
        ("terrain_cell", "f8"),  # m, its spacing
        ("terrain_top", "f8"),  # m, its highest sample
        ("terrain_id", "i8"),  # its scenery id
        ("terrain_friction", "f8"),  # Coulomb coefficient on it
    ]
)


def pack_constants(
    g: float,
    dt: float,
    ground: bool,
    margin: float,
    terrain: tuple[float, float, float, float, int, float] = (0.0, 0.0, 1.0, 0.0, 0, 0.0),
) -> np.ndarray:
    """The (1,) CONSTANTS record: gravity m/s^2, tick s, whether there is a ground plane, the
    contact margin m and the terrain's x0 m, y0 m, cell m, top m, scenery id, friction (the
    default: no terrain, which `step_bodies` reads from a heights array of fewer than 2 rows)."""
    c = np.zeros(1, CONSTANTS)
    c["g"], c["dt"], c["ground"], c["margin"], c["signs"] = g, dt, ground, margin, _SIGNS
    for name, value in zip(("x0", "y0", "cell", "top", "id", "friction"), terrain, strict=True):
        c["terrain_" + name] = value
    return c


@njit(**_opts)
def _inv_inertia_times(R, inv_i, a, out):
    """out = R diag(inv_i) R^T a (the world inverse inertia applied to a)."""
    b0 = (R[0, 0] * a[0] + R[1, 0] * a[1] + R[2, 0] * a[2]) * inv_i[0]
    b1 = (R[0, 1] * a[0] + R[1, 1] * a[1] + R[2, 1] * a[2]) * inv_i[1]
    b2 = (R[0, 2] * a[0] + R[1, 2] * a[1] + R[2, 2] * a[2]) * inv_i[2]
    for k in range(3):
        out[k] = R[k, 0] * b0 + R[k, 1] * b1 + R[k, 2] * b2


@njit(**_opts)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(inline="always", **_opts)
def _turn(v0, v1, v2, w0, w1, w2, t):
    """(v0, v1, v2) rotated by the angle |w| t about w (Rodrigues), as a tuple."""
    wn = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if wn == 0.0:
        return v0, v1, v2
    ux, uy, uz = w0 / wn, w1 / wn, w2 / wn
    c, sn = math.cos(wn * t), math.sin(wn * t)
    d = (ux * v0 + uy * v1 + uz * v2) * (1.0 - c)
    cx, cy, cz = uy * v2 - uz * v1, uz * v0 - ux * v2, ux * v1 - uy * v0
    return v0 * c + cx * sn + ux * d, v1 * c + cy * sn + uy * d, v2 * c + cz * sn + uz * d


@njit(inline="always", **_opts)
def _integrate(s, pos, quat, vel, omega, inv_m, inertia, fb, tw, fw, g, dt):
    """One semi-implicit Euler step of body `s` (see the module docstring) under the body-frame
    force `fb` N and world torque `tw` N m (each three floats), on scalars: the rotation as
    three rows and every vector as locals, so nothing goes through memory that the compiler
    must assume the state arrays may alias (an in-place (3, 3) matrix and scratch rows cost
    1.5x the time; the same operations in the same order, the same bits). Moves the position
    and velocity rows; returns the new quaternion and world angular velocity, which the caller
    writes (written here, after the branch, they cost numba two reference-count calls per
    body: its inliner copies the array arguments)."""
    r = rotation_rows(quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3])
    f0, f1, f2 = to_world(r, fb[0], fb[1], fb[2])
    m = inv_m[s]
    v0 = vel[s, 0] + ((f0 + fw[s, 0]) * m) * dt
    v1 = vel[s, 1] + ((f1 + fw[s, 1]) * m) * dt
    v2 = (vel[s, 2] + ((f2 + fw[s, 2]) * m) * dt) - g * dt
    vel[s, 0], vel[s, 1], vel[s, 2] = v0, v1, v2
    i0, i1, i2 = inertia[s, 0], inertia[s, 1], inertia[s, 2]
    w0, w1, w2 = to_body(r, omega[s, 0], omega[s, 1], omega[s, 2])
    t0, t1, t2 = to_body(r, tw[0], tw[1], tw[2])
    # the torque first (semi-implicit, as for the force): L_b += tau_b dt
    l0, l1, l2 = i0 * w0 + t0 * dt, i1 * w1 + t1 * dt, i2 * w2 + t2 * dt
    # Midpoint body rate: L_b rotated half a step by its own rate, then w = I^-1 L_b(t + dt/2).
    h0, h1, h2 = _turn(l0, l1, l2, l0 / i0, l1 / i1, l2 / i2, -0.5 * dt)
    w0, w1, w2 = h0 / i0, h1 / i1, h2 / i2
    pos[s, 0] += v0 * dt
    pos[s, 1] += v1 * dt
    pos[s, 2] += v2 * dt
    # The body turns by w dt and L_b by -w dt: R L_b, the world momentum, is unchanged. One
    # sine and cosine of half the angle serve both (the double-angle formulas for L_b).
    wn = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if wn > 0.0:
        h = 0.5 * wn * dt
        sin_h, cos_h = math.sin(h), math.cos(h)
        x, y, z, w = quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3]
        (l0, l1, l2), (x, y, z, w) = turn_step(l0, l1, l2, w0, w1, w2, wn, sin_h, cos_h, x, y, z, w)
        r = rotation_rows(x, y, z, w)
    else:
        x, y, z, w = quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3]
    w0, w1, w2 = l0 / i0, l1 / i1, l2 / i2  # the rate at the end of the step
    return (x, y, z, w), to_world(r, w0, w1, w2)


@njit(**_opts)
def _slip(s, r, n, vel, omega, tmp):
    """The tangential velocity (t0, t1, t2) m/s of body s's point r (world, from the centre of
    mass) on a surface of normal n, and its size (scratch: tmp (3,))."""
    _cross(omega[s], r, tmp)
    t0, t1, t2 = vel[s, 0] + tmp[0], vel[s, 1] + tmp[1], vel[s, 2] + tmp[2]
    vn = t0 * n[0] + t1 * n[1] + t2 * n[2]
    t0, t1, t2 = t0 - vn * n[0], t1 - vn * n[1], t2 - vn * n[2]
    return t0, t1, t2, math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)


@njit(**_opts)
def _point_mass(s, r, d0, d1, d2, inv_m, inv_i, R, tmp, tmp2):
    """1 / the effective mass kg of body s's point r along the unit direction d: 1/m +
    (r x d) . I^-1 (r x d); leaves r x d in tmp and I^-1 (r x d) in tmp2."""
    tmp[0] = r[1] * d2 - r[2] * d1
    tmp[1] = r[2] * d0 - r[0] * d2
    tmp[2] = r[0] * d1 - r[1] * d0
    _inv_inertia_times(R, inv_i, tmp, tmp2)
    return inv_m[s] + tmp2[0] * tmp[0] + tmp2[1] * tmp[1] + tmp2[2] * tmp[2]


@njit(**_opts)
def _impulse(s, r, n, vel, omega, inv_m, inv_i, R, tmp, tmp2):
    """Inelastic impulse with Coulomb friction at the point r (world, from the centre of mass)
    of body s against a static surface of normal n; returns the normal impulse N s."""
    _cross(omega[s], r, tmp)
    vc0, vc1, vc2 = vel[s, 0] + tmp[0], vel[s, 1] + tmp[1], vel[s, 2] + tmp[2]
    vn = vc0 * n[0] + vc1 * n[1] + vc2 * n[2]
    if vn >= 0.0:
        return 0.0
    kn = _point_mass(s, r, n[0], n[1], n[2], inv_m, inv_i, R, tmp, tmp2)
    jn = -vn / kn
    for k in range(3):
        vel[s, k] += jn * n[k] * inv_m[s]
        omega[s, k] += jn * tmp2[k]
    # friction along the remaining tangential slip
    t0, t1, t2, vt = _slip(s, r, n, vel, omega, tmp)
    if vt > 1e-12:
        t0, t1, t2 = t0 / vt, t1 / vt, t2 / vt
        kt = _point_mass(s, r, t0, t1, t2, inv_m, inv_i, R, tmp, tmp2)
        jt = min(vt / kt, FRICTION * jn)
        vel[s, 0] -= jt * t0 * inv_m[s]
        vel[s, 1] -= jt * t1 * inv_m[s]
        vel[s, 2] -= jt * t2 * inv_m[s]
        for k in range(3):
            omega[s, k] -= jt * tmp2[k]
    return jn


# A body's contact rows (see `step_bodies`): up to one for the ground, one for the terrain,
# then one per box.
BOX_ROW = 2


@njit(**_opts)
def _step_range(
    lo, hi, slots, pos, quat, vel, omega, inv_m, inertia, half, offset, radius, fb, tw, fw,
    constants, box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit,
    xf, xt, x0,
):  # fmt: skip
    """Bodies lo to hi - 1 (the i-th live body is slots[i]) in blocks of fast_block.BLOCK: a
    block none of whose bodies touches anything on SIMD lanes (`step_block`), any other body
    by body (`_step_each`), the same bits either way. Returns the contacts recorded and how
    many bodies ended more than `limit` m from their row of `ref` (NaN too; none counted when
    `ref` has not one row per slot)."""
    par = constants[0]
    touching, far = 0, 0
    t = np.empty(NROW)
    for b in range(lo, hi, BLOCK):
        e = min(hi, b + BLOCK)
        done, f = step_block(
            b, e - b, t, slots, pos, quat, vel, omega, inv_m, inertia, radius, fb, tw, fw, par,
            len(box_c) > 0, hf.shape[0] >= 2, c_count, ref, limit, xf, xt, x0,
        )  # fmt: skip
        if not done:
            touching, f = _step_each(
                b, e, slots, pos, quat, vel, omega, inv_m, inertia, half, offset, radius, fb, tw,
                fw, constants, box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force,
                c_pos, ref, limit, xf, xt, x0, touching,
            )  # fmt: skip
        far += f
    return touching, far


@njit(**_opts)
def _step_each(
    lo, hi, slots, pos, quat, vel, omega, inv_m, inertia, half, offset, radius, fb, tw, fw,
    constants, box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit,
    xf, xt, x0, touching,
):  # fmt: skip
    """Body by body from lo to hi - 1: integrate, then its ground, terrain and box contacts,
    recorded from row i * (BOX_ROW + boxes) on; c_count[i] = how many. Returns `touching`
    plus the contacts recorded, and how many bodies ended far (`_step_range`)."""
    far = 0
    check = ref.shape[0] == len(slots)
    lim2 = limit * limit
    par = constants[0]
    g, dt, margin, signs, ground = par.g, par.dt, par.margin, par.signs, par.ground
    terrain_top = par.terrain_top
    R = np.empty((3, 3))
    inv_i, r, n, tmp, tmp2 = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    box_scratch = np.empty((4, 8, 3))
    for i in range(lo, hi):
        # the body's row as an unsigned index: numba then indexes without the negative index
        # fix-up (a sign test and an add per array access)
        s = np.uint64(slots[i])
        k0 = i * (BOX_ROW + len(box_c))
        nc = k0
        f = fb[s, 0], fb[s, 1], fb[s, 2]
        t = tw[s, 0], tw[s, 1], tw[s, 2]
        j = slots[i] - x0
        if 0 <= j < len(xf):  # the held wrench of slot s (FastWorld.hold_wrenches), added as
            # numpy's `fb[rows] += xf` adds it (kept in registers: the rows are zeroed below)
            f = f[0] + xf[j, 0], f[1] + xf[j, 1], f[2] + xf[j, 2]
            t = t[0] + xt[j, 0], t[1] + xt[j, 1], t[2] + xt[j, 2]
        q, o = _integrate(s, pos, quat, vel, omega, inv_m, inertia, f, t, fw, g, dt)
        quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3] = q
        omega[s, 0], omega[s, 1], omega[s, 2] = o
        near_terrain = hf.shape[0] >= 2 and pos[s, 2] - radius[s] < terrain_top + margin
        near_ground = ground and pos[s, 2] - radius[s] < margin
        if near_ground or near_terrain or len(box_c):  # only bodies that may touch need it
            for k in range(3):
                inv_i[k] = 1.0 / inertia[s, k]
        # ground: one impulse at the centroid of the corners below z = 0
        if near_ground:
            n[0], n[1], n[2] = 0.0, 0.0, 1.0
            _rot(quat[s], R)
            deepest, count = 0.0, 0
            r[0], r[1], r[2] = 0.0, 0.0, 0.0
            for c in range(8):
                for k in range(3):
                    tmp[k] = offset[s, k] + signs[c, k] * half[s, k]
                rz = R[2, 0] * tmp[0] + R[2, 1] * tmp[1] + R[2, 2] * tmp[2]
                if pos[s, 2] + rz < 0.0:
                    for k in range(3):
                        r[k] += R[k, 0] * tmp[0] + R[k, 1] * tmp[1] + R[k, 2] * tmp[2]
                    count += 1
                    deepest = min(deepest, pos[s, 2] + rz)
            jsum = 0.0
            if count:
                for k in range(3):
                    r[k] /= count
                jsum = _impulse(s, r, n, vel, omega, inv_m, inv_i, R, tmp, tmp2)
                pos[s, 2] -= deepest
            lowest = 1e300
            for c in range(8):
                rz = 0.0
                for k in range(3):
                    rz += R[2, k] * (offset[s, k] + signs[c, k] * half[s, k])
                lowest = min(lowest, pos[s, 2] + rz)
            if lowest < margin:
                c_other[nc], c_force[nc] = -1, jsum / dt
                c_pos[nc, 0], c_pos[nc, 1], c_pos[nc, 2] = pos[s, 0], pos[s, 1], lowest
                nc += 1
        if near_terrain:
            if _terrain_contact(
                s, pos, quat, vel, omega, inv_m, inv_i, half, offset, par, hf, R, r, n, tmp, tmp2,
                box_scratch, c_force, c_pos, nc,
            ):  # fmt: skip
                c_other[nc] = par.terrain_id
                nc += 1
        for b in range(len(box_c)):
            if _box_contact(
                s, b, pos, quat, vel, omega, inv_m, inv_i, half, offset, radius, par, box_c,
                box_h, box_cs, R, r, n, tmp, tmp2, box_scratch, c_force, c_pos, nc,
            ):  # fmt: skip
                c_other[nc] = box_id[b]
                nc += 1
        for k in range(3):
            fb[s, k] = 0.0
            tw[s, k] = 0.0
            fw[s, k] = 0.0
        c_count[i] = nc - k0
        touching += nc - k0
        if check:  # spatial_hash.moved's test, on the body's final position of the tick
            d0, d1, d2 = pos[s, 0] - ref[i, 0], pos[s, 1] - ref[i, 1], pos[s, 2] - ref[i, 2]
            if not d0 * d0 + d1 * d1 + d2 * d2 <= lim2:
                far += 1
    return touching, far


# `_step_range` by a public name: what uav/kernel.py `fly_ticks` integrates each tick with
step_range = _step_range


@njit(**_opts)
def step_bodies(
    slots, pos, quat, vel, omega, inv_m, inertia, half, offset, radius, fb, tw, fw, constants,
    box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit, xf, xt,
    x0,
):  # fmt: skip
    """Integrate every body of `slots` one tick with its contacts. Per slot: `inv_m` 1/kg,
    `inertia` (3,) kg m^2 (principal, body), box `half` extents and centre `offset` (3,) m
    (body), bounding `radius` m, and the forces of the tick (zeroed after): `fb` body-frame N,
    `tw` world N m, `fw` world N. `constants`: the (1,) CONSTANTS record (`pack_constants`).
    The i-th body's contacts within the margin go to rows i * (BOX_ROW + boxes) ... of c_other
    (scenery id), c_force (N) and c_pos (m), c_count[i] of them; `compact_contacts` gathers
    them. Boxes: centre, half size, (cos, sin) of the yaw, scenery id. `hf` (ny, nx) terrain
    heights (fewer than 2 rows: none; its grid in `constants`, see `terrain_height`).
    Returns (contacts, far): how many contacts were recorded (0: `compact_contacts` has
    nothing to gather) and how many bodies ended the tick more than `limit` m from their
    row of `ref` (n, 3) (spatial_hash.moved's test, counted while each body's row is in
    cache: the world's Verlet list check; pass a (0, 3) `ref` to skip it). `xf`, `xt`
    (m, 3): a held wrench, added to `fb`, `tw` of slots x0 ... x0 + m - 1 before their
    integration (FastWorld.hold_wrenches; (0, 3) arrays: none)."""
    # np.int64(0), not 0: a literal 0 would compile a second _step_range (lo typed
    # Literal[int](0)) beside the one step_bodies_parallel's chunks call (uav/kernel.py fly).
    return _step_range(
        np.int64(0), len(slots), slots, pos, quat, vel, omega, inv_m, inertia, half, offset,
        radius, fb, tw, fw, constants, box_c, box_h, box_cs, box_id, hf, c_count, c_other,
        c_force, c_pos, ref, limit, xf, xt, x0,
    )  # fmt: skip


# Bodies per work item of `step_bodies_parallel` (a fixed split: the work never depends on the
# number of threads).
CHUNK = 256


@njit(parallel=True, **_opts)
def step_bodies_parallel(
    slots, pos, quat, vel, omega, inv_m, inertia, half, offset, radius, fb, tw, fw, constants,
    box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit, xf, xt,
    x0,
):  # fmt: skip
    """`step_bodies` on numba's threads, CHUNK bodies per work item. Each body reads and
    writes only its own rows (static scenery is read-only), with the same operations in the
    same order, so the result is bit-identical to `step_bodies` with any number of threads
    (the two counts it returns are sums of integers: any order gives the same)."""
    nb_ = len(slots)
    touching, far = 0, 0
    for ch in prange((nb_ + CHUNK - 1) // CHUNK):
        t, f = _step_range(
            ch * CHUNK, min(nb_, (ch + 1) * CHUNK), slots, pos, quat, vel, omega, inv_m,
            inertia, half, offset, radius, fb, tw, fw, constants, box_c, box_h, box_cs, box_id,
            hf, c_count, c_other, c_force, c_pos, ref, limit, xf, xt, x0,
        )  # fmt: skip
        touching += t
        far += f
    return touching, far


@njit(**_opts)
def compact_contacts(slots, per_body, c_count, c_other, c_force, c_pos):
    """The body-scenery contacts recorded by `step_bodies` as (a, b, force, position) arrays,
    in body order (per body: ground, terrain, boxes)."""
    total = 0
    for i in range(len(slots)):
        total += c_count[i]
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    f = np.empty(total)
    p = np.empty((total, 3))
    k = 0
    for i in range(len(slots)):
        for j in range(i * per_body, i * per_body + c_count[i]):
            a[k], b[k], f[k] = slots[i], c_other[j], c_force[j]
            p[k, 0], p[k, 1], p[k, 2] = c_pos[j, 0], c_pos[j, 1], c_pos[j, 2]
            k += 1
    return a, b, f, p


@njit(**_opts)
def terrain_height(hf, x0, y0, cell, x, y, normal):
    """Height m of the heightfield `hf` (ny, nx; row j at y0 + j cell, column i at x0 + i cell)
    at (x, y), and its unit upward `normal` (3,): each grid cell is two triangles split along
    the diagonal from (i, j) to (i + 1, j + 1), heights linear on each. NaN outside the grid or
    where a corner height is NaN (no terrain there)."""
    u = (x - x0) / cell
    v = (y - y0) / cell
    ny, nx = hf.shape
    if not (u >= 0.0 and v >= 0.0 and u <= nx - 1 and v <= ny - 1):
        return np.nan
    i = min(int(u), nx - 2)
    j = min(int(v), ny - 2)
    fx, fy = u - i, v - j
    h00, h11 = hf[j, i], hf[j + 1, i + 1]
    if fx >= fy:  # the triangle (i, j), (i + 1, j), (i + 1, j + 1)
        h10 = hf[j, i + 1]
        gx, gy = h10 - h00, h11 - h10
    else:  # (i, j), (i, j + 1), (i + 1, j + 1)
        h01 = hf[j + 1, i]
        gx, gy = h11 - h01, h01 - h00
    h = h00 + fx * gx + fy * gy
    gx, gy = gx / cell, gy / cell
    inv = 1.0 / math.sqrt(gx * gx + gy * gy + 1.0)
    normal[0], normal[1], normal[2] = -gx * inv, -gy * inv, inv
    return h


TERRAIN_ITERATIONS = 4  # sequential-impulse sweeps over a body's terrain contact corners


@njit(**_opts)
def _terrain_contact(
    s, pos, quat, vel, omega, inv_m, inv_i, half, offset, par, hf, R, r, n, tmp, tmp2, scratch,
    c_force, c_pos, nc,
):  # fmt: skip
    """Body s against the heightfield terrain. Each box corner's distance to the terrain's
    local plane under it is (z - h) n_z; the corners closer than `margin` are contact points.
    Sequential impulses (TERRAIN_ITERATIONS sweeps, as Bullet's solver does): at each point an
    inelastic normal impulse (accumulated, never pulling) and Coulomb friction (accumulated,
    within the terrain's friction coefficient times the normal impulse), so a body rests on a
    slope flatter than the friction angle. Then the body moves up by the deepest corner's
    height below the terrain (straight up, as gravity sank it: a body at rest on a slope does
    not creep). Reported
    (returns True) when a point is within `margin`: the summed normal force and the lowest
    corner's position."""
    x0, y0, cell = par.terrain_x0, par.terrain_y0, par.terrain_cell
    margin, signs, dt = par.margin, par.signs, par.dt
    _rot(quat[s], R)
    corner, normal, acc, jt = scratch[0], scratch[1], scratch[2], scratch[3]
    count, deepest, lowest, low_c = 0, 0.0, 1e300, -1
    for c in range(8):
        for k in range(3):
            tmp[k] = offset[s, k] + signs[c, k] * half[s, k]
        for k in range(3):
            r[k] = R[k, 0] * tmp[0] + R[k, 1] * tmp[1] + R[k, 2] * tmp[2]
        h = terrain_height(hf, x0, y0, cell, pos[s, 0] + r[0], pos[s, 1] + r[1], tmp2)
        if h != h:  # no terrain under this corner
            continue
        gap = (pos[s, 2] + r[2] - h) * tmp2[2]
        if pos[s, 2] + r[2] - h < deepest:
            deepest = pos[s, 2] + r[2] - h
        if gap < lowest:
            lowest, low_c = gap, count
        if gap < margin:
            for k in range(3):
                corner[count, k] = r[k]
                normal[count, k] = tmp2[k]
                jt[count, k] = 0.0
            acc[count, 0] = 0.0
            count += 1
    if count == 0:
        return False
    for _ in range(TERRAIN_ITERATIONS):
        for c in range(count):
            _corner_impulse(
                s, corner[c], normal[c], acc[c], jt[c], par.terrain_friction, vel, omega, inv_m,
                inv_i, R, tmp, tmp2,
            )  # fmt: skip
    jsum = 0.0
    for c in range(count):
        jsum += acc[c, 0]
    pos[s, 2] -= deepest
    c_force[nc] = jsum / dt
    for k in range(3):
        c_pos[nc, k] = pos[s, k] + corner[low_c, k]
    return True


@njit(**_opts)
def _corner_impulse(s, r, n, acc, jt, mu, vel, omega, inv_m, inv_i, R, tmp, tmp2):
    """One sequential-impulse step at the contact point r (world, from the centre of mass) of
    normal n: the normal impulse accumulated in acc[0] (>= 0) and the friction impulse vector
    in jt (|jt| <= mu acc[0]) change by what brings the point's velocity to zero."""
    _cross(omega[s], r, tmp)
    vn = (vel[s, 0] + tmp[0]) * n[0] + (vel[s, 1] + tmp[1]) * n[1] + (vel[s, 2] + tmp[2]) * n[2]
    kn = _point_mass(s, r, n[0], n[1], n[2], inv_m, inv_i, R, tmp, tmp2)
    new = max(acc[0] - vn / kn, 0.0)
    d = new - acc[0]
    acc[0] = new
    for k in range(3):
        vel[s, k] += d * n[k] * inv_m[s]
        omega[s, k] += d * tmp2[k]
    # friction: the tangential slip at the point, removed within the cone
    t0, t1, t2, vt = _slip(s, r, n, vel, omega, tmp)
    if vt <= 1e-12:
        return
    t0, t1, t2 = t0 / vt, t1 / vt, t2 / vt
    kt = _point_mass(s, r, t0, t1, t2, inv_m, inv_i, R, tmp, tmp2)
    step = vt / kt  # impulse along -t that stops the slip
    o0, o1, o2 = jt[0], jt[1], jt[2]
    j0, j1, j2 = o0 - step * t0, o1 - step * t1, o2 - step * t2
    jn = math.sqrt(j0 * j0 + j1 * j1 + j2 * j2)
    cap = mu * acc[0]
    if jn > cap:
        j0, j1, j2 = j0 * cap / jn, j1 * cap / jn, j2 * cap / jn
    jt[0], jt[1], jt[2] = j0, j1, j2
    d0, d1, d2 = j0 - o0, j1 - o1, j2 - o2
    vel[s, 0] += d0 * inv_m[s]
    vel[s, 1] += d1 * inv_m[s]
    vel[s, 2] += d2 * inv_m[s]
    tmp[0], tmp[1], tmp[2] = d0, d1, d2
    _cross(r, tmp, tmp2)
    _inv_inertia_times(R, inv_i, tmp2, tmp)
    for k in range(3):
        omega[s, k] += tmp[k]


@njit(**_opts)
def _box_contact(
    s, b, pos, quat, vel, omega, inv_m, inv_i, half, offset, radius, par, box_c, box_h, box_cs,
    R, r, n, tmp, tmp2, scratch, c_force, c_pos, nc,
):  # fmt: skip
    """Body s against static box b (yawed about z): one impulse along the face the deepest
    corner leaves through; a corner within `margin` of the box is a reported contact (its
    force and position written to row nc; returns whether)."""
    margin, signs, dt = par.margin, par.signs, par.dt
    dx, dy, dz = pos[s, 0] - box_c[b, 0], pos[s, 1] - box_c[b, 1], pos[s, 2] - box_c[b, 2]
    reach = radius[s] + margin + math.sqrt(box_h[b, 0] ** 2 + box_h[b, 1] ** 2 + box_h[b, 2] ** 2)
    if dx * dx + dy * dy + dz * dz > reach * reach:
        return False
    cy, sy = box_cs[b, 0], box_cs[b, 1]
    touching = False
    _rot(quat[s], R)
    # corners inside: each leaves through its nearest face; the deepest corner's face is the
    # contact's normal, and the impulse acts at the centroid of the corners behind that face
    face_n, inside = scratch[0], scratch[1]
    face_d = scratch[2, :, 0]
    face_n[:] = 0.0
    face_d[:] = 0.0
    best, best_c = 0.0, -1
    for c in range(8):
        for k in range(3):
            tmp[k] = offset[s, k] + signs[c, k] * half[s, k]
        for k in range(3):
            inside[c, k] = R[k, 0] * tmp[0] + R[k, 1] * tmp[1] + R[k, 2] * tmp[2]
        px = pos[s, 0] + inside[c, 0] - box_c[b, 0]
        py = pos[s, 1] + inside[c, 1] - box_c[b, 1]
        pz = pos[s, 2] + inside[c, 2] - box_c[b, 2]
        lx, ly, lz = cy * px + sy * py, -sy * px + cy * py, pz  # box frame
        gx, gy, gz = box_h[b, 0] - abs(lx), box_h[b, 1] - abs(ly), box_h[b, 2] - abs(lz)
        if gx > -margin and gy > -margin and gz > -margin:
            touching = True
        if gx > 0.0 and gy > 0.0 and gz > 0.0:
            if gx <= gy and gx <= gz:
                sg = 1.0 if lx >= 0 else -1.0
                face_n[c, 0], face_n[c, 1], face_d[c] = cy * sg, sy * sg, gx
            elif gy <= gz:
                sg = 1.0 if ly >= 0 else -1.0
                face_n[c, 0], face_n[c, 1], face_d[c] = -sy * sg, cy * sg, gy
            else:
                face_n[c, 2], face_d[c] = 1.0 if lz >= 0 else -1.0, gz
            if face_d[c] > best:
                best, best_c = face_d[c], c
    jsum = 0.0
    if best_c >= 0:
        for k in range(3):
            n[k] = face_n[best_c, k]
            r[k] = 0.0
        count = 0
        for c in range(8):
            same = face_n[c, 0] * n[0] + face_n[c, 1] * n[1] + face_n[c, 2] * n[2]
            if face_d[c] > 0.0 and same > 0.99:
                for k in range(3):
                    r[k] += inside[c, k]
                count += 1
        for k in range(3):
            r[k] /= count
        jsum = _impulse(s, r, n, vel, omega, inv_m, inv_i, R, tmp, tmp2)
        for k in range(3):
            pos[s, k] += best * n[k]
    if touching:
        c_force[nc] = jsum / dt
        c_pos[nc, 0], c_pos[nc, 1], c_pos[nc, 2] = pos[s, 0], pos[s, 1], pos[s, 2]
    return touching


# The types core/backends/fast.py calls them with (compiled before the clock: core/jit.py).
_STEP = (
    *"i8[1] f8[2] f8[2] f8[2] f8[2] f8[1] f8[2] f8[2] f8[2] f8[1] f8[2] f8[2] f8[2]".split(),
    numba.typeof(np.zeros(1, CONSTANTS)),
    *"f8[2] f8[2] f8[2] i8[1] f8[2] i8[1] i8[1] f8[1] f8[2] f8[2] f8 f8[2] f8[2] i8".split(),
)
ahead(step_bodies, _STEP)
ahead(step_bodies_parallel, _STEP)
ahead(compact_contacts, "i8[1] i8 i8[1] i8[1] f8[1] f8[2]")
