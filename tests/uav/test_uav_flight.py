"""Closed-loop step responses of the default airframe: the numbers of issue 3's "Done when"."""

from __future__ import annotations

import math

import numpy as np
import pytest
from uav_helpers import CONFIG, make_swarm, run, settle_time, times

from skyswarm.uav import control as ctl

WEIGHT = CONFIG.airframe.weight_n(9.81)  # N on Earth


def test_roll_step_settles_within_1deg_in_half_a_second() -> None:
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    roll = math.radians(20.0)
    uav.command_attitude(roll, 0.0, 0.0, WEIGHT / math.cos(roll), yaw_rate=True)
    r = run(sim, 0.8, lambda: math.degrees(uav.euler[0]))
    assert settle_time(times(r), r - 20.0, 1.0) <= 0.5
    assert r.max() < 21.0


def test_altitude_step_2_to_12_m() -> None:
    sim, swarm = make_swarm([(0.0, 0.0, 2.0)])
    uav = swarm.agents[0]
    uav.fly(0.0, 0.0, 12.0, 0.0)
    z = run(sim, 9.0, lambda: float(uav.position[2]))
    t = times(z)
    assert z.max() - 12.0 <= 1.0  # overshoot at most 1 m
    assert np.all(np.abs(z[t >= 6.0] - 12.0) <= 0.1)  # within 10 cm from 6 s on
    assert np.abs(z[t >= 8.0] - 12.0).max() < 0.02  # steady state within 2 cm


def test_heading_step_0_to_90deg() -> None:
    """Facing north (compass 0 deg), commanded east (90 deg): the error starts at -90 deg, the
    heading passes 45 deg after ~0.5 s (yaw rate capped at 120 deg/s), is within 2 deg from
    1.39 s and overshoots by 0.30 deg (measured; 1.33 s and 0.09 deg with quad_x_simple)."""
    sim, swarm = make_swarm(yaws=[math.pi / 2])  # ENU yaw pi/2 = compass 0 deg
    uav = swarm.agents[0]
    assert abs(uav.heading_deg) < 1e-9
    uav.fly(0.0, 0.0, 10.0, 90.0)
    h = run(sim, 4.0, lambda: uav.heading_deg)
    t = times(h)
    error = (h - 90.0 + 180.0) % 360.0 - 180.0
    assert error[0] < -89.9  # a real step, not a hold
    assert 0.375 <= t[np.argmax(h >= 45.0)] <= 0.7  # 45 deg at 120 deg/s takes 0.375 s
    assert settle_time(t, error, 2.0) <= 1.5
    assert error.max() <= 0.5  # overshoot past 90 deg


def test_attitude_mode_holds_a_yaw_angle_or_a_yaw_rate() -> None:
    """command_attitude(roll, pitch, yaw, thrust) takes a yaw ANGLE (the reference simulator's
    UavAgent): level at hover thrust, yaw 0 -> 90 deg (ENU) is within 2 deg in 1.5 s and stays;
    at 3 s it is 0.27 deg past (measured; the rotor drag damps yaw, so the last 0.3 deg goes
    with a ~5 s time constant: 0.07 deg at 10 s; quad_x_simple was 0.09 deg at 3 s); with
    yaw_rate=True the third value is a rate: 0.5 rad/s turns ~57 deg in 2 s."""
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    uav.command_attitude(0.0, 0.0, math.pi / 2, WEIGHT)
    assert uav.mode is ctl.ATTITUDE
    yaw = run(sim, 3.0, lambda: math.degrees(uav.euler[2]))
    assert settle_time(times(yaw), yaw - 90.0, 2.0) <= 1.5
    assert abs(yaw[-1] - 90.0) < 0.3
    uav.command_attitude(0.0, 0.0, 0.5, WEIGHT, yaw_rate=True)
    start = math.degrees(uav.euler[2])
    run(sim, 2.0)
    turned = math.degrees(uav.euler[2]) - start
    assert turned == pytest.approx(math.degrees(1.0), abs=4.0)  # lags 0.1-0.2 s to spin up


def test_ground_speed_step_0_to_5_m_s_within_tilt_limit() -> None:
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    uav.fly(5.0, 0.0, 10.0, 90.0)  # forward, facing east (compass 90 deg = ENU yaw 0)
    s = run(sim, 5.0, lambda: (float(np.hypot(*uav.velocity[:2])), uav.tilt_deg))
    assert settle_time(times(s), s[:, 0] - 5.0, 0.25) <= 4.0
    assert s[:, 1].max() <= CONFIG.airframe.max_tilt_deg
    v = uav.velocity
    assert abs(math.degrees(math.atan2(v[1], v[0]))) < 0.5  # flying east


def test_vertical_speed_2_m_s_climb() -> None:
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    uav.fly_velocity(0.0, 0.0, 2.0)
    vz = run(sim, 2.5, lambda: float(uav.velocity[2]))
    assert settle_time(times(vz), vz - 2.0, 0.1) <= 2.0


def test_position_hold_under_a_constant_push() -> None:
    """A constant 0.5 N side force (think steady wind): the integrators reject it."""
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    uav.hold()
    target = uav.position.copy()
    push = (0.3, -0.4, 0.0)
    sim.add_environment(lambda s: s.world.apply_forces([uav.slot], [push]))
    run(sim, 15.0)  # settle
    err = run(sim, 30.0, lambda: float(np.linalg.norm(uav.position - target)))
    rms = float(np.sqrt(np.mean(err**2)))
    assert rms < 0.02


@pytest.mark.parametrize(("push_n", "sag_m"), [(2.0, 0.0), (5.0, 0.0972)])
def test_the_vertical_integrator_stops_at_its_limit_and_the_rest_is_a_steady_sag(
    push_n: float, sag_m: float
) -> None:
    """A constant downward push on a UAV holding 10 m. The vertical speed loop's integral
    carries it up to i_limit = 3 m/s^2 (3.6 N on 1.2 kg): 2 N (1.67 m/s^2) is fully rejected,
    no sag. 5 N needs 4.17 m/s^2: the integral stops at exactly 3, the proportional terms
    carry the other 1.17 m/s^2, a vertical speed error of 1.17 / 6 = 0.194 m/s, which the
    altitude loop (kp 2, no integral) asks for 0.097 m below its target. An integral without
    its limit would remove that sag (mutation pass, tools/mutants.py)."""
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    uav.hold()
    target = float(uav.position[2])
    sim.add_environment(lambda s: s.world.apply_forces([uav.slot], [(0.0, 0.0, -push_n)]))
    run(sim, 20.0)  # settle
    z = run(sim, 5.0, lambda: float(uav.position[2]))
    integral = float(swarm.cascade.memory["speed_i"][0, 2])
    assert np.abs(target - z - sag_m).max() < 0.003
    if push_n * 1.0 < 3.0 * 1.2:
        assert integral == pytest.approx(push_n / 1.2, rel=0.01)
    else:
        assert integral == 3.0  # held at the limit, exactly


def test_mode_switches_in_flight_are_bumpless() -> None:
    """GSAH at 3 m/s -> Position -> Attitude: tilt changes < 2 deg in the first 0.1 s."""
    sim, swarm = make_swarm()
    uav = swarm.agents[0]
    uav.fly(3.0, 1.0, 10.0, 30.0)
    run(sim, 4.0)
    for mode in (ctl.POSITION, ctl.ATTITUDE, ctl.GROUND_SPEED_ALTITUDE_AND_HEADING):
        before = np.degrees(uav.euler[:2])
        uav.set_mode(mode)
        assert uav.mode is mode
        after = run(sim, 0.1, lambda: np.degrees(uav.euler[:2]))
        assert np.abs(after - before).max() < 2.0, mode
        run(sim, 1.0)


def test_take_off_hold_and_land() -> None:
    sim, swarm = make_swarm([(0.0, 0.0, 0.09)], hovering=False)
    uav = swarm.agents[0]
    run(sim, 0.5)
    rest_z = float(uav.position[2])
    assert uav.mode is ctl.MANUAL
    uav.take_off(5.0)
    run(sim, 6.0)
    assert abs(uav.position[2] - 5.0) < 0.05
    assert np.hypot(*uav.position[:2]) < 0.05
    uav.land()
    run(sim, 12.0)
    assert uav.landed
    assert uav.mode is ctl.MANUAL
    assert abs(uav.position[2] - rest_z) < 0.02
    assert uav.alive


def test_a_killed_uav_is_masked_out_of_the_swarm() -> None:
    sim, swarm = make_swarm([(0.0, 0.0, 10.0), (5.0, 0.0, 10.0)])
    a, b = swarm.agents
    sim.kill(a, "test")
    run(sim, 1.0)
    assert not swarm.alive[0] and swarm.alive[1]
    assert np.all(swarm.motors.thrust[0] == 0.0)
    assert abs(b.position[2] - 10.0) < 0.01  # the other one still hovers
    assert sim.world.num_bodies == 2  # the ground and b
