"""Gravity from the world in every consumer of an airframe's weight (issue 33): the hover
thrust, the thrust-to-weight check, the battery's hover power and the joystick's centre stick,
on Earth (9.81 m/s^2) and on Mars (3.71 m/s^2). With the weight hard-coded as m x 9.81 a Mars
hover drew 23 % of the battery's hover power, a centre stick climbed at 6.1 m/s^2 and an
airframe too weak for Earth was refused on Mars."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.config import SimulationConfig, WorldConfig, load_scenario
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.uav import control as ctl
from skyswarm.uav.battery import BatteryConfig
from skyswarm.uav.group import Commands
from skyswarm.uav.joystick import load_profile
from skyswarm.uav.manual import DeviceState, ManualControl
from skyswarm.uav.swarm import Swarm

HOVER = CONFIGS_DIR / "hover.toml"
AF = CONFIG.airframe
WEAK_THRUST_N = 2.0  # N per motor: 8 N in all, under 1.2 kg x 9.81 = 11.77 N, over x 3.71 = 4.45 N


def hovering(g: float, config=CONFIG) -> tuple[Simulator, Swarm]:
    sim = Simulator(SimulationConfig(gravity=g), WorldConfig())
    return sim, Swarm(sim, config, [1], [(0.0, 0.0, 10.0)], [0.0], hovering=True)


@pytest.mark.parametrize("g", [9.81, 3.71, 1.62])
def test_hover_thrust_is_m_g_of_the_world(g: float) -> None:
    """The default airframe hovering at 10 m settles at thrust m g (11.772 N on Earth, 4.452 N
    on Mars, 1.944 N on the Moon) within 0.1 %: the weight is the world's, not m x 9.81."""
    sim, swarm = hovering(g)
    assert AF.weight_n(g) == pytest.approx(1.2 * g, rel=1e-12)
    run(sim, 4.0)
    assert swarm.motors.thrust[0].sum() == pytest.approx(1.2 * g, rel=1e-3)
    assert swarm.agents[0].position[2] == pytest.approx(10.0, abs=0.01)


@pytest.mark.parametrize("g", [9.81, 3.71])
def test_battery_draws_its_hover_power_at_hover_on_any_planet(g: float) -> None:
    """P = hover_power_w (T / m g)^1.5: hovering draws 180 W on Earth and on Mars (1 %: the
    thrust wobbles about m g), twice the hover thrust 2^1.5 x 180 = 509.1 W. With m x 9.81
    as the reference, the Mars hover drew (3.71 / 9.81)^1.5 = 23 % of it."""
    battery = BatteryConfig(enabled=True, capacity_wh=60.0, hover_power_w=180.0)
    sim, swarm = hovering(g, dataclasses.replace(CONFIG, battery=battery))
    bat = swarm.battery
    assert bat is not None
    run(sim, 1.0)  # settle at hover
    before = bat.energy_j.copy()
    run(sim, 2.0)
    assert (before - bat.energy_j)[0] / 2.0 == pytest.approx(180.0, rel=0.01)
    energy = bat.energy_j.copy()
    bat.drain(np.full((1, 4), 2.0 * AF.weight_n(g) / 4))  # one tick at twice the hover thrust
    assert (energy - bat.energy_j)[0] / sim.world.tick_s == pytest.approx(
        180.0 * 2.0**1.5, rel=1e-9
    )


def test_a_battery_in_zero_gravity_is_refused_with_the_key() -> None:
    """The battery's power is relative to the hover thrust m g: undefined at g = 0."""
    with pytest.raises(ConfigError) as err:
        load_scenario(HOVER, ["simulation.gravity=0", "uav.battery.enabled=true"])
    assert err.value.key == "simulation.gravity" and err.value.value == 0.0


def weak_airframe(tmp_path: Path) -> Path:
    """quad_x with 2 N motors (thrust-to-weight 0.68 on Earth, 1.80 on Mars)."""
    text = (CONFIGS_DIR / "airframes" / "quad_x.toml").read_text(encoding="utf-8")
    text = text.replace("max_thrust_n = 5.886 ", f"max_thrust_n = {WEAK_THRUST_N} ", 1)
    text = text.replace("../../assets", str(CONFIGS_DIR.parent / "assets"))
    weak = tmp_path / "weak.toml"
    weak.write_text(text, encoding="utf-8")
    return weak


def test_thrust_to_weight_is_checked_at_the_worlds_gravity(tmp_path: Path) -> None:
    """An airframe whose 8 N cannot lift 1.2 kg on Earth (11.77 N) is refused there, naming its
    file, key and value; the same file on Mars (4.45 N) validates and hovers at 10 m within
    2 cm, its motors at 4.452 / 8 = 56 % of full thrust."""
    weak = weak_airframe(tmp_path)
    overrides = ["agents.count=1", f"uav.airframe={weak}"]
    with pytest.raises(ConfigError) as err:
        load_scenario(HOVER, overrides)
    assert (err.value.file, err.value.key) == (str(weak), "airframe.max_thrust_n")
    assert err.value.value == WEAK_THRUST_N and "2.943 N" in err.value.expected
    scenario = load_scenario(HOVER, [*overrides, "simulation.gravity=3.71"])
    uav = scenario.section("uav").load(scenario.base_dir)
    assert uav.airframe.thrust_to_weight(3.71) == pytest.approx(8.0 / (1.2 * 3.71), rel=1e-12)
    with pytest.raises(ConfigError):  # built by code on Earth: the swarm checks it too
        hovering(9.81, uav)
    sim, swarm = hovering(3.71, uav)
    z = run(sim, 4.0, lambda: swarm.agents[0].position[2])
    assert np.abs(z[-400:] - 10.0).max() < 0.02
    assert swarm.motors.thrust[0].max() / WEAK_THRUST_N == pytest.approx(0.556, abs=0.01)


def test_joystick_centre_stick_holds_altitude_on_mars() -> None:
    """Taken over in Attitude mode with every stick centred on Mars, the collective is m g =
    4.452 N (not 11.77 N, which climbed at 6.1 m/s^2: 27 m in 3 s) and the UAV keeps its
    altitude within 5 cm over 3 s."""
    scenario = load_scenario(HOVER, ["agents.count=1", "simulation.gravity=3.71"])
    sim = Simulator.from_scenario(scenario)
    mc = ManualControl(sim, load_profile(), DeviceState("test pad", True, {}))
    for _ in range(400):  # the hover mission settles first
        sim.step()
    agent = sim.agents[1]
    start = agent.position[2]
    mc.take_control(1)
    z = run(sim, 3.0, lambda: agent.position[2])
    assert agent.mode is ctl.ATTITUDE
    assert sim.mission.swarm.setpoints.thrust[0] == pytest.approx(1.2 * 3.71, rel=1e-12)
    assert np.abs(z - start).max() < 0.05
    sim.close()


def test_a_vertical_acceleration_limit_above_g_flies_and_the_thrust_stays_up(tmp_path) -> None:
    """The speed loop keeps the vertical acceleration above -0.9 g of the world (uav/kernel.py),
    so `control.vertical_speed.out_limit` is not held to a hard-coded 9.81 (12 m/s^2 was refused
    for a 20 m/s^2 world). On it the UAV hovers; on Mars the shipped 6 m/s^2 (> g = 3.71) asked
    for a dive from 10 m keeps the collective >= 0.1 m g (the thrust up) and the UAV level."""
    text = (CONFIGS_DIR / "airframes" / "quad_x.toml").read_text(encoding="utf-8")
    text = text.replace("../../assets", str(CONFIGS_DIR.parent / "assets"))
    head, vertical = text.split("[control.vertical_speed]")
    shipped = next(line for line in vertical.splitlines() if line.startswith("out_limit = 6.0 "))
    vertical = vertical.replace(shipped, "out_limit = 12.0", 1)
    heavy = tmp_path / "heavy.toml"  # 12 m/s^2, and 10 N motors to fly at 20 m/s^2
    heavy.write_text(f"{head}[control.vertical_speed]{vertical}".replace("5.886 ", "10.0 ", 1))
    scenario = load_scenario(HOVER, ["agents.count=1", f"uav.airframe={heavy}"])
    scenario = load_scenario(
        HOVER, ["agents.count=1", f"uav.airframe={heavy}", "simulation.gravity=20"]
    )
    uav = scenario.section("uav").load(scenario.base_dir)
    assert uav.control.vertical_speed.out_limit == 12.0
    sim, swarm = hovering(20.0, uav)
    z = run(sim, 3.0, lambda: swarm.agents[0].position[2])
    assert np.abs(z[-200:] - 10.0).max() < 0.02

    sim, swarm = hovering(3.71)
    assert CONFIG.control.vertical_speed.out_limit > 3.71
    swarm.behave(0.1, lambda g: Commands(velocity=np.zeros((g.n, 2)), altitude=np.full(g.n, 1.0)))
    agent = swarm.agents[0]
    samples = run(
        sim, 3.0, lambda: (swarm.motors.thrust[0].sum(), agent.velocity[2], *agent.euler[:2])
    )
    thrust, vz, roll, pitch = np.array(samples).T
    assert vz.min() < -2.0  # it dives ...
    assert thrust.min() >= 0.1 * AF.weight_n(3.71) * 0.98  # ... pushing up all the way
    assert np.abs(roll).max() < 0.02 and np.abs(pitch).max() < 0.02  # rad: level
