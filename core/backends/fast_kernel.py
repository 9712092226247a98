"""Compiled kernels of the fast backend (numba): rigid-body integration with ground and box
contact (the spatial hash of body-body contacts is core/backends/spatial_hash.py).

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
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

FRICTION = 0.5  # Coulomb coefficient at the ground and boxes (Bullet's 1.0 x 0.5 default)
_SIGNS = np.array(
    [[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0) for sz in (-1.0, 1.0)]
)  # (8, 3) the corners of a unit box

_opts = {"cache": True, "fastmath": False, "nogil": True}


@nb.njit(**_opts)
def _rot(q, out):
    """(3, 3) rotation matrix of the quaternion q (x, y, z, w) into `out`."""
    x, y, z, w = q[0], q[1], q[2], q[3]
    out[0, 0] = 1 - 2 * (y * y + z * z)
    out[0, 1] = 2 * (x * y - z * w)
    out[0, 2] = 2 * (x * z + y * w)
    out[1, 0] = 2 * (x * y + z * w)
    out[1, 1] = 1 - 2 * (x * x + z * z)
    out[1, 2] = 2 * (y * z - x * w)
    out[2, 0] = 2 * (x * z - y * w)
    out[2, 1] = 2 * (y * z + x * w)
    out[2, 2] = 1 - 2 * (x * x + y * y)


@nb.njit(**_opts)
def _inv_inertia_times(R, inv_i, a, out):
    """out = R diag(inv_i) R^T a (the world inverse inertia applied to a)."""
    b0 = (R[0, 0] * a[0] + R[1, 0] * a[1] + R[2, 0] * a[2]) * inv_i[0]
    b1 = (R[0, 1] * a[0] + R[1, 1] * a[1] + R[2, 1] * a[2]) * inv_i[1]
    b2 = (R[0, 2] * a[0] + R[1, 2] * a[1] + R[2, 2] * a[2]) * inv_i[2]
    for k in range(3):
        out[k] = R[k, 0] * b0 + R[k, 1] * b1 + R[k, 2] * b2


@nb.njit(**_opts)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@nb.njit(**_opts)
def _integrate(s, pos, quat, vel, omega, inv_m, inertia, fb, tw, fw, g, dt, R, scratch):
    """One semi-implicit Euler step of body `s` (see the module docstring)."""
    _rot(quat[s], R)
    for k in range(3):
        a = (R[k, 0] * fb[s, 0] + R[k, 1] * fb[s, 1] + R[k, 2] * fb[s, 2] + fw[s, k]) * inv_m[s]
        vel[s, k] += a * dt
    vel[s, 2] -= g * dt
    # body rates and angular momentum in the body frame (scratch rows: no allocation per body)
    wb, tb, lb, tmp3 = scratch[0], scratch[1], scratch[2], scratch[3]
    for k in range(3):
        wb[k] = R[0, k] * omega[s, 0] + R[1, k] * omega[s, 1] + R[2, k] * omega[s, 2]
        tb[k] = R[0, k] * tw[s, 0] + R[1, k] * tw[s, 1] + R[2, k] * tw[s, 2]
    # the torque first (semi-implicit, as for the force): L_b += tau_b dt
    for k in range(3):
        lb[k] = inertia[s, k] * wb[k] + tb[k] * dt
    # Midpoint body rate: L_b rotated half a step by its own rate, then w = I^-1 L_b(t + dt/2).
    for k in range(3):
        wb[k] = lb[k] / inertia[s, k]
    _rotate_by(lb, wb, -0.5 * dt, tmp3)
    for k in range(3):
        wb[k] = tmp3[k] / inertia[s, k]
    # The body turns by w dt and L_b by -w dt: R L_b, the world momentum, is unchanged.
    _rotate_by(lb, wb, -dt, tmp3)
    for k in range(3):
        pos[s, k] += vel[s, k] * dt
    # q <- q (x) [sin(|w| dt / 2) w / |w|, cos(|w| dt / 2)]
    wn = math.sqrt(wb[0] * wb[0] + wb[1] * wb[1] + wb[2] * wb[2])
    if wn > 0.0:
        h = 0.5 * wn * dt
        sh = math.sin(h) / wn
        bx, by, bz, bw = wb[0] * sh, wb[1] * sh, wb[2] * sh, math.cos(h)
        x, y, z, w = quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3]
        nx = w * bx + x * bw + y * bz - z * by
        ny = w * by - x * bz + y * bw + z * bx
        nz = w * bz + x * by - y * bx + z * bw
        nw = w * bw - x * bx - y * by - z * bz
        inv = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz + nw * nw)
        quat[s, 0], quat[s, 1], quat[s, 2], quat[s, 3] = nx * inv, ny * inv, nz * inv, nw * inv
    for k in range(3):
        wb[k] = tmp3[k] / inertia[s, k]  # the rate at the end of the step
    _rot(quat[s], R)
    for k in range(3):
        omega[s, k] = R[k, 0] * wb[0] + R[k, 1] * wb[1] + R[k, 2] * wb[2]


@nb.njit(**_opts)
def _rotate_by(v, w, t, out):
    """out = v rotated by the angle |w| t about w (Rodrigues)."""
    wn = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if wn == 0.0:
        out[0], out[1], out[2] = v[0], v[1], v[2]
        return
    ux, uy, uz = w[0] / wn, w[1] / wn, w[2] / wn
    c, sn = math.cos(wn * t), math.sin(wn * t)
    d = (ux * v[0] + uy * v[1] + uz * v[2]) * (1.0 - c)
    cx, cy, cz = uy * v[2] - uz * v[1], uz * v[0] - ux * v[2], ux * v[1] - uy * v[0]
    out[0] = v[0] * c + cx * sn + ux * d
    out[1] = v[1] * c + cy * sn + uy * d
    out[2] = v[2] * c + cz * sn + uz * d


@nb.njit(**_opts)
def _impulse(s, r, n, vel, omega, inv_m, inv_i, R, tmp, tmp2):
    """Inelastic impulse with Coulomb friction at the point r (world, from the centre of mass)
    of body s against a static surface of normal n; returns the normal impulse N s."""
    _cross(omega[s], r, tmp)
    vc0, vc1, vc2 = vel[s, 0] + tmp[0], vel[s, 1] + tmp[1], vel[s, 2] + tmp[2]
    vn = vc0 * n[0] + vc1 * n[1] + vc2 * n[2]
    if vn >= 0.0:
        return 0.0
    _cross(r, n, tmp)
    _inv_inertia_times(R, inv_i, tmp, tmp2)
    kn = inv_m[s] + tmp2[0] * tmp[0] + tmp2[1] * tmp[1] + tmp2[2] * tmp[2]
    jn = -vn / kn
    for k in range(3):
        vel[s, k] += jn * n[k] * inv_m[s]
        omega[s, k] += jn * tmp2[k]
    # friction along the remaining tangential slip
    _cross(omega[s], r, tmp)
    t0, t1, t2 = vel[s, 0] + tmp[0], vel[s, 1] + tmp[1], vel[s, 2] + tmp[2]
    vn = t0 * n[0] + t1 * n[1] + t2 * n[2]
    t0, t1, t2 = t0 - vn * n[0], t1 - vn * n[1], t2 - vn * n[2]
    vt = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
    if vt > 1e-12:
        t0, t1, t2 = t0 / vt, t1 / vt, t2 / vt
        tmp[0] = r[1] * t2 - r[2] * t1
        tmp[1] = r[2] * t0 - r[0] * t2
        tmp[2] = r[0] * t1 - r[1] * t0
        _inv_inertia_times(R, inv_i, tmp, tmp2)
        kt = inv_m[s] + tmp2[0] * tmp[0] + tmp2[1] * tmp[1] + tmp2[2] * tmp[2]
        jt = min(vt / kt, FRICTION * jn)
        vel[s, 0] -= jt * t0 * inv_m[s]
        vel[s, 1] -= jt * t1 * inv_m[s]
        vel[s, 2] -= jt * t2 * inv_m[s]
        for k in range(3):
            omega[s, k] -= jt * tmp2[k]
    return jn


@nb.njit(**_opts)
def step_bodies(
    slots, pos, quat, vel, omega, inv_m, inertia, half, offset, radius, fb, tw, fw,
    g, dt, ground, margin, box_c, box_h, box_cs, signs, c_slot, c_other, c_force, c_pos,
):  # fmt: skip
    """Integrate every body of `slots` one tick with its contacts; report body-scenery contacts
    (within `margin` m) into the c_* arrays; returns their count (may exceed their length:
    then call again with larger arrays from a saved state - the caller never needs to, the
    arrays hold 8 per body)."""
    R = np.empty((3, 3))
    inv_i = np.empty(3)
    r = np.empty(3)
    n = np.empty(3)
    tmp = np.empty(3)
    tmp2 = np.empty(3)
    scratch = np.empty((4, 3))
    box_scratch = np.empty((3, 8, 3))
    nc = 0
    for i in range(len(slots)):
        s = slots[i]
        _integrate(s, pos, quat, vel, omega, inv_m, inertia, fb, tw, fw, g, dt, R, scratch)
        for k in range(3):
            inv_i[k] = 1.0 / inertia[s, k]
        # ground: one impulse at the centroid of the corners below z = 0
        if ground:
            low = pos[s, 2] - radius[s]
            if low < margin:
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
                    if nc < len(c_slot):
                        c_slot[nc], c_other[nc], c_force[nc] = s, -1, jsum / dt
                        c_pos[nc, 0], c_pos[nc, 1], c_pos[nc, 2] = pos[s, 0], pos[s, 1], lowest
                    nc += 1
        for b in range(len(box_c)):
            nc = _box_contact(
                s, b, pos, quat, vel, omega, inv_m, inv_i, half, offset, radius, margin,
                box_c, box_h, box_cs, signs, dt, R, r, n, tmp, tmp2, box_scratch,
                c_slot, c_other, c_force, c_pos, nc,
            )  # fmt: skip
        for k in range(3):
            fb[s, k] = 0.0
            tw[s, k] = 0.0
            fw[s, k] = 0.0
    return nc


@nb.njit(**_opts)
def _box_contact(
    s, b, pos, quat, vel, omega, inv_m, inv_i, half, offset, radius, margin,
    box_c, box_h, box_cs, signs, dt, R, r, n, tmp, tmp2, scratch,
    c_slot, c_other, c_force, c_pos, nc,
):  # fmt: skip
    """Body s against static box b (yawed about z): one impulse along the face the deepest
    corner leaves through; a corner within `margin` of the box is a reported contact."""
    dx, dy, dz = pos[s, 0] - box_c[b, 0], pos[s, 1] - box_c[b, 1], pos[s, 2] - box_c[b, 2]
    reach = radius[s] + margin + math.sqrt(box_h[b, 0] ** 2 + box_h[b, 1] ** 2 + box_h[b, 2] ** 2)
    if dx * dx + dy * dy + dz * dz > reach * reach:
        return nc
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
        if nc < len(c_slot):
            c_slot[nc], c_other[nc], c_force[nc] = s, -2 - b, jsum / dt
            c_pos[nc, 0], c_pos[nc, 1], c_pos[nc, 2] = pos[s, 0], pos[s, 1], pos[s, 2]
        nc += 1
    return nc
