"""The vectorised kernels agree with the plain one-agent reference within 1e-9."""

from __future__ import annotations

import numpy as np
import pytest
from uav_helpers import CONFIG

from uav import reference as ref
from uav.control import MODES, Cascade, Measured, Setpoints
from uav.frames import euler_from_matrix, quat_to_matrix
from uav.mixer import Mixer
from uav.model import Motors, WrenchModel

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
    refs = [
        ref.AgentState(
            list(cas.outer.integral[i]),
            list(cas.speed.integral[i]),
            list(cas.attitude.integral[i]),
            list(cas.prev_speed[i]),
            float(cas.prev_r[i]),
            list(motors.thrust[i]),
        )
        for i in range(N)
    ]
    rot = quat_to_matrix(s["quat"])
    m = Measured(
        s["pos"],
        s["vel"],
        euler_from_matrix(rot),
        np.einsum("nji,nj->ni", rot, s["omega"]),
        rot[:, 2, 2],
    )
    demand = cas.compute(sp, m)
    command = Mixer(AF).mix(demand)
    thrust = motors.step(command)
    force, torque = WrenchModel(AF).compute(thrust, rot, s["vel"])
    for i in range(N):
        mode = MODES[sp.mode[i]]
        agent_sp = ref.AgentSetpoints(
            mode,
            list(sp.position[i]),
            sp.altitude[i],
            sp.yaw[i],
            list(sp.velocity[i]),
            list(sp.attitude[i]),
            sp.thrust[i],
            list(sp.manual[i]),
        )
        st = refs[i]
        args = (s["pos"][i].tolist(), s["quat"][i].tolist(), s["vel"][i].tolist())
        d = ref.control(AF, CC, DT, agent_sp, st, *args, s["omega"][i].tolist())
        np.testing.assert_allclose(demand[i], d, rtol=0, atol=1e-9, err_msg=mode.name)
        c = ref.mix(AF, d)
        np.testing.assert_allclose(command[i], c, rtol=0, atol=1e-9)
        f = ref.motor_step(AF, st.thrust, c, DT)
        np.testing.assert_allclose(thrust[i], f, rtol=0, atol=1e-9)
        fb, tw = ref.wrench(AF, f, args[1], args[2])
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
