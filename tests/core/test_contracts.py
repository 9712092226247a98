"""Core reads nothing of the floors above it but what a core Protocol or base class declares.

The timeline (core/timeline.py), the scheduled events (core/events.py) and the fate decision
(core/comms/fates.py) are run against watched objects: every attribute read while they run is
recorded, and a read of a name the contract does not declare fails the test, even one made by
`getattr(obj, "name", None)` discovery (the read is recorded before the default is returned).
The contracts: `core.hooks.ViewSource` (a mission, as the views see it), the `Agent` /
`PhysicalAgent` base classes (an agent), `core.hooks.EstimateSource` (a group with a state
estimate), the dispatcher's public methods (events) and `core.comms.fates.FateSink` (fates).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import skyswarm.core.comms.dispatcher as dispatcher_module
from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.backends import BodyShape
from skyswarm.core.comms.channels import CommsConfig
from skyswarm.core.comms.dispatcher import attach_comms
from skyswarm.core.comms.fates import FateSink
from skyswarm.core.config import SimulationConfig
from skyswarm.core.events import ChannelParams, StationParams, registered_actions
from skyswarm.core.hooks import EstimateSource, ViewSource
from skyswarm.core.overlays import Lines, Quads, as_overlay
from skyswarm.core.simulator import Simulator
from skyswarm.core.timeline import Timeline, read_timeline

BOX = BodyShape(half_extents=(0.1, 0.1, 0.1))
READS: list[tuple[str, str]] = []  # (contract, name) of every undeclared read while watching
_watching = False


@contextmanager
def watching() -> Iterator[list[tuple[str, str]]]:
    """Record undeclared reads made inside the block (set-up code outside it is not core's)."""
    global _watching
    READS.clear()
    _watching = True
    try:
        yield READS
    finally:
        _watching = False


def declared(protocol: type) -> frozenset[str]:
    """The members a Protocol declares: its methods and annotated attributes."""
    names = {n for n in vars(protocol) if not n.startswith("_")}
    return frozenset(names | set(protocol.__annotations__))


def _check(contract: str, allowed: frozenset[str], name: str) -> None:
    dunder = name.startswith("__") and name.endswith("__")
    if _watching and not dunder and name not in allowed and not name.startswith("_t_"):
        READS.append((contract, name))


# -- watched objects: what the test builds keeps its own data under `_t_` names --------------
def _agent_api() -> frozenset[str]:
    """What core's Agent / PhysicalAgent declare: class members and the attributes their
    __init__ sets (read off a real PhysicalAgent)."""
    sim = Simulator(SimulationConfig(physics="fast"))
    (slot,) = sim.world.add_bodies(BOX, 1.0, [(0.0, 0.0, 1.0)])
    plain = PhysicalAgent(sim, 0, slot)
    return frozenset(n for n in dir(PhysicalAgent) if not n.startswith("_")) | frozenset(
        n for n in vars(plain) if not n.startswith("_")
    )


AGENT_API = _agent_api()


class WatchedAgent(PhysicalAgent):
    def __init__(self, sim: Simulator, agent_id: int, slot: int, mode: str, row: Any) -> None:
        self._t_mode, self._t_row = mode, row
        super().__init__(sim, agent_id, slot)

    def __getattribute__(self, name: str) -> Any:
        _check("Agent", AGENT_API, name)
        return object.__getattribute__(self, name)

    def mode_name(self) -> str:
        return self._t_mode

    def estimate_row(self) -> Any:
        return self._t_row


class WatchedGroup:
    """An EstimateSource: estimate = truth + a fixed offset per row, a fixed GPS error."""

    def __init__(self, sim: Simulator, slots: list[int], offset: Any, gps: Any) -> None:
        self._t_sim, self._t_slots, self._t_offset, self._t_gps = sim, slots, offset, gps

    def __getattribute__(self, name: str) -> Any:
        _check("EstimateSource", declared(EstimateSource), name)
        return object.__getattribute__(self, name)

    def estimated_positions(self) -> np.ndarray | None:
        if self._t_offset is None:
            return None
        return self._t_sim.world.state.position[self._t_slots] + self._t_offset

    def gps_errors(self) -> np.ndarray | None:
        return self._t_gps


class WatchedMission:
    """A ViewSource and nothing else (no Mission base: nothing inherited to lean on)."""

    highlight_role = "scout"

    def __init__(self) -> None:
        self._t_calls = 0

    def __getattribute__(self, name: str) -> Any:
        _check("ViewSource", declared(ViewSource), name)
        return object.__getattribute__(self, name)

    def hud(self) -> list[str]:
        return ["found 3"]

    def overlays(self) -> list[dict[str, Any]]:
        return [{"segments": np.array([[[0, 0, 0], [1, 2, 3]]]), "color": (1.0, 0.5, 0.0, 1.0)}]

    def role_members(self, role: str) -> list[int]:
        return [3, 1] if role == "scout" else [99]

    def group_leaders(self) -> dict[int, int]:
        return {3: 1, 1: 1, 2: 1}

    def gui_commands(self) -> list[Any]:
        return []  # the live viewer's; the timeline never asks


def test_the_watch_catches_getattr_discovery_and_lets_declared_reads_through() -> None:
    mission = WatchedMission()
    with watching() as reads:
        assert getattr(mission, "sensors", None) is None  # discovery by default: still recorded
        mission.hud()
        _ = mission.highlight_role
    assert reads == [("ViewSource", "sensors")]


def test_timeline_reads_only_the_declared_contracts(tmp_path: Path) -> None:
    sim = Simulator(SimulationConfig(physics="fast", tick_s=0.0025))
    slots = [int(s) for s in sim.world.add_bodies(BOX, 1.0, [(0, 0, 5), (4, 0, 5), (8, 0, 5)])]
    offset = np.array([[0.5, 0.0, 0.0], [0.0, -0.25, 1.0]])  # by group row
    gps = np.array([[0.125, 0.0, 0.0], [0.0, 0.0, -2.0]])
    group = WatchedGroup(sim, [slots[1], slots[0]], offset, gps)  # agent 1 is row 1, agent 2 row 0
    WatchedAgent(sim, 1, slots[0], "HOVER", (group, 1))
    WatchedAgent(sim, 2, slots[1], "POSITION", (group, 0))
    WatchedAgent(sim, 3, slots[2], "-", None)  # flies on the truth: no estimate
    sim.mission = WatchedMission()  # type: ignore[assignment]  # a ViewSource, no more
    with watching() as reads:
        timeline = Timeline(tmp_path, sim)  # samples the start: tick 0; no recorder: looks
        for _ in range(200):  # every tick; nothing changes: one more sample, the estimates' at 200
            sim.step()
            timeline.post_tick(sim.world)
    assert reads == []
    samples = read_timeline(tmp_path)
    assert [s["tick"] for s in samples] == [0, 200]
    sample = samples[-1]
    assert sample["hud"] == ["found 3"]
    assert sample["modes"] == {"1": "HOVER", "2": "POSITION", "3": "-"}
    assert sample["leaders"] == [1, 3]  # role_members("scout"), sorted
    assert sample["highlight"] == "scout"
    assert sample["groups"] == {"1": 1, "2": 1, "3": 1}  # group_leaders(), by id
    (ov,) = sample["overlays"]
    assert ov["kind"] == "segments" and ov["data"].tolist() == [[[0, 0, 0], [1, 2, 3]]]
    est = sample["estimates"]
    assert est["ids"].tolist() == [1, 2]  # agent order; agent 3 has no estimate
    # agent 1 is the group's row 1: offset (0, -0.25, 1), GPS error (0, 0, -2); exact in float32
    assert est["estimate_offset"].tolist() == [[0.0, -0.25, 1.0], [0.5, 0.0, 0.0]]
    assert est["gps_error"].tolist() == [[0.0, 0.0, -2.0], [0.125, 0.0, 0.0]]
    # The start sample holds the same fields, read the same way (the watched objects do not
    # change: equal values); the estimate sample at 200 wrote nothing else again.
    start = samples[0]
    assert {k: v for k, v in start.items() if k not in ("tick", "overlays", "estimates")} == {
        k: v for k, v in sample.items() if k not in ("tick", "overlays", "estimates")
    }
    assert start["overlays"] is sample["overlays"]
    assert start["estimates"]["estimate_offset"].tolist() == est["estimate_offset"].tolist()
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert sorted(rows[1]) == ["estimates", "tick"]


def test_a_group_without_an_estimate_records_none_and_no_highlight_role_records_no_ids(
    tmp_path: Path,
) -> None:
    sim = Simulator(SimulationConfig(physics="fast"))
    (slot,) = sim.world.add_bodies(BOX, 1.0, [(0, 0, 5)])
    WatchedAgent(sim, 1, slot, "HOVER", (WatchedGroup(sim, [slot], None, None), 0))
    mission = WatchedMission()
    object.__setattr__(mission, "highlight_role", None)
    sim.mission = mission  # type: ignore[assignment]
    with watching() as reads:
        timeline = Timeline(tmp_path, sim, period_s=0.0025)
        sim.step()
        timeline.post_tick(sim.world)
    assert reads == []
    samples = read_timeline(tmp_path)
    assert [s["tick"] for s in samples] == [0]  # no estimate, no change: no sample at tick 1
    for sample in samples:
        assert sample["leaders"] == [] and "estimates" not in sample  # role_members never asked


class LookalikeOverlay:
    """An overlay item of an undeclared type that has the right attribute names: core must
    refuse it by type, never read `segments` / `color` off it by name."""

    segments = np.zeros((1, 2, 3))
    color = (1.0, 0.0, 0.0, 1.0)

    def __getattribute__(self, name: str) -> Any:
        _check("Overlay", frozenset(), name)
        return object.__getattribute__(self, name)


class OverlayMission(WatchedMission):
    def __init__(self, items: list[Any]) -> None:
        super().__init__()
        self._t_items = items

    def overlays(self) -> list[Any]:
        return self._t_items


def _one_sample(tmp_path: Path, items: list[Any]) -> dict[str, Any]:
    sim = Simulator(SimulationConfig(physics="fast"))
    sim.mission = OverlayMission(items)  # type: ignore[assignment]
    timeline = Timeline(tmp_path, sim, period_s=0.0025)  # samples tick 0
    sim.step()
    timeline.post_tick(sim.world)
    (sample,) = read_timeline(tmp_path)  # the same items at tick 1: no second sample
    return sample


def test_overlay_items_are_read_by_declared_type_and_a_lookalike_is_refused_unread(
    tmp_path: Path,
) -> None:
    seg = np.array([[[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]])
    quad = np.arange(12.0).reshape(1, 4, 3)
    items = [
        {"segments": seg},  # no colour: Lines' default, recorded as such
        {"corners": quad, "color": [0.0, 1.0, 0.0, 0.5]},
        Lines(seg * 2, (0.0, 0.0, 1.0, 1.0)),
        Quads(quad),
        {"text": "neither key"},  # skipped
    ]
    with watching() as reads:
        sample = _one_sample(tmp_path / "ok", items)
    assert reads == []
    got = [(ov["kind"], ov["color"], ov["data"].tolist()) for ov in sample["overlays"]]
    assert got == [
        ("segments", (1.0, 1.0, 1.0, 1.0), seg.tolist()),
        ("corners", (0.0, 1.0, 0.0, 0.5), quad.tolist()),
        ("segments", (0.0, 0.0, 1.0, 1.0), (seg * 2).tolist()),
        ("corners", (0.2, 0.6, 1.0, 0.35), quad.tolist()),  # Quads' default
    ]
    with (
        watching() as reads,
        pytest.raises(TypeError, match="LookalikeOverlay: expected a mapping"),
    ):
        _one_sample(tmp_path / "bad", [LookalikeOverlay()])
    assert reads == []  # refused by its type: not one of its attributes read


def test_a_replay_draws_what_the_live_view_draws_colourless_items_included() -> None:
    # The live view and the timeline read items through the one `as_overlay`; a timeline written
    # before colours were resolved holds [] for "no colour": it too gets the type's default.
    live = as_overlay({"segments": np.zeros((2, 2, 3))})
    assert isinstance(live, Lines) and live.color == (1.0, 1.0, 1.0, 1.0)
    old = as_overlay({"corners": np.zeros((1, 4, 3)), "color": ()})
    assert isinstance(old, Quads) and old.color == Quads(np.zeros((1, 4, 3))).color
    assert as_overlay({"color": (1, 1, 1, 1)}) is None
    with pytest.raises(ValueError, match=r"overlay color \(1, 0, 0\): expected 4 floats"):
        as_overlay({"segments": np.zeros((1, 2, 3)), "color": (1, 0, 0)})


class WatchedDispatcher:
    """Forwards only the dispatcher's declared methods; any other read is recorded and any
    write refused (channels are switched through their dispatcher, never written into)."""

    API = frozenset({"set_channel_enabled", "set_down"})

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_t_real", real)

    def __getattribute__(self, name: str) -> Any:
        _check("MessageDispatcher", WatchedDispatcher.API, name)
        if name.startswith("_t_"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "_t_real"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AssertionError(f"core wrote dispatcher.{name}")


def test_channel_and_station_events_use_only_dispatcher_methods() -> None:
    sim = Simulator(SimulationConfig(physics="fast"))
    station = {"id": 0, "position": [0.0, 0.0, 2.0]}
    comms = {"channels": {"radio": {"range_m": 120.0}}, "base_stations": [station]}
    d = attach_comms(sim, CommsConfig.from_dict(comms))
    real = sim.dispatcher
    sim.dispatcher = WatchedDispatcher(real)  # type: ignore[assignment]
    actions = registered_actions()
    with watching() as reads:
        actions["channel_cut"].apply(sim, ChannelParams("radio"), [])
        cut_range = d.channels[0].range_m
        actions["base_station_cut"].apply(sim, StationParams(0), [])
        cut_down = set(d.down)
        actions["channel_restore"].apply(sim, ChannelParams("radio"), [])
        actions["base_station_restore"].apply(sim, StationParams(0), [])
    assert reads == []
    assert cut_range == 0.0 and d.channels[0].range_m == 120.0  # off: nobody in range; back
    assert cut_down == {d.index_of[0]} and d.down == set()
    with pytest.raises(ValueError, match="no channel 'wifi'"):
        real.set_channel_enabled("wifi", False)


class WatchedSink:
    """A FateSink view of a real dispatcher: forwards only what FateSink declares."""

    def __init__(self, real: Any) -> None:
        object.__setattr__(self, "_t_real", real)

    def __getattribute__(self, name: str) -> Any:
        _check("FateSink", declared(FateSink), name)
        if name.startswith("_t_"):
            return object.__getattribute__(self, name)
        return getattr(object.__getattribute__(self, "_t_real"), name)


def _comms_run(watch: bool, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, int]]:
    """Ten agents on a line 15 m apart, each broadcasting every 10 ms for 1 s on a lossy 50 m
    radio with a bandwidth cap: every fate but queue overflow happens."""
    if watch:
        resolve = dispatcher_module.resolve
        monkeypatch.setattr(dispatcher_module, "resolve", lambda d, *a: resolve(WatchedSink(d), *a))
    sim = Simulator(SimulationConfig(physics="fast", seed=7, gravity=0.0))  # bodies stay put
    radio = {"range_m": 50.0, "loss": 0.2, "jitter_s": 0.005, "bandwidth_bytes_per_s": 1000}
    attach_comms(sim, CommsConfig.from_dict({"channels": {"radio": radio}}))
    positions = [(15.0 * i, 0.0, 50.0) for i in range(10)]
    slots = sim.world.add_bodies(BOX, 1.0, positions)
    agents = [PhysicalAgent(sim, i + 1, int(s)) for i, s in enumerate(slots)]
    for a in agents:
        a.every(0.01, lambda a=a: a.transceiver.broadcast(a.id, size_bytes=40))
    agents[3].every(0.05, lambda: agents[3].transceiver.send(agents[4], "hi"))
    agents[8].every(0.05, lambda: agents[8].transceiver.send(agents[9], "hi"))  # to the dead
    sim.kill(agents[9], "test")
    for _ in range(400):
        sim.step()
    assert sim.dispatcher is not None
    return sim.dispatcher.totals()


def test_fates_use_only_the_fate_sink_and_decide_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _comms_run(False, monkeypatch)
    with watching() as reads:
        watched = _comms_run(True, monkeypatch)
    assert reads == []
    assert watched == plain
    radio = plain["radio"]
    for fate in ("delivered", "out_of_range", "lost_on_air", "over_bandwidth", "receiver_dead"):
        assert radio[fate] > 0, fate  # the run exercises every branch of resolve()
