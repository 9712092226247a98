"""Issue 5 with flying quadrotors: collisions, landings, obstacles, random and physical faults,
software faults and what a kill leaves behind (tests/core/test_faults.py covers the rules on
plain bodies)."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.collisions import CollisionConfig
from skyswarm.core.comms.dispatcher import attach_comms
from skyswarm.core.config import ObstacleConfig, SimulationConfig, WorldConfig, validate_scenario
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.hooks import FaultCapable
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import RandomStreams, Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.faults import FaultRates
from skyswarm.uav.swarm import Swarm


def swarm_sim(
    positions,
    faults=None,
    hovering=True,
    obstacles=(),
    seed=0,
    yaws=None,
    rates=None,
    battery=None,
    config=CONFIG,
):
    """A swarm of the default airframe with `rates` ([uav.fault_rates]) and `battery`
    ([uav.battery]), and the faults installed as a scenario run installs them."""
    sim = Simulator(SimulationConfig(seed=seed), WorldConfig(obstacles=tuple(obstacles)))
    positions = np.asarray(positions, dtype=float)
    yaws = np.zeros(len(positions)) if yaws is None else np.asarray(yaws)
    if rates is not None:
        config = dataclasses.replace(config, fault_rates=rates)
    if battery is not None:
        config = dataclasses.replace(config, battery=battery)
    swarm = Swarm(sim, config, range(1, len(positions) + 1), positions, yaws, hovering=hovering)
    sim.install_faults(faults or FaultsConfig())
    return sim, swarm


def test_head_on_at_3_mps_kills_both_naming_each_other_third_untouched():
    # ENU yaw 0 faces east, pi faces west: the two face each other from the start.
    sim, swarm = swarm_sim([(-4, 0, 10), (4, 0, 10), (0, 6, 10)], yaws=[0.0, np.pi, 0.0])
    a, b, c = swarm.agents
    a.fly(3.0, 0.0, 10.0, heading_deg=90.0)  # east, towards b
    b.fly(3.0, 0.0, 10.0, heading_deg=270.0)  # west, towards a
    bodies = sim.world.num_bodies
    run(sim, 5.0)
    assert not a.alive and not b.alive and c.alive
    assert a.death_cause == "collision: with agent 2"
    assert b.death_cause == "collision: with agent 1"
    assert sim.world.num_bodies == bodies - 2
    assert list(swarm.alive) == [False, False, True]
    # c kept hovering where it was.
    assert np.linalg.norm(c.position - (0, 6, 10)) < 0.05


def test_ground_impact_at_5_mps_kills_landing_at_0_3_survives_resting_survive():
    sim, swarm = swarm_sim([(0, 0, 1.45), (5, 0, 1.0)])
    crasher, lander = swarm.agents
    crasher.command_manual(0.0, 0.0, 0.0, 0.0)  # motors off: falls ~1.4 m
    lander.fly_velocity(0.0, 0.0, -0.3)
    run(sim, 6.0)
    assert not crasher.alive
    speed = float(crasher.death_cause.split(" at ")[1].split(" m/s")[0])
    assert 4.5 <= speed <= 5.5 and crasher.death_cause.startswith("crash: into ground")
    assert lander.alive and lander.position[2] < 0.3

    rest, swarm = swarm_sim([(3.0 * i, 0, 0.06) for i in range(10)], hovering=False)
    run(rest, 10.0)
    assert swarm.alive.all() and not rest.deaths


def test_flying_into_a_box_obstacle_kills():
    wall = ObstacleConfig(type="box", center=(8, 0, 5), size=(1, 6, 10))
    sim, swarm = swarm_sim([(0, 0, 5)], obstacles=[wall])
    (a,) = swarm.agents
    a.fly(3.0, 0.0, 5.0, heading_deg=90.0)
    run(sim, 6.0)
    assert not a.alive and a.death_cause.startswith("crash: into obstacle")
    assert sim.deaths[0].position[0] == pytest.approx(7.5 - 0.25, abs=0.15)  # at the wall face


def test_propeller_failures_on_200_hovering_agents():
    # 36 per hour = 0.01 per second; within 10 s each agent fails with p = 1 - e^-0.1.
    from scipy import stats

    rates = FaultRates(propeller_failure=36.0)
    grid = [(4.0 * (i % 20), 4.0 * (i // 20), 10.0) for i in range(200)]
    sim, swarm = swarm_sim(grid, rates=rates, seed=11)
    run(sim, 10.0)
    n = len(sim.deaths)
    lo, hi = stats.binom.interval(0.999, 200, 1 - np.exp(-0.1))
    assert lo <= n <= hi
    assert all(d.cause.startswith("propeller failure: motor ") for d in sim.deaths)
    assert swarm.alive.sum() == 200 - n
    # The same seed draws the same schedule, and each failure fired on the first tick at or
    # after its drawn time: the realised failures are exactly the draws below 10 s.
    again, _ = swarm_sim(grid, rates=rates, seed=11)
    drawn = again.fault_injector.watch_times()
    assert np.array_equal(drawn, sim.fault_injector.watch_times())
    expected = sorted(
        (np.ceil(t / 0.0025 - 1e-9) * 0.0025, agent_id)
        for agent_id, t in zip(range(1, 201), drawn[:, 0])
        if t < 10.0
    )
    realised = sorted((t, i) for t, i, _ in sim.fault_injector.history)
    assert [i for _, i in realised] == [i for _, i in expected]
    assert np.allclose([t for t, _ in realised], [t for t, _ in expected], atol=1e-9)
    again.close()


def test_physical_propeller_failure_at_20_m_falls_and_dies_on_impact():
    sim, swarm = swarm_sim([(0, 0, 20)], faults=FaultsConfig(mode="physical"))
    (a,) = swarm.agents
    run(sim, 1.0)
    sim.fault_injector.inject(a, "propeller failure", "motor 0")
    assert a.alive and swarm.motor_ok[0].tolist() == [0.0, 1.0, 1.0, 1.0]
    run(sim, 8.0)
    assert not a.alive
    assert a.death_cause.startswith("crash: into ground")
    assert "(after propeller failure: motor 0 at 1.000 s)" in a.death_cause
    assert sim.summary()["deaths_by_cause"] == {"crash": 1}


def test_random_propeller_failure_in_physical_mode_drops_the_uav():
    # 3600 per flight hour: the drawn time is Exp(1 s). The injector asks the UAV which motor
    # fails; both draws come from the faults stream in this order (fault times, then motor).
    sim, swarm = swarm_sim(
        [(0, 0, 20)],
        faults=FaultsConfig(mode="physical"),
        rates=FaultRates(propeller_failure=3600.0),
        seed=0,
    )
    (a,) = swarm.agents
    assert isinstance(a, FaultCapable)
    rng = RandomStreams(0).faults
    t_fail = float(rng.exponential(np.array([[1.0, 1.0]]))[0, 0])  # software: rate 0, drawn
    motor = int(rng.integers(0, 4))
    assert sim.fault_injector.watch_times()[0, 0] == t_fail
    fired = np.ceil(t_fail / 0.0025 - 1e-9) * 0.0025  # the first tick at or after the draw
    run(sim, fired)
    assert a.faults == [f"propeller failure: motor {motor} at {fired:.3f} s"]
    assert swarm.motor_ok[0].tolist() == [0.0 if k == motor else 1.0 for k in range(4)]
    assert a.alive and a.position[2] > 19.99  # it has not fallen yet
    run(sim, 1.0)
    # Three motors cannot hold it: more than 2 m lost in 1 s (free fall would be 4.9 m).
    assert a.alive and 20.0 - 4.91 < a.position[2] < 18.0
    run(sim, 5.0)
    assert not a.alive and a.death_cause.startswith("crash: into ground")
    assert f"(after propeller failure: motor {motor} at {fired:.3f} s)" in a.death_cause


def test_fault_rates_and_battery_are_keys_of_the_uav_section():
    hover = {"mission": {"type": "missions.hover"}, "agents": {"count": 2}}
    rates = {"propeller_failure": 2.0, "software_failure": 0.5}
    sc = validate_scenario({**hover, "uav": {"fault_rates": rates}}, "t")
    sim = Simulator.from_scenario(sc)
    assert [a.fault_rates() for a in sim.agents.values()] == [
        {"propeller failure": 2.0, "software failure": 0.5}
    ] * 2
    assert sim.fault_injector.kinds == ["propeller failure", "software failure"]
    assert sim.mission.swarm.battery is None  # [uav.battery] is off by default
    sim.close()
    with pytest.raises(ConfigError, match=r"faults.rates = .*moved to \[uav.fault_rates\]"):
        validate_scenario({**hover, "faults": {"rates": rates}}, "t")  # the old place


def test_empty_battery_in_physical_mode_cuts_motors_and_crashes():
    # 0.2 Wh at 180 W hover power lasts 4 s.
    battery = {"enabled": True, "capacity_wh": 0.2, "hover_power_w": 180.0}
    scenario = validate_scenario(
        {
            "mission": {"type": "missions.hover"},
            "faults": {"mode": "physical"},
            "uav": {"battery": battery},
        },
        "t",
    )
    uav = scenario.section("uav")
    sim, swarm = swarm_sim([(0, 0, 10)], faults=scenario.faults, battery=uav.battery)
    (a,) = swarm.agents
    run(sim, 3.9)
    assert a.alive and not a.faults
    run(sim, 5.0)
    assert a.faults and a.faults[0].startswith("battery exhausted: at ")
    assert float(a.faults[0].split(" at ")[1].removesuffix(" s")) == pytest.approx(4.0, abs=0.01)
    assert not a.alive and "after battery exhausted" in a.death_cause


def test_software_fault_kills_only_that_uav_and_is_logged(tmp_path, repo_root):
    from skyswarm.core.config import load_scenario

    sc = load_scenario(repo_root / "configs/hover.toml", ["simulation.duration_s=8"])
    sim = Simulator.from_scenario(sc, tmp_path / "run")
    victim = sim.agents[2]
    victim.every(5.0, lambda: 1 / 0, phase_s=5.0, name="buggy")
    sim.run()
    summary = sim.finish()
    sim.close()
    assert not victim.alive and victim.death_time_s == 5.0
    assert sum(a.alive for a in sim.agents.values()) == 3
    assert summary["stop_reason"] == "duration"
    with open(tmp_path / "run/events.csv") as f:
        events = list(csv.DictReader(f))
    (death,) = [e for e in events if e["kind"] == "death"]
    assert death["agent_id"] == "2" and death["cause"].startswith("software fault: ZeroDivision")
    assert "Traceback" in death["detail"] and "ZeroDivisionError" in death["detail"]

    strict = load_scenario(
        repo_root / "configs/hover.toml", ["simulation.duration_s=8", "simulation.strict=true"]
    )
    sim = Simulator.from_scenario(strict)
    sim.agents[2].every(5.0, lambda: 1 / 0, phase_s=5.0)
    with pytest.raises(ZeroDivisionError):
        sim.run()
    assert sim.time_s == 5.0
    sim.close()


def test_after_a_kill_body_gone_messages_receiver_dead_alive_mask_cleared():
    sim, swarm = swarm_sim([(0, 0, 10), (5, 0, 10)])
    dispatcher = attach_comms(sim)
    a, b = swarm.agents
    bodies = sim.world.num_bodies
    sim.kill(b, "killed by test")
    assert sim.world.num_bodies == bodies - 1
    assert list(swarm.alive) == [True, False]
    assert swarm.motors.thrust[1].tolist() == [0.0] * 4
    a.transceiver.send(b, "hello", channel="radio")
    assert b.transceiver.send(a, "from the dead", channel="radio") is None  # dead send nothing
    run(sim, 0.1)
    radio = dispatcher.totals()["radio"]
    assert radio["receiver_dead"] == 1 and radio["delivered"] == 0
    assert a.alive and np.linalg.norm(a.position - (0, 0, 10)) < 0.05


def test_landing_rule_thresholds_are_config():
    # The landing rule reads the mesh's contacts: quad_x's legs would absorb this touchdown
    # before the mesh touches (squeeze 0.3 m/s x sqrt(m / 4k) = 6.7 mm < 1 cm), so the
    # rigid-contact airframe quad_x_rotor shows the threshold; its ground effect cushions the
    # 0.3 m/s descent to 0.21 m/s at 0.1 m (measured), above a strict 0.1 m/s.
    strict = FaultsConfig(collisions=CollisionConfig(landing_speed_mps=0.1))
    rigid = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_rotor.toml")
    sim, swarm = swarm_sim([(0, 0, 1.0)], faults=strict, config=rigid)
    swarm.agents[0].fly_velocity(0.0, 0.0, -0.3)
    run(sim, 6.0)
    assert not swarm.agents[0].alive


@pytest.mark.parametrize(("tilt_deg", "survives"), [(0.0, True), (20.0, True), (45.0, False)])
def test_a_slow_touchdown_kills_only_when_tilted_past_the_landing_tilt(tilt_deg, survives):
    # Motors off in zero gravity, the body rolled by `tilt_deg` and sinking from 0.5 m/s (body
    # drag slows it a little), well under landing_speed_mps (1 m/s): level or at 20 deg it
    # lands; at 45 deg, past landing_tilt_deg (30), the same slow contact is a crash naming
    # its speed and tilt.
    import pybullet as pb

    sim = Simulator(SimulationConfig(gravity=0.0), WorldConfig())
    swarm = Swarm(sim, CONFIG, [1], np.array([[0.0, 0.0, 0.4]]), np.zeros(1))
    sim.install_faults(FaultsConfig())
    (uav,) = swarm.agents
    uav.command_manual(0.0, 0.0, 0.0, 0.0)
    half = np.radians(tilt_deg) / 2
    body, cid = sim.world.body_of(uav.slot), sim.world.client
    pb.resetBasePositionAndOrientation(
        body, [0.0, 0.0, 0.4], [np.sin(half), 0.0, 0.0, np.cos(half)], physicsClientId=cid
    )
    pb.resetBaseVelocity(body, [0.0, 0.0, -0.5], [0.0, 0.0, 0.0], physicsClientId=cid)
    sim.world.read_state()
    assert uav.tilt_deg == pytest.approx(tilt_deg, abs=1e-9)
    touched = run(sim, 1.5, lambda: len(sim.world.contacts) > 0)
    assert touched.any()  # it reached the ground (and, with no gravity, may bounce off)
    assert uav.alive is survives
    if not survives:
        cause = uav.death_cause
        assert cause.startswith("crash: into ground at ") and cause.endswith(", tilt 45 deg")
        assert 0.3 < float(cause.split(" at ")[1].split(" m/s")[0]) <= 0.5
