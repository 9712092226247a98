"""Offboard setpoints: SET_POSITION_TARGET_LOCAL_NED / _GLOBAL_INT and SET_ATTITUDE_TARGET,
read into the world frame (ENU/FLU) and flown in OFFBOARD mode.

What is honoured (PX4's semantics, type_mask bits of POSITION_TARGET_TYPEMASK):
- position (x, y, z not all ignored; an ignored axis holds the current value), else velocity
  (vx, vy, vz, same rule); both given: the position wins (no velocity feed-forward);
- yaw (YAW not ignored), else yaw rate (YAW_RATE not ignored), else the current heading held;
- frames LOCAL_NED (1, origin at home), LOCAL_OFFSET_NED (7, from the current position),
  BODY_NED (8), BODY_OFFSET_NED (9) and BODY_FRD (12) (axes turned by the heading); global
  frames GLOBAL_INT (5, AMSL), GLOBAL_RELATIVE_ALT_INT (6) and GLOBAL_TERRAIN_ALT_INT (11,
  flat ground: relative);
- acceleration/force (any of AX, AY, AZ not ignored) is not supported: the setpoint is
  ignored, counted (`Offboard.unsupported`) and reported once by STATUSTEXT; so is one with
  a non-finite value in a field it uses (the last accepted setpoint stands); ignored fields
  are never read;
- SET_ATTITUDE_TARGET: the quaternion (NED/FRD) with a normalised thrust 0..1 of full thrust,
  or (ATTITUDE ignored, bit 128) body rates FRD with thrust.
Every accepted setpoint restarts the offboard-loss clock (vehicle.py, COM_OF_LOSS_T).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.frames import euler_from_matrix
from skyswarm.core.geo import on_globe
from skyswarm.mavlink.frames import (
    frd_to_flu,
    ned_to_enu,
    quat_wxyz_to_matrix,
    rotation_enu,
    yaw_ned_to_enu,
)

if TYPE_CHECKING:
    from skyswarm.mavlink.vehicle import Vehicle

POS_IGNORE, VEL_IGNORE, ACC_IGNORE = 0b111, 0b111 << 3, 0b111 << 6
YAW_IGNORE, YAW_RATE_IGNORE = 1 << 10, 1 << 11
ATT_RATES_IGNORE, ATT_THROTTLE_IGNORE, ATT_ATTITUDE_IGNORE = 0b111, 1 << 6, 1 << 7
LOCAL_FRAMES = {1, 7, 8, 9, 12}
BODY_FRAMES = {8, 9, 12}
OFFSET_FRAMES = {7, 9}
GLOBAL_FRAMES = {5: "amsl", 6: "relative", 11: "relative", 0: "amsl", 3: "relative", 10: "relative"}


@dataclass
class Offboard:
    """The last offboard setpoint of one vehicle (world ENU / body FLU, SI)."""

    kind: str = ""  # "position", "velocity", "attitude", "rates"; "" none yet
    xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))  # m
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # m/s
    yaw: float | None = None  # rad ENU; None: yaw rate (or hold)
    yaw_rate: float = 0.0  # rad/s ENU
    roll_pitch: tuple[float, float] = (0.0, 0.0)  # rad FLU
    rates: np.ndarray = field(default_factory=lambda: np.zeros(3))  # rad/s FLU
    thrust: float = 0.0  # N collective
    last_tick: int = -(10**9)  # sim tick of the last accepted setpoint
    unsupported: int = 0  # setpoints ignored (acceleration, unknown frame, nothing set)

    def fly(self, v: Vehicle) -> None:
        """Write the setpoint as `v`'s target (OFFBOARD's step)."""
        if self.kind == "position":
            v.fly_position(self.xyz, v.yaw if self.yaw is None else self.yaw)
        elif self.kind == "velocity":
            if v.on_ground and self.velocity[2] <= 0.0:
                v.fly_off()
            elif self.yaw is not None:
                v.fly_velocity_yaw(self.velocity, self.yaw)
            else:
                v.fly_velocity(self.velocity, yaw_rate=self.yaw_rate)
        elif self.kind == "attitude":
            r, p = self.roll_pitch
            v.fly_attitude(r, p, self.thrust, yaw=self.yaw)
        elif self.kind == "rates":
            v.fly_rates(self.rates, self.thrust)
        else:
            v.fly_position(v.hold_xyz, v.hold_yaw)

    # -- parsing --------------------------------------------------------------------------
    def local_ned(self, v: Vehicle, m) -> bool:
        """SET_POSITION_TARGET_LOCAL_NED; False (counted) when not supported."""
        if m.coordinate_frame not in LOCAL_FRAMES:
            return self._refuse(v, f"offboard frame {m.coordinate_frame} not supported")
        f = m.coordinate_frame
        turn = _heading_turn(v) if f in BODY_FRAMES else np.eye(3)  # velocities
        pos_turn = turn if f in OFFSET_FRAMES | {12} else np.eye(3)  # BODY_NED: like LOCAL
        base = v.pos if f in OFFSET_FRAMES | {12} else v.home
        p_ned = pos_turn @ _used(int(m.type_mask), 0, (m.x, m.y, m.z))
        return self._target(v, m, base + ned_to_enu(p_ned), turn)

    def global_int(self, v: Vehicle, m) -> bool:
        """SET_POSITION_TARGET_GLOBAL_INT; False (counted) when not supported."""
        kind = GLOBAL_FRAMES.get(m.coordinate_frame)
        if kind is None:
            return self._refuse(v, f"offboard frame {m.coordinate_frame} not supported")
        lat, lon = m.lat_int / 1e7, m.lon_int / 1e7
        used = (int(m.type_mask) & POS_IGNORE) != POS_IGNORE
        if used and not on_globe(lat, lon):
            return self._refuse(v, "offboard setpoint off the globe")
        xyz = v.global_to_enu(lat, lon, m.alt, relative=kind != "amsl")
        return self._target(v, m, xyz, np.eye(3))

    def _target(self, v: Vehicle, m, xyz: np.ndarray, turn: np.ndarray) -> bool:
        mask = int(m.type_mask)
        if (mask & ACC_IGNORE) != ACC_IGNORE:
            return self._refuse(v, "offboard acceleration setpoints are not supported")
        if (mask & POS_IGNORE) != POS_IGNORE:
            kind, value = "position", np.where(_ignored_enu(mask, 0), v.pos, xyz)
        elif (mask & VEL_IGNORE) != VEL_IGNORE:
            kind, value = "velocity", ned_to_enu(turn @ _used(mask, 3, (m.vx, m.vy, m.vz)))
        else:
            return self._refuse(v, "offboard setpoint sets nothing")
        if not np.all(np.isfinite(value)):  # refused whole: the last setpoint stands
            return self._refuse(v, "offboard setpoint not finite")
        if kind == "position":
            self.xyz = value
        else:
            self.velocity = value
        self.kind = kind
        self._yaw(v, mask, m.yaw, m.yaw_rate)
        self.last_tick = v.tick
        return True

    def _yaw(self, v: Vehicle, mask: int, yaw: float, yaw_rate: float) -> None:
        if not mask & YAW_IGNORE and math.isfinite(yaw):
            self.yaw, self.yaw_rate = float(yaw_ned_to_enu(yaw)), 0.0
        elif not mask & YAW_RATE_IGNORE and math.isfinite(yaw_rate):
            self.yaw, self.yaw_rate = None, -float(yaw_rate)  # NED clockwise -> ENU
        else:
            self.yaw, self.yaw_rate = v.yaw, 0.0

    def attitude(self, v: Vehicle, m) -> bool:
        """SET_ATTITUDE_TARGET; False (counted) when not supported."""
        mask = int(m.type_mask)
        thrust = self.thrust
        if not mask & ATT_THROTTLE_IGNORE:
            if not math.isfinite(m.thrust):
                return self._refuse(v, "attitude setpoint thrust not finite")
            thrust = min(max(float(m.thrust), 0.0), 1.0) * 4.0 * v.max_thrust_n
        if not mask & ATT_ATTITUDE_IGNORE:
            q = np.array(m.q, dtype=float)
            if not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-6:
                return self._refuse(v, "attitude setpoint quaternion invalid")
            roll, pitch, yaw = euler_from_matrix(rotation_enu(quat_wxyz_to_matrix(q)))[0]
            self.kind, self.roll_pitch, self.yaw = "attitude", (roll, pitch), float(yaw)
        elif (mask & ATT_RATES_IGNORE) != ATT_RATES_IGNORE:
            w = np.array([m.body_roll_rate, m.body_pitch_rate, m.body_yaw_rate], dtype=float)
            if not np.all(np.isfinite(w)):
                return self._refuse(v, "attitude setpoint rates not finite")
            self.kind, self.rates = "rates", frd_to_flu(w)
        else:
            return self._refuse(v, "attitude setpoint sets nothing")
        self.thrust = thrust
        self.last_tick = v.tick
        return True

    def _refuse(self, v: Vehicle, text: str) -> bool:
        if self.unsupported == 0:
            v.statustext(text, 4)  # MAV_SEVERITY_WARNING, once
        self.unsupported += 1
        return False


def _used(mask: int, bit: int, ned: tuple[float, float, float]) -> np.ndarray:
    """(3,) the NED x, y, z of a setpoint field group whose ignore bits start at `bit`, the
    ignored ones 0: whatever a client puts there (NaN, often) stays out of the sums."""
    return np.array([0.0 if mask & (1 << (bit + i)) else x for i, x in enumerate(ned)])


def _ignored_enu(mask: int, bit: int) -> np.ndarray:
    """(3,) bool, ENU order: which axes of the field group at `bit` the type mask ignores
    (its bits are NED x north, y east, z down)."""
    return np.array([bool(mask & (1 << (bit + i))) for i in (1, 0, 2)])


def _heading_turn(v: Vehicle) -> np.ndarray:
    """(3, 3) body-heading axes (forward, right, down) -> NED, from the vehicle's heading."""
    psi = float(yaw_ned_to_enu(v.yaw))  # NED heading
    c, s = math.cos(psi), math.sin(psi)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
