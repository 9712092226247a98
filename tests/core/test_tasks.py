"""Periodic tasks: exact tick schedule, phase, rejection of non-integer periods, statistics."""

from __future__ import annotations

import time

import pytest

from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.simulator import Simulator


def bare_sim() -> Simulator:
    return Simulator(SimulationConfig(tick_s=0.0025), WorldConfig(ground=False))


def test_40ms_task_runs_every_16_ticks_with_its_phase():
    sim = bare_sim()
    ticks: list[int] = []
    phased: list[int] = []
    sim.every(0.040, lambda: ticks.append(sim.tick))
    sim.every(0.040, lambda: phased.append(sim.tick), phase_s=0.010)
    for _ in range(100):
        sim.step()
    assert ticks == [0, 16, 32, 48, 64, 80, 96]
    assert phased == [4, 20, 36, 52, 68, 84]  # 10 ms phase = 4 ticks


@pytest.mark.parametrize("period", [0.001, 0.0030, 0.0])
def test_period_that_is_not_whole_ticks_is_rejected(period):
    sim = bare_sim()
    with pytest.raises(ValueError, match="tick"):
        sim.every(period, lambda: None)


def test_tasks_due_on_the_same_tick_run_in_registration_order():
    sim = bare_sim()
    order: list[str] = []
    sim.every(0.005, lambda: order.append("b-fast"))
    sim.every(0.010, lambda: order.append("a-slow"))
    for _ in range(3):
        sim.step()
    assert order == ["b-fast", "a-slow", "b-fast"]


def test_task_added_later_starts_on_its_next_phase_tick():
    sim = bare_sim()
    for _ in range(10):
        sim.step()
    ticks: list[int] = []
    sim.every(0.010, lambda: ticks.append(sim.tick))  # 4-tick period, phase 0
    for _ in range(10):
        sim.step()
    assert ticks == [12, 16]


def test_statistics_and_deadline_misses_in_summary():
    sim = bare_sim()
    sim.every(0.010, lambda: time.sleep(0.002), deadline_s=0.001, name="slow")
    sim.every(0.010, lambda: None, deadline_s=0.5, name="quick")
    for _ in range(40):
        sim.step()
    stats = sim.summary()["tasks"]
    assert stats["slow"]["runs"] == 10
    assert stats["slow"]["deadline_misses"] == 10
    assert stats["slow"]["mean_ms"] >= 2.0
    assert stats["slow"]["max_ms"] >= stats["slow"]["mean_ms"]
    assert stats["quick"]["deadline_misses"] == 0


def test_cancelled_task_stops():
    sim = bare_sim()
    ran: list[int] = []
    task = sim.every(0.0025, lambda: ran.append(sim.tick))
    sim.step()
    sim.step()
    task.cancel()
    sim.step()
    assert ran == [0, 1]


def test_task_started_inside_a_task_on_its_own_grid_runs_that_tick_and_after():
    """`agent.land()` called from a 10 Hz behaviour at tick 40 starts a 10 Hz touchdown check:
    tick 40 is on the new task's grid, so it runs at 40 (its first tick >= now), then every 40
    ticks — it must not be dropped into the bucket already popped for tick 40."""
    sim = bare_sim()
    inner: list[int] = []

    def outer() -> None:
        if sim.tick == 40:
            sim.every(0.1, lambda: inner.append(sim.tick))

    sim.every(0.1, outer)
    for _ in range(130):
        sim.step()
    assert inner == [40, 80, 120]
