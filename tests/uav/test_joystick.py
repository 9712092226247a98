"""Manual flight: profile validation, stick shaping, each mode's axis meaning, attitude response,
takeover / release of a behaviour, failsafe on device loss and bit-identical replay."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.uav import control as ctl
from skyswarm.uav.joystick import load_profile, shape
from skyswarm.uav.manual import DeviceState, ManualControl

ROOT = Path(__file__).resolve().parents[2]
HOVER = ROOT / "configs" / "hover.toml"
WAYPOINTS = ROOT / "configs" / "waypoints.toml"
PROFILE = load_profile()
HOVER_N, MAX_N = 1.2 * 9.81, 4 * 5.886  # quad_x: weight and full thrust, N


def hover_sim(out: Path | None = None, **device: float) -> tuple[Simulator, ManualControl]:
    sim = Simulator.from_scenario(load_scenario(HOVER, ["agents.count=1"]), out)
    dev = DeviceState("test pad", True, dict(device))
    return sim, ManualControl(sim, PROFILE, dev)


def steps(sim: Simulator, n: int) -> None:
    for _ in range(n):
        sim.step()


def test_shipped_profile_is_mode_2_at_50_hz() -> None:
    p = PROFILE
    assert (p.throttle.axes, p.yaw.axes) == (("lefty", "-y"), ("leftx", "x"))
    assert (p.pitch.axes, p.roll.axes) == (("righty", "-ry"), ("rightx", "rx"))
    assert p.sample_hz == 50.0 and p.modes[0] == "Attitude" and len(p.modes) == 4


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("[joystick.pitch]\naxes = ['righty']\ndead_zone = 1.5", "joystick.pitch.dead_zone", "1.5"),
        ("[joystick.roll]\naxes = ['rihgtx']", "joystick.roll.axes[0]", "did you mean 'rightx'"),
        ("[joystick]\nmodes = ['Atitude']", "joystick.modes[0]", "did you mean 'Attitude'"),
        ("[joystick.buttons]\ncycle_mode = ['q']", "joystick.buttons.cycle_mode[0]", "'q'"),
        ("[joystick]\nsample_hz = 30.0", "joystick sample period", "0.0333"),
    ],
)
def test_bad_profile_value_names_file_key_and_value(tmp_path, text, key, value) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    if key.startswith("joystick "):  # 30 Hz is not a whole number of 2.5 ms ticks
        sim = Simulator.from_scenario(load_scenario(HOVER, ["agents.count=1"]))
        with pytest.raises(ValueError, match=key) as err:
            ManualControl(sim, load_profile(f))
        sim.close()
    else:
        with pytest.raises(ConfigError) as err:
            load_profile(f)
        assert str(f) in str(err.value)
    assert key in str(err.value) and value in str(err.value)


def test_dead_zone_expo_and_inversion_numbers() -> None:
    assert shape(0.08, 0.08, 0.0) == 0.0 and shape(-0.05, 0.08, 0.5) == 0.0
    assert shape(0.54, 0.08, 0.0) == pytest.approx(0.5)  # (0.54 - 0.08) / 0.92
    assert shape(0.525, 0.05, 0.3) == pytest.approx(0.7 * 0.5 + 0.3 * 0.125)  # 0.3875
    assert shape(-0.525, 0.05, 0.3) == pytest.approx(-0.3875)
    assert shape(1.7, 0.05, 0.3) == 1.0  # clipped
    # Shipped profile: pitch from the controller's right stick (up +) or the raw "ry" (down +).
    assert PROFILE.sticks({"righty": 0.525})[2] == pytest.approx(0.3875)
    assert PROFILE.sticks({"ry": 0.525})[2] == pytest.approx(-0.3875)
    inverted = PROFILE.pitch.__class__(("righty",), invert=True, dead_zone=0.05, expo=0.3)
    assert inverted.value({"righty": 0.525}) == pytest.approx(-0.3875)


def test_each_mode_gives_its_axes_their_meaning() -> None:
    # throttle 0.54 -> 0.5; yaw 0.54 -> 0.8 * 0.5 + 0.2 * 0.125 = 0.425 (expo 0.2);
    # pitch / roll 0.525 -> 0.3875 (dead zone 0.05, expo 0.3); roll stick to the left.
    sim, mc = hover_sim(lefty=0.54, leftx=0.54, righty=0.525, rightx=-0.525)
    t, yaw, pitch, roll = 0.5, 0.425, 0.3875, -0.3875
    mc.take_control(1)
    sp, agent = sim.mission.swarm.setpoints, sim.agents[1]
    steps(sim, 1)  # tick 0 samples
    assert agent.mode is ctl.ATTITUDE
    tilt, rate = math.radians(30.0), math.radians(120.0)
    assert sp.attitude[0] == pytest.approx([roll * tilt, pitch * tilt, -yaw * rate])
    assert sp.thrust[0] == pytest.approx(HOVER_N + t * (MAX_N - HOVER_N))

    def cycle() -> None:  # press the cycle button (Y) for one sample, then let go
        mc.device.buttons.add("y")
        steps(sim, 8)
        mc.device.buttons.clear()
        steps(sim, 8)

    cycle()
    assert agent.mode is ctl.GROUND_SPEED_AND_VERT_SPEED
    assert sp.velocity[0] == pytest.approx([pitch * 8.0, -roll * 8.0, t * 4.0])
    assert sp.attitude[0, 2] == pytest.approx(-yaw * rate)
    cycle()
    assert agent.mode is ctl.GROUND_SPEED_ALTITUDE_AND_HEADING
    alt0, yaw0 = sp.altitude[0], sp.yaw[0]
    steps(sim, 80)  # 10 samples of 20 ms: target climbs 2 m/s, heading turns 54 deg/s
    assert sp.velocity[0, :2] == pytest.approx([pitch * 8.0, -roll * 8.0])
    assert sp.altitude[0] - alt0 == pytest.approx(10 * 0.02 * t * 4.0)
    assert sp.yaw[0] - yaw0 == pytest.approx(-10 * 0.02 * yaw * rate)
    cycle()
    assert agent.mode is ctl.MANUAL
    throttle = (HOVER_N + t * (MAX_N - HOVER_N)) / MAX_N
    assert sp.manual[0] == pytest.approx([throttle, roll, pitch, -yaw])
    cycle()
    assert agent.mode is ctl.ATTITUDE  # back to the first mode
    sim.close()


@pytest.mark.parametrize(("axis", "euler"), [("rightx", 0), ("righty", 1)])
def test_attitude_deflection_tilts_agent_by_mapped_angle_within_1_deg(axis, euler) -> None:
    sim, mc = hover_sim(**{axis: 0.7})
    mc.take_control(1)
    steps(sim, 200)  # 0.5 s
    x = (0.7 - 0.05) / 0.95
    target = math.degrees((0.7 * x + 0.3 * x**3) * math.radians(30.0))  # 17.25 deg
    assert target == pytest.approx(17.25, abs=0.01)
    assert math.degrees(sim.agents[1].euler[euler]) == pytest.approx(target, abs=1.0)
    sim.close()


def _events(out: Path) -> list[dict[str, str]]:
    with open(out / "events.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_takeover_pauses_behaviour_tasks_and_release_resumes_them(tmp_path) -> None:
    sim = Simulator.from_scenario(load_scenario(WAYPOINTS), tmp_path)
    mc = ManualControl(sim, PROFILE, DeviceState("test pad", True, {"righty": 0.5}))
    task = {t.owner.id: t for t in sim.tasks.tasks if t.name == "waypoints"}
    steps(sim, 400)  # 1 s of 0.1 s checks: 10 runs each (ticks 0, 40, ..., 360)
    assert task[1].stats.runs == task[2].stats.runs == 10
    mc.take_control(1)
    steps(sim, 400)  # taken at tick 400, flown for 1 s
    assert task[1].stats.runs == 11 and task[2].stats.runs == 20  # tick 400 ran before takeover
    assert sim.agents[1].mode is ctl.ATTITUDE and sim.agents[2].mode is ctl.POSITION
    assert sim.mission.swarm.setpoints.attitude[0, 1] > 0.1  # pitch from the stick
    mc.release()
    steps(sim, 400)  # released at tick 800: resumes at 840 on its grid, 9 runs to 1160
    assert task[1].stats.runs == 20 and task[2].stats.runs == 30
    assert (task[1].next_tick - task[1].phase_ticks) % task[1].period_ticks == 0  # same phase
    assert sim.agents[1].mode is ctl.POSITION  # back to its waypoint target
    sim.finish()
    sim.close()
    rows = [(e["kind"], e["tick"], e["agent_id"]) for e in _events(tmp_path)]
    assert rows == [("manual_takeover", "400", "1"), ("manual_release", "800", "1")]


def test_device_lost_in_flight_holds_position_within_half_a_second(tmp_path) -> None:
    sim, mc = hover_sim(tmp_path, lefty=0.0)
    mc.take_control(1)
    mc.device.buttons.add("y")  # Attitude -> GroundSpeedAndVertSpeed
    steps(sim, 8)
    mc.device.buttons.clear()
    mc.device.axes["righty"] = 1.0  # full forward: 8 m/s
    steps(sim, 800)  # 2 s
    agent = sim.agents[1]
    assert agent.mode is ctl.GROUND_SPEED_AND_VERT_SPEED and agent.velocity[1] > 4.0
    lost_tick = sim.tick
    mc.device.connected = False  # unplugged
    steps(sim, 200)  # 0.5 s
    assert agent.mode is ctl.POSITION and mc.failsafe
    failsafe = [e for e in mc.events if e.kind == "manual_failsafe"]
    assert len(failsafe) == 1 and (failsafe[0].tick - lost_tick) * 0.0025 <= 0.5
    steps(sim, 1600)  # 4 s later it has stopped at the hold point (braking from 8 m/s)
    hold = sim.mission.swarm.setpoints
    target = np.array([*hold.position[0], hold.altitude[0]])
    assert np.linalg.norm(agent.velocity) < 0.1
    assert np.linalg.norm(agent.position - target) < 0.3
    assert agent.position[2] == pytest.approx(10.0, abs=0.2)  # no altitude lost
    sim.finish()
    sim.close()
    kinds = [e["kind"] for e in _events(tmp_path)]
    assert kinds == ["manual_takeover", "manual_failsafe"]


def test_replaying_recorded_inputs_gives_bit_identical_trajectory(tmp_path) -> None:
    from skyswarm.app.cli import main

    live = tmp_path / "live"
    sim, mc = hover_sim(live, righty=0.3, rightx=-0.2, lefty=0.1)
    script = {
        40: lambda: mc.take_control(1),
        300: lambda: mc.device.axes.update(righty=-0.6, leftx=0.4),
        400: lambda: mc.device.buttons.add("y"),  # -> GroundSpeedAndVertSpeed
        440: lambda: mc.device.buttons.clear(),
        700: lambda: setattr(mc.device, "connected", False),  # failsafe
        900: lambda: setattr(mc.device, "connected", True),  # back
        1000: lambda: mc.release(),
    }
    for tick in range(1200):  # 3 s
        script.get(tick, lambda: None)()
        sim.step()
    sim.finish()
    sim.close()
    rows = list(csv.reader(open(live / "inputs.csv")))
    assert rows[0][:3] == ["tick", "agent", "throttle"] and len(rows) >= 7
    replay = tmp_path / "replay"
    args = ["run", str(HOVER), "--set", "agents.count=1", "--duration", "3"]
    code = main([*args, "--out", str(replay), "--inputs", str(live / "inputs.csv"), "--quiet"])
    assert code == 0
    a, b = (p / "trajectory.bin" for p in (live, replay))
    assert a.read_bytes() == b.read_bytes() and len(read_trajectory(live)) == 61
    kinds = [e["kind"] for e in _events(replay)]
    assert kinds == [
        "manual_takeover", "manual_failsafe", "manual_reconnect", "manual_release",
    ]  # fmt: skip
    # The recorded manual flight differs from plain hovering.
    plain = tmp_path / "plain"
    assert main([*args, "--out", str(plain), "--quiet"]) == 0
    assert a.read_bytes() != (plain / "trajectory.bin").read_bytes()
