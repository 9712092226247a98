"""The lidar and rangefinder sensors (uav/sensors/lidar.py) on a hand-built fast world: ranges
are the geometry plus the configured noise, dropout and range limit, beams turn with the body
and the mount, UAV hits name the agent, and one seed gives one scan."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from skyswarm.core.backends import GROUND, BodyShape, make_world
from skyswarm.core.frames import quat_to_matrix
from skyswarm.core.schema import ConfigError
from skyswarm.uav.estimation import euler_to_quat
from skyswarm.uav.sensors import Setting, Truth
from skyswarm.uav.sensors.lidar import Lidar, Rangefinder, beam_directions

EXACT = dict(sigma_m=0.0, dropout=0.0, beams=4, enabled=True)


def scene(positions, yaws=None, physics: str = "fast"):
    """A world with the ground, a wall whose face is at x = 4 (y in -5..5, z 0..6), and one
    UAV-sized box body per position; returns the world, the slots and the truth."""
    w = make_world(physics)
    w.add_ground()
    w.add_box((5.0, 0.0, 3.0), (2.0, 10.0, 6.0))
    pos = np.asarray(positions, dtype=float)
    n = len(pos)
    yaw = np.zeros(n) if yaws is None else np.asarray(yaws, dtype=float)
    quat = euler_to_quat(np.column_stack([np.zeros(n), np.zeros(n), yaw]))
    slots = w.add_bodies(BodyShape(half_extents=(0.2, 0.2, 0.05)), 1.0, pos, quat)
    rot = quat_to_matrix(quat)
    zeros = np.zeros((n, 3))
    euler = np.column_stack([zeros[:, :2], yaw])
    truth = Truth(pos, zeros, zeros, euler, zeros, rot, np.ones(n, dtype=bool))
    return w, slots, truth


def lidar(w, slots, truth, seed: int = 0, cls=Lidar, **cfg) -> Lidar:
    config = dataclasses.replace(cls.defaults, **cfg)
    rng = np.random.default_rng(seed)
    setting = Setting(len(slots), 0.0025, 9.81, np.zeros((0, 6)), rng, w, slots)
    sensor = cls(config, setting, truth)
    sensor.step(0, truth)
    return sensor


def test_a_wall_ahead_and_nothing_behind() -> None:
    # Four beams (0, 90, 180, 270 deg) from (0, 0, 2): the wall's face at 4 m ahead; left,
    # behind and right nothing within 20 m (NaN, MISS).
    w, slots, truth = scene([(0, 0, 2)])
    s = lidar(w, slots, truth, **EXACT)
    assert s.ranges[0, 0] == pytest.approx(4.0, abs=1e-9)
    assert np.isnan(s.ranges[0, 1:]).all()
    assert s.hit[0, 0] == -2 and s.agent[0, 0] == -1


def test_beams_turn_with_the_body_and_the_mount() -> None:
    # Yawed 90 deg, beam 3 (270 deg in the body) points along +x: 4 m to the wall. Mounted
    # pitched 90 deg down, the forward beam of a single-beam pattern measures the height (2 m).
    w, slots, truth = scene([(0, 0, 2)], yaws=[math.pi / 2])
    s = lidar(w, slots, truth, **EXACT)
    assert s.ranges[0, 3] == pytest.approx(4.0, abs=1e-9) and np.isnan(s.ranges[0, :3]).all()
    down = lidar(w, slots, truth, cls=Rangefinder, enabled=True, sigma_m=0.0)
    assert down.ranges[0, 0] == pytest.approx(2.0, abs=1e-9) and down.hit[0, 0] == GROUND


def test_a_3d_pattern_has_its_elevations() -> None:
    # 3 channels over 60 deg: elevations -30, 0, 30; beam 0 of the lowest row from 2 m up
    # meets the ground at 2 / sin 30 = 4 m (before the wall's face at 4 / cos 30 = 4.62 m).
    dirs = beam_directions(dataclasses.replace(Lidar.defaults, beams=4, channels=3, vfov_deg=60))
    assert np.degrees(np.arcsin(dirs[::4, 2])) == pytest.approx([-30, 0, 30])
    w, slots, truth = scene([(0, 0, 2)])
    s = lidar(w, slots, truth, **EXACT, channels=3, vfov_deg=60.0)
    assert s.ranges[0, [0, 4, 8]] == pytest.approx([4.0, 4.0, 4 / math.cos(math.pi / 6)])
    assert s.hit[0, [0, 4, 8]].tolist() == [GROUND, -2, -2]


def test_max_range_noise_and_dropout_as_configured() -> None:
    # A 3.9 m range does not reach the wall. The wall (y within 5 m, face at 4 m) spans
    # atan(5 / 4) = 51.3 deg either side: 19 of 64 beams 5.625 deg apart (0 and +-1..9).
    # Noise: those 19 beams x 200 samples with sigma 0.1: the sample std within 5 % and the
    # mean within 4 sigma / sqrt(n) of the true distances.
    # Dropout 0.25: the fraction of lost returns within 4 binomial sigmas of 0.25.
    w, slots, truth = scene([(0, 0, 2)])
    assert np.isnan(lidar(w, slots, truth, **{**EXACT, "max_range_m": 3.9}).ranges).all()
    clean = lidar(w, slots, truth, **{**EXACT, "beams": 64}).ranges[0]
    seen = np.isfinite(clean)
    assert seen.sum() == 19
    noisy = lidar(w, slots, truth, **{**EXACT, "beams": 64, "sigma_m": 0.1})
    err = []
    for tick in range(200):
        noisy.step(tick * noisy.every, truth)
        err.append(noisy.ranges[0, seen] - clean[seen])
    err = np.concatenate(err)
    assert np.std(err) == pytest.approx(0.1, rel=0.05)
    assert abs(np.mean(err)) < 4 * 0.1 / math.sqrt(len(err))
    lossy = lidar(w, slots, truth, **{**EXACT, "beams": 64, "dropout": 0.25})
    lost = []
    for tick in range(200):
        lossy.step(tick * lossy.every, truth)
        lost.append(np.isnan(lossy.ranges[0, seen]))
    frac, n = np.mean(lost), np.size(lost)
    assert abs(frac - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)


def test_other_uavs_are_named_by_agent_and_dead_ones_do_not_scan() -> None:
    # Agent 1 sits 3 m ahead of agent 0 (its near face at 2.8 m): agent 0's beam 0 hits it
    # and names agent 1; agent 1's beam 2 (behind) names agent 0. A dead agent's ranges are NaN.
    w, slots, truth = scene([(0, 0, 2), (3, 0, 2)])
    s = lidar(w, slots, truth, **EXACT)
    assert s.ranges[0, 0] == pytest.approx(2.8, abs=1e-9) and s.agent[0, 0] == 1
    assert s.ranges[1, 2] == pytest.approx(2.8, abs=1e-9) and s.agent[1, 2] == 0
    assert s.hit[0, 0] == slots[1]
    dead = dataclasses.replace(truth, alive=np.array([True, False]))
    s.step(s.every, dead)
    assert np.isnan(s.ranges[1]).all() and s.ranges[0, 0] == pytest.approx(2.8, abs=1e-9)


@pytest.mark.parametrize("physics", ["fast", "bullet"])
def test_one_seed_gives_one_scan_and_both_backends_agree(physics: str) -> None:
    w, slots, truth = scene([(0, 0, 2), (3, 1, 2)], physics=physics)
    cfg = {"enabled": True, "beams": 32, "sigma_m": 0.05, "dropout": 0.1}
    a = lidar(w, slots, truth, seed=5, **cfg).ranges
    b = lidar(w, slots, truth, seed=5, **cfg).ranges
    assert np.array_equal(a, b, equal_nan=True)
    wf, sf, tf = scene([(0, 0, 2), (3, 1, 2)], physics="fast")
    ref = lidar(wf, sf, tf, seed=5, **cfg).ranges
    assert np.array_equal(np.isnan(a), np.isnan(ref))
    assert np.nanmax(np.abs(a - ref)) < 2e-3  # tests/core/test_rays.py: CROSS_TOL_M


def test_a_backend_without_rays_is_a_config_error() -> None:
    w, slots, truth = scene([(0, 0, 2)])
    setting = Setting(1, 0.0025, 9.81, np.zeros((0, 6)), np.random.default_rng(0), None, slots)
    with pytest.raises(ConfigError, match="uav.sensors.lidar.enabled"):
        Lidar(dataclasses.replace(Lidar.defaults, enabled=True), setting, truth)


def test_one_config_on_a_wall_a_pillar_and_a_slope_agrees_across_backends() -> None:
    # The same 3-D lidar (32 beams x 8 channels over +-45 deg, exact) on two UAVs among the
    # wall (face at x = 4), a 1 x 1 m pillar yawed 30 deg at (1, -3) and a terrain slope
    # z = 0.5 (-5 - x) over x in -20..-5: every beam returns on one backend iff on the other,
    # what it hits is the same, and the ranges agree within CROSS_TOL_M = 2 mm (Bullet rounds
    # box edges by its margin; faces, the ground and the slope agree within 1e-5 m).
    from skyswarm.core.backends.terrain import Heightfield

    x = -20.0 + np.arange(16)
    slope = Heightfield(np.tile(0.5 * (-5.0 - x), (41, 1)), 1.0, (-20.0, -20.0))
    scans = []
    for physics in ("bullet", "fast"):
        w, slots, truth = scene([(0, 0, 2), (-2, 2, 3)], yaws=[0.3, 2.5], physics=physics)
        pillar = w.add_box((1.0, -3.0, 2.0), (1.0, 1.0, 4.0), yaw_rad=math.pi / 6)
        terrain = w.add_heightfield(slope)
        cfg = dict(EXACT, beams=32, channels=8, vfov_deg=90.0, max_range_m=20.0)
        s = lidar(w, slots, truth, **cfg)
        scans.append((s.ranges, s.hit))
    (rb, hb), (rf, hf) = scans
    assert np.array_equal(np.isnan(rb), np.isnan(rf)) and np.array_equal(hb, hf)
    for what in (-2, pillar, terrain, GROUND):  # the wall, the pillar, the slope, the ground
        assert np.count_nonzero(hf == what) >= 4, what
    assert np.nanmax(np.abs(rb - rf)) < 2e-3
    flat = (hf == GROUND) | (hf == terrain) | (hf == -2)
    assert np.abs(rb[flat] - rf[flat]).max() < 1e-5


@pytest.mark.parametrize("physics", ["fast", "bullet"])
def test_beams_never_see_their_own_uav_of_the_shipped_airframe(physics: str) -> None:
    # The shipped quad_x: on Bullet its mesh is six convex parts (hub, arms, motors, rotors,
    # legs, nose), and a beam from the centre met the nose, legs or arms at 0-6 cm. A sphere
    # of 16 x 9 beams from 3 m up sees no part of its own UAV, and the downward rangefinder
    # the ground 3 m below.
    from skyswarm.uav.config import load_uav_config
    from skyswarm.uav.swarm import add_uav_bodies

    w = make_world(physics)
    w.add_ground()
    pos = np.array([[0.0, 0.0, 3.0]])
    slots = add_uav_bodies(w, load_uav_config().airframe, pos, np.zeros(1))
    zeros = np.zeros((1, 3))
    truth = Truth(pos, zeros, zeros, zeros, zeros, np.eye(3)[None], np.ones(1, dtype=bool))
    s = lidar(w, slots, truth, sigma_m=0.0, enabled=True, beams=16, channels=9, vfov_deg=180.0)
    assert (s.hit != slots[0]).all()
    assert s.hit[0, :16].tolist() == [GROUND] * 16  # the lowest row, straight down
    assert s.ranges[0, :16] == pytest.approx([3.0] * 16, abs=1e-6)
    down = lidar(w, slots, truth, cls=Rangefinder, enabled=True, sigma_m=0.0)
    assert down.hit[0, 0] == GROUND and down.ranges[0, 0] == pytest.approx(3.0, abs=1e-6)
