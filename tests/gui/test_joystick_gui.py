"""Joystick input through pyglet: synthetic controller and raw-joystick events on stand-in
devices, hot-plug, the virtual joystick window under Xvfb, the viewer's J key, and (where the
machine has /dev/uinput) a real virtual gamepad made with python-evdev."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator

import numpy as np
import pytest

from tests.gui.conftest import ROOT

HOVER = ROOT / "configs" / "hover.toml"
HOVER_N, MAX_N = 1.2 * 9.81, 4 * 5.886  # quad_x: weight and full thrust, N
TILT = math.radians(30.0)


@pytest.fixture
def sim() -> Iterator[object]:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    s = Simulator.from_scenario(load_scenario(HOVER, ["agents.count=1"]))
    yield s
    s.close()


def steps(sim: object, n: int) -> None:
    for _ in range(n):
        sim.step()  # type: ignore[attr-defined]


def fake_device(kind: str) -> object:
    """A stand-in pyglet device: an EventDispatcher with a Controller's or Joystick's events."""
    from skyswarm.gui import joystick  # first: sets pyglet's options before pyglet.input loads

    pyglet = joystick.pyglet
    base = pyglet.input.base.Controller if kind == "controller" else pyglet.input.base.Joystick

    class Fake(pyglet.event.EventDispatcher):
        event_types = base.event_types
        name = f"fake {kind}"
        opened = 0

        def open(self, window: object = None, exclusive: bool = False) -> None:
            self.opened += 1

    return Fake()


def manual(sim: object, device: object) -> tuple[object, object]:
    from skyswarm.gui.joystick import DeviceInput
    from skyswarm.uav.manual import DeviceState, ManualControl

    state = DeviceState()
    mc = ManualControl(sim, device=state)  # type: ignore[arg-type]
    mc.input = DeviceInput(state)  # type: ignore[attr-defined]  # pyglet keeps weak references
    mc.input.attach(device)  # type: ignore[attr-defined]
    return mc, state


def test_controller_stick_events_map_to_attitude_and_velocity_commands(sim) -> None:
    from pyglet.math import Vec2

    pad = fake_device("controller")
    mc, state = manual(sim, pad)
    pad.dispatch_event("on_stick_motion", pad, "rightstick", Vec2(-0.525, 0.525))
    pad.dispatch_event("on_stick_motion", pad, "leftstick", Vec2(0.03, 0.54))  # yaw in dead zone
    assert state.axes == {"rightx": -0.525, "righty": 0.525, "leftx": 0.03, "lefty": 0.54}
    mc.take_control(1)
    steps(sim, 1)
    sp = sim.mission.swarm.setpoints
    # 0.525 -> 0.3875 (dead zone 0.05, expo 0.3); throttle 0.54 -> 0.5 (dead zone 0.08)
    assert sp.attitude[0] == pytest.approx([-0.3875 * TILT, 0.3875 * TILT, 0.0])
    assert sp.thrust[0] == pytest.approx(HOVER_N + 0.5 * (MAX_N - HOVER_N))
    pad.dispatch_event("on_button_press", pad, "y")  # cycle mode
    steps(sim, 8)
    pad.dispatch_event("on_button_release", pad, "y")
    steps(sim, 8)
    assert mc.mode_name == "GroundSpeedAndVertSpeed"
    assert sp.velocity[0] == pytest.approx([0.3875 * 8.0, 0.3875 * 8.0, 0.5 * 4.0])


def test_raw_joystick_axes_are_inverted_where_the_profile_says(sim) -> None:
    stick = fake_device("joystick")
    mc, state = manual(sim, stick)
    stick.dispatch_event("on_joyaxis_motion", stick, "y", 0.54)  # raw y: down is positive
    stick.dispatch_event("on_joyaxis_motion", stick, "ry", -1.0)  # right stick fully up
    stick.dispatch_event("on_joyaxis_motion", stick, "x", 1.0)  # yaw right
    mc.take_control(1)
    steps(sim, 1)
    sp = sim.mission.swarm.setpoints
    assert sp.thrust[0] == pytest.approx(HOVER_N * (1 - 0.5))  # throttle -0.5
    assert sp.attitude[0] == pytest.approx([0.0, TILT, -math.radians(120.0)])
    stick.dispatch_event("on_joybutton_press", stick, 3)  # b3 cycles
    assert state.buttons == {"b3"}
    steps(sim, 8)
    assert mc.mode_name == "GroundSpeedAndVertSpeed"


def test_hot_plug_disconnect_in_flight_holds_position_and_reconnect_resumes(sim) -> None:
    from pyglet.math import Vec2

    from skyswarm.gui.joystick import VIRTUAL_NAME, JoystickHub
    from skyswarm.uav import control as ctl

    hub = JoystickHub(sim, show_virtual=False, scan=False)
    assert hub.state.name == VIRTUAL_NAME and hub.active is None
    pad = fake_device("controller")
    hub.on_connect(pad)  # plugged in: replaces the virtual joystick
    assert hub.active is pad and pad.opened == 1 and hub.state.connected
    hub.toggle(1)
    pad.dispatch_event("on_stick_motion", pad, "rightstick", Vec2(0.0, 1.0))
    steps(sim, 400)  # 1 s pitched forward 30 deg
    agent = sim.agents[1]
    assert agent.mode is ctl.ATTITUDE and np.linalg.norm(agent.velocity[:2]) > 3.0
    lost = sim.tick
    hub.on_disconnect(pad)
    steps(sim, 200)  # 0.5 s
    assert agent.mode is ctl.POSITION and hub.control.failsafe
    (event,) = [e for e in hub.control.events if e.kind == "manual_failsafe"]
    assert (event.tick - lost) * 0.0025 <= 0.5 and "fake controller" in event.cause
    hub.on_connect(pad)  # back: manual flight resumes in the current mode
    steps(sim, 8)
    assert agent.mode is ctl.ATTITUDE and not hub.control.failsafe
    assert [e.kind for e in hub.control.events] == [
        "manual_takeover", "manual_failsafe", "manual_reconnect",
    ]  # fmt: skip
    hub.toggle(None)
    steps(sim, 8)
    assert hub.control.agent is None and agent.mode is ctl.POSITION


def send(window: object, event: str, *args: object) -> None:
    """Dispatch a window event as the event loop would (queued, then pumped)."""
    window.dispatch_event(event, *args)  # type: ignore[attr-defined]
    window.dispatch_pending_events()  # type: ignore[attr-defined]


def _pixel(window: object, x: float, y: float) -> np.ndarray:
    import pyglet

    window.switch_to()  # type: ignore[attr-defined]
    img = pyglet.image.get_buffer_manager().get_color_buffer().get_image_data()
    data = np.frombuffer(img.get_data("RGB", img.width * 3), dtype=np.uint8)
    return data.reshape(img.height, img.width, 3)[int(y), int(x)]  # row 0 = bottom


def test_virtual_joystick_mouse_and_keyboard_drive_the_agent(xvfb, sim) -> None:
    from pyglet.window import key, mouse

    from skyswarm.gui.joystick import JoystickHub

    hub = JoystickHub(sim, scan=False)
    win = hub.window
    assert win is not None and hub.state.connected
    cx, cy = win.center("right")
    r = win.radius
    send(win, "on_mouse_press", int(cx), int(cy), mouse.LEFT, 0)
    send(win, "on_mouse_drag", int(cx + 0.525 * r), int(cy), int(0.525 * r), 0, 1, 0)
    assert hub.virtual.sticks["right"][0] == pytest.approx(0.525, abs=1 / r)
    assert hub.state.axes["rightx"] == pytest.approx(0.525, abs=1 / r)
    win.dispatch_events()
    win.on_draw()
    kx, ky = win.knob_position("right")
    assert tuple(_pixel(win, kx, ky)) == win.KNOB_RGB
    assert tuple(_pixel(win, cx - 0.6 * r, cy)) != win.KNOB_RGB  # left half of the pad
    hub.toggle(1)
    send(win, "on_key_press", key.W, 0)  # keyboard: full throttle
    steps(sim, 1)
    sp = sim.mission.swarm.setpoints
    x = (hub.state.axes["rightx"] - 0.05) / 0.95  # dead zone 0.05, expo 0.3
    assert sp.attitude[0, 0] == pytest.approx((0.7 * x + 0.3 * x**3) * TILT)
    assert sp.thrust[0] == pytest.approx(MAX_N)
    send(win, "on_key_release", key.W, 0)
    send(win, "on_mouse_release", int(cx + 0.525 * r), int(cy), mouse.LEFT, 0)
    assert hub.state.axes == {"leftx": 0.0, "lefty": 0.0, "rightx": 0.0, "righty": 0.0}
    steps(sim, 8)
    assert sp.attitude[0, 0] == 0.0 and sp.thrust[0] == pytest.approx(HOVER_N)
    hub.close()


def test_viewer_j_key_and_panel_button_take_and_release_the_selected_agent(xvfb) -> None:
    from pyglet.window import key

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ACTIONS, ViewerApp
    from skyswarm.uav import control as ctl

    assert any(a.key == key.J and a.button == "Joy" for a in ACTIONS)
    s = Simulator.from_scenario(load_scenario(HOVER))
    app = ViewerApp(s)
    try:
        app.select(2)
        send(app.main, "on_key_press", key.J, 0)
        assert app.joystick is not None and app.joystick.window is not None
        send(app.main, "on_key_press", key.UP, 0)  # keyboard in the main window
        app.session.step_once()
        assert s.agents[2].mode is ctl.ATTITUDE and s.agents[1].mode is ctl.POSITION
        assert s.mission.swarm.setpoints.attitude[1, 1] == pytest.approx(TILT)
        assert "manual: agent 2, Attitude, virtual joystick" in app.hud_lines()
        send(app.main, "on_key_release", key.UP, 0)
        app.toggle_joystick()  # the panel's "Joy" button calls the same method
        for _ in range(8):
            app.session.step_once()
        assert app.joystick.control.agent is None and s.agents[2].mode is ctl.POSITION
    finally:
        app.main.close()
        s.close()


def test_uinput_gamepad_seen_by_pyglet_moves_the_agent(xvfb, sim) -> None:
    if not os.path.exists("/dev/uinput"):
        reason = "no /dev/uinput on this machine: cannot create a virtual gamepad (python-evdev)"
        print(reason)
        pytest.skip(reason)
    evdev = pytest.importorskip("evdev", reason="python-evdev is not installed")
    from evdev import AbsInfo, UInput, ecodes

    from skyswarm.gui.joystick import JoystickHub, find_devices

    axis = AbsInfo(value=0, min=-32768, max=32767, fuzz=0, flat=0, resolution=0)
    caps = {
        ecodes.EV_KEY: [ecodes.BTN_SOUTH, ecodes.BTN_EAST, ecodes.BTN_NORTH, ecodes.BTN_WEST],
        ecodes.EV_ABS: [
            (c, axis) for c in (ecodes.ABS_X, ecodes.ABS_Y, ecodes.ABS_RX, ecodes.ABS_RY)
        ],
    }
    with UInput(caps, name="skyswarm test pad", vendor=0x045E, product=0x028E) as pad:
        time.sleep(0.5)  # udev creates the event node
        controllers, joysticks = find_devices()
        names = [d.device.name for d in controllers + joysticks]
        assert "skyswarm test pad" in names
        hub = JoystickHub(sim, show_virtual=False)
        hub.toggle(1)
        pad.write(ecodes.EV_ABS, ecodes.ABS_RX, 32767)  # right stick fully right
        pad.syn()
        import pyglet

        for _ in range(20):
            pyglet.app.platform_event_loop.step(0.01)
            if hub.state.axes.get("rightx", hub.state.axes.get("rx", 0.0)) > 0.9:
                break
        steps(sim, 200)
        assert math.degrees(sim.agents[1].euler[0]) == pytest.approx(30.0, abs=1.0)
        assert evdev is not None
