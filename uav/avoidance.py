"""Local collision avoidance: a layer between a mission's commands and the flight controller.

On by default in every scenario (`[avoidance] enabled = true`, keys in core/config.py,
`AvoidanceConfig`); a scenario turns it off with `enabled = false`. It reads only what each UAV's
proximity sensor sees of the other UAVs and of boxes: no radio, no truth. The sensor is the one
of `[uav.sensors.proximity]`; when the scenario's sensor preset leaves it off (`ideal`), the layer
scans with that sensor's model itself (uav/sensors/proximity.py, its defaults or the table's
keys), so the UAVs still fly on the truth and no other sensor is switched on. Switching the
proximity sensor off explicitly while avoidance is on is a configuration error.

What it does, vectorised over agents and the sensor's (N, K) scan (each UAV's K =
`max_targets` nearest UAVs and boxes within range, uav/sensors/proximity.py), so its memory and
scan-rate work grow as N K, not N^2; the law and its guarantee are explained in docs/safety.md:

1. Tracking. Each scan gives range, bearing and elevation of what each UAV sees; what is at
   least `vertical_clear_m` (1.5 m) above or below is left out (UAVs flying in layers 2 m apart
   do not hinder each other; at 1.0 m, the separation bar itself, a pair could settle stacked
   just over it and drifting altitude estimates then took it below, docs/safety-log.md). The
   horizontal relative position of every (agent, target) pair is tracked by an alpha-beta
   filter (gain `smoothing` = alpha, beta = alpha^2 / (2 - alpha)), which also estimates the
   pair's relative velocity; the (N, K) tracks are keyed by target index, so a
   target keeps its track when its slot changes; a pair not seen in a scan (out of range, or
   no longer among the K nearest) is forgotten. A new track starts at its measurement and at
   rest in the world (relative velocity: minus the agent's own filtered velocity, step 5), not
   flying as the agent does: that start let a UAV at 7 m/s credit a neighbour it had just seen
   with drawing away at its own speed, for the scans the track took to learn otherwise
   (docs/safety-log.md).
2. The command. The velocity the mission asks of each agent is read from its setpoints: in
   Position mode the position loop's own law, v = kp (target - position) limited to the
   airframe's `max_speed_m_s`; in the velocity modes the commanded vx, vy. Manual, Attitude,
   BodyRates and Motors are left alone.
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
5. The barrier (the part that holds whatever the terms above add up to): for each of the
   `barrier_neighbours` nearest neighbours at distance d in direction n (unit, towards it;
   where this scan measures the neighbour nearer than its track, the measurement: a track
   lags a pair that turns or brakes, by 0.3-0.4 m in a 50-UAV crowd, docs/safety-log.md), the
   agent's velocity along n is capped at the speed from which it can stop within half the gap
   x = d - `safe_distance_m`, reacting after `reaction_s` and braking at `brake_m_s2`, even if
   the neighbour brakes as hard from its speed away along n (0 if it comes closer, or for a
   box): v tau + v^2 / (2 a) = x / 2 + away^2 / (2 a) (Gipps' safe speed). That speed is the
   tracked relative velocity plus the agent's own velocity put through the same alpha-beta
   filter at the same scans, so both lag alike (the fresh own velocity, added to a relative
   one that lags, made a neighbour look as if it drew away from a UAV accelerating towards
   it, and let the pair close faster: a 0.95 m pass in a 50-UAV flock, docs/safety-log.md), less
   what the scan shows the neighbour shed since the track's velocity was current: measured
   r m nearer (along n) than the track predicted, r (alpha - beta / 2) / T m/s (T the scan
   period; a neighbour slowing steadily at a is measured a T^2 / beta nearer, and the track's
   velocity trails it by (alpha / beta - 1/2) T: a leader that braked ahead of a 50-UAV
   flock's follower was credited 1.5 m/s it no longer had, docs/safety-log.md).
   Inside the safe distance the cap is `barrier_rate` x / 2 < 0: they draw apart. The cap
   bounds a command, and the velocity loop follows a falling command ~0.4 s late (the UAV
   brakes harder after a step than when its command falls gradually), so a UAV already flying
   towards a neighbour that does not draw away faster than its cap is told to fly
   `overdrive` (1) times that excess below it: the loop brakes as hard as it can at once
   instead of trailing the cap down (docs/safety-log.md, "The overdrive"). The velocity
   is projected onto each half-plane in turn, the nearest last (PASSES times). Sideways motion
   is free, and a flock moving together is slowed only as much as its spacing requires.
6. The last-resort guard: closer than `guard_m` to another UAV (the distance of step 5), the
   agent drops the mission's command and the terms above and flies straight away from every
   UAV within `guard_m`, at `guard_speed_m_s` (through the barrier too), until every UAV is
   beyond `guard_release_m`.
   It does not climb or descend (a first version that sent one UAV of a pair up and the other
   down made UAVs that had already moved vertically pass through each other, docs/safety-log.md).
7. The sum of 3 and 4 is dropped below MIN_PUSH_M_S (1 cm/s: tracking noise between UAVs
   that hold still), limited to `max_push_m_s`, added to the command, put through the
   barrier, limited to the airframe's top speed, and flown: the kernel gets, for the agents
   whose velocity changed, a Position target of position + v / kp (or the velocity itself);
   the mission's own setpoints are never overwritten, so when no neighbour constrains an agent
   its flight is exactly the mission's.

The terms are recomputed at each scan (the proximity sensor's period) and held until the next;
the command, the barrier and the guard are applied every tick. Both are compiled passes over
every agent (uav/avoidance_kernel.py); the numpy methods of uav/avoidance_reference.py
(`_on_scan_numpy`, `_track`, `_correction`, `_own_track`, `_barrier`) are the reference they
are pinned to, bit for bit.

Example (a scenario that flies without it): `[avoidance]` `enabled = false`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.backends import threaded
from skyswarm.core.geo import yaw_of
from skyswarm.core.schema import ConfigError
from skyswarm.uav import control as ctl
from skyswarm.uav.avoidance_kernel import (
    params,
    scan_push,
    scan_push_parallel,
    scan_tracks,
    scan_tracks_parallel,
)
from skyswarm.uav.avoidance_reference import MIN_PUSH_M_S, RIGHT_TURN, NumpyReference
from skyswarm.uav.avoidance_separation import min_separation, min_separation_parallel
from skyswarm.uav.avoidance_steer import (
    HEADING_FRAME,
    STEER_PARALLEL_MIN,
    WORLD_FRAME,
    give_back,
    mode_kinds,
    steer,
    steer_lent,
    steer_lent_parallel,
    yaw_terms,
)
from skyswarm.uav.sensors.proximity import Proximity, Scan, scan

if TYPE_CHECKING:
    from skyswarm.core.config import AvoidanceConfig
    from skyswarm.core.world import World
    from skyswarm.uav.swarm import Swarm

_POSITION = ctl.mode_index(ctl.POSITION)
_KINDS = mode_kinds()  # per mode index: untouched, Position, heading-frame or world velocity
PASSES = 3  # projections onto the barrier's half-planes, each over every constraint


class _Setpoints:
    """What the kernel reads: a record array (the swarm's, or a modified copy)."""

    __slots__ = ("records",)

    def __init__(self, records: np.ndarray) -> None:
        self.records = records


class _OwnScan:
    """The proximity sensor's model run by the layer itself when the sensor suite has no
    proximity sensor (the `ideal` preset): the same `scan` of the truth, at the sensor's
    period, after physics (phase 6), drawing from the run's `sensors` stream."""

    def __init__(self, swarm: Swarm) -> None:
        cfg = swarm.config.sensors.resolved("proximity")
        self.cfg = cfg
        self.swarm = swarm
        self.every = max(1, round(cfg.period_s / swarm.dt))
        self.boxes = _boxes(swarm)
        self.rng = swarm.sim.rng.sensors
        self.scan: Scan | None = None
        swarm.sim.add_post_tick(self)

    def __call__(self, world: World) -> None:
        if world.tick % self.every:
            return
        state, rows = world.state, self.swarm.rows
        self.scan = scan(
            state.position[rows],
            yaw_of(state.orientation[rows]),
            self.swarm.alive,
            self.boxes,
            self.cfg,
            self.rng,
        )


def _boxes(swarm: Swarm) -> np.ndarray:
    """(B, 6) centre and half size of the scenario's static boxes (their yaw is ignored)."""
    world = swarm.sim.scenario.world
    boxes = [(*o.center, *(s / 2 for s in o.size)) for o in world.obstacles if o.type == "box"]
    return np.array(boxes, dtype=float).reshape(-1, 6)


def proximity_switched_off(swarm_sensors) -> bool:
    """True when a `[uav.sensors.proximity]` table sets `enabled = false` (a scenario's choice
    that avoidance cannot override)."""
    own = swarm_sensors.tables.get("proximity")
    return own is not None and own.enabled is False


class Avoidance(NumpyReference):
    """The avoidance layer of one swarm (`Swarm.avoidance`); see the module doc. Its numpy
    reference of a scan (`_on_scan_numpy` and the steps it calls) is uav/avoidance_reference.py.

    `min_separation_m` is the smallest true distance between two live UAVs seen at a scan
    (horizontal and vertical together), `guard_agent_s` the time agents flew the guard."""

    @classmethod
    def create(cls, swarm: Swarm) -> Avoidance | None:
        scenario = swarm.sim.scenario
        cfg = scenario.avoidance if scenario is not None else None
        if cfg is None or not cfg.enabled:
            return None
        if proximity_switched_off(swarm.config.sensors):
            raise ConfigError(
                scenario.file,
                "avoidance.enabled",
                True,
                "false when the proximity sensor is off ([uav.sensors.proximity] enabled)",
            )
        return cls(swarm, cfg)

    def __init__(self, swarm: Swarm, cfg: AvoidanceConfig) -> None:
        self.swarm, self.cfg = swarm, cfg
        control = swarm.config.control
        self.kp = float(control.position.kp)
        self.max_speed = float(control.max_speed_m_s)
        own = swarm.sensors.sensor("proximity") if swarm.sensors is not None else None
        self.proximity: Proximity | _OwnScan = own if own is not None else _OwnScan(swarm)
        self.period_s = self.proximity.every * swarm.dt
        self._scan = None  # the scan the tracks were last updated with
        # the tracks, one per slot of the scan (N, K: the sensor's `max_targets`)
        self._p: np.ndarray | None = None  # (N, K, 2) tracked relative positions, m
        self._v: np.ndarray | None = None  # (N, K, 2) tracked relative velocities, m/s
        self._valid: np.ndarray | None = None  # (N, K) bool
        self._meas: np.ndarray | None = None  # (N, K, 2) m, the last scan (the numpy reference)
        self.target: np.ndarray | None = None  # (N, K) int64 target index (-1: no track)
        n, k = swarm.n, cfg.barrier_neighbours
        self.push = np.zeros((n, 2))  # m/s, the correction held until the next scan
        self.normal = np.zeros((n, k, 2))  # barrier: unit vectors towards the nearest
        self.cap = np.full((n, k), np.inf)  # barrier: their closing-speed caps, m/s
        self.slack = np.full(n, np.inf)  # barrier: each agent's smallest cap, m/s
        self.escape = np.zeros((n, 2))  # guard: velocity away from the closest UAVs, m/s
        self.guarded = np.zeros(n, dtype=bool)
        self.active = np.zeros(n, dtype=bool)
        self._any_active = False  # active.any(), kept by the scans (the only writers of active)
        self.engaged_ticks = 0  # agent-ticks flown with a correction (for the summary)
        self.guard_ticks = 0  # agent-ticks flown by the guard
        self.min_ttc_s = math.inf  # smallest time to collision seen at a scan, s
        self.min_separation_m = math.inf
        self.min_separation_at_s: float | None = None  # simulated time of that scan
        self._v_out = np.zeros((n, 2))  # steer's velocities and which of them changed
        # the agents' own horizontal position and velocity through the tracks' alpha-beta
        # filter (m, m/s), so that own plus tracked relative velocity is the neighbour's
        self._own_p: np.ndarray | None = None
        self._own_v = np.zeros((n, 2))
        self._changed = np.zeros(n, dtype=bool)
        # the compiled pass's buffers and parameters (uav/avoidance_kernel.py)
        self._prm = self._params()
        rows = swarm.rows  # the agents' rows of the state arrays, as an index array
        self._rows = np.arange(rows.start, rows.stop) if isinstance(rows, slice) else rows
        self._rows = np.ascontiguousarray(self._rows, dtype=np.int64)
        self._ids = np.arange(n, dtype=np.int64)  # rows of the estimate's arrays
        self._pos = np.zeros((n, 3))  # steer's own positions
        self._no_yaw = np.zeros(n)  # steer's yaws while no agent flies a heading-frame mode
        self._need_yaw = False  # an agent flew a heading-frame mode: read the yaws every tick
        self._records = np.zeros(n, dtype=swarm.setpoints.records.dtype)  # the corrected copy
        self._saved = np.zeros((n, 2))  # `lend`: the values its corrections replaced
        self._lent = False  # the swarm's records hold corrections until `give_back`
        self._buffers: dict | None = None  # the scan's, by its (N, K) shape
        self._grid: tuple[np.ndarray, np.ndarray] | None = None  # min_separation's buckets

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
        (n,) bool: has one (Position or a velocity mode)."""
        sp = self.swarm.setpoints
        mode = sp.mode[idx]
        v = np.zeros((len(mode), 2))
        at_pos = mode == _POSITION
        if at_pos.any():
            err = self.kp * (sp.position[idx][at_pos] - pos[at_pos, :2])
            speed = np.hypot(err[:, 0], err[:, 1])
            scale = np.minimum(1.0, self.max_speed / np.maximum(speed, 1e-12))
            v[at_pos] = err * scale[:, None]
        kind = _KINDS[mode]
        at_head = kind == HEADING_FRAME
        if at_head.any():
            c, s = np.cos(yaw[at_head]), np.sin(yaw[at_head])
            vel = sp.velocity[idx][at_head]
            v[at_head, 0] = c * vel[:, 0] - s * vel[:, 1]
            v[at_head, 1] = s * vel[:, 0] + c * vel[:, 1]
        at_world = kind == WORLD_FRAME
        if at_world.any():
            v[at_world] = sp.velocity[idx][at_world][:, :2]
        return v, at_pos | at_head | at_world

    # -- the scan: tracks and the correction ---------------------------------------------------
    def _shed_gain(self) -> float:
        """1/s: the speed a neighbour shed unseen by its track, per metre that the scan measures
        it nearer than the track predicted (step 5). A track's velocity trails a neighbour that
        slows at a steady a by (alpha / beta - 1/2) T after the scan (T the scan period), and
        its residual is then a T^2 / beta, so the speed shed in that lag is the residual times
        (alpha - beta / 2) / T. (Counting the scan's age as well, (alpha + beta / 2) / T, braked
        the reference's followers off their slots: formation error 1.06 m, 0.52 m with this.)"""
        a, b = self._gains()
        return (a - b / 2.0) / self.period_s

    def _gains(self) -> tuple[float, float]:
        """The tracks' alpha-beta gains: alpha = `smoothing`, beta = alpha^2 / (2 - alpha)."""
        a = self.cfg.smoothing
        return a, a * a / (2.0 - a)

    def _measure(self) -> None:
        """Instrumentation (never fed back): the smallest true distance between live UAVs,
        as a norm of the pair: compiled on a grid sized by the nearest tracked pair
        (uav/avoidance_separation.py `min_separation`, on numba's threads for a large swarm: the
        same value), else each one's nearest by a KD-tree."""
        state, alive = self.swarm.sim.world.state, self.swarm.alive
        pos = state.position[self.swarm.rows]
        gap = math.inf
        if self.target is not None and np.isfinite(pos[alive]).all():
            if self._grid is None:
                n = len(pos)
                self._grid = (
                    np.empty(1 << max(4, (2 * n - 1).bit_length()), np.int64),
                    np.empty(n, np.int64),
                )
            kernel = min_separation_parallel if threaded(len(pos)) else min_separation
            gap = kernel(
                np.ascontiguousarray(pos), np.ascontiguousarray(alive), self.target, *self._grid
            )
        if math.isinf(gap):  # no tracked pair: the KD-tree
            pos = pos[alive]
            if len(pos) < 2:
                return
            from scipy.spatial import cKDTree  # here: importing scipy.spatial costs every run
            # ~0.3 s (its array-API layer imports numpy.f2py), and this is the rare fallback

            _, j = cKDTree(pos).query(pos, k=2)
            gap = float(np.linalg.norm(pos[j[:, 1]] - pos, axis=1).min())
        if gap < self.min_separation_m:
            self.min_separation_m = gap
            self.min_separation_at_s = self.swarm.sim.time_s

    def _params(self) -> np.ndarray:
        """The scan kernels' parameter array (uav/avoidance_kernel.py `params`)."""
        cfg = self.cfg
        a, b = self._gains()
        return params(
            kp=self.kp, max_speed=self.max_speed, vertical_clear=cfg.vertical_clear_m,
            alpha=a, beta=b, dt=self.period_s, radius2=cfg.radius_m**2, gain=cfg.gain,
            horizon=cfg.horizon_s, turn_cos=math.cos(RIGHT_TURN), turn_sin=math.sin(RIGHT_TURN),
            separation=cfg.separation_m, repulsion=cfg.repulsion, max_push=cfg.max_push_m_s,
            min_push=MIN_PUSH_M_S, safe=cfg.safe_distance_m, brake=cfg.brake_m_s2,
            reaction=cfg.reaction_s, barrier_rate=cfg.barrier_rate, guard=cfg.guard_m,
            guard_speed=cfg.guard_speed_m_s, guard_release=cfg.guard_release_m,
            overdrive=cfg.overdrive, shed=self._shed_gain(),
        )  # fmt: skip

    def _scan_buffers(self, n: int, k: int) -> dict[str, np.ndarray]:
        """The compiled scan's arrays for (N, K) slots, made once per shape."""
        if self._buffers is None or self._buffers["meas"].shape[:2] != (n, k):
            self._buffers = {
                "meas": np.zeros((n, k, 2)),
                "target": np.full((n, k), -1, dtype=np.int64),
                "p": np.zeros((n, k, 2)),
                "v": np.zeros((n, k, 2)),
                "p2": np.zeros((n, k, 2)),  # the tracks written at alternate scans
                "v2": np.zeros((n, k, 2)),
                "target2": np.full((n, k), -1, dtype=np.int64),
                "res": np.zeros((n, k, 2)),  # the tracks' residuals of this scan
                "v_cmd": np.zeros((n, 2)),
                "commanded": np.zeros(n, dtype=bool),
                "earg": np.zeros(n * k),
                "dist": np.zeros((n, k)),  # the tracks' distances (scan_tracks for scan_push)
                # the threaded passes': each agent's first closing pair in "earg", and the
                # exponents each agent writes in its own K places before they are gathered
                "start": np.zeros(n + 1, dtype=np.int64),
                "spill": np.zeros(n * k),
            }
        return self._buffers

    def _on_scan(self, scan: Scan) -> None:
        """Steps 1-6 at a new scan, compiled in two passes over every agent with numpy's exp of
        the closing pairs between them (uav/avoidance_kernel.py `scan_tracks`, `scan_push`;
        their `_parallel` twins on numba's threads for a large swarm, core.backends.threaded,
        the same bits); the same arithmetic as the numpy reference `_on_scan_numpy`, bit for
        bit."""
        swarm = self.swarm
        self._scan = scan
        pos, vel, yaw = self._own(slice(None))
        pos, vel = np.ascontiguousarray(pos), np.ascontiguousarray(vel)
        yaw = np.ascontiguousarray(yaw, dtype=float)
        n, k = scan.target.shape
        fresh = self._p is None or self._p.shape != (n, k, 2)
        buf = self._scan_buffers(n, k)
        prev_target = buf["target"] if fresh else self.target
        prev_p = buf["p"] if fresh else self._p
        prev_v = buf["v"] if fresh else self._v
        # the new tracks go to the buffers the current ones are not in
        other = "2" if self._p is buf["p"] else ""
        p, v, target = buf["p" + other], buf["v" + other], buf["target" + other]
        c = np.ascontiguousarray
        tracks = (
            c(scan.target), c(scan.detected), c(scan.range_m), c(scan.bearing_rad),
            c(scan.elevation_rad), yaw, prev_target, prev_p, prev_v, fresh, self._own_v, _KINDS,
            swarm.setpoints.records, pos, vel, self._prm, buf["meas"], target, p, v, buf["res"],
            buf["v_cmd"], buf["commanded"], buf["earg"], buf["dist"],
        )  # fmt: skip
        parallel = threaded(n)
        if parallel:
            closing, min_tau, near = scan_tracks_parallel(*tracks, buf["start"], buf["spill"])
        else:
            closing, min_tau, near = scan_tracks(*tracks)
        self._p, self._v, self.target = p, v, target
        self._valid = target >= 0
        if math.isfinite(min_tau):
            self.min_ttc_s = min(self.min_ttc_s, min_tau)
        power = buf["earg"][:closing]
        np.exp(power, out=power)  # numpy's exp, as the reference's
        own_fresh = self._own_p is None
        if own_fresh:
            self._own_p = np.zeros((swarm.n, 2))
        push = (
            p, v, target, buf["v_cmd"], vel, pos, power, closing > 0, near, own_fresh,
            self._own_p, self._own_v, swarm.n, self._prm, buf["commanded"],
            np.ascontiguousarray(swarm.alive), self.push, self.normal, self.cap, self.slack,
            self.escape, self.guarded, self.active, buf["dist"], buf["meas"], buf["res"],
        )  # fmt: skip
        if parallel:
            scan_push_parallel(*push, buf["start"])
        else:
            scan_push(*push)
        self._any_active = bool(self.active.any())
        self._measure()

    # -- every tick -------------------------------------------------------------------------
    def setpoints(self) -> object:
        """The setpoints the kernel flies this tick: the swarm's own, or a corrected copy
        (steps 5-7, compiled over every agent in uav/avoidance_kernel.py)."""
        return self._steered(lend=False)

    def lend(self) -> object:
        """`setpoints()` without the copy: the corrections are written into the swarm's own
        records, which hold them until `give_back()` puts the mission's values back. For the
        flight kernel's call alone (Swarm.__call__: lend, fly, give back, nothing between);
        the same setpoints flown, to the bit."""
        return self._steered(lend=True)

    def give_back(self) -> None:
        """The mission's setpoints back where `lend()` wrote corrections (nothing otherwise)."""
        if self._lent:
            self._lent = False
            give_back(self.swarm.setpoints.records, self._changed, _KINDS, self._saved)

    def _steered(self, lend: bool) -> object:
        """`setpoints` (a corrected copy) or, with `lend`, the corrections in place."""
        swarm = self.swarm
        scan = self.proximity.scan
        if scan is not None and scan is not self._scan:  # a new scan: tracks and correction
            self._on_scan(scan)
        if not self._any_active:
            return swarm.setpoints
        s = swarm.sensors
        if s is not None and s.drives_control:  # the estimate (its yaw read every tick)
            source, rows = s.position, self._ids
            yaw = np.ascontiguousarray(s.euler[:, 2])
        else:
            state = swarm.sim.world.state
            source, rows = state.position, self._rows
            yaw = self._yaws(state.orientation) if self._need_yaw else self._no_yaw
        records = swarm.setpoints.records
        source = np.ascontiguousarray(source)
        if lend:  # numba's threads for a large swarm (the same bits)
            parallel = threaded(len(self.active), at_least=STEER_PARALLEL_MIN)
            kernel = steer_lent_parallel if parallel else steer_lent
            out = self._saved
        else:
            kernel, out = steer, self._records
        while True:
            n, guards = kernel(
                self.active, _KINDS, records, source, rows, yaw, yaw is not self._no_yaw,
                self.push, self.escape, self.guarded, self.normal, self.cap, self.slack, self.kp,
                self.max_speed, PASSES, self._pos, self._v_out, self._changed, out,
            )  # fmt: skip
            if n >= 0:
                break
            self._need_yaw = True  # a heading-frame mode: the yaws, now and from now on
            yaw = self._yaws(swarm.sim.world.state.orientation)
        if not n:
            return swarm.setpoints
        self.engaged_ticks += n
        self.guard_ticks += guards
        if lend:
            self._lent = True
            return swarm.setpoints
        return _Setpoints(self._records)

    def _yaws(self, orientation: np.ndarray) -> np.ndarray:
        """(N,) ENU yaws rad of the agents' rows of `orientation` (M, 4): yaw_of(orientation[
        rows]) to the bit, its arithmetic compiled without the gather (`yaw_terms`), numpy's
        arctan2 kept (on contiguous arrays, as yaw_of's own temporaries)."""
        n = len(self._rows)
        num, den = np.empty(n), np.empty(n)
        yaw_terms(np.ascontiguousarray(orientation), self._rows, num, den)
        return np.arctan2(num, den)

    def summary(self) -> dict[str, float | int | None]:
        """engaged_agent_s (s of agent flight with a correction), guard_agent_s (flown by the
        guard), min_time_to_collision_s, min_separation_m and min_separation_at_s (the
        simulated time of the scan that saw it; both None: never measured)."""
        return {
            "engaged_agent_s": self.engaged_ticks * self.swarm.dt,
            "guard_agent_s": self.guard_ticks * self.swarm.dt,
            "min_time_to_collision_s": self.min_ttc_s if math.isfinite(self.min_ttc_s) else None,
            "min_separation_m": (
                self.min_separation_m if math.isfinite(self.min_separation_m) else None
            ),
            "min_separation_at_s": (
                round(self.min_separation_at_s, 4) if self.min_separation_at_s is not None else None
            ),
        }
