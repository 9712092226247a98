"""Action levels of the RL environments: what a policy's normalised action in [-1, 1]^k means.

Each level is one object (never a mode number) that knows its width `k`, how to turn an
(n, k) array of normalised actions into a command of the swarm's `CommandInterface`
(uav/commands.py) for the n agents, and its names for messages. Scaling to physical units:

| level | k | action -> command |
| --- | --- | --- |
| `body_rates` (default) | 4 | p, q = a0, a1 x max_body_rate; r = a2 x max_yaw_rate; thrust T(a3) |
| `attitude` | 4 | roll, pitch = a0, a1 x max_tilt; yaw rate = a2 x max_yaw_rate; thrust T(a3) |
| `velocity` | 4 | vx, vy = a0, a1 x max_speed; vz = a2 x max_climb; yaw rate = a3 x max_yaw_rate |
| `motors` | 4 | motor i thrust = (a_i + 1) / 2 x max_thrust_n |

T(a) = m g (1 + a) for a <= 0 and m g + a (4 f_max - m g) above: a = 0 is the hover thrust,
-1 no thrust, +1 all four motors at full thrust. The limits are the airframe's and [control]'s
(the same numbers `CommandInterface` saturates at).

    level = action_level("body_rates")
    level.apply(swarm.command, np.arange(n), actions)   # actions (n, 4) in [-1, 1]
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from skyswarm.uav.commands import CommandInterface


class ActionLevel(ABC):
    """One way to fly: a normalised (n, k) action -> a swarm command (see the module table)."""

    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]  # what each of the k columns commands, for messages

    @property
    def k(self) -> int:
        return len(self.fields)

    @abstractmethod
    def apply(self, command: CommandInterface, index: np.ndarray, a: np.ndarray) -> None:
        """Command agents `index` (n,) (swarm indices) with normalised actions `a` (n, k)."""


def collective(command: CommandInterface, a: np.ndarray) -> np.ndarray:
    """Thrust N from a normalised collective (n,): hover at 0, 0 at -1, 4 max_thrust_n at +1."""
    sw = command.swarm
    hover = sw.config.airframe.mass_kg * sw.g
    top = 4.0 * command.f_max
    return np.where(a <= 0.0, hover * (1.0 + a), hover + a * (top - hover))


class BodyRates(ActionLevel):
    name = "body_rates"
    fields = ("p", "q", "r", "thrust")

    def apply(self, command: CommandInterface, index: np.ndarray, a: np.ndarray) -> None:
        scale = np.array([command.max_body_rate, command.max_body_rate, command.max_yaw_rate])
        command.body_rates(index, a[:, :3] * scale, collective(command, a[:, 3]))


class Attitude(ActionLevel):
    name = "attitude"
    fields = ("roll", "pitch", "yaw_rate", "thrust")

    def apply(self, command: CommandInterface, index: np.ndarray, a: np.ndarray) -> None:
        command.attitude(
            index,
            roll=a[:, 0] * command.max_tilt,
            pitch=a[:, 1] * command.max_tilt,
            thrust=collective(command, a[:, 3]),
            yaw_rate=a[:, 2] * command.max_yaw_rate,
        )


class Velocity(ActionLevel):
    name = "velocity"
    fields = ("vx", "vy", "vz", "yaw_rate")

    def apply(self, command: CommandInterface, index: np.ndarray, a: np.ndarray) -> None:
        scale = np.array([command.max_speed, command.max_speed, command.climb])
        # a horizontal (a0, a1) of norm up to sqrt 2 is scaled to max_speed by the command
        command.velocity(index, a[:, :3] * scale, yaw_rate=a[:, 3] * command.max_yaw_rate)


class Motors(ActionLevel):
    name = "motors"
    fields = ("motor_1", "motor_2", "motor_3", "motor_4")

    def apply(self, command: CommandInterface, index: np.ndarray, a: np.ndarray) -> None:
        command.motors(index, (a + 1.0) * (0.5 * command.f_max))


LEVELS: dict[str, type[ActionLevel]] = {c.name: c for c in (BodyRates, Attitude, Velocity, Motors)}


def action_level(name: str) -> ActionLevel:
    """The action level called `name` (one of LEVELS), or a ValueError listing them."""
    try:
        return LEVELS[name]()
    except KeyError:
        raise ValueError(
            f"action level {name!r}: expected one of {', '.join(map(repr, LEVELS))}"
        ) from None


def check_actions(
    a: object, shape: tuple[int, ...], env: str, agents: list[str], level: ActionLevel
) -> np.ndarray:
    """`a` as a float array of `shape` with every entry finite and in [-1, 1], else an
    ActionError naming the env, the agent, the field and the expected space."""
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ActionError(f"{env}: action {a!r} is not numeric; expected {_space(shape)}") from None
    if arr.shape != shape:
        raise ActionError(f"{env}: action has shape {arr.shape}; expected {_space(shape)}")
    flat = arr.reshape(-1, level.k)
    bad = ~np.isfinite(flat) | (np.abs(flat) > 1.0 + TOLERANCE)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise ActionError(
            f"{env}: action of agent {agents[row]!r} has {level.fields[col]} = "
            f"{float(flat[row, col])!r} ({level.name} level); expected {_space(shape)} "
            "with finite entries"
        )
    return np.clip(flat, -1.0, 1.0)


TOLERANCE = 1e-6  # float32 rounding of a bound is not out of bounds


class ActionError(ValueError):
    """An action the environment refuses: wrong shape, NaN or inf, out of [-1, 1]."""


def _space(shape: tuple[int, ...]) -> str:
    return f"Box(-1.0, 1.0, {shape}, float32)"
