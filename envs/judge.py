"""The RL step's judgement compiled: n agents' rewards, ends and truth observations in one pass.

`judge` does what the numpy path of envs/batch.py does after the physics of a step
(`read_kinematics` of the truth, `row_norm`, `Task.ends`, `Task.reward`, `observe`) for every
slot in one compiled loop, with the same operations in the same order, so its numbers are those
of the numpy path bit for bit (tests/envs/test_judge.py holds it to that on random states, with
signed zeros, negative quaternions and NaN). The numpy path stays the reference and serves the
rest: the sensor-estimate observations. At 4,096 slots the numpy passes cost about a
millisecond per step, this one pass about a tenth of that.

`teleport` is an autoreset's writes in one pass (envs/batch.py `FlightBatch.restart` on the
fast engine with ideal sensors): the bodies' new state, the controller memory, motors and
wrenches `Swarm.restart` clears, the slots' targets, last actions and step counts, and their
first observations through the same loop as `judge`; the episode starts stay drawn in numpy
(`Task.sample`, `euler_to_quat`). Each of the ~17 small numpy calls it replaces ran several
times slower right after the physics kernels (cold caches) than alone.

    params = judge_params(task)
    judge(swarm.slots, state.position, state.orientation, state.linear_velocity,
          state.angular_velocity, target, action, previous, params, OBS_6D, True,
          obs, reward, crashed, reached, dist)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skyswarm.core.frames import rotation_rows
from skyswarm.core.jit import ahead, njit
from skyswarm.envs.tasks import Task

# What `judge` writes into `obs`: nothing (the observation comes from elsewhere, e.g. the
# sensor estimate), the "6d" rotation layout or the quaternion one (envs/observations.py).
OBS_NONE, OBS_6D, OBS_QUATERNION = 0, 1, 2
# Columns of `judge_params`.
MAX_ERROR, COS_TILT, MIN_ALTITUDE, CRASH, BONUS, GOAL_RADIUS, GOAL_SPEED = range(7)
W_VELOCITY, W_RATES, W_SMOOTH = 7, 8, 9


def judge_params(task: Task) -> np.ndarray:
    """(10,) the task's numbers `judge` reads, in the columns named above (the cosine of the
    tilt limit computed as Task.ends computes it)."""
    return np.array(
        [
            task.max_error_m,
            math.cos(math.radians(task.max_tilt_deg)),
            task.min_altitude_m,
            task.crash_penalty,
            task.goal_bonus,
            task.goal_radius_m,
            task.goal_speed_m_s,
            task.w_velocity,
            task.w_rates,
            task.w_smooth,
        ],
        dtype=np.float64,
    )


@njit(nogil=True, error_model="numpy")
def judge(
    slots, position, orientation, velocity, omega, target, action, previous, params, layout,
    last_action, obs, reward, crashed, reached, dist,
):  # fmt: skip
    """Agent i's body is state row slots[i]: position (.., 3) m, orientation (.., 4) x, y, z,
    w, velocity (.., 3) m/s and omega (.., 3) rad/s world (core.state.BodyState); target
    (n, 3) m; action and previous (n, k) normalised; params `judge_params`. Out, (n,) each:
    reward, crashed, reached, dist m (|target - position|); and obs (n, d) float32 in
    `layout` (OBS_NONE: untouched), the last k columns the action when `last_action`."""
    _judge_range(
        0, len(slots), slots, position, orientation, velocity, omega, target, action, previous,
        params, layout, last_action, obs, reward, crashed, reached, dist,
    )  # fmt: skip


@njit(nogil=True, error_model="numpy")
def _judge_range(
    lo, hi, slots, position, orientation, velocity, omega, target, action, previous, params,
    layout, last_action, obs, reward, crashed, reached, dist,
):  # fmt: skip
    """`judge` of agents lo..hi - 1."""
    p = params
    max_error, bonus = p[MAX_ERROR], p[BONUS]
    k = action.shape[1]
    for i in range(lo, hi):
        s = slots[i]
        x, y, z, w = orientation[s, 0], orientation[s, 1], orientation[s, 2], orientation[s, 3]
        r = rotation_rows(x, y, z, w)
        e0 = target[i, 0] - position[s, 0]
        e1 = target[i, 1] - position[s, 1]
        e2 = target[i, 2] - position[s, 2]
        v0, v1, v2 = velocity[s, 0], velocity[s, 1], velocity[s, 2]
        w0, w1, w2 = omega[s, 0], omega[s, 1], omega[s, 2]
        # body rates R^T w, summed from 0.0 as numpy's einsum does (a -0.0 sum is +0.0)
        b0 = 0.0 + r[0][0] * w0
        b0 += r[1][0] * w1
        b0 += r[2][0] * w2
        b1 = 0.0 + r[0][1] * w0
        b1 += r[1][1] * w1
        b1 += r[2][1] * w2
        b2 = 0.0 + r[0][2] * w0
        b2 += r[1][2] * w1
        b2 += r[2][2] * w2
        d = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        speed = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
        bad = d > max_error or r[2][2] < p[COS_TILT] or position[s, 2] < p[MIN_ALTITUDE]
        hit = False
        if bonus > 0.0:
            hit = not bad and d < p[GOAL_RADIUS] and speed < p[GOAL_SPEED]
        smooth = 0.0
        for j in range(k):
            a = action[i, j] - previous[i, j]
            smooth = a * a if j == 0 else smooth + a * a
        near = d if (d <= max_error or d != d) else max_error  # np.minimum, NaN through
        value = (
            1.0
            - near / max_error
            - p[W_VELOCITY] * speed
            - p[W_RATES] * math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
            - p[W_SMOOTH] * smooth
        )
        if bad:
            value = -p[CRASH]
        reward[i] = value + bonus * (1.0 if hit else 0.0)
        crashed[i], reached[i], dist[i] = bad, hit, d
        if layout == OBS_NONE:
            continue
        row = obs[i]
        row[0], row[1], row[2] = e0, e1, e2
        row[3], row[4], row[5] = v0, v1, v2
        if layout == OBS_6D:
            row[6], row[7], row[8] = r[0][0], r[1][0], r[2][0]
            row[9], row[10], row[11] = r[0][1], r[1][1], r[2][1]
            end = 12
        else:
            if w < 0.0:  # one sign per rotation
                x, y, z, w = -x, -y, -z, -w
            row[6], row[7], row[8], row[9] = x, y, z, w
            end = 10
        row[end], row[end + 1], row[end + 2] = b0, b1, b2
        if last_action:
            for j in range(k):
                row[end + 3 + j] = action[i, j]


@njit(nogil=True, error_model="numpy")
def teleport(
    index, slots, origin, offset, quaternion, velocity, start_target, position, orientation,
    linear_velocity, angular_velocity, memory, demand, thrust, force, torque, target, action,
    steps, hover, weight, quarter, params, layout, last_action, obs,
):  # fmt: skip
    """Restart agents `index` (k,): body state rows slots[i] at origin[i] + offset (k, 3) m,
    quaternion (k, 4), velocity (k, 3) m/s, at rest in rotation; the controller memory's bytes
    (memory (n, itemsize) uint8) zeroed, then demand[i, 0] = weight N; thrust[i] = quarter,
    force[i] = torque[i] = 0; target[i] = origin[i] + start_target (k, 3); action[i] = hover
    (level.k,); steps[i] = 0. Then obs (k, d) float32, their observations in `layout` as
    `judge` computes them (params `judge_params`): the writes of Swarm.restart, World.
    reset_bodies and FlightBatch.restart, in their order, the same numbers."""
    k = len(index)
    picked = np.empty(k, dtype=np.int64)
    aim = np.empty((k, 3))
    last = np.empty((k, len(hover)))
    for j in range(k):
        i = index[j]
        s = slots[i]
        picked[j] = s
        for c in range(3):
            position[s, c] = origin[i, c] + offset[j, c]
            linear_velocity[s, c] = velocity[j, c]
            angular_velocity[s, c] = 0.0
            force[i, c] = 0.0
            torque[i, c] = 0.0
            aim[j, c] = target[i, c] = origin[i, c] + start_target[j, c]
        for c in range(4):
            orientation[s, c] = quaternion[j, c]
        for b in range(memory.shape[1]):
            memory[i, b] = 0
        demand[i, 0] = weight
        for c in range(thrust.shape[1]):
            thrust[i, c] = quarter
        for c in range(len(hover)):
            last[j, c] = action[i, c] = hover[c]
        steps[i] = 0
    _judge_range(
        0, k, picked, position, orientation, linear_velocity, angular_velocity, aim, last, last,
        params, layout, last_action, obs, np.empty(k), np.empty(k, dtype=np.bool_),
        np.empty(k, dtype=np.bool_), np.empty(k),
    )  # fmt: skip


# The types envs/batch.py calls them with (compiled before the clock: core/jit.py).
_OBS = numba.types.Array(numba.types.float32, 2, "C")  # core/jit.py's codes have no f4
_TYPES = (
    *"i8[1] f8[2] f8[2] f8[2] f8[2] f8[2] f8[2] f8[2] f8[1] i8 ?".split(),
    _OBS,
    *"f8[1] ?[1] ?[1] f8[1]".split(),
)
ahead(judge, _TYPES)
_TELEPORT = "i8[1] i8[1] f8[2] f8[2] f8[2] f8[2] f8[2] f8[2] f8[2] f8[2] f8[2] u1[2] {}".format
_TELEPORT_REST = "f8[2] f8[2] f8[2] f8[2] f8[2] i8[1] f8[1] f8 f8 f8[1] i8 ?".split()
# demand: a strided view of the controller memory's records, contiguous for one agent
ahead(
    teleport,
    *((*_TELEPORT(demand).split(), *_TELEPORT_REST, _OBS) for demand in ("f8[2A]", "f8[2]")),
)
