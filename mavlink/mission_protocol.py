"""The MAVLink mission protocol of one vehicle (upload, download, clear, set current) and the
mission's execution in AUTO.MISSION.

Upload: MISSION_COUNT -> MISSION_REQUEST_INT(0) -> MISSION_ITEM_INT(0) -> ... -> MISSION_ACK.
A request not answered within `RETRY_S` of simulated time is sent again, `RETRIES` times, then
the upload is abandoned (MISSION_ACK OPERATION_CANCELLED): the vehicle's clock, as PX4's
mission manager times its retries on hrt time, which is the simulated time in SITL lockstep.
(It was the wall clock: how much flight passed before a re-ask, and whether an upload over a
lossy simulated link completed, depended on how fast the machine ran the simulation.) Download:
MISSION_REQUEST_LIST -> MISSION_COUNT, then MISSION_REQUEST_INT/MISSION_REQUEST(seq) ->
MISSION_ITEM_INT. Only the mission type 0 (MISSION) holds items; fence and rally lists are empty
(an upload of 0 items is accepted, of more refused as UNSUPPORTED).

Items flown: NAV_WAYPOINT (16, hold p1 s, acceptance p2 m or NAV_ACC_RAD, yaw p4 deg),
NAV_LOITER_UNLIM (17), NAV_LOITER_TURNS (18, as a waypoint), NAV_LOITER_TIME (19, p1 s),
NAV_RETURN_TO_LAUNCH (20, switches to RTL), NAV_LAND (21), NAV_TAKEOFF (22, at least
MIS_TAKEOFF_ALT above home, as the command: `Vehicle.takeoff_target`); DO_* items (e.g.
DO_CHANGE_SPEED) are accepted and passed over. Frames: GLOBAL(_INT) (AMSL),
GLOBAL_RELATIVE_ALT(_INT) and GLOBAL_TERRAIN_ALT(_INT) (above home: the ground is flat), MISSION
(DO items); a NaN altitude holds the present height, in any frame. A fix 90 deg or more from
the origin (off the flat world: core/geo.py) is refused, INVALID_PARAM5_X. After the last item
the vehicle holds (AUTO.LOITER), or stays landed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.mavlink import modes

if TYPE_CHECKING:
    from skyswarm.mavlink.vehicle import Vehicle

RETRY_S, RETRIES = 0.5, 10  # s of simulated time (PX4: 0.25-0.5 s), re-asks
NAV_COMMANDS = {16, 17, 18, 19, 20, 21, 22}
DO_COMMANDS = range(176, 253)  # DO_* and CONDITION_* ids: accepted, passed over
ALT_FRAMES = {0: False, 5: False, 3: True, 6: True, 10: True, 11: True, 2: True}  # relative?
INT_FRAMES = {5, 6, 11}
# MAV_MISSION_RESULT
ACCEPTED, ERROR, UNSUPPORTED_FRAME, UNSUPPORTED = 0, 1, 2, 3
INVALID_PARAM5_X, INVALID_PARAM6_Y, INVALID_PARAM7 = 10, 11, 12
INVALID_SEQUENCE, CANCELLED = 13, 15
# MISSION_CURRENT.mission_state
NO_MISSION, NOT_STARTED, ACTIVE, COMPLETE = 1, 2, 3, 5


@dataclass(frozen=True)
class Item:
    """One mission item as uploaded (lat/lon in degrees, z in the item's frame)."""

    seq: int
    frame: int
    command: int
    autocontinue: int
    params: tuple[float, float, float, float]
    lat: float
    lon: float
    z: float


class MissionStore:
    """Items, current item, the upload in progress and the executor's state."""

    def __init__(self) -> None:
        self.items: list[Item] = []
        self.current = 0
        self.state = NO_MISSION
        self._upload: list[Item | None] | None = None
        self._peer = (0, 0)
        self._asked_at = 0.0  # sim s of the last request
        self._asks = 0
        self.reached_at: float | None = None  # sim s the current item was reached (holding)
        self.phase = ""

    # -- protocol -------------------------------------------------------------------------
    def on_count(self, v: Vehicle, link, m) -> None:
        mtype = int(getattr(m, "mission_type", 0))
        if mtype != 0 or m.count == 0:
            if mtype == 0:
                self.clear(v)
            result = ACCEPTED if m.count == 0 else UNSUPPORTED
            link.send(
                link.mav.mission_ack_encode(m.get_srcSystem(), m.get_srcComponent(), result, mtype)
            )
            return
        self._upload = [None] * int(m.count)
        self._peer = (m.get_srcSystem(), m.get_srcComponent())
        self._ask(link, 0, v.time_s)

    def on_item(self, v: Vehicle, link, m, is_int: bool) -> None:
        up = self._upload
        if up is None or int(getattr(m, "mission_type", 0)) != 0:
            return
        expected = up.index(None)
        if m.seq != expected:
            self._ask(link, expected, v.time_s)
            return
        if m.command not in NAV_COMMANDS and m.command not in DO_COMMANDS:
            return self._abort(link, UNSUPPORTED)
        if m.frame not in ALT_FRAMES and m.command in NAV_COMMANDS:
            return self._abort(link, UNSUPPORTED_FRAME)
        scale = 1e-7 if is_int else 1.0
        lat, lon = m.x * scale, m.y * scale
        if m.command in NAV_COMMANDS:  # NaN lat/lon: here; NaN z: this height, but takeoff's
            if math.isfinite(lat) and not -90.0 <= lat <= 90.0:
                return self._abort(link, INVALID_PARAM5_X)
            if math.isfinite(lon) and not -180.0 <= lon <= 180.0:
                return self._abort(link, INVALID_PARAM6_Y)
            if m.command == 22 and not math.isfinite(m.z):
                return self._abort(link, INVALID_PARAM7)
            if _beyond_the_plane(v, lat, lon):
                return self._abort(link, INVALID_PARAM5_X)
        params = (float(m.param1), float(m.param2), float(m.param3), float(m.param4))
        up[m.seq] = Item(m.seq, m.frame, m.command, m.autocontinue, params, lat, lon, m.z)
        if m.seq + 1 < len(up):
            self._ask(link, m.seq + 1, v.time_s)
            return
        self.items = [i for i in up if i is not None]
        self._upload = None
        self.current, self.state = 0, NOT_STARTED
        link.send(link.mav.mission_ack_encode(*self._peer, ACCEPTED, 0))
        v.announce_mission()

    def _ask(self, link, seq: int, now_s: float) -> None:
        """Request item `seq` at sim time `now_s` s."""
        self._asked_at, self._asks, self._link, self._seq = now_s, 0, link, seq
        link.send(link.mav.mission_request_int_encode(*self._peer, seq, 0))

    def _abort(self, link, result: int) -> None:
        self._upload = None
        link.send(link.mav.mission_ack_encode(*self._peer, result, 0))

    def poll(self, now_s: float) -> None:
        """Re-ask an unanswered upload request, or give up, at sim time `now_s` s."""
        if self._upload is None or now_s - self._asked_at < RETRY_S - 1e-9:  # whole polls
            return
        if self._asks >= RETRIES:
            return self._abort(self._link, CANCELLED)
        asks = self._asks + 1
        self._ask(self._link, self._seq, now_s)
        self._asks = asks

    def on_request_list(self, link, m) -> None:
        mtype = int(getattr(m, "mission_type", 0))
        count = len(self.items) if mtype == 0 else 0
        link.send(
            link.mav.mission_count_encode(m.get_srcSystem(), m.get_srcComponent(), count, mtype)
        )

    def on_request(self, link, m) -> None:
        src = (m.get_srcSystem(), m.get_srcComponent())
        if int(getattr(m, "mission_type", 0)) != 0 or not 0 <= m.seq < len(self.items):
            link.send(link.mav.mission_ack_encode(*src, INVALID_SEQUENCE, 0))
            return
        i = self.items[m.seq]
        scale = 1e7 if i.frame in INT_FRAMES or i.frame in (0, 3, 10) else 1.0
        link.send(
            link.mav.mission_item_int_encode(
                *src,
                i.seq,
                i.frame,
                i.command,
                int(i.seq == self.current),
                i.autocontinue,
                *i.params,
                int(round(i.lat * scale)),
                int(round(i.lon * scale)),
                i.z,
                0,
            )
        )

    def clear(self, v: Vehicle) -> None:
        self.items, self.current, self.state = [], 0, NO_MISSION
        v.announce_mission()

    def set_current(self, v: Vehicle, seq: int) -> bool:
        if not 0 <= seq < len(self.items):
            return False
        self.current, self.reached_at, self.phase = seq, None, ""
        v.announce_mission()
        return True

    # -- execution ------------------------------------------------------------------------
    def start(self, v: Vehicle) -> None:
        self.reached_at, self.phase = None, ""
        if self.state == COMPLETE:
            self.current = 0
        self.state = ACTIVE if self.items else NO_MISSION
        v.hold_here()
        v.announce_mission()

    def fly(self, v: Vehicle) -> None:
        """AUTO.MISSION's step: fly the current item, advance when it is done."""
        if self.state != ACTIVE or self.current >= len(self.items):
            return v.hold_or_off()
        item = self.items[self.current]
        done = _FLY.get(item.command, _fly_do)(self, v, item)
        if done:
            v.item_reached(item.seq)
            self.reached_at, self.phase = None, ""
            if self.current + 1 < len(self.items):
                self.current += 1
                v.announce_mission()
            else:
                self.state = COMPLETE
                v.announce_mission()
                v.mission_done()

    def _target(self, v: Vehicle, item: Item) -> np.ndarray:
        lat, lon = item.lat, item.lon
        if (lat == 0.0 and lon == 0.0) or not (math.isfinite(lat) and math.isfinite(lon)):
            xy = v.pos[:2]
            z = (
                v.pos[2]
                if not math.isfinite(item.z)
                else v.alt_to_z(item.z, ALT_FRAMES[item.frame])
            )
            return np.array([xy[0], xy[1], z])
        if not math.isfinite(item.z):  # this height, in either frame
            return v.global_to_enu(lat, lon, v.service.amsl(v.pos), relative=False)
        return v.global_to_enu(lat, lon, item.z, relative=ALT_FRAMES.get(item.frame, True))


def _beyond_the_plane(v: Vehicle, lat: float, lon: float) -> bool:
    """Whether a fix (deg; NaN or 0, 0: here) is 90 deg or more from the origin, where no
    point of the flat world lies (core/geo.py)."""
    if not (math.isfinite(lat) and math.isfinite(lon)) or (lat == 0.0 and lon == 0.0):
        return False
    return not np.isfinite(v.global_to_enu(lat, lon, 0.0, relative=True)).all()


def _fly_waypoint(store: MissionStore, v: Vehicle, item: Item) -> bool:
    target = store._target(v, item)
    yaw = item.params[3]
    heading = v.hold_yaw if not math.isfinite(yaw) else v.yaw_from_heading_deg(yaw)
    v.hold_yaw = heading
    v.fly_position(target, heading)
    if store.reached_at is None:
        radius = item.params[1] if item.command == 16 and item.params[1] > 0 else None
        if v.at(target, radius):
            store.reached_at = v.time_s
    if store.reached_at is None or item.command == 17:  # LOITER_UNLIM: stays
        return False
    hold = item.params[0] if item.command in (16, 19) else 0.0
    return v.time_s - store.reached_at >= max(hold, 0.0)


def _fly_takeoff(store: MissionStore, v: Vehicle, item: Item) -> bool:
    """Climb over the spot at MPC_TKO_SPEED to the item's height (armed only)."""
    if store.phase == "":
        if not v.armed:
            v.fly_off()
            return False
        v.takeoff_z = v.takeoff_target(v.alt_to_z(item.z, ALT_FRAMES.get(item.frame, True)))
        modes.TAKEOFF.enter(v)
        store.phase = "climb"
    climb = v.params.values["MPC_TKO_SPEED"] * v.poll_s
    v.ramp_z = min(v.takeoff_z, v.ramp_z + climb)
    v.fly_position([v.hold_xyz[0], v.hold_xyz[1], v.ramp_z], v.hold_yaw)
    near = abs(v.pos[2] - v.takeoff_z) < v.params.values["NAV_MC_ALT_RAD"]
    return v.ramp_z >= v.takeoff_z and near


def _fly_land(store: MissionStore, v: Vehicle, item: Item) -> bool:
    if store.phase == "":
        target = store._target(v, item)
        v.hold_xyz = np.array([target[0], target[1], v.pos[2]])
        store.phase = "approach"
    if store.phase == "approach":
        v.fly_position(v.hold_xyz, v.hold_yaw)
        if np.hypot(*(v.pos[:2] - v.hold_xyz[:2])) < v.params.values["NAV_ACC_RAD"] / 2:
            store.phase = "descend"
        return False
    modes.LAND.step(v)
    return v.on_ground


def _fly_rtl(store: MissionStore, v: Vehicle, item: Item) -> bool:
    v.set_mode(modes.RTL)
    return False


def _fly_do(store: MissionStore, v: Vehicle, item: Item) -> bool:
    return True


_FLY = {16: _fly_waypoint, 17: _fly_waypoint, 18: _fly_waypoint, 19: _fly_waypoint}
_FLY.update({20: _fly_rtl, 21: _fly_land, 22: _fly_takeoff})
