"""The obstacle-field scenario (configs/obstacle_field.toml, missions/obstacle_field.py): six
UAVs cross unmapped pillars and walls on their lidar alone, with no collision over three
seeds; with the lidar and the default avoidance off the same flight crashes (so the first test
can fail)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.missions.obstacle_field import ObstacleFieldConfig, steer

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "obstacle_field.toml"
# The shipped file names the mission by its entry point (pyproject), which exists once the
# package is installed; the tests name the class itself, so they run from a checkout too.
MISSION = 'mission.type="skyswarm.missions.obstacle_field:ObstacleField"'


def fly(tmp_path: Path, *overrides: str) -> tuple[dict, list[str], float]:
    scenario = load_scenario(CONFIG, [MISSION, *overrides])
    sim = Simulator.from_scenario(scenario, tmp_path / "run")
    try:
        sim.run()
        swarm = sim.mission.swarm
        causes = [a.death_cause or "" for a in swarm.agents if not a.alive]
        return sim.mission.metrics(), causes, sim.time_s
    finally:
        sim.finish()
        sim.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_uav_crosses_the_field_without_touching_an_obstacle(
    tmp_path: Path, seed: int
) -> None:
    # Seeds move the goals (up to 1 m sideways) and draw the lidar's noise and dropouts:
    # all six arrive within 1 m of their goals, nobody is lost, before the 60 s limit
    # (50 m at 2 m/s plus the detours: 54.7, 51.9 and 36.9 s at seeds 1-3 since the barrier's
    # credit for a neighbour drawing away loses what the scan shows it shed; 51.1 s at seed 1
    # since new avoidance tracks start at rest in the world; 50.3, 47.9 and 40.6 s at seeds 1-3
    # since the barrier takes a neighbour where its scan measures it when nearer than its track;
    # 56.3, 41.0 and 45.0 s before, with the barrier's overdrive, docs/safety.md "The overdrive":
    # the same mean as the 46.7, 51.9 and 43.6 s without it, seed 1 slower and seed 2 faster;
    # 38.4, 48.7 and 44.2 s before the barrier counted a neighbour's velocity with its own
    # filtered as the track). The time depends on the noise drawn: the dense scan's draws gave
    # 38.8, 38.2, 38.2 s here but 39.6, 43.9, 48.8 s at seeds 4-6 (the scan's 16 slots hold 16
    # of the 18 targets, so its noise is drawn per slot, not per pair as the dense scan's; with
    # 18 slots the runs are identical).
    metrics, causes, t = fly(tmp_path, f"simulation.seed={seed}")
    assert causes == []
    assert metrics == {"arrived": 6, "obstacle_crashes": 0, "lost": 0}
    assert t < 58.0  # 2 s inside the limit


BOXES = load_scenario(CONFIG).world.obstacles
CENTRES = np.array([b.center[:2] for b in BOXES])  # (12, 2) m; all upright, unyawed, 8 m tall
HALVES = np.array([b.size[:2] for b in BOXES]) / 2


def clearance(position: np.ndarray) -> float:
    """The least horizontal distance, m, from any of the (n, 3) positions (the UAVs fly at
    3 m, under the boxes' tops) to the side of a box obstacle."""
    out = np.maximum(np.abs(position[:, None, :2] - CENTRES) - HALVES, 0.0)
    return float(np.linalg.norm(out, axis=2).min())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_lidar_alone_takes_them_across_with_no_contact(tmp_path: Path, seed: int) -> None:
    # Issue 32: the crossing by lidar alone. Avoidance off (its barrier's proximity scan sees
    # the world's boxes, a map the mission does not have): the only thing between a UAV and a
    # wall is its 32-beam scan. All six arrive (31.4, 30.9, 31.2 s at seeds 1-3, measured), and
    # the contact report holds no UAV-obstacle pair on any tick (a touch below the crash speed
    # would count as a landing, not a death: the metrics alone would not see it). Every UAV
    # keeps more than 0.5 m between its centre and a box side (measured 1.01, 0.98, 0.82 m;
    # the mesh reaches 0.28 m from the centre; the mission stops at 0.9 m of corridor).
    scenario = load_scenario(
        CONFIG, [MISSION, f"simulation.seed={seed}", "avoidance.enabled=false"]
    )
    sim = Simulator.from_scenario(scenario, tmp_path / "run")
    try:
        swarm, world = sim.mission.swarm, sim.world
        end = world.ticks_for_until(scenario.simulation.duration_s)
        touched, nearest = [], np.inf
        while world.tick < end and not sim.mission.is_done():
            sim.step()
            c = world.contacts
            pairs = ((c.a >= 0) & (c.b <= -2)) | ((c.b >= 0) & (c.a <= -2))
            touched += [(world.tick, a, b) for a, b in zip(c.a[pairs], c.b[pairs])]
            live = [a.position for a in swarm.agents if a.alive]
            nearest = min(nearest, clearance(np.asarray(live)))
        assert sim.mission.metrics() == {"arrived": 6, "obstacle_crashes": 0, "lost": 0}
        assert touched == [] and nearest > 0.5
        assert sim.time_s < 40.0
    finally:
        sim.close()


def test_without_the_lidar_they_fly_into_the_obstacles(tmp_path: Path) -> None:
    # Every straight line from a start to its goal crosses a wall or a pillar: blind (no lidar,
    # and the safety defaults' avoidance off: its barrier holds UAVs off boxes too), at least
    # five of the six crash into an obstacle (the sixth may slip past a pillar's side with its
    # jittered goal, or be hit by a falling neighbour).
    blind = ("uav.sensors.lidar.enabled=false", "avoidance.enabled=false")
    metrics, causes, _ = fly(tmp_path, *blind)
    assert metrics["obstacle_crashes"] >= 5, causes
    assert all("obstacle" in c or "collision" in c for c in causes)


def test_without_the_lidar_the_safety_defaults_still_keep_them_off_the_obstacles(
    tmp_path: Path,
) -> None:
    # Issue 29: avoidance is on by default and its proximity scan sees boxes; the barrier
    # stops each UAV short of a wall or pillar (seed 1: no crash, no loss). They may not
    # arrive: the barrier brakes, it does not find a way round.
    metrics, causes, _ = fly(tmp_path, "uav.sensors.lidar.enabled=false")
    assert causes == [] and metrics["obstacle_crashes"] == 0 and metrics["lost"] == 0


def test_steering_turns_away_from_a_wall_ahead_and_flies_straight_when_clear() -> None:
    # One UAV at the origin, goal 20 m along +x. Clear scan: straight at the goal at cruise
    # speed. A return 2 m ahead (a wall across x = 2, seen by the beams within +-60 deg):
    # the heading turns off the goal line by more than 45 deg.
    cfg = ObstacleFieldConfig()
    pos, goal = np.array([[0.0, 0.0, 3.0]]), np.array([[20.0, 0.0, 3.0]])
    az = 2 * np.pi * np.arange(32) / 32
    dirs = np.stack([np.cos(az), np.sin(az), np.zeros(32)], axis=1)[None]
    clear = steer(pos, goal, np.zeros(1), np.full((1, 32), np.nan), dirs, cfg)
    assert clear.heading[0] == pytest.approx(0.0) and clear.velocity[0, 0] == pytest.approx(2.0)
    ranges = np.where(np.cos(az) > 0.5, 2.0 / np.maximum(np.cos(az), 1e-9), np.nan)[None]
    wall = steer(pos, goal, np.zeros(1), ranges, dirs, cfg)
    assert abs(wall.heading[0]) > np.pi / 4
