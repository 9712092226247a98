"""Frames (ENU/FLU <-> NED/FRD), the pacer and the CLI flags, with hand-computed numbers."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.frames import yaw_quaternion
from skyswarm.core.simulator import Simulator
from skyswarm.mavlink import modes
from skyswarm.mavlink.frames import (
    enu_to_ned,
    euler_ned,
    matrix_to_quat_wxyz,
    quat_wxyz_to_matrix,
    rotation_enu,
    rotation_ned,
    yaw_enu_to_ned,
)
from skyswarm.mavlink.realtime import Pacer


def test_enu_to_ned_swaps_east_north_and_flips_up():
    assert enu_to_ned(np.array([[1.0, 2.0, 3.0]])).tolist() == [[2.0, 1.0, -3.0]]


@pytest.mark.parametrize(("yaw_enu", "yaw_ned"), [(0.0, 90.0), (90.0, 0.0), (180.0, -90.0)])
def test_level_body_heading(yaw_enu, yaw_ned):
    """Facing east (ENU yaw 0) is NED yaw +90 deg; facing north (ENU 90) is NED 0."""
    r = rotation_ned(yaw_quaternion(np.array([math.radians(yaw_enu)])))
    roll, pitch, yaw = np.degrees(euler_ned(r)[0])
    assert roll == pytest.approx(0.0, abs=1e-9) and pitch == pytest.approx(0.0, abs=1e-9)
    assert yaw == pytest.approx(yaw_ned, abs=1e-9)
    assert math.degrees(yaw_enu_to_ned(math.radians(yaw_enu))) == pytest.approx(yaw_ned)


def test_nose_down_is_negative_ned_pitch_and_right_wing_down_positive_roll():
    # FLU: a positive rotation about y (left) puts the nose down; about x, the right wing down
    for axis, (roll, pitch) in ((1, (0.0, -0.2)), (0, (0.2, 0.0))):
        q = np.zeros((1, 4))
        q[0, axis], q[0, 3] = math.sin(0.1), math.cos(0.1)  # 0.2 rad about the axis
        r, p, _ = euler_ned(rotation_ned(q))[0]
        assert (r, p) == (pytest.approx(roll, abs=1e-12), pytest.approx(pitch, abs=1e-12))


def test_quaternion_round_trip_and_frame_round_trip():
    rng = np.random.default_rng(3)
    q = rng.normal(size=(50, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    r = rotation_ned(q)
    back = quat_wxyz_to_matrix(matrix_to_quat_wxyz(r))
    assert np.allclose(back, r, atol=1e-12)
    enu = rotation_enu(r)  # back to R_enu_flu
    assert np.allclose(rotation_enu(rotation_ned(q)), enu)
    assert np.all(matrix_to_quat_wxyz(r)[:, 0] >= 0)


def test_px4_custom_modes():
    assert modes.OFFBOARD.custom_mode == 6 << 16
    assert modes.MISSION.custom_mode == (4 << 16) | (4 << 24)
    assert modes.mode_of(4, 5) is modes.RTL and modes.mode_of(3, 0) is modes.POSCTL
    assert modes.mode_of(9, 0) is None


class _FakeClock:
    """A wall clock the test owns: `sleep` advances it, and every tick of the simulation costs
    `tick_cost_s` of it, so the pacer's arithmetic is checked exactly whatever the load."""

    def __init__(self, tick_cost_s: float) -> None:
        self.now, self.tick_cost_s = 1000.0, tick_cost_s

    def perf_counter(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s

    def tick(self, world) -> None:
        self.now += self.tick_cost_s


def _paced(repo_root, monkeypatch, tick_cost_s: float, factor: float):
    import types

    from skyswarm.mavlink import realtime

    clock = _FakeClock(tick_cost_s)
    fake_time = types.SimpleNamespace(perf_counter=clock.perf_counter, sleep=clock.sleep)
    monkeypatch.setattr(realtime, "time", fake_time)
    scenario = load_scenario(repo_root / "configs/mavlink.toml", ["agents.count=1"])
    sim = Simulator.from_scenario(scenario)
    sim.add_post_tick(clock.tick)  # the tick's cost lands before the pacer looks at the clock
    pacer = Pacer(sim, factor)
    start = clock.now
    sim.run(until_s=sim.time_s + 2.0)
    report = pacer.report()
    sim.close()
    return report, clock.now - start


def test_pacer_holds_four_times_real_time_and_sleeps_the_rest(repo_root, monkeypatch):
    # a tick costs 0.1 ms; at 4x one tick (2.5 ms) is due every 0.625 ms: 84 % of the wall is sleep
    report, wall = _paced(repo_root, monkeypatch, 1e-4, 4.0)
    assert report["checks"] == 199  # every 10 ms of sim after the first check, which starts it
    assert report["achieved_factor"] == pytest.approx(4.0, rel=1e-9)
    assert report["idle_share"] == pytest.approx(1 - 1e-4 / 0.000625, rel=1e-6)
    assert report["lag_ms_max"] == pytest.approx(0.0, abs=1e-9) and report["late_share"] == 0.0
    # the first check (tick 4, 0.4 ms of ticks) starts the clock; the 1.99 s after it take 1.99 / 4
    assert wall == pytest.approx(4 * 1e-4 + 1.99 / 4, rel=1e-9)


def test_pacer_behind_runs_flat_out_and_reports_the_lag(repo_root, monkeypatch):
    # a tick costs 1 ms, more than the 0.625 ms 4x allows: no sleep, 2.5x achieved, all late
    report, _ = _paced(repo_root, monkeypatch, 1e-3, 4.0)
    assert report["achieved_factor"] == pytest.approx(2.5, rel=1e-9)
    # behind by (1 - 0.625) ms a tick, 4 ticks a check: 1.5 ms more at each of the 199 checks,
    # so all but the first three (1.5, 3.0, 4.5 ms) are more than 5 ms late
    assert report["idle_share"] == 0.0 and report["late_share"] == pytest.approx(196 / 199)
    assert report["lag_ms_max"] == pytest.approx(199 * 4 * 0.375, rel=1e-6)


def test_pacer_is_never_faster_than_asked_on_the_real_clock(repo_root):
    scenario = load_scenario(repo_root / "configs/mavlink.toml", ["agents.count=1"])
    sim = Simulator.from_scenario(scenario)
    for _ in range(8):  # compile before timing
        sim.step()
    pacer = Pacer(sim, 4.0)
    t0 = time.perf_counter()
    sim.run(until_s=sim.time_s + 2.0)
    wall = time.perf_counter() - t0
    report = pacer.report()
    sim.close()
    assert wall >= 0.5 - 0.011  # 2 s at 4x: never faster than asked (first check starts it)
    assert report["checks"] == 199 and report["achieved_factor"] <= 4.0 + 1e-6


def test_cli_run_with_mavlink_and_realtime_writes_reports(repo_root, tmp_path, capsys):
    import random

    from skyswarm.app.cli import main
    from tests.mavlink.harness import free_base

    base = free_base(12, random.Random())
    out = tmp_path / "run"
    code = main(
        [
            "run",
            str(repo_root / "configs/waypoints.toml"),
            "--mavlink",
            "--realtime",
            "8",
            "--duration",
            "1",
            "--quiet",
            "--out",
            str(out),
            "--set",
            f"mavlink.client_port={base}",
            "--set",
            f"mavlink.vehicle_port={base + 6}",
        ]
    )
    text = capsys.readouterr().out
    assert code in (0, 5)
    assert f"mavlink: 3 vehicles, system ids 1..3, udp 127.0.0.1:{base + 6}+i" in text
    assert (out / "mavlink.json").is_file() and (out / "realtime.json").is_file()
    assert "achieved_factor" in (out / "realtime.json").read_text()


def test_cli_refuses_a_bad_bind_address_without_leaving_results(repo_root, tmp_path, capsys):
    from skyswarm.app.cli import main

    out = tmp_path / "run"
    code = main(["run", "mavlink", "--mavlink-bind", "example.org", "--out", str(out)])
    assert code == 2 and not out.exists()
    assert "bind_address = 'example.org': expected an IPv4 address" in capsys.readouterr().err


def test_cli_refuses_system_ids_past_255(repo_root, tmp_path, capsys):
    # Four vehicles from system id 254 would be 254..257: before, a traceback ending in
    # struct.error "ubyte format requires 0 <= number <= 255" from pymavlink's packer.
    from skyswarm.app.cli import main

    out = tmp_path / "run"
    code = main(["run", "mavlink", "--set", "mavlink.system_id=254", "--out", str(out)])
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "mavlink.system_id = 254: expected an id <= 252 for 4 vehicles" in err


def test_cli_refuses_a_home_origin_off_the_globe(repo_root, tmp_path, capsys):
    # hover has no [geo] origin, so the vehicles' GPS came from latitude 91: before, it ran
    # and sent GLOBAL_POSITION_INT lat 91e7 (exit 0). [geo] origin was already checked.
    from skyswarm.app.cli import main

    out = tmp_path / "run"
    argv = ["run", "hover", "--mavlink", "--set", "mavlink.home_origin=[91.0, 8.0, 400.0]"]
    assert main([*argv, "--duration", "0.1", "--out", str(out)]) == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "mavlink.home_origin = [91.0, 8.0, 400.0]: expected [latitude -90..90" in err
