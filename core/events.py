"""Scheduled events: a scenario's `[[events]]`, validated at load and fired at their tick.

An event is one table of the array `[[events]]`:

    [[events]]
    at_s = 40.0          # s, a whole number of ticks
    action = "kill"      # a registered action, or one of the mission's `event_actions`
    target = "leader"    # optional: an agent id, a list of ids, "all", "random" or a role

plus the action's own keys in the same table (validated like any config section: each action
declares a frozen dataclass of `param()` fields). Targets:
- an id or a list of ids: those agents (each must exist in the scenario);
- "all": every agent the mission created (physical agents, alive at the event's tick);
- "random": one of those, drawn at the event's tick from the `mission` stream;
- any other name is a role, resolved at the event's tick by `Mission.role_members(role)`
  (e.g. "leader"); nobody holding it makes the event a no-op (recorded as such).

Actions come from three places and are looked up in this order: the mission's own
`event_actions` (`Mission.on_event` applies them), actions a layer above core registered here
with `register_action` (uav/events.py: motor_fault, drain_battery, wind), and the kernel's own:
`kill`, `channel_cut` / `channel_restore` (a channel carries nothing while cut: every copy is out
of range) and `base_station_cut` / `base_station_restore` (the station neither sends nor
receives while cut). This module imports nothing above core.

Events fire in phase 6 (monitors), after the fault injector, in file order among events of the
same tick, so a run with events is as deterministic as one without, headless or viewed. Each
fired event writes one `event` row to events.csv (action, targets, parameters) and is kept in
`EventScheduler.fired` for summary.json.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skyswarm.core.schema import ConfigError, build, did_you_mean, param, ticks_exact

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator

EVENT_KEYS = ("at_s", "action", "target")
TARGET_WORDS = ("all", "random")


@dataclass(frozen=True)
class NoParams:
    """An action without keys of its own."""


@dataclass(frozen=True)
class ChannelParams:
    channel: str = param(doc="name of the channel to cut or restore (a [comms.channels] key)")


@dataclass(frozen=True)
class StationParams:
    station: int = param(doc="id of the base station to cut or restore", ge=0)


@dataclass(frozen=True)
class Action:
    """A registered action: its parameter dataclass, whether it needs a target, what it does
    (`apply(sim, params, agents)`), and an optional load-time check
    (`check(scenario, params, key, file)`, raising ConfigError)."""

    params: type
    needs_target: bool
    apply: Callable[[Simulator, Any, list[Any]], None]
    check: Callable[[ScenarioConfig, Any, str, str], None] | None = None
    doc: str = ""


_ACTIONS: dict[str, Action] = {}


def register_action(
    name: str,
    params: type,
    apply: Callable[[Simulator, Any, list[Any]], None],
    *,
    needs_target: bool,
    check: Callable[[ScenarioConfig, Any, str, str], None] | None = None,
    doc: str = "",
) -> None:
    """Make `name` usable as an event action in every scenario (layers above core call this
    when they are imported; registering a name again replaces it)."""
    _ACTIONS[name] = Action(params, needs_target, apply, check, doc)


def registered_actions() -> dict[str, Action]:
    return dict(_ACTIONS)


_SCENARIO_CHECKS: list[Callable[[ScenarioConfig], None]] = []


def register_scenario_check(check: Callable[[ScenarioConfig], None]) -> None:
    """A whole-scenario check of a layer above core (raising ConfigError), run by
    `validate_scenario` after the mission's, so `skyswarm validate` refuses what `run` would
    (e.g. uav/events.py: `[avoidance]` needs the proximity sensor)."""
    if check not in _SCENARIO_CHECKS:
        _SCENARIO_CHECKS.append(check)


def run_scenario_checks(scenario: ScenarioConfig) -> None:
    for check in _SCENARIO_CHECKS:
        check(scenario)


@dataclass(frozen=True)
class ScheduledEvent:
    """One validated `[[events]]` entry."""

    index: int  # position in the file's array
    at_s: float  # s
    at_tick: int
    action: str
    target: int | tuple[int, ...] | str | None
    params: Any  # the action's parameter dataclass instance
    mission_action: bool  # handled by Mission.on_event

    def as_dict(self) -> dict[str, Any]:
        from skyswarm.core.schema import to_plain

        out: dict[str, Any] = {"at_s": self.at_s, "action": self.action}
        if self.target is not None:
            out["target"] = list(self.target) if isinstance(self.target, tuple) else self.target
        out.update(to_plain(self.params))
        return out


def parse_events(
    raw: Any, file: str, tick_s: float, mission_actions: Mapping[str, type]
) -> tuple[ScheduledEvent, ...]:
    """Validate the `[[events]]` array: times in whole ticks, known actions, target forms, the
    action's keys (one-line ConfigError naming `events[i].key` otherwise). Sorted by tick (file
    order within a tick)."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise ConfigError(file, "events", raw, "an array of tables ([[events]])")
    known = {**{k: None for k in _ACTIONS}, **{k: None for k in mission_actions}}
    out = []
    for i, table in enumerate(raw):
        key = f"events[{i}]"
        if not isinstance(table, Mapping):
            raise ConfigError(file, key, table, "a table with at_s and action")
        at_s = table.get("at_s", dataclasses.MISSING)
        if at_s is dataclasses.MISSING:
            raise ConfigError(file, f"{key}.at_s", at_s, "a time in s (>= 0)")
        if isinstance(at_s, bool) or not isinstance(at_s, int | float) or not at_s >= 0:
            raise ConfigError(file, f"{key}.at_s", at_s, "a time in s (>= 0)")
        if at_s > 1e6:
            raise ConfigError(file, f"{key}.at_s", at_s, "a time of at most 1e6 s")
        ticks = ticks_exact(float(at_s), tick_s)
        if ticks is None:
            raise ConfigError(file, f"{key}.at_s", at_s, f"a whole number of {tick_s} s ticks")
        action = table.get("action", dataclasses.MISSING)
        if not isinstance(action, str) or action not in known:
            names = ", ".join(sorted(known))
            hint = did_you_mean(action, known) if isinstance(action, str) else ""
            raise ConfigError(file, f"{key}.action", action, f"one of {names}{hint}")
        mission_action = action in mission_actions
        params_cls = mission_actions[action] if mission_action else _ACTIONS[action].params
        target = _target(table.get("target"), f"{key}.target", file)
        if not mission_action and _ACTIONS[action].needs_target and target is None:
            raise ConfigError(
                file, f"{key}.target", dataclasses.MISSING, f"a target for action {action!r}"
            )
        if not mission_action and not _ACTIONS[action].needs_target and target is not None:
            raise ConfigError(file, f"{key}.target", target, f"no target: {action!r} takes none")
        rest = {k: v for k, v in table.items() if k not in EVENT_KEYS}
        params = build(params_cls, rest, key, file)
        out.append(ScheduledEvent(i, float(at_s), ticks, action, target, params, mission_action))
    return tuple(sorted(out, key=lambda e: (e.at_tick, e.index)))


def _target(value: Any, key: str, file: str) -> int | tuple[int, ...] | str | None:
    expected = "an agent id, a list of ids, 'all', 'random' or a role name such as 'leader'"
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(file, key, value, expected)
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(file, key, value, expected)
        return value
    if isinstance(value, str):
        if not value.isidentifier():
            raise ConfigError(file, key, value, expected)
        return value
    if isinstance(value, list | tuple):
        if not value or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ConfigError(file, key, value, "a non-empty list of agent ids")
        if any(v < 0 for v in value) or len(set(value)) != len(value):
            raise ConfigError(file, key, value, "distinct agent ids (>= 0)")
        return tuple(value)
    raise ConfigError(file, key, value, expected)


def check_events(scenario: ScenarioConfig) -> None:
    """Checks that need the whole scenario: target ids exist, channels and stations exist,
    the registered actions' own checks (e.g. wind needs [wind] enabled)."""
    file = scenario.file
    ids = {s.id for s in scenario.agents.resolved()}
    stations = {b.id for b in scenario.comms.base_stations}
    channels = set(scenario.comms.channels)
    for ev in scenario.events:
        key = f"events[{ev.index}]"
        wanted = (ev.target,) if isinstance(ev.target, int) else ev.target
        if isinstance(wanted, tuple):
            for agent_id in wanted:
                if agent_id not in ids:
                    raise ConfigError(
                        file, f"{key}.target", ev.target, "ids of the scenario's agents"
                    )
        if ev.mission_action:
            continue
        if isinstance(ev.params, ChannelParams) and ev.params.channel not in channels:
            names = ", ".join(sorted(channels))
            raise ConfigError(file, f"{key}.channel", ev.params.channel, f"one of {names}")
        if isinstance(ev.params, StationParams) and ev.params.station not in stations:
            raise ConfigError(
                file, f"{key}.station", ev.params.station, "the id of a [[comms.base_stations]]"
            )
        check = _ACTIONS[ev.action].check
        if check is not None:
            check(scenario, ev.params, key, file)


# -- the kernel's own actions ------------------------------------------------------------------
def _kill(sim: Simulator, params: Any, agents: list[Any]) -> None:
    for agent in agents:
        sim.kill(agent, f"event: kill at {sim.time_s:.3f} s")


def _channel(down: bool) -> Callable[[Simulator, Any, list[Any]], None]:
    def apply(sim: Simulator, params: ChannelParams, agents: list[Any]) -> None:
        sim.dispatcher.set_channel_enabled(params.channel, not down)

    return apply


def _station(down: bool) -> Callable[[Simulator, Any, list[Any]], None]:
    def apply(sim: Simulator, params: StationParams, agents: list[Any]) -> None:
        sim.dispatcher.set_down(params.station, down)

    return apply


register_action("kill", NoParams, _kill, needs_target=True, doc="kill the target agents")
register_action(
    "channel_cut", ChannelParams, _channel(True), needs_target=False, doc="a channel goes dead"
)
register_action(
    "channel_restore", ChannelParams, _channel(False), needs_target=False, doc="back on the air"
)
register_action(
    "base_station_cut",
    StationParams,
    _station(True),
    needs_target=False,
    doc="a base station neither sends nor receives",
)
register_action(
    "base_station_restore",
    StationParams,
    _station(False),
    needs_target=False,
    doc="a cut base station is back",
)


# -- run time ----------------------------------------------------------------------------------
class EventScheduler:
    """Phase-6 listener that fires the scenario's events at their ticks."""

    def __init__(self, sim: Simulator, events: Sequence[ScheduledEvent]) -> None:
        self.sim = sim
        self.events = list(events)
        self._k = 0
        self.fired: list[dict[str, Any]] = []

    @property
    def _next_tick(self) -> float:
        return self.events[self._k].at_tick if self._k < len(self.events) else float("inf")

    def post_tick(self, world: World) -> None:
        while world.tick >= self._next_tick:
            ev = self.events[self._k]
            self._k += 1
            self.fire(ev)

    def _candidates(self) -> list[Any]:
        from skyswarm.core.agent import PhysicalAgent

        return [a for a in self.sim.agents.values() if isinstance(a, PhysicalAgent) and a.alive]

    def targets(self, ev: ScheduledEvent) -> list[Any]:
        """The live agents `ev.target` names now (id order, except as listed)."""
        sim, t = self.sim, ev.target
        if t is None:
            return []
        if isinstance(t, int):
            ids: Sequence[int] = (t,)
        elif isinstance(t, tuple):
            ids = t
        elif t == "all":
            return self._candidates()
        elif t == "random":
            pool = sorted(self._candidates(), key=lambda a: a.id)
            if not pool:
                return []
            return [pool[int(sim.rng.mission.integers(0, len(pool)))]]
        else:
            mission = sim.mission
            ids = sorted(mission.role_members(t)) if mission is not None else []
        return [sim.agents[i] for i in ids if i in sim.agents and sim.agents[i].alive]

    def fire(self, ev: ScheduledEvent) -> None:
        sim = self.sim
        agents = self.targets(ev)
        ids = [int(a.id) for a in agents]
        params = {k: v for k, v in ev.as_dict().items() if k not in EVENT_KEYS}
        record = {"time_s": sim.time_s, "action": ev.action, "targets": ids, **params}
        if ev.target is not None:
            record["target"] = ev.as_dict()["target"]
        self.fired.append(record)
        if sim.recorder is not None:
            detail = " ".join(f"{k}={v}" for k, v in params.items())
            who = ",".join(map(str, ids)) if ids else ("-" if ev.target is not None else "")
            sim.recorder.event(
                "event",
                ids[0] if len(ids) == 1 else None,
                f"{ev.action} {who}".strip(),
                None,
                detail,
            )
        if ev.target is not None and not ids:
            return  # nobody to act on (dead, or nobody holds the role): recorded, no effect
        if ev.mission_action:
            assert sim.mission is not None
            sim.mission.on_event(ev.action, ev.params, ids)
        else:
            _ACTIONS[ev.action].apply(sim, ev.params, agents)


def install_events(sim: Simulator, events: Sequence[ScheduledEvent]) -> EventScheduler | None:
    """The scheduler as a post-tick listener (none without events: nothing changes)."""
    if not events:
        return None
    scheduler = EventScheduler(sim, events)
    sim.add_post_tick(scheduler.post_tick)
    return scheduler
