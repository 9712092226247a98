"""One MAVLink vehicle: a UAV of a swarm as a PX4-like autopilot (state, modes, failsafe).

The service (mavlink/service.py) refreshes each vehicle's sensed state once per poll
(`pos`, `vel`, `yaw` ... world ENU), hands it the messages its links received (`handle`), then
calls `update`: landing detection, the offboard-loss failsafe, auto-disarm, and the mode's
step, which writes the vehicle's row of `Targets`. Frames: `home` is the vehicle's start
(its local NED origin: LOCAL_POSITION_NED reads 0 on the ground where it started).

Offboard-loss failsafe (PX4's, docs/mavlink.md): in OFFBOARD, no accepted setpoint for
COM_OF_LOSS_T s (1.0) -> HOLD at once (STATUSTEXT "Failsafe: offboard lost, holding"); still
holding COM_FAIL_ACT_T s (5.0) later -> RTL. Any mode change by the ground station ends it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.geo import heading_to_yaw
from skyswarm.mavlink import modes
from skyswarm.mavlink.handlers import Handlers
from skyswarm.mavlink.mission_protocol import MissionStore
from skyswarm.mavlink.offboard import Offboard
from skyswarm.mavlink.params import Params

if TYPE_CHECKING:
    from skyswarm.mavlink.link import Link
    from skyswarm.mavlink.service import MavlinkService
    from skyswarm.mavlink.targets import Targets

# MAV_LANDED_STATE
ON_GROUND, IN_AIR, TAKING_OFF, LANDING = 1, 2, 3, 4
GROUND_HEIGHT_M, GROUND_SPEED_M_S, GROUND_TIME_S = 0.25, 0.25, 0.5


class Vehicle:
    """The autopilot of swarm agent `targets.index[row]`, MAVLink system `sysid`."""

    def __init__(
        self, service: MavlinkService, targets: Targets, row: int, sysid: int, links: list[Link]
    ) -> None:
        self.service, self.targets, self.row, self.sysid = service, targets, row, sysid
        self.links = links
        swarm = targets.swarm
        self.swarm, self.index = swarm, int(targets.index[row])
        self.agent = swarm.agents[self.index]
        self.home = swarm.start_positions[self.index].copy()  # m ENU, CoM at rest
        cfg = swarm.config
        self.max_thrust_n = cfg.airframe.max_thrust_n
        self.params = Params(swarm, sysid)
        self.mission = MissionStore()
        self.offboard = Offboard()
        self.handlers = Handlers(self)
        self.armed = False
        self.mode: modes.NavMode = modes.HOLD
        self.taken = False  # a ground station flies it (else the scenario's mission does)
        self.on_ground = True
        self.landed_state = ON_GROUND
        self._still_s = 0.0
        self._ground_since: float | None = None  # sim s it landed while armed
        self.failsafe_at: float | None = None  # sim s the offboard-loss hold began
        self.sticks = (0.0, 0.0, 0.5, 0.0)  # MANUAL_CONTROL x, y, r -1..1, z 0..1
        self.hold_xyz, self.hold_yaw = self.home.copy(), 0.0
        self.takeoff_z = self.ramp_z = self.rtl_z = 0.0
        self.rtl_phase = ""
        self.pos, self.vel = self.home.copy(), np.zeros(3)
        self.yaw = 0.0
        self.time_s, self.tick, self.poll_s = 0.0, 0, service.poll_s
        self.statustexts: list[tuple[int, str]] = []  # (severity, text) to send

    # -- limits of the swarm's controller (read each use: PARAM_SET may change them) --------
    @property
    def max_climb(self) -> float:
        return self.swarm.config.control.max_climb_m_s

    @property
    def max_descent(self) -> float:
        return self.swarm.config.control.max_descent_m_s

    @property
    def max_yaw_rate(self) -> float:
        return math.radians(self.swarm.config.control.max_yaw_rate_deg_s)

    @property
    def alive(self) -> bool:
        return bool(self.swarm.alive[self.index])

    @property
    def height(self) -> float:
        """m above home (the start, at rest)."""
        return float(self.pos[2] - self.home[2])

    # -- per poll ---------------------------------------------------------------------------
    def sense(
        self, pos: np.ndarray, vel: np.ndarray, yaw: float, still: bool, tick: int, time_s: float
    ) -> None:
        """This poll's sensed state (world ENU) and whether it sits still near the ground."""
        self.pos, self.vel, self.yaw, self.tick, self.time_s = pos, vel, yaw, tick, time_s
        self._still = still

    def update(self) -> None:
        """Landing detection, failsafe, auto-disarm, then the mode's step (if flown by us)."""
        self._detect_ground()
        if not self.taken:
            return
        if self.mode is modes.OFFBOARD:
            lost_s = (self.tick - self.offboard.last_tick) * self.service.tick_s
            if lost_s > self.params.values["COM_OF_LOSS_T"]:
                self.set_mode(modes.HOLD)
                self.failsafe_at = self.time_s
                self.statustext("Failsafe: offboard lost, holding", 2)
        elif self.failsafe_at is not None and self.mode is modes.HOLD:
            if self.time_s - self.failsafe_at >= self.params.values["COM_FAIL_ACT_T"]:
                self.set_mode(modes.RTL)
                self.statustext("Failsafe: offboard lost, returning", 2)
        if not self.armed:
            self.fly_off()
            return
        self.mode.step(self)
        self._auto_disarm()

    def _detect_ground(self) -> None:
        self._still_s = self._still_s + self.poll_s if self._still else 0.0
        if self.on_ground and self.height > 2 * GROUND_HEIGHT_M:
            self.on_ground = False
        elif not self.on_ground and self._still_s >= GROUND_TIME_S:
            self.on_ground = True
            self._ground_since = self.time_s
            if self.armed:
                self.statustext("Landing detected", 6)
        if self.on_ground:
            self.landed_state = ON_GROUND
        elif self.mode is modes.TAKEOFF and self.taken:
            self.landed_state = TAKING_OFF
        elif (self.mode is modes.LAND or self.rtl_phase == "land") and self.taken:
            self.landed_state = LANDING
        else:
            self.landed_state = IN_AIR

    def _auto_disarm(self) -> None:
        delay = self.params.values["COM_DISARM_LAND"]
        since = self._ground_since
        if self.on_ground and since is not None and delay >= 0:
            if self.time_s - since >= delay:
                self.disarm()

    # -- state changes ----------------------------------------------------------------------
    def take(self) -> None:
        """The ground station flies this UAV from now on (the scenario's mission yields)."""
        if not self.taken:
            self.taken = True
            self.armed = not self.on_ground or self.armed
            self.hold_here()
            self.mode = modes.HOLD

    def arm(self) -> None:
        self.armed, self._ground_since = True, None
        self.hold_here()
        self.statustext("Armed by external command", 6)

    def disarm(self) -> None:
        self.armed, self._ground_since = False, None
        if self.mode in (modes.LAND, modes.RTL, modes.TAKEOFF):
            self.set_mode(modes.HOLD)
        self.fly_off()
        self.statustext("Disarmed", 6)

    def set_mode(self, mode: modes.NavMode, keep_hold: bool = False) -> None:
        self.failsafe_at = None
        self.rtl_phase = ""
        if not keep_hold:
            self.hold_here()
        self.mode = mode
        mode.enter(self)

    def hold_here(self) -> None:
        self.hold_xyz = np.array(self.pos, dtype=float)
        self.hold_yaw = float(self.yaw)

    def hold_or_off(self) -> None:
        if self.on_ground:
            self.fly_off()
        else:
            self.fly_position(self.hold_xyz, self.hold_yaw)

    def mission_done(self) -> None:
        self.statustext("Mission finished", 6)
        self.set_mode(modes.HOLD)

    # -- targets ----------------------------------------------------------------------------
    def fly_off(self) -> None:
        self.targets.set_off(self.row)

    def fly_position(self, xyz, yaw: float) -> None:
        self.targets.set_position(self.row, xyz, yaw)

    def fly_velocity(self, v, yaw_rate: float = 0.0) -> None:
        self.targets.set_velocity(self.row, v, yaw_rate)

    def fly_velocity_yaw(self, v, yaw: float) -> None:
        self.targets.set_velocity_yaw(self.row, v, yaw)

    def fly_attitude(
        self, roll: float, pitch: float, thrust: float, yaw: float | None = None, rate=0.0
    ) -> None:
        self.targets.set_attitude(self.row, roll, pitch, thrust, yaw, rate)

    def fly_rates(self, rates, thrust: float) -> None:
        self.targets.set_rates(self.row, rates, thrust)

    # -- geometry ---------------------------------------------------------------------------
    def global_to_enu(self, lat: float, lon: float, alt: float, relative: bool) -> np.ndarray:
        """World ENU point of WGS84 lat, lon deg and an altitude m (AMSL, or above home); its
        z is `alt_to_z(alt, relative)` wherever the place is (the world is flat: core/geo.py);
        NaN 90 deg or more from the origin."""
        amsl = alt + self.service.amsl(self.home) if relative else alt
        return self.service.to_enu(lat, lon, amsl)

    def alt_to_z(self, alt: float, relative: bool) -> float:
        return float(self.home[2] + alt if relative else alt - self.service.origin[2])

    def takeoff_target(self, z: float | None) -> float:
        """The height (world z, m) a takeoff climbs to from `z` (None: MIS_TAKEOFF_ALT above
        home), by PX4's rule (navigator takeoff.cpp and mission.cpp, v1.x): at least
        MIS_TAKEOFF_ALT above home ("Using minimum takeoff altitude"), and never below where the
        vehicle is ("Already higher than takeoff altitude": a takeoff does not descend). Before,
        a takeoff below home (an altitude above home sent as AMSL, say) left the vehicle on
        the ground in TAKEOFF for good, its target under the ground."""
        minimum = float(self.home[2] + self.params.values["MIS_TAKEOFF_ALT"])
        if z is None:
            z = minimum
        elif z < minimum:
            if z < minimum - 0.1:  # PX4 says nothing within 10 cm of it
                alt = self.params.values["MIS_TAKEOFF_ALT"]
                self.statustext(f"Using minimum takeoff altitude: {alt:.2f} m", 2)
            z = minimum
        if z < self.pos[2]:
            self.statustext("Already higher than takeoff altitude", 2)
            z = float(self.pos[2])
        return z

    def yaw_from_heading_deg(self, heading_deg: float) -> float:
        return float(heading_to_yaw(heading_deg))

    def at(self, target: np.ndarray, radius: float | None = None) -> bool:
        r = self.params.values["NAV_ACC_RAD"] if radius is None else radius
        horizontal = float(np.hypot(*(self.pos[:2] - target[:2])))
        return (
            horizontal < r and abs(self.pos[2] - target[2]) < self.params.values["NAV_MC_ALT_RAD"]
        )

    # -- messages out -----------------------------------------------------------------------
    def statustext(self, text: str, severity: int) -> None:
        """Queue a STATUSTEXT (MAV_SEVERITY: 2 critical, 4 warning, 6 info)."""
        if len(self.statustexts) < 32:
            self.statustexts.append((severity, text[:50]))

    def announce_mission(self) -> None:
        self.service.telemetry.mission_current(self)

    def item_reached(self, seq: int) -> None:
        for link in self.links:
            link.send(link.mav.mission_item_reached_encode(seq))
