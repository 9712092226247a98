"""Known answers of the flight model: the SimUAV checks (Almeida, IST; REFERENCE.md section C)
with skyswarm's own objects, and closed forms of the rotor model, the arm torques, ground
effect, ISA density and hover at another planet's gravity (T2 thrust is in
tests/core/test_world.py; T3 torque is here, on both physics backends)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.backends import BodyShape, make_world
from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.frames import quat_to_matrix
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.control import MANUAL, Cascade, Setpoints, mode_index
from skyswarm.uav.flight_kernel import FlightKernel
from skyswarm.uav.mixer import Mixer
from skyswarm.uav.model import (
    Airframe,
    LandingGear,
    Motors,
    WrenchModel,
    air_density,
    ground_effect_ratio,
)
from skyswarm.uav.swarm import Swarm

DT = 0.0025  # s
ROTOR_CONFIG = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_rotor.toml")
ROTOR = ROTOR_CONFIG.airframe


class ManualKernel:
    """One agent flown by the compiled kernel in Manual at a fixed throttle, its state held in
    arrays the test integrates itself (free space, no pybullet)."""

    def __init__(
        self, af: Airframe, quat: tuple[float, float, float, float], control=CONFIG.control
    ) -> None:
        self.pos, self.vel = np.zeros((1, 3)), np.zeros((1, 3))
        self.quat, self.omega = np.array([quat], dtype=float), np.zeros((1, 3))
        self.sp = Setpoints(1)
        self.sp.mode[:] = mode_index(MANUAL)
        self.cas = Cascade(af, control, 1, DT)
        self.motors = Motors(af, 1, DT)
        self.kernel = FlightKernel(self.cas, Mixer(af), self.motors, WrenchModel(af), np.array([0]))
        self.alive, self.motor_ok = np.ones(1, dtype=bool), np.ones((1, 4))
        self.wind, self.force, self.torque = np.zeros((1, 3)), np.zeros((1, 3)), np.zeros((1, 3))

    def tick(self) -> None:
        state = self  # position, orientation, linear_velocity, angular_velocity
        self.kernel.step(
            state, self.sp, self.cas, self.alive, self.motor_ok, self.motors.params,
            self.motors.thrust,
            self.force, self.torque, self.wind,
        )  # fmt: skip

    @property
    def position(self) -> np.ndarray:
        return self.pos

    @property
    def orientation(self) -> np.ndarray:
        return self.quat

    @property
    def linear_velocity(self) -> np.ndarray:
        return self.vel

    @property
    def angular_velocity(self) -> np.ndarray:
        return self.omega


# -- SimUAV T3: torque -------------------------------------------------------------------------
@pytest.mark.parametrize("physics", ["bullet", "fast"])
def test_t3_torque_gives_an_angular_rate_slope_of_0_005(physics: str) -> None:
    """SimUAV T3: I = identity, a constant 0.005 N m torque from rest, free space -> the angular
    rate grows at 0.005 rad/s^2: 0.005 rad/s after 1 s (1e-9: nothing else acts on a body whose
    inertia is isotropic), about the torque's axis only, and the angle is the matching parabola
    0.0025 rad within the semi-implicit scheme's one-step lead (tau dt t / 2 = 6.25e-6 rad)."""
    omega, angle = t3_torque(physics)
    assert omega[0] == pytest.approx(0.005, abs=1e-9)
    assert np.abs(omega[1:]).max() < 1e-12
    assert angle == pytest.approx(0.0025, abs=0.005 * DT * 1.0 / 2 + 1e-9)


def t3_torque(physics: str) -> tuple[np.ndarray, float]:
    """SimUAV T3 on backend `physics`: (3,) angular velocity rad/s and the roll angle rad of a
    1 kg, I = identity box after 1 s of a 0.005 N m torque about x from rest (bench/fidelity.py
    reports it)."""
    world = make_world(physics, DT, 0.0)
    box = BodyShape(half_extents=(0.1, 0.1, 0.1))
    (slot,) = world.add_bodies(box, 1.0, [(0.0, 0.0, 5.0)], inertia=(1.0, 1.0, 1.0))
    slots, zero = np.array([slot]), np.zeros((1, 3))
    torque = np.array([[0.005, 0.0, 0.0]])
    for _ in range(400):  # 1 s
        world.apply_wrenches(slots, zero, torque)
        world.step_physics()
        world.read_state()
    omega = world.state.angular_velocity[slot].copy()
    qx, qw = world.state.orientation[slot][[0, 3]]
    return omega, 2.0 * math.atan2(qx, qw)


# -- SimUAV T6: drag and wind ---------------------------------------------------------------
def t6_airframe() -> Airframe:
    """Table 5: m = 1 kg, C_D = 0.1 on S = 1 m^2 (quadratic drag), maximum thrust 1 N, on the
    default airframe's models (rotor speed, quadratic drag) without what SimUAV's T6 has not:
    rotor drag and ground effect (the body sits at z = 0)."""
    af = CONFIG.airframe
    assert af.rotor_model == "rotor_speed" and af.drag_model == "quadratic"
    return dataclasses.replace(
        CONFIG.airframe,
        mass_kg=1.0,
        max_thrust_n=0.25,  # four motors: 1 N at full throttle
        drag_areas_m2=(0.1, 0.1, 0.1),
        rotor_drag_coefficient=0.0,
        rotor_radius_m=0.0,
    )


@pytest.mark.parametrize(
    ("throttle", "airspeed"),
    [(1.0, 4.04), (0.5, 2.857)],  # V = sqrt(2 T / (rho C_D S)), T = 1 N and 0.5 N
)
def test_t6_drag_balances_thrust_at_the_seed_airspeed(throttle: float, airspeed: float) -> None:
    """SimUAV T6: body at 2 m/s, tailwind 0.5 m/s, sea level (ISA rho = 1.225), thrust along
    world x (body pitched 90 deg, no gravity). Airspeed settles at 4.04 m/s (full throttle,
    ground speed 4.54 m/s, drag -1.00 N) and 2.857 m/s at half throttle, each within 1 %;
    the linear coefficient skyswarm had (fitted at one speed) gave 2.020 m/s at half."""
    thrust, ground_speed, drag = t6_drag(throttle)
    assert thrust == pytest.approx(throttle, rel=1e-9)
    assert ground_speed - 0.5 == pytest.approx(airspeed, rel=0.01)
    assert drag == pytest.approx(-throttle, rel=0.01)
    if throttle == 1.0:
        assert ground_speed == pytest.approx(4.54, rel=0.01)
        assert round(drag, 2) == -1.00


def t6_drag(throttle: float) -> tuple[float, float, float]:
    """SimUAV T6 flown 40 s at `throttle` (0..1): (thrust N, ground speed m/s, drag N along
    the motion) once settled; the airspeed is the ground speed - 0.5 m/s."""
    s = math.sqrt(0.5)
    uav = ManualKernel(t6_airframe(), (0.0, s, 0.0, s))  # body z -> world +x
    assert quat_to_matrix(uav.quat)[0][:, 2] == pytest.approx([1.0, 0.0, 0.0], abs=1e-12)
    uav.sp.manual[0] = (throttle, 0.0, 0.0, 0.0)
    uav.vel[0, 0], uav.wind[0, 0] = 2.0, 0.5
    for _ in range(round(40.0 / DT)):
        uav.tick()
        force_world = quat_to_matrix(uav.quat)[0] @ uav.force[0]
        uav.vel[0] += force_world / 1.0 * DT
        uav.pos[0] += uav.vel[0] * DT
    thrust = float(uav.motors.thrust[0].sum())
    return thrust, float(uav.vel[0, 0]), float(force_world[0] - thrust)


# -- SimUAV T7: landing gear -----------------------------------------------------------------
def test_t7_landing_gear_rests_the_centre_of_mass_at_1_513_m() -> None:
    """SimUAV T7 (Table 6): m = 1 kg, I = 1 kg m^2, four legs at (+-1, +-1) m, 1 m below the
    centre of mass, 1 m long, k = 5 N/m, c = 1 N s/m, g = 9.7471 m/s^2; dropped from 2.2 m in
    pybullet, motors off. It comes to rest at 2 - m g / (4 k) = 1.5127 m: 1.513 m +- 1 mm, level,
    and still."""
    z, tilt_deg = t7_drop()
    assert z.min() < 1.45  # it fell, compressed the springs past rest, and bounced back
    assert z[-1] == pytest.approx(2.0 - 9.7471 / 20.0, abs=1e-4)
    assert z[-1] == pytest.approx(1.513, abs=1e-3)
    assert np.ptp(z[-400:]) < 1e-4  # still over the last second
    assert tilt_deg < 1e-4


def t7_drop() -> tuple[np.ndarray, float]:
    """SimUAV T7 on the default airframe with T7's body and legs, dropped from 2.2 m, motors
    off, for 20 s in pybullet: (ticks,) centre-of-mass heights m and the final tilt deg."""
    gear = (1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0)
    af = dataclasses.replace(
        CONFIG.airframe,
        mass_kg=1.0,
        inertia_kg_m2=(1.0, 1.0, 1.0),
        drag_coefficients=(0.0, 0.0, 0.0),
        gear_points_m=gear,
        gear_length_m=1.0,
        gear_spring_n_m=5.0,
        gear_damping_n_s_m=1.0,
    )
    sim = Simulator(SimulationConfig(gravity=9.7471), WorldConfig())
    swarm = Swarm(sim, dataclasses.replace(CONFIG, airframe=af), [1], [(0.0, 0.0, 2.2)], [0.0])
    uav = swarm.agents[0]
    z = run(sim, 20.0, lambda: uav.position[2])
    return z, uav.tilt_deg


def test_t7_gear_friction_is_coulomb_on_each_legs_slip() -> None:
    """T7's legs with friction mu = 0.5, level at z = 1.5 m (each 1 m leg squeezed 0.5 m:
    k 0.5 = 2.5 N normal per leg, 10 N in all), sliding at 1 m/s along x: each leg adds
    -mu 2.5 = -1.25 N along x, -5 N in all (beyond the 1 cm/s smoothing, Coulomb's law does not
    depend on the speed: the same at 3 m/s), applied at the leg points 1 m below the centre of
    mass, so +5 N m about y (the friction tips the nose down). At 5 mm/s, half the slip
    speed, it is half; at rest or with mu = 0 there is no horizontal force."""
    gear = (1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0, 1.0, -1.0, -1.0, -1.0, -1.0)
    af = dataclasses.replace(
        CONFIG.airframe, gear_points_m=gear, gear_length_m=1.0, gear_spring_n_m=5.0,
        gear_damping_n_s_m=1.0, gear_friction=0.5,
    )  # fmt: skip
    legs = LandingGear(af)
    pos, rot, spin = np.array([[0.0, 0.0, 1.5]]), np.eye(3)[None], np.zeros((1, 3))
    for speed, drag in ((1.0, -5.0), (3.0, -5.0), (0.005, -2.5), (0.0, 0.0)):
        force, torque = legs.wrench(pos, rot, np.array([[speed, 0.0, 0.0]]), spin)
        assert force[0] == pytest.approx([drag, 0.0, 10.0], abs=1e-12), speed
        assert torque[0] == pytest.approx([0.0, -drag, 0.0], abs=1e-12), speed
    frictionless = LandingGear(dataclasses.replace(af, gear_friction=0.0))
    force, _ = frictionless.wrench(pos, rot, np.array([[1.0, 0.0, 0.0]]), spin)
    assert force[0] == pytest.approx([0.0, 0.0, 10.0], abs=1e-12)


# -- rotor-speed model ------------------------------------------------------------------------
def test_hover_rotor_speed_is_sqrt_m_g_over_4_k_f() -> None:
    """quad_x_rotor hovering at 10 m in pybullet: each rotor settles at sqrt(m g / (4 k_f)) =
    777.8 rad/s within 0.1 % (ground effect at 10 m is 1e-5 of thrust)."""
    sim = Simulator(world=WorldConfig())
    swarm = Swarm(sim, ROTOR_CONFIG, [1], [(0.0, 0.0, 10.0)], [0.0], hovering=True)
    run(sim, 6.0)
    expected = math.sqrt(ROTOR.mass_kg * 9.81 / (4 * ROTOR.thrust_coefficient_n_s2))
    assert expected == pytest.approx(777.81, abs=0.01)
    assert swarm.motors.rotor_speed[0] == pytest.approx([expected] * 4, rel=1e-3)
    assert swarm.agents[0].position[2] == pytest.approx(10.0, abs=0.01)


def test_rotor_speed_step_reaches_63_2_percent_at_its_time_constant() -> None:
    """Throttle 25 % -> 100 % (omega 550 -> 1100 rad/s): after tau = 0.02 s (8 ticks) the rotor
    speed has made 1 - 1/e = 63.2 % of the step (exact discretisation, 1e-9); the thrust
    k_f omega^2 has made ((0.5 + 0.5 x 0.632)^2 - 0.25) / 0.75 = 55.5 %, not 63.2 %: it is
    omega that lags."""
    uav = ManualKernel(ROTOR, (0.0, 0.0, 0.0, 1.0))
    uav.pos[0, 2] = 100.0
    uav.sp.manual[0] = (0.25, 0.0, 0.0, 0.0)
    w0 = ROTOR.max_rotor_speed_rad_s * 0.5
    uav.motors.thrust[:] = ROTOR.thrust_coefficient_n_s2 * w0**2  # steady at 25 % thrust
    uav.tick()
    assert uav.motors.rotor_speed[0] == pytest.approx([w0] * 4, rel=1e-12)
    uav.sp.manual[0] = (1.0, 0.0, 0.0, 0.0)
    ticks = round(ROTOR.motor_time_constant_s / DT)
    assert ticks == 8
    for _ in range(ticks):
        uav.tick()
    w1 = ROTOR.max_rotor_speed_rad_s
    fraction = (uav.motors.rotor_speed[0] - w0) / (w1 - w0)
    assert fraction == pytest.approx([1 - math.exp(-1)] * 4, abs=1e-9)
    f0, f1 = ROTOR.max_thrust_n * 0.25, ROTOR.max_thrust_n
    thrust_fraction = (uav.motors.thrust[0] - f0) / (f1 - f0)
    assert thrust_fraction == pytest.approx([0.5546] * 4, abs=1e-4)


def test_rotor_speed_stays_between_zero_and_its_limit() -> None:
    """Throttle maps to omega_cmd = sqrt(throttle) omega_max: full throttle for 0.5 s (25 tau)
    brings every rotor to omega_max = sqrt(max_thrust / k_f) = 1100 rad/s within 1e-9 and never
    past it, also with a full roll stick on top (the mixer's command is clipped at f_max);
    throttle 0 then brings it down towards 0 without going below (e^-25 of the way left)."""
    uav = ManualKernel(ROTOR, (0.0, 0.0, 0.0, 1.0))
    uav.pos[0, 2] = 100.0
    w_max = ROTOR.max_rotor_speed_rad_s
    assert w_max == pytest.approx(1100.0, rel=1e-3)
    top = []
    for stick in ((1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 0.0, 0.0)):
        uav.sp.manual[0] = stick
        for _ in range(200):
            uav.tick()
            top.append(uav.motors.rotor_speed[0].max())
        if stick[1] == 0.0:
            assert uav.motors.rotor_speed[0] == pytest.approx([w_max] * 4, rel=1e-9)
    assert max(top) <= w_max * (1 + 1e-12)
    uav.sp.manual[0] = (0.0, 0.0, 0.0, 0.0)
    low = []
    for _ in range(200):
        uav.tick()
        low.append(uav.motors.rotor_speed[0].min())
    assert min(low) >= 0.0
    assert uav.motors.rotor_speed[0].max() < w_max * math.exp(-24.0)


# -- arm forces ---------------------------------------------------------------------------------
@pytest.mark.parametrize("motor", range(4))
def test_one_motor_thrust_gives_the_torque_r_cross_f(motor: int) -> None:
    """Only motor `motor` alive at full throttle, body tilted and yawed: the kernel's world
    torque is R (r_i x (0, 0, f_i) + reaction) within 1e-9, r_i the motor's arm point (0.17 m at
    45 + 90 i deg), f_i its thrust; the roll/pitch part is 0.1202 f_i N m about each axis. At
    1 km up, where ground effect is 1 + 1e-9 of the thrust; at rest, so no rotor drag."""
    q = np.array([0.1, -0.2, 0.3, 0.9])
    uav = ManualKernel(CONFIG.airframe, tuple(q / np.linalg.norm(q)))
    uav.pos[0, 2] = 1000.0
    uav.motor_ok[0] = 0.0
    uav.motor_ok[0, motor] = 1.0
    uav.sp.manual[0] = (1.0, 0.0, 0.0, 0.0)
    for _ in range(3):
        uav.tick()
    f = uav.motors.thrust[0, motor]
    assert f > 0.5 and np.count_nonzero(uav.motors.thrust[0]) == 1  # 3 ticks of the rotor lag
    af = CONFIG.airframe
    r = af.motor_positions[motor]
    reaction = np.array([0.0, 0.0, -af.spin[motor] * af.reaction_coefficient_m * f])
    body = np.cross(r, [0.0, 0.0, f]) + reaction
    assert np.abs(body[:2]) == pytest.approx([0.17 * math.sqrt(0.5) * f] * 2, rel=1e-12)
    rot = quat_to_matrix(uav.quat)[0]
    np.testing.assert_allclose(uav.torque[0], rot @ body, rtol=0, atol=1e-9)


# -- ground effect, ISA -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("z_over_r", "ratio"), [(0.25, 4 / 3), (1.0, 16 / 15), (2.0, 64 / 63), (4.0, 256 / 255)]
)
def test_ground_effect_matches_cheeseman_bennett(z_over_r: float, ratio: float) -> None:
    """Cheeseman-Bennett T / T_inf = 1 / (1 - (R / 4z)^2): 1.0667, 1.0159, 1.0039 at z/R = 1,
    2, 4. The kernel's vertical force over the rotor thrust at those heights matches (1 %
    asked, 1e-9 held); the numpy wrench agrees; far up the gain is 1 and below R / 2 it stops at
    4/3."""
    uav = ManualKernel(ROTOR, (0.0, 0.0, 0.0, 1.0))
    uav.pos[0, 2] = z_over_r * ROTOR.rotor_radius_m
    uav.sp.manual[0] = (0.5, 0.0, 0.0, 0.0)
    uav.tick()
    thrust = uav.motors.thrust[0].sum()
    assert uav.force[0, 2] / thrust == pytest.approx(ratio, rel=1e-9)
    assert uav.force[0, 2] / thrust == pytest.approx(ratio, rel=0.01)
    force, _ = WrenchModel(ROTOR).compute(
        uav.motors.thrust, quat_to_matrix(uav.quat), uav.vel, position=uav.pos
    )
    assert force[0, 2] == pytest.approx(uav.force[0, 2], rel=1e-12)
    r = ROTOR.rotor_radius_m
    assert ground_effect_ratio(1000 * r, r) == pytest.approx(1.0, abs=1e-6)
    assert ground_effect_ratio(0.1 * r, r) == pytest.approx(4 / 3, rel=1e-12)


def test_isa_density_follows_the_standard_atmosphere_table() -> None:
    """ISA: 1.2250 kg/m^3 at sea level, 1.1117 at 1 km, 0.7364 at 5 km, 0.3639 at 11 km
    (ICAO table, 0.1 %); below sea level counts as sea level."""
    table = {0.0: 1.2250, 1000.0: 1.1117, 5000.0: 0.7364, 11000.0: 0.3639}
    for h, rho in table.items():
        assert air_density(h) == pytest.approx(rho, rel=1e-3), h
    assert air_density(-50.0) == 1.225


def test_rotor_drag_opposes_the_in_plane_airspeed_with_rotor_speed() -> None:
    """RotorPy's rotor drag, level at hover thrust in a 5 m/s headwind along body x: each
    rotor adds -k_d omega 5 m/s = -0.389 N along x, four -1.556 N, and nothing along z;
    quadratic body drag adds -rho C_d A 25 / 2 = -0.303 N (ISA rho 1.2133 at 100 m); a yaw rate
    adds r x arm to the local airspeed and so a yaw torque against it."""
    wrench = WrenchModel(ROTOR)
    w = 777.8144860139203
    thrust = np.full((1, 4), ROTOR.thrust_coefficient_n_s2 * w**2)
    rot = np.eye(3)[None]
    up = np.array([[0.0, 0.0, 100.0]])  # out of ground effect (1e-4 %)
    force, torque = wrench.compute(thrust, rot, np.zeros((1, 3)), np.array([[-5.0, 0, 0]]), up)
    rotor = -ROTOR.rotor_drag_coefficient * w * 5.0
    body = -0.5 * float(air_density(100.0)) * ROTOR.drag_areas_m2[0] * 25.0
    assert rotor == pytest.approx(-0.3889, abs=1e-4) and body == pytest.approx(-0.3033, abs=1e-4)
    assert force[0, 0] == pytest.approx(4 * rotor + body, rel=1e-12)
    assert force[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert force[0, 2] == pytest.approx(thrust.sum(), rel=1e-5)
    spin = np.array([[0.0, 0.0, 1.0]])
    _, spinning = wrench.compute(thrust, rot, np.zeros((1, 3)), np.array([[-5.0, 0, 0]]), up, spin)
    # local airspeed r x arm = 0.17 m/s tangential at every rotor: torque -4 k_d w 0.17 * 0.17
    assert spinning[0, 2] - torque[0, 2] == pytest.approx(
        -4 * ROTOR.rotor_drag_coefficient * w * 0.17**2, rel=1e-9
    )


def test_drag_opposes_the_airspeed_either_way_and_thins_with_the_air() -> None:
    """The compiled kernel, quad_x_rotor level at half throttle: a 5 m/s wind from either side
    along x or y drags it along with the wind, equal and opposite (the quadratic term keeps
    its sign, |u| u), at 100 m and 5 km; its force is the numpy wrench's, air density
    included (ISA 1.2133 kg/m^3 at 100 m, 0.7364 at 5 km)."""
    forces = {}
    for z in (100.0, 5000.0):
        for axis in (0, 1):
            for sign in (1.0, -1.0):
                uav = ManualKernel(ROTOR, (0.0, 0.0, 0.0, 1.0))
                uav.pos[0, 2] = z
                uav.wind[0, axis] = 5.0 * sign
                uav.sp.manual[0] = (0.5, 0.0, 0.0, 0.0)
                uav.tick()
                ref, _ = WrenchModel(ROTOR).compute(
                    uav.motors.thrust, quat_to_matrix(uav.quat), uav.vel, uav.wind, uav.pos
                )
                assert uav.force[0] == pytest.approx(ref[0], rel=1e-9, abs=1e-12)
                forces[z, axis, sign] = uav.force[0, axis]
    for z in (100.0, 5000.0):
        for axis in (0, 1):
            assert forces[z, axis, 1.0] > 0.0  # along with the wind
            assert forces[z, axis, 1.0] == pytest.approx(-forces[z, axis, -1.0], rel=1e-12)
    assert forces[5000.0, 0, 1.0] < forces[100.0, 0, 1.0]  # thinner air, less body drag
    assert air_density(100.0) == pytest.approx(1.2133, rel=1e-3)


def test_a_torque_demand_beyond_the_motors_range_is_shrunk_not_clipped() -> None:
    """Manual full stick of 5 N m roll and 2.5 N m pitch (10 times the default) at half
    throttle on quad_x_rotor: the motors' spread would exceed 0..f_max, so the mixer shrinks
    the roll/pitch pattern as a whole; the torque keeps the demanded direction (x / y = 2)
    with one motor at f_max and one at 0. Clipping each motor instead turns it."""
    control = dataclasses.replace(CONFIG.control, manual_torque_nm=(5.0, 5.0, 0.1))
    uav = ManualKernel(ROTOR, (0.0, 0.0, 0.0, 1.0), control)
    uav.pos[0, 2] = 100.0
    uav.sp.manual[0] = (0.5, 1.0, 0.5, 0.0)
    for _ in range(800):  # 2 s: the rotors reach their commands
        uav.tick()
    thrust = uav.motors.thrust[0]
    assert thrust.max() == pytest.approx(ROTOR.max_thrust_n, rel=1e-6)  # saturated
    assert thrust.min() == pytest.approx(0.0, abs=1e-6)
    assert uav.torque[0, 0] / uav.torque[0, 1] == pytest.approx(2.0, rel=1e-6)


# -- controller gravity ---------------------------------------------------------------------------
@pytest.mark.parametrize("g", [3.71, 9.81])
def test_hover_holds_altitude_within_1_cm_at_the_worlds_gravity(g: float) -> None:
    """Hovering at 10 m on Mars (3.71 m/s^2) and on Earth: the controller reads g from the
    world, so the feed-forward collective is m g and the altitude error after 8 s is under 1 cm
    (with g hard-coded to 9.81 the Mars hover was 2.7 % off and climbed away)."""
    sim = Simulator(SimulationConfig(gravity=g), WorldConfig())
    swarm = Swarm(sim, CONFIG, [1], [(0.0, 0.0, 10.0)], [0.0], hovering=True)
    assert swarm.cascade.g == g
    z = run(sim, 8.0, lambda: swarm.agents[0].position[2])
    assert abs(z[-1] - 10.0) < 0.01
    assert np.abs(z[-400:] - 10.0).max() < 0.01
    assert swarm.motors.thrust[0].sum() == pytest.approx(CONFIG.airframe.mass_kg * g, rel=1e-3)
