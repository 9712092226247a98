"""Airframe file, motor model, mixer, PID and pybullet frame conventions, with known answers.

The motor, mixer and PID equations are checked on the one-agent reference (uav/reference.py);
tests/uav/test_uav_reference.py shows the compiled kernel computes the same within 1e-9."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pybullet as pb
import pytest
from uav_helpers import CONFIG

from skyswarm.core.config import WorldConfig
from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.uav import reference as ref
from skyswarm.uav.config import DEFAULT_AIRFRAME, load_uav_config
from skyswarm.uav.pid import Pid, PidGains
from skyswarm.uav.swarm import add_uav_bodies

AF = CONFIG.airframe
SIMPLE = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_simple.toml").airframe
WEIGHT = AF.weight_n(9.81)  # N on Earth


def test_default_airframe_is_a_1_2_kg_quad_with_thrust_to_weight_2() -> None:
    assert AF.mass_kg == 1.2
    assert AF.thrust_to_weight(9.81) == pytest.approx(2.0, abs=1e-3)
    assert AF.thrust_to_weight(3.71) == pytest.approx(2.0 * 9.81 / 3.71, abs=1e-3)  # Mars
    assert Path(AF.mesh).name == "quadrotor.obj" and Path(AF.mesh).is_file()
    assert np.allclose(np.linalg.norm(AF.motor_positions, axis=1), 0.17)


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("mass_kg = 1.2 ", "mass_kg = -1.2 ", "airframe.mass_kg"),
        ("spin = [1, -1, 1, -1]", "spin = [1, 1, -1, -1]", "airframe.spin"),
        ("max_tilt_deg = 30.0 ", "max_tilt_deg = 50.0 ", "control.max_tilt_deg"),
        ("kp = 225.0", "kp = -1", "control.attitude.kp"),
        ("mass_kg", "mas_kg", "airframe.mas_kg"),
    ],
)
def test_bad_airframe_values_name_file_key_and_value(
    tmp_path: Path, old: str, new: str, key: str
) -> None:
    text = DEFAULT_AIRFRAME.read_text()
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(
        text.replace(old, new, 1).replace(
            "../../assets", str(DEFAULT_AIRFRAME.parents[2] / "assets")
        )
    )
    with pytest.raises(ConfigError) as err:
        load_uav_config(bad)
    assert err.value.key == key and err.value.file == str(bad)


def test_motor_lag_reaches_63_percent_after_one_time_constant() -> None:
    """The thrust_lag model (quad_x_simple; the default's rotor-speed step is in
    test_known_answers.py): the thrust makes 1 - 1/e of a step in one time constant."""
    assert SIMPLE.rotor_model == "thrust_lag"
    thrust = [0.0] * 4
    ticks = round(SIMPLE.motor_time_constant_s / 0.0025)
    for _ in range(ticks):
        thrust = ref.motor_step(SIMPLE, thrust, [4.0] * 4, 0.0025)
    assert thrust[0] == pytest.approx(4.0 * (1 - math.exp(-1)), rel=1e-9)
    for _ in range(400):
        thrust = ref.motor_step(SIMPLE, thrust, [100.0] * 4, 0.0025)  # saturates at f_max
    assert max(thrust) == pytest.approx(SIMPLE.max_thrust_n, rel=1e-9)


def test_mixer_hover_is_four_equal_thrusts_and_keeps_roll_before_yaw() -> None:
    hover = ref.mix(AF, [WEIGHT, 0.0, 0.0, 0.0])
    assert np.allclose(hover, WEIGHT / 4)
    alloc = AF.allocation
    # Roll 0.8 N m and yaw 0.3 N m at hover: roll fits, yaw is cut to what is left.
    out = np.array(ref.mix(AF, [WEIGHT, 0.8, 0.0, 0.3]))
    achieved = alloc @ out
    assert achieved[1] == pytest.approx(0.8, abs=1e-9)
    assert achieved[0] == pytest.approx(WEIGHT, abs=1e-9)
    assert 0.0 < achieved[3] < 0.3
    assert out.min() >= 0.0 and out.max() <= AF.max_thrust_n


def test_pid_has_no_windup_no_derivative_kick_and_resets_by_mask() -> None:
    gains = PidGains(kp=1.0, ki=10.0, kd=2.0, i_limit=5.0, out_limit=1.0)
    integral = 0.0
    for _ in range(500):  # a large error held for 5 s, output saturated
        out, integral = ref.pid_step(gains, integral, 3.0, 0.0, 0.01)
    assert out == 1.0
    assert integral < 1.0  # stopped integrating once saturated
    out, integral = ref.pid_step(gains, integral, -0.5, 0.0, 0.01)
    assert out < 0.5  # recovers at once when the error reverses
    # Derivative acts on the measurement rate, not on the error.
    out, integral = ref.pid_step(gains, integral, 0.0, 0.25, 0.01)
    assert out == pytest.approx(integral - 0.5)
    pid = Pid([gains], np.full((2, 1), 0.7), 0.01)
    pid.reset(np.array([True, False]), 9.0)  # clamped to i_limit
    assert pid.integral[:, 0].tolist() == [5.0, 0.7]


def test_euler_angles_follow_pybullet() -> None:
    rng = np.random.default_rng(3)
    angles = rng.uniform([-1, -1.2, -3], [1, 1.2, 3], (20, 3))
    q = np.array([pb.getQuaternionFromEuler(a.tolist()) for a in angles])
    assert np.allclose(euler_from_matrix(quat_to_matrix(q)), angles, atol=1e-9)
    m = np.array([np.reshape(pb.getMatrixFromQuaternion(qi.tolist()), (3, 3)) for qi in q])
    assert np.allclose(quat_to_matrix(q), m, atol=1e-12)


def _one_body(yaw: float, pitch: float = 0.0) -> tuple[Simulator, int, int]:
    """A Bullet world with one quadrotor body at 5 m and no gravity: (sim, slot, Bullet id)."""
    sim = Simulator(world=WorldConfig(ground=False))
    pb.setGravity(0, 0, 0, physicsClientId=sim.world.client)
    slot = int(add_uav_bodies(sim.world, AF, np.array([[0.0, 0.0, 5.0]]), np.array([yaw]))[0])
    body = sim.world.body_of(slot)
    if pitch:
        q = pb.getQuaternionFromEuler([0.0, pitch, yaw])
        pb.resetBasePositionAndOrientation(body, [0, 0, 5], q, physicsClientId=sim.world.client)
    return sim, slot, body


def test_body_x_torque_on_a_yawed_body_spins_it_about_its_own_x_axis() -> None:
    sim, slot, body = _one_body(math.pi / 2)  # body x points to world +y
    pose = pb.getBasePositionAndOrientation(body, physicsClientId=sim.world.client)
    rot = quat_to_matrix(np.array([pose[1]]))
    torque_world = np.einsum("nij,nj->ni", rot, [[0.01, 0.0, 0.0]])
    sim.world.apply_wrenches(np.array([slot]), np.zeros((1, 3)), torque_world)
    pb.stepSimulation(physicsClientId=sim.world.client)
    omega = np.array(pb.getBaseVelocity(body, physicsClientId=sim.world.client)[1])
    expected = 0.01 / AF.inertia_kg_m2[0] * 0.0025  # rad/s after one tick, about world +y
    assert omega[1] == pytest.approx(expected, rel=1e-6)
    assert abs(omega[0]) < 1e-9 and abs(omega[2]) < 1e-9


def test_body_z_force_of_a_pitched_body_pushes_along_its_own_z_axis() -> None:
    sim, slot, body = _one_body(0.0, pitch=math.pi / 2)  # body z points to world +x
    sim.world.apply_wrenches(np.array([slot]), np.array([[0.0, 0.0, 2.4]]), np.zeros((1, 3)))
    pb.stepSimulation(physicsClientId=sim.world.client)
    v = np.array(pb.getBaseVelocity(body, physicsClientId=sim.world.client)[0])
    assert v[0] == pytest.approx(2.4 / AF.mass_kg * 0.0025, rel=1e-6)
    assert abs(v[1]) < 1e-9 and abs(v[2]) < 1e-9
