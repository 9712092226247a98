"""What one vehicle does with each message it receives: commands (COMMAND_LONG/INT with a
COMMAND_ACK for every one addressed to the autopilot), modes, parameters, the mission protocol,
offboard setpoints, MANUAL_CONTROL and TIMESYNC.

Commands (MAV_CMD) and their answers, as PX4 gives them:
- 400 COMPONENT_ARM_DISARM: arm only on the ground, disarm only on the ground unless forced
  (param2 = 21196) -> ACCEPTED / DENIED;
- 22 NAV_TAKEOFF (param7 AMSL m; NaN: MIS_TAKEOFF_ALT above home; raised to at least
  MIS_TAKEOFF_ALT above home and never below the vehicle, as PX4: `Vehicle.takeoff_target`),
  armed only; 21 NAV_LAND;
  20 NAV_RETURN_TO_LAUNCH; 192 DO_REPOSITION (lat, lon, alt AMSL; NaN keeps the current);
  as COMMAND_INT the altitude is in the command's frame (above home in the relative ones);
  DENIED 90 deg or more from the origin, off the flat world (core/geo.py);
- 176 DO_SET_MODE (param1 with MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, param2 main, param3 sub):
  OFFBOARD needs a setpoint within COM_OF_LOSS_T, MISSION an uploaded mission, else DENIED;
- 300 MISSION_START, 224 DO_SET_MISSION_CURRENT;
- 511 SET_MESSAGE_INTERVAL (us; -1 off, 0 default), 510 GET_MESSAGE_INTERVAL,
  512 REQUEST_MESSAGE, 520 REQUEST_AUTOPILOT_CAPABILITIES, 410 GET_HOME_POSITION;
- anything else: UNSUPPORTED.
Flight commands (arm, takeoff, land, RTL, reposition, mode, mission start, and MANUAL_CONTROL
or setpoints in the modes that fly them) take the UAV from the scenario's mission.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.geo import on_globe
from skyswarm.mavlink import modes
from skyswarm.mavlink.frames import yaw_ned_to_enu
from skyswarm.mavlink.mission_protocol import ALT_FRAMES

if TYPE_CHECKING:
    from skyswarm.mavlink.link import Link
    from skyswarm.mavlink.vehicle import Vehicle

ACCEPTED, TEMPORARILY_REJECTED, DENIED, UNSUPPORTED, FAILED = 0, 1, 2, 3, 4
FORCE_DISARM = 21196
REAL32 = 9  # MAV_PARAM_TYPE_REAL32


class BadParamError(ValueError):
    """A command parameter that must be a number is NaN or inf: the command is DENIED."""


class Cmd:
    """COMMAND_LONG or COMMAND_INT, normalised: params 1..4, lat/lon deg, z (param7) and whether
    z is above home (`relative`): COMMAND_INT's frame says (GLOBAL_RELATIVE_ALT(_INT) and the
    terrain frames over flat ground: above home; GLOBAL(_INT): AMSL); COMMAND_LONG's param7 is
    AMSL, as PX4 reads it. `real(k)` and `whole(k)` read param k + 1 where NaN means nothing.
    """

    def __init__(self, m, is_int: bool) -> None:
        self.command = int(m.command)
        self.p = (m.param1, m.param2, m.param3, m.param4)
        if is_int:
            self.lat, self.lon, self.z = m.x / 1e7, m.y / 1e7, m.z
            self.frame = int(m.frame)
            self.relative = ALT_FRAMES.get(self.frame, False)
        else:
            self.lat, self.lon, self.z, self.frame = m.param5, m.param6, m.param7, 0
            self.relative = False

    def real(self, k: int) -> float:
        """Param k + 1 (k = 0..3); BadParamError when it is not finite."""
        x = float(self.p[k])
        if not math.isfinite(x):
            raise BadParamError(f"param{k + 1} = {x}")
        return x

    def whole(self, k: int) -> int:
        """Param k + 1 (k = 0..3) as an integer (an id, a mode, a flag); BadParamError when it is
        not finite (`int` of NaN would raise inside the tick and end the run)."""
        return int(self.real(k))


class Handlers:
    """Message handlers of one vehicle, by message type name."""

    def __init__(self, v: Vehicle) -> None:
        self.v = v
        self.by_type: dict[str, Callable[[Link, object], None]] = {
            "COMMAND_LONG": lambda link, m: self.command(link, m, False),
            "COMMAND_INT": lambda link, m: self.command(link, m, True),
            "SET_MODE": self.set_mode_message,
            "PARAM_REQUEST_LIST": self.param_list,
            "PARAM_REQUEST_READ": self.param_read,
            "PARAM_SET": self.param_set,
            "MISSION_COUNT": lambda link, m: v.mission.on_count(v, link, m),
            "MISSION_ITEM_INT": lambda link, m: v.mission.on_item(v, link, m, True),
            "MISSION_ITEM": lambda link, m: v.mission.on_item(v, link, m, False),
            "MISSION_REQUEST_LIST": lambda link, m: v.mission.on_request_list(link, m),
            "MISSION_REQUEST_INT": lambda link, m: v.mission.on_request(link, m),
            "MISSION_REQUEST": lambda link, m: v.mission.on_request(link, m),
            "MISSION_CLEAR_ALL": self.mission_clear,
            "MISSION_SET_CURRENT": lambda link, m: v.mission.set_current(v, int(m.seq)),
            "SET_POSITION_TARGET_LOCAL_NED": self.setpoint_local,
            "SET_POSITION_TARGET_GLOBAL_INT": self.setpoint_global,
            "SET_ATTITUDE_TARGET": self.setpoint_attitude,
            "MANUAL_CONTROL": self.manual_control,
            "TIMESYNC": self.timesync,
        }
        self.commands: dict[int, Callable[[Cmd], int]] = {
            400: self.arm_disarm,
            22: self.takeoff,
            21: lambda c: self.fly_mode(modes.LAND),
            20: lambda c: self.fly_mode(modes.RTL),
            192: self.reposition,
            176: self.do_set_mode,
            300: self.mission_start,
            224: lambda c: ACCEPTED if v.mission.set_current(v, c.whole(0)) else DENIED,
            511: self.set_interval,
            510: self.get_interval,
            512: lambda c: v.service.telemetry.request(v, c.whole(0)),
            520: lambda c: v.service.telemetry.request(v, 148),
            410: lambda c: v.service.telemetry.request(v, 242),
        }
        self.link: Link | None = None

    def handle(self, link: Link, m) -> None:
        fn = self.by_type.get(m.get_type())
        if fn is not None:
            self.link = link
            fn(link, m)

    # -- commands ---------------------------------------------------------------------------
    def command(self, link: Link, m, is_int: bool) -> None:
        if m.target_component not in (0, 1):
            return  # another component's (camera, gimbal ...): not the autopilot's to answer
        c = Cmd(m, is_int)
        fn = self.commands.get(c.command)
        try:
            result = UNSUPPORTED if fn is None else fn(c)
        except BadParamError:  # NaN or inf where a number is needed: refused, the run goes on
            result = DENIED
        ack = link.mav.command_ack_encode(
            c.command, result, 0, 0, m.get_srcSystem(), m.get_srcComponent()
        )
        link.send(ack)
        self.v.service.telemetry.flush_requests(self.v)

    def arm_disarm(self, c: Cmd) -> int:
        v = self.v
        if c.real(0) >= 0.5:
            if v.armed:
                return ACCEPTED
            if not v.on_ground or not v.alive:
                v.statustext("Arming denied: not landed", 4)
                return DENIED
            v.take()
            v.arm()
            return ACCEPTED
        if not v.armed:
            return ACCEPTED
        if not v.on_ground and c.whole(1) != FORCE_DISARM:
            v.statustext("Disarming denied: not landed", 4)
            return DENIED
        v.take()
        v.disarm()
        return ACCEPTED

    def takeoff(self, c: Cmd) -> int:
        v = self.v
        if not v.armed:
            v.statustext("Takeoff denied: disarmed", 4)
            return DENIED
        v.takeoff_z = v.takeoff_target(v.alt_to_z(c.z, c.relative) if math.isfinite(c.z) else None)
        v.take()
        v.set_mode(modes.TAKEOFF)
        return ACCEPTED

    def fly_mode(self, mode: modes.NavMode) -> int:
        v = self.v
        if not v.armed and mode in (modes.LAND, modes.RTL):
            return DENIED
        v.take()
        v.set_mode(mode)
        return ACCEPTED

    def reposition(self, c: Cmd) -> int:
        v = self.v
        if not v.armed or v.on_ground:
            return DENIED
        lat = c.lat if math.isfinite(c.lat) and c.lat != 0 else None
        lon = c.lon if math.isfinite(c.lon) and c.lon != 0 else None
        if not on_globe(0.0 if lat is None else lat, 0.0 if lon is None else lon):
            return DENIED  # off the globe: no such place
        target = None
        if lat is not None and lon is not None:
            if math.isfinite(c.z):
                target = v.global_to_enu(lat, lon, c.z, relative=c.relative)
            else:  # keep the height
                target = v.global_to_enu(lat, lon, v.service.amsl(v.pos), relative=False)
            if not np.isfinite(target).all():
                return DENIED  # 90 deg or more from the origin: off the world's plane
        v.take()
        v.set_mode(modes.HOLD)
        if target is not None:
            v.hold_xyz = target
        elif math.isfinite(c.z):
            v.hold_xyz[2] = v.alt_to_z(c.z, c.relative)
        if math.isfinite(c.p[3]):
            v.hold_yaw = float(yaw_ned_to_enu(c.p[3]))  # rad, NED heading
        return ACCEPTED

    def do_set_mode(self, c: Cmd) -> int:
        if not c.whole(0) & modes.CUSTOM:
            return UNSUPPORTED
        return self.switch(c.whole(1), c.whole(2))

    def switch(self, main: int, sub: int) -> int:
        v = self.v
        mode = modes.mode_of(main, sub)
        if mode is None:
            return UNSUPPORTED
        if mode is modes.OFFBOARD:
            silent_s = (v.tick - v.offboard.last_tick) * v.service.tick_s
            if silent_s > v.params.values["COM_OF_LOSS_T"]:
                v.statustext("Offboard rejected: no setpoints", 4)
                return DENIED
        if mode is modes.MISSION and not v.mission.items:
            v.statustext("Mission rejected: no mission", 4)
            return DENIED
        if mode in (modes.TAKEOFF, modes.LAND, modes.RTL) and not v.armed:
            return DENIED
        v.take()
        if mode is not v.mode:
            v.set_mode(mode)
        return ACCEPTED

    def set_mode_message(self, link: Link, m) -> None:
        if m.base_mode & modes.CUSTOM:
            self.switch((m.custom_mode >> 16) & 0xFF, (m.custom_mode >> 24) & 0xFF)

    def mission_start(self, c: Cmd) -> int:
        v = self.v
        if not v.mission.items:
            return DENIED
        first = int(c.p[0]) if math.isfinite(c.p[0]) and c.p[0] > 0 else 0
        v.mission.set_current(v, first)
        v.take()
        v.set_mode(modes.MISSION)
        return ACCEPTED

    def set_interval(self, c: Cmd) -> int:
        return self.v.service.telemetry.set_interval(self.v, c.whole(0), c.p[1])

    def get_interval(self, c: Cmd) -> int:
        return self.v.service.telemetry.report_interval(self.v, self.link, c.whole(0))

    def mission_clear(self, link: Link, m) -> None:
        mtype = int(getattr(m, "mission_type", 0))
        if mtype == 0:
            self.v.mission.clear(self.v)
        link.send(link.mav.mission_ack_encode(m.get_srcSystem(), m.get_srcComponent(), 0, mtype))

    # -- parameters -------------------------------------------------------------------------
    def param_list(self, link: Link, m) -> None:
        for name in self.v.params.names:
            self._param_value(link, name)

    def param_read(self, link: Link, m) -> None:
        names = self.v.params.names
        name = (
            m.param_id
            if m.param_index < 0
            else (names[m.param_index] if m.param_index < len(names) else "")
        )
        if self.v.params.get(name) is not None:
            self._param_value(link, name)

    def param_set(self, link: Link, m) -> None:
        if self.v.params.get(m.param_id) is None:
            return  # PX4: no answer for an unknown name
        self.v.params.set(m.param_id, float(m.param_value))
        self._param_value(link, m.param_id)

    def _param_value(self, link: Link, name: str) -> None:
        p = self.v.params
        link.send(
            link.mav.param_value_encode(
                name.encode(), float(p.get(name)), REAL32, len(p.names), p.index(name)
            )
        )

    # -- flying -----------------------------------------------------------------------------
    def setpoint_local(self, link: Link, m) -> None:
        self.v.offboard.local_ned(self.v, m)

    def setpoint_global(self, link: Link, m) -> None:
        self.v.offboard.global_int(self.v, m)

    def setpoint_attitude(self, link: Link, m) -> None:
        self.v.offboard.attitude(self.v, m)

    def manual_control(self, link: Link, m) -> None:
        v = self.v
        z = m.z / 1000.0
        v.sticks = tuple(float(np.clip(a, -1, 1)) for a in (m.x / 1000, m.y / 1000, z, m.r / 1000))
        if v.mode in (modes.MANUAL, modes.STABILIZED, modes.ACRO, modes.POSCTL, modes.ALTCTL):
            v.take()

    def timesync(self, link: Link, m) -> None:
        if m.tc1 == 0:  # a request: answer with our clock (simulation time, ns)
            now_ns = int(round(self.v.time_s * 1e9))
            link.send(link.mav.timesync_encode(now_ns, m.ts1))
