"""Front following, segments and the thermal camera (missions/wildfire/follow.py, base.py,
thermal.py, agents.py's edge search): geometry with hand-computed answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skyswarm.missions.wildfire.agents import farthest_along
from skyswarm.missions.wildfire.base import FireMap, plan_arcs, report_of
from skyswarm.missions.wildfire.fire import FireConfig, FireGrid
from skyswarm.missions.wildfire.follow import (
    fit_line_ols,
    fit_line_tls,
    least_turn,
    next_waypoint,
    window_exits,
)
from skyswarm.missions.wildfire.thermal import ThermalCamera, ThermalConfig, footprint_half_m


def test_seed_fit_fails_on_a_north_south_front_and_the_principal_axis_does_not():
    # a front along x = 10 m, cells every 5 m north; one cell a cell-width off the line
    xy = np.array([[10.0, y] for y in range(-20, 25, 5)] + [[15.0, 0.0]])
    ols = fit_line_ols(xy)
    point, d = fit_line_tls(xy)
    assert abs(d[0]) < 0.05  # the principal axis runs north-south (within 3 degrees)
    assert point[0] == pytest.approx(10.5)  # through the centroid
    assert ols is not None and abs(ols[1][1]) < 0.05  # the seed's y(x) fit: east-west, 90 deg off
    assert fit_line_ols(xy[:-1]) is None  # a perfectly straight north-south front: no fit at all
    # the waypoint: the seed's rule from (10, 0) heading north, window half-size 20 m
    wp = next_waypoint(xy, np.array([10.0, 0.0, 40.0]), np.array([0.0, 1.0]), 20.0)
    assert wp[1] == pytest.approx(20.0) and abs(wp[0] - 10.0) < 1.5
    wp_seed = next_waypoint(xy, np.array([10.0, 0.0, 40.0]), np.array([0.0, 1.0]), 20.0, "ols")
    assert abs(wp_seed[1]) < 2.0  # the seed's rule sends it sideways, off the front


def test_window_exits_and_least_turn():
    line = (np.array([0.0, 0.0]), np.array([1.0, 1.0]) / math.sqrt(2))
    ex = window_exits(line, np.array([0.0, 0.0]), 10.0)
    assert np.allclose(ex, [[-10, -10], [10, 10]])
    assert window_exits(line, np.array([50.0, 0.0]), 10.0) is None
    pick = least_turn(ex, np.zeros(2), np.array([0.0, 1.0]))  # heading north: the NE corner
    assert np.allclose(pick, [10, 10])
    pick = least_turn(ex, np.zeros(2), np.array([-1.0, 0.0]))  # heading west: the SW corner
    assert np.allclose(pick, [-10, -10])


def test_arcs_hold_equal_shares_and_match_uavs_by_angle():
    # 36 perimeter points on a circle of 50 m, 3 UAVs at angles 100, 220, 340 degrees
    ang = np.radians(np.arange(0, 360, 10))
    per = 50.0 * np.c_[np.cos(ang), np.sin(ang)]
    uavs = {
        i: 60.0 * np.array([math.cos(math.radians(a)), math.sin(math.radians(a))])
        for i, a in ((7, 100.0), (8, 220.0), (9, 340.0))
    }
    arcs = plan_arcs(per, np.zeros(2), uavs, 0.0)
    assert [round(math.degrees(a.width)) for a in arcs] == [120, 120, 120]  # 12 points each
    assert sum(a.width for a in arcs) == pytest.approx(2 * math.pi)
    for a in arcs:  # every UAV gets the arc it stands in
        assert 0.0 <= a.offset(math.atan2(uavs[a.uav][1], uavs[a.uav][0])) < a.width
    lost = plan_arcs(per, np.zeros(2), {7: uavs[7]}, 0.0)  # one UAV left: the whole ring
    assert len(lost) == 1 and lost[0].width == pytest.approx(2 * math.pi)


def test_arcs_share_the_perimeter_line_by_length_not_by_known_cells():
    # a fire of 50 m radius whose south half the search saw well (30 cells, every 6 degrees
    # from 180 to 354) and whose north half it glimpsed twice (60 and 120 degrees): equal
    # counts (8 cells each) would cut arcs of 156, 48, 48 and 108 degrees, the first 136 m of
    # front, wider than a 100 m footprint can hold while it sweeps; by length along the
    # line through the cells every arc is 90 degrees (78.5 m), starting at the first cell
    ang = np.radians(np.r_[60.0, 120.0, np.arange(180.0, 360.0, 6.0)])
    per = 50.0 * np.c_[np.cos(ang), np.sin(ang)]
    uavs = {
        i: 60.0 * np.array([math.cos(math.radians(a)), math.sin(math.radians(a))])
        for i, a in ((1, 100.0), (2, 190.0), (3, 280.0), (4, 10.0))
    }
    arcs = plan_arcs(per, np.zeros(2), uavs, 0.0)
    assert [round(math.degrees(a.lo), 6) for a in arcs] == [60.0, 150.0, 240.0, 330.0]
    assert [a.width for a in arcs] == pytest.approx([math.pi / 2] * 4)
    north = arcs[0]  # 60..150: its middle on the line at 105 degrees, 50 m out, no cell there
    assert north.uav == 1
    assert north.target == pytest.approx(
        (50.0 * math.cos(math.radians(105.0)), 50.0 * math.sin(math.radians(105.0)))
    )
    for a in arcs:
        assert 0.0 <= a.offset(math.atan2(uavs[a.uav][1], uavs[a.uav][0])) < a.width


def test_farthest_hot_cell_along_a_ray_finds_the_edge_past_a_stale_point():
    # an arc's middle point planned when the fire had a 20 m radius, at (0, 20); the UAV has
    # since seen cells burn out to a ring of 60 m (snapped to 5 m cells): along the ray north,
    # within 10 m of it, the farthest reach is the ring's 60 m, past the stale 20 m
    ang = np.radians(np.arange(0.0, 360.0, 3.0))
    ring = np.round(60.0 * np.c_[np.cos(ang), np.sin(ang)] / 5.0) * 5.0
    inner = np.array([[0.0, 20.0], [5.0, 35.0], [-5.0, 45.0]])
    seen = np.vstack([inner, ring])
    north = np.array([0.0, 1.0])
    assert farthest_along(seen, np.zeros(2), north, 10.0) == pytest.approx(60.0)
    # the strip is the ray's, not the circle's: cells 40 m east of it do not count
    east = np.array([[40.0, 80.0], [0.0, 30.0]])
    assert farthest_along(east, np.zeros(2), north, 10.0) == pytest.approx(30.0)
    assert farthest_along(east, np.zeros(2), north, 40.0) == pytest.approx(80.0)
    # behind the centre (the ray's other half) and nothing seen: 0 (the base's point stands)
    assert farthest_along(np.array([[0.0, -50.0]]), np.zeros(2), north, 10.0) == 0.0
    assert farthest_along(np.zeros((0, 2)), np.zeros(2), north, 10.0) == 0.0
    # off-centre: from (100, 100) along east, cells at x = 130 and 170 on y = 104
    far = np.array([[130.0, 104.0], [170.0, 104.0], [200.0, 120.0]])
    assert farthest_along(far, np.array([100.0, 100.0]), np.array([1.0, 0.0]), 5.0) == 70.0


def test_camera_footprint_and_false_negative_rate():
    assert footprint_half_m(50.0, 90.0) == pytest.approx(50.0)
    cfg = FireConfig(size=(200.0, 200.0), cell_m=5.0)
    g = FireGrid(cfg, np.random.default_rng(0))
    g.state[:] = 1  # everything burning
    cam = ThermalCamera(
        ThermalConfig(fov_deg=90.0, false_negative=0.2), g, np.random.default_rng(1)
    )
    f = cam.frame(np.array([100.0, 100.0, 20.0]), 0.0)  # half 20 m: centres 80.5..117.5 -> 8
    assert f.window == (16, 24, 16, 24)
    hits = [cam.frame(np.array([100.0, 100.0, 20.0]), 0.0).hot.mean() for _ in range(200)]
    se = math.sqrt(0.8 * 0.2 / (64 * 200))
    assert abs(np.mean(hits) - 0.8) < 2.576 * se  # 1 - false negative, within 99 %
    assert cam.frame(np.array([100.0, 100.0, 1.0]), 0.0).empty  # below min altitude


def test_base_map_learns_hot_cells_and_their_perimeter():
    cfg = FireConfig(size=(50.0, 50.0), cell_m=5.0)
    g = FireGrid(cfg, np.random.default_rng(0))
    jj, ii = np.mgrid[0:10, 0:10]
    fm = FireMap(g.shape, g.fuel, g.centres(jj, ii))
    g.state[4:7, 4:7] = 1  # a 3 x 3 fire
    cam = ThermalCamera(
        ThermalConfig(fov_deg=90.0, false_negative=0.0), g, np.random.default_rng(0)
    )
    frame = cam.frame(np.array([25.0, 25.0, 30.0]), 2.0)
    fm.add(report_of(1, np.array([25.0, 25.0]), frame), 2.5)
    assert fm.ever_hot.sum() == 9 and fm.perimeter().sum() == 8  # the ring around the middle
    assert np.nanmax(fm.first_hot_s) == 2.5 and fm.last_seen.max() == 2.0
    # a ring whose middle burnt out before anyone looked: the hole is burnt area, and only the
    # ring's outer edge is perimeter (16 of its 16 cells border the unburnt outside; the
    # middle 3 x 3 are not perimeter although never seen hot)
    g.state[:] = 0
    g.state[3:8, 3:8] = 1
    g.state[4:7, 4:7] = 2
    fm2 = FireMap(g.shape, g.fuel, g.centres(jj, ii))
    fm2.add(report_of(1, np.array([25.0, 25.0]), cam.frame(np.array([25.0, 25.0, 30.0]), 3.0)), 3.0)
    assert fm2.ever_hot.sum() == 16 and fm2.burnt_area().sum() == 25
    assert fm2.perimeter().sum() == 16 and not fm2.perimeter()[4:7, 4:7].any()
    assert np.allclose(fm2.centroid(), [27.5, 27.5])
