"""The compiled flight kernel (uav/kernel.py) agrees with the plain one-agent reference
(uav/reference.py) within 1e-9: random states in every mode, in calm air and in wind, with dead
agents and failed motors, for quad_x_simple (thrust lag, linear drag) and for quad_x_rotor
(the default quad_x's kernel model without its legs, which act outside the kernel: rotor-speed
state, rotor drag, quadratic drag with ISA density, ground effect), in Attitude with a yaw rate and
with a yaw angle, and at a low g; and at the edges where the two could part ways (integrator
clamps and anti-windup, rate and tilt limits, the +-180 deg heading wrap, saturated motors),
where the tests also check the numbers the limits imply."""

from __future__ import annotations

import math

import numpy as np
import pytest
from uav_helpers import CONFIG  # noqa: F401  (the default airframe; its kernel model is ROTOR)

from skyswarm.core.frames import quat_to_matrix, yaw_quaternion
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.uav import reference as ref
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.control import (
    ATTITUDE,
    BODY_RATES,
    GROUND_SPEED_AND_VERT_SPEED,
    MANUAL,
    MODES,
    POSITION,
    Cascade,
    ControlMode,
    Setpoints,
    mode_index,
)
from skyswarm.uav.flight_kernel import FlightKernel
from skyswarm.uav.mixer import Mixer
from skyswarm.uav.model import Airframe, Motors, WrenchModel

DT = 0.0025  # s, the 400 Hz tick
SIMPLE = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_simple.toml")
AF, CC = SIMPLE.airframe, SIMPLE.control  # thrust lag: one tick of a step is alpha of it
CLOSE = {"rtol": 0, "atol": 1e-9}
ALPHA = 1.0 - math.exp(-DT / AF.motor_time_constant_s)  # motor lag per tick
F_MAX = AF.max_thrust_n
ROTOR = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_rotor.toml").airframe


class FakeState:
    """The four state arrays of core.state.BodyState, agents at scattered rows."""

    def __init__(self, s: dict[str, np.ndarray], slots: np.ndarray, capacity: int) -> None:
        def spread(values: np.ndarray) -> np.ndarray:
            out = np.full((capacity, values.shape[1]), np.nan)  # unused rows must not matter
            out[slots] = values
            return out

        self.position, self.orientation = spread(s["pos"]), spread(s["quat"])
        self.linear_velocity, self.angular_velocity = spread(s["vel"]), spread(s["omega"])


class Flight:
    """N agents flown by one FlightKernel, checked against the reference on every tick.

    Starts level and at rest at 10 m, in Manual with zero memory; tests set `s` (the state),
    the setpoints, the memory and the fault/wind arrays, then call `tick`."""

    def __init__(self, n: int, seed: int = 0, af: Airframe = AF, g: float = 9.81) -> None:
        rng = np.random.default_rng(seed)
        self.n, self.af, self.g = n, af, g
        # The rotor-speed model takes sqrt(command / k_f): a 1e-16 N difference in a command
        # near 0 N becomes ~1e-5 rad/s, ~1e-8 N of thrust one tick later (d omega = dc / 2
        # sqrt(k_f c)), so thrusts and wrench are held to 1e-6 there, the controller to 1e-9.
        self.motor_close = CLOSE if af.rotor_model == "thrust_lag" else {"rtol": 0, "atol": 1e-6}
        self.s = {
            "pos": np.tile([0.0, 0.0, 10.0], (n, 1)),
            "quat": np.tile([0.0, 0.0, 0.0, 1.0], (n, 1)),
            "vel": np.zeros((n, 3)),
            "omega": np.zeros((n, 3)),
        }
        self.slots = rng.permutation(3 * n)[:n]  # the agents' rows in the world's arrays
        self.sp, self.cas = Setpoints(n), Cascade(af, CC, n, DT, g)
        self.motors = Motors(af, n, DT)
        self.alive, self.motor_ok = np.ones(n, dtype=bool), np.ones((n, 4))
        self.wind, self.force, self.torque = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
        self.kernel = FlightKernel(self.cas, Mixer(af), self.motors, WrenchModel(af), self.slots)

    def set_mode(self, i: int | slice, mode: ControlMode) -> None:
        self.sp.mode[i] = mode_index(mode)

    def tick(self) -> None:
        """One kernel tick; every agent's demand, thrusts, wrench and the memory of the stages
        its mode uses equal the reference's from the same start within 1e-9."""
        before = [self._reference_state(i) for i in range(self.n)]
        state = FakeState(self.s, self.slots, 3 * self.n)
        self.kernel.step(
            state, self.sp, self.cas, self.alive, self.motor_ok, self.motors.params,
            self.motors.thrust,
            self.force, self.torque, self.wind,
        )  # fmt: skip
        for i, st in enumerate(before):
            self._check_agent(i, st)

    def _reference_state(self, i: int) -> ref.AgentState:
        cas = self.cas
        return ref.AgentState(
            list(cas.outer.integral[i]),
            list(cas.speed.integral[i]),
            list(cas.attitude.integral[i]),
            list(cas.prev_speed[i]),
            float(cas.prev_r[i]),
            list(self.motors.thrust[i]),
            list(cas.prev_pq[i]),
        )

    def _check_agent(self, i: int, st: ref.AgentState) -> None:
        sp, s, cas = self.sp, self.s, self.cas
        mode = MODES[sp.mode[i]]
        agent_sp = ref.AgentSetpoints(
            mode, list(sp.position[i]), sp.altitude[i], sp.yaw[i], list(sp.velocity[i]),
            list(sp.attitude[i]), sp.thrust[i], list(sp.manual[i]), bool(sp.yaw_hold[i]),
            list(sp.rates[i]), list(sp.motors[i]),
        )  # fmt: skip
        af, omega = self.af, s["omega"][i].tolist()
        pos, quat, vel = s["pos"][i].tolist(), s["quat"][i].tolist(), s["vel"][i].tolist()
        d = ref.control(af, CC, DT, agent_sp, st, pos, quat, vel, omega, self.g)
        msg = f"agent {i}, {mode.name}"
        np.testing.assert_allclose(cas.demand[i], d, err_msg=msg, **CLOSE)
        # Motors mode: its commands replace the mixer's; dead agents' motors get 0, failed x 0
        mixed = list(sp.motors[i]) if mode.uses("motors") else ref.mix(af, d)
        command = [x * ok for x, ok in zip(mixed, self.motor_ok[i])] if self.alive[i] else [0.0] * 4
        f = ref.motor_step(af, st.thrust, command, DT)
        close = self.motor_close
        np.testing.assert_allclose(self.motors.thrust[i], f, err_msg=msg, **close)
        rate = ref.rotate_back(ref.quat_to_matrix(quat), omega)
        fb, tw = ref.wrench(af, f, quat, vel, self.wind[i].tolist(), pos[2], rate)
        np.testing.assert_allclose(self.force[i], fb, err_msg=msg, **close)
        np.testing.assert_allclose(self.torque[i], tw, err_msg=msg, **close)
        # The memory of the stages a mode does not use idles (bumpless entry re-initialises it)
        if mode.uses("attitude"):
            np.testing.assert_allclose(cas.attitude.integral[i], st.attitude_i, **CLOSE)
            assert cas.prev_r[i] == pytest.approx(st.prev_r, abs=1e-9)
            np.testing.assert_allclose(cas.prev_pq[i], st.prev_pq, **CLOSE)
        if mode.uses("velocity"):
            np.testing.assert_allclose(cas.prev_speed[i], st.prev_speed, err_msg=msg, **CLOSE)
            np.testing.assert_allclose(cas.speed.integral[i], st.speed_i, err_msg=msg, **CLOSE)
            np.testing.assert_allclose(cas.outer.integral[i], st.outer_i, err_msg=msg, **CLOSE)


def randomise(flight: Flight, rng: np.random.Generator) -> None:
    """Random states (some strongly tilted), setpoints of every mode, memory, wind (a third in
    calm air), 10 % dead agents and 10 % failed motors."""
    n, s, sp, cas = flight.n, flight.s, flight.sp, flight.cas
    q = rng.normal(size=(n, 4))
    q[:, 3] += 4.0
    s["quat"][:] = q / np.linalg.norm(q, axis=1, keepdims=True)
    s["pos"][:] = rng.normal(0, 5, (n, 3)) + [0, 0, 10]
    s["pos"][::4, 2] = rng.uniform(-0.1, 0.6, len(s["pos"][::4]))  # some in ground effect
    s["vel"][:], s["omega"][:] = rng.normal(0, 3, (n, 3)), rng.normal(0, 2, (n, 3))
    sp.mode[:] = np.arange(n) % len(MODES)  # every mode, mixed in one pass
    sp.position[:], sp.altitude[:] = rng.normal(0, 5, (n, 2)), rng.uniform(0, 20, n)
    sp.yaw[:] = rng.uniform(-np.pi, np.pi, n)
    sp.velocity[:], sp.attitude[:] = rng.normal(0, 4, (n, 3)), rng.normal(0, 0.3, (n, 3))
    sp.thrust[:], sp.manual[:] = rng.uniform(0, 20, n), rng.uniform([0, -1, -1, -1], 1, (n, 4))
    sp.yaw_hold[:] = rng.uniform(size=n) < 0.5  # Attitude holds a yaw angle or a yaw rate
    sp.rates[:] = rng.normal(0, 2, (n, 3))  # BodyRates
    sp.motors[:] = rng.uniform(-1, F_MAX + 1, (n, 4))  # Motors, beyond both limits too
    cas.outer.integral[:] = rng.normal(0, 0.5, (n, 4))
    cas.speed.integral[:] = rng.normal(0, 1, (n, 3))
    cas.attitude.integral[:] = rng.normal(0, 3, (n, 3))
    cas.prev_speed[:], cas.prev_r[:] = rng.normal(0, 3, (n, 3)), rng.normal(0, 2, n)
    cas.prev_pq[:] = rng.normal(0, 2, (n, 2))
    flight.motors.thrust[:] = rng.uniform(0, F_MAX, (n, 4))
    flight.wind[:] = rng.normal(0, 5, (n, 3))
    flight.wind[::3] = 0.0
    flight.alive[:] = rng.uniform(size=n) > 0.1
    flight.motor_ok[:] = np.where(rng.uniform(size=(n, 4)) > 0.1, 1.0, 0.0)


@pytest.mark.parametrize(
    ("seed", "af", "g"), [(1, AF, 9.81), (2, AF, 9.81), (3, AF, 9.81), (4, ROTOR, 9.81),
                          (5, ROTOR, 3.71), (6, AF, 3.71)]
)  # fmt: skip
def test_kernel_matches_the_reference_in_every_mode(seed: int, af: Airframe, g: float) -> None:
    """60 agents, every mode mixed, three ticks from random states (the memory carries over)."""
    flight = Flight(60, seed, af, g)
    randomise(flight, np.random.default_rng(seed))
    assert not flight.alive.all() and (flight.motor_ok == 0).any()  # the faults are exercised
    for _ in range(3):
        flight.tick()


def test_integrators_clamp_at_their_limits_and_freeze_while_saturated() -> None:
    """Attitude loop (kp 225, ki 20 /s^3, i_limit 10, out_limit 120 rad/s^2), level at rest:
    a 0.05 rad roll error adds 20 * 0.0025 * 0.05 = 0.0025 to an integral of +-9.999 -> the
    clamp +-10 exactly; a 0.6 rad error gives P = 135 > 120, so the integral stays at 2.0
    exactly and the torque is the limit 120 * I_x. Vertical speed loop (kp 6, ki 5, i_limit 3,
    out_limit 6): a 0.5 m/s error from 2.999 clamps at 3 and the output 3 + 3 = 6 is not above
    the limit, so the integral moves."""
    flight = Flight(4)
    flight.set_mode(slice(0, 3), ATTITUDE)
    cas, sp = flight.cas, flight.sp
    sp.thrust[:] = AF.weight_n(9.81)
    sp.attitude[0, 0], cas.attitude.integral[0, 0] = 0.05, 9.999
    sp.attitude[1, 0], cas.attitude.integral[1, 0] = -0.05, -9.999
    sp.attitude[2, 0], cas.attitude.integral[2, 0] = 0.6, 2.0
    flight.set_mode(3, GROUND_SPEED_AND_VERT_SPEED)
    sp.velocity[3, 2], cas.speed.integral[3, 2] = 0.5, 2.999
    flight.tick()
    assert cas.attitude.integral[:3, 0].tolist() == [10.0, -10.0, 2.0]
    assert cas.demand[2, 1] == pytest.approx(120.0 * AF.inertia_kg_m2[0], abs=1e-12)
    assert cas.speed.integral[3, 2] == 3.0


def test_outer_loops_and_tilt_stop_at_the_configured_limits() -> None:
    """Level at rest at 10 m. Position target (1 km, 1 km): both axes saturate at 8 m/s, the
    diagonal is cut to max_speed 8 m/s at 45 deg. Altitude 90 m above / 9 m below: climb
    4 m/s, descent 2.5 m/s. Heading error 1 rad: 2.5 rad/s, cut to 120 deg/s. Ground speed
    target 20 m/s: 8 m/s^2 asked, the tilt stops at max_tilt_deg = 30 deg (pitch forward)."""
    flight = Flight(4)
    flight.set_mode(slice(0, 3), POSITION)
    sp, cas = flight.sp, flight.cas
    sp.position[:3], sp.altitude[:3] = 0.0, 10.0
    sp.position[0], sp.altitude[1], sp.altitude[2] = (1000.0, 1000.0), 100.0, 1.0
    sp.yaw[2] = 1.0
    flight.set_mode(3, GROUND_SPEED_AND_VERT_SPEED)
    sp.velocity[3] = (20.0, 0.0, 0.0)
    flight.tick()
    vt = cas.velocity_target
    assert vt[0, :2] == pytest.approx([8 / math.sqrt(2)] * 2, abs=1e-12)
    assert vt[1, 2] == CC.max_climb_m_s and vt[2, 2] == -CC.max_descent_m_s
    assert cas.yaw_rate_command[2] == math.radians(CC.max_yaw_rate_deg_s)
    assert cas.attitude_target[3, 1] == pytest.approx(math.radians(CC.max_tilt_deg), abs=1e-12)
    assert cas.attitude_target[3, 0] == 0.0


def test_heading_error_wraps_at_plus_minus_180_degrees() -> None:
    """Heading loop kp 2.5 /s. Yaw 180 - 2.9 deg, target -180 + 2.9 deg: the error is +0.1 rad
    across the wrap, not -2 pi + 0.1 -> +0.25 rad/s; mirrored -> -0.25 rad/s; yaw exactly +pi
    and target -pi are one heading -> exactly 0."""
    flight = Flight(3)
    flight.set_mode(slice(None), POSITION)
    yaws = np.array([math.pi - 0.05, -math.pi + 0.05, math.pi])
    flight.s["quat"][:] = yaw_quaternion(yaws)
    flight.s["quat"][2] = (0.0, 0.0, 1.0, 0.0)  # w = +0: the measured yaw is +pi, not -pi
    sp = flight.sp
    sp.position[:], sp.altitude[:], sp.yaw[:] = (
        0.0,
        10.0,
        [-math.pi + 0.05, math.pi - 0.05, -math.pi],
    )
    flight.tick()
    rate = flight.cas.yaw_rate_command
    assert rate[:2] == pytest.approx([0.25, -0.25], abs=1e-9)
    assert rate[2] == 0.0


def test_saturated_motors_keep_roll_before_collective_before_yaw() -> None:
    """Manual sticks straight to the mixer, motors starting at 0 N so one tick gives thrust =
    alpha * command. Full throttle + full roll (0.5 N m): one side at f_max, the roll torque
    kept, collective given up. Full throttle + full yaw: no motor has room, yaw cut to 0, all
    four at f_max. Zero throttle + full roll: collective raised until the low side is at 0 N.
    Roll 8 N m (more than the motors span): the differential shrinks to exactly f_max. A dead
    agent and a failed motor get a zero command."""
    flight = Flight(6)
    flight.set_mode(slice(None), MANUAL)
    flight.sp.manual[:] = [(1, 1, 0, 0), (1, 0, 0, 1), (0, 1, 0, 0), (0.5, 16, 0, 0),
                           (1, 0, 0, 0), (1, 0, 0, 0)]  # fmt: skip
    flight.alive[4], flight.motor_ok[5, 2] = False, 0.0
    flight.tick()
    command = flight.motors.thrust / ALPHA
    achieved = command @ AF.allocation.T  # (N, 4) collective N, torque x, y, z N m
    assert command[0].max() == pytest.approx(F_MAX, abs=1e-12)
    assert achieved[0, 1] == pytest.approx(CC.manual_torque_nm[0], abs=1e-9)
    assert achieved[0, 0] < 4 * F_MAX - 1.0
    assert command[1] == pytest.approx([F_MAX] * 4, abs=1e-12) and abs(achieved[1, 3]) < 1e-12
    assert command[2].min() == 0.0 and achieved[2, 1] == pytest.approx(0.5, abs=1e-9)
    assert np.ptp(command[3]) == pytest.approx(F_MAX, abs=1e-9)
    assert flight.motors.thrust[4].tolist() == [0.0] * 4
    assert flight.motors.thrust[5, 2] == 0.0 and flight.motors.thrust[5, 0] > 0.0


def test_power_cut_wrench_matches_the_reference() -> None:
    """WrenchModel.compute (the numpy wrench the swarm recomputes after a power cut, between
    kernel ticks) equals the reference wrench within 1e-9, in wind."""
    rng = np.random.default_rng(8)
    n = 40
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    vel, wind = rng.normal(0, 3, (n, 3)), rng.normal(0, 5, (n, 3))
    thrust = rng.uniform(0, F_MAX, (n, 4))
    pos, rate = rng.uniform(-0.1, 3.0, (n, 3)), rng.normal(0, 2, (n, 3))
    for af in (AF, ROTOR):
        model = WrenchModel(af)
        force, torque = model.compute(thrust, quat_to_matrix(q), vel, wind, pos, rate)
        for i in range(n):
            fb, tw = ref.wrench(
                af, thrust[i].tolist(), q[i].tolist(), vel[i].tolist(), wind[i].tolist(),
                pos[i, 2], rate[i].tolist(),
            )  # fmt: skip
            np.testing.assert_allclose(force[i], fb, **CLOSE)
            np.testing.assert_allclose(torque[i], tw, **CLOSE)


def test_stages_a_mode_does_not_use_leave_their_memory_idle() -> None:
    """BodyRates and Attitude skip the position, altitude and velocity loops: after two ticks
    from random memory their integrals and the last heading-frame velocity are the numbers
    they started with, bit for bit, while the heading loop (Attitude's yaw hold reads its
    integral without re-initialising it) and the attitude loops still run, as does Position's
    velocity stage."""
    flight = Flight(3, seed=7)
    randomise(flight, np.random.default_rng(7))
    flight.alive[:] = True
    for i, mode in enumerate((BODY_RATES, ATTITUDE, POSITION)):
        flight.set_mode(i, mode)
    cas = flight.cas
    before = cas.memory.copy()
    for _ in range(2):
        flight.tick()
    idle = ["speed_i", "prev_speed"]
    for i in (0, 1):
        for name in idle:
            assert (cas.memory[name][i] == before[name][i]).all(), (i, name)
        assert (cas.outer.integral[i, :3] == before["outer_i"][i, :3]).all()
    for i in range(3):
        assert cas.yaw_rate_command[i] != before["yaw_rate_command"][i]  # heading ki is 0
        assert (cas.demand[i, 1:] != before["demand"][i, 1:]).all()  # the torques
    assert (cas.prev_speed[2] != before["prev_speed"][2]).all()  # Position: the velocity stage


def test_heading_wrap_is_the_remainder_formula_bit_for_bit() -> None:
    """The kernel's `_wrap` skips the floating-point remainder within one turn: the same
    numbers as (a + pi) % (2 pi) - pi (compiled, as before) on random angles, the edges of its
    fast paths (a + pi at 0, -0, +-2 pi and one ulp either side), far angles, inf and NaN."""
    from skyswarm.core.jit import njit
    from skyswarm.uav.kernel_math import wrap as _wrap

    @njit
    def both(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fast, slow = np.empty_like(a), np.empty_like(a)
        for i in range(a.shape[0]):
            fast[i] = _wrap(a[i])
            slow[i] = (a[i] + math.pi) % (2.0 * math.pi) - math.pi
        return fast, slow

    pi, turn = math.pi, 2.0 * math.pi
    edges = [-pi, -0.0 - pi, pi, turn - pi, -turn - pi, 3 * pi, -3 * pi, 0.0, -0.0, 1e300, -1e300]
    edges += [np.nextafter(e, s) for e in edges[:6] for s in (-np.inf, np.inf)]
    a = np.concatenate(
        [np.random.default_rng(0).uniform(-20.0, 20.0, 100_000), edges, [np.inf, np.nan]]
    )
    fast, slow = both(a)
    assert np.array_equal(fast.view(np.int64), slow.view(np.int64))
    assert np.isnan(fast[-2:]).all()
