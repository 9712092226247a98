"""Multi-agent PettingZoo environments: a swarm in one simulator, the radio in the loop.

`SwarmParallelEnv` is a `pettingzoo.ParallelEnv` of `swarm_size` UAVs (agents "uav_0"...)
flying one swarm task (envs/swarm_tasks.py: "formation", "swap") in one simulator. Each
agent's observation is its own flight row (envs/observations.py, error to its own target)
followed by its `neighbours` nearest neighbours as it heard them (envs/hearing.py): by default
over the simulated radio — every agent beacons its sensed state at `beacon_hz` on a channel
with the given `radio` parameters (range, loss, latency, jitter: core/comms/channels.py
`ChannelConfig`), so what an agent knows of the others is late, lossy and range-limited, as
on real links; `hear="truth"` gives the true neighbours instead (for comparison).

An agent that crashes (envs/tasks.py) or collides with another dies: terminated that step,
its body taken out of the world and its radio silent; it is absent from `agents` from then on.
At `max_episode_steps` every remaining agent is truncated. `reset(seed=s)` builds the
simulator from `s` (same seed, same episode bit for bit); `reset()` builds it from a seed drawn
from the env's generator (a dead UAV is not revived in place). It takes no reset option: one
given is named in a `ResetOptionWarning` (PettingZoo's API test passes one and expects a reset).

    env = parallel_env("swap", swarm_size=6, action="velocity")
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        obs, rewards, terminations, truncations, infos = env.step(actions)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo import ParallelEnv

from skyswarm.core.comms.channels import DEFAULT_CHANNELS, ChannelConfig, CommsConfig
from skyswarm.core.comms.dispatcher import attach_comms
from skyswarm.envs.actions import ActionCheck
from skyswarm.envs.batch import BatchOwner, FlightBatch, flight_settings
from skyswarm.envs.hearing import WIDTH, Hearing, RadioHearing, TruthHearing, neighbour_block
from skyswarm.envs.single import SEED_SPACE, EpisodeEndedError, unknown_option
from skyswarm.envs.swarm_tasks import SWARM_TASKS, SwarmTask
from skyswarm.envs.tasks import check_keys, fields_of, finite_real, whole

# the swarm env's keywords beside FlightSettings' (for an unknown keyword's "did you mean")
OWN_KEYWORDS = ("task", "swarm_size", "neighbours", "hear", "radio", "beacon_hz", "render_mode",
                "task_overrides")  # fmt: skip


def make_swarm_task(task: str | SwarmTask, overrides: dict[str, Any] | None = None) -> SwarmTask:
    """A swarm task by name (SWARM_TASKS) or as given, with `overrides` of its fields (an
    unknown field is a ValueError with the closest one)."""
    overrides = {} if overrides is None else overrides
    cls = type(task) if isinstance(task, SwarmTask) else SwarmTask
    check_keys("task_overrides", overrides, fields_of(cls))
    if isinstance(task, SwarmTask):
        return replace(task, **overrides)
    if task not in SWARM_TASKS:
        names = ", ".join(map(repr, SWARM_TASKS))
        raise ValueError(f"swarm task {task!r}: expected one of {names}")
    return SWARM_TASKS[task](**overrides)


class ResetOptionWarning(UserWarning):
    """A reset option the swarm env does not take, ignored (`SwarmParallelEnv.reset`); make it
    an error with `warnings.simplefilter("error", ResetOptionWarning)`."""


class SwarmParallelEnv(BatchOwner, ParallelEnv):
    """A swarm task as a PettingZoo parallel env (see the module docstring and docs/rl.md)."""

    metadata = {"name": "skyswarm_swarm_v0", "render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(
        self,
        task: str | SwarmTask = "formation",
        swarm_size: int = 4,
        neighbours: int = 3,
        hear: str = "radio",
        radio: dict[str, Any] | None = None,
        beacon_hz: float = 10.0,
        render_mode: str | None = None,
        task_overrides: dict[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        if hear not in ("radio", "truth"):
            raise ValueError(f"hear {hear!r}: expected 'radio' or 'truth'")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode {render_mode!r}: expected 'rgb_array' or None")
        for name, value, low in (("swarm_size", swarm_size, 1), ("neighbours", neighbours, 0)):
            if not (whole(value) and value >= low):
                raise ValueError(f"{name} {value!r}: expected a whole number >= {low}")
        if not (finite_real(beacon_hz) and beacon_hz > 0.0):
            raise ValueError(f"beacon_hz {beacon_hz!r}: expected a finite number > 0")
        self.task = make_swarm_task(task, task_overrides)
        self.settings = flight_settings(settings, OWN_KEYWORDS)
        self.n, self.k, self.hear = int(swarm_size), int(neighbours), hear
        radio = {} if radio is None else radio
        check_keys("radio", radio, fields_of(ChannelConfig))
        self.channel = ChannelConfig(**{**_default_radio(), **radio})
        self.beacon_hz = beacon_hz
        self.render_mode = render_mode
        self.name = f"skyswarm/{self.task.name} parallel env"
        self.possible_agents = [f"uav_{i}" for i in range(self.n)]
        self.agents: list[str] = []
        self._batch = self._build(0)
        d = self._batch.obs_size + self.k * WIDTH
        obs = gym.spaces.Box(-np.inf, np.inf, (d,), np.float32)
        act = gym.spaces.Box(-1.0, 1.0, (self._batch.level.k,), np.float32)
        self.observation_spaces = {a: obs for a in self.possible_agents}
        self.action_spaces = {a: act for a in self.possible_agents}
        self._check = ActionCheck(self.name, self.possible_agents, self._batch.level)
        self._rng = np.random.default_rng()
        self._view: Any = None

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gym.spaces.Box:
        return self.action_spaces[agent]

    def _build(self, seed: int, rng: np.random.Generator | None = None) -> FlightBatch:
        """A new simulator from `seed`; `rng` (None: nominal) draws its randomised wind,
        sensors and radio loss (settings.randomize)."""
        origin = self.task.origins(self.n)
        batch = FlightBatch(
            self.n, self.task.flight, self.settings, seed=seed, origin=origin, rng=rng
        )
        channel = self.channel
        if rng is not None:
            channel = replace(channel, loss=self.settings.randomize.loss(rng, channel.loss))
        comms = CommsConfig.from_dict({"channels": {"radio": _as_dict(channel)}})
        attach_comms(batch.sim, comms)
        if self.hear == "radio":
            self._hearing: Hearing = RadioHearing(batch.swarm.beacons(1.0 / self.beacon_hz))
        else:
            self._hearing = TruthHearing(batch.swarm, self.channel.range_m)
        return batch

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        """A new episode (see the module docstring). The env takes no reset option; one given
        is named in a `ResetOptionWarning`, not refused: PettingZoo's own `parallel_api_test`
        resets with `options={"options": 1}` and expects that to work."""
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"{self.name}: reset options {options!r}: expected a dict or None")
        for key in options or {}:
            message = f"{unknown_option(self.name, key, ())}: ignored"
            warnings.warn(message, ResetOptionWarning, stacklevel=2)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._close_batch()
        self._batch = self._build(int(self._rng.integers(SEED_SPACE)), self._rng)
        b = self._batch
        b.restart(b.index, self._rng)
        b.target[:] = self.task.targets(b.origin)
        self.agents = self.possible_agents[:]
        obs = self._observe(b.observe())
        err = np.linalg.norm(b.target - b.swarm.sim.world.state.position[b.swarm.rows], axis=1)
        return obs, {a: {"position_error_m": float(err[i])} for i, a in self._live()}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        if not self.agents:
            raise EpisodeEndedError(f"{self.name}: step() with no agent left: call reset()")
        b = self._batch
        a = self._gather(actions)
        out = b.step(a)
        st = b.swarm.sim.world.state
        penalty, collided = self.task.proximity(st.position[b.swarm.rows], b.live)
        crashed = out.crashed | collided
        reward = np.where(crashed, -self.task.flight.crash_penalty, out.reward - penalty)
        truncated = out.truncated & ~crashed
        live = self._live()
        obs = self._observe(out.obs if self.settings.observe == "truth" else b.observe())
        rew = {a: float(reward[i]) for i, a in live}
        term = {a: bool(crashed[i]) for i, a in live}
        trunc = {a: bool(truncated[i]) for i, a in live}
        infos = {
            a: {
                "position_error_m": float(out.error[i]),
                "collided": bool(collided[i]),
                "at_target": bool(out.error[i] < self.task.arrival_m),
            }
            for i, a in live
        }
        dead = [i for i, _ in live if crashed[i]]
        if dead:
            b.retire(np.array(dead), "collision or crash (RL env)")
        self.agents = [a for i, a in live if not (crashed[i] or truncated[i])]
        return {a: obs[a] for _, a in live}, rew, term, trunc, infos

    def _gather(self, actions: dict[str, Any]) -> np.ndarray:
        """(n, k) actions of every slot (zeros for the dead), checked (ActionError)."""
        live = self._live()
        out = np.zeros((self.n, self._batch.level.k))
        out[[i for i, _ in live]] = self._check.each(actions, [a for _, a in live])
        return out

    def _observe(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Each live agent's observation: its flight row and its neighbour block."""
        b = self._batch
        if self.k:
            own = b.target - rows[:, 0:3]  # position = target - error (of the obs source)
            block = neighbour_block(self._hearing.heard(), own, rows[:, 3:6], self.k)
            rows = np.concatenate([rows, block], axis=1)
        return {a: rows[i] for i, a in self._live()}

    def _live(self) -> list[tuple[int, str]]:
        index = {a: i for i, a in enumerate(self.possible_agents)}
        return [(index[a], a) for a in self.agents]

    def render(self) -> np.ndarray | None:
        """ "rgb_array": the group through the offscreen renderer (the `gui` extra)."""
        if self.render_mode != "rgb_array":
            return None
        from skyswarm.envs.render import EnvView

        if self._view is None:
            reach = float(np.abs(self._batch.origin).max()) + 4.0
            self._view = EnvView(self._batch, window=False, distance_m=3.0 * reach)
        centre = self._batch.target.mean(axis=0)
        return self._view.draw_at(centre)

    def close(self) -> None:
        """Release the simulator: no agent is left until `reset()` builds a new one."""
        self._close_batch()
        self.agents = []


def parallel_env(task: str | SwarmTask = "formation", **kwargs: Any) -> SwarmParallelEnv:
    """PettingZoo's conventional constructor: `parallel_env("swap", swarm_size=6)`."""
    return SwarmParallelEnv(task, **kwargs)


def _default_radio() -> dict[str, Any]:
    return _as_dict(DEFAULT_CHANNELS["radio"])


def _as_dict(channel: ChannelConfig) -> dict[str, Any]:
    return {k: v for k, v in asdict(channel).items() if not (k == "range_m" and v == np.inf)}
