"""Single-agent Gymnasium environments (`gymnasium.make("skyswarm/Hover-v0")`).

`FlightEnv` is one UAV in a `FlightBatch` of one slot, with Gymnasium 1.x semantics:
`reset(seed=, options=)` returns (obs, info); `step(action)` returns (obs, reward, terminated,
truncated, info), `terminated` when the UAV crashed (or reached its goal, Goal), `truncated`
at `max_episode_steps` (500; through `gym.make`, its TimeLimit wrapper does it: the spec's
500 steps or make's `max_episode_steps=`, which make never passes on). A step after the env's
own end without `reset()` is an error, and so is an action of the wrong shape, NaN or outside
[-1, 1] (an `ActionError` naming the env, the agent and the space).
`reset(seed=s)` rebuilds the simulator from `s`, so the same seed gives the same episode bit
for bit; `reset()` without a seed teleports the UAV to a new start drawn from the env's
generator (nothing rebuilt). The env takes no reset option: `options` None or {} (Gymnasium's
default), anything else a ValueError naming the key (never ignored).

    env = FlightEnv("hover", action="body_rates", render_mode="rgb_array")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from skyswarm.core.schema import did_you_mean
from skyswarm.envs.actions import ActionCheck
from skyswarm.envs.batch import BatchOwner, FlightBatch, StepOut, flight_settings
from skyswarm.envs.tasks import TASKS, Task, check_keys, fields_of

SEED_SPACE = 2**31  # a new simulator's seed, drawn from an env's generator, is below this


class EpisodeEndedError(RuntimeError):
    """`step()` after an episode ended, without `reset()`."""


def reset_options(
    name: str, options: Mapping[str, Any] | None, accepted: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`reset`'s `options` as a dict (None: none, as Gymnasium passes by default), or a
    ValueError naming the first key the env does not take (`unknown_option`): an option the
    env would not honour is refused, never ignored."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"{name}: reset options {options!r}: expected a dict or None")
    for key in options:
        if key not in accepted:
            raise ValueError(unknown_option(name, key, accepted))
    return dict(options)


def unknown_option(name: str, key: object, accepted: tuple[str, ...]) -> str:
    """The message for a reset option `key` env `name` does not take: the closest it does."""
    takes = ", ".join(map(repr, accepted)) if accepted else "none (options=None or {})"
    hint = did_you_mean(str(key), accepted)
    return f"{name}: reset option {key!r} is not one this env takes{hint}; it takes {takes}"


def make_task(task: str | Task, overrides: dict[str, Any] | None = None) -> Task:
    """A task by name (envs/tasks.py TASKS) or as given, with `overrides` of its fields (an
    unknown field is a ValueError with the closest one)."""
    overrides = {} if overrides is None else overrides
    cls = type(task) if isinstance(task, Task) else Task
    check_keys("task_overrides", overrides, fields_of(cls))
    if isinstance(task, Task):
        return replace(task, **overrides)
    if task not in TASKS:
        raise ValueError(f"task {task!r}: expected one of {', '.join(map(repr, TASKS))}")
    return TASKS[task](**overrides)


def registered(task: str, **kwargs: Any) -> FlightEnv:
    """`gym.make`'s entry point: a FlightEnv that leaves truncation to the TimeLimit wrapper
    make adds (the spec's max_episode_steps, 500, or make's own keyword, which make keeps
    for that wrapper and never passes to the env: before, the env still ended at 500)."""
    return FlightEnv(task, max_episode_steps=None, **kwargs)


def spaces(batch: FlightBatch) -> tuple[gym.spaces.Box, gym.spaces.Box]:
    """(observation space, action space) of one agent of `batch`."""
    obs = gym.spaces.Box(-np.inf, np.inf, (batch.obs_size,), np.float32)
    act = gym.spaces.Box(-1.0, 1.0, (batch.level.k,), np.float32)
    return obs, act


def step_info(out: StepOut, row: int | slice) -> dict[str, Any]:
    return {"position_error_m": out.error[row], "crashed": out.crashed[row]}


class FlightEnv(BatchOwner, gym.Env):
    """One UAV, one task (see the module docstring and docs/rl.md)."""

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 50}

    def __init__(
        self,
        task: str | Task = "hover",
        render_mode: str | None = None,
        task_overrides: dict[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: expected 'rgb_array', 'human' or None")
        self.task = make_task(task, task_overrides)
        self.settings = flight_settings(settings, ("task", "render_mode", "task_overrides"))
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": self.settings.control_hz}
        self.name = f"skyswarm/{self.task.name} env"
        self._batch = FlightBatch(1, self.task, self.settings)
        self.observation_space, self.action_space = spaces(self._batch)
        self._check = ActionCheck(self.name, ["uav_0"], self._batch.level)
        self._ended: bool | None = None  # None: never reset
        self._view: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        reset_options(self.name, options)
        super().reset(seed=seed, options=options)
        if seed is not None or self._batch.sim.closed:  # closed: a new one, as a fresh env's
            self._close_view()
            if seed is None:
                seed = int(self.np_random.integers(SEED_SPACE))
            self._batch = FlightBatch(1, self.task, self.settings, seed=seed, rng=self.np_random)
        obs = self._batch.restart(np.arange(1), self.np_random)
        self._ended = False
        if self.render_mode == "human":
            self.render()
        return obs[0], {"position_error_m": float(np.linalg.norm(obs[0, :3]))}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._ended is None:
            raise EpisodeEndedError(f"{self.name}: step() before reset() (or after close())")
        if self._ended:
            raise EpisodeEndedError(
                f"{self.name}: step() after the episode ended (terminated or truncated): "
                "call reset() first"
            )
        out = self._batch.step(self._check(action))
        terminated = bool(out.crashed[0] or out.reached[0])
        truncated = bool(out.truncated[0]) and not terminated
        self._ended = terminated or truncated
        info = {
            "position_error_m": float(out.error[0]),
            "crashed": bool(out.crashed[0]),
            "reached": bool(out.reached[0]),
        }
        if self.render_mode == "human":
            self.render()
        return out.obs[0], float(out.reward[0]), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        """ "rgb_array": (H, W, 3) uint8 of the offscreen renderer; "human": the same in a
        window. Needs the `gui` extra (moderngl, pyglet)."""
        if self.render_mode is None:
            gym.logger.warn(f"{self.name}: render() without a render_mode")
            return None
        from skyswarm.envs.render import EnvView

        if self._view is None:
            self._view = EnvView(self._batch, window=self.render_mode == "human")
        frame = self._view.draw(0)
        return frame if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        """Release the simulator; a `reset()` after it builds a new one."""
        self._close_batch()
        self._ended = None
