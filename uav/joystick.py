"""Joystick profiles and stick modes: the device-independent half of manual flight.

A profile (a TOML file with a [joystick] table, validated into frozen dataclasses) turns the raw
axes and buttons of a device into four channels in [-1, 1] - throttle (up +), yaw (right +),
pitch (forward +), roll (right +) - and a set of held button actions. A stick mode turns the
channels into one control mode's setpoints, scaled by the agent's airframe limits:

    mode                          throttle             yaw              pitch / roll
    Manual                        throttle 0..1        yaw torque       pitch / roll torque
    Attitude                      collective thrust    yaw rate         pitch / roll angle
    GroundSpeedAndVertSpeed       vertical speed       yaw rate         forward / lateral speed
    GroundSpeedAltitudeAndHeading altitude target      heading target   forward / lateral speed
                                  (moves at climb rate) (at yaw rate)

Thrust is piecewise linear with the stick centred at hover: -1 -> 0 N, 0 -> weight, +1 -> the
airframe's maximum. Device axes are named as pyglet names them: standard-mapping controllers
"leftx", "lefty", "rightx", "righty" (y up positive, as in pyglet's stick vectors), "lefttrigger",
"righttrigger"; raw joysticks "x", "y", "z", "rx", "ry", "rz", "hat_x", "hat_y" (y down
positive); buttons by controller name ("a", "start", ...) or raw index ("b0", "b1", ...).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skyswarm.core.config import read_toml
from skyswarm.core.geo import wrap_angle
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.schema import ConfigError, build, did_you_mean, param
from skyswarm.uav import control as ctl

if TYPE_CHECKING:
    from skyswarm.uav.agents import UavAgent

DEFAULT_PROFILE = CONFIGS_DIR / "joysticks" / "gamepad.toml"
CONTROLLER_AXES = ("leftx", "lefty", "rightx", "righty", "lefttrigger", "righttrigger")
RAW_AXES = ("x", "y", "z", "rx", "ry", "rz", "hat_x", "hat_y")
AXIS_NAMES = CONTROLLER_AXES + RAW_AXES
CONTROLLER_BUTTONS = (
    "a", "b", "x", "y", "back", "start", "guide", "leftshoulder", "rightshoulder",
    "leftstick", "rightstick", "dpup", "dpdown", "dpleft", "dpright", "misc1",
)  # fmt: skip
RAW_BUTTON = re.compile(r"b\d{1,2}$")
CHANNELS = ("throttle", "yaw", "pitch", "roll")


@dataclass(frozen=True)
class AxisConfig:
    """One channel: which device axis drives it and how the stick travel is shaped."""

    axes: tuple[str, ...] = param(
        doc="device axes, the first the device has wins; a leading '-' negates that axis"
    )
    invert: bool = param(False, "negate the channel (a pilot's preference, e.g. inverted pitch)")
    dead_zone: float = param(0.05, "stick travel around centre read as zero, fraction", ge=0, lt=1)
    expo: float = param(0.0, "0 linear .. 1 cubic: finer control near centre", ge=0.0, le=1.0)

    def validate(self, path: str, file: str) -> None:
        if not self.axes:
            raise ConfigError(file, f"{path}.axes", [], "at least one axis name")
        for i, name in enumerate(self.axes):
            if name.removeprefix("-") not in AXIS_NAMES:
                hint = did_you_mean(name.removeprefix("-"), AXIS_NAMES)
                expected = f"an axis name{hint}: one of {', '.join(AXIS_NAMES)}"
                raise ConfigError(file, f"{path}.axes[{i}]", name, expected)

    def value(self, axes: Mapping[str, float]) -> float:
        """The shaped channel value in [-1, 1] from the device's current axes."""
        for name in self.axes:
            raw = axes.get(name.removeprefix("-"))
            if raw is not None:
                sign = -1.0 if name.startswith("-") else 1.0
                return shape(-sign * raw if self.invert else sign * raw, self.dead_zone, self.expo)
        return 0.0


def shape(v: float, dead_zone: float, expo: float) -> float:
    """Dead zone then expo: |v| <= dead_zone -> 0; the rest rescaled to 0..1 as
    (1 - expo) x + expo x^3, sign kept. Input clipped to [-1, 1]."""
    a = min(abs(float(v)), 1.0)
    if a <= dead_zone:
        return 0.0
    x = (a - dead_zone) / (1.0 - dead_zone)
    return math.copysign((1.0 - expo) * x + expo * x**3, v)


@dataclass(frozen=True)
class ButtonsConfig:
    """Button actions: each lists the buttons that trigger it (any of them)."""

    cycle_mode: tuple[str, ...] = param(("y", "b3"), "step to the next mode of `modes`")
    toggle_control: tuple[str, ...] = param(
        ("start", "b7"), "take control of the selected agent, or release it"
    )

    def validate(self, path: str, file: str) -> None:
        for action in ("cycle_mode", "toggle_control"):
            for i, name in enumerate(getattr(self, action)):
                if name not in CONTROLLER_BUTTONS and not RAW_BUTTON.match(name):
                    hint = did_you_mean(name, CONTROLLER_BUTTONS)
                    expected = f"a controller button{hint} or a raw button b0..b99"
                    raise ConfigError(file, f"{path}.{action}[{i}]", name, expected)

    def actions(self, held: Collection[str]) -> frozenset[str]:
        return frozenset(
            a for a in ("cycle_mode", "toggle_control") if any(b in held for b in getattr(self, a))
        )


@dataclass(frozen=True)
class JoystickProfile:
    """The [joystick] table of a profile file. Defaults: mode 2 on a standard gamepad."""

    name: str = param("gamepad (mode 2)", "shown in events and the GUI")
    sample_hz: float = param(50.0, "input sampling rate on simulated time, Hz", gt=0.0, rate=True)
    failsafe_after_s: float = param(
        0.1, "device lost this long while flying -> position hold, s", ge=0.0, le=0.4
    )
    modes: tuple[str, ...] = param(
        ("Attitude", "GroundSpeedAndVertSpeed", "GroundSpeedAltitudeAndHeading", "Manual"),
        "modes the cycle button steps through; the first is the initial one",
    )
    throttle: AxisConfig = param(AxisConfig(("lefty", "-y"), dead_zone=0.08), "left stick, up +")
    yaw: AxisConfig = param(AxisConfig(("leftx", "x"), dead_zone=0.08), "left stick, right +")
    pitch: AxisConfig = param(AxisConfig(("righty", "-ry")), "right stick, forward +")
    roll: AxisConfig = param(AxisConfig(("rightx", "rx")), "right stick, right +")
    buttons: ButtonsConfig = param(ButtonsConfig(), "button actions")

    def validate(self, path: str, file: str) -> None:
        if not self.modes:
            raise ConfigError(file, f"{path}.modes", [], "at least one mode")
        for i, m in enumerate(self.modes):
            if m not in STICK_MODES:
                hint = did_you_mean(m, STICK_MODES)
                expected = f"a manual mode{hint}: one of {', '.join(STICK_MODES)}"
                raise ConfigError(file, f"{path}.modes[{i}]", m, expected)

    def sticks(self, axes: Mapping[str, float]) -> tuple[float, float, float, float]:
        """(throttle, yaw, pitch, roll), each shaped into [-1, 1]."""
        return (
            self.throttle.value(axes),
            self.yaw.value(axes),
            self.pitch.value(axes),
            self.roll.value(axes),
        )

    def next_mode(self, mode: str) -> str:
        i = self.modes.index(mode) if mode in self.modes else -1
        return self.modes[(i + 1) % len(self.modes)]


def load_profile(path: str | Path = DEFAULT_PROFILE) -> JoystickProfile:
    """Read a profile file; a bad value raises ConfigError naming file, key and value."""
    file = str(path)
    data = read_toml(path)
    for key in data:
        if key != "joystick":
            raise ConfigError(file, key, data[key], "only a [joystick] table")
    return build(JoystickProfile, data.get("joystick", {}), "joystick", file)


# -- stick modes ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Limits:
    """Full-stick values from the agent's airframe file (SI: N, rad, m/s, rad/s)."""

    hover_n: float
    max_n: float
    tilt_rad: float
    speed_m_s: float
    climb_m_s: float
    descent_m_s: float
    yaw_rate_rad_s: float

    @classmethod
    def of(cls, agent: UavAgent) -> Limits:
        cfg = agent.swarm.config
        c = cfg.control
        return cls(
            cfg.airframe.weight_n(agent.swarm.g),  # centre stick: hover in this world
            4 * cfg.airframe.max_thrust_n,
            math.radians(c.max_tilt_deg),
            c.max_speed_m_s,
            c.max_climb_m_s,
            c.max_descent_m_s,
            math.radians(c.max_yaw_rate_deg_s),
        )

    def thrust(self, t: float) -> float:
        """Collective N for throttle stick t in [-1, 1]: centre = hover."""
        return self.hover_n + t * (self.max_n - self.hover_n if t >= 0 else self.hover_n)

    def vertical(self, t: float) -> float:
        return t * (self.climb_m_s if t >= 0 else self.descent_m_s)


class StickMode:
    """Maps the channels to one control mode's setpoints. `enter` switches the agent
    (bumplessly) and keeps the setpoints the switch chose; `update` recomputes them from the
    sticks at each input sample; `apply` writes them every tick."""

    name = ""
    control: ctl.ControlMode

    def enter(self, agent: UavAgent) -> None:
        if agent.mode is not self.control:
            agent.set_mode(self.control)
        self._read(agent.swarm.setpoints, agent.index)

    def apply(self, agent: UavAgent) -> None:
        if agent.mode is not self.control:  # something else switched it: take it back
            agent.set_mode(self.control)
        self._write(agent.swarm.setpoints, agent.index)

    def update(self, sticks: tuple[float, float, float, float], lim: Limits, dt: float) -> None:
        raise NotImplementedError

    def _read(self, sp: ctl.Setpoints, i: int) -> None:
        raise NotImplementedError

    def _write(self, sp: ctl.Setpoints, i: int) -> None:
        raise NotImplementedError


class ManualSticks(StickMode):
    name, control = "Manual", ctl.MANUAL

    def _read(self, sp: ctl.Setpoints, i: int) -> None:
        self.cmd = tuple(float(v) for v in sp.manual[i])

    def update(self, sticks: tuple[float, float, float, float], lim: Limits, dt: float) -> None:
        t, yaw, pitch, roll = sticks
        self.cmd = (lim.thrust(t) / lim.max_n, roll, pitch, -yaw)  # yaw right = torque -z

    def _write(self, sp: ctl.Setpoints, i: int) -> None:
        sp.manual[i] = self.cmd


class AttitudeSticks(StickMode):
    name, control = "Attitude", ctl.ATTITUDE

    def _read(self, sp: ctl.Setpoints, i: int) -> None:
        self.att, self.thrust = tuple(float(v) for v in sp.attitude[i]), float(sp.thrust[i])

    def update(self, sticks: tuple[float, float, float, float], lim: Limits, dt: float) -> None:
        t, yaw, pitch, roll = sticks
        self.att = (roll * lim.tilt_rad, pitch * lim.tilt_rad, -yaw * lim.yaw_rate_rad_s)
        self.thrust = lim.thrust(t)

    def _write(self, sp: ctl.Setpoints, i: int) -> None:
        sp.attitude[i] = self.att
        sp.thrust[i] = self.thrust


class VelocitySticks(StickMode):
    name, control = "GroundSpeedAndVertSpeed", ctl.GROUND_SPEED_AND_VERT_SPEED

    def _read(self, sp: ctl.Setpoints, i: int) -> None:
        self.vel, self.yaw_rate = tuple(float(v) for v in sp.velocity[i]), float(sp.attitude[i, 2])

    def update(self, sticks: tuple[float, float, float, float], lim: Limits, dt: float) -> None:
        t, yaw, pitch, roll = sticks  # heading frame: x forward, y left
        self.vel = (pitch * lim.speed_m_s, -roll * lim.speed_m_s, lim.vertical(t))
        self.yaw_rate = -yaw * lim.yaw_rate_rad_s

    def _write(self, sp: ctl.Setpoints, i: int) -> None:
        sp.velocity[i] = self.vel
        sp.attitude[i, 2] = self.yaw_rate


class AltitudeHeadingSticks(StickMode):
    name, control = "GroundSpeedAltitudeAndHeading", ctl.GROUND_SPEED_ALTITUDE_AND_HEADING

    def _read(self, sp: ctl.Setpoints, i: int) -> None:
        self.vxy = (float(sp.velocity[i, 0]), float(sp.velocity[i, 1]))
        self.altitude, self.yaw = float(sp.altitude[i]), float(sp.yaw[i])

    def update(self, sticks: tuple[float, float, float, float], lim: Limits, dt: float) -> None:
        t, yaw, pitch, roll = sticks
        self.vxy = (pitch * lim.speed_m_s, -roll * lim.speed_m_s)
        self.altitude += lim.vertical(t) * dt  # the stick moves the target at the climb rate
        self.yaw = float(wrap_angle(self.yaw - yaw * lim.yaw_rate_rad_s * dt))

    def _write(self, sp: ctl.Setpoints, i: int) -> None:
        sp.velocity[i, :2] = self.vxy
        sp.altitude[i] = self.altitude
        sp.yaw[i] = self.yaw


STICK_MODES: dict[str, type[StickMode]] = {
    m.name: m for m in (ManualSticks, AttitudeSticks, VelocitySticks, AltitudeHeadingSticks)
}
