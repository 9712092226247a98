"""One simulator holding every RL episode as a slot: the engine under all the environments.

`FlightBatch` flies n UAVs (one per sub-environment or agent) in one `Simulator` and one
`Swarm`: a step writes the n actions as one command (uav/commands.py), runs the physics ticks
of one control period (8 at 50 Hz control and 400 Hz physics) for all of them at once (on the
fast engine in one compiled call, `_fly_ticks`, when nothing else acts in a tick), and
computes the n observations, rewards and ends over arrays. A slot restarts by teleporting its
body and clearing its controller memory (`Swarm.restart`; on the fast engine with ideal
sensors one compiled pass, envs/judge.py `teleport`, writes the same): nothing is rebuilt. Slots sit
`spacing_m` apart on a grid; a slot ends long before it could reach another (`max_error_m`).

    batch = FlightBatch(64, Hover(), FlightSettings(physics="fast"), seed=0)
    obs = batch.restart(np.arange(64), rng)           # (64, 19) float32
    out = batch.step(np.zeros((64, 4)))               # StepOut of arrays
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.core.backends import World
from skyswarm.core.backends.fast import FastWorld
from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.resources import named_or_path, shipped
from skyswarm.core.simulator import Simulator
from skyswarm.envs.actions import ActionLevel, action_level
from skyswarm.envs.judge import (
    OBS_6D,
    OBS_NONE,
    OBS_QUATERNION,
    judge,
    judge_params,
    teleport,
)
from skyswarm.envs.observations import ObservationSpec, observe, read_kinematics
from skyswarm.envs.randomize import Randomization
from skyswarm.envs.tasks import Task, check_keys, fields_of, finite_real, row_norm, whole
from skyswarm.uav.config import UavConfig, load_uav_config
from skyswarm.uav.estimation import euler_to_quat
from skyswarm.uav.sensors.config import PRESETS, SensorsConfig
from skyswarm.uav.swarm import Swarm

SLOT_GAP_M = 1.0  # m kept between two slots' reaches: more than two airframes' half-spans
MAX_EPISODE_STEPS = 500  # steps, the envs' default truncation (10 s at 50 Hz)


@dataclass(frozen=True)
class FlightSettings:
    """How the environments fly: backend, rates, action level, observation, sensors."""

    physics: str = "fast"  # "fast" (compiled arrays) or "bullet" (pybullet, fidelity checks)
    control_hz: float = 50.0  # policy steps per simulated second
    tick_s: float = 0.0025  # s, physics tick (400 Hz)
    action: str = "body_rates"  # envs/actions.py LEVELS
    rotation: str = "6d"  # "6d" or "quaternion"
    observe: str = "truth"  # "truth" or "estimate"
    sensors: str = "ideal"  # [uav.sensors] preset: "ideal" or "qrsim"
    last_action: bool = True
    max_episode_steps: int | None = MAX_EPISODE_STEPS  # truncation (10 s at 50 Hz); None: never
    spacing_m: float = 50.0  # m between slots
    randomize: Randomization = Randomization()  # envs/randomize.py (a dict of its fields too)
    # The flight model the policies learn on: a shipped airframe name or a TOML path. The envs
    # pin quad_x_simple (thrust lag, linear drag, no ground effect or legs), the model the RL
    # numbers of docs/rl.md and the PPO smoke budget were measured on; "quad_x" trains on the
    # full model (the PPO smoke run gained +2.9 on it against +15.9 in the same 98,304 steps).
    airframe: str = "quad_x_simple"
    # numba threads of the compiled passes (1 here: envs step by hand, with no Simulator.run to
    # measure as [simulation] threads = "auto" does; 0 every core; the vector env's default is
    # 0 from 2,048 slots, envs/vector.py). Results
    # never depend on it (bench/rl_envs.py --threads 1 2 measures the speed).
    threads: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.randomize, dict):
            check_keys("randomize", self.randomize, fields_of(Randomization))
            object.__setattr__(self, "randomize", Randomization(**self.randomize))
        for name in ("control_hz", "tick_s", "spacing_m"):
            value = getattr(self, name)
            if not (finite_real(value) and value > 0.0):
                raise ValueError(f"{name} {value!r}: expected a finite number > 0")
        self.ticks_per_step()  # the control period in whole ticks, or ValueError now
        limit = self.max_episode_steps
        if limit is not None and not (whole(limit) and limit >= 1):
            raise ValueError(
                f"max_episode_steps {limit!r}: expected a whole number >= 1 (None: no truncation)"
            )
        if not (whole(self.threads) and self.threads >= 0):
            raise ValueError(
                f"threads {self.threads!r}: expected a whole number >= 0 (0: every core)"
            )
        if not named_or_path(self.airframe, "airframes", Path.cwd()).is_file():
            names = ", ".join(shipped("airframes"))
            raise ValueError(
                f"airframe {self.airframe!r}: expected a shipped airframe ({names}) or an "
                "airframe TOML file"
            )
        if self.sensors not in PRESETS:
            expected = " or ".join(map(repr, PRESETS))
            raise ValueError(f"sensors {self.sensors!r}: expected {expected}")

    def ticks_per_step(self) -> int:
        ticks = 1.0 / (self.control_hz * self.tick_s)
        if not (ticks >= 1 and abs(ticks - round(ticks)) < 1e-9):
            raise ValueError(
                f"control_hz {self.control_hz!r}: expected a rate whose period is a whole "
                f"number of {self.tick_s} s ticks (e.g. 50, 100, 200, 400)"
            )
        return round(ticks)

    @property
    def observation(self) -> ObservationSpec:
        return ObservationSpec(self.rotation, self.observe, self.last_action)


def flight_settings(settings: dict[str, Any], own: tuple[str, ...] = ()) -> FlightSettings:
    """The `FlightSettings` of an env's other keyword arguments `settings`; an unknown one is
    a ValueError naming the closest of the settings and the env's `own` keywords."""
    check_keys("keyword", settings, fields_of(FlightSettings) + own)
    return FlightSettings(**settings)


@dataclass(frozen=True)
class StepOut:
    """One step of n slots: obs (n, d) float32, reward (n,) float64, crashed, reached,
    truncated (n,) bool, error (n,) m the distance to the target after the step."""

    obs: np.ndarray
    reward: np.ndarray
    crashed: np.ndarray
    reached: np.ndarray
    truncated: np.ndarray
    error: np.ndarray


class FlightBatch:
    """n UAV slots in one simulator (see the module docstring)."""

    def __init__(
        self,
        n: int,
        task: Task,
        settings: FlightSettings,
        seed: int = 0,
        uav: UavConfig | None = None,
        origin: np.ndarray | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        """`origin` (n, 3) m: each slot's frame (its task's starts and targets are relative to
        it); default a grid `spacing_m` apart. The swarm envs pass their group's layout.
        `rng`: draws the build's randomised wind and sensor preset (settings.randomize)."""
        if n < 1:
            raise ValueError(f"num_envs {n!r}: expected at least 1")
        self.n, self.task, self.settings = n, task, settings
        self.level: ActionLevel = action_level(settings.action)
        self.obs_spec = settings.observation
        self.ticks = settings.ticks_per_step()
        uav = uav or load_uav_config(named_or_path(settings.airframe, "airframes", Path.cwd()))
        rand, wind, preset = settings.randomize, task.wind, settings.sensors
        if rng is not None:
            wind, preset = rand.wind(rng, wind), rand.sensor_preset(rng, preset)
        if preset != uav.sensors.preset:
            uav = replace(uav, sensors=SensorsConfig(preset=preset, record_hz=0.0))
        if settings.observe == "estimate" and not uav.sensors.active:
            raise ValueError("observe='estimate' needs sensors: set sensors='qrsim'")
        sim_cfg = SimulationConfig(
            tick_s=settings.tick_s,
            duration_s=1e9,
            seed=seed,
            physics=settings.physics,
            threads=settings.threads,
        )
        self.sim = Simulator(sim_cfg, world=WorldConfig())
        if origin is None:
            # Slots on a grid never meet: each UAV's episode ends within task.reach_m() of
            # its origin (more than an airframe apart at the closest).
            if settings.spacing_m <= 2.0 * task.reach_m() + SLOT_GAP_M:
                need = 2.0 * task.reach_m() + SLOT_GAP_M
                raise ValueError(
                    f"spacing_m {settings.spacing_m!r}: expected more than {need:g} m (twice "
                    f"task {task.name!r}'s reach {task.reach_m():g} m plus {SLOT_GAP_M:g}): "
                    "slots closer than that can fly into each other"
                )
            side = math.ceil(math.sqrt(n))
            grid = np.indices((side, side)).reshape(2, -1).T[:n] * settings.spacing_m
            origin = np.column_stack([grid, np.zeros(n)])
        self.origin = np.array(origin, dtype=float, order="C").reshape(n, 3)  # (n, 3) m
        home = self.origin + [0.0, 0.0, task.altitude_m]
        self.swarm = Swarm(
            self.sim, uav, range(1, n + 1), home, np.zeros(n), hovering=True, wind=wind
        )
        self.index = np.arange(n)
        self.live = self.index  # (k,) the slots still flying (`retire` takes them out)
        self.target = home.copy()  # (n, 3) m, world
        self.action = np.zeros((n, self.level.k))  # the last normalised action
        self.steps = np.zeros(n, dtype=np.int64)  # steps into each slot's episode
        self.obs_size = self.obs_spec.size(self.level.k)
        self._params = judge_params(task)
        # the compiled pass computes Task's own reward and ends: a subclass that overrides
        # either is judged by its methods, on the numpy path
        cls = type(task)
        self._compiled = cls.reward is Task.reward and cls.ends is Task.ends
        if self.obs_spec.source != "truth":
            self._obs_layout = OBS_NONE  # the estimate's observations: the numpy path
        else:
            self._obs_layout = OBS_6D if self.obs_spec.rotation == "6d" else OBS_QUATERNION
        self.level.apply(self.swarm.command, self.index, self.hover_action(n))
        memory = self.swarm.cascade.memory
        # The control period's ticks in one compiled call (`_fly_ticks`) on the fast engine,
        # when the swarm's flight kernel is all that acts in a tick (`_alone`); `multi_tick`
        # False: always tick by tick (the reference the tests and bench/rl_envs.py compare)
        self.multi_tick = True
        self._fast = isinstance(self.sim.world, FastWorld)
        # an autoreset in one compiled pass (`teleport`): a world that integrates its state
        # arrays in place (the fast engine), no sensors to restart, the truth observed
        self._teleports = (
            type(self.sim.world).reset_bodies is World.reset_bodies
            and self.swarm.sensors is None
            and memory.flags.c_contiguous
            and self._obs_layout != OBS_NONE
        )

    def hover_action(self, k: int) -> np.ndarray:
        """(k, level.k) the normalised action of a level hover at rest."""
        a = np.zeros((k, self.level.k))
        if self.level.name == "motors":
            af = self.swarm.config.airframe
            a[:] = 2.0 * af.mass_kg * self.swarm.g / 4 / af.max_thrust_n - 1.0
        return a

    def restart(self, index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """New episodes for slots `index` (k,) drawn from `rng`; returns their (k, d) obs."""
        k = len(index)
        if k and self._teleports:
            return self._teleport(np.asarray(index, dtype=np.int64), rng)
        if k:
            start = self.task.sample(rng, k)
            origin = self.origin[index]
            self.swarm.restart(
                index, origin + start.offset, euler_to_quat(start.euler), start.velocity
            )
            self.target[index] = origin + start.target
            rand, airframe = self.settings.randomize, self.swarm.config.airframe
            masses = rand.masses(rng, k, airframe)
            if masses is not None:
                self.sim.world.set_mass(self.swarm.slots[index], *masses)
            motors = rand.motors(rng, k, airframe)
            if motors is not None:
                self.swarm.motors.set_params(index, *motors)
            self.action[index] = self.hover_action(k)
            self.steps[index] = 0
        return self.observe(index)

    def _teleport(self, index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """`restart` in one compiled pass (envs/judge.py `teleport`): the same draws from `rng`
        in the same order, the same writes and observations, bit for bit
        (tests/envs/test_perf_vector.py)."""
        k, swarm, st = len(index), self.swarm, self.sim.world.state
        start = self.task.sample(rng, k)
        weight = swarm.config.airframe.mass_kg * swarm.g  # N
        memory = swarm.cascade.memory
        obs = np.empty((k, self.obs_size), dtype=np.float32)
        teleport(
            index, swarm.slots, self.origin, start.offset, euler_to_quat(start.euler),
            start.velocity, start.target, st.position, st.orientation, st.linear_velocity,
            st.angular_velocity, memory.view(np.uint8).reshape(len(memory), -1),
            swarm.cascade.demand, swarm.motors.thrust, swarm.force, swarm.torque, self.target,
            self.action, self.steps, self.hover_action(1)[0], weight, weight / 4, self._params,
            self._obs_layout, self.obs_spec.last_action, obs,
        )  # fmt: skip
        rand, airframe = self.settings.randomize, swarm.config.airframe
        masses = rand.masses(rng, k, airframe)
        if masses is not None:
            self.sim.world.set_mass(swarm.slots[index], *masses)
        motors = rand.motors(rng, k, airframe)
        if motors is not None:
            swarm.motors.set_params(index, *motors)
        return obs

    def retire(self, index: np.ndarray, cause: str) -> None:
        """Kill slots `index` for good (a multi-agent episode's deaths): the simulator records
        the death, the body leaves the world, the radio falls silent; later steps skip them."""
        for i in np.asarray(index, dtype=np.intp):
            self.sim.kill(self.swarm.agents[i], cause)
        self.live = np.flatnonzero(self.swarm.alive)

    def observe(self, index: np.ndarray | None = None) -> np.ndarray:
        """(n, d) float32 observations of every slot, or (k, d) of slots `index`: the truth's
        through the compiled pass (`judge`, its reward and ends unused), the estimate's in
        numpy (envs/observations.py; the same numbers for the truth, tests/envs/test_judge.py)."""
        if self._obs_layout != OBS_NONE:
            pick = self.index if index is None else np.asarray(index, dtype=np.intp)
            k, st = len(pick), self.sim.world.state
            obs = np.empty((k, self.obs_size), dtype=np.float32)
            action = self.action[pick]
            judge(
                self.swarm.slots[pick], st.position, st.orientation, st.linear_velocity,
                st.angular_velocity, self.target[pick], action, action, self._params,
                self._obs_layout, self.obs_spec.last_action, obs, np.empty(k), np.empty(k, bool),
                np.empty(k, bool), np.empty(k),
            )  # fmt: skip
            return obs
        kin = read_kinematics(self.swarm, self.obs_spec.source, index)
        if index is None:
            return observe(self.obs_spec, kin, self.target, self.action)
        return observe(self.obs_spec, kin, self.target[index], self.action[index])

    def step(self, action: np.ndarray) -> StepOut:
        """Fly every slot one control period on `action` (n, k), normalised and checked.
        Everything after the physics is one compiled pass over the slots (envs/judge.py:
        the numbers of the numpy path, `observe` and the task's `ends` and `reward`)."""
        live = self.live
        if len(live) == self.n:  # None: every agent, without an index to check
            self.level.apply(self.swarm.command, None, action)
        else:
            self.level.apply(self.swarm.command, live, action[live])
        sim = self.sim
        if not (self.multi_tick and self._alone() and self._fly_ticks()):
            for _ in range(self.ticks):
                sim.step()
        if not self._compiled:
            return self._judge_by_the_task(action)
        st, n = sim.world.state, self.n  # rewards and ends judge the truth
        obs = np.empty((n, self.obs_size), dtype=np.float32)
        reward, dist = np.empty(n), np.empty(n)
        crashed, reached = np.empty(n, dtype=bool), np.empty(n, dtype=bool)
        action = np.ascontiguousarray(action, dtype=np.float64)
        # serial: a threaded pass (tried, 2026-11-29) halved the 2-thread step rate at 4,096
        # slots (229k against 450k agent-env-steps/s, quiet): too little work per agent
        judge(
            self.swarm.slots, st.position, st.orientation, st.linear_velocity,
            st.angular_velocity, self.target, action, self.action, self._params,
            self._obs_layout, self.obs_spec.last_action, obs, reward, crashed, reached, dist,
        )  # fmt: skip
        self.action[:] = action
        self.steps += 1
        truncated = self._truncated()
        if self._obs_layout == OBS_NONE:
            obs = self.observe()
        return StepOut(obs, reward, crashed, reached, truncated, dist)

    def _truncated(self) -> np.ndarray:
        """(n,) bool: the slots at `max_episode_steps` (never with None)."""
        limit = self.settings.max_episode_steps
        if limit is None:
            return np.zeros(self.n, dtype=bool)
        return self.steps >= limit

    def _alone(self) -> bool:
        """Whether the swarm's flight kernel is all that acts in a tick on the fast engine: the
        simulator's phases hold nothing but the swarm (`Simulator.acts_alone`: no radio, task,
        listener, environment force such as a wind field, or other controller) and the
        swarm's tick is its kernel and held wrench alone (`Swarm.kernel_alone`: no sensors,
        battery, landing gear or avoidance; every agent alive)."""
        return self._fast and self.sim.acts_alone(self.swarm) and self.swarm.kernel_alone()

    def _fly_ticks(self) -> bool:
        """The control period's ticks in one compiled call (FlightKernel.step_ticks: each chunk
        of agents flown and integrated tick after tick), bit for bit what `sim.step()` does
        that many times when `_alone`; False, with nothing changed, when the world does not
        allow it (bodies within reach of each other) or a body went far enough to have met
        another (tests/envs/test_multi_tick.py)."""
        swarm = self.swarm
        done = swarm.kernel.step_ticks(
            self.sim.world, swarm.setpoints, swarm.cascade, swarm.alive, swarm.motor_ok,
            swarm.motors.params, swarm.motors.thrust, swarm.force, swarm.torque, swarm.wind,
            self.ticks,
        )  # fmt: skip
        return done == self.ticks

    def _judge_by_the_task(self, action: np.ndarray) -> StepOut:
        """`step`'s judgement by the task's own `ends` and `reward` (a Task subclass that
        overrides them), in numpy, from the truth."""
        kin = read_kinematics(self.swarm, "truth")
        dist = row_norm(self.target - kin.position)
        speed = row_norm(kin.velocity)
        up_z = kin.rotation[:, 2, 2]  # the body z axis' world z, 1 - 2 (x^2 + y^2)
        crashed, reached = self.task.ends(dist, speed, up_z, kin.position[:, 2])
        reward = self.task.reward(
            dist, speed, kin.body_rates, action, self.action, crashed, reached
        )
        self.action[:] = action
        self.steps += 1
        truncated = self._truncated()
        return StepOut(self.observe(), reward, crashed, reached, truncated, dist)


class BatchOwner:
    """What the single, vector and parallel envs share about the FlightBatch they own and the
    offscreen view they may have opened for rendering (`_batch`, `_view` set by the env)."""

    _batch: FlightBatch
    _view: Any

    @property
    def batch(self) -> FlightBatch:
        """The simulator behind the env (read it: the swarm, the world, the radio)."""
        return self._batch

    def _close_view(self) -> None:
        if self._view is not None:
            self._view.close()
            self._view = None

    def _close_batch(self) -> None:
        """Close the view, then the simulator."""
        self._close_view()
        self._batch.sim.close()
