"""The vehicles' telemetry streams: which message, how often, and its encoding from one
snapshot of the sensed state per poll.

Default rates are PX4's for a "normal" MAVLink link (mavlink_main.cpp, MAVLINK_MODE_NORMAL):
HEARTBEAT 1 Hz, SYS_STATUS 1, EXTENDED_SYS_STATE 1, ATTITUDE 15, ATTITUDE_QUATERNION 10,
LOCAL_POSITION_NED 1, GLOBAL_POSITION_INT 5, GPS_RAW_INT 1, ALTITUDE 1, VFR_HUD 4,
BATTERY_STATUS 0.5, HOME_POSITION 0.5, plus SYSTEM_TIME 1 and MISSION_CURRENT 1 (PX4 sends
these on change and on request). SET_MESSAGE_INTERVAL changes a rate per vehicle (rounded to
whole polls; at most the poll rate); REQUEST_MESSAGE sends one at once. Every timestamp is
simulation time: time_boot_ms = sim ms, SYSTEM_TIME.time_unix_usec = the run's wall-clock start
+ sim time (so at --realtime 1 it follows the wall clock). Killed vehicles send nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.mavlink import modes

if TYPE_CHECKING:
    from skyswarm.mavlink.link import Link
    from skyswarm.mavlink.snapshot import Snapshot
    from skyswarm.mavlink.vehicle import Vehicle

QUADROTOR, AUTOPILOT_PX4 = 2, 12  # MAV_TYPE, MAV_AUTOPILOT
STANDBY, ACTIVE = 3, 4  # MAV_STATE
# SYS_STATUS sensors: gyro, accel, mag, baro, gps, angular rate/attitude/yaw/z-alt/xy control,
# motor outputs, AHRS, prearm checks
SENSORS = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x400 | 0x800 | 0x1000 | 0x2000 | 0x4000 | 0x8000
SENSORS |= 0x200000 | 0x10000000
CAPABILITIES = 0x4 | 0x8 | 0x20 | 0x40 | 0x80 | 0x100 | 0x2000 | 0x1  # MAV_PROTOCOL_CAPABILITY


@dataclass(frozen=True)
class Stream:
    msgid: int
    name: str
    hz: float  # default rate, 0: on request only
    encode: Callable[[Telemetry, int, Vehicle], object]


class Telemetry:
    """Stream schedule (vehicles x streams, in ticks) and encoders of every vehicle."""

    def __init__(self, vehicles: list[Vehicle], tick_s: float, poll_ticks: int, epoch_s: float):
        self.vehicles, self.tick_s, self.poll_ticks = vehicles, tick_s, poll_ticks
        self.epoch_us = int(epoch_s * 1e6)  # wall clock at the run's start, us
        self.streams = STREAMS
        self.by_id = {s.msgid: k for k, s in enumerate(STREAMS)}
        self.default = np.array([self._ticks(s.hz) for s in STREAMS], dtype=np.int64)
        n = len(vehicles)
        self.interval = np.tile(self.default, (n, 1))  # (n, streams) ticks, 0 off
        spread = (np.arange(n)[:, None] * 7 * poll_ticks) % np.maximum(self.interval, 1)
        self.next_due = spread  # staggered: no burst of every vehicle in one poll
        self.requests: list[tuple[Vehicle, int]] = []
        self.snap: Snapshot | None = None
        self.sent = 0  # messages sent (each link counts)

    def _ticks(self, hz: float) -> int:
        if hz <= 0:
            return 0
        polls = max(1, round(1.0 / (hz * self.tick_s * self.poll_ticks)))
        return polls * self.poll_ticks

    # -- schedule ---------------------------------------------------------------------------
    def send_due(self, tick: int, snap: Snapshot, alive: np.ndarray) -> None:
        """Every stream due at `tick` of the live vehicles, then the queued STATUSTEXTs."""
        self.snap = snap
        due = (self.next_due <= tick) & (self.interval > 0) & alive[:, None]
        for i, k in zip(*np.nonzero(due)):
            self._send(self.vehicles[i], self.streams[k].encode(self, i, self.vehicles[i]))
        behind = self.next_due <= tick
        self.next_due[behind] = tick + self.interval[behind]
        for i, v in enumerate(self.vehicles):
            if v.statustexts:
                if alive[i]:
                    for severity, text in v.statustexts:
                        self._send(v, v.links[0].mav.statustext_encode(severity, text.encode()))
                v.statustexts.clear()

    def _send(self, v: Vehicle, msg) -> None:
        for link in v.links:
            link.send(msg)
        self.sent += len(v.links)

    def set_interval(self, v: Vehicle, msgid: int, interval_us: float) -> int:
        """SET_MESSAGE_INTERVAL: MAV_RESULT (0 accepted, 3 unsupported message)."""
        k = self.by_id.get(msgid)
        if k is None or not math.isfinite(interval_us):
            return 3
        i = self.vehicles.index(v)
        if interval_us < 0:
            self.interval[i, k] = 0
        elif interval_us == 0:
            self.interval[i, k] = self.default[k]
        else:
            self.interval[i, k] = self._ticks(1e6 / interval_us)
        self.next_due[i, k] = 0
        return 0

    def report_interval(self, v: Vehicle, link: Link | None, msgid: int) -> int:
        k = self.by_id.get(msgid)
        if k is None or link is None:
            return 3
        ticks = self.interval[self.vehicles.index(v), k]
        us = -1 if ticks == 0 else int(round(ticks * self.tick_s * 1e6))
        link.send(link.mav.message_interval_encode(msgid, us))
        return 0

    def request(self, v: Vehicle, msgid: int) -> int:
        """REQUEST_MESSAGE: queued until the COMMAND_ACK is out; MAV_RESULT."""
        if msgid not in self.by_id and msgid not in ONCE:
            return 3
        self.requests.append((v, msgid))
        return 0

    def flush_requests(self, v: Vehicle) -> None:
        todo = [m for w, m in self.requests if w is v]
        self.requests = [(w, m) for w, m in self.requests if w is not v]
        i = self.vehicles.index(v)
        for msgid in todo:
            k = self.by_id.get(msgid)
            enc = self.streams[k].encode if k is not None else ONCE[msgid]
            self._send(v, enc(self, i, v))

    def mission_current(self, v: Vehicle) -> None:
        if self.snap is not None and v.alive:
            self._send(v, _mission_current(self, self.vehicles.index(v), v))

    # -- helpers for the encoders ------------------------------------------------------------
    def boot_ms(self) -> int:
        return int(round(self.snap.time_s * 1000)) & 0xFFFFFFFF


def _heartbeat(t: Telemetry, i: int, v: Vehicle):
    mode = v.mode if v.taken else modes.MISSION
    armed = v.armed if v.taken else not v.on_ground
    base = mode.flags | (modes.ARMED if armed else 0)
    status = ACTIVE if armed else STANDBY
    return v.links[0].mav.heartbeat_encode(QUADROTOR, AUTOPILOT_PX4, base, mode.custom_mode, status)


def _sys_status(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    return v.links[0].mav.sys_status_encode(
        SENSORS,
        SENSORS,
        SENSORS,
        100,
        int(s.voltage[i] * 1000),
        -1,
        int(s.remaining[i]),
        0,
        0,
        0,
        0,
        0,
        0,
    )


def _battery(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    mv = min(int(s.voltage[i] * 1000), 65534)
    cells = [mv] + [65535] * 9  # one total voltage; the rest unused (UINT16_MAX)
    return v.links[0].mav.battery_status_encode(
        0, 1, 3, 32767, cells, -1, -1, -1, int(s.remaining[i])
    )


def _attitude(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    r, p, y = s.euler[i]
    w = s.rates[i]
    return v.links[0].mav.attitude_encode(t.boot_ms(), r, p, y, w[0], w[1], w[2])


def _attitude_q(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    q, w = s.quat[i], s.rates[i]
    return v.links[0].mav.attitude_quaternion_encode(
        t.boot_ms(), q[0], q[1], q[2], q[3], w[0], w[1], w[2]
    )


def _local(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    p, u = s.ned[i], s.ned_vel[i]
    return v.links[0].mav.local_position_ned_encode(t.boot_ms(), *p, *u)


def _global(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    lat, lon, alt = s.geo[i]
    u = s.ned_vel[i]
    return v.links[0].mav.global_position_int_encode(
        t.boot_ms(),
        int(round(lat * 1e7)),
        int(round(lon * 1e7)),
        int(round(alt * 1000)),
        int(round(-s.ned[i][2] * 1000)),
        *(int(round(x * 100)) for x in u),
        int(round(s.heading_deg[i] * 100)) % 36000,
    )


def _gps(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    lat, lon, alt = s.gps[i]
    u = s.ned_vel[i]
    ground = math.hypot(u[0], u[1])
    cog = (math.degrees(math.atan2(u[1], u[0])) % 360.0) if ground > 0.1 else 0.0
    return v.links[0].mav.gps_raw_int_encode(
        int(s.time_s * 1e6),
        3,
        int(round(lat * 1e7)),
        int(round(lon * 1e7)),
        int(round(alt * 1000)),
        100,
        150,
        int(round(ground * 100)),
        int(round(cog * 100)) % 36000,
        12,
    )


def _extended(t: Telemetry, i: int, v: Vehicle):
    return v.links[0].mav.extended_sys_state_encode(0, v.landed_state)


def _home(t: Telemetry, i: int, v: Vehicle):
    lat, lon, alt = t.snap.home_geo[i]
    return v.links[0].mav.home_position_encode(
        int(round(lat * 1e7)),
        int(round(lon * 1e7)),
        int(round(alt * 1000)),
        0.0,
        0.0,
        0.0,
        [1.0, 0.0, 0.0, 0.0],
        0.0,
        0.0,
        0.0,
        int(t.snap.time_s * 1e6),
    )


def _altitude(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    amsl = s.geo[i][2]
    rel = -s.ned[i][2]
    return v.links[0].mav.altitude_encode(
        int(s.time_s * 1e6), amsl, amsl, -s.ned[i][2], rel, s.pos[i][2], s.pos[i][2]
    )


def _vfr_hud(t: Telemetry, i: int, v: Vehicle):
    s = t.snap
    u = s.ned_vel[i]
    ground = math.hypot(u[0], u[1])
    return v.links[0].mav.vfr_hud_encode(
        ground, ground, int(s.heading_deg[i]) % 360, int(s.throttle[i]), s.geo[i][2], -u[2]
    )


def _system_time(t: Telemetry, i: int, v: Vehicle):
    us = int(round(t.snap.time_s * 1e6))
    return v.links[0].mav.system_time_encode(t.epoch_us + us, t.boot_ms())


def _mission_current(t: Telemetry, i: int, v: Vehicle):
    m = v.mission
    return v.links[0].mav.mission_current_encode(m.current, len(m.items), m.state, 0)


def _autopilot_version(t: Telemetry, i: int, v: Vehicle):
    version = (1 << 24) | (14 << 16) | (0 << 8) | 255  # reported as PX4 1.14.0 (release)
    return v.links[0].mav.autopilot_version_encode(
        CAPABILITIES, version, version, 0, 0, [0] * 8, [0] * 8, [0] * 8, 0, 0, v.sysid
    )


STREAMS = (
    Stream(0, "HEARTBEAT", 1.0, _heartbeat),
    Stream(1, "SYS_STATUS", 1.0, _sys_status),
    Stream(245, "EXTENDED_SYS_STATE", 1.0, _extended),
    Stream(30, "ATTITUDE", 15.0, _attitude),
    Stream(31, "ATTITUDE_QUATERNION", 10.0, _attitude_q),
    Stream(32, "LOCAL_POSITION_NED", 1.0, _local),
    Stream(33, "GLOBAL_POSITION_INT", 5.0, _global),
    Stream(24, "GPS_RAW_INT", 1.0, _gps),
    Stream(141, "ALTITUDE", 1.0, _altitude),
    Stream(74, "VFR_HUD", 4.0, _vfr_hud),
    Stream(147, "BATTERY_STATUS", 0.5, _battery),
    Stream(242, "HOME_POSITION", 0.5, _home),
    Stream(2, "SYSTEM_TIME", 1.0, _system_time),
    Stream(42, "MISSION_CURRENT", 1.0, _mission_current),
)
ONCE = {148: _autopilot_version}  # sent on request only
