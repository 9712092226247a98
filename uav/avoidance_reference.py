"""The numpy reference of the avoidance layer's scan (uav/avoidance.py, steps 1-6 of its
module doc): the tracks, the correction, the agents' own track, the barrier and the guard, in
plain numpy, one array operation over every (agent, slot). The layer flies the compiled passes
of uav/avoidance_kernel.py (`scan_tracks`, `scan_push`); these methods are what those passes
are pinned to, bit for bit (tests/uav/test_avoidance_kernel.py), and what the unit tests of the
law call (tests/uav/test_avoidance.py). `Avoidance` inherits them (`NumpyReference`), so they
read and write the layer's own state: `_p`, `_v`, `_res`, `_valid`, `_meas`, `target`, `_own_p`,
`_own_v`, `normal`, `cap`, `escape`, `guarded`, `push`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.uav.avoidance_kernel import track

if TYPE_CHECKING:
    from skyswarm.core.config import AvoidanceConfig
    from skyswarm.uav.sensors.proximity import Scan

RIGHT_TURN = 0.35  # rad: how far a TTC push is turned to the agent's right
MIN_PUSH_M_S = 0.01  # m/s: smaller sums of steps 3 and 4 are the trackers' noise, dropped


def speed_allowed(gap: np.ndarray, away: np.ndarray, cfg: AvoidanceConfig) -> np.ndarray:
    """Speed (m/s) at which an agent may approach a neighbour `gap` m beyond `safe_distance_m`
    that draws away at `away` m/s (>= 0): the agent owns half the gap, and must stop within it
    after reacting for `reaction_s` and braking at `brake_m_s2` even if the neighbour brakes
    as hard, v tau + v^2 / (2 a) = gap / 2 + away^2 / (2 a) (Gipps' safe speed); nearer than
    the safe distance, `barrier_rate` gap / 2 < 0: it must draw away."""
    a, tau = cfg.brake_m_s2, cfg.reaction_s
    room = np.maximum(gap, 0.0) / 2.0 + away * away / (2.0 * a)
    outside = a * (np.sqrt(tau * tau + 2.0 * room / a) - tau)
    return np.where(gap >= 0.0, outside, 0.5 * cfg.barrier_rate * gap)


class NumpyReference:
    """Steps 1-6 of a scan in numpy (see the module doc); mixed into `Avoidance`."""

    def _track(self, scan, yaw: np.ndarray) -> None:
        """Update the (N, K) tracks from `scan` (N, K) slots: a slot's target that had a track
        at the last scan (same agent, same target index, wherever its slot was) continues it;
        a new one starts at its measurement, at rest in the world; the others are forgotten.
        `_res`: each track's residual, this scan's measurement less its prediction (0 for a
        new track), which `_barrier` reads."""
        elev = np.where(scan.detected, scan.elevation_rad, 0.0)
        rng = np.where(scan.detected, scan.range_m, 0.0)
        # a neighbour `vertical_clear_m` above or below is no horizontal threat (layers)
        seen = scan.detected & (np.abs(rng * np.sin(elev)) < self.cfg.vertical_clear_m)
        ang = np.where(seen, scan.bearing_rad, 0.0) + yaw[:, None]
        rng = rng * np.cos(elev)  # horizontal range
        meas = np.stack([rng * np.cos(ang), rng * np.sin(ang)], axis=2)  # (N, K, 2) m
        target = np.where(seen, scan.target, -1)
        self._meas = meas  # this scan's own positions of the neighbours (the barrier's, 5)
        # a new track starts at rest in the world: relative velocity minus the agent's own
        # filtered one (0 said the neighbour flew as the agent did, docs/safety-log.md)
        rest = np.broadcast_to(-self._own_v[:, None, :], meas.shape)
        if self._p is None or self._p.shape != meas.shape:
            self._p, self._v, self._res = meas.copy(), rest.copy(), np.zeros_like(meas)
            self._valid, self.target = seen.copy(), target
            return
        a, b = self._gains()
        p, v, res = np.empty_like(meas), np.empty_like(meas), np.empty_like(meas)
        track(
            target, meas, self.target, self._p, self._v, a, b, self.period_s, self._own_v, p, v,
            res,
        )  # fmt: skip
        self._p, self._v, self._res = p, v, res
        self._valid, self.target = seen.copy(), target

    def _correction(self, v_cmd: np.ndarray, v_own: np.ndarray) -> np.ndarray:
        """(N, 2) velocity change, m/s, from the tracks (see the module doc)."""
        cfg = self.cfg
        valid = self._valid
        d = self._p  # neighbour relative to the agent, m
        dist = np.hypot(d[..., 0], d[..., 1])
        x = -d  # the agent relative to the neighbour
        # relative velocity: agent's command minus the neighbour's tracked world velocity
        v = v_cmd[:, None, :] - (v_own[:, None, :2] + self._v)
        a = np.einsum("nmi,nmi->nm", v, v)
        b = np.einsum("nmi,nmi->nm", x, v)
        c = dist * dist - cfg.radius_m**2
        disc = b * b - a * c
        closing = valid & (b < 0.0) & (disc > 0.0) & (c > 0.0) & (a > 1e-9)
        sq = np.sqrt(np.where(closing, disc, 1.0))
        tau = np.where(closing, c / np.maximum(-b + sq, 1e-12), np.inf)  # smaller root of the
        # quadratic |x + v t| = r, written to avoid cancellation
        push = np.zeros_like(d)
        if closing.any():
            if np.isfinite(tau).any():
                self.min_ttc_s = min(self.min_ttc_s, float(tau[closing].min()))
            t = np.maximum(tau, 1e-3)
            mag = (
                cfg.gain
                * np.exp(-t / cfg.horizon_s)
                / (np.maximum(a, 1e-9) * t * t)
                * (2.0 / t + 1.0 / cfg.horizon_s)
            )
            inner = v - (a[..., None] * x - b[..., None] * v) / sq[..., None]
            f = -mag[..., None] * inner
            f = np.where(closing[..., None], f, 0.0)
            # f of a head-on pair points back along the approach; turning it counter-clockwise
            # adds a component to the right of the agent's travel
            cr, sr = math.cos(RIGHT_TURN), math.sin(RIGHT_TURN)
            push = np.stack([cr * f[..., 0] - sr * f[..., 1], sr * f[..., 0] + cr * f[..., 1]], 2)
        near = valid & (dist < cfg.separation_m) & (dist > 1e-6)
        if near.any():
            k = np.where(
                near, cfg.repulsion * (cfg.separation_m - dist) / np.maximum(dist, 1e-6), 0
            )
            push += k[..., None] * x
        total = push.sum(axis=1)
        size = np.hypot(total[:, 0], total[:, 1])
        total *= np.minimum(1.0, cfg.max_push_m_s / np.maximum(size, 1e-12))[:, None]
        total[size < MIN_PUSH_M_S] = 0.0  # tracking noise between still UAVs: no push
        return total

    def _barrier(self, vel: np.ndarray | None = None) -> None:
        """At a scan: the barrier's half-planes (normal, cap) of each agent's nearest
        neighbours from the tracks and the agent's own filtered velocity `_own_v` (N, 2) m/s,
        and the guard's escape (module doc, 5 and 6)."""
        cfg, n = self.cfg, self.swarm.n
        # each neighbour where the track or this scan's measurement puts it, the nearer: the
        # track's position lags a pair whose relative velocity changes (0.3-0.4 m in a
        # 50-UAV crowd, docs/safety-log.md), the measurement does not
        d, m = self._p, self._meas
        dist = np.hypot(d[..., 0], d[..., 1])
        dm = np.hypot(m[..., 0], m[..., 1])
        nearer = dm < dist
        d = np.where(nearer[..., None], m, d)
        dist = np.where(self._valid, np.where(nearer, dm, dist), np.inf)
        k = min(cfg.barrier_neighbours, dist.shape[1])
        near = np.argsort(dist, axis=1, kind="stable")[:, :k]
        dk = np.take_along_axis(dist, near, axis=1)  # (N, k) m
        seen = np.isfinite(dk)
        rel = np.take_along_axis(d, near[..., None], axis=1)
        unit = np.where(seen[..., None], rel / np.maximum(dk, 1e-9)[..., None], 0.0)
        rel_v = np.take_along_axis(self._v, near[..., None], axis=1)  # neighbour minus agent
        # what the agent may count on from the neighbour: its speed away along n, or nothing
        # (one coming closer takes its own half of the closing speed; a box stands still).
        # Its velocity is the tracked relative one plus the agent's own as lagged as the track
        # (`_own_track`): with the fresh own velocity, a UAV accelerating towards a neighbour
        # saw it draw away and was let closer faster (docs/safety-log.md, the 50-UAV pass)
        theirs = np.einsum("ni,nki->nk", self._own_v, unit) + np.einsum("nki,nki->nk", rel_v, unit)
        # less what this scan shows the neighbour shed since the track's velocity was current:
        # measured nearer than the track predicted, it was slowing (`_shed_gain`)
        res = np.take_along_axis(self._res, near[..., None], axis=1)
        shed = np.maximum(-np.einsum("nki,nki->nk", res, unit), 0.0) * self._shed_gain()
        uav = seen & (np.take_along_axis(self.target, near, axis=1) < n)  # (boxes: >= n)
        away = np.where(uav, np.maximum(theirs - shed, 0.0), 0.0)
        self.normal[:] = 0.0
        self.cap[:] = np.inf
        self.normal[:, :k] = unit
        cap = speed_allowed(dk - cfg.safe_distance_m, away, cfg)  # m/s
        if vel is not None and cfg.overdrive > 0.0:
            # a UAV already faster towards a neighbour that does not draw away than the cap
            # is told to fly slower than it by `overdrive` times the excess
            over = np.einsum("ni,nki->nk", vel[:, :2], unit) - cap
            hard = uav & (away == 0.0) & (over > 0.0)
            cap = np.where(hard, cap - cfg.overdrive * over, cap)
        self.cap[:, :k] = np.where(seen, cap, np.inf)
        # the guard acts on UAVs (boxes: the barrier only)
        guard = uav & (dk < cfg.guard_m)
        away = -(unit * guard[..., None]).sum(axis=1)  # (N, 2)
        size = np.hypot(away[:, 0], away[:, 1])
        hit = guard.any(axis=1)
        release = ~(uav & (dk < cfg.guard_release_m)).any(axis=1)
        fresh = hit & (size > 1e-9)
        self.escape[fresh] = away[fresh] * (cfg.guard_speed_m_s / size[fresh])[:, None]
        self.guarded = hit | (self.guarded & ~release)

    def _own_track(self, pos: np.ndarray) -> None:
        """The agents' own (N, 2) horizontal positions `pos` m through the tracks' alpha-beta
        filter (same gains, same scans): `_own_v` lags the own velocity as the tracked relative
        velocities lag theirs."""
        if self._own_p is None:
            self._own_p = pos.copy()
            return
        a, b = self._gains()
        pred = self._own_p + self.period_s * self._own_v
        res = pos - pred
        self._own_p = pred + a * res
        self._own_v = self._own_v + (b / self.period_s) * res

    def _on_scan_numpy(self, scan: Scan) -> None:
        """The numpy reference of `_on_scan` (kept for the tests that pin the compiled pass to
        it: tests/uav/test_avoidance_kernel.py)."""
        swarm = self.swarm
        self._scan = scan
        pos, vel, yaw = self._own(slice(None))
        v_cmd, commanded = self.desired(pos, yaw)
        self._track(scan, yaw)
        self.push = self._correction(v_cmd, vel)
        self._own_track(pos[:, :2])
        self._barrier(vel)
        self._measure()
        self.slack = self.cap.min(axis=1, initial=np.inf)  # (NaN if a cap is)
        constrained = np.isfinite(self.cap).any(axis=1) | self.guarded
        self.active = commanded & swarm.alive & (constrained | (self.push != 0.0).any(axis=1))
        self._any_active = bool(self.active.any())
