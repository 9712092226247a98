"""Fire-tracking UAVs: search, transit to their segment, follow the front inside it, report.

A `FireUav` knows its own state (its sensors), its camera's frames, and what the base station
tells it over the long-range link (`Assignment`). Every `behaviour_period_s` it takes a frame,
and then:
- before any assignment, or when the base leaves it out of the segments (a spotter): flies its
  search lane(s) (the grid cut into one strip per UAV, lanes
  one footprint apart; a spotter: lanes over the whole grid) or, before any assignment, once
  its own camera sees fire, follows it by the line-fit rule;
- with an arc: when it sees fire and is inside its arc, it follows the front by the seed's rule
  (missions/wildfire/follow.py) with a patrol direction as reference heading: it sweeps its arc
  and turns back when its footprint's edge reaches an end of the arc, or holds the arc's middle
  when the arc is narrower than the footprint; otherwise (no fire of its arc in view, or past
  an end of the arc) it flies to the arc's middle on the fire's edge as it knows it: along the
  ray from the centroid through the base's middle point, that point or, farther out, the
  farthest cell it has itself seen hot near the ray (the fire has grown past an old point);
- every `report_period_s` it sends its latest frame to the base station (`FireReport`).
UAVs fly `layer_m` apart in height (one layer per UAV) so crossing paths never collide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import param
from skyswarm.missions.wildfire.base import Arc, Assignment, report_of
from skyswarm.missions.wildfire.fire import FireGrid
from skyswarm.missions.wildfire.follow import next_waypoint
from skyswarm.missions.wildfire.thermal import Frame, ThermalCamera, ThermalConfig
from skyswarm.missions.wildfire.thermal import footprint_half_m as half_m
from skyswarm.uav.agents import AutonomousUavAgent


@dataclass(frozen=True)
class TrackingConfig:
    """The `[tracking]` section: flight, radio and re-balancing of the fire-tracking swarm."""

    altitude_m: float = param(40.0, "flight height of the lowest UAV above the terrain, m", gt=0)
    layer_m: float = param(2.0, "height step between UAVs (UAV k flies k layers up), m", ge=0.0)
    speed_m_s: float = param(3.0, "speed along the front, m/s", gt=0.0)
    window_m: float = param(
        20.0, "half-size of the line-fit window around the nadir, m (the seed: 4 cells)", gt=0.0
    )
    transit_speed_m_s: float = param(7.0, "speed when searching or changing segment, m/s", gt=0)
    behaviour_period_s: float = param(
        0.5, "camera frame and decision period, s", gt=0.0, period=True
    )
    report_period_s: float = param(
        0.5, "period of frame reports to the base station, s", gt=0.0, period=True
    )
    poll_period_s: float = param(
        0.5, "period of the base station's map update, s", gt=0.0, period=True
    )
    timeout_s: float = param(3.0, "a UAV the base has not heard this long is lost, s", gt=0.0)
    growth: float = param(0.1, "re-balance when the known perimeter grew this fraction", gt=0.0)
    refresh_s: float = param(10.0, "re-balance at least this often once tracking, s", gt=0.0)
    rebalance: bool = param(True, "re-balance segments (false: the first assignment stays)")
    fit: str = param("tls", "front line fit: tls (principal axis) or ols (the seed's y = a x + b)")
    search_overlap: float = param(0.2, "overlap of neighbouring search lanes", ge=0.0, lt=1.0)
    settle_s: float = param(
        30.0,
        "after the first detection, time to reach the segments before tracking counts, s",
        ge=0.0,
    )
    metrics_period_s: float = param(1.0, "period of the true-state metrics, s", gt=0, period=True)
    map_segments: int = param(36, "pieces of the known perimeter whose age is measured", ge=1)
    spotters: int = param(
        0, "UAVs (the highest ids heard) that search on for spot fires while the rest track", ge=0
    )


@dataclass
class FireContext:
    """What the mission hands every UAV."""

    cfg: TrackingConfig
    thermal: ThermalConfig
    grid: FireGrid
    rng: np.random.Generator  # the cameras' false negatives
    n_uavs: int


def farthest_along(xy: np.ndarray, c: np.ndarray, u: np.ndarray, strip_m: float) -> float:
    """m: how far along the unit ray `u` (2,) from `c` (2,) m reaches the farthest of the points
    `xy` (K, 2) m within `strip_m` of the ray's line; 0 when none lies ahead within the strip.

    >>> farthest_along(np.array([[0.0, 30.0], [4.0, 50.0], [9.0, 60.0]]), np.zeros(2),
    ...                np.array([0.0, 1.0]), 5.0)
    50.0
    """
    rel = np.asarray(xy, dtype=float).reshape(-1, 2) - c
    near = np.abs(rel @ np.array([-u[1], u[0]])) <= strip_m
    return max(float((rel[near] @ u).max()), 0.0) if near.any() else 0.0


class FireUav(AutonomousUavAgent):
    """A thermal-camera UAV of the fire-tracking swarm. Call `join(context, k, phase_s)`."""

    def join(self, ctx: FireContext, k: int, phase_s: float) -> None:
        self.ctx = ctx
        cfg = ctx.cfg
        self.camera = ThermalCamera(ctx.thermal, ctx.grid, ctx.rng)
        self.gain = float(self.swarm.config.control.position.kp)  # own autopilot, 1/s
        self.height = cfg.altitude_m + k * cfg.layer_m  # m above the terrain
        self.route = self._search_route(k, ctx.n_uavs)
        self.leg = 0
        self.sign = 1.0  # patrol direction around the fire: +1 counter-clockwise
        self.assignment: Assignment | None = None
        self.frame: Frame | None = None
        self.known_hot = np.zeros(0, dtype=np.intp)  # flat grid indices of cells it saw hot
        self.state = "search"
        self.spotter = False  # searching on while the others track the fire
        self.every(cfg.behaviour_period_s, self._behave, phase_s, name="fire uav")
        self.every(cfg.report_period_s, self._report, phase_s, name="fire report")

    # -- search -----------------------------------------------------------------------------
    def _search_route(self, k: int, strips: int) -> np.ndarray:
        """(L, 2) m: boustrophedon lanes (north-south) over strip k of `strips` of the grid."""
        g, cfg = self.ctx.grid, self.ctx.cfg
        w, h = g.shape[1] * g.cell_m, g.shape[0] * g.cell_m
        strip = w / strips
        swath = 2.0 * half_m(self.height, self.ctx.thermal.fov_deg) * (1.0 - cfg.search_overlap)
        lanes = max(1, math.ceil(strip / swath))
        xs = g.origin[0] + k * strip + (np.arange(lanes) + 0.5) * strip / lanes
        inset = min(swath / 2.0, h / 2.0)
        ys = (g.origin[1] + inset, g.origin[1] + h - inset)
        pts = []
        for n, x in enumerate(xs):
            a, b = (ys[0], ys[1]) if n % 2 == 0 else (ys[1], ys[0])
            pts += [(x, a), (x, b)]
        return np.array(pts)

    def _search(self, pos: np.ndarray) -> None:
        self.state = "search"
        target = self.route[self.leg % len(self.route)]
        if float(np.hypot(*(target - pos[:2]))) < 3.0:
            self.leg += 1
            if self.leg % len(self.route) == 0:
                self.route = self.route[::-1].copy()
            target = self.route[self.leg % len(self.route)]
        self._fly_to(pos, target, self.ctx.cfg.transit_speed_m_s)

    # -- behaviour --------------------------------------------------------------------------
    def _behave(self) -> None:
        now = self.sim.time_s
        pos = self.sensed_position.copy()
        for m in self.transceiver.receive("long_range"):
            p = m.payload
            if isinstance(p, Assignment) and (
                self.assignment is None or p.seq > self.assignment.seq
            ):
                self.assignment = p
        self.frame = self.camera.frame(self.position, now)  # the image: where the body is
        g = self.ctx.grid
        j0, _, i0, _ = self.frame.window
        jj, ii = np.nonzero(self.frame.hot)
        hot_xy = g.centres(jj + j0, ii + i0)
        if len(jj):
            seen = np.ravel_multi_index((jj + j0, ii + i0), g.shape)
            self.known_hot = np.union1d(self.known_hot, seen)
        arc = self.assignment.arc_of(self.id) if self.assignment is not None else None
        if arc is not None:
            self.spotter = False
            self._track(pos, arc, hot_xy)
        elif self.assignment is not None:  # tracked by others: a spotter, over the whole grid
            if not self.spotter:
                self.spotter = True
                self.route, self.leg = self._search_route(0, 1), 0
            self._search(pos)
        elif len(hot_xy):
            self._follow(pos, hot_xy, self._velocity_heading())
        else:
            self._search(pos)

    def _velocity_heading(self) -> np.ndarray:
        v = self.sensed_velocity[:2]
        return v if float(np.hypot(*v)) > 0.5 else np.array([1.0, 0.0])

    def _half(self, pos: np.ndarray) -> float:
        agl = float(pos[2] - self.ctx.grid.elevation_at(pos[:2]))
        return half_m(agl, self.ctx.thermal.fov_deg)

    def _follow(self, pos: np.ndarray, hot_xy: np.ndarray, heading: np.ndarray) -> None:
        """The seed's rule on the hot cells within `window_m` of the nadir; with none there,
        towards the nearest hot cell in view."""
        win = self.ctx.cfg.window_m
        near = hot_xy[np.max(np.abs(hot_xy - pos[:2]), axis=1) <= win]
        wp = next_waypoint(near, pos, heading, win, self.ctx.cfg.fit) if len(near) else None
        if wp is None:
            d = np.hypot(*(hot_xy - pos[:2]).T)
            wp = hot_xy[int(np.argmin(d))]
        self.state = "track"
        self._fly_to(pos, wp, self.ctx.cfg.speed_m_s)

    def _track(self, pos: np.ndarray, arc: Arc, hot_xy: np.ndarray) -> None:
        assert self.assignment is not None
        c = np.asarray(self.assignment.centroid)
        rel = pos[:2] - c
        r = max(float(np.hypot(*rel)), 1e-6)
        phi = math.atan2(rel[1], rel[0])
        off = arc.offset(phi)
        half = self._half(pos)
        delta = min(math.atan2(half, r), math.pi / 2)  # angular half-width of the footprint
        if len(hot_xy):  # only the hot cells of its own arc (with a footprint's margin)
            ang = np.arctan2(hot_xy[:, 1] - c[1], hot_xy[:, 0] - c[0])
            offs = np.array([arc.offset(a) for a in ang])
            hot_xy = hot_xy[(offs >= -delta) & (offs <= arc.width + delta)]
        inside = 0.0 <= off <= arc.width  # past an end (after a re-balance, or led out along
        # a front that runs away from the arc): back to its middle, not on along that front
        if not len(hot_xy) or not inside:
            self.state = "transit"
            self._fly_to(pos, self._aim(arc), self.ctx.cfg.transit_speed_m_s)
            return
        lo, hi = delta, arc.width - delta
        if lo > hi:  # the arc is narrower than the footprint: hold its middle
            lo = hi = arc.width / 2.0
        if self.sign > 0 and off >= hi:
            self.sign = -1.0
        elif self.sign < 0 and off <= lo:
            self.sign = 1.0
        tangent = self.sign * np.array([-rel[1], rel[0]]) / r  # patrol direction
        self._follow(pos, hot_xy, tangent)

    def _aim(self, arc: Arc) -> np.ndarray:
        """(2,) m: the middle of `arc` on the fire's edge as this UAV knows it. On the ray from
        the centroid through the arc's middle point (the base's perimeter point when it planned
        the arc), the farther of that point and the farthest cell the UAV has itself seen hot
        within `window_m` of the ray (`farthest_along`). A fire only grows outwards, so that
        cell lies on the edge or inside it; the base's point alone goes stale deep inside the
        burnt area when an arc is kept (no re-balancing) while the fire grows."""
        assert self.assignment is not None
        c = np.asarray(self.assignment.centroid)
        to = np.asarray(arc.target) - c
        r = float(np.hypot(*to))
        if r > 1e-6:
            u = to / r
        else:  # a fire of one cell: the arc's middle angle
            mid = arc.lo + arc.width / 2.0
            u = np.array([math.cos(mid), math.sin(mid)])
        g = self.ctx.grid
        seen = g.centres(*np.unravel_index(self.known_hot, g.shape))
        return c + max(r, farthest_along(seen, c, u, self.ctx.cfg.window_m)) * u

    def _fly_to(self, pos: np.ndarray, target: np.ndarray, speed: float) -> None:
        """Position mode towards `target` (2,) m, at most `speed` m/s, `height` above ground."""
        step = np.asarray(target, dtype=float) - pos[:2]
        dist = float(np.hypot(*step))
        reach = speed / self.gain
        if dist > reach:
            step *= reach / dist
        wp = pos[:2] + step
        ground = max(
            float(self.ctx.grid.elevation_at(pos[:2])), float(self.ctx.grid.elevation_at(wp))
        )
        self.goto(float(wp[0]), float(wp[1]), ground + self.height)

    # -- radio ------------------------------------------------------------------------------
    def _report(self) -> None:
        if self.frame is None:
            return
        msg = report_of(self.id, self.sensed_position, self.frame)
        self.transceiver.broadcast(msg, channel="long_range", size_bytes=len(msg.bits) + 40)
