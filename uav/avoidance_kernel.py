"""The avoidance layer's scan, compiled: steps 1-6 of uav/avoidance.py's module doc at each
scan (10 Hz by default), each a pass over all agents, no per-agent Python, the same
arithmetic as the numpy reference there (`Avoidance._on_scan_numpy`), bit for bit
(tests/uav/test_avoidance_kernel.py). Its every-tick half (steps 2, 5, 6 and 7: `steer`,
the mode kinds, `commanded_velocity`) is uav/avoidance_steer.py.

- `scan_tracks`: the scan's slots seen from each agent's heading become horizontal
  measurements, the (N, K) tracks keyed by target index are updated (`track`), each agent's
  commanded velocity is read from its setpoint record (`commanded_velocity`), and for every
  closing pair the exponent of the power law is written out: the caller takes numpy's exp of
  those (numpy's vectorised exp and the compiled one differ in the last bit);
- `scan_push`: the correction (anticipation and separation), the agent's own alpha-beta
  track, the barrier's half-planes of its nearest tracks (and `slack`, the smallest cap), the
  guard, and which agents the tick must steer.

The instrumentation's smallest distance between live UAVs (`min_separation`, never fed back)
is uav/avoidance_separation.py.

    m, min_tau, near = scan_tracks(..., earg)
    np.exp(earg[:m], out=earg[:m])
    scan_push(..., earg[:m], m > 0, near, ...)

Both have a `_parallel` twin for large swarms (Avoidance calls them when
core.backends.threaded(N)): the same passes over fixed chunks of CHUNK agents on numba's
threads, every output the same to the bit with any number of threads. The closing pairs'
running index, the one thing the serial passes carry from agent to agent, becomes each
agent's start offset, `start` (N + 1,), counted, summed and filled:

    m, min_tau, near = scan_tracks_parallel(..., earg, track_dist, start, spill)
    np.exp(earg[:m], out=earg[:m])
    scan_push_parallel(..., earg[:m], m > 0, near, ..., start)
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skyswarm.core.jit import ahead, njit, prange
from skyswarm.uav.avoidance_steer import CHUNK, UNTOUCHED, commanded_velocity
from skyswarm.uav.control import SETPOINT


@njit(nogil=True)
def track(
    target, meas, prev_target, p, v, a, b, dt, own_v, p_out, v_out, res_out
):  # pragma: no cover - compiled
    """Step 1's alpha-beta update of the (N, K) tracks: slot s of agent i holds `target[i, s]`
    (-1: nothing seen) measured at `meas[i, s]` (2,) m; the slot that target held at the last
    scan (`prev_target`, tracks `p` m and `v` m/s) predicts it, dt s later, and the residual
    corrects it with gains a and b / dt; a target without a track starts one at its
    measurement, at rest in the world: relative velocity minus the agent's own filtered
    velocity `own_v` (N, 2) m/s (not 0, which says it flies as the agent does: a neighbour
    just seen ahead looked as if it drew away at the agent's own speed, docs/safety-log.md).
    Out: `p_out`, `v_out` (N, K, 2), and `res_out` (N, K, 2) m: each track's residual, the
    measurement less the prediction (0 for a new track; the barrier reads it, step 5)."""
    _track_range(
        np.int64(0), target.shape[0], target, meas, prev_target, p, v, a, b, dt, own_v, p_out,
        v_out, res_out,
    )  # fmt: skip


@njit(nogil=True)
def _track_range(
    lo, hi, target, meas, prev_target, p, v, a, b, dt, own_v, p_out, v_out, res_out
):  # pragma: no cover - compiled
    """`track` for the agents lo .. hi - 1 (each reads and writes only its own rows)."""
    k = target.shape[1]
    for i in range(lo, hi):
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
                    v_out[i, s, c] = -own_v[i, c]
                    res_out[i, s, c] = 0.0
                else:
                    pred = p[i, q, c] + dt * v[i, q, c]
                    res = meas[i, s, c] - pred
                    p_out[i, s, c] = pred + a * res
                    v_out[i, s, c] = v[i, q, c] + (b / dt) * res
                    res_out[i, s, c] = res


# the scan-rate kernels' parameters: one (len(PARAMS),) float64 array, built by `params`
PARAMS = (
    "kp", "max_speed", "vertical_clear", "alpha", "beta", "dt", "radius2", "gain", "horizon",
    "turn_cos", "turn_sin", "separation", "repulsion", "max_push", "min_push", "safe",
    "brake", "reaction", "barrier_rate", "guard", "guard_speed", "guard_release", "overdrive",
    "shed",
)  # fmt: skip
(
    KP, MAX_SPEED, VCLEAR, ALPHA, BETA, DT, R2, GAIN, HORIZON, TURN_COS, TURN_SIN, SEP, REP,
    MAX_PUSH, MIN_PUSH, SAFE, BRAKE, REACTION, RATE, GUARD, GUARD_SPEED, RELEASE, OVERDRIVE,
    SHED,
) = range(len(PARAMS))  # fmt: skip


def params(**values: float) -> np.ndarray:
    """The scan kernels' parameter array from keyword values named as in PARAMS."""
    out = np.array([float(values[name]) for name in PARAMS])
    assert len(values) == len(PARAMS)
    return out


@njit(nogil=True)
def _maximum(a, b):  # pragma: no cover - compiled
    """np.maximum of two floats (NaN if either is)."""
    return a if (a > b or a != a) else b


@njit(nogil=True)
def _minimum(a, b):  # pragma: no cover - compiled
    """np.minimum of two floats (NaN if either is)."""
    return a if (a < b or a != a) else b


@njit(nogil=True)
def _before(a, b):  # pragma: no cover - compiled
    """a sorts before b in numpy's order of floats (NaN last)."""
    return a < b or (b != b and a == a)


@njit(nogil=True)
def _pair(p, tv, vc0, vc1, vo0, vo1, r2):  # pragma: no cover - compiled
    """Step 3's quantities of one track: the neighbour at `p` (2,) m relative to the agent,
    tracked relative velocity `tv` (2,) m/s, the agent's command (vc0, vc1) and own velocity
    (vo0, vo1) m/s: (dist, x0, x1, v0, v1, a = |v|^2, b = x.v, c = |x|^2 - r^2, disc)."""
    return _pair_at(math.hypot(p[0], p[1]), p, tv, vc0, vc1, vo0, vo1, r2)


@njit(nogil=True)
def _pair_at(dist, p, tv, vc0, vc1, vo0, vo1, r2):  # pragma: no cover - compiled
    """`_pair` of a track whose distance hypot(p) is known already (`dist`)."""
    x0, x1 = -p[0], -p[1]
    v0 = vc0 - (vo0 + tv[0])
    v1 = vc1 - (vo1 + tv[1])
    a = v0 * v0 + v1 * v1
    b = x0 * v0 + x1 * v1
    c = dist * dist - r2
    return dist, x0, x1, v0, v1, a, b, c, b * b - a * c


@njit(nogil=True)
def scan_tracks(
    target, detected, range_m, bearing, elevation, yaw, prev_target, p, v, fresh, own_v, kind,
    records, pos, vel, prm, meas, new_target, p_out, v_out, res_out, v_cmd, commanded, earg,
    track_dist,
):  # pragma: no cover - compiled  # fmt: skip
    """The first half of a scan (steps 1-3 of uav/avoidance.py's module doc), every agent:
    the (N, K) scan slots (`target`, `detected`, `range_m`, `bearing`, `elevation`) seen from
    own `yaw` (N,) rad become horizontal measurements `meas` (N, K, 2) m and `new_target`
    (-1: not seen, or `vertical_clear` above or below); the tracks (`prev_target`, `p`, `v`;
    `fresh`: there are none yet) are updated into `p_out`, `v_out`, `res_out` (`track`, new
    ones at rest in the world by the agents' filtered velocities `own_v` (N, 2) m/s); each agent's
    commanded velocity `v_cmd` (N, 2) m/s and `commanded` (N,) bool from `records`, own `pos`
    (N, 3) m and `yaw` (`commanded_velocity`); for every closing pair, in (agent, slot) order,
    the exponent -t / tau0 of the power law into `earg` (the caller takes np.exp of it, so
    that it is numpy's exp, then `scan_push` reads it). `prm`: `params`. `vel` (N, 3) m/s own
    velocity. `track_dist` (N, K) m: each new track's distance, hypot of its position (for
    `scan_push`; the slots without a track are not written). Returns (closing pairs, smallest
    time to collision s (inf: none), any pair inside the separation distance)."""
    n = target.shape[0]
    _measure_range(
        np.int64(0), n, target, detected, range_m, bearing, elevation, yaw, prm[VCLEAR], meas,
        new_target,
    )  # fmt: skip
    _update_range(
        np.int64(0), n, fresh, new_target, meas, prev_target, p, v, own_v, prm, p_out, v_out,
        res_out,
    )  # fmt: skip
    # (the per-agent counts, which only the threaded pass reads, into a throwaway array)
    return _closing_range(
        np.int64(0), n, kind, records, pos, vel, yaw, prm, new_target, p_out, v_out, v_cmd,
        commanded, track_dist, earg, np.int64(0), np.empty(n + 1, dtype=np.int64),
    )  # fmt: skip


@njit(nogil=True, parallel=True)
def scan_tracks_parallel(
    target, detected, range_m, bearing, elevation, yaw, prev_target, p, v, fresh, own_v, kind,
    records, pos, vel, prm, meas, new_target, p_out, v_out, res_out, v_cmd, commanded, earg,
    track_dist, start, spill,
):  # pragma: no cover - compiled  # fmt: skip
    """`scan_tracks` (the same arguments and return, and the same bits in every output) on
    numba's threads, CHUNK agents per work item, plus `start` (N + 1,) int64, out: agent i's
    closing pairs are earg[start[i]:start[i + 1]] (`scan_push_parallel` reads them so), and
    `spill` (N K,) work space. The running index of the closing pairs is the one thing the
    agents share: each work item writes its agents' exponents into `spill` from its first
    agent's K places on and counts each agent's, a serial prefix sum of the counts gives
    each agent's place in `earg`, and the items copy theirs there, so `earg` holds what
    `scan_tracks` writes in the same order. The smallest time to collision is reduced per
    item, then over the items in order, and a min of numbers that are never NaN nor -0 is
    the same however it is grouped: a closing pair has b < 0, disc > 0, c > 0 and a > 1e-9
    (none of them true of a NaN), and c is finite (an infinite c makes disc -inf or NaN), so
    tau = c / max(-b + sqrt(disc), 1e-12) is a number >= +0. `near` is an or."""
    n, k = target.shape
    chunks = (n + CHUNK - 1) // CHUNK
    low = np.empty(chunks)
    close = np.empty(chunks, dtype=np.bool_)
    for ch in prange(chunks):
        lo, hi = ch * CHUNK, min(n, (ch + 1) * CHUNK)
        _measure_range(
            lo, hi, target, detected, range_m, bearing, elevation, yaw, prm[VCLEAR], meas,
            new_target,
        )  # fmt: skip
        _update_range(
            lo, hi, fresh, new_target, meas, prev_target, p, v, own_v, prm, p_out, v_out, res_out
        )
        _, low[ch], close[ch] = _closing_range(
            lo, hi, kind, records, pos, vel, yaw, prm, new_target, p_out, v_out, v_cmd,
            commanded, track_dist, spill, lo * k, start,
        )  # fmt: skip
    start[0] = 0
    for i in range(n):
        start[i + 1] += start[i]
    min_tau, near = np.inf, False
    for ch in range(chunks):
        min_tau = min(min_tau, low[ch])
        near = near or close[ch]
    for ch in prange(chunks):
        lo, hi = ch * CHUNK, min(n, (ch + 1) * CHUNK)
        for j in range(start[hi] - start[lo]):
            earg[start[lo] + j] = spill[lo * k + j]
    return start[n], min_tau, near


# inlined into its callers' IR: called, it cost the serial pass 3 % (10,000 agents)
@njit(nogil=True, inline="always")
def _measure_range(
    lo, hi, target, detected, range_m, bearing, elevation, yaw, vclear, meas, new_target
):  # pragma: no cover - compiled
    """Step 1's measurements of `scan_tracks` for the agents lo .. hi - 1: `meas` and
    `new_target` of their rows."""
    k = target.shape[1]
    for i in range(lo, hi):
        # a slot not seen measures at angle 0 + yaw: its cosine and sine once per agent
        a0 = 0.0 + yaw[i]
        ca, sa, have = 1.0, 0.0, False
        for s in range(k):
            det = detected[i, s]
            el = elevation[i, s] if det else 0.0
            rg = range_m[i, s] if det else 0.0
            # |sin el| <= |el| (libm's sin rounds faithfully), so |rg el| < vclear proves
            # |rg sin el| < vclear without the call; else the test itself
            seen = det and (abs(rg * el) < vclear or abs(rg * math.sin(el)) < vclear)
            rh = rg * math.cos(el) if det else 0.0  # (an empty slot: 0 cos 0 = 0)
            if seen:
                ang = bearing[i, s] + yaw[i]
                meas[i, s, 0] = rh * math.cos(ang)
                meas[i, s, 1] = rh * math.sin(ang)
            else:
                if not have:
                    ca, sa, have = math.cos(a0), math.sin(a0), True
                meas[i, s, 0] = rh * ca
                meas[i, s, 1] = rh * sa
            new_target[i, s] = target[i, s] if seen else -1


@njit(nogil=True)
def _update_range(
    lo, hi, fresh, new_target, meas, prev_target, p, v, own_v, prm, p_out, v_out, res_out
):  # pragma: no cover - compiled
    """The tracks of `scan_tracks` for the agents lo .. hi - 1: started at the measurements
    (`fresh`) or updated (`track`)."""
    if fresh:
        for i in range(lo, hi):
            for s in range(new_target.shape[1]):
                for c in range(2):
                    p_out[i, s, c] = meas[i, s, c]
                    v_out[i, s, c] = -own_v[i, c]
                    res_out[i, s, c] = 0.0
    else:
        _track_range(
            lo, hi, new_target, meas, prev_target, p, v, prm[ALPHA], prm[BETA], prm[DT], own_v,
            p_out, v_out, res_out,
        )  # fmt: skip


@njit(nogil=True)
def _closing_range(
    lo, hi, kind, records, pos, vel, yaw, prm, new_target, p_out, v_out, v_cmd, commanded,
    track_dist, earg, m, counts,
):  # pragma: no cover - compiled  # fmt: skip
    """Steps 2 and 3 of `scan_tracks` for the agents lo .. hi - 1: their commands (`v_cmd`,
    `commanded`), their tracks' distances (`track_dist`), their closing pairs' exponents in
    (agent, slot) order into earg[m], earg[m + 1], ..., and into counts[i + 1] how many
    agent i has. Returns (m after them, the smallest time to collision among them (inf:
    none), any pair inside the separation distance)."""
    k = new_target.shape[1]
    kp, max_speed, r2, sep, horizon = prm[KP], prm[MAX_SPEED], prm[R2], prm[SEP], prm[HORIZON]
    min_tau, near = np.inf, False
    for i in range(lo, hi):
        first = m
        mk = kind[records[i].mode]
        commanded[i] = mk != UNTOUCHED
        c0, c1 = 0.0, 0.0
        if mk != UNTOUCHED:
            c0, c1 = commanded_velocity(mk, records[i], pos[i, 0], pos[i, 1], yaw[i], kp, max_speed)
        v_cmd[i, 0], v_cmd[i, 1] = c0, c1
        for s in range(k):
            if new_target[i, s] < 0:
                continue
            dist, _, _, _, _, a, b, c, disc = _pair(
                p_out[i, s], v_out[i, s], c0, c1, vel[i, 0], vel[i, 1], r2
            )
            track_dist[i, s] = dist  # (scan_push's `_pair` of the same track: not again)
            if dist < sep and dist > 1e-6:
                near = True
            if b < 0.0 and disc > 0.0 and c > 0.0 and a > 1e-9:
                tau = c / _maximum(-b + math.sqrt(disc), 1e-12)
                min_tau = min(min_tau, tau)
                earg[m] = -_maximum(tau, 1e-3) / horizon
                m += 1
        counts[i + 1] = m - first
    return m, min_tau, near


@njit(nogil=True)
def scan_push(
    p, v, target, v_cmd, vel, pos, closing_exp, any_closing, any_near, own_fresh, own_p,
    own_v, n_uav, prm, commanded, alive, push, normal, cap, slack, escape, guarded, active,
    track_dist, meas, resid,
):  # pragma: no cover - compiled  # fmt: skip
    """The second half of a scan (steps 3-6), every agent, from the updated tracks `p`, `v`
    (N, K, 2) and `target` (N, K) (-1: none) and `scan_tracks`' `v_cmd`: the correction
    `push` (N, 2) m/s (the power law with `closing_exp`, np.exp of `scan_tracks`' `earg`, in
    the same order, then the separation; `any_closing` / `any_near` say whether any pair in
    the swarm was, as the numpy reference adds those terms only then, which decides the sign
    of a zero); the own track (`own_p`, `own_v` (N, 2) updated with own `pos`; `own_fresh`:
    started at it); the barrier's `normal` (N, B, 2) and `cap` (N, B) of each agent's B
    nearest tracks (targets >= `n_uav` are boxes) and `slack` (N,), the smallest of each
    agent's caps (NaN if one is; `steer` skips the projections below it); the guard's
    `escape` (N, 2) and `guarded` (N,); `active` (N,) = `commanded` & `alive` &
    (constrained or pushed). `track_dist`: `scan_tracks`' distances of the tracks; `meas`
    (N, K, 2) m: its measurements, which the barrier and the guard take for a neighbour's
    position where they are nearer than the track (the track lags a pair that turns); `resid`
    (N, K, 2) m: the tracks' residuals (`track`), which take back from the barrier's credit
    for a neighbour drawing away what the measurement shows it shed (`prm[SHED]` 1/s)."""
    _push_range(
        np.int64(0), target.shape[0], np.int64(0), p, v, target, v_cmd, vel, pos, closing_exp,
        any_closing, any_near, own_fresh, own_p, own_v, n_uav, prm, commanded, alive, push,
        normal, cap, slack, escape, guarded, active, track_dist, meas, resid,
    )  # fmt: skip


@njit(nogil=True, parallel=True)
def scan_push_parallel(
    p, v, target, v_cmd, vel, pos, closing_exp, any_closing, any_near, own_fresh, own_p,
    own_v, n_uav, prm, commanded, alive, push, normal, cap, slack, escape, guarded, active,
    track_dist, meas, resid, start,
):  # pragma: no cover - compiled  # fmt: skip
    """`scan_push` (the same arguments) on numba's threads, CHUNK agents per work item, plus
    `start` (N + 1,) int64: agent i's closing pairs are closing_exp[start[i]:start[i + 1]]
    (`scan_tracks_parallel`). Every agent reads its own rows (and its own pairs from
    start[i] on) and writes only its own, with the same operations as `scan_push`, so every
    output is bit-identical with any number of threads (each work item with its own scratch,
    `_push_range`)."""
    n = target.shape[0]
    for ch in prange((n + CHUNK - 1) // CHUNK):
        lo, hi = ch * CHUNK, min(n, (ch + 1) * CHUNK)
        _push_range(
            lo, hi, start[lo], p, v, target, v_cmd, vel, pos, closing_exp, any_closing,
            any_near, own_fresh, own_p, own_v, n_uav, prm, commanded, alive, push, normal, cap,
            slack, escape, guarded, active, track_dist, meas, resid,
        )  # fmt: skip


@njit(nogil=True)
def _push_range(
    lo, hi, m, p, v, target, v_cmd, vel, pos, closing_exp, any_closing, any_near, own_fresh,
    own_p, own_v, n_uav, prm, commanded, alive, push, normal, cap, slack, escape, guarded,
    active, track_dist, meas, resid,
):  # pragma: no cover - compiled  # fmt: skip
    """`scan_push` for the agents lo .. hi - 1, the first of whose closing pairs is
    closing_exp[m]."""
    k = target.shape[1]
    nb = normal.shape[1]
    kb = min(nb, k)
    # scratch, rewritten for each agent, allocated here rather than passed in: one for each
    # call (a work item), and arrays of its own let the compiler keep them apart from the
    # outputs (passed in, they cost the serial pass 3 %, 10,000 agents)
    order = np.empty(kb, dtype=np.int64)  # the nearest slots
    dist = np.empty(k)  # their distances
    by_meas = np.empty(k, dtype=np.bool_)  # the slot's measurement is nearer than its track
    r2, gain, horizon = prm[R2], prm[GAIN], prm[HORIZON]
    cr, sr, sep, rep = prm[TURN_COS], prm[TURN_SIN], prm[SEP], prm[REP]
    alpha, beta, dt = prm[ALPHA], prm[BETA], prm[DT]
    brake, reaction, rate, safe = prm[BRAKE], prm[REACTION], prm[RATE], prm[SAFE]
    overdrive = prm[OVERDRIVE]
    for i in range(lo, hi):
        # step 3 and 4: the correction, summed over the slots in order as numpy's sum does
        t0, t1 = 0.0, 0.0
        for s in range(k):
            valid = target[i, s] >= 0
            if valid:  # (its distance from `scan_tracks`: the same hypot of the same track)
                d, x0, x1, v0, v1, a, b, c, disc = _pair_at(
                    track_dist[i, s], p[i, s], v[i, s], v_cmd[i, 0], v_cmd[i, 1], vel[i, 0],
                    vel[i, 1], r2,
                )  # fmt: skip
            else:  # no track: only its position's sign shows (below, times 0)
                d, x0, x1 = np.inf, -p[i, s, 0], -p[i, s, 1]
                v0, v1, a, b, c, disc = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
            # (for step 5: the nearer of the track and the measurement)
            dm = math.hypot(meas[i, s, 0], meas[i, s, 1])
            by_meas[s] = dm < d
            dist[s] = (dm if by_meas[s] else d) if valid else np.inf
            q0, q1 = 0.0, 0.0
            if any_closing:
                if valid and b < 0.0 and disc > 0.0 and c > 0.0 and a > 1e-9:
                    sq = math.sqrt(disc)
                    tau = c / _maximum(-b + sq, 1e-12)
                    t = _maximum(tau, 1e-3)
                    mag = (
                        gain * closing_exp[m] / (_maximum(a, 1e-9) * t * t)
                        * (2.0 / t + 1.0 / horizon)
                    )  # fmt: skip
                    m += 1
                    f0 = -mag * (v0 - (a * x0 - b * v0) / sq)
                    f1 = -mag * (v1 - (a * x1 - b * v1) / sq)
                else:
                    f0, f1 = 0.0, 0.0
                q0 = cr * f0 - sr * f1
                q1 = sr * f0 + cr * f1
            if any_near:
                g = 0.0
                if valid and d < sep and d > 1e-6:
                    g = rep * (sep - d) / _maximum(d, 1e-6)
                q0 += g * x0
                q1 += g * x1
            if s == 0:
                t0, t1 = q0, q1
            else:
                t0 += q0
                t1 += q1
        size = math.hypot(t0, t1)
        scale = _minimum(1.0, prm[MAX_PUSH] / _maximum(size, 1e-12))
        t0 *= scale
        t1 *= scale
        if size < prm[MIN_PUSH]:
            t0, t1 = 0.0, 0.0
        push[i, 0], push[i, 1] = t0, t1
        # the own track
        for c in range(2):
            if own_fresh:
                own_p[i, c] = pos[i, c]
            else:
                pred = own_p[i, c] + dt * own_v[i, c]
                res = pos[i, c] - pred
                own_p[i, c] = pred + alpha * res
                own_v[i, c] = own_v[i, c] + (beta / dt) * res
        # step 5: the kb nearest tracks, as the first kb of a stable sort by distance (NaN
        # last, as numpy's): each slot in turn inserted behind the ones not farther
        cnt = 0
        for s in range(k):
            d = dist[s]
            if cnt == kb and not _before(d, dist[order[kb - 1]]):
                continue
            j = min(cnt, kb - 1)
            while j > 0 and _before(d, dist[order[j - 1]]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = s
            cnt = min(cnt + 1, kb)
        e0, e1 = 0.0, 0.0
        hit, hold = False, False
        constrained = False
        for j in range(kb):
            s = order[j]
            dk = dist[s]
            seen = math.isfinite(dk)
            u0, u1 = 0.0, 0.0
            if seen:
                b0, b1 = (meas[i, s, 0], meas[i, s, 1]) if by_meas[s] else (p[i, s, 0], p[i, s, 1])
                u0 = b0 / _maximum(dk, 1e-9)
                u1 = b1 / _maximum(dk, 1e-9)
            theirs = (own_v[i, 0] * u0 + own_v[i, 1] * u1) + (v[i, s, 0] * u0 + v[i, s, 1] * u1)
            shed = _maximum(-(resid[i, s, 0] * u0 + resid[i, s, 1] * u1), 0.0) * prm[SHED]
            uav = seen and target[i, s] < n_uav
            away = _maximum(theirs - shed, 0.0) if uav else 0.0
            normal[i, j, 0], normal[i, j, 1] = u0, u1
            if seen:
                gap = dk - safe
                if gap >= 0.0:
                    room = _maximum(gap, 0.0) / 2.0 + away * away / (2.0 * brake)
                    cap[i, j] = brake * (
                        math.sqrt(reaction * reaction + 2.0 * room / brake) - reaction
                    )
                else:
                    cap[i, j] = 0.5 * rate * gap
                if uav and away == 0.0 and overdrive > 0.0:
                    over = (vel[i, 0] * u0 + vel[i, 1] * u1) - cap[i, j]
                    if over > 0.0:
                        cap[i, j] -= overdrive * over
                constrained = constrained or math.isfinite(cap[i, j])
            else:
                cap[i, j] = np.inf
            g = 1.0 if (uav and dk < prm[GUARD]) else 0.0
            hit = hit or g > 0.0
            hold = hold or (uav and dk < prm[RELEASE])
            if j == 0:
                e0, e1 = u0 * g, u1 * g
            else:
                e0 += u0 * g
                e1 += u1 * g
        for j in range(kb, nb):
            normal[i, j, 0], normal[i, j, 1] = 0.0, 0.0
            cap[i, j] = np.inf
        low = np.inf
        for j in range(nb):
            low = _minimum(low, cap[i, j])
        slack[i] = low
        e0, e1 = -e0, -e1
        size = math.hypot(e0, e1)
        if hit and size > 1e-9:
            f = prm[GUARD_SPEED] / size
            escape[i, 0], escape[i, 1] = e0 * f, e1 * f
        guarded[i] = hit or (guarded[i] and hold)
        pushed = push[i, 0] != 0.0 or push[i, 1] != 0.0
        active[i] = commanded[i] and alive[i] and (constrained or guarded[i] or pushed)


_RECORDS = numba.typeof(np.zeros(1, SETPOINT))
# compiled before the clock (core/jit.py); every array C-contiguous (Avoidance makes them so)
_TRACKS = (
    "i8[2]", "?[2]", "f8[2]", "f8[2]", "f8[2]", "f8[1]", "i8[2]", "f8[3]", "f8[3]", "?",
    "f8[2]", "i8[1]", _RECORDS, "f8[2]", "f8[2]", "f8[1]", "f8[3]", "i8[2]", "f8[3]", "f8[3]",
    "f8[3]", "f8[2]", "?[1]", "f8[1]", "f8[2]",
)  # fmt: skip
_PUSH = (
    "f8[3] f8[3] i8[2] f8[2] f8[2] f8[2] f8[1] ? ? ? f8[2] f8[2] i8 f8[1] ?[1] ?[1] f8[2] "
    "f8[3] f8[2] f8[1] f8[2] ?[1] ?[1] f8[2] f8[3] f8[3]"
)
ahead(scan_tracks, _TRACKS)
ahead(scan_tracks_parallel, (*_TRACKS, "i8[1]", "f8[1]"))
ahead(scan_push, _PUSH)
ahead(scan_push_parallel, _PUSH + " i8[1]")
