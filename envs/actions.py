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

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numba
import numpy as np

from skyswarm.core.jit import ahead, njit
from skyswarm.uav.commands import CommandInterface
from skyswarm.uav.control import BODY_RATES, Setpoints, mode_index


class ActionLevel(ABC):
    """One way to fly: a normalised (n, k) action -> a swarm command (see the module table)."""

    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]]  # what each of the k columns commands, for messages

    @property
    def k(self) -> int:
        return len(self.fields)

    @abstractmethod
    def apply(self, command: CommandInterface, index: np.ndarray | None, a: np.ndarray) -> None:
        """Command agents `index` (n,) (swarm indices; None: all) with normalised actions
        `a` (n, k)."""


def collective(command: CommandInterface, a: np.ndarray) -> np.ndarray:
    """Thrust N from a normalised collective (n,): hover at 0, 0 at -1, 4 max_thrust_n at +1."""
    sw = command.swarm
    hover = sw.config.airframe.mass_kg * sw.g
    top = 4.0 * command.f_max
    return np.where(a <= 0.0, hover * (1.0 + a), hover + a * (top - hover))


class BodyRates(ActionLevel):
    name = "body_rates"
    fields = ("p", "q", "r", "thrust")

    def apply(self, command: CommandInterface, index: np.ndarray | None, a: np.ndarray) -> None:
        if index is None and _body_rates_all(command, a):
            return
        scale = np.array([command.max_body_rate, command.max_body_rate, command.max_yaw_rate])
        command.body_rates(index, a[:, :3] * scale, collective(command, a[:, 3]))


def _body_rates_all(command: CommandInterface, a: np.ndarray) -> bool:
    """`BodyRates.apply` to every agent in one compiled pass, when every agent already flies
    body rates and `a` (n, 4) is C-contiguous float64 and finite (an RL step's usual case):
    the numbers `command.body_rates` writes, bit for bit. False: take the command's own path
    (its mode switches and its errors)."""
    sw = command.swarm
    if a.shape != (sw.n, 4) or a.dtype != np.float64 or not a.flags.c_contiguous:
        return False
    hover = sw.config.airframe.mass_kg * sw.g  # as `collective`
    sp = sw.setpoints
    return set_body_rates(
        a, command.max_body_rate, command.max_yaw_rate, hover, 4.0 * command.f_max,
        sp.mode, _BODY_RATES, sp.rates, sp.thrust,
    )  # fmt: skip


_BODY_RATES = mode_index(BODY_RATES)


@njit(nogil=True)
def set_body_rates(a, max_rate, max_yaw_rate, hover, top, mode, body_rates, rates, thrust):
    """Setpoints `rates` (n, 3) rad/s and `thrust` (n,) N from normalised actions `a` (n, 4),
    as BodyRates.apply through CommandInterface.body_rates computes them (p, q = a x max_rate,
    r = a x max_yaw_rate, `collective` of a3, each clipped as the command clips); True. False
    if an entry is not finite (nothing written) or an agent's `mode` is not `body_rates` (the
    agents before it written, with the numbers the command's own path then writes again)."""
    flat = a.reshape(-1)
    finite = True
    for i in range(len(flat)):  # no early exit: the loop stays branch-free (vectorised)
        finite &= abs(flat[i]) < math.inf  # NaN fails too
    if not finite:
        return False
    for i in range(a.shape[0]):  # one pass over the setpoint records
        if mode[i] != body_rates:
            return False
        p, q, r = a[i, 0] * max_rate, a[i, 1] * max_rate, a[i, 2] * max_yaw_rate
        rates[i, 0] = _clip(p, -max_rate, max_rate)
        rates[i, 1] = _clip(q, -max_rate, max_rate)
        rates[i, 2] = _clip(r, -max_yaw_rate, max_yaw_rate)
        c = a[i, 3]
        f = hover * (1.0 + c) if c <= 0.0 else hover + c * (top - hover)
        thrust[i] = _clip(f, 0.0, top)
    return True


@njit(inline="always")
def _clip(x, lo, hi):
    """np.clip of a finite x: x itself (a -0.0 stays -0.0) unless beyond a bound."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


class Attitude(ActionLevel):
    name = "attitude"
    fields = ("roll", "pitch", "yaw_rate", "thrust")

    def apply(self, command: CommandInterface, index: np.ndarray | None, a: np.ndarray) -> None:
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

    def apply(self, command: CommandInterface, index: np.ndarray | None, a: np.ndarray) -> None:
        scale = np.array([command.max_speed, command.max_speed, command.climb])
        # a horizontal (a0, a1) of norm up to sqrt 2 is scaled to max_speed by the command
        command.velocity(index, a[:, :3] * scale, yaw_rate=a[:, 3] * command.max_yaw_rate)


class Motors(ActionLevel):
    name = "motors"
    fields = ("motor_1", "motor_2", "motor_3", "motor_4")

    def apply(self, command: CommandInterface, index: np.ndarray | None, a: np.ndarray) -> None:
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


class ActionCheck:
    """The one action check of every env: an action as a float array of the env's space, every
    entry finite and in [-1, 1], else an ActionError naming the env, the agent (and the field)
    and the expected space. Each env builds one with its name and its agents' names:

        check = ActionCheck("skyswarm/hover env", ["uav_0"], level)           # one (k,) action
        check = ActionCheck("skyswarm/hover vector env", names, level, batched=True)  # (n, k)
        a = check(action)                       # (n, k) float64 clipped to [-1, 1]
        a = check.each(actions, live)           # PettingZoo: a dict of (k,) actions -> (m, k)
    """

    def __init__(
        self, env: str, agents: list[str], level: ActionLevel, batched: bool = False
    ) -> None:
        self.env, self.agents, self.level = env, list(agents), level
        self.shape = (len(self.agents), level.k) if batched else (level.k,)
        self.space = f"Box(-1.0, 1.0, {self.shape}, float32)"
        if batched:
            self.whose = f"agents {self.agents[0]!r}..{self.agents[-1]!r}"
        else:
            self.whose = f"agent {self.agents[0]!r}" if len(self.agents) == 1 else "each agent"

    def __call__(self, a: object) -> np.ndarray:
        """(n, k) normalised actions from one action (n = 1) or one batch (n = num_envs)."""
        if not (isinstance(a, np.ndarray) and a.shape == self.shape and a.dtype in _CHECKED):
            a = self._array(a, self.shape, self.whose)  # float64 (a float32 array is read as is)
        return self._values(a, self.agents)

    def each(self, actions: dict[str, object], live: list[str]) -> np.ndarray:
        """(m, k) actions of the `live` agents (m,) in order, from a dict by agent name that
        holds exactly the live agents, each a (k,) action."""
        extra = set(actions) - set(live)
        if extra:
            raise ActionError(f"{self.env}: actions for agents not in the env: {sorted(extra)}")
        missing = [a for a in live if a not in actions]
        if missing:
            raise ActionError(f"{self.env}: no action for live agents {missing}")
        k = self.level.k
        rows = [self._array(actions[a], (k,), f"agent {a!r}") for a in live]
        return self._values(np.array(rows).reshape(len(live), k), live)

    def _array(self, a: object, shape: tuple[int, ...], whose: str) -> np.ndarray:
        try:
            arr = np.asarray(a)
            if arr.dtype.kind not in "biuf":  # complex: numpy would drop the imaginary part
                raise TypeError
            arr = arr.astype(np.float64, copy=False)
        except (TypeError, ValueError):
            raise ActionError(
                f"{self.env}: action {a!r} is not numeric (real numbers); expected {self.space} "
                f"for {whose}"
            ) from None
        if arr.shape != shape:
            raise ActionError(
                f"{self.env}: action has shape {arr.shape}; expected "
                f"Box(-1.0, 1.0, {shape}, float32) for {whose}"
            )
        return arr

    def _values(self, arr: np.ndarray, agents: list[str]) -> np.ndarray:
        """(n, k) rows of `agents` (n,) checked finite and in [-1, 1], then clipped: one
        compiled pass (`check_clip`) into a new float64 array; the message from numpy."""
        flat = arr.reshape(-1, self.level.k)
        if flat.dtype not in _CHECKED or not flat.flags.c_contiguous:
            flat = np.ascontiguousarray(flat, dtype=np.float64)
        out = np.empty(flat.shape)
        if check_clip(flat, TOLERANCE, out) < 0:
            return out
        flat = flat.astype(np.float64)
        bad = ~np.isfinite(flat) | (np.abs(flat) > 1.0 + TOLERANCE)
        if bad.any():
            row, col = (int(i) for i in np.argwhere(bad)[0])
            raise ActionError(
                f"{self.env}: action of agent {agents[row]!r} has {self.level.fields[col]} = "
                f"{float(flat[row, col])!r} ({self.level.name} level); expected "
                f"Box(-1.0, 1.0, ({self.level.k},), float32) with finite entries"
            )
        return np.clip(flat, -1.0, 1.0)  # not reached: check_clip refused an entry


TOLERANCE = 1e-6  # float32 rounding of a bound is not out of bounds
_CHECKED = (np.dtype(np.float32), np.dtype(np.float64))  # check_clip's compiled inputs


@njit(nogil=True)
def check_clip(a, tolerance, out):
    """`out` (n, k) float64 = `a` (n, k) clipped to [-1, 1] (np.clip's numbers: a -0.0 stays);
    -1, or the flat index of the first entry that is not finite or beyond 1 + `tolerance`
    (then `out` holds garbage)."""
    limit = 1.0 + tolerance
    src, dst = a.reshape(-1), out.reshape(-1)
    bad = False
    for i in range(len(src)):  # no early exit: the loop stays branch-free (vectorised)
        x = np.float64(src[i])
        bad |= not abs(x) <= limit  # NaN and inf fail too
        dst[i] = _clip(x, -1.0, 1.0)
    if bad:
        for i in range(len(src)):
            if not abs(np.float64(src[i])) <= limit:
                return i
    return -1


class ActionError(ValueError):
    """An action the environment refuses: wrong shape, NaN or inf, out of [-1, 1]."""


# The types the envs call the kernels with (compiled before the clock: core/jit.py): actions
# float32 (the action spaces' dtype) or float64, the setpoints' strided record fields.
_F4, _F8 = numba.types.float32, numba.types.float64
ahead(
    check_clip,
    *((numba.types.Array(t, 2, "C"), _F8, numba.types.Array(_F8, 2, "C")) for t in (_F4, _F8)),
)
ahead(
    set_body_rates,
    *(
        (
            numba.types.Array(_F8, 2, "C"), _F8, _F8, _F8, _F8, numba.typeof(sp.mode),
            numba.types.intp, numba.typeof(sp.rates), numba.typeof(sp.thrust),
        )
        for sp in (Setpoints(1), Setpoints(2))  # one record's fields are contiguous, more strided
    ),
)  # fmt: skip
