"""The PX4 conventions a ground station or MAVSDK relies on, checked with real pymavlink clients:
every telemetry stream at PX4's default rate and with its content, a COMMAND_ACK for every
command (COMMAND_LONG and COMMAND_INT), return to launch on command, and the port rule with its
default ports on 127.0.0.1.

PX4's rates are written out here from PX4's mavlink_main.cpp (MAVLINK_MODE_NORMAL), not read
from skyswarm's stream table, so that a changed rate fails."""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
from pymavlink import mavutil

from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.mavlink import attach
from tests.mavlink.harness import mav_run_fixture  # noqa: F401  (the mav_run fixture)
from tests.mavlink.test_mavlink_flight import ARM, HOME_AMSL, LAND, SET_MODE, TAKEOFF, take_off

RTL, REPOSITION, MISSION_START, SET_CURRENT = 20, 192, 300, 224
SET_INTERVAL, GET_INTERVAL, REQUEST_MESSAGE, CAPABILITIES, GET_HOME = 511, 510, 512, 520, 410
USER_1 = 31000  # MAV_CMD_USER_1: nothing a PX4 autopilot does
ACCEPTED, DENIED, UNSUPPORTED = 0, 2, 3
LAT0, LON0 = 47.397742, 8.545594  # configs/mavlink.toml [geo] origin
M_PER_DEG_LAT = 111_194.9  # m per degree of latitude (the checks are metres)

# PX4 MAVLINK_MODE_NORMAL, Hz; SYSTEM_TIME and MISSION_CURRENT 1 Hz (not normal-mode streams
# in PX4, which sends them on its own schedule)
PX4_NORMAL_HZ = {
    "HEARTBEAT": 1.0,
    "SYS_STATUS": 1.0,
    "EXTENDED_SYS_STATE": 1.0,
    "ATTITUDE": 15.0,
    "ATTITUDE_QUATERNION": 10.0,
    "LOCAL_POSITION_NED": 1.0,
    "GLOBAL_POSITION_INT": 5.0,
    "GPS_RAW_INT": 1.0,
    "ALTITUDE": 1.0,
    "VFR_HUD": 4.0,
    "BATTERY_STATUS": 0.5,
    "HOME_POSITION": 0.5,
    "SYSTEM_TIME": 1.0,
    "MISSION_CURRENT": 1.0,
}


def test_every_stream_at_px4s_default_rate_with_its_content(mav_run):
    run = mav_run(overrides=["uav.battery.enabled=true", "uav.battery.initial_charge=0.8"])
    start = len(run.log)
    run.pump(8.0)
    seen = [(t, m) for t, _, m in run.log[start:]]
    poll_ms = 1000 * run.service.poll_s  # 20 ms at 50 Hz
    for kind, hz in PX4_NORMAL_HZ.items():
        stamps = np.array([round(t * 1000) for t, m in seen if m.get_type() == kind])
        period = round(1000 / hz / poll_ms) * poll_ms  # whole polls: 4 Hz -> 12 polls, 240 ms
        assert len(stamps) >= int(8000 / period), (kind, len(stamps))
        assert set(np.diff(stamps)) == {period}, kind  # sim ms at receipt (lockstep)
    last = {m.get_type(): (t, m) for t, m in seen}
    # timestamps are simulation time: time_boot_ms is the poll's simulated ms
    t, st = last["SYSTEM_TIME"]
    assert abs(st.time_boot_ms - t * 1000) <= poll_ms
    epoch = [
        m.time_unix_usec - 1000 * m.time_boot_ms for _, m in seen if m.get_type() == "SYSTEM_TIME"
    ]
    assert max(epoch) - min(epoch) <= 1000  # wall-clock start + sim time: one fixed epoch
    t, att = last["ATTITUDE"]
    assert abs(att.time_boot_ms - t * 1000) <= poll_ms
    # level, compass heading 0 (north: NED yaw 0); on the ground at home, at the [geo] origin
    assert abs(att.roll) < 0.02 and abs(att.pitch) < 0.02 and abs(att.yaw) < 0.02
    gpi = last["GLOBAL_POSITION_INT"][1]
    assert abs(gpi.lat / 1e7 - LAT0) * M_PER_DEG_LAT < 0.05 and abs(gpi.relative_alt) < 20
    home = last["HOME_POSITION"][1]
    assert abs(home.latitude / 1e7 - LAT0) * M_PER_DEG_LAT < 0.05
    assert abs(home.altitude / 1000 - HOME_AMSL) < 0.02
    gps = last["GPS_RAW_INT"][1]
    assert gps.fix_type == 3 and gps.satellites_visible > 5
    assert abs(gps.lat / 1e7 - LAT0) * M_PER_DEG_LAT < 10.0  # the GPS fix: metres of error
    assert last["EXTENDED_SYS_STATE"][1].landed_state == 1  # MAV_LANDED_STATE_ON_GROUND
    alt = last["ALTITUDE"][1]
    assert abs(alt.altitude_relative) < 0.02 and abs(alt.altitude_amsl - HOME_AMSL) < 0.02
    assert last["MISSION_CURRENT"][1].total == 0  # no mission yet
    # BATTERY_STATUS and SYS_STATUS from the battery model: 80 % charge, and draining in flight
    battery, sys_status = last["BATTERY_STATUS"][1], last["SYS_STATUS"][1]
    assert battery.battery_remaining == 80 and sys_status.battery_remaining == 80
    assert battery.voltages[0] == sys_status.voltage_battery > 10_000  # mV
    take_off(run, 5.0)
    run.pump(10.0)
    assert run.last("BATTERY_STATUS").battery_remaining < 80


def _command_int(run, cmd, *params, x=0, y=0, z=0.0, frame=6, vehicle=0):
    """COMMAND_INT (frame 6: GLOBAL_RELATIVE_ALT_INT; x, y degE7) -> its COMMAND_ACK result."""
    p = list(params) + [0.0] * (4 - len(params))
    run.clients[vehicle].mav.command_int_send(vehicle + 1, 1, frame, cmd, 0, 0, *p, x, y, z)
    return run.wait("COMMAND_ACK", 1.0, vehicle, lambda m: m.command == cmd).result


@pytest.mark.parametrize("kind", ["long", "int"])
def test_every_command_gets_its_command_ack_with_px4s_result(mav_run, kind):
    # Each listed command, on a landed, disarmed vehicle without a mission, then armed; the
    # same results through COMMAND_LONG and COMMAND_INT (param 5..7 of the long form are x, y, z
    # of the int form; none of these commands uses them)
    run = mav_run()

    def send(cmd, *params):
        if kind == "long":
            return run.command(cmd, *params)
        return _command_int(run, cmd, *params)

    expected = [
        ((TAKEOFF,), DENIED),  # disarmed
        ((LAND,), DENIED),
        ((RTL,), DENIED),
        ((REPOSITION, -1, 0, 0, math.nan), DENIED),  # on the ground
        ((MISSION_START,), DENIED),  # no mission
        ((SET_CURRENT, 1), DENIED),
        ((SET_MODE, 1, 4, 4), DENIED),  # AUTO.MISSION without a mission
        ((SET_MODE, 1, 6), DENIED),  # OFFBOARD without setpoints
        ((SET_MODE, 0, 4, 3), UNSUPPORTED),  # no MAV_MODE_FLAG_CUSTOM_MODE_ENABLED
        ((SET_MODE, 1, 9), UNSUPPORTED),  # no PX4 main mode 9
        ((SET_MODE, 1, 4, 3), ACCEPTED),  # Hold
        ((SET_INTERVAL, 30, 100_000), ACCEPTED),  # ATTITUDE at 10 Hz
        ((SET_INTERVAL, 99), UNSUPPORTED),  # a message the vehicle does not stream
        ((GET_INTERVAL, 30), ACCEPTED),
        ((REQUEST_MESSAGE, 242), ACCEPTED),  # HOME_POSITION
        ((REQUEST_MESSAGE, 99), UNSUPPORTED),
        ((CAPABILITIES, 1), ACCEPTED),
        ((GET_HOME,), ACCEPTED),
        ((USER_1,), UNSUPPORTED),
        ((ARM, 1), ACCEPTED),
        ((ARM, 1), ACCEPTED),  # already armed: accepted, as PX4
        ((ARM, 0), ACCEPTED),  # on the ground: disarm accepted
    ]
    got = [(args[0], send(*args)) for args, _ in expected]
    assert got == [(args[0], result) for args, result in expected]
    acks = [m for _, _, m in run.log if m.get_type() == "COMMAND_ACK"]
    assert len(acks) == len(expected)  # one ACK per command, no more
    assert all((a.target_system, a.target_component) == (255, 190) for a in acks)
    # what the accepted requests sent
    interval = run.last("MESSAGE_INTERVAL")
    assert (interval.message_id, interval.interval_us) == (30, 100_000)
    version = run.last("AUTOPILOT_VERSION")
    assert version.capabilities & 0x2000 and version.capabilities & 0x4  # MAVLINK2, MISSION_INT
    assert sum(m.get_type() == "HOME_POSITION" for _, _, m in run.log) >= 2  # the two requests
    # a command for another component (a camera, 100) is not the autopilot's: no ACK
    run.clients[0].mav.command_long_send(1, 100, USER_1, 0, 0, 0, 0, 0, 0, 0, 0)
    assert run.pump(0.5, lambda i, m: m.get_type() == "COMMAND_ACK") is None


def test_return_to_launch_climbs_to_rtl_return_alt_flies_home_and_lands(mav_run):
    run = mav_run()
    c = run.clients[0]
    c.mav.param_set_send(1, 1, b"RTL_RETURN_ALT", 8.0, 9)  # PX4's 60 m would take a while
    assert run.wait("PARAM_VALUE", 1.0).param_value == pytest.approx(8.0)
    home = run.truth()
    take_off(run, 5.0)
    # DO_REPOSITION as COMMAND_INT (QGroundControl's "go to location"): 15 m north at 5 m
    lat = int(round((LAT0 + 15.0 / M_PER_DEG_LAT) * 1e7))
    assert (
        _command_int(run, REPOSITION, -1, 0, 0, math.nan, x=lat, y=int(LON0 * 1e7), z=5.0, frame=6)
        == ACCEPTED
    )
    run.pump(15.0)
    away = run.truth()
    assert abs(away[1] - home[1] - 15.0) < 0.5 and abs(away[2] - home[2] - 5.0) < 0.3
    assert run.command(RTL) == ACCEPTED
    assert run.wait("HEARTBEAT", 1.5).custom_mode == (4 << 16) | (5 << 24)  # AUTO.RTL
    heights = []
    run.pump(
        60.0,
        lambda i, m: m.get_type() == "EXTENDED_SYS_STATE" and m.landed_state == 1,
        every=lambda: heights.append(run.truth()[2] - home[2]),
    )
    assert 7.5 < max(heights) < 8.5  # climbed to RTL_RETURN_ALT before flying home
    landed = run.truth()
    assert np.hypot(*(landed[:2] - home[:2])) < 0.5 and abs(landed[2] - home[2]) < 0.02
    run.pump(3.0)  # COM_DISARM_LAND 2 s
    assert not run.wait("HEARTBEAT", 1.5).base_mode & 128


def _ports_free(ports: list[int]) -> bool:
    socks = []
    try:
        for p in ports:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            socks.append(s)
            s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


def test_the_default_ports_are_px4_sitls_on_127_0_0_1(repo_root):
    # The shipped scenario without any port setting: vehicle i is system 1 + i, listens on
    # 127.0.0.1:14580 + i and talks to 127.0.0.1:14540 + i, where a pymavlink client (as
    # MAVSDK's udpin://127.0.0.1:14540 + i) hears its heartbeat and flies it.
    n = 3
    if not _ports_free([*range(14540, 14540 + n), *range(14580, 14580 + n)]):
        pytest.skip("PX4 SITL's ports 14540.. / 14580.. are taken on this machine")
    scenario = load_scenario(repo_root / "configs/mavlink.toml", [f"agents.count={n}"])
    sim = Simulator.from_scenario(scenario)
    try:
        service = attach(sim)
    except ConfigError:
        sim.close()
        pytest.skip("PX4 SITL's ports were taken meanwhile")
    clients = [
        mavutil.mavlink_connection(f"udpin:127.0.0.1:{14540 + i}", source_system=255)
        for i in range(n)
    ]
    try:
        assert (service.config.bind_address, service.config.client_address) == ("127.0.0.1",) * 2
        for i, v in enumerate(service.vehicles):
            (link,) = v.links  # no GCS link unless asked
            assert link.sock.getsockname() == ("127.0.0.1", 14580 + i)
            assert v.sysid == 1 + i
        for _ in range(60):  # 1.2 s: every vehicle's first heartbeat
            for _ in range(service.poll_ticks):
                sim.step()
        for i, c in enumerate(clients):
            hb = c.recv_match(type="HEARTBEAT", blocking=True, timeout=2.0)
            assert hb is not None and hb.get_srcSystem() == 1 + i, i
            assert c.port.getsockname() == ("127.0.0.1", 14540 + i)
        # the vehicle answers where the client talks from: arm vehicle 2 through its port
        clients[2].mav.command_long_send(3, 1, ARM, 0, 1, 0, 0, 0, 0, 0, 0)
        for _ in range(service.poll_ticks * 2):
            sim.step()
        ack = clients[2].recv_match(type="COMMAND_ACK", blocking=True, timeout=2.0)
        assert ack is not None and (ack.command, ack.result) == (ARM, ACCEPTED)
        assert [v.armed for v in service.vehicles] == [False, False, True]
    finally:
        service.close()
        for c in clients:
            c.close()
        sim.close()


def _offboard(run, send) -> None:
    """Stream `send` every poll, switch to OFFBOARD (PX4: only while setpoints arrive)."""
    run.pump(0.2, every=send)
    assert run.command(SET_MODE, 1, 6, every=send) == ACCEPTED


def test_attitude_target_tilts_and_body_rate_target_turns(mav_run):
    # SET_ATTITUDE_TARGET: a 10 deg nose-down quaternion (NED) at the thrust that carries the
    # weight (quad_x hovers at half of full thrust) accelerates north at g tan 10 deg = 1.7 m/s2;
    # then body rates only (attitude ignored, bit 7): yaw at 0.5 rad/s
    run = mav_run()
    take_off(run, 5.0)
    c = run.clients[0]
    pitch = math.radians(-10.0)
    q = [math.cos(pitch / 2), 0.0, math.sin(pitch / 2), 0.0]  # w, x, y, z
    thrust = 0.5 / math.cos(pitch)

    def tilt():
        c.mav.set_attitude_target_send(0, 1, 1, 0b0000_0111, q, 0, 0, 0, thrust)

    _offboard(run, tilt)
    start = run.truth()
    run.pump(2.0, every=tilt)
    att = run.wait("ATTITUDE", 0.2, every=tilt)
    assert abs(att.pitch - pitch) < 0.02 and abs(att.roll) < 0.02
    gpi = run.wait("GLOBAL_POSITION_INT", 0.3, every=tilt)
    assert 2.5 < gpi.vx / 100 < 4.0 and abs(gpi.vy) < 30  # north ~1.7 m/s2 x 2 s, not east
    assert abs(run.truth()[2] - start[2]) < 0.5  # the thrust carried the weight

    def turn():
        c.mav.set_attitude_target_send(0, 1, 1, 0b1000_0000, [1, 0, 0, 0], 0, 0, 0.5, 0.5)

    run.pump(1.0, every=turn)
    att = run.wait("ATTITUDE", 0.2, every=turn)
    assert abs(att.yawspeed - 0.5) < 0.05 and abs(att.rollspeed) < 0.05


def test_global_position_target_relative_alt_flies_there(mav_run):
    # SET_POSITION_TARGET_GLOBAL_INT, frame GLOBAL_RELATIVE_ALT_INT, position only (mask 0xFF8):
    # 10 m east of home at 6 m above it
    run = mav_run()
    home = run.truth()
    take_off(run, 5.0)
    c = run.clients[0]
    lon = int(round((LON0 + 10.0 / (M_PER_DEG_LAT * math.cos(math.radians(LAT0)))) * 1e7))

    def goto():
        c.mav.set_position_target_global_int_send(
            0, 1, 1, 6, 0xFF8, int(LAT0 * 1e7), lon, 6.0, 0, 0, 0, 0, 0, 0, 0, 0
        )

    _offboard(run, goto)
    run.pump(12.0, every=goto)
    there = run.truth() - home
    assert abs(there[0] - 10.0) < 0.3 and abs(there[1]) < 0.3 and abs(there[2] - 6.0) < 0.3
