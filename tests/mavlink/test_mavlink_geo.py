"""Far from home the world is still flat (core/geo.py): what a ground station reads and what it
commands 7.5 km out, with real pymavlink clients in lockstep (harness.py).

Numbers: configs/mavlink.toml's origin is Zurich at 488 m; the vehicle's home is the origin,
CoM at rest 0.09 m up. 7.5 km out the tangent plane of the origin stands d^2 / 2R = 4.41 m
above the ground (R = 6,371 km): before, GLOBAL_POSITION_INT.alt there read 4.41 m more than
HOME_POSITION.altitude + relative_alt, and a target "10 m above home" was flown at 5.6 m.
"""

from __future__ import annotations

import math

import numpy as np
import pymap3d

from skyswarm.core.geo import wgs84_to_enu
from tests.mavlink.harness import mav_run_fixture  # noqa: F401  (the mav_run fixture)
from tests.mavlink.test_mavlink_flight import _upload, take_off

ORIGIN = (47.397742, 8.545594, 488.0)  # configs/mavlink.toml [geo] origin
FAR = np.array([6000.0, -4500.0])  # m ENU: 7.5 km south-east of the origin and of home
REPOSITION, MISSION_START, ACCEPTED, DENIED = 192, 300, 0, 2
RELATIVE_INT, GLOBAL_INT = 6, 5  # MAV_FRAME_GLOBAL_RELATIVE_ALT_INT, MAV_FRAME_GLOBAL_INT


def _far_lat_lon(offset=(0.0, 0.0)) -> tuple[int, int]:
    """degE7 of FAR + offset m: the origin's tangent plane horizontally (pymap3d, unchanged)."""
    lat, lon, _ = pymap3d.enu2geodetic(FAR[0] + offset[0], FAR[1] + offset[1], 0.0, *ORIGIN)
    return int(round(float(lat) * 1e7)), int(round(float(lon) * 1e7))


def _teleport(run, xyz) -> None:
    """Put vehicle 0's body at `xyz` (m ENU), level and at rest (World.reset_bodies)."""
    v = run.service.vehicles[0]
    still = np.zeros((1, 3))
    run.sim.world.reset_bodies(
        np.array([v.swarm.slots[v.index]]), np.array([xyz], dtype=float),
        np.array([[0.0, 0.0, 0.0, 1.0]]), still, still,
    )  # fmt: skip


def _same_poll(run, kind_a: str, kind_b: str):
    """The last pair of messages `kind_a`, `kind_b` read at the same poll (one snapshot)."""
    for t, i, b in reversed(run.log):
        if i == 0 and b.get_type() == kind_b:
            for t2, i2, a in reversed(run.log):
                if t2 == t and i2 == 0 and a.get_type() == kind_a:
                    return a, b
    raise AssertionError(f"no {kind_a} and {kind_b} of the same poll")


def test_far_from_home_alt_minus_home_is_relative_alt_is_minus_local_z(mav_run):
    # The vehicle, disarmed, put back at 20 m over FAR before every poll (it falls 2 mm in
    # the poll's 20 ms): one spot 7.5 km from home for 2.5 s of telemetry.
    run = mav_run()
    spot = [*FAR, 20.0]
    run.pump(2.5, every=lambda: _teleport(run, spot))
    g, local = _same_poll(run, "GLOBAL_POSITION_INT", "LOCAL_POSITION_NED")
    home = run.last("HOME_POSITION")
    z = 20.0  # the poll's snapshot is taken before its ticks, right after the teleport
    assert home.altitude == 488_090  # mm: the origin's 488 m + the CoM at rest, 0.09 m
    assert abs(g.relative_alt / 1000 + local.z) <= 0.0005 + 1e-5  # mm rounding, float32 z
    assert abs(local.z + (z - 0.09)) < 1e-5
    assert abs(g.alt - home.altitude - g.relative_alt) <= 1  # before: 4,406 mm apart
    assert abs(g.alt / 1000 - (488.0 + z)) <= 0.0005
    # and horizontally where the world puts it (1e-7 deg: 1.1 cm)
    enu = wgs84_to_enu(np.array([[g.lat / 1e7, g.lon / 1e7, g.alt / 1000]]), ORIGIN)[0]
    assert np.hypot(*(enu[:2] - FAR)) < 0.02 and abs(enu[2] - z) <= 0.0005


def test_do_reposition_10_m_above_home_7_5_km_out_flies_at_10_m(mav_run):
    run = mav_run()
    take_off(run, 5.0)
    v = run.service.vehicles[0]
    lat, lon = _far_lat_lon()
    c = run.clients[0]
    nan = math.nan
    c.mav.command_int_send(1, 1, RELATIVE_INT, REPOSITION, 0, 0, -1, 0, 0, nan, lat, lon, 10.0)
    assert run.wait("COMMAND_ACK", 1.0, test=lambda m: m.command == REPOSITION).result == ACCEPTED
    target = v.hold_xyz.copy()
    assert abs(target[2] - (0.09 + 10.0)) < 1e-6  # the vehicle's target: before, 5.68 m
    assert np.hypot(*(target[:2] - FAR)) < 0.02  # the command's 1e-7 deg
    # A short flight to it: the body put 15 m short of the target at 5 m (where the flight
    # from home would be); it climbs to 10 m above home and stays.
    _teleport(run, [FAR[0] - 15.0, FAR[1] + 5.0, 5.09])
    run.pump(10.0)
    truth = run.truth()
    assert np.hypot(*(truth[:2] - target[:2])) < 0.3 and abs(truth[2] - 10.09) < 0.1
    g, local = _same_poll(run, "GLOBAL_POSITION_INT", "LOCAL_POSITION_NED")
    assert abs(g.relative_alt / 1000 - 10.0) < 0.1 and abs(local.z + 10.0) < 0.1
    assert abs(g.alt - run.last("HOME_POSITION").altitude - g.relative_alt) <= 1
    # A place 90 deg or more from the origin has no point in the flat world: refused
    mirror = -473977420, 85455940  # Zurich mirrored across the equator: 94.8 deg away
    c.mav.command_int_send(1, 1, RELATIVE_INT, REPOSITION, 0, 0, -1, 0, 0, nan, *mirror, 10.0)
    assert run.wait("COMMAND_ACK", 1.0, test=lambda m: m.command == REPOSITION).result == DENIED
    assert (v.hold_xyz == target).all()


def _item(seq: int, command: int, frame: int, lat: int, lon: int, alt: float) -> tuple:
    """MISSION_ITEM_INT fields after the target ids (lat, lon degE7; params 0, yaw NaN)."""
    return (seq, frame, command, 0, 1, 0.0, 0.0, 0.0, math.nan, lat, lon, alt, 0)


def test_mission_waypoints_7_5_km_out_10_m_above_home_and_at_this_height(mav_run):
    # Item 1: AMSL frame, altitude NaN: "this height" (before: the height taken as an AMSL
    # altitude, a target 488 m under the ground). Item 2: 10 m above home, 20 m on.
    run = mav_run()
    v = run.service.vehicles[0]
    lat1, lon1 = _far_lat_lon()
    lat2, lon2 = _far_lat_lon((0.0, 20.0))
    items = [
        _item(0, 22, RELATIVE_INT, 0, 0, 5.0),
        _item(1, 16, GLOBAL_INT, lat1, lon1, math.nan),
        _item(2, 16, RELATIVE_INT, lat2, lon2, 10.0),
    ]
    mirror = _item(0, 16, RELATIVE_INT, -473977420, 85455940, 10.0)  # 94.8 deg away
    assert _upload(run, [mirror]) == 10  # MAV_MISSION_INVALID_PARAM5_X: off the flat world
    assert _upload(run, items) == ACCEPTED
    assert run.command(400, 1) == ACCEPTED  # arm
    assert run.command(MISSION_START, 0, 2) == ACCEPTED
    assert run.pump(15.0, lambda i, m: m.get_type() == "MISSION_CURRENT" and m.seq == 1)
    run.pump(0.1)
    row = v.row
    first = v.targets.xyz[row].copy()
    assert np.hypot(*(first[:2] - FAR)) < 0.02 and abs(first[2] - v.pos[2]) < 1e-9
    assert 4.0 < first[2] < 6.0  # the takeoff's 5 m, within NAV_MC_ALT_RAD
    _teleport(run, first)  # there: item 1 is reached, item 2 is next
    assert run.pump(2.0, lambda i, m: m.get_type() == "MISSION_CURRENT" and m.seq == 2)
    run.pump(run.service.poll_s)  # item 2's first step sets its target
    second = v.targets.xyz[row].copy()
    assert abs(second[2] - (0.09 + 10.0)) < 1e-6  # before: 5.68 m
    assert np.hypot(*(second[:2] - (FAR + [0.0, 20.0]))) < 0.02
    reached = run.pump(15.0, lambda i, m: m.get_type() == "MISSION_ITEM_REACHED" and m.seq == 2)
    assert reached is not None and abs(run.truth()[2] - 10.09) < 0.15
