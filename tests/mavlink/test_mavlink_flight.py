"""Real pymavlink clients fly skyswarm vehicles over UDP on 127.0.0.1 (lockstep, harness.py).

Numbers: home is the start (CoM at rest), so LOCAL_POSITION_NED reads z = 0 on the ground
and -5 at 5 m; [geo] origin altitude 488 m, rest height 0.09 m: home AMSL 488.09 m.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from skyswarm.mavlink import modes
from tests.mavlink.harness import mav_run_fixture  # noqa: F401  (the mav_run fixture)

ARM, TAKEOFF, LAND, SET_MODE, MISSION_START = 400, 22, 21, 176, 300
SET_INTERVAL = 511
HOME_AMSL = 488.0 + 0.09


def heartbeat_mode(run, vehicle=0):
    return run.wait("HEARTBEAT", 1.5, vehicle).custom_mode


def take_off(run, height=5.0, vehicle=0):
    assert run.command(ARM, 1, vehicle=vehicle) == 0
    assert (
        run.command(
            TAKEOFF, 0, 0, 0, math.nan, math.nan, math.nan, HOME_AMSL + height, vehicle=vehicle
        )
        == 0
    )
    run.pump(15.0, lambda i, m: run.service.vehicles[vehicle].mode is modes.HOLD)


def test_heartbeat_is_px4s_and_streams_keep_their_rates(mav_run):
    run = mav_run()
    hb = run.last("HEARTBEAT")
    assert (hb.type, hb.autopilot) == (2, 12)  # quadrotor, PX4
    assert hb.custom_mode == (4 << 16) | (3 << 24)  # AUTO.LOITER (Hold) on the ground
    assert not hb.base_mode & 128 and hb.system_status == 3  # disarmed, standby
    start = len(run.log)
    run.pump(4.0)
    # 50 Hz polls: 1 Hz -> every 50 polls, 15 Hz -> every 3 polls (60 ms), 5 Hz -> 10 polls
    for kind, period_ms in (("ATTITUDE", 60), ("GLOBAL_POSITION_INT", 200), ("VFR_HUD", 240)):
        stamps = [round(t * 1000) for t, _, m in run.log[start:] if m.get_type() == kind]
        assert set(np.diff(stamps)) == {period_ms}, kind  # sim ms at receipt (lockstep)
    beats = [t for t, _, m in run.log[start:] if m.get_type() == "HEARTBEAT"]
    assert np.allclose(np.diff(beats), 1.0)
    ext = run.last("EXTENDED_SYS_STATE")
    assert ext.landed_state == 1  # on the ground
    assert abs(run.last("LOCAL_POSITION_NED").z) < 0.02  # the legs settle by 1 cm


def test_arm_take_off_to_5_m_refuse_disarm_in_air_and_land(mav_run):
    run = mav_run()
    assert run.command(TAKEOFF, 0, 0, 0, 0, 0, 0, HOME_AMSL + 5) == 2  # disarmed: DENIED
    take_off(run, 5.0)
    run.pump(2.0)
    pos = run.wait("GLOBAL_POSITION_INT", 1.0)
    assert abs(pos.relative_alt / 1000 - 5.0) < 0.3
    assert abs(run.wait("LOCAL_POSITION_NED", 2.0).z + 5.0) < 0.3
    assert abs(run.truth()[2] - (0.09 + 5.0)) < 0.3
    assert run.wait("EXTENDED_SYS_STATE", 1.5).landed_state == 2  # in air
    assert run.command(ARM, 0) == 2  # disarm in the air: DENIED, as PX4
    assert run.wait("HEARTBEAT", 1.5).base_mode & 128  # still armed
    assert run.command(LAND) == 0
    assert heartbeat_mode(run) == (4 << 16) | (6 << 24)
    run.pump(20.0, lambda i, m: m.get_type() == "EXTENDED_SYS_STATE" and m.landed_state == 1)
    assert abs(run.truth()[2] - 0.09) < 0.02
    run.pump(3.0)  # COM_DISARM_LAND 2 s
    assert not run.wait("HEARTBEAT", 1.5).base_mode & 128


def _upload(run, items, vehicle=0):
    c = run.clients[vehicle]
    c.mav.mission_count_send(vehicle + 1, 1, len(items), 0)
    for _ in items:
        req = run.wait("MISSION_REQUEST_INT", 1.0, vehicle)
        c.mav.mission_item_int_send(vehicle + 1, 1, *items[req.seq])
    return run.wait("MISSION_ACK", 1.0, vehicle).type


def _item(seq, command, lat=0.0, lon=0.0, alt=0.0, p1=0.0):
    return (
        seq,
        6,
        command,
        0,
        1,
        p1,
        0.0,
        0.0,
        math.nan,
        int(round(lat * 1e7)),
        int(round(lon * 1e7)),
        alt,
        0,
    )


def test_four_item_mission_uploads_downloads_flies_and_lands(mav_run):
    run = mav_run()
    lat0, lon0 = 47.397742, 8.545594
    north = 10.0 / 111_194.9  # deg of latitude per 10 m (near enough: the check is 2 m)
    items = [
        _item(0, 22, alt=5.0),  # NAV_TAKEOFF to 5 m
        _item(1, 16, lat0 + north, lon0, 5.0),  # 10 m north
        _item(2, 16, lat0 + north, lon0 + 10.0 / 75_137.0, 5.0),  # then 10 m east
        _item(3, 21, lat0 + north, lon0 + 10.0 / 75_137.0),  # NAV_LAND there
    ]
    assert _upload(run, items) == 0
    c = run.clients[0]
    c.mav.mission_request_list_send(1, 1, 0)
    assert run.wait("MISSION_COUNT", 1.0).count == 4
    c.mav.mission_request_int_send(1, 1, 2, 0)
    back = run.wait("MISSION_ITEM_INT", 1.0)
    assert (back.seq, back.command, back.x, back.y) == (2, 16, items[2][9], items[2][10])
    assert run.command(ARM, 1) == 0
    assert run.command(MISSION_START, 0, 3) == 0
    reached = []
    run.pump(
        90.0,
        lambda i, m: (
            m.get_type() == "MISSION_ITEM_REACHED" and reached.append(m.seq) is None and m.seq == 3
        ),
    )
    assert reached == [0, 1, 2, 3]
    truth = run.truth()
    assert np.hypot(truth[0] - 10.0, truth[1] - 10.0) < 1.0  # landed at item 3 (x east)
    assert abs(truth[2] - 0.09) < 0.02
    assert run.wait("EXTENDED_SYS_STATE", 1.5).landed_state == 1
    current = run.wait("MISSION_CURRENT", 1.5)
    assert (current.seq, current.total, current.mission_state) == (3, 4, 5)  # complete


def _velocity_setpoint(run, vn, ve, vd, vehicle=0, mask=0b0000_1101_1100_0111):
    # ignore position (bits 0-2), acceleration (6-8) and yaw rate (11); yaw 0 (north)
    run.clients[vehicle].mav.set_position_target_local_ned_send(
        0, vehicle + 1, 1, 1, mask, 0, 0, 0, vn, ve, vd, 0, 0, 0, 0.0, 0.0
    )


def test_offboard_velocity_then_loss_holds_after_1_s_and_returns_after_5_more(mav_run):
    run = mav_run()
    take_off(run, 5.0)
    assert run.command(SET_MODE, 1, 6) == 2  # OFFBOARD without setpoints: DENIED
    send = lambda: _velocity_setpoint(run, 2.0, 0.0, 0.0)  # noqa: E731  2 m/s north
    run.pump(0.2, every=send)
    assert run.command(SET_MODE, 1, 6, every=send) == 0
    run.pump(4.0, every=send)
    lp = run.wait("LOCAL_POSITION_NED", 1.1, every=send)
    assert abs(lp.vx - 2.0) < 0.1 and abs(lp.vy) < 0.05 and abs(lp.vz) < 0.05
    hb = run.wait("HEARTBEAT", 1.5, every=send)
    assert hb.custom_mode == 6 << 16 and hb.base_mode & 128
    run.pump(0.0)  # the cursor to the end of the log
    last = run.sim.time_s - run.service.poll_s  # the last setpoint went out before that poll
    v = run.service.vehicles[0]
    run.pump(3.0, lambda i, m: v.mode is modes.HOLD)
    held = run.sim.time_s - last
    # COM_OF_LOSS_T = 1 s: the first poll after it (20 ms), seen one poll later
    assert 1.0 < held <= 1.0 + 2 * run.service.poll_s + 1e-9
    run.pump(8.0, lambda i, m: v.mode is modes.RTL)
    assert 6.0 < run.sim.time_s - last <= 6.0 + 3 * run.service.poll_s + 1e-9  # + 5 s hold
    texts = [m.text for _, _, m in run.log if m.get_type() == "STATUSTEXT"]
    assert "Failsafe: offboard lost, holding" in texts


def test_acceleration_setpoints_are_ignored_and_counted(mav_run):
    run = mav_run()
    take_off(run, 3.0)
    for _ in range(3):  # acceleration not ignored (bits 6-8 clear)
        _velocity_setpoint(run, 1.0, 0.0, 0.0, mask=0b0000_1100_0000_0111)
        run.pump(0.1)
    assert run.service.vehicles[0].offboard.unsupported == 3
    assert run.command(SET_MODE, 1, 6) == 2  # no accepted setpoint: still no offboard signal


def _position_setpoint(run, x, y, z, mask, vehicle=0):
    run.clients[vehicle].mav.set_position_target_local_ned_send(
        0, vehicle + 1, 1, 1, mask, x, y, z, 0, 0, 0, 0, 0, 0, 0.0, 0.0
    )


def test_a_non_finite_setpoint_is_refused_whole_and_ignored_fields_stay_out(mav_run):
    # A position setpoint with x = NaN (used) is refused and changes nothing: the vehicle
    # keeps flying the velocity setpoints after it (before: the NaN stayed in the stored
    # position, every velocity setpoint after it was refused as "not finite", and the
    # offboard-loss failsafe put the vehicle in Hold 1 s later).
    run = mav_run()
    take_off(run, 5.0)
    v = run.service.vehicles[0]
    send = lambda: _velocity_setpoint(run, 2.0, 0.0, 0.0)  # noqa: E731  2 m/s north
    run.pump(0.2, every=send)
    assert run.command(SET_MODE, 1, 6, every=send) == 0
    run.pump(1.0, every=send)
    _position_setpoint(run, math.nan, 0.0, -5.0, mask=0b0000_1101_1111_1000)
    run.pump(2.0, every=send)
    assert v.mode is modes.OFFBOARD and v.offboard.kind == "velocity"
    assert v.offboard.unsupported == 1
    assert run.wait("LOCAL_POSITION_NED", 1.1, every=send).vx == pytest.approx(2.0, abs=0.1)
    # x (north) ignored and NaN, y = 3 m east, z = 5 m up: east and height are flown, north
    # held (before: the ignored NaN reached every axis and the setpoint was refused; with
    # x = 0 the ignore bit of north held east instead, and north flew to 0)
    north = run.truth()[1]
    hold = lambda: _position_setpoint(run, math.nan, 3.0, -5.0, mask=0b0000_1101_1111_1001)  # noqa: E731
    run.pump(8.0, every=hold)
    assert v.offboard.kind == "position" and v.offboard.unsupported == 1
    truth = run.truth()
    assert abs(truth[0] - 3.0) < 0.1 and abs(truth[2] - 5.09) < 0.1  # ENU east, up
    assert north > 5.0 and abs(truth[1] - north) < 1.0  # held (measured 0.64 m of braking)


def test_nan_where_a_command_needs_a_number_is_denied_and_the_run_goes_on(mav_run):
    # int(NaN) inside a handler raised ValueError in the tick and ended the whole run: a
    # client could crash every vehicle with one COMMAND_LONG (REQUEST_MESSAGE, param1 NaN).
    run = mav_run()
    nan = math.nan
    for cmd, params in [
        (512, (nan,)),  # REQUEST_MESSAGE of message id NaN
        (511, (nan, 1e6)),  # SET_MESSAGE_INTERVAL of message id NaN
        (510, (math.inf,)),  # GET_MESSAGE_INTERVAL
        (176, (nan, 4, 3)),  # DO_SET_MODE, base mode NaN
        (176, (1, nan, nan)),  # custom main and sub mode NaN
        (224, (nan,)),  # MISSION_SET_CURRENT
        (ARM, (nan,)),  # arm or disarm?
    ]:
        assert run.command(cmd, *params) == 2, cmd  # DENIED
    take_off(run, 3.0)
    assert run.command(ARM, 0, nan) == 2  # disarm in the air, force flag NaN: denied
    assert run.service.vehicles[0].armed
    assert run.wait("HEARTBEAT", 1.5).custom_mode == modes.HOLD.custom_mode


def test_targets_off_the_globe_or_without_a_height_are_refused(mav_run):
    # Before: a mission whose NAV_TAKEOFF had altitude NaN uploaded, and MISSION_START ended
    # the run (CommandError: position xyz ... nan, raised in the tick); a waypoint or a
    # DO_REPOSITION at latitude 95 or 200 was accepted and pymap3d put its target thousands of
    # km below the ground, where the vehicle flew.
    run = mav_run()
    lat0, lon0 = 47.397742, 8.545594
    assert _upload(run, [_item(0, 22, alt=math.nan)]) == 12  # MAV_MISSION_INVALID_PARAM7
    assert _upload(run, [_item(0, 16, 95.0, lon0, 5.0)]) == 10  # INVALID_PARAM5_X
    assert _upload(run, [_item(0, 16, lat0, 200.0, 5.0)]) == 11  # INVALID_PARAM6_Y
    assert not run.service.vehicles[0].mission.items
    take_off(run, 5.0)
    v = run.service.vehicles[0]
    hold = v.hold_xyz.copy()
    assert run.command(192, -1, 0, 0, math.nan, 200.0, lon0, HOME_AMSL + 5) == 2  # DENIED
    assert (v.hold_xyz == hold).all() and v.mode is modes.HOLD
    mask = 0b0000_1101_1111_1000  # position only
    run.clients[0].mav.set_position_target_global_int_send(
        0, 1, 1, 6, mask, 950_000_000, int(lon0 * 1e7), 5.0, 0, 0, 0, 0, 0, 0, 0.0, 0.0
    )
    run.pump(1.0)
    assert v.offboard.unsupported == 1 and v.offboard.kind == ""
    assert abs(run.truth()[2] - 5.09) < 0.1


def test_parameter_set_limits_speed_in_flight(mav_run):
    run = mav_run()
    c = run.clients[0]
    c.mav.param_request_read_send(1, 1, b"MPC_XY_VEL_MAX", -1)
    assert run.wait("PARAM_VALUE", 1.0).param_value == pytest.approx(8.0)  # quad_x's limit
    take_off(run, 5.0)
    c.mav.param_set_send(1, 1, b"MPC_XY_VEL_MAX", 2.0, 9)
    value = run.wait("PARAM_VALUE", 1.0)
    assert (value.param_id, value.param_value) == ("MPC_XY_VEL_MAX", pytest.approx(2.0))
    # reposition 40 m north: the position loop alone would ask for up to 8 m/s
    north = 40.0 / 111_194.9
    assert run.command(192, -1, 0, 0, math.nan, 47.397742 + north, 8.545594, HOME_AMSL + 5) == 0
    start = len(run.log)
    run.pump(12.0)
    speeds = [
        math.hypot(m.vx, m.vy) / 100
        for _, _, m in run.log[start:]
        if m.get_type() == "GLOBAL_POSITION_INT"
    ]
    assert 1.9 < max(speeds) < 2.15  # flies at the new limit, not above it
    assert run.service.vehicles[0].swarm.config.control.max_speed_m_s == 2.0


def test_set_message_interval_changes_one_vehicles_rate(mav_run):
    run = mav_run(2)
    assert run.command(SET_INTERVAL, 30, 200_000) == 0  # ATTITUDE at 5 Hz on vehicle 0
    assert run.command(SET_INTERVAL, 24, -1) == 0  # GPS_RAW_INT off
    start = len(run.log)
    run.pump(4.0)
    n = {(i, m.get_type()): 0 for _, i, m in run.log[start:]}
    for _, i, m in run.log[start:]:
        n[(i, m.get_type())] += 1
    assert n[(0, "ATTITUDE")] == 20 and n[(1, "ATTITUDE")] in (66, 67, 68)
    assert (0, "GPS_RAW_INT") not in n and n[(1, "GPS_RAW_INT")] == 4  # PX4: 1 Hz


def test_each_vehicle_has_its_own_system_id_and_port(mav_run):
    run = mav_run(3)
    for i in range(3):
        hb = run.wait("HEARTBEAT", 1.5, i)
        assert hb.get_srcSystem() == i + 1
    assert run.command(ARM, 1, vehicle=2) == 0
    run.pump(0.1)
    assert [v.armed for v in run.service.vehicles] == [False, False, True]


def test_killed_vehicle_stops_its_heartbeat(mav_run):
    run = mav_run(2)
    agent = run.service.vehicles[1].agent
    run.sim.kill(agent, "test")
    start = len(run.log)
    run.pump(3.0)
    kinds = [(i, m.get_type()) for _, i, m in run.log[start:]]
    assert (0, "HEARTBEAT") in kinds and not any(i == 1 for i, _ in kinds)


def _texts(run, start):
    return [m.text for _, _, m in run.log[start:] if m.get_type() == "STATUSTEXT"]


def test_a_takeoff_below_home_climbs_to_the_minimum_takeoff_altitude(mav_run):
    # Before: param7 = 5 (meant above home, read as AMSL as PX4 reads it: 483 m below home)
    # was ACCEPTED and left the vehicle on the ground in AUTO.TAKEOFF for good, its target
    # under the ground. PX4's rule (navigator takeoff.cpp): at least MIS_TAKEOFF_ALT (2.5 m)
    # above home, with a critical STATUSTEXT; the climb at 1.5 m/s takes ~2 s.
    run = mav_run()
    v = run.service.vehicles[0]
    assert run.command(ARM, 1) == 0
    start = len(run.log)
    assert run.command(TAKEOFF, 0, 0, 0, math.nan, math.nan, math.nan, 5.0) == 0
    assert run.pump(6.0, lambda i, m: v.mode is modes.HOLD) is not None
    assert "Using minimum takeoff altitude: 2.50 m" in _texts(run, start)
    run.pump(2.0)
    assert abs(run.truth()[2] - (0.09 + 2.5)) < 0.15
    assert run.wait("EXTENDED_SYS_STATE", 1.5).landed_state == 2  # in air
    # in the air at 5 m, a takeoff to 3 m does not descend (PX4: "Already higher")
    take_off(run, 5.0)
    start = len(run.log)
    assert run.command(TAKEOFF, 0, 0, 0, math.nan, math.nan, math.nan, HOME_AMSL + 3.0) == 0
    run.pump(2.0)
    assert "Already higher than takeoff altitude" in _texts(run, start)
    assert v.mode is modes.HOLD and abs(run.truth()[2] - (0.09 + 5.0)) < 0.15


def test_a_mission_takeoff_item_below_home_climbs_to_the_minimum_and_goes_on(mav_run):
    # Before: a NAV_TAKEOFF 3 m below home (relative frame) was never reached: the mission
    # stayed at item 0 on the ground. Now it climbs to MIS_TAKEOFF_ALT (2.5 m) and goes on.
    run = mav_run()
    items = [_item(0, 22, alt=-3.0), _item(1, 19, alt=math.nan, p1=1.0)]  # then loiter 1 s
    assert _upload(run, items) == 0
    assert run.command(ARM, 1) == 0
    assert run.command(MISSION_START, 0, 1) == 0
    reached = run.wait("MISSION_ITEM_REACHED", 6.0, test=lambda m: m.seq == 0)
    assert reached is not None
    assert abs(run.truth()[2] - (0.09 + 2.5)) < 0.8  # NAV_MC_ALT_RAD
    run.wait("MISSION_ITEM_REACHED", 4.0, test=lambda m: m.seq == 1)


def test_an_unanswered_upload_is_re_asked_every_half_second_of_sim_time_then_cancelled(mav_run):
    # Before: the retries ran on the wall clock, so in lockstep (or at any pace but real
    # time) how much simulated flight passed between re-asks, and whether an upload over a
    # lossy simulated link finished, depended on the machine's speed. Now: RETRY_S = 0.5 s
    # and RETRIES = 10 in simulated time, as PX4's mission manager (hrt time = sim time in
    # SITL lockstep): 11 requests 0.5 s apart, then MISSION_ACK OPERATION_CANCELLED (15).
    run = mav_run()
    start = len(run.log)
    run.clients[0].mav.mission_count_send(1, 1, 2, 0)  # two items announced, none sent
    ack = run.wait("MISSION_ACK", 8.0)
    assert ack.type == 15
    asked = [t for t, _, m in run.log[start:] if m.get_type() == "MISSION_REQUEST_INT"]
    assert all(m.seq == 0 for _, _, m in run.log[start:] if m.get_type() == "MISSION_REQUEST_INT")
    assert len(asked) == 11
    np.testing.assert_allclose(np.diff(asked), 0.5, atol=1e-9)
    acked = next(t for t, _, m in run.log[start:] if m is ack)
    assert acked - asked[-1] == pytest.approx(0.5, abs=1e-9)
    assert not run.service.vehicles[0].mission.items
