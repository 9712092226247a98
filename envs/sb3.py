"""Stable-Baselines3 on the native vector env: `SB3VecEnv` adapts `FlightVectorEnv` to SB3's
`VecEnv` (the `rl` extra: stable-baselines3, torch). Imported only by training code.

SB3 autoresets as the native env does (SAME_STEP): the observation returned for a finished
sub-environment is the first of its next episode; SB3 wants the last one in
`infos[i]["terminal_observation"]` and a time-limit end flagged `infos[i]["TimeLimit.truncated"]`
(so PPO bootstraps through truncations). `seed(s)` makes the next `reset()` rebuild the
simulator from `s` (the native env takes one seed for all its slots).

    from stable_baselines3 import PPO
    venv = SB3VecEnv(FlightVectorEnv(32, task="hover"))
    model = PPO("MlpPolicy", venv, seed=0).learn(100_000)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvStepReturn

from skyswarm.envs.vector import FlightVectorEnv


class SB3VecEnv(VecEnv):
    """A `FlightVectorEnv` as an SB3 `VecEnv` (see the module docstring)."""

    def __init__(self, envs: FlightVectorEnv) -> None:
        self.envs = envs
        self.render_mode = envs.render_mode
        super().__init__(envs.num_envs, envs.single_observation_space, envs.single_action_space)
        self._actions: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        obs, _ = self.envs.reset(seed=seed)
        self._reset_seeds()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.float32)

    def step_wait(self) -> VecEnvStepReturn:
        assert self._actions is not None, "step_async first"
        obs, rewards, term, trunc, infos = self.envs.step(self._actions)
        error = infos["position_error_m"]
        out = [{"position_error_m": float(e)} for e in error]
        if "final_obs" in infos:
            for i in np.flatnonzero(infos["_final_obs"]):
                out[i]["terminal_observation"] = infos["final_obs"][i]
                out[i]["TimeLimit.truncated"] = bool(trunc[i])
        return obs, rewards.astype(np.float32), term | trunc, out

    def close(self) -> None:
        self.envs.close()

    # SB3's attribute plumbing: one env object holds every slot
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        return [getattr(self.envs, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        setattr(self.envs, attr_name, value)

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kw: Any) -> list:
        return [getattr(self.envs, method_name)(*args, **kw)] * len(self._get_indices(indices))

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [self.envs.render()] + [None] * (self.num_envs - 1)
