"""Plan geometry without flying: turn radius, fly-by fillets, fly-over turns, RF arcs,
racetracks, lawn-mower and figure-eight patterns, projection onto segments."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skyswarm.missions.flight_plan import geometry as geo


def heading_jumps(path: list) -> list[float]:
    """Angle (rad) between the end tangent of each segment and the start of the next."""
    out = []
    for a, b in zip(path, path[1:]):
        u, v = a.tangent_end, b.tangent_start
        out.append(abs(math.atan2(u[0] * v[1] - u[1] * v[0], float(u @ v))))
    return out


def gaps(path: list) -> list[float]:
    """Distance between the end of each segment and the start of the next, m."""
    return [float(np.linalg.norm(a.point(a.length) - b.point(0.0))) for a, b in zip(path, path[1:])]


def test_turn_radius_is_v_squared_over_g_tan_bank() -> None:
    assert geo.turn_radius(5.0, 30.0, 9.81) == pytest.approx(25.0 / (9.81 * math.tan(math.pi / 6)))
    assert geo.turn_radius(5.0, 30.0) == pytest.approx(4.414, abs=1e-3)
    assert geo.turn_radius(10.0, 30.0) == pytest.approx(4 * geo.turn_radius(5.0, 30.0))


def test_tf_line_ends_exactly_at_its_fix_and_projects_signed_cross_track() -> None:
    seg = geo.line((0, 0, 5), (40, 0, 5))
    assert np.allclose(seg.point(seg.length), (40, 0, 5))
    pr = seg.project(np.array([10.0, 0.3, 5.0]))
    assert pr.s == pytest.approx(10.0) and pr.cross == pytest.approx(0.3)  # left: positive
    assert seg.project(np.array([-2.0, -1.0, 5.0])).s == pytest.approx(-2.0)


def test_fly_by_fillet_is_tangent_to_both_lines_with_the_turn_radius() -> None:
    a, b = geo.line((0, 0, 5), (40, 0, 5)), geo.line((40, 0, 5), (40, 40, 5))
    r = 8.0
    a2, arc, b2 = geo.fillet(a, b, r)
    assert arc.radius == pytest.approx(r)
    assert arc.sweep == pytest.approx(math.pi / 2)  # a left turn of 90 deg
    lead = r * math.tan(math.pi / 4)  # the turn starts R tan(dpsi / 2) before the fix
    assert np.allclose(a2.b, (40 - lead, 0, 5)) and np.allclose(b2.a, (40, lead, 5))
    assert max(heading_jumps([a2, arc, b2])) < 1e-9 and max(gaps([a2, arc, b2])) < 1e-9
    # the arc stays within R (1 - cos 45) / cos 45 of the corner: 3.3 m for R = 8 m
    mid = arc.point(arc.length / 2)
    assert np.hypot(mid[0] - 40, mid[1]) == pytest.approx(r / math.cos(math.pi / 4) - r)


def test_fillet_radius_shrinks_to_fit_short_lines_and_straight_legs_are_left_alone() -> None:
    a, b = geo.line((0, 0, 5), (4, 0, 5)), geo.line((4, 0, 5), (4, 40, 5))
    a2, arc, _ = geo.fillet(a, b, 8.0)
    assert arc.radius == pytest.approx(2.0)  # half of the 4 m line at 90 deg
    c = geo.line((4, 0, 5), (30, 0, 5))
    assert geo.fillet(a, c, 8.0)[1] is None


def test_fly_over_turn_passes_the_fix_then_heads_for_the_next() -> None:
    nxt = geo.line((40, 0, 5), (40, -40, 5))
    path = geo.fly_over_turn(np.array([1.0, 0.0]), nxt, 6.0)
    assert np.allclose(path[0].point(0.0)[:2], (40, 0))  # starts over the fix
    assert max(heading_jumps(path)) < 1e-6 and max(gaps(path)) < 1e-6
    last = path[-1]
    assert np.allclose(last.b, (40, -40, 5))
    assert all(isinstance(s, geo.Arc) and s.radius == pytest.approx(6.0) for s in path[:-1])
    assert sum(s.sweep for s in path[:-1]) < 0  # a right turn towards (40, -40)


def test_rf_arc_keeps_its_radius_and_ends_at_the_fix() -> None:
    arcs = geo.rf_arc((10, 0, 5), (30, 20, 5), (10, 20), "left", 0, 5.0)
    pts = np.concatenate([a.sample(0.5) for a in arcs])
    r = np.hypot(pts[:, 0] - 10, pts[:, 1] - 20)
    assert np.max(np.abs(r - 20.0)) < 1e-9
    assert np.allclose(arcs[-1].point(arcs[-1].length)[:2], (30, 20))
    assert sum(a.length for a in arcs) == pytest.approx(20 * math.pi / 2)
    right = geo.rf_arc((10, 0, 5), (30, 20, 5), (10, 20), "right", 0, 5.0)
    assert sum(a.length for a in right) == pytest.approx(20 * 3 * math.pi / 2)  # the long way


@pytest.mark.parametrize("direction", ["left", "right"])
def test_racetrack_lap_closes_on_its_fix(direction: str) -> None:
    lap = geo.racetrack((20, 0), 30.0, direction, 25.0, 12.0, 5.0, 5.0, 0, 5.0)
    start, end = lap[0].point(0.0), lap[-1].point(lap[-1].length)
    assert np.linalg.norm(end - start) < 1e-9 and np.allclose(start[:2], (20, 0))
    assert max(heading_jumps(lap)) < 1e-9 and max(gaps(lap)) < 1e-9
    assert sum(s.length for s in lap) == pytest.approx(2 * 25.0 + math.pi * 12.0)
    assert np.allclose(lap[0].tangent_start, geo.course_vector(30.0))  # inbound course
    side = np.sign(lap[0].sweep)
    assert side == (1.0 if direction == "left" else -1.0)


def test_racetrack_climbs_linearly_over_the_lap() -> None:
    lap = geo.racetrack((0, 0), 0.0, "right", 20.0, 10.0, 5.0, 9.0, 0, 5.0)
    z = np.concatenate([s.sample(1.0)[:, 2] for s in lap])
    assert z[0] == pytest.approx(5.0) and z[-1] == pytest.approx(9.0)
    assert np.all(np.diff(z) >= -1e-12)


def test_lawnmower_passes_cover_the_rectangle_with_a_swath_equal_to_the_separation() -> None:
    path = geo.lawnmower((0, 0), 0.0, 80.0, 100.0, 10.0, 5.0, 0, 5.0)
    lines = [s for s in path if isinstance(s, geo.Line)]
    assert len(lines) == 8
    assert sorted(float(s.a[0]) for s in lines) == pytest.approx([5 + 10 * i for i in range(8)])
    assert all(s.length == pytest.approx(100.0) for s in lines)
    arcs = [s for s in path if isinstance(s, geo.Arc)]
    assert all(a.radius == pytest.approx(5.0) for a in arcs)  # U-turns outside the area
    assert all(not (0 < a.point(a.length / 2)[1] < 100) for a in arcs)
    assert max(heading_jumps(path)) < 1e-9 and max(gaps(path)) < 1e-9
    pts = geo.polyline(path, 0.5)
    xs, ys = np.meshgrid(np.arange(0.25, 80, 0.5), np.arange(0.25, 100, 0.5))
    from scipy.spatial import cKDTree

    d, _ = cKDTree(pts[:, :2]).query(np.stack([xs.ravel(), ys.ravel()], axis=1))
    assert np.mean(d <= 5.0 + 1e-9) == 1.0  # the geometric track covers all of it


def test_lawnmower_of_uneven_width_spaces_passes_no_wider_than_asked() -> None:
    offsets = geo.lawnmower_passes(75.0, 10.0)
    assert offsets[0] == pytest.approx(5.0) and offsets[-1] == pytest.approx(70.0)
    assert np.max(np.diff(offsets)) <= 10.0 and len(offsets) == 8


def test_figure_eight_crosses_its_point_with_a_continuous_heading() -> None:
    path = geo.figure8((10, 10), 90.0, 6.0, 5.0, 0, 5.0)
    assert max(heading_jumps(path)) < 1e-9 and max(gaps(path)) < 1e-9
    assert np.allclose(path[0].point(0)[:2], (10, 10)) and np.allclose(
        path[-1].point(path[-1].length)[:2], (10, 10)
    )
    mid = len(path) // 2  # the crossing between the two circles
    assert np.allclose(path[mid].point(0)[:2], (10, 10))
    assert sum(a.sweep for a in path[:mid]) == pytest.approx(2 * math.pi)  # left circle
    assert sum(a.sweep for a in path[mid:]) == pytest.approx(-2 * math.pi)  # then right
    assert sum(a.length for a in path) == pytest.approx(4 * math.pi * 6.0)


def test_arc_projection_tells_before_start_from_past_end() -> None:
    arc = geo.arc_through((0, 0), (10, 0), math.pi / 2, 5, 5, 0, 5.0)  # quarter, left
    assert arc.project(np.array([10.0, -1.0, 5.0])).s < 0  # just before the start
    assert arc.project(np.array([-1.0, 10.0, 5.0])).s > arc.length  # just past the end
    pr = arc.project(np.array([0.0, 11.0, 5.0]))
    assert pr.cross == pytest.approx(-1.0)  # outside a left turn: right of the track
