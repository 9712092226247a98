"""Commands at every level (uav/commands.py), flown on both physics backends: what the UAV does
after a step at each level, the documented saturation, and the one-line errors for bad arrays.
The numbers come from the default airframe (quad_x: 1.2 kg, 4 x 5.886 N, 20 ms rotor lag) and
its [control] gains (body_rate kp 25/s: a first-order rate response of time constant ~40 ms
plus the motor lag)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.simulator import Simulator
from skyswarm.uav import control as ctl
from skyswarm.uav.commands import CommandError, SwarmState
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.swarm import Swarm

AF = CONFIG.airframe
G = 9.81
HOVER_N = AF.mass_kg * G  # N, collective that holds a level hover
BACKENDS = ["bullet", "fast"]


def make(physics: str, positions=((0.0, 0.0, 10.0),), yaws=None) -> tuple[Simulator, Swarm]:
    sim = Simulator(SimulationConfig(physics=physics), world=WorldConfig())
    positions = np.asarray(positions, dtype=float)
    yaws = np.zeros(len(positions)) if yaws is None else np.asarray(yaws, dtype=float)
    swarm = Swarm(sim, CONFIG, range(1, len(positions) + 1), positions, yaws, hovering=True)
    return sim, swarm


def _rates(quat: np.ndarray, omega: np.ndarray) -> np.ndarray:
    from skyswarm.core.frames import quat_to_matrix

    return np.einsum("nji,nj->ni", quat_to_matrix(quat), omega)


@pytest.mark.parametrize("physics", BACKENDS)
def test_body_rate_step_reaches_the_commanded_rate_within_the_loop_time_constant(
    physics: str,
) -> None:
    # Roll rate step 0 -> 1 rad/s on agent 0, yaw rate 0.5 rad/s on agent 1, both at hover
    # thrust. The roll-rate loop (kp 25/s) and the motor lag (20 ms) make a response of ~60 ms:
    # after 0.15 s (2.5 of those) the rate is within 10 %, and it stays there. Yaw runs on the
    # yaw-rate loop (kp 10/s, ~0.1 s): within 10 % after 0.3 s.
    sim, swarm = make(physics, [(0, 0, 20.0), (5, 0, 20.0)])
    target = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.5]])
    swarm.command.body_rates(None, target, [HOVER_N, HOVER_N])
    assert (swarm.setpoints.mode == ctl.mode_index(ctl.BODY_RATES)).all()
    samples = run(sim, 0.4, lambda: _rates(*_quat_omega(sim, swarm)))
    t = np.arange(1, len(samples) + 1) * sim.world.tick_s
    after = t >= 0.15
    assert np.abs(samples[after, 0, 0] - 1.0).max() < 0.1
    assert np.abs(samples[t >= 0.3, 1, 2] - 0.5).max() < 0.05
    # before the step has had time, it has not (the test can fail): at 10 ms far below
    assert samples[t <= 0.01, 0, 0].max() < 0.5
    # the other axes stay near zero
    assert np.abs(samples[after, 0, 1:]).max() < 0.1


def _quat_omega(sim: Simulator, swarm: Swarm) -> tuple[np.ndarray, np.ndarray]:
    s = sim.world.state
    return s.orientation[swarm.slots].copy(), s.angular_velocity[swarm.slots].copy()


@pytest.mark.parametrize("physics", BACKENDS)
def test_motor_commands_of_hover_thrust_hold_altitude(physics: str) -> None:
    # Four motors at m g / 4 each hold a level hover without any loop: after 2 s the UAV is
    # within 5 cm of where it started (the drag and the integration are all that act).
    sim, swarm = make(physics, [(0, 0, 10.0)])
    swarm.command.motors([0], [[HOVER_N / 4] * 4])
    z = run(sim, 2.0, lambda: sim.world.state.position[swarm.slots[0], 2])
    assert abs(z[-1] - 10.0) < 0.05
    np.testing.assert_allclose(swarm.motors.thrust[0], HOVER_N / 4, rtol=1e-6)
    # 10 % more on every motor climbs: a = 0.1 g at first
    swarm.command.motors([0], normalised=[[1.1 * HOVER_N / 4 / AF.max_thrust_n] * 4])
    z2 = run(sim, 1.0, lambda: sim.world.state.position[swarm.slots[0], 2])
    assert z2[-1] - z[-1] > 0.5 * 0.1 * G * 1.0**2 * 0.6  # most of 0.49 m (lag and drag)


def test_motor_commands_saturate_and_rotor_speed_converts() -> None:
    sim, swarm = make("fast", [(0, 0, 10.0)])
    swarm.command.motors([0], [[-3.0, 1.0, 2.0, 99.0]])
    np.testing.assert_array_equal(swarm.setpoints.motors[0], [0.0, 1.0, 2.0, AF.max_thrust_n])
    simple = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_simple.toml")
    sim = Simulator(SimulationConfig(physics="fast"), world=WorldConfig())
    swarm = Swarm(sim, simple, [1], np.array([[0, 0, 10.0]]), np.zeros(1), hovering=True)
    with pytest.raises(CommandError, match="rotor_speed needs the airframe's thrust_coeff"):
        swarm.command.motors([0], rotor_speed=[[100.0] * 4])  # quad_x_simple has no k_f
    rotor = CONFIG  # the default quad_x has the rotor-speed model
    sim = Simulator(SimulationConfig(physics="fast"), world=WorldConfig())
    swarm = Swarm(sim, rotor, [1], np.array([[0, 0, 10.0]]), np.zeros(1), hovering=True)
    w = math.sqrt(2.0 / rotor.airframe.thrust_coefficient_n_s2)  # rad/s that gives 2 N
    swarm.command.motors([0], rotor_speed=[[w] * 4])
    np.testing.assert_allclose(swarm.setpoints.motors[0], 2.0, rtol=1e-12)


@pytest.mark.parametrize("physics", BACKENDS)
def test_world_velocity_is_flown_in_the_world_frame_whatever_the_heading(physics: str) -> None:
    # Two UAVs facing east and facing 135 deg (north-west) both fly 3 m/s north: the command is
    # world-frame, not heading-frame. After 3 s both move north at 3 m/s within 0.15 m/s.
    sim, swarm = make(physics, [(0, 0, 10.0), (10, 0, 10.0)], yaws=[0.0, math.radians(135)])
    swarm.command.velocity(None, [[0.0, 3.0, 0.0], [0.0, 3.0, 0.0]])
    run(sim, 3.0)
    v = sim.world.state.linear_velocity[swarm.slots]
    np.testing.assert_allclose(v[:, :2], [[0, 3], [0, 3]], atol=0.15)
    assert np.abs(v[:, 2]).max() < 0.1


@pytest.mark.parametrize("physics", BACKENDS)
def test_velocity_with_a_yaw_turns_across_plus_minus_180_degrees(physics: str) -> None:
    # Facing 170 deg ENU, commanded -170 deg: the short way is +20 deg through 180, not -340.
    sim, swarm = make(physics, [(0, 0, 10.0)], yaws=[math.radians(170)])
    swarm.command.velocity([0], [[1.0, 0.0, 0.0]], yaw=[math.radians(-170)])
    yaws = run(sim, 2.0, lambda: _yaw(sim, swarm))
    err = (yaws - math.radians(-170) + math.pi) % (2 * math.pi) - math.pi
    assert abs(err[-1]) < math.radians(1)
    # it never swung the long way: the yaw stayed within 10 deg of the 180 deg line
    assert (np.abs(np.abs(yaws) - math.pi) < math.radians(11)).all()


def _yaw(sim: Simulator, swarm: Swarm) -> float:
    x, y, z, w = sim.world.state.orientation[swarm.slots[0]]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


@pytest.mark.parametrize("physics", BACKENDS)
def test_attitude_and_thrust_tilt_and_accelerate(physics: str) -> None:
    # Positive pitch about body y (FLU) tips the nose down: the UAV accelerates along +x.
    sim, swarm = make(physics, [(0, 0, 20.0)])
    thrust = HOVER_N / math.cos(0.2)
    swarm.command.attitude([0], roll=[0.0], pitch=[0.2], thrust=[thrust])
    samples = run(sim, 1.5, lambda: swarm.sim.world.state.linear_velocity[swarm.slots[0]].copy())
    # level flight at tilt 0.2 rad: a_x = g tan 0.2 = 1.99 m/s^2 (less the drag)
    assert 1.0 < samples[-1, 0] < 1.99 * 1.5
    assert abs(samples[-1, 2]) < 0.3


@pytest.mark.parametrize("physics", BACKENDS)
def test_position_command_reaches_the_target(physics: str) -> None:
    sim, swarm = make(physics, [(0, 0, 10.0)])
    swarm.command.position([0], [[4.0, -3.0, 12.0]], yaw=[math.radians(90)])
    run(sim, 8.0)
    p = sim.world.state.position[swarm.slots[0]]
    np.testing.assert_allclose(p, [4.0, -3.0, 12.0], atol=0.1)


def test_limits_saturate_as_documented() -> None:
    sim, swarm = make("fast", [(0, 0, 10.0)])
    cmd, sp, cc = swarm.command, swarm.setpoints, CONFIG.control
    cmd.body_rates([0], [[100.0, -100.0, 100.0]], [1e6])
    max_pq = math.radians(cc.max_body_rate_deg_s)
    np.testing.assert_allclose(sp.rates[0], [max_pq, -max_pq, math.radians(cc.max_yaw_rate_deg_s)])
    assert sp.thrust[0] == 4 * AF.max_thrust_n
    cmd.velocity([0], [[30.0, 40.0, -50.0]])  # 50 m/s horizontal, scaled down, direction kept
    np.testing.assert_allclose(sp.velocity[0, :2], [0.6 * cc.max_speed_m_s, 0.8 * cc.max_speed_m_s])
    assert sp.velocity[0, 2] == -cc.max_descent_m_s
    cmd.attitude([0], roll=[2.0], pitch=[-2.0], thrust=[-1.0])
    tilt = math.radians(AF.max_tilt_deg)
    np.testing.assert_allclose(sp.attitude[0, :2], [tilt, -tilt])
    assert sp.thrust[0] == 0.0


def test_nan_and_bad_shapes_name_the_agent_and_the_field() -> None:
    sim, swarm = make("fast", [(0, 0, 10.0), (3, 0, 10.0), (6, 0, 10.0)])
    rates = np.zeros((3, 3))
    rates[2, 1] = np.nan
    with pytest.raises(CommandError, match=r"body_rates: rates of agent 2 \(id 3\) is \[0.0, nan"):
        swarm.command.body_rates(None, rates, [HOVER_N] * 3)
    with pytest.raises(CommandError, match=r"thrust_n needs shape \(2, 4\) for 2 agents"):
        swarm.command.motors([0, 1], [[1.0, 1.0, 1.0]])
    with pytest.raises(CommandError, match="agent index 3 is not in the swarm"):
        swarm.command.position([3], [[0, 0, 1]])
    with pytest.raises(CommandError, match="inf"):
        swarm.command.velocity([1], [[np.inf, 0, 0]])
    # a refused command changes nothing
    assert (swarm.setpoints.mode == ctl.mode_index(ctl.POSITION)).all()


def test_an_agent_given_twice_in_one_command_is_refused_and_nothing_changes() -> None:
    # before: velocity([2, 0, 2], ...) flew agent 2 at its last row, (0, 0, 1), and dropped
    # its first, (1, 0, 0), without a word
    sim, swarm = make("fast", [(0, 0, 10.0), (3, 0, 10.0), (6, 0, 10.0)])
    sp = swarm.setpoints
    before = (sp.mode.copy(), sp.velocity.copy(), sp.position.copy(), sp.altitude.copy())
    v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    with pytest.raises(CommandError, match=r"command velocity: agent index 2 is given 2 times: "
                       r"expected each agent at most once \(one row per agent\)"):  # fmt: skip
        swarm.command.velocity([2, 0, 2], v)
    with pytest.raises(CommandError, match="command position: agent index 1 is given 3 times"):
        swarm.command.position(np.array([1, 1, 0, 1]), [[0, 0, 5.0]] * 4)
    with pytest.raises(CommandError, match="command hold: agent index 0 is given 2 times"):
        swarm.command.hold([0, 0])
    after = (sp.mode, sp.velocity, sp.position, sp.altitude)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    swarm.command.velocity([2, 0], v[:2])  # distinct indices in any order: one row each
    np.testing.assert_array_equal(sp.velocity[[2, 0]], v[:2])
    with pytest.raises(CommandError, match="command control: agent index 1 is given 2 times"):
        swarm.control(0.01, lambda state, command: None, members=[1, 2, 1])
    with pytest.raises(CommandError, match="command behave: agent index 0 is given 2 times"):
        swarm.behave(0.01, lambda g: None, members=[0, 0])


def test_a_subset_by_mask_and_the_rest_untouched() -> None:
    sim, swarm = make("fast", [(0, 0, 10.0), (3, 0, 10.0), (6, 0, 10.0)])
    mask = np.array([True, False, True])
    swarm.command.motors(mask, [[HOVER_N / 4] * 4] * 2)
    modes = [ctl.MODES[m].name for m in swarm.setpoints.mode]
    assert modes == ["Motors", "Position", "Motors"]


def test_a_controller_takes_members_as_the_commands_take_agents() -> None:
    # A boolean mask picks agents 0 and 2 (before: read as indices [1, 0, 1], agent 1 twice);
    # an index outside the swarm or not a callable is refused when installed (before: an
    # IndexError or "'int' object is not callable" at the first call, inside the run).
    sim, swarm = make("fast", [(0, 0, 10.0), (3, 0, 10.0), (6, 0, 10.0)])
    seen: list[list[int]] = []
    swarm.control(0.01, lambda state, command: seen.append(state.index.tolist()),
                  members=np.array([True, False, True]))  # fmt: skip
    with pytest.raises(CommandError, match="agent index 3 is not in the swarm"):
        swarm.control(0.01, lambda state, command: None, members=[3])
    with pytest.raises(CommandError, match=r"agents must be swarm indices, got \[1.5\]"):
        swarm.control(0.01, lambda state, command: None, members=[1.5])
    with pytest.raises(TypeError, match="control: fn 5 is not callable"):
        swarm.control(0.01, 5)
    run(sim, 0.02)
    assert seen == [[0, 2], [0, 2]]


@pytest.mark.parametrize("physics", BACKENDS)
def test_a_user_controller_at_body_rate_level_holds_altitude(physics: str) -> None:
    # A 100 Hz controller from the state arrays alone: level attitude by body-rate commands,
    # altitude by thrust. After 5 s from 10 m towards 12 m: within 0.2 m, level within 2 deg.
    sim, swarm = make(physics, [(0, 0, 10.0), (4, 0, 10.0)])
    calls: list[int] = []

    def controller(state: SwarmState, command) -> None:
        calls.append(state.tick)
        rates = -4.0 * state.euler * [1, 1, 0]  # back to level, no yaw rate
        dz = 12.0 - state.position[:, 2]
        thrust = HOVER_N * (1 + 0.3 * dz - 0.5 * state.velocity[:, 2]) / np.cos(state.euler[:, 0])
        command.body_rates(state.index, rates, thrust)

    swarm.control(0.01, controller)
    run(sim, 5.0)
    p = sim.world.state.position[swarm.slots]
    assert np.abs(p[:, 2] - 12.0).max() < 0.2
    assert len(calls) == 500 and calls[1] - calls[0] == 4  # every 4th tick
    quat = sim.world.state.orientation[swarm.slots]
    assert (np.abs(quat[:, :2]) < math.sin(math.radians(1))).all()
