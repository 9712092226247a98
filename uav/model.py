"""The X quadrotor: airframe parameters, body creation, motor model, equivalent wrench.

Motors sit at 45, 135, 225 and 315 degrees counter-clockwise from the nose, `arm_length_m`
from the centre of mass, in the body's x-y plane. Motor i pushes along body +z with thrust
f_i in [0, max_thrust_n] (first-order lag towards its command) and its rotor's reaction
torque is -spin_i * yaw_torque_coefficient_m * f_i about body z. The four thrusts become one
body force and one body torque per agent (`allocation` @ f), applied with one call each.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

import numpy as np

from skyswarm.core.schema import ConfigError, param
from skyswarm.core.world import World, pb  # pybullet, imported without its stdout banner
from skyswarm.uav.frames import yaw_quaternion

MOTOR_ANGLES_DEG = (45.0, 135.0, 225.0, 315.0)  # the X layout, counter-clockwise from the nose
# Height of the centre of mass when the airframe stands on its legs: assets/quadrotor.obj's legs
# reach z = -0.08 m; 1 cm more so a UAV placed on the ground settles instead of starting inside it.
REST_HEIGHT_M = 0.09
_drain = deque(maxlen=0).extend  # runs an iterator to its end, keeping nothing


@dataclass(frozen=True)
class Airframe:
    """Physical parameters of one quadrotor type (see configs/airframes/quad_x.toml)."""

    mass_kg: float = param(doc="mass, kg", gt=0.0)
    arm_length_m: float = param(doc="centre of mass to motor axis, m", gt=0.0)
    inertia_kg_m2: tuple[float, float, float] = param(doc="principal inertia x, y, z, kg m^2", gt=0)
    max_thrust_n: float = param(doc="maximum thrust of one motor, N", gt=0.0)
    motor_time_constant_s: float = param(doc="first-order thrust lag, s", gt=0.0)
    yaw_torque_coefficient_m: float = param(doc="reaction torque per N of thrust, m", gt=0.0)
    spin: tuple[int, int, int, int] = param((1, -1, 1, -1), "per motor: +1 CCW from above, -1 CW")
    drag_coefficients: tuple[float, float, float] = param(
        (0.0, 0.0, 0.0), "linear body drag along body x, y, z, N s/m", ge=0.0
    )
    max_tilt_deg: float = param(35.0, "largest tilt the airframe may reach, deg", gt=0.0, lt=90.0)
    mesh: str = param("", "OBJ body/collision mesh, relative to the airframe file")

    def validate(self, path: str, file: str) -> None:
        if any(s not in (-1, 1) for s in self.spin) or self.spin[0] != self.spin[2]:
            raise ConfigError(
                file,
                f"{path}.spin",
                list(self.spin),
                "+1/-1 with diagonal pairs equal, e.g. [1, -1, 1, -1]",
            )
        if self.spin[0] == self.spin[1]:
            raise ConfigError(
                file, f"{path}.spin", list(self.spin), "opposite spins on adjacent motors"
            )
        if self.thrust_to_weight <= 1.0:
            raise ConfigError(
                file,
                f"{path}.max_thrust_n",
                self.max_thrust_n,
                f"more than {self.weight_n / 4:.3f} N (a quarter of the weight) to fly",
            )

    @property
    def weight_n(self) -> float:
        return self.mass_kg * 9.81

    @property
    def thrust_to_weight(self) -> float:
        return 4 * self.max_thrust_n / self.weight_n

    @property
    def motor_positions(self) -> np.ndarray:
        """(4, 3) motor points in the body frame, m."""
        a = np.radians(MOTOR_ANGLES_DEG)
        return np.stack([np.cos(a), np.sin(a), np.zeros(4)], axis=1) * self.arm_length_m

    @property
    def allocation(self) -> np.ndarray:
        """(4, 4) matrix A: [collective N, torque x, y, z N m] = A @ motor thrusts (N)."""
        pos = self.motor_positions
        spin = np.asarray(self.spin, dtype=float)
        return np.stack([np.ones(4), pos[:, 1], -pos[:, 0], -spin * self.yaw_torque_coefficient_m])


class Motors:
    """Thrust state of N x 4 motors: first-order lag towards the command, saturated (stepped
    in uav/kernel.py)."""

    def __init__(self, airframe: Airframe, n: int, dt: float) -> None:
        self.f_max = airframe.max_thrust_n  # N
        self.alpha = 1.0 - math.exp(-dt / airframe.motor_time_constant_s)  # exact discretisation
        self.thrust = np.zeros((n, 4))  # N


class WrenchModel:
    """Motor thrusts and airspeed -> one body force and one world torque per agent.

    Its constants feed uav/kernel.py, which computes the wrench every tick; `compute` is the
    same wrench in numpy, for a recompute between ticks (after a power cut)."""

    def __init__(self, airframe: Airframe) -> None:
        self.torque_map = airframe.allocation[1:].T.copy()  # (4, 3)
        self.drag = -np.asarray(airframe.drag_coefficients, dtype=float)

    def compute(
        self,
        thrust: np.ndarray,
        rot: np.ndarray,
        vel_world: np.ndarray,
        wind: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(N, 4) thrusts N, (N, 3, 3) body-to-world rotations, (N, 3) velocities m/s and
        optionally (N, 3) wind m/s (world frame) -> (N, 3) body-frame force N (thrust + drag
        on the airspeed R^T (v - wind)) and (N, 3) world-frame torque N m."""
        air = vel_world if wind is None else vel_world - wind
        vel_body = np.einsum("nji,nj->ni", rot, air)
        force = self.drag * vel_body
        force[:, 2] += thrust.sum(axis=1)
        torque_world = np.einsum("nij,nj->ni", rot, thrust @ self.torque_map)
        return force, torque_world


class WrenchApplier:
    """One applyExternalForce (body frame, at the centre of mass) and one applyExternalTorque
    (world frame) per body. Torques go in WORLD_FRAME because pybullet's LINK_FRAME flag is
    applied in the world frame for torques; the caller rotates body torques itself."""

    def __init__(self, world: World) -> None:
        self.client = world.client

    def apply(self, bodies: list[int], force_body: np.ndarray, torque_world: np.ndarray) -> None:
        """`bodies` (n,) Bullet ids; (n, 3) body-frame forces N; (n, 3) world torques N m."""
        client = self.client
        # zip over three columns: zip reuses its result tuple once pybullet has let go of it,
        # so no per-body list is built (cheaper than tolist() on the (n, 3) array); a
        # zero-length deque drains the calls in C.
        _drain(
            map(
                pb.applyExternalForce,
                bodies,
                repeat(-1),
                zip(*force_body.T.tolist()),
                repeat((0.0, 0.0, 0.0)),
                repeat(pb.LINK_FRAME),
                repeat(client),
            )
        )
        _drain(
            map(
                pb.applyExternalTorque,
                bodies,
                repeat(-1),
                zip(*torque_world.T.tolist()),
                repeat(pb.WORLD_FRAME),
                repeat(client),
            )
        )


def create_bodies(
    world: World, airframe: Airframe, positions: np.ndarray, yaws: np.ndarray
) -> list[int]:
    """Create N quadrotor bodies: (N, 3) centre-of-mass positions m, (N,) ENU yaws rad."""
    if not airframe.mesh:
        raise ValueError("the airframe names no mesh file")
    shape = pb.createCollisionShape(
        pb.GEOM_MESH, fileName=str(airframe.mesh), physicsClientId=world.client
    )
    return world.create_bodies(
        airframe.mass_kg,
        shape,
        np.asarray(positions, dtype=float),
        yaw_quaternion(np.asarray(yaws, dtype=float)).tolist(),
        inertia=airframe.inertia_kg_m2,
    )


def resolve_mesh(airframe: Airframe, airframe_file: Path) -> Path:
    """The mesh path of `airframe`, relative to the file it came from."""
    return (Path(airframe_file).resolve().parent / airframe.mesh).resolve()
