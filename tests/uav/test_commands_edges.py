"""Commands at the edges, flown on both physics backends (uav/commands.py): motor commands go
through the rotor-speed model exactly and saturate at the airframe's limits; body-rate and yaw-
rate commands beyond the [control] limits fly at the limit; velocity with a yaw rate, position
with a yaw and attitude with a yaw all turn the short way across +-180 deg; subsets of a swarm
fly different levels at their own rates while the rest hold; and the command and 400 Hz
control path runs the same Python however many UAVs there are (arrays in, no per-agent loop).

Numbers from the default airframe quad_x (1.2 kg, 4 x 5.886 N, rotor-speed model with a 20 ms
lag, k_f 4.8645e-6 N s^2) and its [control] (max_body_rate_deg_s 360, max_yaw_rate_deg_s 120).
"""

from __future__ import annotations

import collections
import gc
import math
import sys

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.core.simulator import Simulator
from skyswarm.uav import control as ctl
from skyswarm.uav.commands import CommandInterface, SwarmState
from skyswarm.uav.swarm import Swarm

AF, CC = CONFIG.airframe, CONFIG.control
G = 9.81
HOVER_N = AF.mass_kg * G  # N, collective of a level hover
TICK_S = 0.0025
BACKENDS = ["bullet", "fast"]


def make(physics: str, positions, yaws=None) -> tuple[Simulator, Swarm]:
    sim = Simulator(SimulationConfig(physics=physics), world=WorldConfig())
    positions = np.asarray(positions, dtype=float)
    yaws = np.zeros(len(positions)) if yaws is None else np.radians(yaws)
    swarm = Swarm(sim, CONFIG, range(1, len(positions) + 1), positions, yaws, hovering=True)
    return sim, swarm


def row(n: int, x: float = 10.0) -> np.ndarray:
    """(n, 3) m: n UAVs 4 m apart along x at height `x`."""
    return np.column_stack([4.0 * np.arange(n), np.zeros(n), np.full(n, x)])


def body_rates(sim: Simulator, swarm: Swarm) -> np.ndarray:
    s = sim.world.state
    rot = quat_to_matrix(s.orientation[swarm.slots])
    return np.einsum("nji,nj->ni", rot, s.angular_velocity[swarm.slots])


def euler(sim: Simulator, swarm: Swarm) -> np.ndarray:
    return euler_from_matrix(quat_to_matrix(sim.world.state.orientation[swarm.slots]))


# -- motors: through the motor model, saturated at its edges ---------------------------------
@pytest.mark.parametrize("physics", BACKENDS)
def test_a_motor_step_follows_the_rotor_speed_lag_exactly(physics: str) -> None:
    # From hover (2.943 N a motor) to 4.0 N: the rotor speed w = sqrt(f / k_f) lags its command
    # to first order, w_k = w1 + (w0 - w1) (1 - alpha)^k with alpha = 1 - exp(-dt / 20 ms),
    # and the thrust is k_f w^2 (not first order itself). Every tick matches to 1e-9 N.
    sim, swarm = make(physics, row(1))
    f0 = swarm.motors.thrust[0].copy()
    np.testing.assert_allclose(f0, HOVER_N / 4, rtol=1e-9)
    swarm.command.motors([0], [[4.0] * 4])
    thrust = run(sim, 0.1, lambda: swarm.motors.thrust[0].copy())
    k_f, alpha = AF.thrust_coefficient_n_s2, 1.0 - math.exp(-TICK_S / AF.motor_time_constant_s)
    w0, w1 = math.sqrt(f0[0] / k_f), math.sqrt(4.0 / k_f)
    k = np.arange(1, len(thrust) + 1)
    expected = k_f * (w1 + (w0 - w1) * (1.0 - alpha) ** k) ** 2
    np.testing.assert_allclose(thrust, np.repeat(expected[:, None], 4, axis=1), atol=1e-9)
    # one time constant in (8 ticks = 20 ms) the rotor speed has gone 63 % of the way
    w8 = math.sqrt(thrust[7, 0] / k_f)
    assert abs((w8 - w0) / (w1 - w0) - (1 - math.exp(-1))) < 1e-9


@pytest.mark.parametrize("physics", BACKENDS)
def test_motor_commands_beyond_the_limits_fly_at_full_and_at_no_thrust(physics: str) -> None:
    # Agent 0 asks 99 N a motor: it gets max_thrust_n (5.886 N, 4 x = 2 m g: a = +g); agent 1
    # asks 0: its rotors spin down and it falls (a = -g). 0.3 s later both move at nearly
    # g x 0.3 s = 2.94 m/s, less the rotor lag (~20 ms) and the drag: within 2.5 .. 2.94 m/s.
    sim, swarm = make(physics, row(2))
    swarm.command.motors(None, [[99.0] * 4, [0.0] * 4])
    run(sim, 0.3)
    np.testing.assert_allclose(swarm.motors.thrust[0], AF.max_thrust_n, rtol=1e-6)
    assert swarm.motors.thrust[1].max() < 1e-6
    vz = sim.world.state.linear_velocity[swarm.slots, 2]
    assert 2.5 < vz[0] < G * 0.3 and -G * 0.3 < vz[1] < -2.5


@pytest.mark.parametrize("physics", BACKENDS)
def test_rotor_speed_commands_of_hover_speed_hold_altitude(physics: str) -> None:
    # w = sqrt(m g / 4 / k_f) = 777.8 rad/s on every rotor: the hover, with no loop closed
    sim, swarm = make(physics, row(1))
    w = math.sqrt(HOVER_N / 4 / AF.thrust_coefficient_n_s2)
    swarm.command.motors([0], rotor_speed=[[w] * 4])
    run(sim, 2.0)
    assert abs(sim.world.state.position[swarm.slots[0], 2] - 10.0) < 0.05
    np.testing.assert_allclose(swarm.motors.rotor_speed[0], w, rtol=1e-6)


# -- rates at and beyond the limits --------------------------------------------------------
@pytest.mark.parametrize("physics", BACKENDS)
def test_body_and_yaw_rates_beyond_the_limits_fly_at_the_limits(physics: str) -> None:
    # Agent 0 asks 100 rad/s of pitch rate: it flies max_body_rate_deg_s = 360 deg/s (6.283
    # rad/s): within 1 % from 0.3 s on, never more than 6 % over (the rate loop's overshoot).
    # Agent 1 asks 100 rad/s of yaw rate: it flies towards 120 deg/s (2.094 rad/s), the yaw
    # loop's ~0.1 s response: within 4 % at 0.4 s and never above the limit.
    sim, swarm = make(physics, row(2, 30.0))
    swarm.command.body_rates(None, [[0.0, 100.0, 0.0], [0.0, 0.0, 100.0]], [HOVER_N] * 2)
    rates = run(sim, 0.4, lambda: body_rates(sim, swarm))
    t = np.arange(1, len(rates) + 1) * TICK_S
    q_max, r_max = math.radians(CC.max_body_rate_deg_s), math.radians(CC.max_yaw_rate_deg_s)
    assert np.abs(rates[t >= 0.3, 0, 1] - q_max).max() < 0.01 * q_max
    assert rates[:, 0, 1].max() < 1.06 * q_max
    assert abs(rates[-1, 1, 2] - r_max) < 0.04 * r_max and rates[:, 1, 2].max() <= r_max


@pytest.mark.parametrize("physics", BACKENDS)
def test_velocity_with_a_yaw_rate_turns_at_that_rate_through_180_degrees(physics: str) -> None:
    # Facing 170 deg, yaw rate +0.8 rad/s for 2 s: the measured rate is within 3 % of 0.8 from
    # 1 s on, and the heading turns 1.6 rad less the loop's ~0.1 s lag (1.45 .. 1.6 rad),
    # through +-180 deg (it ends near -104 deg). A 10 rad/s ask flies at 120 deg/s at most.
    sim, swarm = make(physics, row(2), yaws=[170.0, 0.0])
    swarm.command.velocity(None, np.zeros((2, 3)), yaw_rate=[0.8, 10.0])
    samples = run(sim, 2.0, lambda: (euler(sim, swarm)[:, 2], body_rates(sim, swarm)[:, 2]))
    yaw, r = samples[:, 0], samples[:, 1]
    t = np.arange(1, len(samples) + 1) * TICK_S
    assert np.abs(r[t >= 1.0, 0] - 0.8).max() < 0.03 * 0.8
    turned = np.unwrap(yaw[:, 0])[-1] - math.radians(170.0)
    assert 1.45 < turned < 1.6 and yaw[-1, 0] < -1.5  # wrapped: across 180 deg
    r_max = math.radians(CC.max_yaw_rate_deg_s)
    assert abs(r[-1, 1] - r_max) < 0.02 * r_max and r[:, 1].max() <= r_max


@pytest.mark.parametrize("physics", BACKENDS)
def test_position_and_attitude_yaw_targets_turn_the_short_way_across_180(physics: str) -> None:
    # Agent 0: position hold with yaw -170 deg from 170; agent 1: attitude roll 0.15 rad with
    # yaw 170 from -170. Both turn 20 deg through 180 deg (|yaw| never below 169 deg), end
    # within 0.5 deg; agent 1 holds its roll within 0.005 rad from 0.5 s on.
    sim, swarm = make(physics, row(2), yaws=[170.0, -170.0])
    swarm.command.position([0], [[0.0, 0.0, 10.0]], yaw=[math.radians(-170)])
    thrust = HOVER_N / math.cos(0.15)
    swarm.command.attitude([1], roll=[0.15], pitch=[0.0], thrust=[thrust], yaw=[math.radians(170)])
    angles = run(sim, 3.0, lambda: euler(sim, swarm))
    assert (np.abs(angles[:, :, 2]) > math.radians(169)).all()
    end = np.degrees(angles[-1, :, 2])
    np.testing.assert_allclose(end, [-170.0, 170.0], atol=0.5)
    t = np.arange(1, len(angles) + 1) * TICK_S
    assert np.abs(angles[t >= 0.5, 1, 0] - 0.15).max() < 0.005


# -- subsets at their own rates ------------------------------------------------------------
@pytest.mark.parametrize("physics", BACKENDS)
def test_subsets_fly_different_levels_at_their_own_rates_and_the_rest_hold(physics: str) -> None:
    # Four UAVs: 0 and 1 by a 400 Hz body-rate controller (level, climbing to 12 m); 2 by a
    # 20 Hz velocity controller (1 m/s north); 3 untouched (position hold where it was).
    sim, swarm = make(physics, row(4))
    calls = collections.Counter()

    def inner(state: SwarmState, command: CommandInterface) -> None:
        calls["inner"] += 1
        assert state.index.tolist() == [0, 1]
        dz = 12.0 - state.position[:, 2]
        thrust = HOVER_N * (1 + 0.3 * dz - 0.5 * state.velocity[:, 2])
        command.body_rates(state.index, -4.0 * state.euler * [1, 1, 0], thrust)

    def outer(state: SwarmState, command: CommandInterface) -> None:
        calls["outer"] += 1
        command.velocity(state.index, [[0.0, 1.0, 0.0]] * state.n)

    swarm.control(TICK_S, inner, members=[0, 1])
    swarm.control(0.05, outer, members=[2])
    run(sim, 4.0)
    assert calls == {"inner": 1600, "outer": 80}  # every tick; every 20th tick
    modes = [ctl.MODES[m].name for m in swarm.setpoints.mode]
    assert modes == ["BodyRates", "BodyRates", "Velocity", "Position"]
    p = sim.world.state.position[swarm.slots]
    v = sim.world.state.linear_velocity[swarm.slots]
    assert np.abs(p[:2, 2] - 12.0).max() < 0.2
    assert abs(v[2, 1] - 1.0) < 0.05 and abs(p[2, 2] - 10.0) < 0.1
    np.testing.assert_allclose(p[3], row(4)[3], atol=0.02)


# -- no per-agent Python -------------------------------------------------------------------
def _python_calls(fn) -> collections.Counter:
    """Python function calls and C calls made while `fn()` runs (sys.setprofile). Garbage is
    collected first and the collector held off meanwhile: a collection inside `fn` runs the
    finalizers of earlier tests' objects (a few calls, at allocation-dependent moments),
    which are not `fn`'s calls."""
    seen: collections.Counter = collections.Counter()

    def profile(frame, event, arg) -> None:
        if event in ("call", "c_call"):
            seen[event] += 1

    gc.collect()
    gc.disable()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        gc.enable()
    return seen


def _calls_at(physics: str, n: int) -> tuple[collections.Counter, collections.Counter]:
    sim, swarm = make(physics, row(n))

    def level(state: SwarmState, command: CommandInterface) -> None:
        command.body_rates(state.index, -4.0 * state.euler * [1, 1, 0], np.full(state.n, HOVER_N))

    swarm.control(TICK_S, level)  # a 400 Hz user controller on every UAV
    run(sim, 5 * TICK_S)  # compiled and warm

    def every_level() -> None:
        c, z = swarm.command, np.zeros((n, 3))
        c.position(None, z + 10.0, yaw=np.zeros(n))
        c.velocity(None, z, yaw_rate=np.zeros(n))
        c.attitude(None, np.zeros(n), np.zeros(n), np.full(n, HOVER_N), yaw=np.zeros(n))
        c.body_rates(np.ones(n, dtype=bool), z, np.full(n, HOVER_N))
        c.motors(np.arange(n), normalised=np.full((n, 4), 0.5))

    commands = _python_calls(every_level)
    swarm.command.body_rates(None, np.zeros((n, 3)), np.full(n, HOVER_N))
    sim.step()
    ticks = _python_calls(lambda: run(sim, 4 * TICK_S))
    return commands, ticks


@pytest.mark.parametrize("physics", BACKENDS)
def test_commands_and_the_400hz_path_run_the_same_python_for_4_or_256_uavs(physics: str) -> None:
    # Every level for all agents, then four ticks with a 400 Hz user controller: the number of
    # Python and C calls is the same for 4 and 256 UAVs, so nothing loops over agents in Python
    # (a loop would add at least one call per agent: 252 more).
    small, large = _calls_at(physics, 4), _calls_at(physics, 256)
    assert small == large
    assert small[0]["call"] > 50 and small[1]["call"] > 50  # the profiler saw the work


def test_the_call_count_sees_a_per_agent_loop() -> None:
    # The check above can fail: the same commands written one agent at a time differ by n.
    def per_agent(n: int) -> collections.Counter:
        sim, swarm = make("fast", row(n))
        return _python_calls(
            lambda: [swarm.command.velocity([i], [[0.0, 0.0, 0.0]]) for i in range(n)]
        )

    assert per_agent(8)["call"] > per_agent(4)["call"] + 4
