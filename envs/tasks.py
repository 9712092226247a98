"""The tasks of the single-agent and vector environments: episode starts, rewards, ends.

A task is a frozen dataclass of numbers; everything it computes is over (n, ...) arrays of n
agents at once. Rewards (docs/rl.md states them with the same symbols), per control step:

    r = 1 - min(|e|, R) / R - w_v |v| - w_w |w| - w_a |a - a_prev|^2      (alive)
    r = -C                                                                (the step it crashes)
    r += B                                                                (goal reached, Goal)

e the position error m, v the velocity m/s, w the body rates rad/s, a the normalised action,
R `max_error_m`, C `crash_penalty`, B `goal_bonus`. An agent *crashes* (terminated) when
|e| > R, its tilt exceeds `max_tilt_deg`, or its altitude is below `min_altitude_m`.

    task = Hover()
    start = task.sample(rng, 64)        # EpisodeStart of 64 agents
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from skyswarm.core.schema import did_you_mean
from skyswarm.core.wind import WindConfig


@dataclass(frozen=True)
class EpisodeStart:
    """Where k agents start, relative to their slot's origin: offset (k, 3) m, velocity (k, 3)
    m/s, euler (k, 3) roll, pitch, yaw rad; and their targets (k, 3) m."""

    offset: np.ndarray
    velocity: np.ndarray
    euler: np.ndarray
    target: np.ndarray


@dataclass(frozen=True)
class Task:
    """Hold a spot: start within `start_radius_m` of it, at up to `start_speed_m_s` and tilted
    up to `start_tilt_deg`, any heading; the target is `altitude_m` above the slot's origin."""

    name: str = "hover"
    altitude_m: float = 10.0  # m, target height above the ground
    start_radius_m: float = 1.0  # m
    start_speed_m_s: float = 0.5  # m/s, each axis
    start_tilt_deg: float = 10.0  # deg, roll and pitch each
    goal_min_m: float = 0.0  # m, goal distance from the start (Goal)
    goal_max_m: float = 0.0
    max_error_m: float = 3.0  # m, R
    max_tilt_deg: float = 80.0  # deg
    min_altitude_m: float = 0.3  # m (below 0: touching the ground never ends an episode)
    crash_penalty: float = 10.0  # C
    goal_bonus: float = 0.0  # B (0: no goal test)
    goal_radius_m: float = 0.2  # m
    goal_speed_m_s: float = 0.5  # m/s
    w_velocity: float = 0.05  # per m/s
    w_rates: float = 0.02  # per rad/s
    w_smooth: float = 0.05  # per unit^2 of action change
    wind: WindConfig | None = None

    def __post_init__(self) -> None:
        """Refuse a task no episode can be flown in: a number that is not finite or out of its
        range, or a start that is already a crash (beyond `max_error_m` of the target, tilted
        past `max_tilt_deg`, below `min_altitude_m`)."""
        positive = ("altitude_m", "max_error_m", "max_tilt_deg", "goal_radius_m", "goal_speed_m_s")
        for name in positive:
            _check(self, name, lambda v: v > 0.0, "a finite number > 0")
        others = ("start_radius_m", "start_speed_m_s", "start_tilt_deg", "goal_min_m",
                  "goal_max_m", "crash_penalty", "goal_bonus", "w_velocity", "w_rates",
                  "w_smooth")  # fmt: skip
        for name in others:
            _check(self, name, lambda v: v >= 0.0, "a finite number >= 0")
        _check(self, "goal_max_m", lambda v: v >= self.goal_min_m, "at least goal_min_m")
        _check(self, "max_tilt_deg", lambda v: v <= 180.0, "at most 180")
        start = self.start_radius_m + self.goal_max_m  # farthest a start lies from its target
        _check(self, "max_error_m", lambda v: v > start, "more than start_radius_m + goal_max_m")
        _check(self, "start_tilt_deg", lambda v: v < self.max_tilt_deg, "less than max_tilt_deg")
        low = self.altitude_m - self.start_radius_m  # the lowest start
        # (below 0: the ground never ends an episode)
        _check(self, "min_altitude_m", lambda v: v < low, "below altitude_m - start_radius_m")

    def reach_m(self) -> float:
        """How far m from its slot's origin (across, at the target's height) a UAV can fly
        before its episode ends: its target up to start_radius_m + goal_max_m away, then
        max_error_m beyond."""
        return self.start_radius_m + self.goal_max_m + self.max_error_m

    def sample(self, rng: np.random.Generator, k: int) -> EpisodeStart:
        """k episode starts drawn from `rng` (see the class docstring)."""
        home = np.array([0.0, 0.0, self.altitude_m])
        offset = _in_ball(rng, k, self.start_radius_m)
        velocity = rng.uniform(-1.0, 1.0, (k, 3)) * self.start_speed_m_s
        tilt = math.radians(self.start_tilt_deg)
        euler = np.empty((k, 3))  # column_stack's and tile's arrays, in fewer calls
        euler[:, :2] = rng.uniform(-tilt, tilt, (k, 2))
        euler[:, 2] = rng.uniform(-math.pi, math.pi, k)
        target = np.empty((k, 3))
        target[:] = home
        if self.goal_max_m > 0.0:
            d = rng.uniform(self.goal_min_m, self.goal_max_m, k)
            target = target + _unit(rng, k) * d[:, None]
        return EpisodeStart(home + offset, velocity, euler, target)

    def reward(
        self,
        dist: np.ndarray,
        speed: np.ndarray,
        rates: np.ndarray,
        action: np.ndarray,
        previous: np.ndarray,
        crashed: np.ndarray,
        reached: np.ndarray,
    ) -> np.ndarray:
        """(n,) rewards from (n,) distances |e| m to the targets and speeds |v| m/s, (n, 3)
        body rates rad/s, (n, k) actions and the previous ones, (n,) crash and goal masks (the
        formula of the module)."""
        r = (
            1.0
            - np.minimum(dist, self.max_error_m) / self.max_error_m
            - self.w_velocity * speed
            - self.w_rates * row_norm(rates)
            - self.w_smooth * row_square_sum(action - previous)
        )
        r = np.where(crashed, -self.crash_penalty, r)
        return r + self.goal_bonus * reached

    def ends(
        self, dist: np.ndarray, speed: np.ndarray, up_z: np.ndarray, altitude: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(crashed, reached) (n,) masks from the distances |e| m to the targets, the speeds
        |v| m/s, the body z axis' world z (cos tilt) and the altitudes m, each (n,)."""
        crashed = (
            (dist > self.max_error_m)
            | (up_z < math.cos(math.radians(self.max_tilt_deg)))
            | (altitude < self.min_altitude_m)
        )
        reached = np.zeros_like(crashed)
        if self.goal_bonus > 0.0:
            reached = ~crashed & (dist < self.goal_radius_m) & (speed < self.goal_speed_m_s)
        return crashed, reached


def finite_real(value: object) -> bool:
    """Whether `value` is a finite real number (numpy's too), not a bool."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    return real and math.isfinite(value)  # type: ignore[arg-type]


def whole(value: object) -> bool:
    """Whether `value` is a whole number (numpy's too), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_keys(what: str, given: Any, known: Collection[str]) -> None:
    """A ValueError unless `given` is a mapping whose keys are all in `known`: it names the
    first other key, the closest known one ("did you mean", as config files get, core/schema.py)
    and every known key. Before, `Task(**overrides)` and the like raised Python's TypeError
    ("unexpected keyword argument"), naming no alternative."""
    if not isinstance(given, Mapping):
        raise ValueError(f"{what} {given!r}: expected a dict of {', '.join(known)}")
    for key in given:
        if key not in known:
            hint = did_you_mean(str(key), known)
            raise ValueError(f"{what} {key!r}: no such key{hint}; known keys: {', '.join(known)}")


def fields_of(cls: type) -> tuple[str, ...]:
    """The names a dataclass `cls` takes as keywords (its `init` fields), in order."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


def _check(task: Task, name: str, ok: Callable[[float], bool], expected: str) -> None:
    """ValueError naming the field, its value and `expected` unless it is a finite real
    number for which ok(value) holds."""
    value = getattr(task, name)
    if not (finite_real(value) and ok(value)):
        raise ValueError(f"task {task.name!r} {name} {value!r}: expected {expected}")


def Hover(**overrides: object) -> Task:  # noqa: N802 (a task factory reads as a class)
    """Hold a spot from random starts within 1 m (the PPO example's task)."""
    return Task(**{"name": "hover", **overrides})  # type: ignore[arg-type]


def Goal(**overrides: object) -> Task:  # noqa: N802
    """Fly from a hover to a goal 2-5 m away in a random direction and stop there: terminated
    with the bonus once within 0.2 m at under 0.5 m/s."""
    base = {
        "name": "goal",
        "start_radius_m": 0.2,
        "start_speed_m_s": 0.1,
        "start_tilt_deg": 2.0,
        "goal_min_m": 2.0,
        "goal_max_m": 5.0,
        "max_error_m": 8.0,
        "goal_bonus": 20.0,
    }
    return Task(**{**base, **overrides})  # type: ignore[arg-type]


def WindHover(**overrides: object) -> Task:  # noqa: N802
    """Hover in a 4 m/s west wind with Dryden turbulence (core/wind.py)."""
    wind = WindConfig(enabled=True, speed_m_s=4.0, from_deg=270.0, turbulence=True)
    return Task(**{"name": "wind", "wind": wind, **overrides})  # type: ignore[arg-type]


TASKS = {"hover": Hover, "goal": Goal, "wind": WindHover}


def row_square_sum(v: np.ndarray) -> np.ndarray:
    """(n,) sums of squares of the rows of `v` (n, k), column by column: the numbers of
    `np.square(v).sum(axis=1)` (a reduction over k < 8 adds in order), several times faster
    than reducing along the short axis."""
    total = v[:, 0] * v[:, 0]
    for j in range(1, v.shape[1]):
        total += v[:, j] * v[:, j]
    return total


def row_norm(v: np.ndarray) -> np.ndarray:
    """(n,) Euclidean norms of the rows of `v` (n, k): `np.linalg.norm(v, axis=1)`, bit for
    bit, faster (row_square_sum)."""
    return np.sqrt(row_square_sum(v))


def _unit(rng: np.random.Generator, k: int) -> np.ndarray:
    v = rng.normal(size=(k, 3))
    return v / np.maximum(row_norm(v), 1e-12)[:, None]  # row_norm: np.linalg.norm's bits


def _in_ball(rng: np.random.Generator, k: int, radius: float) -> np.ndarray:
    """k points uniform in a ball of `radius` m."""
    return _unit(rng, k) * (radius * rng.uniform(0.0, 1.0, k) ** (1 / 3))[:, None]
