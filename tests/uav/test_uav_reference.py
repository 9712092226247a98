"""The vectorised kernels agree with the plain one-agent reference within 1e-9, in calm air
and in random winds (the drag acts on the airspeed v - wind)."""

from __future__ import annotations

import numpy as np
import pytest
from uav_helpers import CONFIG

from skyswarm.uav import kernel
from skyswarm.uav import reference as ref
from skyswarm.uav.control import MODES, Cascade, Measured, Setpoints
from skyswarm.uav.frames import euler_from_matrix, quat_to_matrix
from skyswarm.uav.mixer import Mixer
from skyswarm.uav.model import Motors, WrenchModel

N, DT = 60, 0.0025
AF, CC = CONFIG.airframe, CONFIG.control


def random_state(rng: np.random.Generator) -> dict:
    q = rng.normal(size=(N, 4))
    q[:, 3] += 4.0  # mostly upright, some strongly tilted
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return {
        "pos": rng.normal(0, 5, (N, 3)) + [0, 0, 10],
        "quat": q,
        "vel": rng.normal(0, 3, (N, 3)),
        "omega": rng.normal(0, 2, (N, 3)),
    }


def random_wind(rng: np.random.Generator) -> np.ndarray:
    """(N, 3) winds m/s: gusty up to ~15 m/s, every third agent in calm air."""
    wind = rng.normal(0, 5, (N, 3))
    wind[::3] = 0.0
    return wind


def random_setpoints(rng: np.random.Generator) -> Setpoints:
    sp = Setpoints(N)
    sp.mode[:] = np.arange(N) % len(MODES)  # every mode, mixed in one pass
    sp.position[:] = rng.normal(0, 5, (N, 2))
    sp.altitude[:] = rng.uniform(0, 20, N)
    sp.yaw[:] = rng.uniform(-np.pi, np.pi, N)
    sp.velocity[:] = rng.normal(0, 4, (N, 3))
    sp.attitude[:] = rng.normal(0, 0.3, (N, 3))
    sp.thrust[:] = rng.uniform(0, 20, N)
    sp.manual[:] = rng.uniform([0, -1, -1, -1], 1, (N, 4))
    sp.refresh_masks()
    return sp


def reference_states(cas, motors) -> list:
    """The one-agent reference's state of each agent, copied from the arrays."""
    return [
        ref.AgentState(
            list(cas.outer.integral[i]),
            list(cas.speed.integral[i]),
            list(cas.attitude.integral[i]),
            list(cas.prev_speed[i]),
            float(cas.prev_r[i]),
            list(motors.thrust[i]),
        )
        for i in range(len(motors.thrust))
    ]


def reference_control(sp: Setpoints, s: dict, st: ref.AgentState, i: int) -> list[float]:
    """The one-agent reference's (collective, torques) demand for agent `i`."""
    agent_sp = ref.AgentSetpoints(
        MODES[sp.mode[i]],
        list(sp.position[i]),
        sp.altitude[i],
        sp.yaw[i],
        list(sp.velocity[i]),
        list(sp.attitude[i]),
        sp.thrust[i],
        list(sp.manual[i]),
    )
    args = (s["pos"][i].tolist(), s["quat"][i].tolist(), s["vel"][i].tolist())
    return ref.control(AF, CC, DT, agent_sp, st, *args, s["omega"][i].tolist())


def measured(s: dict) -> tuple[np.ndarray, Measured]:
    """(N, 3, 3) rotations and the cascade's measurements of random states `s`."""
    rot = quat_to_matrix(s["quat"])
    m = Measured(
        s["pos"], s["vel"], euler_from_matrix(rot),
        np.einsum("nji,nj->ni", rot, s["omega"]), rot[:, 2, 2],
    )  # fmt: skip
    return rot, m


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cascade_mixer_motors_and_wrench_match_the_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s, sp = random_state(rng), random_setpoints(rng)
    cas = Cascade(AF, CC, N, DT)
    cas.outer.integral[:] = rng.normal(0, 0.5, (N, 4))
    cas.speed.integral[:] = rng.normal(0, 1, (N, 3))
    cas.attitude.integral[:] = rng.normal(0, 3, (N, 3))
    cas.prev_speed[:] = rng.normal(0, 3, (N, 3))
    cas.prev_r[:] = rng.normal(0, 2, N)
    motors = Motors(AF, N, DT)
    motors.thrust[:] = rng.uniform(0, AF.max_thrust_n, (N, 4))
    refs = reference_states(cas, motors)
    rot, m = measured(s)
    demand = cas.compute(sp, m)
    command = Mixer(AF).mix(demand)
    thrust = motors.step(command)
    wind = random_wind(rng)
    force, torque = WrenchModel(AF).compute(thrust, rot, s["vel"], wind)
    for i in range(N):
        mode, st = MODES[sp.mode[i]], refs[i]
        d = reference_control(sp, s, st, i)
        np.testing.assert_allclose(demand[i], d, rtol=0, atol=1e-9, err_msg=mode.name)
        c = ref.mix(AF, d)
        np.testing.assert_allclose(command[i], c, rtol=0, atol=1e-9)
        f = ref.motor_step(AF, st.thrust, c, DT)
        np.testing.assert_allclose(thrust[i], f, rtol=0, atol=1e-9)
        fb, tw = ref.wrench(AF, f, s["quat"][i].tolist(), s["vel"][i].tolist(), wind[i].tolist())
        np.testing.assert_allclose(force[i], fb, rtol=0, atol=1e-9)
        np.testing.assert_allclose(torque[i], tw, rtol=0, atol=1e-9)
        if mode.uses("attitude"):
            np.testing.assert_allclose(cas.attitude.integral[i], st.attitude_i, atol=1e-9)
        if mode.uses("velocity"):
            np.testing.assert_allclose(cas.speed.integral[i], st.speed_i, atol=1e-9)
            np.testing.assert_allclose(cas.outer.integral[i], st.outer_i, atol=1e-9)


def test_mixer_matches_the_reference_on_saturating_demands() -> None:
    rng = np.random.default_rng(7)
    demand = np.column_stack(
        [
            rng.uniform(-5, 30, 500),
            rng.normal(0, 1.5, 500),
            rng.normal(0, 1.5, 500),
            rng.normal(0, 0.3, 500),
        ]
    )
    out = Mixer(AF).mix(demand)
    for i in range(len(demand)):
        np.testing.assert_allclose(out[i], ref.mix(AF, list(demand[i])), rtol=0, atol=1e-9)


class FakeState:
    """The four state arrays of core.state.BodyState, agents at scattered rows."""

    def __init__(self, s: dict, slots: np.ndarray, capacity: int) -> None:
        def spread(values: np.ndarray) -> np.ndarray:
            out = np.full((capacity, values.shape[1]), np.nan)  # unused rows must not matter
            out[slots] = values
            return out

        self.position, self.orientation = spread(s["pos"]), spread(s["quat"])
        self.linear_velocity, self.angular_velocity = spread(s["vel"]), spread(s["omega"])


@pytest.mark.skipif(not kernel.AVAILABLE, reason="numba is not installed")
@pytest.mark.parametrize("seed", [4, 5, 6])
def test_compiled_kernel_matches_numpy_path_and_reference(seed: int) -> None:
    """uav.kernel.fly == Cascade + Mixer + Motors + WrenchModel == uav.reference, within 1e-9,
    every mode mixed, with dead agents and failed motors."""
    rng = np.random.default_rng(seed)
    s, sp = random_state(rng), random_setpoints(rng)
    slots = rng.permutation(3 * N)[:N]  # the swarm's rows in the world's state arrays
    state = FakeState(s, slots, 3 * N)
    alive = rng.uniform(size=N) > 0.1
    motor_ok = np.where(rng.uniform(size=(N, 4)) > 0.1, 1.0, 0.0)
    cas, k_cas = Cascade(AF, CC, N, DT), Cascade(AF, CC, N, DT)
    motors, k_motors = Motors(AF, N, DT), Motors(AF, N, DT)
    for c in (cas, k_cas):
        r = np.random.default_rng(seed + 100)  # the same controller state in both
        c.outer.integral[:] = r.normal(0, 0.5, (N, 4))
        c.speed.integral[:] = r.normal(0, 1, (N, 3))
        c.attitude.integral[:] = r.normal(0, 3, (N, 3))
        c.prev_speed[:] = r.normal(0, 3, (N, 3))
        c.prev_r[:] = r.normal(0, 2, N)
    motors.thrust[:] = k_motors.thrust[:] = rng.uniform(0, AF.max_thrust_n, (N, 4))
    refs = reference_states(cas, motors)

    # The numpy path, as uav.swarm.Swarm._control_numpy runs it.
    rot, m = measured(s)
    mixer, wrench = Mixer(AF), WrenchModel(AF)
    command = mixer.mix(cas.compute(sp, m))
    command[~alive] = 0.0
    command *= motor_ok
    thrust = motors.step(command)
    wind = random_wind(rng)
    force, torque = wrench.compute(thrust, rot, s["vel"], wind)

    k_force, k_torque = np.zeros((N, 3)), np.zeros((N, 3))
    kern = kernel.FlightKernel(k_cas, mixer, k_motors, wrench, slots)
    kern.step(state, sp, k_cas, alive, motor_ok, k_motors.thrust, k_force, k_torque, wind)

    close = {"rtol": 0, "atol": 1e-9}
    np.testing.assert_allclose(k_motors.thrust, thrust, **close)
    np.testing.assert_allclose(k_force, force, **close)
    np.testing.assert_allclose(k_torque, torque, **close)
    for name in ("velocity_target", "attitude_target", "demand", "prev_speed", "prev_r"):
        np.testing.assert_allclose(getattr(k_cas, name), getattr(cas, name), err_msg=name, **close)
    np.testing.assert_allclose(k_cas.yaw_rate_command, cas.yaw_rate_command, **close)
    for loop in ("outer", "speed", "attitude"):
        a, b = getattr(k_cas, loop).integral, getattr(cas, loop).integral
        np.testing.assert_allclose(a, b, err_msg=loop, **close)

    for i in range(N):  # and straight against the one-agent reference
        mode, st = MODES[sp.mode[i]], refs[i]
        d = reference_control(sp, s, st, i)
        np.testing.assert_allclose(k_cas.demand[i], d, err_msg=mode.name, **close)
        c = [x * motor_ok[i, j] if alive[i] else 0.0 for j, x in enumerate(ref.mix(AF, d))]
        f = ref.motor_step(AF, st.thrust, c, DT)
        np.testing.assert_allclose(k_motors.thrust[i], f, **close)
        fb, tw = ref.wrench(AF, f, s["quat"][i].tolist(), s["vel"][i].tolist(), wind[i].tolist())
        np.testing.assert_allclose(k_force[i], fb, **close)
        np.testing.assert_allclose(k_torque[i], tw, **close)
        if mode.uses("attitude"):
            np.testing.assert_allclose(k_cas.attitude.integral[i], st.attitude_i, **close)
        if mode.uses("velocity"):
            np.testing.assert_allclose(k_cas.speed.integral[i], st.speed_i, **close)
            np.testing.assert_allclose(k_cas.outer.integral[i], st.outer_i, **close)


def test_calm_air_wrench_is_bit_identical_to_no_wind() -> None:
    """Zero wind changes no bit of the force: v - 0.0 == v exactly in IEEE arithmetic, which
    is what keeps runs with [wind] disabled identical to runs before wind existed."""
    rng = np.random.default_rng(8)
    s = random_state(rng)
    rot = quat_to_matrix(s["quat"])
    thrust = rng.uniform(0, AF.max_thrust_n, (N, 4))
    wrench = WrenchModel(AF)
    plain = wrench.compute(thrust, rot, s["vel"])
    calm = wrench.compute(thrust, rot, s["vel"], np.zeros((N, 3)))
    assert plain[0].tobytes() == calm[0].tobytes() and plain[1].tobytes() == calm[1].tobytes()
