"""The phase registries of the Simulator (core/hooks.py): what each one changes, in which order,
and the death listeners; on a free 1 kg box, where one tick of a force F changes the velocity by
exactly F dt / m (Bullet's semi-implicit step)."""

from __future__ import annotations

import pybullet as pb
import pytest

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.faults import DeathEvent
from skyswarm.core.hooks import FaultCapable
from skyswarm.core.simulator import Simulator

DT = 0.0025


def free_box(position=(1.0, 2.0, 3.0)) -> tuple[Simulator, PhysicalAgent]:
    """A 1 kg box in zero gravity, nothing to touch."""
    sim = Simulator(SimulationConfig(tick_s=DT, gravity=0.0), WorldConfig(ground=False))
    w = sim.world
    shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[0.1] * 3, physicsClientId=w.client)
    (body,) = w.create_bodies(1.0, shape, [position])
    (slot,) = w.track([body])
    return sim, PhysicalAgent(sim, 1, slot)


def test_each_registry_acts_in_its_phase_and_stops_when_removed():
    sim, box = free_box()
    log: list[tuple[str, int, float]] = []  # (hook, world tick, vx m/s) as each hook saw it

    def push(s: Simulator) -> None:  # controller: 2 N east
        log.append(("controller", s.tick, float(box.velocity[0])))
        s.world.apply_forces([box.slot], [(2.0, 0.0, 0.0)])

    def headwind(s: Simulator) -> None:  # environment: 0.5 N west
        log.append(("environment", s.tick, float(box.velocity[0])))
        s.world.apply_forces([box.slot], [(-0.5, 0.0, 0.0)])

    sim.add_pre_tick(lambda w: log.append(("pre", w.tick, float(box.velocity[0]))))
    sim.add_controller(push)
    sim.add_environment(headwind)
    sim.add_post_tick(lambda w: log.append(("post", w.tick, float(box.velocity[0]))))
    assert sim.controllers == (push,) and sim.environment_forces == (headwind,)

    sim.step()
    # Pre-tick, control and environment see tick 0 at rest; post-tick sees tick 1 after
    # (2 - 0.5) N * 2.5 ms / 1 kg = 3.75 mm/s.
    assert [(name, tick) for name, tick, _ in log] == [
        ("pre", 0),
        ("controller", 0),
        ("environment", 0),
        ("post", 1),
    ]
    assert [v for *_, v in log[:3]] == [0.0, 0.0, 0.0]
    assert log[3][2] == pytest.approx(1.5 * DT, abs=1e-12)

    sim.remove_environment(headwind)  # only the 2 N push: + 5 mm/s
    sim.step()
    assert box.velocity[0] == pytest.approx(1.5 * DT + 2.0 * DT, abs=1e-12)
    sim.remove_controller(push)  # no force: the box coasts
    sim.step()
    assert box.velocity[0] == pytest.approx(3.5 * DT, abs=1e-12)
    assert [name for name, *_ in log[4:]] == ["pre", "controller", "post", "pre", "post"]
    sim.close()


def test_a_hook_may_remove_itself_while_its_phase_runs():
    sim, _ = free_box()
    calls: list[str] = []

    def once(world) -> None:
        calls.append("once")
        sim.remove_post_tick(once)

    sim.add_post_tick(once)
    sim.add_post_tick(lambda w: calls.append("every"))
    for _ in range(3):
        sim.step()
    assert calls == ["once", "every", "every", "every"]
    sim.close()


def test_death_listener_is_told_once_with_the_event():
    sim, box = free_box(position=(1.0, 2.0, 3.0))
    events: list[DeathEvent] = []
    sim.add_death_listener(events.append)
    for _ in range(4):
        sim.step()
    assert sim.kill(box, "crash: test", detail="why") is True
    assert sim.kill(box, "crash: again") is False  # already dead: nobody is told twice
    (event,) = events
    assert (event.tick, event.time_s, event.agent_id) == (4, 4 * DT, 1)
    assert (event.cause, event.kind, event.detail) == ("crash: test", "crash", "why")
    assert event.position == pytest.approx((1.0, 2.0, 3.0), abs=1e-12)  # at rest, not moved
    assert event.velocity == (0.0, 0.0, 0.0)
    assert sim.deaths == [event]
    sim.remove_death_listener(events.append)
    assert sim.death_listeners == ()
    sim.close()


def test_registries_reject_what_they_cannot_call():
    sim, box = free_box()

    class Monitor:
        def post_tick(self, world) -> None: ...

    with pytest.raises(TypeError, match="post-tick listener .* is not callable"):
        sim.add_post_tick(Monitor())  # type: ignore[arg-type]  # register .post_tick instead
    with pytest.raises(ValueError, match="not a registered controller"):
        sim.remove_controller(lambda s: None)
    # A plain body is no fault-capable agent: the injector has nothing to ask it.
    assert not isinstance(box, FaultCapable)
    with pytest.raises(TypeError, match="not FaultCapable"):
        sim.fault_injector.watch([box])
    sim.close()


@pytest.mark.parametrize("physics", ["bullet", "fast"])
def test_a_closed_simulator_refuses_to_step(physics: str) -> None:
    # Before: Bullet's "Not connected to physics server." from inside pybullet, and the fast
    # engine flew on as if nothing had happened. Closing twice is fine.
    sim = Simulator(SimulationConfig(physics=physics), world=WorldConfig())
    sim.step()
    sim.close()
    with pytest.raises(
        RuntimeError, match=r"Simulator.step\(\) at t = 0.0025 s: the simulator is closed"
    ):
        sim.run(until_s=0.01)
    sim.close()
    assert sim.world.tick == 1


@pytest.mark.parametrize("until", [float("nan"), float("inf"), "1", None])
def test_run_until_a_time_that_is_no_finite_number_is_refused(until) -> None:
    # Before: NaN was "cannot convert float NaN to integer", inf an OverflowError and "1" a
    # TypeError, all from inside the tick arithmetic. None runs the configured duration.
    sim = Simulator(SimulationConfig(physics="fast", duration_s=0.01), world=WorldConfig())
    try:
        if until is None:
            assert sim.run(until_s=until) == "duration" and sim.world.tick == 4
        else:
            with pytest.raises(ValueError, match="expected a finite time in s"):
                sim.run(until_s=until)
            assert sim.world.tick == 0
    finally:
        sim.close()
