"""Joystick input for the viewer: real devices through pyglet.input, and the virtual joystick.

Every source writes the same `uav.manual.DeviceState` (axes and buttons by pyglet's names), so a
gamepad, a raw joystick, two on-screen sticks dragged with the mouse and the keyboard all reach
the agent through one code path: profile -> stick mode -> setpoints (uav/joystick.py).

- `DeviceInput`: pyglet event handlers (controllers: on_stick_motion, on_trigger_motion,
  on_dpad_motion, on_button_press/release; raw joysticks: on_joyaxis_motion, on_joyhat_motion,
  on_joybutton_press/release) pushed onto a device.
- `VirtualJoystick`: two sticks (left: throttle/yaw, right: pitch/roll in mode 2) set by mouse
  drags, springing back to centre on release; keyboard fallback W/S A/D and the arrow keys
  (full deflection while held), M cycles the mode. `VirtualJoystickWindow` draws and drives it.
- `JoystickHub`: the viewer's manual control: picks a device (controller, else raw joystick,
  else the virtual one), follows hot-plug (ControllerManager on_connect / on_disconnect, a
  raw joystick whose device closed) and takes / releases the selected agent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pyglet

pyglet.options["shadow_window"] = False  # importable without DISPLAY (pyglet.input needs it)
import pyglet.graphics  # noqa: E402
import pyglet.input  # noqa: E402
import pyglet.shapes  # noqa: E402
import pyglet.window  # noqa: E402
from pyglet.window import key, mouse  # noqa: E402

from skyswarm.uav.joystick import JoystickProfile, load_profile  # noqa: E402
from skyswarm.uav.manual import DeviceState, ManualControl  # noqa: E402

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator

VIRTUAL_NAME = "virtual joystick"
# key -> (axis, value while held): mode 2, W/S throttle, A/D yaw, arrows pitch and roll.
KEY_AXES = {
    key.W: ("lefty", 1.0), key.S: ("lefty", -1.0), key.A: ("leftx", -1.0), key.D: ("leftx", 1.0),
    key.UP: ("righty", 1.0), key.DOWN: ("righty", -1.0),
    key.LEFT: ("rightx", -1.0), key.RIGHT: ("rightx", 1.0),
}  # fmt: skip
CYCLE_KEY = key.M


class DeviceInput:
    """Copies one pyglet device's events into `state` (push it as the device's handlers)."""

    def __init__(self, state: DeviceState) -> None:
        self.state = state
        self.device: Any = None

    def attach(self, device: Any, name: str | None = None) -> None:
        self.detach()
        self.device = device
        device.push_handlers(self)
        st = self.state
        st.name = name or str(getattr(device, "name", "device"))
        st.axes.clear()
        st.buttons.clear()
        st.connected = True

    def detach(self) -> None:
        if self.device is not None:
            self.device.remove_handlers(self)
            self.device = None
        self.state.connected = False

    # controllers (standard mapping); stick vectors have y up positive
    def on_stick_motion(self, controller: Any, stick: str, vector: Any) -> None:
        side = stick.removesuffix("stick")  # "leftstick" -> "left"
        self.state.axes[f"{side}x"], self.state.axes[f"{side}y"] = vector[0], vector[1]

    def on_trigger_motion(self, controller: Any, trigger: str, value: float) -> None:
        self.state.axes[trigger] = value

    def on_dpad_motion(self, controller: Any, vector: Any) -> None:
        held = self.state.buttons
        held -= {"dpleft", "dpright", "dpup", "dpdown"}
        x, y = vector[0], vector[1]
        held |= {n for n, on in (("dpleft", x < 0), ("dpright", x > 0), ("dpdown", y < 0)) if on}
        if y > 0:
            held.add("dpup")

    def on_button_press(self, controller: Any, button: str) -> None:
        self.state.buttons.add(button)

    def on_button_release(self, controller: Any, button: str) -> None:
        self.state.buttons.discard(button)

    # raw joysticks (evdev axes: y down positive)
    def on_joyaxis_motion(self, joystick: Any, axis: str, value: float) -> None:
        self.state.axes[axis] = value

    def on_joyhat_motion(self, joystick: Any, hat_x: float, hat_y: float) -> None:
        self.state.axes["hat_x"], self.state.axes["hat_y"] = hat_x, hat_y

    def on_joybutton_press(self, joystick: Any, button: int) -> None:
        self.state.buttons.add(f"b{button}")

    def on_joybutton_release(self, joystick: Any, button: int) -> None:
        self.state.buttons.discard(f"b{button}")


class VirtualJoystick:
    """Two sticks in the unit disc plus held keys, written into `state` as a controller's
    axes ("leftx", "lefty", "rightx", "righty"); active only while `enabled`."""

    def __init__(self, state: DeviceState, profile: JoystickProfile) -> None:
        self.state = state
        self.cycle_button = profile.buttons.cycle_mode[0]
        self.sticks = {"left": (0.0, 0.0), "right": (0.0, 0.0)}
        self.keys: set[int] = set()
        self.enabled = False

    def enable(self) -> None:
        self.enabled = True
        st = self.state
        st.name, st.connected = VIRTUAL_NAME, True
        st.buttons.clear()
        self._publish()

    def set_stick(self, side: str, x: float, y: float) -> None:
        """Stick `side` ("left" / "right") at (x, y), clipped to the unit disc."""
        r = math.hypot(x, y)
        if r > 1.0:
            x, y = x / r, y / r
        self.sticks[side] = (x, y)
        self._publish()

    def on_key_press(self, symbol: int, modifiers: int) -> bool:
        if not self.enabled or (symbol not in KEY_AXES and symbol != CYCLE_KEY):
            return False
        self.keys.add(symbol)
        if symbol == CYCLE_KEY:
            self.state.buttons.add(self.cycle_button)
        self._publish()
        return True

    def on_key_release(self, symbol: int, modifiers: int) -> bool:
        if symbol not in self.keys:
            return False
        self.keys.discard(symbol)
        if symbol == CYCLE_KEY:
            self.state.buttons.discard(self.cycle_button)
        self._publish()
        return True

    def _publish(self) -> None:
        if not self.enabled:
            return
        axes = {
            "leftx": self.sticks["left"][0],
            "lefty": self.sticks["left"][1],
            "rightx": self.sticks["right"][0],
            "righty": self.sticks["right"][1],
        }
        for k in self.keys:  # a held key deflects its axis fully, over the mouse
            if k in KEY_AXES:
                axis, value = KEY_AXES[k]
                axes[axis] = value
        self.state.axes.clear()
        self.state.axes.update(axes)


class VirtualJoystickWindow(pyglet.window.Window):
    """Two pads; drag a knob with the left mouse button, it springs back on release."""

    KNOB_RGB = (240, 200, 60)

    def __init__(self, stick: VirtualJoystick, size: tuple[int, int] = (440, 220)) -> None:
        super().__init__(width=size[0], height=size[1], caption=f"skyswarm - {VIRTUAL_NAME}")
        self.stick = stick
        self.batch = pyglet.graphics.Batch()
        self._drag: str | None = None
        self.pads: dict[str, pyglet.shapes.Circle] = {}
        self.knobs: dict[str, pyglet.shapes.Circle] = {}
        for side in ("left", "right"):
            cx, cy = self.center(side)
            r = self.radius
            self.pads[side] = pyglet.shapes.Circle(cx, cy, r, color=(70, 78, 96), batch=self.batch)
            self.knobs[side] = pyglet.shapes.Circle(
                cx, cy, r * 0.22, color=self.KNOB_RGB, batch=self.batch
            )

    @property
    def radius(self) -> float:
        return min(self.width / 4, self.height / 2) - 12

    def center(self, side: str) -> tuple[float, float]:
        return (self.width / 4 if side == "left" else 3 * self.width / 4), self.height / 2

    def knob_position(self, side: str) -> tuple[float, float]:
        """Window pixel (origin bottom-left) where the knob of `side` is drawn."""
        cx, cy = self.center(side)
        x, y = self.stick.sticks[side]
        return cx + x * self.radius, cy + y * self.radius

    def on_draw(self) -> None:
        self.clear()
        for side, knob in self.knobs.items():
            knob.position = self.knob_position(side)
        self.batch.draw()

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> None:
        if button == mouse.LEFT:
            self._drag = "left" if x < self.width / 2 else "right"
            self._move(x, y)

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, mods: int) -> None:
        if self._drag is not None:
            self._move(x, y)

    def on_mouse_release(self, x: int, y: int, button: int, modifiers: int) -> None:
        if self._drag is not None:
            self.stick.set_stick(self._drag, 0.0, 0.0)  # sprung sticks
            self._drag = None

    def _move(self, x: float, y: float) -> None:
        assert self._drag is not None
        cx, cy = self.center(self._drag)
        self.stick.set_stick(self._drag, (x - cx) / self.radius, (y - cy) / self.radius)

    def on_key_press(self, symbol: int, modifiers: int) -> bool:
        if symbol == key.ESCAPE:  # closes this window only, like its close button
            self.close()
            return True
        return self.stick.on_key_press(symbol, modifiers)

    def on_key_release(self, symbol: int, modifiers: int) -> bool:
        return self.stick.on_key_release(symbol, modifiers)


def find_devices() -> tuple[list[Any], list[Any]]:
    """(controllers, raw joysticks) attached now; none when the machine has no /dev/input."""
    out: list[list[Any]] = []
    for get in (pyglet.input.get_controllers, pyglet.input.get_joysticks):
        try:
            out.append(list(get()))
        except OSError:  # FileNotFoundError without /dev/input: no devices
            out.append([])
    return out[0], out[1]


def controller_manager() -> Any:
    """pyglet's ControllerManager (hot-plug events), or None where it cannot watch devices."""
    try:
        return pyglet.input.ControllerManager()
    except OSError:
        return None


class JoystickHub:
    """The viewer's manual control: one `ManualControl` fed by the best device available."""

    def __init__(
        self,
        sim: Simulator,
        profile: JoystickProfile | None = None,
        keyboard_window: pyglet.window.Window | None = None,
        show_virtual: bool = True,
        scan: bool = True,
    ) -> None:
        """`scan`: look for attached devices and watch hot-plug (False: virtual only, until
        `on_connect` is called)."""
        self.profile = profile or load_profile()
        self.state = DeviceState()
        self.control = ManualControl(sim, self.profile, self.state)
        self.input = DeviceInput(self.state)
        self.virtual = VirtualJoystick(self.state, self.profile)
        self.show_virtual = show_virtual
        self.window: VirtualJoystickWindow | None = None
        self.active: Any = None  # the real device in use; None: virtual (or lost)
        self.manager = controller_manager() if scan else None
        if self.manager is not None:
            self.manager.push_handlers(self)
        if keyboard_window is not None:  # keyboard fallback in the viewer's window too
            keyboard_window.push_handlers(self.virtual)
        controllers, joysticks = find_devices() if scan else ([], [])
        devices = controllers or joysticks
        if devices:
            self.use(devices[0])
        else:
            self.use_virtual()

    def use(self, device: Any) -> bool:
        """Read `device` (a pyglet Controller or Joystick); False if it cannot be opened."""
        try:
            device.open()
        except Exception:  # busy or gone: pyglet raises DeviceOpenException (not OSError)
            return False
        self.virtual.enabled = False
        self.input.attach(device)
        self.active = device
        return True

    def use_virtual(self) -> None:
        self.input.detach()
        self.active = None
        self.virtual.enable()
        if self.show_virtual and self.window is None:
            self.window = VirtualJoystickWindow(self.virtual)

    # hot-plug (ControllerManager events)
    def on_connect(self, controller: Any) -> None:
        if self.active is None:  # lost device back, or a real one instead of the virtual
            self.use(controller)

    def on_disconnect(self, controller: Any) -> None:
        if controller is self.active:
            self.lost()

    def lost(self) -> None:
        """The device in use went away: the agent holds position after the failsafe delay."""
        self.input.detach()
        self.active = None

    def poll(self) -> None:
        """Per GUI frame: notice a raw joystick whose device closed (pyglet sends no event)."""
        dev = getattr(self.active, "device", None)
        if dev is not None and not getattr(dev, "is_open", True):
            self.lost()

    def toggle(self, agent_id: int | None) -> None:
        """Take control of `agent_id`, or release the agent flown now."""
        if self.control.agent is not None or self.control.requested:
            self.control.release()
            return
        if agent_id is None:
            return
        if not self.state.connected and self.active is None:
            self.use_virtual()  # after a lost device: fly with the virtual joystick
        self.control.target = agent_id
        self.control.take_control(agent_id)

    def status(self) -> str:
        c = self.control
        who = f"agent {c.agent.id}" if c.agent is not None else "none"
        state = "FAILSAFE hold" if c.failsafe else c.mode_name
        return f"manual: {who}, {state}, {self.state.name}"

    def close(self) -> None:
        if self.window is not None:
            self.window.close()
            self.window = None
