"""Pausing and resuming an owner's tasks: skipped while paused, back on the same phase grid."""

from __future__ import annotations

from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.simulator import Simulator


def test_paused_tasks_skip_and_resume_on_their_phase_grid() -> None:
    sim = Simulator(SimulationConfig(tick_s=0.0025), WorldConfig(ground=False))
    owner, other = object(), object()
    mine: list[int] = []
    theirs: list[int] = []
    sim.every(0.040, lambda: mine.append(sim.tick), phase_s=0.010, owner=owner)  # 16 ticks, +4
    sim.every(0.040, lambda: theirs.append(sim.tick), owner=other)
    for _ in range(30):
        sim.step()
    assert len(sim.tasks.pause_owned_by(owner)) == 1
    for _ in range(40):  # ticks 30..69: tick 36 and 52 skipped
        sim.step()
    sim.tasks.resume_owned_by(owner, sim.tick)  # between steps: tick 70 not yet run
    for _ in range(30):
        sim.step()
    assert mine == [4, 20, 84]  # resumes at 84 = 4 + 5 x 16, not at 70
    assert theirs == [0, 16, 32, 48, 64, 80, 96]


def test_pause_then_resume_before_the_next_run_changes_nothing() -> None:
    sim = Simulator(SimulationConfig(tick_s=0.0025), WorldConfig(ground=False))
    owner = object()
    ran: list[int] = []
    sim.every(0.040, lambda: ran.append(sim.tick), owner=owner)
    sim.step()
    sim.tasks.pause_owned_by(owner)
    sim.tasks.resume_owned_by(owner, sim.tick)  # still queued for tick 16: not doubled
    for _ in range(40):
        sim.step()
    assert ran == [0, 16, 32]
