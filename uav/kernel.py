"""The 400 Hz flight stack compiled: cascade, mixer, motors and wrench of N agents in one call.

numba is a required dependency (pyproject.toml): `fly` is the only code that flies a swarm.
uav/reference.py holds the same equations for one agent in plain Python; the two agree within
1e-9 (tests/uav/test_uav_reference.py). An agent's mode (its row of the constants' `uses`
table) picks which output feeds the next stage, as uav/control.py describes, and which stages
run at all: the position, altitude and velocity loops only in the modes that use them, the
roll and pitch measurement not in BodyRates (an RL swarm's BodyRates tick fell from 231 to
122 ns per agent, serial); their idle memory is what bumpless entry re-initialises. The heading
loop runs in every mode (Attitude's yaw hold reads its integral without re-initialising it).

`fly` takes the agents in blocks of 64 (`_fly_range`): a block whose agents share a mode flies
stage by stage on SIMD lanes (uav/kernel_block.py, 1.7x faster an agent), any other agent
by agent through this module's stages (`_fly_agents`), with the same bits; the indices of the
constants' tables are uav/kernel_layout.py's.

Compiled code here reads its arguments, this module's names, the rotations of core/frames.py
(the one definition every kernel calls; core/jit.py keys numba's cache by the source of every
compiled module, so an edit there recompiles this one) and, in `fly_ticks`, the fast backend's
integration of a range of bodies (core/backends/fast_kernel.py `step_range`). The mode table travels
in `constants` rather than as a global array, which numba would freeze into the compiled code.
What the kernel is handed is built in plain Python by uav/flight_kernel.py (the CONSTANTS
layout, its packing, `FlightKernel`): a record's layout reaches the compiled code as the type
of an argument, which is part of numba's cache key, so a changed layout recompiles.

`fly` takes packed inputs, nothing per tick to build:
- the world's state arrays (core.state.BodyState) and the agents' rows in them (`slots`);
- `constants`, one uav.flight_kernel.CONSTANTS record: every gain, limit and airframe constant,
  copied once by `FlightKernel` from the objects that own them (Cascade, Mixer, Motors,
  WrenchModel), its tables indexed by the names below (OUTER.., KP.., POS..);
- `setpoints`, (N,) uav.control.SETPOINT records: each agent's mode and setpoints;
- `memory`, (N,) uav.control.MEMORY records: integrals, last measurements and last signals,
  updated in place (bumpless switching reads them);
- the swarm's per-agent arrays: motor thrusts (in place), alive, failed motors, the motors'
  own parameters (lag and thrust scale, uav.model.Motors.params), wind, and the force and
  torque it applies.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from skyswarm.core.backends.fast_kernel import step_range
from skyswarm.core.frames import euler_angles, rotation_rows, to_body, to_world, yaw_angle
from skyswarm.core.jit import njit, prange
from skyswarm.uav.kernel_block import BLOCK, NROW, REDO, base, fly_block, gains, pid, same_mode
from skyswarm.uav.kernel_layout import (  # the tables' indices
    ALT,
    ATT,
    ATTITUDE,
    GAIN,
    HDG,
    LAG,
    MOT,
    OUTER,
    POS,
    RATE,
    RATES,
    SPEED,
    VEL,
    WORLD,
)  # fmt: skip
from skyswarm.uav.kernel_math import hypot, max_of, min_of, nan_max, nan_min, wrap

# Compiled with numpy's error model (x / 0 -> inf, no exception) and without fastmath, so the
# arithmetic is plain IEEE arithmetic, operation for operation as written.
_JIT = {"error_model": "numpy", "nogil": True}
# Every stage and helper is inlined into `_fly_range` by numba (its IR): compiled apart, the
# small helpers (nan_min, nan_max, wrap, _pid, _base) cut the range's compile from 32 to 9 CPU-s,
# but `fly` then took 1.03-1.3x the time per agent (the stages apart: 1.3x); docs/performance.md.
_STAGE = {"inline": "always", **_JIT}

# One record of a structured array (CONSTANTS, SETPOINT, MEMORY): numba passes it by reference,
# so writes to its fields land in the array.
Record = np.void
Vec3 = tuple[float, float, float]
Vec4 = tuple[float, float, float, float]


class Sensed(NamedTuple):
    """What one agent's loops read from the state arrays (SI, world frame unless named)."""

    r: Any  # body-to-world rotation, three rows (core.frames.rotation_rows)
    x: float
    y: float
    z: float
    vx: float
    vy: float
    vz: float
    roll: float
    pitch: float
    yaw: float
    p: float  # body rates rad/s
    q: float
    rate_r: float
    cos: float  # of the yaw
    sin: float


@njit(**_STAGE)
def _pid(c: Record, loop: int, axis: int, integral: np.ndarray, error: float, rate: float) -> float:
    """One axis of one loop (uav/pid.py); updates `integral[axis]` in place. The arithmetic is
    kernel_block's `pid`, which the block path runs on lanes: one definition for both."""
    out, integral[axis] = pid(gains(c, loop, axis), integral[axis], error, rate)
    return out


@njit(**_STAGE)
def _sense(
    s: int,
    position: np.ndarray,
    orientation: np.ndarray,
    velocity: np.ndarray,
    omega: np.ndarray,
    uses: np.ndarray,
) -> Sensed:
    """The measurements of state row `s` (as uav.swarm.Swarm.measure makes them) that the
    mode's stages read: roll and pitch for the angle loops (not in BodyRates), the cosine and
    sine of the yaw for the velocity stage; the others 0.0."""
    r = rotation_rows(orientation[s, 0], orientation[s, 1], orientation[s, 2], orientation[s, 3])
    if uses[RATES]:
        roll, pitch, yaw = 0.0, 0.0, yaw_angle(r)
    else:
        roll, pitch, yaw = euler_angles(r)
    p, q, rate_r = to_body(r, omega[s, 0], omega[s, 1], omega[s, 2])  # body rates
    x, y, z = position[s, 0], position[s, 1], position[s, 2]
    vx, vy, vz = velocity[s, 0], velocity[s, 1], velocity[s, 2]
    cos, sin = (math.cos(yaw), math.sin(yaw)) if uses[VEL] else (0.0, 0.0)
    return Sensed(r, x, y, z, vx, vy, vz, roll, pitch, yaw, p, q, rate_r, cos, sin)


@njit(**_STAGE)
def _outer_loops(c: Record, sp: Record, mem: Record, uses: np.ndarray, m: Sensed) -> Vec3:
    """Position, altitude, heading loops -> heading-frame velocity target m/s (the mode's own
    setpoint where the loop is not used); keeps the target and the yaw-rate command.

    The position and altitude loops run only in the modes that use them (their integrals sit
    idle otherwise: bumpless entry empties them). The heading loop runs in every mode: its
    integral is not emptied when Attitude starts holding a yaw angle (uav/bumpless.py)."""
    e3 = wrap(sp.yaw - m.yaw)
    o3 = _pid(c, OUTER, 3, mem.outer_i, e3, m.rate_r)
    o3 = min_of(max_of(o3, c.outer_lo[3]), c.outer_hi[3])
    mem.yaw_rate_command = o3
    if uses[WORLD]:  # a world-frame velocity setpoint, into the heading frame
        vt0 = m.cos * sp.velocity[0] + m.sin * sp.velocity[1]
        vt1 = m.cos * sp.velocity[1] - m.sin * sp.velocity[0]
    elif uses[POS]:
        o0 = _pid(c, OUTER, 0, mem.outer_i, sp.position[0] - m.x, m.vx)
        o1 = _pid(c, OUTER, 1, mem.outer_i, sp.position[1] - m.y, m.vy)
        o0 = min_of(max_of(o0, c.outer_lo[0]), c.outer_hi[0])
        o1 = min_of(max_of(o1, c.outer_lo[1]), c.outer_hi[1])
        scale = min_of(c.max_speed / max_of(hypot(o0, o1), 1e-12), 1.0)
        vt0 = (m.cos * o0 + m.sin * o1) * scale
        vt1 = (m.cos * o1 - m.sin * o0) * scale
    else:
        vt0, vt1 = sp.velocity[0], sp.velocity[1]
    if uses[ALT]:
        o2 = _pid(c, OUTER, 2, mem.outer_i, sp.altitude - m.z, m.vz)
        vt2 = min_of(max_of(o2, c.outer_lo[2]), c.outer_hi[2])
    else:
        vt2 = sp.velocity[2]
    mem.velocity_target[0], mem.velocity_target[1], mem.velocity_target[2] = vt0, vt1, vt2
    return vt0, vt1, vt2


@njit(**_STAGE)
def _speed_loops(
    c: Record, sp: Record, mem: Record, uses: np.ndarray, m: Sensed, vt: Vec3
) -> tuple[Vec3, float]:
    """Heading-frame velocity target `vt` m/s -> (roll rad, pitch rad, yaw rate rad/s) target
    and collective N, tilt limited; keeps the target and the measured velocity. A mode without
    the velocity stage skips its loops (their integrals and last velocity sit idle: bumpless
    entry sets them) and passes its own attitude setpoint on (collective 0.0, unused)."""
    if uses[VEL]:
        at0, at1, collective = _speed_pids(c, mem, m, vt)
    else:
        at0, at1, collective = sp.attitude[0], sp.attitude[1], 0.0
    hold = uses[HDG] or (sp.yaw_hold and not uses[VEL])  # Attitude with a yaw angle
    at2 = mem.yaw_rate_command if hold else sp.attitude[2]
    mem.attitude_target[0], mem.attitude_target[1], mem.attitude_target[2] = at0, at1, at2
    return (at0, at1, at2), collective


@njit(**_STAGE)
def _speed_pids(c: Record, mem: Record, m: Sensed, vt: Vec3) -> Vec3:
    """The velocity stage's loops: heading-frame target `vt` m/s -> roll, pitch targets rad and
    the collective N; keeps the measured velocity."""
    vt0, vt1, vt2 = vt
    h0, h1, h2 = m.cos * m.vx + m.sin * m.vy, m.cos * m.vy - m.sin * m.vx, m.vz
    prev = mem.prev_speed
    a0 = _pid(c, SPEED, 0, mem.speed_i, vt0 - h0, (h0 - prev[0]) / c.dt)
    a1 = _pid(c, SPEED, 1, mem.speed_i, vt1 - h1, (h1 - prev[1]) / c.dt)
    a2 = _pid(c, SPEED, 2, mem.speed_i, vt2 - h2, (h2 - prev[2]) / c.dt)
    prev[0], prev[1], prev[2] = h0, h1, h2
    vert = max_of(c.g + a2, 0.1 * c.g)  # the thrust vector keeps pointing up (low g)
    tilt_scale = min_of(vert * c.tan_tilt / max_of(hypot(a0, a1), 1e-12), 1.0)
    ax, ay = a0 * tilt_scale, a1 * tilt_scale
    collective = c.mass * vert / max_of(m.r[2][2], c.min_up)
    return math.atan2(-ay, hypot(ax, vert)), math.atan2(ax, vert), collective


@njit(**_STAGE)
def _attitude_loops(
    c: Record, sp: Record, mem: Record, uses: np.ndarray, m: Sensed, at: Vec3, collective: float
) -> Vec4:
    """Attitude target `at` (roll, pitch rad, yaw rate rad/s) and collective N -> the demand
    (collective N, torque x, y, z N m), or the sticks scaled in Manual; keeps the demand and
    the measured body rates. In BodyRates the loops act on the rate errors of the setpoint's
    (p, q, r) instead (D on the measured angular acceleration)."""
    at0, at1, at2 = at
    r_dot = (m.rate_r - mem.prev_r) / c.dt
    mem.prev_r = m.rate_r
    if uses[RATES]:
        p_dot = (m.p - mem.prev_pq[0]) / c.dt
        q_dot = (m.q - mem.prev_pq[1]) / c.dt
        tx = c.inertia[0] * _pid(c, RATE, 0, mem.attitude_i, sp.rates[0] - m.p, p_dot)
        ty = c.inertia[1] * _pid(c, RATE, 1, mem.attitude_i, sp.rates[1] - m.q, q_dot)
        tz = c.inertia[2] * _pid(c, RATE, 2, mem.attitude_i, sp.rates[2] - m.rate_r, r_dot)
    else:
        tx = c.inertia[0] * _pid(c, ATTITUDE, 0, mem.attitude_i, at0 - m.roll, m.p)
        ty = c.inertia[1] * _pid(c, ATTITUDE, 1, mem.attitude_i, at1 - m.pitch, m.q)
        tz = c.inertia[2] * _pid(c, ATTITUDE, 2, mem.attitude_i, at2 - m.rate_r, r_dot)
    mem.prev_pq[0], mem.prev_pq[1] = m.p, m.q
    if not uses[ATT]:  # Manual: the sticks straight to the mixer
        d0, d1 = sp.manual[0] * c.manual_scale[0], sp.manual[1] * c.manual_scale[1]
        d2, d3 = sp.manual[2] * c.manual_scale[2], sp.manual[3] * c.manual_scale[3]
    else:
        d0 = collective if uses[VEL] else sp.thrust
        d1, d2, d3 = tx, ty, tz
    mem.demand[0], mem.demand[1], mem.demand[2], mem.demand[3] = d0, d1, d2, d3
    return d0, d1, d2, d3


@njit(**_STAGE)
def _base(c: Record, k: int, roll_pitch: float, shrink: float, coll: float, d3: float, room: float):
    """Motor k's base thrust N (its roll and pitch share shrunk, plus the collective) and the
    yaw room N m left after it (kernel_block's `base`, one definition for both paths)."""
    return base(roll_pitch, shrink, coll, d3, c.yaw_map[k], c.yaw_abs[k], c.f_max, room)


@njit(**_STAGE)
def _mix(c: Record, demand: Vec4) -> Vec4:
    """Demand (collective N, torque x, y, z N m) -> the four motor commands N in [0, f_max]
    (uav/mixer.py): roll and pitch first, then collective, yaw last."""
    d0, d1, d2, d3 = demand
    m0 = d1 * c.attitude_map[0, 0] + d2 * c.attitude_map[1, 0]
    m1 = d1 * c.attitude_map[0, 1] + d2 * c.attitude_map[1, 1]
    m2 = d1 * c.attitude_map[0, 2] + d2 * c.attitude_map[1, 2]
    m3 = d1 * c.attitude_map[0, 3] + d2 * c.attitude_map[1, 3]
    hi = nan_max(nan_max(m0, m1), nan_max(m2, m3))
    lo = nan_min(nan_min(m0, m1), nan_min(m2, m3))
    shrink = min_of(c.f_max / max_of(hi - lo, 1e-12), 1.0)
    coll = nan_min(nan_max(d0 * c.per_collective, -lo * shrink), c.f_max - hi * shrink)
    room = np.inf  # N m of yaw every motor still allows
    m0, room = _base(c, 0, m0, shrink, coll, d3, room)
    m1, room = _base(c, 1, m1, shrink, coll, d3, room)
    m2, room = _base(c, 2, m2, shrink, coll, d3, room)
    m3, room = _base(c, 3, m3, shrink, coll, d3, room)
    fraction = min_of(max_of(room / max_of(abs(d3), 1e-300), 0.0), 1.0)
    f = c.f_max
    return (
        min_of(max_of(m0 + d3 * c.yaw_map[0] * fraction, 0.0), f),
        min_of(max_of(m1 + d3 * c.yaw_map[1] * fraction, 0.0), f),
        min_of(max_of(m2 + d3 * c.yaw_map[2] * fraction, 0.0), f),
        min_of(max_of(m3 + d3 * c.yaw_map[3] * fraction, 0.0), f),
    )


@njit(**_STAGE)
def _motors_and_wrench(
    c: Record,
    m: Sensed,
    command: np.ndarray,
    thrust: np.ndarray,
    motor: np.ndarray,
    wind: np.ndarray,
    force: np.ndarray,
    torque: np.ndarray,
) -> None:
    """One agent: (4,) commands -> (4,) `thrust` after the motor (or rotor-speed) lag, in
    place, and the body-frame `force` (3,) N (thrust at the arms, ground effect, body and rotor
    drag on the airspeed v - wind) and world `torque` N m (uav/model.py describes the models).
    `motor` (2,): its lag per tick and thrust scale s (columns LAG, GAIN): the motor makes s
    times the thrust the controller commands, up to s f_max (its k_f is s times nominal)."""
    alpha, s = motor[LAG], motor[GAIN]
    k_f, f_top = c.k_f * s, c.f_max * s  # this agent's thrust coefficient and ceiling
    total, bx, by, bz = 0.0, 0.0, 0.0, 0.0
    gain = 1.0
    if c.rotor_radius > 0.0:  # Cheeseman-Bennett, below half a radius as at half a radius
        zr = max_of(m.z, 0.5 * c.rotor_radius)
        ratio = c.rotor_radius / (4.0 * zr)
        gain = 1.0 / (1.0 - ratio * ratio)
    for k in range(4):
        f = thrust[k]
        cmd = min_of(max_of(command[k], 0.0), c.f_max)
        if c.speed_state:  # the speed command as calibrated (nominal k_f), the thrust as is
            w = math.sqrt(f / k_f)
            w += alpha * (math.sqrt(cmd / c.k_f) - w)
            f = min_of(k_f * w * w, f_top)
        else:
            f += alpha * (s * cmd - f)
        thrust[k] = f
        if c.rotor_radius > 0.0:
            lift = f * gain
            total += lift
            bx += lift * c.torque_map[k, 0]
            by += lift * c.torque_map[k, 1]
        else:
            total += f
            bx += f * c.torque_map[k, 0]
            by += f * c.torque_map[k, 1]
        bz += f * c.torque_map[k, 2]
    # body-frame airspeed (v - wind is exact for calm air)
    u0, u1, u2 = to_body(m.r, m.vx - wind[0], m.vy - wind[1], m.vz - wind[2])
    if c.quadratic:
        h = min_of(max_of(m.z, 0.0), 11000.0)
        rho = c.isa[0] * (1.0 - c.isa[1] * h) ** c.isa[2]
        force[0] = c.drag_quad[0] * rho * abs(u0) * u0
        force[1] = c.drag_quad[1] * rho * abs(u1) * u1
        force[2] = c.drag_quad[2] * rho * abs(u2) * u2 + total
    else:
        force[0] = c.drag[0] * u0
        force[1] = c.drag[1] * u1
        force[2] = c.drag[2] * u2 + total
    if c.rotor_drag > 0.0:  # -k_d omega (in-plane airspeed at the rotor), at the arm point
        for k in range(4):
            ax, ay = c.arms[k, 0], c.arms[k, 1]  # arm z = 0
            lx = u0 - m.rate_r * ay  # in-plane part of u + (p, q, r) x (ax, ay, 0)
            ly = u1 + m.rate_r * ax
            scale = -c.rotor_drag * math.sqrt(thrust[k] / k_f)
            hx, hy = scale * lx, scale * ly
            force[0] += hx
            force[1] += hy
            bz += ax * hy - ay * hx  # (r x h)_z; its x, y parts vanish with arm z = 0
    torque[0], torque[1], torque[2] = to_world(m.r, bx, by, bz)


@njit(**_JIT)
def fly(
    slots: np.ndarray,
    position: np.ndarray,
    orientation: np.ndarray,
    velocity: np.ndarray,
    omega: np.ndarray,
    constants: np.ndarray,
    setpoints: np.ndarray,
    memory: np.ndarray,
    thrust: np.ndarray,
    alive: np.ndarray,
    motor_ok: np.ndarray,
    motor: np.ndarray,
    wind: np.ndarray,
    force: np.ndarray,
    torque: np.ndarray,
) -> None:
    """One tick of every agent.

    `slots` (N,) int: the agents' rows in the world's (capacity, 3|4) `position` m,
    `orientation` (x, y, z, w), `velocity` m/s and `omega` rad/s (world frame);
    `constants` (1,) CONSTANTS; `setpoints` (N,) SETPOINT; `memory` (N,) MEMORY, in place;
    `thrust` (N, 4) motor thrusts N, in place; `alive` (N,) bool (dead agents' motors get a
    zero command); `motor_ok` (N, 4) 0 for a failed motor else 1; `motor` (N, 2) each agent's
    motor lag per tick and thrust scale (columns LAG, GAIN); `wind` (N, 3) m/s world
    frame, what the drag sees; out: `force` (N, 3) body-frame N, `torque` (N, 3) world N m.
    """
    # np.int64(0), not 0: a literal 0 would type `lo` as Literal[int](0) and compile a second
    # `_fly_range` beside the one fly_parallel calls (its chunk starts are int64): 35 CPU-s.
    _fly_range(
        np.int64(0), slots.shape[0], slots, position, orientation, velocity, omega, constants,
        setpoints, memory, thrust, alive, motor_ok, motor, wind, force, torque,
    )  # fmt: skip


@njit(**_JIT)
def _fly_range(
    lo, hi, slots, position, orientation, velocity, omega, constants, setpoints, memory, thrust,
    alive, motor_ok, motor, wind, force, torque,
):  # fmt: skip
    """`fly` for the agent rows lo .. hi - 1, in blocks of kernel_block.BLOCK: a block whose
    agents share a mode on SIMD lanes (`fly_block`), then the agents it flagged one by one; any
    other block agent by agent (`_fly_agents`). The same bits either way."""
    c = constants[0]
    t = np.empty(NROW)
    for b in range(lo, hi, BLOCK):
        e = min(hi, b + BLOCK)
        if not same_mode(setpoints, b, e):
            _fly_agents(
                b, e, slots, position, orientation, velocity, omega, constants, setpoints,
                memory, thrust, alive, motor_ok, motor, wind, force, torque,
            )  # fmt: skip
        elif fly_block(
            b, e - b, t, slots, position, orientation, velocity, omega, c, setpoints, memory,
            thrust, alive, motor_ok, motor, wind, force, torque,
        ):  # fmt: skip
            for j in range(e - b):
                if t[REDO + j] != 0.0:
                    _fly_agents(
                        b + j, b + j + 1, slots, position, orientation, velocity, omega,
                        constants, setpoints, memory, thrust, alive, motor_ok, motor, wind,
                        force, torque,
                    )  # fmt: skip


@njit(**_JIT)
def _fly_agents(
    lo, hi, slots, position, orientation, velocity, omega, constants, setpoints, memory, thrust,
    alive, motor_ok, motor, wind, force, torque,
):  # fmt: skip
    """`fly` for the agent rows lo .. hi - 1, agent by agent: every stage of one agent, then
    the next (uav/kernel_block.py flies a block of one mode stage by stage, the same bits)."""
    c = constants[0]
    command = np.empty(4)
    for k in range(lo, hi):
        # unsigned indices: numba indexes with them without the negative index fix-up (a sign
        # test and an add per array access)
        i = np.uint64(k)
        sp, mem = setpoints[i], memory[i]
        uses = c.uses[sp.mode]
        m = _sense(np.uint64(slots[i]), position, orientation, velocity, omega, uses)
        vt = _outer_loops(c, sp, mem, uses, m)
        at, collective = _speed_loops(c, sp, mem, uses, m, vt)
        m0, m1, m2, m3 = _mix(c, _attitude_loops(c, sp, mem, uses, m, at, collective))
        if uses[MOT]:  # Motors: the commands themselves, saturated by the motor model
            m0, m1, m2, m3 = sp.motors[0], sp.motors[1], sp.motors[2], sp.motors[3]
        if alive[i]:
            m0, m1 = m0 * motor_ok[i, 0], m1 * motor_ok[i, 1]
            m2, m3 = m2 * motor_ok[i, 2], m3 * motor_ok[i, 3]
        else:
            m0, m1, m2, m3 = 0.0, 0.0, 0.0, 0.0
        command[0], command[1], command[2], command[3] = m0, m1, m2, m3
        _motors_and_wrench(c, m, command, thrust[i], motor[i], wind[i], force[i], torque[i])


# Agents per work item of `fly_parallel`: a fixed split, so the work never depends on the
# number of threads (every agent's arithmetic is its own anyway).
CHUNK = 256


@njit(parallel=True, **_JIT)
def fly_parallel(
    slots, position, orientation, velocity, omega, constants, setpoints, memory, thrust, alive,
    motor_ok, motor, wind, force, torque,
):  # fmt: skip
    """`fly` (the same arguments) on numba's threads, CHUNK agents per work item: every agent
    reads only its own rows and writes only its own, with the same operations in the same
    order as `fly`, so the result is bit-identical to `fly` with any number of threads."""
    n = slots.shape[0]
    for ch in prange((n + CHUNK - 1) // CHUNK):
        _fly_range(
            ch * CHUNK, min(n, (ch + 1) * CHUNK), slots, position, orientation, velocity, omega,
            constants, setpoints, memory, thrust, alive, motor_ok, motor, wind, force, torque,
        )  # fmt: skip


# `_fly_range` inlined (numba's IR) into `fly_ticks`' range: the same source, the same
# operations, block by block. Its compiled stages (uav/kernel_block.py) are fly's too, so
# `skyswarm warmup` compiles fly, fly_ticks and the fast backend's step in one process (core/jit.py
# `groups`): 64 against 56 s of warmup on two cores, for 1.2x the vector env's steps a second
# (docs/performance.md).
_fly_range_inlined = njit(inline="always", **_JIT)(_fly_range.py_func)

# Where `fly_ticks` saves each agent's rows, columns of (n, SAVED): the world's position,
# quaternion, velocity, angular velocity, body force, world torque and world force rows, then
# the motor thrusts; SAVED_COLUMNS[k] .. SAVED_COLUMNS[k + 1] - 1 hold the k-th.
SAVED_COLUMNS = (0, 3, 7, 10, 13, 16, 19, 22, 26)
SAVED = SAVED_COLUMNS[-1]


@njit(**_JIT)
def _fly_ticks_range(
    lo, hi, ticks, slots, position, orientation, velocity, omega, constants, setpoints, memory,
    thrust, alive, motor_ok, motor, wind, force, torque, inv_m, inertia, half, offset, radius,
    fb, tw, fw, world, box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref,
    limit, saved, saved_memory, memory_bytes,
):  # fmt: skip
    """`fly_ticks` for the agent rows lo .. hi - 1: their rows saved, then `ticks` times `fly`
    and the world's step of them (as FastWorld.step_physics calls it, with the wrench held).
    Returns (contacts recorded in the last tick, bodies found far); stops at a far one (the
    caller then restores every row and redoes the ticks one by one)."""
    c = SAVED_COLUMNS
    for i in range(lo, hi):
        s = slots[i]
        for k in range(3):
            saved[i, c[0] + k] = position[s, k]
            saved[i, c[2] + k] = velocity[s, k]
            saved[i, c[3] + k] = omega[s, k]
            saved[i, c[4] + k] = fb[s, k]
            saved[i, c[5] + k] = tw[s, k]
            saved[i, c[6] + k] = fw[s, k]
        for k in range(4):
            saved[i, c[1] + k] = orientation[s, k]
            saved[i, c[7] + k] = thrust[i, k]
        saved_memory[i, :] = memory_bytes[i, :]
    touching, far = 0, 0
    x0 = slots[0]  # the agents are the world's live bodies, consecutive rows from x0
    for _ in range(ticks):
        _fly_range_inlined(
            lo, hi, slots, position, orientation, velocity, omega, constants, setpoints, memory,
            thrust, alive, motor_ok, motor, wind, force, torque,
        )  # fmt: skip
        touching, f = step_range(
            lo, hi, slots, position, orientation, velocity, omega, inv_m, inertia, half, offset,
            radius, fb, tw, fw, world, box_c, box_h, box_cs, box_id, hf, c_count, c_other,
            c_force, c_pos, ref, limit, force, torque, x0,
        )  # fmt: skip
        if f:
            far += f
            break
    return touching, far


@njit(**_JIT)
def fly_ticks(
    ticks, slots, position, orientation, velocity, omega, constants, setpoints, memory, thrust,
    alive, motor_ok, motor, wind, force, torque, inv_m, inertia, half, offset, radius, fb, tw,
    fw, world, box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit,
    saved, saved_memory, memory_bytes,
):  # fmt: skip
    """`ticks` ticks of a swarm whose agents are all of the fast world's live bodies, in one
    call: each CHUNK of agents is flown (`fly`) and integrated (fast_kernel `step_range`, with
    its contacts with the scenery) tick after tick while its rows stay in cache, instead of
    one pass of each kernel over every agent per tick. No body may touch another meanwhile:
    the caller passes the world's Verlet reference `ref` (n, 3) and `limit` m
    (FastWorld.window), and a body that ends a tick further than `limit` from its row of `ref`
    (`far`) could have; then the ticks must be redone one by one from the rows saved at the
    start (`saved` (n, SAVED), `saved_memory` (n, MEMORY's itemsize) bytes of `memory`, whose
    bytes `memory_bytes` are). Every agent's arithmetic is the per-tick path's, operation for
    operation, so the result is bit-identical to `ticks` times `fly` then `step_bodies`
    (tests/envs/test_multi_tick.py). The first arguments are `fly`'s, then `step_bodies`'
    (without its slots, which are `slots`, and the held wrench, which is `force`, `torque`).
    Returns (contacts recorded in the last tick, far bodies)."""
    n = slots.shape[0]
    touching, far = 0, 0
    for ch in range((n + CHUNK - 1) // CHUNK):
        t, f = _fly_ticks_range(
            np.int64(ch * CHUNK), min(n, (ch + 1) * CHUNK), ticks, slots, position, orientation,
            velocity, omega, constants, setpoints, memory, thrust, alive, motor_ok, motor, wind,
            force, torque, inv_m, inertia, half, offset, radius, fb, tw, fw, world, box_c, box_h,
            box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit, saved, saved_memory,
            memory_bytes,
        )  # fmt: skip
        touching += t
        far += f
    return touching, far


@njit(parallel=True, **_JIT)
def fly_ticks_parallel(
    ticks, slots, position, orientation, velocity, omega, constants, setpoints, memory, thrust,
    alive, motor_ok, motor, wind, force, torque, inv_m, inertia, half, offset, radius, fb, tw,
    fw, world, box_c, box_h, box_cs, box_id, hf, c_count, c_other, c_force, c_pos, ref, limit,
    saved, saved_memory, memory_bytes,
):  # fmt: skip
    """`fly_ticks` (the same arguments) on numba's threads, one CHUNK of agents per work
    item: one fork and join per call instead of two per tick. Bit-identical to `fly_ticks`
    with any number of threads (each agent's rows are its own; the counts are sums)."""
    n = slots.shape[0]
    touching, far = 0, 0
    for ch in prange((n + CHUNK - 1) // CHUNK):
        t, f = _fly_ticks_range(
            ch * CHUNK, min(n, (ch + 1) * CHUNK), ticks, slots, position, orientation, velocity,
            omega, constants, setpoints, memory, thrust, alive, motor_ok, motor, wind, force,
            torque, inv_m, inertia, half, offset, radius, fb, tw, fw, world, box_c, box_h, box_cs,
            box_id, hf, c_count, c_other, c_force, c_pos, ref, limit, saved, saved_memory,
            memory_bytes,
        )  # fmt: skip
        touching += t
        far += f
    return touching, far
