"""Perception through the controller interface: a user controller of `Swarm.control` reads the
last lidar scan of its agents from `SwarmState.lidar` (uav/commands.py) and flies on it."""

from __future__ import annotations

import dataclasses

import numpy as np

from skyswarm.core.config import ObstacleConfig, SimulationConfig, WorldConfig
from skyswarm.core.schema import Tables
from skyswarm.core.simulator import Simulator
from skyswarm.uav.commands import CommandInterface, SwarmState
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.sensors import SensorsConfig
from skyswarm.uav.sensors.lidar import LidarConfig, ScanReading
from skyswarm.uav.swarm import Swarm

WALL = ObstacleConfig("box", (10.0, 0.0, 4.0), (0.6, 4.0, 8.0))  # face at x = 9.7, y -2..2


def build(lidar: bool) -> tuple[Simulator, Swarm]:
    """Two UAVs hovering at 3 m at (0, 0) and (0, 6), facing +x; the wall ahead of the first
    only; a 32-beam exact lidar at 20 Hz (beam 0 ahead) when `lidar`."""
    sim = Simulator(SimulationConfig(physics="fast"), WorldConfig(obstacles=(WALL,)))
    sim.world.add_ground()
    sim.world.add_box(WALL.center, WALL.size)
    sensors = SensorsConfig(preset="ideal", control_on="truth", record_hz=0.0)
    if lidar:
        cfg = LidarConfig(enabled=True, period_s=0.05, sigma_m=0.0)
        sensors = dataclasses.replace(sensors, tables=Tables(lidar=cfg))
    config = dataclasses.replace(load_uav_config(), sensors=sensors)
    pos = np.array([[0.0, 0.0, 3.0], [0.0, 6.0, 3.0]])
    return sim, Swarm(sim, config, [1, 2], pos, np.zeros(2), hovering=True)


def stop_at_walls(state: SwarmState, command: CommandInterface) -> None:
    """Fly +x at 2 m/s; hold where the beam ahead sees something within 3 m."""
    ahead = np.nan_to_num(state.lidar.ranges[:, 0], nan=np.inf)
    speed = np.where(ahead < 3.0, 0.0, 2.0)
    command.velocity(state.index, np.column_stack([speed, 0 * speed, 0 * speed]))


def test_a_controller_stops_short_of_the_wall_its_lidar_sees() -> None:
    # The first UAV sees the wall within 3 m at x ~ 6.7 and holds there (its speed brakes it
    # to a stop before x = 8.5, 1.2 m clear of the face); the second has nothing ahead and
    # flies on past x = 12 in 8 s. A second controller on the second UAV alone gets its row.
    sim, swarm = build(lidar=True)
    swarm.control(0.05, stop_at_walls)
    lidar = swarm.sensors.sensor("lidar")
    seen: list[tuple[SwarmState, np.ndarray]] = []  # the state and the sensor's whole scan
    swarm.control(0.05, lambda st, command: seen.append((st, lidar.ranges.copy())), members=[1])
    for _ in range(int(8.0 / sim.world.tick_s)):
        sim.step()
    x = sim.world.state.position[swarm.slots, 0]
    assert 6.0 < x[0] < 8.5 and x[1] > 12.0, x
    assert swarm.alive.all()
    last, scan = seen[-1]
    assert isinstance(last.lidar, ScanReading) and last.lidar.ranges.shape == (1, 32)
    # the scan taken after the physics of the tick before (sensors sample in phase 6)
    assert last.lidar.tick == last.tick == 3180
    assert np.array_equal(last.lidar.ranges, scan[[1]], equal_nan=True)
    assert last.camera is None and last.rangefinder is None and set(last.readings) == {"lidar"}


def test_without_a_lidar_the_state_has_no_reading() -> None:
    sim, swarm = build(lidar=False)
    seen: list[SwarmState] = []
    swarm.control(0.05, lambda state, command: seen.append(state))
    for _ in range(40):
        sim.step()
    assert seen and seen[-1].lidar is None and seen[-1].readings == {}
