"""The `flight_plan` mission: each UAV flies its USAL flight plan (missions/flight_plan/plan.py).

Each UAV gets an `Executor` (executor.py) run every `[flight_plan] period_s`. Conditions are
per-UAV named integers, set by a leg's end (`set_condition`, optionally broadcast by radio to
the other UAVs), by a scheduled event (`action = "set_condition"`), by a radio message
(`{"flight_plan": "condition", "name": ..., "value": ...}`) or by the GUI. With the battery
model on, the executor switches to the most severe emergency plan whose `below_endurance_s`
the UAV's endurance (remaining energy / hover power) has fallen under. Events and the GUI also
give Goto / Skip / Pause / Resume.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from skyswarm.core.mission import Mission
from skyswarm.core.schema import param
from skyswarm.missions.flight_plan import geometry as geo
from skyswarm.missions.flight_plan import program as pg
from skyswarm.missions.flight_plan.executor import Executor, Tuning
from skyswarm.missions.flight_plan.loader import FlightPlanConfig, load_plans
from skyswarm.missions.flight_plan.plan import Leg, Plan
from skyswarm.missions.flight_plan.records import MAX_LISTED, capped_append, summary
from skyswarm.uav.config import UavSection
from skyswarm.uav.swarm import Swarm

PLAN_FILE = "flight_plan.json"  # in the results directory: the legs' geometry, per UAV
PATH_COLOR = (0.2, 0.9, 1.0, 0.9)
EMERGENCY_COLOR = (1.0, 0.3, 0.2, 0.9)


@dataclass(frozen=True)
class SetCondition:
    name: str = param(doc="condition name (UAVs whose plan lacks it ignore the event)")
    value: int = param(doc="the value it takes")


@dataclass(frozen=True)
class Goto:
    leg: str = param(doc="id of the leg to fly next")


@dataclass(frozen=True)
class NoParams:
    pass


def _program(plan: Plan) -> pg.Program:
    return pg.compile_legs([(s.kind, s.legs) for s in plan.stages])


class FlightPlan(Mission):
    description = "fly USAL flight plans: stages of legs, holds, scans, conditions, emergencies"
    sections = {"uav": UavSection, "flight_plan": FlightPlanConfig}
    event_actions = {
        "set_condition": SetCondition,
        "goto": Goto,
        "skip": NoParams,
        "pause": NoParams,
        "resume": NoParams,
    }

    @classmethod
    def check_config(cls, scenario: Any) -> None:
        from skyswarm.core.checks import agent_count

        load_plans(scenario, agent_count(scenario.agents))

    def setup(self) -> None:
        cfg: FlightPlanConfig = self.config.section("flight_plan")
        self.cfg = cfg
        self.swarm = Swarm.from_scenario(self.sim, self.config)
        plans = load_plans(self.config, self.swarm.n)
        tuning = Tuning(
            cfg.period_s,
            cfg.window,
            cfg.bank_deg,
            cfg.lookahead_s,
            cfg.lead_s,
            float(self.sim.settings.gravity) or 9.81,
        )
        self.plans = [p for p, _ in plans]
        self.emergency = [
            sorted(p.emergency, key=lambda e: -e.below_endurance_s) for p in self.plans
        ]  # least severe first
        self.condition_log: list[tuple[float, int, str, int, str]] = []  # the first MAX_LOGGED
        self.conditions_set = 0  # every condition set, logged or not
        self.executors: list[Executor] = []
        self._by_id = {}
        for k, (agent, plan) in enumerate(zip(self.swarm.agents, self.plans)):
            ex = Executor(
                agent,
                plan,
                _program(plan),
                plan.condition_defaults,
                tuning,
                lambda: self.sim.time_s,
                self._leg_end,
            )
            self.executors.append(ex)
            self._by_id[agent.id] = ex
            agent.every(cfg.period_s, self._stepper(k), name="flight_plan")
            if agent.transceiver is not None:
                agent.transceiver.on_message = self._receiver(ex)
        self._overlay_key: tuple | None = None
        self._overlays: list[dict[str, Any]] = []
        for ex in self.executors:
            ex.start()

    def _stepper(self, k: int) -> Callable[[], None]:
        ex = self.executors[k]

        def step() -> None:
            self._check_endurance(k)
            ex.step()

        return step

    # -- conditions, messages, events ---------------------------------------------------------
    def set_condition(self, ex: Executor, name: str, value: int, source: str) -> None:
        if ex.set_condition(name, value):
            entry = (self.sim.time_s, int(ex.agent.id), name, int(value), source)
            capped_append(self.condition_log, entry)
            self.conditions_set += 1

    def _leg_end(self, ex: Executor, leg: Leg) -> None:
        if not leg.set_condition:
            return
        self.set_condition(ex, leg.set_condition, leg.set_value, "plan")
        if leg.broadcast and ex.agent.transceiver is not None:
            payload = {
                "flight_plan": "condition",
                "name": leg.set_condition,
                "value": leg.set_value,
            }
            ex.agent.transceiver.broadcast(payload)

    def _receiver(self, ex: Executor) -> Callable[[Any], None]:
        def receive(message: Any) -> None:
            payload = getattr(message, "payload", None)
            if not isinstance(payload, dict) or "flight_plan" not in payload:
                return
            what = payload["flight_plan"]
            if what == "condition":
                self.set_condition(ex, str(payload["name"]), int(payload["value"]), "message")
            else:
                self._command(ex, what, payload.get("leg", ""))

        return receive

    def _command(self, ex: Executor, what: str, leg: str = "") -> None:
        if what == "goto":
            ex.goto(leg)
        elif what in ("skip", "pause", "resume"):
            getattr(ex, what)()

    def _targets(self, targets: list[int]) -> list[Executor]:
        return [self._by_id[t] for t in targets if t in self._by_id] if targets else self.executors

    def on_event(self, action: str, params: Any, targets: list[int]) -> None:
        for ex in self._targets(targets):
            if action == "set_condition":
                self.set_condition(ex, params.name, params.value, "event")
            else:
                self._command(ex, action, getattr(params, "leg", ""))

    # -- endurance ----------------------------------------------------------------------------
    def endurance_s(self) -> np.ndarray:
        """(N,) seconds of flight left at hover power (inf without the battery model)."""
        battery = self.swarm.battery
        if battery is None:
            return np.full(self.swarm.n, np.inf)
        return battery.energy_j / battery.config.hover_power_w

    def _check_endurance(self, k: int) -> None:
        if not self.emergency[k] or self.executors[k].state == "done":
            return
        left = float(self.endurance_s()[k])
        ex = self.executors[k]
        chosen = None
        for em in self.emergency[k]:  # least severe first: the last one triggered wins
            if left < em.below_endurance_s:
                chosen = em
        if chosen is not None and chosen.name != ex.emergency:
            if ex.emergency and self._severity(k, ex.emergency) >= self._severity(k, chosen.name):
                return
            ex.emergency_at = (self.sim.time_s, left)
            ex.switch_program(pg.compile_legs([("emergency", chosen.legs)]), chosen.name)
            entry = (self.sim.time_s, int(ex.agent.id), "emergency", 1, chosen.name)
            capped_append(self.condition_log, entry)
            self.conditions_set += 1

    def _severity(self, k: int, name: str) -> int:
        return [e.name for e in self.emergency[k]].index(name)

    # -- GUI ----------------------------------------------------------------------------------
    def gui_commands(self) -> list[tuple[str, Callable[[int | None], None]]]:
        def each(what: str) -> Callable[[int | None], None]:
            def run(agent_id: int | None) -> None:
                for ex in self._targets([] if agent_id is None else [agent_id]):
                    self._command(ex, what)

            return run

        def next_stage(agent_id: int | None) -> None:
            for ex in self._targets([] if agent_id is None else [agent_id]):
                ex.goto_next_stage()

        def release(agent_id: int | None) -> None:
            for ex in self._targets([] if agent_id is None else [agent_id]):
                leg = ex.current_leg()
                if leg is not None and leg.kind == "HC" and leg.condition:
                    self.set_condition(ex, leg.condition, 0, "gui")

        return [
            ("Skip leg", each("skip")),
            ("Pause plan", each("pause")),
            ("Resume plan", each("resume")),
            ("Go to next stage", next_stage),
            ("Release hold (its condition = 0)", release),
        ]

    def hud(self) -> list[str]:
        lines = []
        for ex in self.executors[:6]:
            where = ""
            if ex.state in ("fly", "takeoff", "waiting", "paused") and not pg.finished(
                ex.prog, ex.cursor
            ):
                ins = ex.prog.instrs[ex.cursor.pc]
                leg = ins.leg
                lap = f" lap {ex.cursor.lap + 1}" if ins.kind in ("HA", "HF", "HC") else ""
                where = f" {ins.stage} {ins.kind} {leg.id if leg else ''}{lap}"
            em = f" EMERGENCY {ex.emergency}" if ex.emergency else ""
            lines.append(f"uav {ex.agent.id}: {ex.state}{where}{em}")
        total = sum(ex.waypoints_passed for ex in self.executors)
        lines.append(f"waypoints passed: {total}")
        return lines

    def overlays(self) -> list[dict[str, Any]]:
        """The path each UAV flies now (current leg and its window), as line segments."""
        key = tuple((id(ex.path), ex.emergency) for ex in self.executors)
        if key != self._overlay_key:
            self._overlay_key = key
            self._overlays = []
            for ex in self.executors:
                pts = geo.polyline(ex.path, 2.0)
                if len(pts) >= 2:
                    segs = np.stack([pts[:-1], pts[1:]], axis=1)
                    color = EMERGENCY_COLOR if ex.emergency else PATH_COLOR
                    self._overlays.append({"segments": segs, "color": color})
        return self._overlays

    def teardown(self) -> None:
        """Write the geometry of every leg flown (per UAV) beside the track, for KML export."""
        recorder = self.sim.recorder
        if recorder is None:
            return
        out = {
            str(ex.agent.id): [
                {"id": leg_id, "kind": kind, "points": np.round(pts, 3).tolist()}
                for leg_id, kind, pts in ex.flown
            ]
            for ex in self.executors
        }
        (recorder.dir / PLAN_FILE).write_text(json.dumps(out), encoding="utf-8")

    # -- outcome and metrics ------------------------------------------------------------------
    def is_done(self) -> bool:
        return all(ex.state == "done" or not ex.agent.alive for ex in self.executors)

    def outcome(self) -> str | None:
        live = [ex for ex in self.executors if ex.agent.alive]
        if not live or not all(ex.state == "done" for ex in live):
            return None
        return "plan exhausted" if any(ex.emergency for ex in live) else "target reached"

    def sample(self) -> dict[str, float]:
        return {
            "waypoints_passed": sum(ex.waypoints_passed for ex in self.executors),
            "emergencies": sum(1 for ex in self.executors if ex.emergency),
        }

    def metrics(self) -> dict[str, Any]:
        per = {str(ex.agent.id): summary(ex) for ex in self.executors}
        straight = [  # samples on the line segments of every leg
            (r.sum_sq_line, r.n_line, r.max_line)
            for ex in self.executors
            for r in (*ex.records, ex.folded)
            if r.n_line
        ]
        n = sum(s[1] for s in straight)
        return {
            "uavs": per,
            "waypoints_passed": sum(ex.waypoints_passed for ex in self.executors),
            "plans_completed": sum(1 for ex in self.executors if ex.state == "done"),
            "emergencies": sum(1 for ex in self.executors if ex.emergency),
            "xte_rms_straight_m": (sum(s[0] for s in straight) / n) ** 0.5 if n else None,
            "xte_max_straight_m": max((s[2] for s in straight), default=None),
            "conditions_set": [list(c) for c in self.condition_log[:MAX_LISTED]],
            "conditions_set_count": self.conditions_set,
        }
