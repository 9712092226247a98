"""Boids flocking: the steering rule by hand, and the shipped 30-UAV scenario flown (seeds fixed).

One run per scenario (module-scoped fixtures), each sampled every 0.5 s of simulated time.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.missions.boids import BoidsConfig, advance, flock_metrics, steering

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "boids.toml"

# -- the steering rule, hand-computed ---------------------------------------------------------
HAND = BoidsConfig(
    cruise_speed_m_s=3.0,
    max_accel_m_s2=100.0,
    perception_radius_m=25.0,
    max_neighbours=0,
    separation_radius_m=5.0,
    separation_gain=2.0,
    alignment_gain=1.0,
    cohesion_gain=0.1,
    speed_gain=0.5,
    migration_gain=0.3,
    lookahead_s=0.0,
)
P, V = np.array([0.0, 0.0]), np.array([2.0, 0.0])
NB_P = np.array([[4.0, 0.0], [0.0, 10.0]])
NB_V = np.array([[2.0, 0.0], [0.0, 2.0]])


def test_steering_matches_the_hand_computed_sum() -> None:
    # speed  0.5 * (3 - 2) * (1, 0)                       = ( 0.5, 0.0)
    # sep    2 * (5/4 - 1) * (-4, 0)/4  (only the one at 4 m < 5 m) = (-0.5, 0.0)
    # align  1 * ((1, 1) - (2, 0))                        = (-1.0, 1.0)
    # cohes  0.1 * ((2, 5) - (0, 0))                      = ( 0.2, 0.5)
    a = steering(P, V, NB_P, NB_V, HAND)
    np.testing.assert_allclose(a, [-0.8, 1.5], atol=1e-12)


def test_migration_adds_a_pull_towards_the_goal() -> None:
    # 0.3 * (3 * (0, 1) - (2, 0)) = (-0.6, 0.9) on top of the sum above
    a = steering(P, V, NB_P, NB_V, HAND, goal=np.array([0.0, 50.0]))
    np.testing.assert_allclose(a, [-1.4, 2.4], atol=1e-12)


def test_separation_has_priority_under_the_acceleration_cap() -> None:
    # separation (-0.5, 0) is kept whole; the rest (-0.3, 1.5) is scaled to the 0.5 left.
    cfg = dataclasses.replace(HAND, max_accel_m_s2=1.0)
    a = steering(P, V, NB_P, NB_V, cfg)
    rest = np.array([-0.3, 1.5]) * 0.5 / math.hypot(-0.3, 1.5)
    np.testing.assert_allclose(a, np.array([-0.5, 0.0]) + rest, atol=1e-12)
    assert np.linalg.norm(a) <= 1.0 + 1e-12


def test_head_on_neighbour_repels_from_the_predicted_closest_approach() -> None:
    # 10 m apart, closing at 4 m/s: no separation now (d > 5 m); within a 2 s lookahead the
    # gap shrinks to 2 m -> 2 * (5/2 - 1) * (-2, 0)/2 = (-3, 0).
    cfg = dataclasses.replace(HAND, alignment_gain=0.0, cohesion_gain=0.0, speed_gain=0.0)
    nb_p, nb_v = np.array([[10.0, 0.0]]), np.array([[-2.0, 0.0]])
    np.testing.assert_allclose(steering(P, V, nb_p, nb_v, cfg), [0.0, 0.0], atol=1e-12)
    ahead = dataclasses.replace(cfg, lookahead_s=2.0)
    np.testing.assert_allclose(steering(P, V, nb_p, nb_v, ahead), [-3.0, 0.0], atol=1e-12)
    # the same neighbour flying away is not a threat: no push
    away = steering(P, V, np.array([[-10.0, 0.0]]), np.array([[-4.0, 0.0]]), ahead)
    np.testing.assert_allclose(away, [0.0, 0.0], atol=1e-12)


def test_neighbours_beyond_perception_are_ignored() -> None:
    far = steering(P, V, np.array([[30.0, 0.0]]), np.array([[0.0, 3.0]]), HAND)
    np.testing.assert_allclose(far, [0.5, 0.0], atol=1e-12)  # speed term only


def test_commanded_speed_stays_within_limits() -> None:
    cfg = BoidsConfig(min_speed_m_s=1.0, cruise_speed_m_s=3.0, max_speed_m_s=5.0)
    np.testing.assert_allclose(advance(V, np.array([100.0, 0.0]), 0.1, cfg), [5.0, 0.0])
    np.testing.assert_allclose(advance(V, np.array([-15.0, 0.0]), 0.1, cfg), [1.0, 0.0])
    np.testing.assert_allclose(advance(V, np.array([0.0, 10.0]), 0.1, cfg), [2.0, 1.0])


def test_flock_metrics_by_hand() -> None:
    pos = np.array([[0.0, 0.0, 10.0], [3.0, 4.0, 10.0]])
    vel = np.array([[2.0, 0.0, 0.0], [0.0, 0.5, 0.0]])
    pol, r_mean, r_max, min_sep = flock_metrics(pos, vel)
    assert math.isclose(pol, math.sqrt(0.5))  # |((1, 0) + (0, 1)) / 2|
    assert math.isclose(r_mean, 2.5) and math.isclose(r_max, 2.5)
    assert math.isclose(min_sep, 5.0)


def test_a_goal_needs_two_coordinates() -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario(CONFIG, ["boids.goal=[1.0]"])
    assert err.value.key == "boids.goal"


# -- flown scenarios ----------------------------------------------------------------------------
@dataclass
class Flight:
    sim: Simulator
    metrics: dict
    polarisation: list[float] = field(default_factory=list)  # every 0.5 s


def fly(until_s: float, *overrides: str) -> Flight:
    sim = Simulator.from_scenario(load_scenario(CONFIG, overrides))
    trace = []
    t = 0.0
    while t < until_s:
        t += 0.5
        sim.run(until_s=t)
        trace.append(sim.mission.polarisation)
    return Flight(sim, sim.finish()["metrics"], trace)


@pytest.fixture(scope="module")
def flock() -> Flight:
    return fly(40.0)


@pytest.fixture(scope="module")
def radio_cut() -> Flight:
    return fly(20.0, "comms.channels.radio.loss=1.0")


@pytest.fixture(scope="module")
def migration() -> Flight:
    return fly(40.0, "boids.goal=[-60.0, 90.0]")


def test_thirty_uavs_align_within_60_s_without_collision(flock: Flight) -> None:
    m = flock.metrics
    assert flock.polarisation[0] < 0.3  # random headings: disordered at the start
    assert m["time_to_order_s"] is not None and m["time_to_order_s"] < 60.0  # ~11 s
    assert min(flock.polarisation[-10:]) >= 0.9  # and it stays ordered (last 5 s)
    assert m["collisions"] == 0 and m["alive"] == 30
    assert m["min_separation_m"] > 2.0  # ~3.0 m; bodies touch below ~0.5 m
    assert m["cohesion_radius_m"] < 12.0  # ~8.8 m: one flock, not fragments


def test_with_the_radio_cut_no_alignment_emerges(radio_cut: Flight) -> None:
    # Nothing heard -> each UAV flies its own random heading: the behaviour uses only what it
    # receives, never other agents' true state.
    radio = radio_cut.sim.dispatcher.totals()["radio"]
    assert radio["sent"] > 0 and radio["delivered"] == 0
    assert len(radio_cut.sim.mission.beacons.table().sender) == 0  # no neighbour heard
    assert max(radio_cut.polarisation) < 0.4  # ~0.04 for these headings (at most 0.11)
    assert radio_cut.metrics["cohesion_radius_m"] > 40.0  # ~56 m: the group disperses


def test_migration_goal_draws_the_flock_centroid_to_it(migration: Flight) -> None:
    m = migration.metrics
    start = np.array([12.5, 10.0])  # centroid of the 6 x 5 grid, spacing 5 m
    goal = np.array([-60.0, 90.0])
    shift = np.array(m["centroid_shift_m"])
    angle = math.degrees(
        math.acos(shift @ (goal - start) / np.linalg.norm(shift) / np.linalg.norm(goal - start))
    )
    assert angle < 10.0  # moved straight towards the goal (~2 deg)
    assert m["goal_distance_m"] < 15.0  # from 108 m at 3 m/s cruise (~2 m after 40 s)
    assert m["time_to_goal_s"] is not None and m["collisions"] == 0
