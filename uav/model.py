"""The X quadrotor: airframe parameters, body creation, motor and rotor models, the wrench.

Motors sit at 45, 135, 225 and 315 degrees counter-clockwise from the nose, `arm_length_m`
from the centre of mass, in the body's x-y plane. Motor i pushes along body +z with thrust
f_i in [0, max_thrust_n], applied at its arm point r_i (torque r_i x f_i z), and its rotor's
reaction torque is -spin_i * c * f_i about body z. Two rotor models (`rotor_model`):

- "thrust_lag" (default): the thrust lags its command to first order, c =
  yaw_torque_coefficient_m.
- "rotor_speed": each rotor has a speed state omega_i with first-order dynamics towards
  omega_cmd = sqrt(f_cmd / k_f); thrust k_f omega^2, reaction torque k_m omega^2 (c = k_m / k_f),
  and optionally rotor (induced) drag -k_d omega_i v_i on each rotor's in-plane airspeed v_i,
  applied at its arm point (RotorPy's model).

Optional aerodynamics: body drag linear (N s/m per body axis) or quadratic (1/2 rho C_d A |u| u
per body axis on the airspeed u, rho from the ISA troposphere at the body's altitude); ground
effect (Cheeseman-Bennett T / T_inf = 1 / (1 - (R / 4 z)^2)). Everything sums to one body force
and one world torque per agent, applied with one call each. Optional landing gear: spring-damper
legs (`LandingGear`) in place of relying on the mesh's rigid contact alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from skyswarm.core.schema import ConfigError, param

MOTOR_ANGLES_DEG = (45.0, 135.0, 225.0, 315.0)  # the X layout, counter-clockwise from the nose
# Height of the centre of mass when the airframe stands on its legs: assets/quadrotor.obj's legs
# reach z = -0.08 m; 1 cm more so a UAV placed on the ground settles instead of starting inside it.
REST_HEIGHT_M = 0.09
# ISA troposphere: rho = RHO0 (1 - ISA_LAPSE h)^ISA_EXPONENT, h m above sea level (0 to 11 km).
ISA_RHO0 = 1.225  # kg/m^3 at sea level
ISA_LAPSE = 2.25577e-5  # 1/m, 0.0065 K/m / 288.15 K
ISA_EXPONENT = 4.2559  # g / (R L) - 1
GROUND_EFFECT_MIN_HEIGHT = 0.5  # rotor radii: heights below count as this (ratio 4/3)


def air_density(altitude_m: np.ndarray | float) -> np.ndarray:
    """ISA troposphere density, kg/m^3, at `altitude_m` above sea level (clamped to 0..11 km)."""
    h = np.clip(altitude_m, 0.0, 11000.0)
    return ISA_RHO0 * (1.0 - ISA_LAPSE * h) ** ISA_EXPONENT


def ground_effect_ratio(height_m: np.ndarray | float, rotor_radius_m: float) -> np.ndarray:
    """Cheeseman-Bennett: thrust in ground effect over thrust out of it at rotor height z,
    1 / (1 - (R / 4z)^2); heights under half a radius count as half a radius."""
    z = np.maximum(height_m, GROUND_EFFECT_MIN_HEIGHT * rotor_radius_m)
    return 1.0 / (1.0 - (rotor_radius_m / (4.0 * z)) ** 2)


@dataclass(frozen=True)
class Airframe:
    """Physical parameters of one quadrotor type (see configs/airframes/quad_x.toml)."""

    mass_kg: float = param(doc="mass, kg", gt=0.0)
    arm_length_m: float = param(doc="centre of mass to motor axis, m", gt=0.0)
    inertia_kg_m2: tuple[float, float, float] = param(doc="principal inertia x, y, z, kg m^2", gt=0)
    max_thrust_n: float = param(doc="maximum thrust of one motor, N", gt=0.0)
    motor_time_constant_s: float = param(doc="first-order thrust lag, s", gt=0.0)
    yaw_torque_coefficient_m: float = param(
        doc="reaction torque per N of thrust, m (thrust_lag model)", gt=0.0
    )
    spin: tuple[int, int, int, int] = param((1, -1, 1, -1), "per motor: +1 CCW from above, -1 CW")
    drag_coefficients: tuple[float, float, float] = param(
        (0.0, 0.0, 0.0), "linear body drag along body x, y, z, N s/m", ge=0.0
    )
    drag_model: Literal["linear", "quadratic"] = param(
        "linear", "body drag: linear (drag_coefficients) or quadratic (drag_areas_m2)"
    )
    drag_areas_m2: tuple[float, float, float] = param(
        (0.0, 0.0, 0.0), "quadratic drag: C_d x area along body x, y, z, m^2", ge=0.0
    )
    rotor_model: Literal["thrust_lag", "rotor_speed"] = param(
        "thrust_lag", "thrust_lag: thrust lags its command; rotor_speed: omega state, k omega^2"
    )
    thrust_coefficient_n_s2: float = param(
        0.0, "rotor_speed: k_f, thrust = k_f omega^2, N s^2/rad^2", ge=0.0
    )
    torque_coefficient_n_m_s2: float = param(
        0.0, "rotor_speed: k_m, reaction torque = k_m omega^2, N m s^2/rad^2", ge=0.0
    )
    rotor_drag_coefficient: float = param(
        0.0, "rotor_speed: k_d, rotor drag = -k_d omega v_in-plane per rotor, N s^2/(m rad)", ge=0.0
    )
    rotor_radius_m: float = param(0.0, "propeller radius for ground effect, m (0: none)", ge=0.0)
    gear_points_m: tuple[float, ...] = param(
        (), "landing-gear leg attachment points, body x, y, z per leg, flat, m (empty: none)"
    )
    gear_length_m: float = param(0.0, "landing gear: nominal leg length along -body z, m", ge=0.0)
    gear_spring_n_m: float = param(0.0, "landing gear: spring constant per leg, N/m", ge=0.0)
    gear_damping_n_s_m: float = param(0.0, "landing gear: damping per leg, N s/m", ge=0.0)
    gear_friction: float = param(0.0, "landing gear: Coulomb friction coefficient", ge=0.0)
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
        if self.rotor_model == "rotor_speed" and (
            self.thrust_coefficient_n_s2 <= 0.0 or self.torque_coefficient_n_m_s2 <= 0.0
        ):
            raise ConfigError(
                file,
                f"{path}.thrust_coefficient_n_s2",
                self.thrust_coefficient_n_s2,
                "k_f and torque_coefficient_n_m_s2 k_m both > 0 with rotor_model = 'rotor_speed'",
            )
        if self.rotor_drag_coefficient > 0.0 and self.rotor_model != "rotor_speed":
            raise ConfigError(
                file,
                f"{path}.rotor_drag_coefficient",
                self.rotor_drag_coefficient,
                "0 unless rotor_model = 'rotor_speed' (rotor drag scales with rotor speed)",
            )
        if len(self.gear_points_m) % 3 or (self.gear_points_m and self.gear_length_m <= 0.0):
            raise ConfigError(
                file,
                f"{path}.gear_points_m",
                list(self.gear_points_m),
                "x, y, z per leg (a multiple of 3 values) with gear_length_m > 0",
            )

    def weight_n(self, gravity: float) -> float:
        """Weight in a world of `gravity` m/s^2, N: what hover thrust must carry.

        Airframe(...).weight_n(3.71)  # on Mars
        """
        return self.mass_kg * gravity

    def thrust_to_weight(self, gravity: float) -> float:
        """All motors' full thrust over the weight at `gravity` m/s^2 (inf without gravity)."""
        weight = self.weight_n(gravity)
        return 4 * self.max_thrust_n / weight if weight > 0.0 else math.inf

    def check_can_fly(self, gravity: float, file: str, path: str = "airframe") -> None:
        """ConfigError unless the four motors lift more than the weight at `gravity` m/s^2
        (an airframe file knows no gravity: the scenario and the swarm check it with the
        world's)."""
        if self.thrust_to_weight(gravity) <= 1.0:
            raise ConfigError(
                file,
                f"{path}.max_thrust_n",
                self.max_thrust_n,
                f"more than {self.weight_n(gravity) / 4:.3f} N (a quarter of the weight at "
                f"g = {gravity} m/s^2) to fly",
            )

    def model_summary(self) -> dict[str, str]:
        """The flight models this airframe uses, for `skyswarm validate`: rotor, body drag,
        rotor drag, ground effect and landing gear -> a short description each.

            Airframe(...).model_summary()["rotor"]  # 'rotor_speed (tau 0.02 s)'
        """
        tau = f"tau {self.motor_time_constant_s:g} s"
        if self.drag_model == "quadratic":
            drag = f"quadratic (C_d A {', '.join(f'{a:g}' for a in self.drag_areas_m2)} m^2)"
        else:
            drag = f"linear ({', '.join(f'{c:g}' for c in self.drag_coefficients)} N s/m)"
        legs = len(self.gear_points_m) // 3
        return {
            "rotor": f"{self.rotor_model} ({tau})",
            "drag": drag,
            "rotor drag": f"k_d {self.rotor_drag_coefficient:g}"
            if self.rotor_drag_coefficient > 0.0
            else "off",
            "ground effect": f"R {self.rotor_radius_m:g} m" if self.rotor_radius_m > 0 else "off",
            "landing gear": f"{legs} legs, k {self.gear_spring_n_m:g} N/m" if legs else "off",
        }

    @property
    def motor_positions(self) -> np.ndarray:
        """(4, 3) motor points in the body frame, m."""
        a = np.radians(MOTOR_ANGLES_DEG)
        return np.stack([np.cos(a), np.sin(a), np.zeros(4)], axis=1) * self.arm_length_m

    @property
    def reaction_coefficient_m(self) -> float:
        """Rotor reaction torque per N of thrust, m: k_m / k_f for the rotor_speed model."""
        if self.rotor_model == "rotor_speed":
            return self.torque_coefficient_n_m_s2 / self.thrust_coefficient_n_s2
        return self.yaw_torque_coefficient_m

    @property
    def max_rotor_speed_rad_s(self) -> float:
        """rotor_speed model: the rotor speed of max_thrust_n, rad/s (0 for thrust_lag)."""
        if self.rotor_model != "rotor_speed":
            return 0.0
        return math.sqrt(self.max_thrust_n / self.thrust_coefficient_n_s2)

    @property
    def gear_points(self) -> np.ndarray:
        """(legs, 3) landing-gear attachment points, body frame, m."""
        return np.asarray(self.gear_points_m, dtype=float).reshape(-1, 3)

    @property
    def allocation(self) -> np.ndarray:
        """(4, 4) matrix A: [collective N, torque x, y, z N m] = A @ motor thrusts (N). Rows 1-2
        are (r_i x z)_x, _y: each thrust at its arm point."""
        pos = self.motor_positions
        arm_torque = np.cross(pos, [0.0, 0.0, 1.0])  # (4, 3) r x F per N of thrust
        spin = np.asarray(self.spin, dtype=float)
        return np.stack(
            [np.ones(4), arm_torque[:, 0], arm_torque[:, 1], -spin * self.reaction_coefficient_m]
        )


class Motors:
    """Rotor state of N x 4 motors, stepped in uav/kernel.py, kept as thrust N (saturated).

    thrust_lag: the thrust lags its command to first order. rotor_speed: the rotor speed
    omega = sqrt(thrust / k_f) lags omega_cmd = sqrt(command / k_f) to first order (the thrust,
    k_f omega^2, is then not first order); `rotor_speed` reads omega.

    Each agent's motors may differ from the airframe's (domain randomisation, envs/): `params`
    (N, 2) holds per agent the lag per tick (column kernel.LAG) and the thrust scale s (column
    kernel.GAIN): its motors make s times the commanded thrust, up to s f_max (k_f s times
    nominal), which the controller does not know. `set_params` changes them.

        motors.set_params(np.array([0, 1]), thrust_scale=[1.1, 0.9], time_constant_s=[0.02, 0.03])
    """

    def __init__(self, airframe: Airframe, n: int, dt: float) -> None:
        self.f_max = airframe.max_thrust_n  # N
        self.dt = dt  # s, one tick
        self.alpha = 1.0 - math.exp(-dt / airframe.motor_time_constant_s)  # exact discretisation
        self.speed_state = airframe.rotor_model == "rotor_speed"
        self.k_f = airframe.thrust_coefficient_n_s2  # N s^2 / rad^2 (rotor_speed)
        self.thrust = np.zeros((n, 4))  # N
        self.params = np.column_stack([np.full(n, self.alpha), np.ones(n)])  # (N, 2) lag, scale

    def set_params(
        self, index: np.ndarray, thrust_scale: np.ndarray, time_constant_s: np.ndarray
    ) -> None:
        """Agents `index` (k,): thrust scales (k,) > 0 and motor time constants (k,) s > 0."""
        scale = np.asarray(thrust_scale, dtype=float)
        tau = np.asarray(time_constant_s, dtype=float)
        if not (np.all(scale > 0.0) and np.all(tau > 0.0)):
            raise ValueError(
                f"motor thrust_scale {scale!r} and time_constant_s {tau!r}: expected all > 0"
            )
        self.params[index, 0] = 1.0 - np.exp(-self.dt / tau)
        self.params[index, 1] = scale

    @property
    def rotor_speed(self) -> np.ndarray:
        """(N, 4) rotor speeds, rad/s (rotor_speed model; zeros for thrust_lag)."""
        if not self.speed_state:
            return np.zeros_like(self.thrust)
        return np.sqrt(self.thrust / (self.k_f * self.params[:, 1:2]))


class WrenchModel:
    """Motor thrusts, airspeed, height -> one body force and one world torque per agent.

    Its constants feed uav/kernel.py, which computes the wrench every tick; `compute` is the
    same wrench in numpy, for a recompute between ticks (after a power cut) and for tests."""

    def __init__(self, airframe: Airframe) -> None:
        self.torque_map = airframe.allocation[1:].T.copy()  # (4, 3)
        self.arms = airframe.motor_positions  # (4, 3) m, body frame
        quadratic = airframe.drag_model == "quadratic"
        self.quadratic = quadratic
        self.drag = np.zeros(3) if quadratic else -np.asarray(airframe.drag_coefficients, float)
        # Quadratic: force = drag_quad * rho * |u| u per body axis.
        self.drag_quad = -0.5 * np.asarray(airframe.drag_areas_m2, dtype=float)
        self.k_f = airframe.thrust_coefficient_n_s2
        self.rotor_drag = airframe.rotor_drag_coefficient  # k_d, 0: none
        self.rotor_radius = airframe.rotor_radius_m  # m, 0: no ground effect

    def compute(
        self,
        thrust: np.ndarray,
        rot: np.ndarray,
        vel_world: np.ndarray,
        wind: np.ndarray | None = None,
        position: np.ndarray | None = None,
        body_rate: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(N, 4) thrusts N, (N, 3, 3) body-to-world rotations, (N, 3) velocities m/s,
        optionally (N, 3) wind m/s (world frame), positions m (height for the air density and
        the ground effect; z = 0 if omitted) and body rates rad/s (rotor drag) -> (N, 3)
        body-frame force N and (N, 3) world-frame torque N m."""
        n = len(thrust)
        air = vel_world if wind is None else vel_world - wind
        height = np.zeros(n) if position is None else position[:, 2]
        vel_body = np.einsum("nji,nj->ni", rot, air)
        if self.quadratic:
            rho = air_density(height)[:, None]
            force = self.drag_quad * rho * np.abs(vel_body) * vel_body
        else:
            force = self.drag * vel_body
        lift = thrust
        if self.rotor_radius > 0.0:
            lift = thrust * ground_effect_ratio(height, self.rotor_radius)[:, None]
        force[:, 2] += lift.sum(axis=1)
        torque_body = lift @ self.torque_map
        if self.rotor_radius > 0.0:  # the reaction torque follows the rotor, not the ground
            torque_body[:, 2] = thrust @ self.torque_map[:, 2]
        if self.rotor_drag > 0.0:
            rates = np.zeros((n, 3)) if body_rate is None else body_rate
            omega = np.sqrt(thrust / self.k_f)  # (N, 4) rad/s
            local = vel_body[:, None, :] + np.cross(rates[:, None, :], self.arms[None])  # (N,4,3)
            h = -self.rotor_drag * omega[..., None] * local
            h[..., 2] = 0.0  # in-plane only
            force += h.sum(axis=1)
            torque_body += np.cross(self.arms[None], h).sum(axis=1)
        torque_world = np.einsum("nij,nj->ni", rot, torque_body)
        return force, torque_world


class LandingGear:
    """Spring-damper legs (SimUAV's terrain model) against the ground plane z = 0.

    Leg j hangs from body point e_j along -body z with nominal length l0. Where its tip would
    be below the ground, the leg is shortened to A (its length along the leg down to the
    plane) and pushes along +leg with k (l0 - A) + c d(l0 - A)/dt (never pulling), at e_j;
    Coulomb friction opposes the tip's horizontal velocity (mu times the normal force,
    smoothed below 1 cm/s). Vectorised over agents; numpy, only with `gear_points_m` set."""

    SLIP_M_S = 0.01  # m/s: friction grows linearly up to this slip speed

    def __init__(self, airframe: Airframe) -> None:
        self.points = airframe.gear_points  # (L, 3) m
        self.length = airframe.gear_length_m
        self.k, self.c = airframe.gear_spring_n_m, airframe.gear_damping_n_s_m
        self.mu = airframe.gear_friction
        # m: no leg tip reaches lower than this below the centre of mass, at any attitude
        self.reach = float(np.linalg.norm(self.points, axis=1).max()) + self.length

    def may_touch(self, position: np.ndarray) -> bool:
        """(N, 3) positions m: could any leg touch the ground? (False: skip the wrench, it is 0)"""
        return bool(len(position)) and float(position[:, 2].min()) <= self.reach

    def wrench(
        self, position: np.ndarray, rot: np.ndarray, velocity: np.ndarray, omega: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) positions m, (N, 3, 3) rotations, (N, 3) velocities m/s and angular
        velocities rad/s (world) -> (N, 3) body-frame force N and (N, 3) world torque N m."""
        arm = np.einsum("nij,lj->nli", rot, self.points)  # (N, L, 3) e_j in world axes
        down = -rot[:, :, 2]  # (N, 3) leg direction, world
        top = position[:, None, :] + arm  # (N, L, 3) attachment points
        dz = np.minimum(down[:, 2], -1e-9)[:, None]  # the leg must point downwards
        length = top[..., 2] / -dz  # (N, L) leg length along the leg down to z = 0
        squeeze = np.maximum(self.length - length, 0.0)
        v_top = velocity[:, None, :] + np.cross(omega[:, None, :], arm)  # (N, L, 3)
        rate = np.einsum("nlk,nk->nl", v_top, down)  # d(squeeze)/dt: the top moving down
        push = np.where(squeeze > 0.0, np.maximum(self.k * squeeze + self.c * rate, 0.0), 0.0)
        f = -push[..., None] * down[:, None, :]  # (N, L, 3) along +leg
        if self.mu > 0.0:
            normal = f[..., 2]
            slip = v_top.copy()
            slip[..., 2] = 0.0
            speed = np.linalg.norm(slip, axis=2)
            scale = self.mu * normal / np.maximum(speed, self.SLIP_M_S)
            f = f - scale[..., None] * slip
        force_world = f.sum(axis=1)
        torque_world = np.cross(arm, f).sum(axis=1)
        force_body = np.einsum("nji,nj->ni", rot, force_world)
        return force_body, torque_world


def resolve_mesh(airframe: Airframe, airframe_file: Path) -> Path:
    """The mesh path of `airframe`, relative to the file it came from."""
    return (Path(airframe_file).resolve().parent / airframe.mesh).resolve()
