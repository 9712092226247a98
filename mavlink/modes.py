"""PX4's flight modes as objects: the custom-mode number a HEARTBEAT carries and what each
mode flies every poll.

PX4 packs its mode in HEARTBEAT.custom_mode as `main << 16 | sub << 24` (px4_custom_mode.h:
main 1 MANUAL, 2 ALTCTL, 3 POSCTL, 4 AUTO, 5 ACRO, 6 OFFBOARD, 7 STABILIZED; AUTO's sub 2
TAKEOFF, 3 LOITER, 4 MISSION, 5 RTL, 6 LAND); MAVSDK and QGroundControl decode the flight mode
from it. A mode's `step(v)` writes the vehicle's target for this poll (`Vehicle.fly_*`).

    HOLD.custom_mode == (4 << 16) | (3 << 24)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from skyswarm.mavlink.vehicle import Vehicle

# MAV_MODE_FLAG bits of HEARTBEAT.base_mode
CUSTOM, TEST, AUTO_FLAG, GUIDED, STABILIZE, HIL, MANUAL_INPUT, ARMED = (1 << i for i in range(8))


class NavMode:
    """A flight mode: PX4's (main, sub) numbers, base-mode flags, and its per-poll flying."""

    name = "?"
    main, sub = 0, 0
    flags = CUSTOM
    needs_position = True  # refused (DENIED) without a position estimate: always present here

    @property
    def custom_mode(self) -> int:
        return (self.main << 16) | (self.sub << 24)

    def enter(self, v: Vehicle) -> None:
        """Called once when `v` switches to this mode."""

    def step(self, v: Vehicle) -> None:
        """Write `v`'s target for this poll (the default: motors off on the ground, else hold)."""
        if v.on_ground:
            v.fly_off()
        else:
            v.fly_position(v.hold_xyz, v.hold_yaw)

    def __repr__(self) -> str:
        return f"<NavMode {self.name}>"


class Manual(NavMode):
    """MANUAL / STABILIZED / ACRO: MANUAL_CONTROL sticks -> tilt, yaw rate, collective."""

    name, main = "MANUAL", 1
    flags = CUSTOM | MANUAL_INPUT | STABILIZE

    def step(self, v: Vehicle) -> None:
        x, y, z, r = v.sticks  # -1..1 (z 0..1)
        if v.on_ground and z < 0.1:
            v.fly_off()
            return
        tilt = math.radians(v.params.values["MPC_MAN_TILT_MAX"])
        f_max = 4.0 * v.max_thrust_n
        # pitch forward (x > 0) is a positive FLU pitch (nose down); roll right positive
        v.fly_attitude(y * tilt, x * tilt, z * f_max, rate=-r * v.max_yaw_rate)


class Stabilized(Manual):
    name, main = "STABILIZED", 7


class Acro(Manual):
    name, main = "ACRO", 5


class Position(NavMode):
    """POSCTL / ALTCTL: sticks -> horizontal speed (body axes), climb rate, yaw rate; centred
    sticks hold the spot."""

    name, main = "POSCTL", 3
    flags = CUSTOM | MANUAL_INPUT | STABILIZE | GUIDED

    def enter(self, v: Vehicle) -> None:
        v.hold_here()

    def step(self, v: Vehicle) -> None:
        x, y, z, r = v.sticks
        climb = (z - 0.5) * 2.0  # -1..1
        if v.on_ground and climb <= 0.1:
            v.fly_off()
            return
        if abs(x) < 0.05 and abs(y) < 0.05 and abs(climb) < 0.05 and abs(r) < 0.05:
            v.fly_position(v.hold_xyz, v.hold_yaw)
            return
        speed = v.params.values["MPC_VEL_MANUAL"]
        c, s = math.cos(v.yaw), math.sin(v.yaw)
        fwd, right = x * speed, y * speed
        ve = np.array([fwd * c + right * s, fwd * s - right * c, 0.0])  # ENU: right = -left
        vz = climb * (v.max_climb if climb > 0 else v.max_descent)
        ve[2] = vz
        v.fly_velocity(ve, yaw_rate=-r * v.max_yaw_rate)
        v.hold_here()


class Altitude(Position):
    name, main = "ALTCTL", 2


class Hold(NavMode):
    """AUTO.LOITER: hold `hold_xyz` (where the mode was entered, or a DO_REPOSITION target)."""

    name, main, sub = "HOLD", 4, 3
    flags = CUSTOM | STABILIZE | GUIDED | AUTO_FLAG


class Takeoff(NavMode):
    """AUTO.TAKEOFF: climb at MPC_TKO_SPEED over the take-off spot to `takeoff_z`, then HOLD."""

    name, main, sub = "TAKEOFF", 4, 2
    flags = CUSTOM | STABILIZE | GUIDED | AUTO_FLAG

    def enter(self, v: Vehicle) -> None:
        v.hold_xyz = np.array([v.pos[0], v.pos[1], v.takeoff_z])
        v.hold_yaw = v.yaw
        v.ramp_z = v.pos[2]

    def step(self, v: Vehicle) -> None:
        climb = v.params.values["MPC_TKO_SPEED"] * v.poll_s
        v.ramp_z = min(v.takeoff_z, v.ramp_z + climb)
        v.fly_position([v.hold_xyz[0], v.hold_xyz[1], v.ramp_z], v.hold_yaw)
        if abs(v.pos[2] - v.takeoff_z) < 0.1 and v.ramp_z >= v.takeoff_z:
            v.statustext("Takeoff to target altitude done", 6)
            v.set_mode(HOLD, keep_hold=True)


class Land(NavMode):
    """AUTO.LAND: descend over the spot (faster above MPC_LAND_ALT2); on the ground, motors
    off, then disarm after COM_DISARM_LAND."""

    name, main, sub = "LAND", 4, 6
    flags = CUSTOM | STABILIZE | GUIDED | AUTO_FLAG

    def enter(self, v: Vehicle) -> None:
        v.hold_here()

    def step(self, v: Vehicle) -> None:
        if v.on_ground:
            v.fly_off()
            return
        p = v.params.values
        slow = v.height < p["MPC_LAND_ALT2"]
        speed = p["MPC_LAND_SPEED"] if slow else max(p["MPC_LAND_SPEED"], v.max_descent)
        xy = np.clip(1.0 * (v.hold_xyz[:2] - v.pos[:2]), -2.0, 2.0)  # m/s, stay over the spot
        v.fly_velocity_yaw(np.array([xy[0], xy[1], -speed]), v.hold_yaw)


class ReturnToLaunch(NavMode):
    """AUTO.RTL: climb to RTL_RETURN_ALT above home (if lower), fly home at that height,
    then land."""

    name, main, sub = "RTL", 4, 5
    flags = CUSTOM | STABILIZE | GUIDED | AUTO_FLAG

    def enter(self, v: Vehicle) -> None:
        v.rtl_z = max(v.pos[2], v.home[2] + v.params.values["RTL_RETURN_ALT"])
        v.hold_yaw = v.yaw
        v.rtl_phase = "climb"

    def step(self, v: Vehicle) -> None:
        if v.on_ground:
            v.fly_off()
            return
        if v.rtl_phase == "climb":
            v.fly_position([v.pos[0], v.pos[1], v.rtl_z], v.hold_yaw)
            if v.pos[2] >= v.rtl_z - 0.5:
                v.rtl_phase = "return"
        if v.rtl_phase == "return":
            v.fly_position([v.home[0], v.home[1], v.rtl_z], v.hold_yaw)
            if np.hypot(*(v.pos[:2] - v.home[:2])) < v.params.values["NAV_ACC_RAD"] / 2:
                v.rtl_phase = "land"
                v.hold_xyz = v.home.copy()
        if v.rtl_phase == "land":
            LAND.step(v)


class Offboard(NavMode):
    """OFFBOARD: the last SET_POSITION_TARGET_* / SET_ATTITUDE_TARGET (mavlink/offboard.py)."""

    name, main = "OFFBOARD", 6
    flags = CUSTOM | STABILIZE | GUIDED

    def step(self, v: Vehicle) -> None:
        v.offboard.fly(v)


class MissionMode(NavMode):
    """AUTO.MISSION: the uploaded mission (mavlink/mission_protocol.py executes it)."""

    name, main, sub = "MISSION", 4, 4
    flags = CUSTOM | STABILIZE | GUIDED | AUTO_FLAG

    def enter(self, v: Vehicle) -> None:
        v.mission.start(v)

    def step(self, v: Vehicle) -> None:
        v.mission.fly(v)


MANUAL, STABILIZED, ACRO = Manual(), Stabilized(), Acro()
POSCTL, ALTCTL, HOLD, TAKEOFF = Position(), Altitude(), Hold(), Takeoff()
LAND, RTL, OFFBOARD, MISSION = Land(), ReturnToLaunch(), Offboard(), MissionMode()
MODES = (MANUAL, STABILIZED, ACRO, POSCTL, ALTCTL, HOLD, TAKEOFF, LAND, RTL, OFFBOARD, MISSION)
BY_CUSTOM = {m.custom_mode: m for m in MODES}
BY_MAIN = {m.main: m for m in MODES if m.main != 4}  # AUTO needs its sub mode


def mode_of(main: int, sub: int) -> NavMode | None:
    """The mode PX4's (main, sub) names (AUTO with sub 0 or 1 (READY): HOLD), or None."""
    if main == 4:
        return BY_CUSTOM.get((4 << 16) | (sub << 24), HOLD if sub in (0, 1) else None)
    return BY_MAIN.get(main)
