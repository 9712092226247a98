"""The executor of one UAV: a window of legs ahead of the autopilot, path following, commands.

Every `period_s` (a whole number of ticks) the executor reads the UAV's estimated position,
advances along its path, and commands the existing GroundSpeedAltitudeAndHeading mode (heading
held at the start heading, horizontal velocity along the track plus a correction towards it,
altitude from the track). The path is the geometry of the current leg and of the legs the
sequencer predicts after it (route.py, `build_route`), fly-by turns filleted; it is rebuilt when
a leg ends, when a condition changes (so a condition set at t changes the path at the next
period), and on Goto / Skip / Resume or an emergency plan. Takeoff climbs in Position mode; the
land leg descends at the airframe's land speed (GroundSpeedAndVertSpeed, as the agent's land()
does, but checked by this period and steered back over the fix) and cuts the motors once still
on the ground. A path that ends where the UAV must stop is flown once the UAV passes within
ARRIVED_M of its end or stops there (not when it merely passes the end abeam, off the track).
Pause brakes to a Position hold. Cross-track error (horizontal, m) is sampled every period per
leg.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from skyswarm.missions.flight_plan import geometry as geo
from skyswarm.missions.flight_plan import program as pg
from skyswarm.missions.flight_plan.plan import HOLDS, Leg, Plan
from skyswarm.missions.flight_plan.records import MAX_LOGGED, LegRecord, capped_append
from skyswarm.missions.flight_plan.route import LegShapes, build_route
from skyswarm.uav.agents import AutonomousUavAgent

STOP_DECEL_M_S2 = 1.5  # m/s^2, deceleration towards a point where the path stops
LANDED_S = 0.5  # s stopped after descending: on the ground
ARRIVED_M = 0.3  # m: a stopping point counts as reached; takeoff altitude tolerance
LAND_CORRECT_M_S = 0.5  # m/s, largest horizontal correction while descending to land


@dataclass(frozen=True)
class Tuning:
    period_s: float = 0.05  # s, executor period
    window: int = 3  # legs resolved ahead (current included)
    bank_deg: float = 30.0  # deg, bank for fly-by and fly-over turns
    lookahead_s: float = 0.8  # s: cross-track correction reaches the track over v * this
    lead_s: float = 0.25  # s: arcs are steered by the tangent this far ahead
    g: float = 9.81


@dataclass
class Executor:
    agent: AutonomousUavAgent
    plan: Plan
    prog: pg.Program
    conds: dict[str, int]
    tuning: Tuning
    clock: Any  # () -> simulation time, s
    on_leg_end: Any = None  # (executor, leg) -> None: conditions a leg sets
    state: str = "idle"  # idle, takeoff, fly, landing, waiting, paused, done
    cursor: pg.Cursor = field(default_factory=pg.Cursor)
    path: list[geo.Segment] = field(default_factory=list)
    idx: int = 0
    win: list[pg.Cursor] = field(default_factory=list)
    ends: list[np.ndarray] = field(default_factory=list)
    leg_start: np.ndarray | None = None
    inbound: tuple[np.ndarray, bool] | None = None
    dirty: bool = False
    stop_at_end: bool = True  # the path ends where the UAV must stop (plan end, land, wait)
    emergency: str = ""
    emergency_at: tuple[float, float] | None = None  # (time s, endurance s) when it switched
    heading_deg: float = 0.0
    records: list[LegRecord] = field(default_factory=list)  # the first MAX_LOGGED legs
    folded: LegRecord = field(default_factory=lambda: LegRecord("", "", "", 0.0, legs=0))
    stage_s: dict[str, float] = field(default_factory=dict)
    waypoints_passed: int = 0
    crossings: list[tuple[float, float, float]] = field(default_factory=list)  # fly-over misses
    leg_ends: list[tuple[float, str, str, np.ndarray]] = field(default_factory=list)
    flown: list[tuple[str, str, np.ndarray]] = field(default_factory=list)  # legs' geometry
    _stage: str = ""
    _stage_t0: float = 0.0
    _before_pause: str = ""
    _touch: list = field(default_factory=lambda: [False, 0.0])  # descended, seconds still
    shapes: LegShapes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.shapes = LegShapes(self.plan, self.tuning.bank_deg, self.tuning.g)

    # -- commands -----------------------------------------------------------------------------
    def start(self) -> None:
        self.heading_deg = self.agent.heading_deg
        self.cursor = pg.settle(self.prog, pg.Cursor(), self.conds)
        self._activate(self._position())

    def set_condition(self, name: str, value: int) -> bool:
        """True if the UAV's plan knows the condition; the path is rebuilt at the next period."""
        if name not in self.conds:
            return False
        if self.conds[name] != int(value):
            self.conds[name] = int(value)
            self.dirty = True
        return True

    def goto(self, leg_id: str) -> bool:
        """Fly the leg named `leg_id` next, from where the UAV is."""
        if leg_id not in self.prog.ids or self.state in ("done", "landing"):
            return False
        self._goto_pc(self.prog.ids[leg_id])
        return True

    def goto_next_stage(self) -> None:
        """Leave the current stage: fly the first leg of the next one (or finish)."""
        if self.state in ("done", "landing") or pg.finished(self.prog, self.cursor):
            return
        stage = self.prog.instrs[self.cursor.pc].stage
        later = [
            i for i in range(self.cursor.pc, len(self.prog)) if self.prog.instrs[i].stage != stage
        ]
        self._goto_pc(later[0] if later else len(self.prog))

    def _goto_pc(self, pc: int) -> None:
        self._close_record()
        self.state = "fly" if self.state == "paused" else self.state
        self.cursor = pg.settle(self.prog, replace(self.cursor, pc=pc, lap=0), self.conds)
        self._activate(self._position())

    def skip(self) -> None:
        """End the current leg now (without its condition actions) and go on from here."""
        if self.state in ("fly", "takeoff", "waiting"):
            self._close_record()
            if not self.cursor.waiting and not pg.finished(self.prog, self.cursor):
                self.cursor = pg.after(self.prog, self.cursor, self.conds, interrupted=True)
            self._activate(self._position())

    def pause(self) -> None:
        if self.state in ("fly", "takeoff", "waiting"):
            self._before_pause, self.state = self.state, "paused"
            self._brake()

    def _brake(self) -> None:
        """Hold where a smooth stop ends: the Position target ahead by v / k_p, so the position
        loop's first command is the present velocity (no jerk, no overshoot back)."""
        p, v = self._position(), self.agent.sensed_velocity
        kp = float(self.agent.swarm.config.control.position.kp) or 1.0
        self.agent.goto(
            float(p[0] + v[0] / kp), float(p[1] + v[1] / kp), float(p[2]), self.heading_deg
        )

    def resume(self) -> None:
        if self.state == "paused":
            self.state = self._before_pause
            if self.state == "takeoff":
                self._begin_takeoff()

    def switch_program(self, prog: pg.Program, name: str) -> None:
        """Fly another program (an emergency plan) from where the UAV is."""
        if self.state == "done":
            return
        self._close_record()
        self.prog, self.emergency = prog, name
        self.cursor = pg.settle(prog, pg.Cursor(), self.conds)
        self._activate(self._position())

    # -- the period ---------------------------------------------------------------------------
    def step(self) -> None:
        if self.state in ("done", "paused", "idle") or not self.agent.alive:
            return
        if self.state == "landing":
            self._landing()
            return
        p = self._position()
        if self.dirty:
            self.dirty = False
            self._on_conditions(p)
        if self.state == "takeoff":
            if abs(p[2] - self.shapes.fix_alt(self._leg())) < ARRIVED_M:
                self._complete(p)
        elif self.state == "fly":  # (a condition may have ended the plan or made it wait)
            self._follow(p)

    def _on_conditions(self, p: np.ndarray) -> None:
        if self.state == "waiting":
            self.cursor = pg.settle(self.prog, self.cursor, self.conds)
            if not self.cursor.waiting:
                self._activate(p)
            return
        leg = self._leg()
        if leg.kind == "HC" and pg.hold_done(leg, self.conds):
            self._complete(p, interrupted=True)
        elif self.state == "fly":
            self._rebuild()

    def _follow(self, p: np.ndarray) -> None:
        while True:
            if self.idx >= len(self.path):
                self._path_end(p)
                return
            seg = self.path[self.idx]
            pr = seg.project(p)
            stop_here = self.stop_at_end and self.idx == len(self.path) - 1
            if pr.s < seg.length - 1e-6 or stop_here and not self._near_end(p):
                break  # a stopping end passed abeam but not reached: `_command` brings it back
            self.idx += 1
            if self.idx >= len(self.path) or self.path[self.idx].leg != seg.leg:
                if seg.leg == 0:
                    self._complete(p)
                    if self.state != "fly":
                        return
        seg = self.path[self.idx]
        if seg.leg == 0:
            self.records[-1].add(pr.cross, isinstance(seg, geo.Line))
        self._command(seg, pr, p)

    def _command(self, seg: geo.Segment, pr: geo.Projection, p: np.ndarray) -> None:
        t = pr.tangent
        if isinstance(seg, geo.Arc):
            turn = seg.sense * seg.speed * self.tuning.lead_s / seg.radius
            c, s = math.cos(turn), math.sin(turn)
            t = np.array([c * t[0] - s * t[1], s * t[0] + c * t[1]])
        left = np.array([-t[1], t[0]])
        reach = max(1.0, seg.speed * self.tuning.lookahead_s)
        d = t - left * (pr.cross / reach)
        d /= float(np.hypot(*d))
        remaining = seg.length - pr.s + sum(x.length for x in self.path[self.idx + 1 :])
        if self.stop_at_end:
            if remaining < ARRIVED_M:
                end = self.path[-1].point(self.path[-1].length)
                self.agent.goto(float(end[0]), float(end[1]), float(end[2]), self.heading_deg)
                v = self.agent.sensed_velocity
                if self._near_end(p) and math.hypot(v[0], v[1]) < 0.2:  # stopped there: flown
                    self.idx = len(self.path)
                return
            speed = min(seg.speed, max(0.3, math.sqrt(2 * STOP_DECEL_M_S2 * remaining)))
        else:
            speed = seg.speed
        yaw = self.agent.sensed_yaw
        ex, ey = d * speed
        vx = math.cos(yaw) * ex + math.sin(yaw) * ey
        vy = -math.sin(yaw) * ex + math.cos(yaw) * ey
        self.agent.fly(vx, vy, pr.z, self.heading_deg)

    def _near_end(self, p: np.ndarray) -> bool:
        """Within ARRIVED_M (horizontally) of where the path ends."""
        end = self.path[-1].point(self.path[-1].length)
        return math.hypot(end[0] - p[0], end[1] - p[1]) < ARRIVED_M

    def _path_end(self, p: np.ndarray) -> None:
        """Past the last segment: the current leg (only it is left) ends."""
        if self.path and self.path[-1].leg == 0 or not self.path:
            self._complete(p)

    # -- legs ---------------------------------------------------------------------------------
    def current_leg(self) -> Leg | None:
        """The leg being flown (None when done or waiting at an intersection)."""
        if self.state in ("done", "idle", "waiting") or pg.finished(self.prog, self.cursor):
            return None
        return self.prog.instrs[self.cursor.pc].leg

    def _leg(self) -> Leg:
        leg = self.prog.instrs[self.cursor.pc].leg
        assert leg is not None
        return leg

    def _complete(self, p: np.ndarray, interrupted: bool = False) -> None:
        leg = self._leg()
        if leg.kind == "land" and self.state == "fly":
            self.state = "landing"  # over the fix: descend; the leg ends on the ground
            self._touch = [False, 0.0]
            self._descend()
            return
        self._close_record()
        capped_append(self.leg_ends, (self.clock(), leg.id, leg.kind, p.copy()))
        own = [seg for seg in self.path if seg.leg == 0]
        if own and len(self.flown) < MAX_LOGGED:
            self.flown.append((leg.id, leg.kind, geo.polyline(own, 2.0)))
        if leg.to and leg.kind not in HOLDS or leg.kind == "HF":
            self.waypoints_passed += 1
        if leg.fly_over and leg.to:
            fix = self.shapes.fix(leg)
            capped_append(self.crossings, (self.clock(), *self._miss(fix)))
        if self.on_leg_end is not None and not interrupted:
            self.on_leg_end(self, leg)
        if self.state == "landing":
            self.state = "done"
            self._close_stage()
            return
        end = self.ends[0] if self.ends and not interrupted else p
        seg = [s for s in self.path if s.leg == 0]
        self.inbound = (seg[-1].tangent_end, leg.fly_over) if seg and not interrupted else None
        self.cursor = pg.after(self.prog, self.cursor, self.conds, interrupted)
        self._activate(np.asarray(end, float))

    def _land_speed(self) -> float:
        return float(self.agent.swarm.config.control.land_speed_m_s)

    def _descend(self) -> None:
        """GroundSpeedAndVertSpeed: down at the land speed, drift towards the fix corrected."""
        p, fix = self._position(), self.shapes.fix(self._leg())
        kp = float(self.agent.swarm.config.control.position.kp)
        ex, ey = kp * (fix[0] - p[0]), kp * (fix[1] - p[1])
        scale = min(1.0, LAND_CORRECT_M_S / max(math.hypot(ex, ey), 1e-9))
        ex, ey = ex * scale, ey * scale
        yaw = self.agent.sensed_yaw
        vx = math.cos(yaw) * ex + math.sin(yaw) * ey
        vy = -math.sin(yaw) * ex + math.cos(yaw) * ey
        self.agent.fly_velocity(vx, vy, -self._land_speed())

    def _landing(self) -> None:
        """Descend at the airframe's land speed (as the agent's land() does, but run by this
        period) over the land fix (horizontal drift steered back at the position gain, at most
        `LAND_CORRECT_M_S`); stopped for `LANDED_S` after descending: on the ground, motors
        off."""
        self._descend()
        vz = float(self.agent.sensed_velocity[2])
        self._touch[0] = self._touch[0] or vz < -0.5 * self._land_speed()
        still = self._touch[0] and abs(vz) < 0.05
        self._touch[1] = self._touch[1] + self.tuning.period_s if still else 0.0
        if self._touch[1] >= LANDED_S - 1e-9:
            self.agent.command_manual(0.0, 0.0, 0.0, 0.0)
            self.agent.landed = True
            self._complete(self._position())

    def _miss(self, fix: np.ndarray) -> tuple[float, float]:
        """(horizontal, 3-D) distance of the UAV from a fix, m."""
        d = self._position() - fix
        return float(np.hypot(d[0], d[1])), float(np.linalg.norm(d))

    def _activate(self, start: np.ndarray) -> None:
        """Make the cursor's leg current, starting from `start` (x, y, z)."""
        if pg.finished(self.prog, self.cursor):
            self._finish()
            return
        if self.cursor.waiting:
            self.state = "waiting"
            self.agent.hold()
            return
        ins = self.prog.instrs[self.cursor.pc]
        leg = ins.leg
        assert leg is not None
        if ins.stage != self._stage:
            self._close_stage()
            self._stage, self._stage_t0 = ins.stage, self.clock()
        if len(self.records) >= MAX_LOGGED:  # the last kept record's leg has ended: fold it
            self.folded.absorb(self.records.pop())
        self.records.append(LegRecord(leg.id, leg.kind, ins.stage, self.clock()))
        if leg.kind == "takeoff":
            self.state = "takeoff"
            self._begin_takeoff()
            return
        if leg.kind in ("DF", "IF"):
            start, self.inbound = self._position(), None
        self.leg_start = np.asarray(start, float)
        self.state = "fly"
        self._rebuild(reset=True)

    def _begin_takeoff(self) -> None:
        p = self._position()
        alt = self.shapes.fix_alt(self._leg())
        self.agent.goto(float(p[0]), float(p[1]), alt, self.heading_deg)
        self.ends = [np.array([p[0], p[1], alt])]

    def _finish(self) -> None:
        self._close_stage()
        self.state = "done"
        self.path, self.win = [], []
        self.agent.hold()

    def _close_record(self) -> None:
        if self.records and math.isnan(self.records[-1].end_s):
            self.records[-1].end_s = self.clock()

    def _close_stage(self) -> None:
        if self._stage:
            t = self.clock() - self._stage_t0
            self.stage_s[self._stage] = self.stage_s.get(self._stage, 0.0) + t
            self._stage = ""

    # -- position and path --------------------------------------------------------------------
    def _position(self) -> np.ndarray:
        return np.asarray(self.agent.sensed_position, float).copy()

    def _rebuild(self, reset: bool = False) -> None:
        """Path = the current leg from its start + the predicted legs, junctions smoothed."""
        before = sum(1 for s in self.path[: self.idx] if s.leg == 0)
        route = build_route(
            self.prog,
            self.cursor,
            self.conds,
            self.tuning.window,
            self.shapes,
            self.leg_start,
            self.inbound,
        )
        self.win, self.path, self.ends, self.stop_at_end = route
        if reset:
            self.idx = 0
        else:
            own = [i for i, s in enumerate(self.path) if s.leg == 0]
            self.idx = own[min(before, len(own) - 1)] if own else 0
