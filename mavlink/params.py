"""The parameter protocol's table: PX4 names, their values, and where a change goes.

Two kinds of parameter:
- vehicle parameters (`VEHICLE_PARAMS`): the autopilot logic of this layer reads them from
  `Params.values` each poll (takeoff height and speed, land speed, acceptance radius, RTL height,
  the offboard-loss timings);
- swarm parameters (`SWARM_PARAMS`): the controller's gains and limits. They live in the
  swarm's [control] section, shared by every UAV of the swarm, and a PARAM_SET changes them in
  flight for all of them (`Swarm.retune`). Reading one returns the swarm's current value.

All values travel as MAV_PARAM_TYPE_REAL32 (PX4's integer parameters are not offered).

    params = Params(swarm, sysid=1)
    params.set("MPC_XY_VEL_MAX", 3.0)   # every UAV of the swarm: horizontal speed <= 3 m/s
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from skyswarm.uav.control import ControlConfig
from skyswarm.uav.pid import PidGains
from skyswarm.uav.swarm import Swarm

# name -> (default, low, high, doc): PX4's defaults (PX4 user guide, parameter reference)
VEHICLE_PARAMS: dict[str, tuple[float, float, float, str]] = {
    "MIS_TAKEOFF_ALT": (2.5, 0.0, 1000.0, "takeoff height above home: default and least, m"),
    "MPC_TKO_SPEED": (1.5, 0.1, 10.0, "takeoff climb speed, m/s"),
    "MPC_LAND_SPEED": (0.7, 0.1, 5.0, "final descent speed of a landing, m/s"),
    "MPC_LAND_ALT2": (5.0, 0.0, 100.0, "height below which a landing slows to MPC_LAND_SPEED, m"),
    "NAV_ACC_RAD": (2.0, 0.05, 200.0, "waypoint acceptance radius (horizontal), m"),
    "NAV_MC_ALT_RAD": (0.8, 0.05, 200.0, "waypoint acceptance height, m"),
    "RTL_RETURN_ALT": (60.0, 0.0, 1000.0, "height above home an RTL climbs to, m"),
    "COM_OF_LOSS_T": (1.0, 0.0, 60.0, "offboard setpoints missing this long: lost, s"),
    "COM_FAIL_ACT_T": (5.0, 0.0, 25.0, "hold before the failsafe action (RTL), s"),
    "COM_DISARM_LAND": (2.0, -1.0, 20.0, "disarm this long after landing (< 0: never), s"),
    "MPC_VEL_MANUAL": (10.0, 1.0, 20.0, "full-stick horizontal speed (Position mode), m/s"),
    "MPC_MAN_TILT_MAX": (35.0, 1.0, 85.0, "full-stick tilt (Stabilized mode), deg"),
}


def _gain(loop: str) -> tuple[Callable[[ControlConfig], float], Callable[..., ControlConfig]]:
    """Getter and setter of `loop`'s proportional gain in a ControlConfig."""

    def get(c: ControlConfig) -> float:
        return getattr(c, loop).kp

    def put(c: ControlConfig, v: float) -> ControlConfig:
        gains: PidGains = getattr(c, loop)
        return dataclasses.replace(c, **{loop: dataclasses.replace(gains, kp=v)})

    return get, put


def _limit(field: str) -> tuple[Callable[[ControlConfig], float], Callable[..., ControlConfig]]:
    def get(c: ControlConfig) -> float:
        return getattr(c, field)

    def put(c: ControlConfig, v: float) -> ControlConfig:
        return dataclasses.replace(c, **{field: v})

    return get, put


# name -> (getter, setter, low, high): the controller's gains and limits ([control])
SWARM_PARAMS = {
    "MPC_XY_VEL_MAX": (*_limit("max_speed_m_s"), 0.1, 50.0),
    "MPC_Z_VEL_MAX_UP": (*_limit("max_climb_m_s"), 0.1, 20.0),
    "MPC_Z_VEL_MAX_DN": (*_limit("max_descent_m_s"), 0.1, 20.0),
    "MPC_XY_P": (*_gain("position"), 0.0, 10.0),
    "MPC_Z_P": (*_gain("altitude"), 0.0, 10.0),
    "MPC_XY_VEL_P_ACC": (*_gain("ground_speed"), 0.0, 50.0),
    "MPC_Z_VEL_P_ACC": (*_gain("vertical_speed"), 0.0, 50.0),
    "MC_ROLLRATE_P": (*_gain("body_rate"), 0.0, 500.0),
    "MC_ROLL_P": (*_gain("attitude"), 0.0, 500.0),  # roll and pitch share the angle loop
    "MC_YAW_P": (*_gain("heading"), 0.0, 50.0),
    "MPC_TILTMAX_AIR": (*_limit("max_tilt_deg"), 1.0, 89.0),
}


@dataclass
class Params:
    """One vehicle's parameters (its own, and its swarm's controller)."""

    swarm: Swarm
    sysid: int

    def __post_init__(self) -> None:
        self.values = {name: spec[0] for name, spec in VEHICLE_PARAMS.items()}
        self.names = sorted([*VEHICLE_PARAMS, *SWARM_PARAMS, "MAV_SYS_ID"])

    def get(self, name: str) -> float | None:
        """The value of `name`, or None for a name this vehicle does not have."""
        if name in self.values:
            return self.values[name]
        if name in SWARM_PARAMS:
            return float(SWARM_PARAMS[name][0](self.swarm.config.control))
        if name == "MAV_SYS_ID":
            return float(self.sysid)
        return None

    def set(self, name: str, value: float) -> bool:
        """Set `name` (clamped to its range); False (value unchanged) for an unknown or
        read-only name or a value that is not finite."""
        if not math.isfinite(value):
            return False
        if name in VEHICLE_PARAMS:
            _, lo, hi, _ = VEHICLE_PARAMS[name]
            self.values[name] = min(max(value, lo), hi)
            return True
        if name in SWARM_PARAMS:
            _, put, lo, hi = SWARM_PARAMS[name]
            control = put(self.swarm.config.control, min(max(value, lo), hi))
            self.swarm.retune(control)
            return True
        return False

    def index(self, name: str) -> int:
        return self.names.index(name) if name in self.names else -1
