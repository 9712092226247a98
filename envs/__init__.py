"""Reinforcement-learning environments over skyswarm (docs/rl.md).

Gymnasium 1.x has no plug-in discovery: importing this package registers the environments
(ids `skyswarm/<Task>-v0`). Either import it, or name it in the id and Gymnasium imports it:

    import gymnasium as gym
    env = gym.make("skyswarm.envs:skyswarm/Hover-v0")           # imports skyswarm.envs first
    import skyswarm.envs                                        # or this, then
    env = gym.make("skyswarm/Hover-v0", action="attitude", observe="estimate", sensors="qrsim")
    envs = gym.make_vec("skyswarm/Hover-v0", num_envs=1024,
                        vectorization_mode="vector_entry_point")

Single-agent: Hover-v0, Goal-v0, WindHover-v0 (envs/single.py, the native vector env
envs/vector.py as each one's `vector_entry_point`). Multi-agent PettingZoo (no registry in
PettingZoo: a constructor per convention), the radio in the loop (envs/parallel.py):

    from skyswarm.envs import parallel_env
    env = parallel_env("swap", swarm_size=6, radio={"loss": 0.2, "range_m": 30.0})

Stable-Baselines3 (the `rl` extra): envs/sb3.py `SB3VecEnv` wraps the vector env.
"""

from __future__ import annotations

import gymnasium as gym

from skyswarm.envs.actions import LEVELS, ActionError
from skyswarm.envs.batch import MAX_EPISODE_STEPS, FlightSettings
from skyswarm.envs.parallel import ResetOptionWarning, SwarmParallelEnv, parallel_env
from skyswarm.envs.single import EpisodeEndedError, FlightEnv
from skyswarm.envs.swarm_tasks import SWARM_TASKS, SwarmTask
from skyswarm.envs.tasks import TASKS, Task
from skyswarm.envs.vector import FlightVectorEnv

__all__ = [
    "LEVELS",
    "TASKS",
    "ActionError",
    "EpisodeEndedError",
    "FlightEnv",
    "FlightSettings",
    "FlightVectorEnv",
    "ResetOptionWarning",
    "SWARM_TASKS",
    "SwarmParallelEnv",
    "SwarmTask",
    "Task",
    "parallel_env",
    "ENV_IDS",
]

ENV_IDS = {
    "hover": "skyswarm/Hover-v0",
    "goal": "skyswarm/Goal-v0",
    "wind": "skyswarm/WindHover-v0",
}


def _register() -> None:
    for task, env_id in ENV_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            env_id,
            entry_point="skyswarm.envs.single:registered",
            vector_entry_point="skyswarm.envs.vector:FlightVectorEnv",
            # make's TimeLimit truncates the single env (make keeps its max_episode_steps= for
            # that wrapper: `registered` turns the env's own limit off); make_vec passes it on
            max_episode_steps=MAX_EPISODE_STEPS,
            kwargs={"task": task},
        )


_register()
