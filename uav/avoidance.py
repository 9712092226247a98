"""Local collision avoidance: a layer between a mission's commands and the flight controller.

Any mission switches it on with the scenario section `[avoidance] enabled = true` (keys in
core/config.py, `AvoidanceConfig`); it needs the proximity sensor (`[uav.sensors.proximity]
enabled = true`), the only thing it reads about other UAVs and boxes: no radio, no truth.

What it does, vectorised over agents and the sensor's (N, M) scan (M = N UAVs + boxes):

1. Tracking. Each scan gives range and bearing of what each UAV sees. The relative position of
   every (agent, target) pair is tracked by an alpha-beta filter (gain `smoothing` = alpha,
   beta = alpha^2 / (2 - alpha)), which also estimates the pair's relative velocity; a pair not
   seen in a scan is forgotten.
2. The command. The velocity the mission asks of each agent is read from its setpoints: in
   Position mode the position loop's own law, v = kp (target - position) limited to the
   airframe's `max_speed_m_s`; in the ground-speed modes the commanded vx, vy. Manual and
   Attitude modes are left alone.
3. The anticipatory term: the time-to-collision power law of Karamouzas, Skinner and Guy,
   "Universal power law governing pedestrian interactions", Phys. Rev. Lett. 113, 238701
   (2014). With x the agent's position relative to the neighbour, v their relative velocity
   (the agent's commanded velocity minus the neighbour's tracked one) and r = `radius_m`, the
   time to collision tau solves |x + v tau| = r; the interaction energy E = k / tau^2
   e^(-tau / tau0) (k = `gain`, tau0 = `horizon_s`) gives the velocity change
       dv = -k e^(-tau/tau0) / (|v|^2 tau^2) (2/tau + 1/tau0) (v - (|v|^2 x - (x.v) v) / sqrt(D)),
   D = (x.v)^2 - |v|^2 (|x|^2 - r^2). An exactly head-on pair gets no sideways term from it
   and would stall face to face, so each such push is also turned a little to the agent's
   right (a rule of the road: both give way to their right, symmetric pairs separate).
4. Separation: closer than `separation_m` a plain repulsion `repulsion` (separation - d) pushes
   straight away (it also covers the overlapping pairs where tau = 0).
5. The sum is limited to `max_push_m_s`, added to the command, limited again to the airframe's
   top speed, and flown: the kernel gets, for the agents that have a neighbour to avoid, a
   Position target of position + v / kp (or the ground speed itself); the mission's own
   setpoints are never overwritten, so when nobody is near the flight is exactly the mission's.

The terms are recomputed at each scan (the proximity sensor's period) and the correction held
until the next; the command part is recomputed every tick.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.geo import yaw_of
from skyswarm.core.schema import ConfigError
from skyswarm.uav import control as ctl

if TYPE_CHECKING:
    from skyswarm.core.config import AvoidanceConfig
    from skyswarm.uav.swarm import Swarm

_POSITION = ctl.mode_index(ctl.POSITION)
_SPEED_MODES = [
    ctl.mode_index(m)
    for m in (
        ctl.GROUND_SPEED_AND_VERT_SPEED,
        ctl.GROUND_SPEED_AND_ALTITUDE,
        ctl.GROUND_SPEED_ALTITUDE_AND_HEADING,
    )
]
RIGHT_TURN = 0.35  # rad: how far a TTC push is turned to the agent's right


class _Setpoints:
    """What the kernel reads: a record array (the swarm's, or a modified copy)."""

    __slots__ = ("records",)

    def __init__(self, records: np.ndarray) -> None:
        self.records = records


class Avoidance:
    """The avoidance layer of one swarm (`Swarm.avoidance`); see the module doc."""

    @classmethod
    def create(cls, swarm: Swarm) -> Avoidance | None:
        scenario = swarm.sim.scenario
        cfg = getattr(scenario, "avoidance", None)
        if cfg is None or not cfg.enabled:
            return None
        sensors = swarm.sensors
        if sensors is None or "proximity" not in sensors.on:
            raise ConfigError(
                scenario.file,
                "avoidance.enabled",
                True,
                "the proximity sensor on ([uav.sensors.proximity] enabled = true)",
            )
        return cls(swarm, cfg)

    def __init__(self, swarm: Swarm, cfg: AvoidanceConfig) -> None:
        self.swarm, self.cfg = swarm, cfg
        control = swarm.config.control
        self.kp = float(control.position.kp)
        self.max_speed = float(control.max_speed_m_s)
        self.proximity = swarm.sensors.sensor("proximity")  # uav.sensors.proximity.Proximity
        self.period_s = self.proximity.every * swarm.dt
        self._scan = None  # the scan the tracks were last updated with
        self._p: np.ndarray | None = None  # (N, M, 2) tracked relative positions, m
        self._v: np.ndarray | None = None  # (N, M, 2) tracked relative velocities, m/s
        self._valid: np.ndarray | None = None  # (N, M) bool
        self.push = np.zeros((swarm.n, 2))  # m/s, the correction held until the next scan
        self.active = np.zeros(swarm.n, dtype=bool)
        self.engaged_ticks = 0  # agent-ticks flown with a correction (for the summary)
        self.min_ttc_s = math.inf  # smallest time to collision seen at a scan, s

    # -- own state (what the UAV knows of itself) --------------------------------------------
    def _own(self, idx: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, 3) position m, (n, 3) velocity m/s and (n,) ENU yaw rad of agents `idx`: the
        estimate when control acts on it, else the truth."""
        s = self.swarm.sensors
        if s is not None and s.drives_control:
            return s.position[idx], s.velocity[idx], s.euler[idx, 2]
        state, rows = self.swarm.sim.world.state, self.swarm.rows
        r = np.arange(self.swarm.n)[rows][idx]
        return state.position[r], state.linear_velocity[r], yaw_of(state.orientation[r])

    def desired(
        self, pos: np.ndarray, yaw: np.ndarray, idx: np.ndarray | slice = slice(None)
    ) -> tuple[np.ndarray, np.ndarray]:
        """(n, 2) world velocity the mission commands agents `idx` (own `pos`, `yaw`), m/s, and
        (n,) bool: has one (Position or a ground-speed mode)."""
        sp = self.swarm.setpoints
        mode = sp.mode[idx]
        v = np.zeros((len(mode), 2))
        at_pos = mode == _POSITION
        if at_pos.any():
            err = self.kp * (sp.position[idx][at_pos] - pos[at_pos, :2])
            speed = np.hypot(err[:, 0], err[:, 1])
            scale = np.minimum(1.0, self.max_speed / np.maximum(speed, 1e-12))
            v[at_pos] = err * scale[:, None]
        at_speed = np.isin(mode, _SPEED_MODES)
        if at_speed.any():
            c, s = np.cos(yaw[at_speed]), np.sin(yaw[at_speed])
            vel = sp.velocity[idx][at_speed]
            v[at_speed, 0] = c * vel[:, 0] - s * vel[:, 1]
            v[at_speed, 1] = s * vel[:, 0] + c * vel[:, 1]
        return v, at_pos | at_speed

    # -- the scan: tracks and the correction ---------------------------------------------------
    def _track(self, scan, yaw: np.ndarray) -> None:
        seen = scan.detected
        ang = np.where(seen, scan.bearing_rad, 0.0) + yaw[:, None]
        rng = np.where(seen, scan.range_m, 0.0)
        meas = np.stack([rng * np.cos(ang), rng * np.sin(ang)], axis=2)  # (N, M, 2) m
        if self._p is None or self._p.shape != meas.shape:
            self._p, self._v = meas.copy(), np.zeros_like(meas)
            self._valid = seen.copy()
            return
        a = self.cfg.smoothing
        b = a * a / (2.0 - a)
        dt = self.period_s
        pred = self._p + dt * self._v
        res = meas - pred
        old = (self._valid & seen)[..., None]
        self._p = np.where(old, pred + a * res, meas)
        self._v = np.where(old, self._v + (b / dt) * res, 0.0)
        self._valid = seen.copy()

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
        return total

    # -- every tick -------------------------------------------------------------------------
    def setpoints(self) -> object:
        """The setpoints the kernel flies this tick: the swarm's own, or a corrected copy."""
        swarm = self.swarm
        scan = self.proximity.scan
        if scan is not None and scan is not self._scan:  # a new scan: tracks and correction
            self._scan = scan
            pos, vel, yaw = self._own(slice(None))
            v_cmd, commanded = self.desired(pos, yaw)
            self._track(scan, yaw)
            self.push = self._correction(v_cmd, vel)
            self.active = commanded & swarm.alive & (np.abs(self.push).sum(axis=1) > 0.0)
        if not self.active.any():
            return swarm.setpoints
        idx = np.flatnonzero(self.active)
        pos, _, yaw = self._own(idx)
        v_cmd, commanded = self.desired(pos, yaw, idx)
        idx, pos, yaw = idx[commanded], pos[commanded], yaw[commanded]  # mode may have changed
        self.engaged_ticks += len(idx)
        v = v_cmd[commanded] + self.push[idx]
        speed = np.hypot(v[:, 0], v[:, 1])
        v *= np.minimum(1.0, self.max_speed / np.maximum(speed, 1e-12))[:, None]
        records = swarm.setpoints.records.copy()
        at_pos = records["mode"][idx] == _POSITION
        if at_pos.any():
            records["position"][idx[at_pos]] = pos[at_pos, :2] + v[at_pos] / self.kp
        if (~at_pos).any():
            k = idx[~at_pos]
            c, s = np.cos(yaw[~at_pos]), np.sin(yaw[~at_pos])
            vv = v[~at_pos]
            records["velocity"][k, 0] = c * vv[:, 0] + s * vv[:, 1]
            records["velocity"][k, 1] = -s * vv[:, 0] + c * vv[:, 1]
        return _Setpoints(records)

    def summary(self) -> dict[str, float | int | None]:
        return {
            "engaged_agent_s": self.engaged_ticks * self.swarm.dt,
            "min_time_to_collision_s": self.min_ttc_s if math.isfinite(self.min_ttc_s) else None,
        }
