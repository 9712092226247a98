"""Collisions, landings, obstacles, random faults and the numerical guard, on plain bodies.

Crashable boxes stand in for UAVs here so the kernel's rules are tested without a flight stack;
their random faults are a made-up "part failure" (core knows no propellers).
tests/uav/test_uav_faults.py repeats the headline cases with flying quadrotors.
"""

from __future__ import annotations

import numpy as np
import pybullet as pb
import pytest

from skyswarm.core.agent import Agent, PhysicalAgent
from skyswarm.core.collisions import CollisionConfig
from skyswarm.core.config import ObstacleConfig, SimulationConfig, WorldConfig
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.hooks import FaultCapable
from skyswarm.core.simulator import Simulator


class Faulty:
    """FaultCapable: a "part failure" picks one of 4 parts; nothing is modelled physically."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rates: dict[str, float] = {}  # kind -> per hour, set by each test

    def fault_rates(self) -> dict[str, float]:
        return self.rates

    def fault_detail(self, kind: str, rng: np.random.Generator) -> str:
        return f"part {int(rng.integers(0, 4))}" if kind == "part failure" else ""

    def apply_fault(self, kind: str, detail: str) -> bool:
        return False


class Crashable(Faulty, PhysicalAgent):
    role = "uav"
    crashable = True


class Logical(Faulty, Agent):
    pass


def sim_with(
    positions,
    velocities=None,
    gravity=9.81,
    ground=True,
    obstacles=(),
    faults=None,
    seed=0,
    cls=Crashable,
    rates=None,
):
    sim = Simulator(
        SimulationConfig(gravity=gravity, seed=seed),
        WorldConfig(ground=ground, obstacles=tuple(obstacles)),
    )
    w = sim.world
    shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=[0.1] * 3, physicsClientId=w.client)
    bodies = w.create_bodies(1.0, shape, positions)
    agents = [cls(sim, i + 1, s) for i, s in enumerate(w.track(bodies))]
    for body, v in zip(bodies, velocities or []):
        pb.resetBaseVelocity(body, list(v), [0, 0, 0], physicsClientId=w.client)
    for agent in agents:
        agent.rates = dict(rates or {})
    sim.install_faults(faults or FaultsConfig())
    return sim, agents


def run_for(sim, seconds):
    for _ in range(round(seconds / sim.world.tick_s)):
        sim.step()


def test_head_on_collision_kills_both_naming_each_other():
    sim, (a, b, c) = sim_with(
        [(-2, 0, 10), (2, 0, 10), (0, 3, 10)],
        [(3, 0, 0), (-3, 0, 0), (0, 0, 0)],
        gravity=0.0,
        ground=False,
    )
    bodies_before = sim.world.num_bodies
    run_for(sim, 1.0)
    assert not a.alive and not b.alive and c.alive
    assert a.death_cause == "collision: with agent 2"
    assert b.death_cause == "collision: with agent 1"
    assert a.death_time_s == pytest.approx(b.death_time_s) == pytest.approx((4 - 0.2) / 6, abs=0.01)
    assert sim.world.num_bodies == bodies_before - 2  # bodies removed from Bullet
    assert set(sim.world.tracked_slots.tolist()) == {c.slot}
    assert sim.summary()["deaths_by_cause"] == {"collision": 2}


def test_crash_into_ground_kills_but_landing_and_resting_survive():
    resting = [(3.0 + i, 0, 0.1) for i in range(10)]
    sim, agents = sim_with(
        [(0, 0, 2.0), (1.5, 0, 0.3), *resting],
        [(0, 0, -5.0), (0, 0, -0.3)],
        gravity=0.0,
    )
    crasher, lander, rest = agents[0], agents[1], agents[2:]
    run_for(sim, 10.0)
    assert not crasher.alive and crasher.death_cause.startswith("crash: into ground at 5.00 m/s")
    assert lander.alive and lander.position[2] < 0.2  # touched down (no gravity holds it there)
    assert all(r.alive for r in rest)


def test_resting_swarm_is_judged_in_one_vectorised_pass(monkeypatch):
    # 50 bodies resting on the ground (gravity on): 50 ground contacts every tick, no death;
    # the monitor computes tilts once per tick for all of them, never once per agent, and
    # calls the kill path (owner lookups) for no contact at all.
    from skyswarm.core import collisions

    calls = {"tilt": 0, "owner": 0}
    real_tilt = collisions.tilt_deg

    def tilt(q):
        calls["tilt"] += 1
        return real_tilt(q)

    monkeypatch.setattr(collisions, "tilt_deg", tilt)
    sim, agents = sim_with([(i % 10, i // 10, 0.1) for i in range(50)])
    real_owner = sim.world.owner_of_slot

    def owner(slot):
        calls["owner"] += 1
        return real_owner(slot)

    monkeypatch.setattr(sim.world, "owner_of_slot", owner)
    run_for(sim, 0.5)  # 200 ticks
    assert len(sim.world.contacts) == 50
    assert all(a.alive for a in agents)
    assert calls["tilt"] <= 200 and calls["owner"] == 0


def test_vectorised_judgement_kills_in_report_order_with_the_right_causes():
    # Two boxes hit the ground in the same tick at 4 m/s (from 0.4 m: tick 41), a third at
    # 2 m/s 0.1 s later; a fourth comes down at 0.5 m/s and lands. Deaths in slot order within
    # the tick (the report's order), each with its own speed.
    sim, (a, b, c, d) = sim_with(
        [(0, 0, 0.5), (0.25, 0, 0.5), (5, 0, 0.5), (8, 0, 0.3)],
        [(0, 0, -4.0), (0, 0, -4.0), (0, 0, -2.0), (0, 0, -0.5)],
        gravity=0.0,
    )
    run_for(sim, 0.5)
    got = [(e.tick, e.agent_id, e.cause.split(",")[0]) for e in sim.deaths]
    assert got == [
        (41, 1, "crash: into ground at 4.00 m/s"),
        (41, 2, "crash: into ground at 4.00 m/s"),
        (81, 3, "crash: into ground at 2.00 m/s"),
    ]
    assert d.alive and sim.collision_monitor is not None


def test_fast_landing_threshold_is_configurable():
    slow = FaultsConfig(collisions=CollisionConfig(landing_speed_mps=0.2))
    sim, (lander,) = sim_with([(0, 0, 0.3)], [(0, 0, -0.3)], gravity=0.0, faults=slow)
    run_for(sim, 2.0)
    assert not lander.alive and "0.30 m/s" in lander.death_cause


def test_flying_into_a_box_obstacle_kills():
    wall = ObstacleConfig(type="box", center=(5, 0, 5), size=(1, 4, 10))
    sim, (a,) = sim_with([(0, 0, 5)], [(4, 0, 0)], gravity=0.0, obstacles=[wall])
    run_for(sim, 2.0)
    assert not a.alive and a.death_cause.startswith("crash: into obstacle")
    assert a.death_time_s == pytest.approx((4.5 - 0.1) / 4, abs=0.01)


def test_numerical_blow_up_kills_only_that_agent():
    sim, (a, b) = sim_with([(0, 0, 5), (3, 0, 5)], gravity=0.0)
    pb.resetBaseVelocity(
        sim.world.body_of(a.slot), [1e5, 0, 0], [0, 0, 0], physicsClientId=sim.world.client
    )
    sim.step()  # Bullet clamps the body at 100 m/s: the guard sees a body at the clamp
    assert not a.alive and a.death_cause.startswith("numerical: state blew up")
    assert b.alive
    pb.resetBasePositionAndOrientation(
        sim.world.body_of(b.slot), [2e6, 0, 0], [0, 0, 0, 1], physicsClientId=sim.world.client
    )
    sim.step()
    assert not b.alive and "[1999999.9" in b.death_cause


def failure_times(seed, n=200, seconds=10.0, rate_per_hour=36.0):
    sim = Simulator(SimulationConfig(seed=seed), WorldConfig(ground=False))
    for i in range(n):
        Logical(sim, i + 1).rates = {"part failure": rate_per_hour}
    sim.install_faults(FaultsConfig())
    run_for(sim, seconds)
    deaths = [(d.time_s, d.agent_id) for d in sim.deaths]
    assert all(d.cause.startswith("part failure: part ") for d in sim.deaths)
    return deaths


def test_random_failures_match_binomial_and_exponential():
    # 200 agents, 36 per hour = 0.01 per second, 10 s: P(fail) = 1 - e^-0.1.
    from scipy import stats

    p = 1 - np.exp(-0.1)
    lo, hi = stats.binom.interval(0.999, 200, p)
    times = []
    for seed in range(6):
        deaths = failure_times(seed)
        assert lo <= len(deaths) <= hi, (seed, len(deaths), lo, hi)
        times += [t for t, _ in deaths]
    # Failure times within the 10 s window follow the truncated exponential.
    lam, T = 0.01, 10.0
    cdf = lambda t: (1 - np.exp(-lam * np.asarray(t))) / (1 - np.exp(-lam * T))  # noqa: E731
    assert stats.kstest(times, cdf).pvalue > 0.01
    assert failure_times(3) == failure_times(3)  # same seed, same failures
    assert failure_times(3) != failure_times(4)


def test_physical_mode_without_a_model_of_the_fault_kills():
    # This body cannot play any fault out (apply_fault is False): it dies as in kill mode.
    rates = {"part failure": 0.0, "software failure": 3600.0 * 100}
    sim, (a,) = sim_with([(0, 0, 0.1)], faults=FaultsConfig(mode="physical"), rates=rates)
    run_for(sim, 0.5)
    assert isinstance(a, FaultCapable)
    assert not a.alive and a.death_cause.startswith("software failure: at ")
