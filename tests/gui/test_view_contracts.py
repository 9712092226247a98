"""What the live viewer asks of a mission and of an agent is declared below it: the mission's
commands (keys 1-9) by `core.hooks.ViewSource.gui_commands` (default [] on the Mission base),
the neighbours an agent heard by `core.agent.Agent.heard_from` (default None). Nothing is
discovered by name: an object with a look-alike attribute and no declared method gets nothing.
No window: `mission_commands` and `inspect` are called on stand-ins."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.backends import BodyShape
from skyswarm.core.config import SimulationConfig, load_scenario
from skyswarm.core.hooks import ViewSource
from skyswarm.core.mission import Mission
from skyswarm.core.simulator import Simulator

ROOT = Path(__file__).resolve().parents[2]
NO_FRAME = SimpleNamespace(index_of=lambda agent_id: None, estimates=None)


def _commands(mission: Any) -> tuple[list[tuple[str, Any]], str]:
    from skyswarm.gui.app import ViewerApp  # pyglet, the views (~1 s): not at collection

    app = SimpleNamespace(session=SimpleNamespace(sim=SimpleNamespace(mission=mission)))
    app.command_note = ""
    return ViewerApp.mission_commands(app), app.command_note  # type: ignore[arg-type]


class Commanding:
    """A ViewSource whose every read is recorded (declared or not)."""

    highlight_role = None

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.called: list[int | None] = []

    def __getattribute__(self, name: str) -> Any:
        if not name.startswith("_") and name not in ("reads", "called"):
            object.__getattribute__(self, "reads").append(name)
        return object.__getattribute__(self, name)

    def hud(self) -> list[str]:
        return []

    def overlays(self) -> list[Any]:
        return []

    def role_members(self, role: str) -> list[int]:
        return []

    def group_leaders(self) -> dict[int, int]:
        return {}

    def gui_commands(self) -> list[tuple[str, Callable[[int | None], Any]]]:
        return [(f"cmd {k}", self.called.append) for k in range(12)]


def test_the_viewer_reads_a_missions_commands_through_the_declared_method_only() -> None:
    mission = Commanding()
    assert isinstance(mission, ViewSource)  # (reads every member: forget those)
    mission.reads.clear()
    commands, note = _commands(mission)
    assert [label for label, _ in commands] == [f"cmd {k}" for k in range(9)]  # keys 1..9
    commands[2][1](7)
    assert mission.called == [7] and note == ""
    assert mission.reads == ["gui_commands"]
    assert _commands(None) == ([], "")  # no mission: no commands


def test_a_mission_without_commands_has_the_base_default_and_a_failing_one_is_a_note() -> None:
    class Plain(Mission):
        pass

    assert Plain.gui_commands is Mission.gui_commands
    assert _commands(Plain.__new__(Plain)) == ([], "")

    class Broken(Mission):
        def gui_commands(self) -> list[tuple[str, Callable[[int | None], Any]]]:
            raise KeyError("stage")

    commands, note = _commands(Broken.__new__(Broken))
    assert commands == [] and note == "gui_commands failed: KeyError: 'stage'"


class Listener(PhysicalAgent):
    def __init__(self, sim: Simulator, slot: int, heard: Mapping[int, float] | None) -> None:
        super().__init__(sim, 1, slot)
        self._heard = heard

    def heard_from(self) -> Mapping[int, float] | None:
        return self._heard


class LookAlike(PhysicalAgent):
    """Keeps a `last_heard` table (the name the inspector once looked for) but declares none."""

    def __init__(self, sim: Simulator, slot: int) -> None:
        super().__init__(sim, 2, slot)
        self.last_heard = {1: 0.0}


def test_the_inspector_counts_the_neighbours_an_agent_declares_it_heard() -> None:
    from skyswarm.gui.app import HEARD_WITHIN_S, inspect

    sim = Simulator(SimulationConfig(physics="fast"))
    box = BodyShape(half_extents=(0.1, 0.1, 0.1))
    a, b = (int(s) for s in sim.world.add_bodies(box, 1.0, [(0, 0, 1), (5, 0, 1)]))
    for _ in range(800):  # 2 s
        sim.step()
    now = sim.time_s
    # heard 0.5 s ago, exactly HEARD_WITHIN_S ago (counted), 1.5 s ago, and never since start
    listener = Listener(sim, a, {2: now - 0.5, 3: now - HEARD_WITHIN_S, 4: now - 1.5, 5: 0.0})
    (heard,) = [line for line in inspect(sim, listener, NO_FRAME) if line.startswith("heard")]
    assert heard == f"heard 2 neighbours in {HEARD_WITHIN_S:g} s"
    silent = inspect(sim, LookAlike(sim, b), NO_FRAME)
    assert not any(line.startswith("heard") for line in silent)  # not discovered by name


def test_a_flock_member_declares_what_it_heard(tmp_path: Path) -> None:
    from skyswarm.gui.app import HEARD_WITHIN_S

    scenario = load_scenario(ROOT / "configs/flocking_coverage.toml")
    sim = Simulator.from_scenario(scenario)
    try:
        for _ in range(800):  # 2 s: beacons exchanged
            sim.step()
        members = [a for a in sim.agents.values() if a.heard_from() is not None]
        assert len(members) == 10  # the UAVs of the flock; the base station keeps none
        heard = members[0].heard_from()
        assert heard is members[0].last_heard  # type: ignore[attr-defined]
        assert any(sim.time_s - t <= HEARD_WITHIN_S for t in heard.values())
    finally:
        sim.close()
