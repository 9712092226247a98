"""One poll's sensed state of every vehicle, in MAVLink's frames, computed as arrays.

Rows follow the service's vehicle order. The state is what the UAV's own controller flies on
(the estimate with `[uav.sensors]` driving control, else the truth: uav/commands.py
`sensed_swarm_state`); GPS_RAW_INT reports the GPS fix (the truth plus the GPS model's error
when sensors are on). Geodetic coordinates come from the ENU position and the scenario's
`[geo] origin` (or `[mavlink] home_origin`) by core/geo.py's flat-world mapping: altitude AMSL
= origin altitude + z everywhere, so GLOBAL_POSITION_INT's alt - HOME_POSITION's altitude is
its relative_alt, -LOCAL_POSITION_NED z, however far from home.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from skyswarm.core.geo import enu_to_wgs84
from skyswarm.mavlink.frames import (
    enu_to_ned,
    euler_ned,
    flu_to_frd,
    matrix_to_quat_wxyz,
    rotation_ned,
)
from skyswarm.uav.commands import sensed_swarm_state


@dataclass
class Snapshot:
    time_s: float
    pos: np.ndarray  # (n, 3) m ENU
    vel: np.ndarray  # (n, 3) m/s ENU
    yaw_enu: np.ndarray  # (n,) rad
    ned: np.ndarray  # (n, 3) m, local NED from each vehicle's home
    ned_vel: np.ndarray  # (n, 3) m/s NED
    euler: np.ndarray  # (n, 3) roll, pitch, yaw rad (NED/FRD)
    quat: np.ndarray  # (n, 4) w, x, y, z (NED/FRD)
    rates: np.ndarray  # (n, 3) rad/s FRD
    heading_deg: np.ndarray  # (n,) 0..360 from north
    voltage: np.ndarray  # (n,) V
    remaining: np.ndarray  # (n,) % (-1 unknown)
    throttle: np.ndarray  # (n,) % of full thrust
    gps_error: np.ndarray  # (n, 3) m, GPS fix - sensed position
    homes: np.ndarray  # (n, 3) m ENU
    origin: tuple[float, ...] = field(default=())

    @cached_property
    def _geodetic(self) -> np.ndarray:
        """Converted once per poll, when a message needs it."""
        return enu_to_wgs84(
            np.vstack([self.pos, self.pos + self.gps_error, self.homes]), self.origin
        )

    @property
    def geo(self) -> np.ndarray:
        """(n, 3) lat deg, lon deg, alt m AMSL of the sensed positions."""
        return self._geodetic[: len(self.pos)]

    @property
    def gps(self) -> np.ndarray:
        """(n, 3) the GPS fixes, same units."""
        return self._geodetic[len(self.pos) : 2 * len(self.pos)]

    @property
    def home_geo(self) -> np.ndarray:
        return self._geodetic[2 * len(self.pos) :]


def take_snapshot(groups, homes: np.ndarray, origin, time_s: float) -> Snapshot:
    """`groups`: [(swarm, swarm indices (k,), rows of the vehicles (k,))]; `homes` (n, 3)."""
    n = len(homes)
    pos, vel = np.zeros((n, 3)), np.zeros((n, 3))
    quat = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))
    rates, gps_err = np.zeros((n, 3)), np.zeros((n, 3))
    voltage, remaining, throttle = np.full(n, 16.8), np.full(n, -1.0), np.zeros(n)
    for swarm, index, rows in groups:
        st = sensed_swarm_state(swarm, index)
        pos[rows], vel[rows], quat[rows], rates[rows] = (
            st.position,
            st.velocity,
            st.quaternion,
            st.body_rates,
        )
        errors = swarm.gps_errors()
        if errors is not None:
            truth = swarm.sim.world.state.position[swarm.slots[index]]
            gps_err[rows] = truth + errors[index] - st.position
        if swarm.battery is not None:
            voltage[rows] = swarm.battery.voltage[index]
            remaining[rows] = np.clip(swarm.battery.charge[index], 0.0, 1.0) * 100.0
        f_max = swarm.config.airframe.max_thrust_n
        throttle[rows] = swarm.motors.thrust[index].sum(axis=1) / (4 * f_max) * 100.0
    r = rotation_ned(quat)
    euler = euler_ned(r)
    return Snapshot(
        time_s=time_s,
        pos=pos,
        vel=vel,
        yaw_enu=np.arctan2(np.sin(np.pi / 2 - euler[:, 2]), np.cos(np.pi / 2 - euler[:, 2])),
        ned=enu_to_ned(pos - homes),
        ned_vel=enu_to_ned(vel),
        euler=euler,
        quat=matrix_to_quat_wxyz(r),
        rates=flu_to_frd(rates),
        heading_deg=np.degrees(euler[:, 2]) % 360.0,
        voltage=voltage,
        remaining=remaining,
        throttle=throttle,
        gps_error=gps_err,
        homes=homes,
        origin=tuple(origin),
    )
