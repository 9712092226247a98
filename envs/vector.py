"""The native vector environment: N sub-environments as N slots of one simulator.

`FlightVectorEnv` follows `gymnasium.vector.VectorEnv` with autoreset in the SAME_STEP mode
(declared in `metadata["autoreset_mode"]`): when a sub-environment terminates or truncates,
the observation returned for it is already the first of its next episode; the last one is in
`infos["final_obs"]` (an object array, None for the others, mask `infos["_final_obs"]`) and
its info in `infos["final_info"]` (with its masks). A step is one compiled call for the 8
physics ticks of every slot (on the fast engine; envs/batch.py `_fly_ticks`) and compiled
passes and numpy over arrays for the rest: no Python per sub-environment (the slots that ended
are restarted together, by teleport). `reset(options={"reset_mask": mask})` restarts only the
sub-environments `mask` selects, as Gymnasium's vector envs do.

    envs = gymnasium.make_vec("skyswarm/Hover-v0", num_envs=1024,
                              vectorization_mode="vector_entry_point")
    obs, infos = envs.reset(seed=0)
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

Threads: from VECTOR_THREADS_FROM (2,048) sub-environments the vector env takes every core
unless told `threads=` (FlightSettings; results never depend on it), and its compiled passes
run threaded (from core.backends.PARALLEL_MIN slots when more than one thread is set): on 2
quiet cores 4,096 slots step 1.7x faster on two threads than on one, and about
as fast as one when other jobs load both cores (docs/rl.md).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from skyswarm.envs.actions import ActionCheck
from skyswarm.envs.batch import BatchOwner, FlightBatch, flight_settings
from skyswarm.envs.single import SEED_SPACE, EpisodeEndedError, make_task, reset_options, spaces
from skyswarm.envs.tasks import Task, whole

# Sub-environments from which the vector env's default is every core (threads = 0): the
# compiled passes' threshold when this default was measured (docs/rl.md, 4,096 slots 1.7x on
# two quiet threads); a vector env runs no `Simulator.run` that could measure it per run.
VECTOR_THREADS_FROM = 2048
OWN_KEYWORDS = ("num_envs", "task", "render_mode", "task_overrides")  # beside FlightSettings'


class FlightVectorEnv(BatchOwner, gym.vector.VectorEnv):
    """`num_envs` UAVs of one task in one simulator (see the module docstring)."""

    metadata = {
        "render_modes": ["rgb_array"],
        "render_fps": 50,
        "autoreset_mode": AutoresetMode.SAME_STEP,
    }

    def __init__(
        self,
        num_envs: int = 1,
        task: str | Task = "hover",
        render_mode: str | None = None,
        task_overrides: dict[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        if not (whole(num_envs) and num_envs >= 1):
            raise ValueError(f"num_envs {num_envs!r}: expected a whole number >= 1")
        if render_mode not in (None, "rgb_array"):  # render() would return None for it
            raise ValueError(f"render_mode {render_mode!r}: expected 'rgb_array' or None")
        self.task = make_task(task, task_overrides)
        self.num_envs = int(num_envs)
        if "threads" not in settings:  # every core where two threads pay on a quiet machine
            settings["threads"] = 0 if self.num_envs >= VECTOR_THREADS_FROM else 1
        self.settings = flight_settings(settings, OWN_KEYWORDS)
        self.render_mode = render_mode
        self.name = f"skyswarm/{self.task.name} vector env"
        self._batch = FlightBatch(self.num_envs, self.task, self.settings)
        self.single_observation_space, self.single_action_space = spaces(self._batch)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        names = [f"env {i}" for i in range(self.num_envs)]
        self._check = ActionCheck(self.name, names, self._batch.level, batched=True)
        self._rng = np.random.default_rng()
        self._started = False
        self._view: Any = None

    def reset(
        self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Every sub-environment anew, or those of `options["reset_mask"]` (Gymnasium's partial
        reset: a bool array (num_envs,) with at least one True; the others keep their episodes
        and the returned obs holds their current observations). `seed` (an int; a list takes
        its first) rebuilds the simulator from it: the same seed gives the same episodes bit for
        bit; the simulator is every sub-environment's, so a seed resets them all (a seed with a
        partial mask is a ValueError). Any other option is a ValueError naming it."""
        mask = self._reset_mask(reset_options(self.name, options, ("reset_mask",)))
        if isinstance(seed, list | tuple):
            seed = seed[0]
        if mask is not None and not mask.all():
            if seed is not None:
                raise ValueError(
                    f"{self.name}: reset(seed=, options={{'reset_mask': ...}}): a seed rebuilds "
                    "the one simulator of every sub-environment: reset them all with a seed, or "
                    "some of them without one"
                )
            if not self._started:
                raise ValueError(
                    f"{self.name}: a partial reset_mask before the first full reset() (or after "
                    "close()): the other sub-environments have no episode to keep"
                )
            obs = self._batch.observe()  # the others' current observations (a step's own)
            index = np.flatnonzero(mask)
            obs[index] = self._batch.restart(index, self._rng)
            return obs, {}
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        elif self._batch.sim.closed:  # after close(): a new simulator, as a fresh env's
            seed = int(self._rng.integers(SEED_SPACE))
        if seed is not None:
            self._batch = FlightBatch(
                self.num_envs, self.task, self.settings, seed=seed, rng=self._rng
            )
            self._close_view()
        obs = self._batch.restart(np.arange(self.num_envs), self._rng)
        self._started = True
        return obs, {}

    def _reset_mask(self, options: dict[str, Any]) -> np.ndarray | None:
        """`options["reset_mask"]` checked as Gymnasium's vector envs check it (a ValueError
        naming what is wrong), or None without one."""
        if "reset_mask" not in options:
            return None
        given = options["reset_mask"]
        mask = np.asarray(given)
        if mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
            raise ValueError(
                f"{self.name}: reset_mask {given!r}: expected a bool array of shape "
                f"({self.num_envs},), True for each sub-environment to reset"
            )
        if not mask.any():
            raise ValueError(f"{self.name}: reset_mask selects no sub-environment (all False)")
        return mask

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise EpisodeEndedError(f"{self.name}: step() before reset() (or after close())")
        out = self._batch.step(self._check(actions))
        terminated = out.crashed | out.reached
        truncated = out.truncated & ~terminated
        every = np.ones(self.num_envs, dtype=bool)
        infos: dict[str, Any] = {}
        for key, value in (
            ("position_error_m", out.error),
            ("crashed", out.crashed),
            ("reached", out.reached),
        ):  # the single env's info, batched as gymnasium's vector envs batch it
            infos[key], infos[f"_{key}"] = value, every
        done = np.flatnonzero(terminated | truncated)
        obs = out.obs
        if len(done):
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[done] = True
            final = np.empty(self.num_envs, dtype=object)  # None in every entry
            final[done] = list(out.obs[done])
            infos["final_obs"], infos["_final_obs"] = final, mask
            infos["final_info"] = {
                "position_error_m": np.where(mask, out.error, 0.0),
                "_position_error_m": mask,
                "crashed": out.crashed & mask,
                "_crashed": mask,
                "reached": out.reached & mask,
                "_reached": mask,
            }
            infos["_final_info"] = mask
            obs[done] = self._batch.restart(done, self._rng)  # out.obs is this step's own
        return obs, out.reward, terminated, truncated, infos

    def render(self) -> np.ndarray | None:
        """ "rgb_array": sub-environment 0 through the offscreen renderer (the `gui` extra)."""
        if self.render_mode != "rgb_array":
            return None
        from skyswarm.envs.render import EnvView

        if self._view is None:
            self._view = EnvView(self._batch, window=False)
        return self._view.draw(0)

    def close_extras(self, **kwargs: Any) -> None:
        """Release the simulator; a `reset()` after it builds a new one."""
        self._close_batch()
        self._started = False
