"""A ground station takes a UAV from the scenario's mission (`--mavlink` on any scenario), and
MANUAL_CONTROL in Position mode flies it like a joystick does."""

from __future__ import annotations

import numpy as np

from skyswarm.mavlink import modes
from tests.mavlink.harness import mav_run_fixture  # noqa: F401  (the mav_run fixture)
from tests.mavlink.test_mavlink_flight import SET_MODE, take_off

WAYPOINTS = "configs/waypoints.toml"  # three UAVs the mission flies along a route
POSCTL = 3  # PX4 custom main mode


def test_a_ground_station_takes_one_uav_from_the_mission_the_others_fly_on(mav_run):
    run = mav_run(3, config=WAYPOINTS)
    run.pump(6.0)  # the mission flies all three
    assert not any(v.taken for v in run.service.vehicles)
    hb = run.wait("HEARTBEAT", 1.5, 1)
    assert hb.custom_mode == (4 << 16) | (4 << 24)  # AUTO.MISSION while the mission has it
    # Hold on vehicle 1 (AUTO.LOITER: main 4, sub 3): taken, it stops where it is
    assert run.command(SET_MODE, 1, 4, 3, vehicle=1) == 0
    v1 = run.service.vehicles[1]
    assert v1.taken and v1.mode is modes.HOLD
    held, others = run.truth(1), [run.truth(0), run.truth(2)]
    run.pump(6.0)
    assert np.linalg.norm(run.truth(1) - held) < 0.5  # it holds
    moved = [np.linalg.norm(run.truth(i) - p) for i, p in zip((0, 2), others)]
    assert min(moved) > 3.0  # the mission keeps flying the others
    assert not run.service.vehicles[0].taken and not run.service.vehicles[2].taken


def test_manual_control_in_position_mode_flies_at_the_stick_speed(mav_run):
    run = mav_run()
    take_off(run, 5.0)
    c = run.clients[0]
    c.mav.param_set_send(1, 1, b"MPC_VEL_MANUAL", 3.0, 9)
    run.wait("PARAM_VALUE", 1.0)
    assert run.command(SET_MODE, 1, POSCTL) == 0

    def sticks() -> None:  # full forward, throttle centred (hold height), 20 Hz like a GCS
        c.mav.manual_control_send(1, 1000, 0, 500, 0, 0)

    run.pump(6.0, every=sticks)
    lp = run.wait("LOCAL_POSITION_NED", 1.1, every=sticks)
    # heading north (yaw 0 at the start): forward = north, at MPC_VEL_MANUAL
    assert abs(lp.vx - 3.0) < 0.2 and abs(lp.vy) < 0.2 and abs(lp.vz) < 0.2
    assert abs(lp.z + 5.0) < 0.5  # centred throttle holds the height
    c.mav.manual_control_send(1, 0, 0, 500, 0, 0)  # sticks centred: it stops
    run.pump(4.0)
    lp = run.wait("LOCAL_POSITION_NED", 1.1)
    assert abs(lp.vx) < 0.2
