"""The Simulator: world, agents, tasks, dispatcher, faults and recorder, ticked in fixed phases."""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import skyswarm.core.jit as jit  # compile_ahead only: this module compiles nothing itself
from skyswarm.core import faults
from skyswarm.core.agent import Agent, AgentId, PhysicalAgent
from skyswarm.core.backends import PARALLEL_MIN, make_world, set_threads, thread_budget
from skyswarm.core.collisions import CollisionMonitor
from skyswarm.core.comms.dispatcher import comms_from_scenario
from skyswarm.core.config import ScenarioConfig, SimulationConfig, WorldConfig
from skyswarm.core.hooks import (
    Controller,
    DeathListener,
    EnvironmentForce,
    FaultCapable,
    Registry,
    TickListener,
)
from skyswarm.core.tasks import Task, TaskScheduler
from skyswarm.core.thread_tuner import ThreadTuner

if TYPE_CHECKING:
    from skyswarm.core.comms.dispatcher import MessageDispatcher
    from skyswarm.core.mission import Mission
    from skyswarm.core.recorder import Recorder

STREAMS = ("mission", "comms", "faults", "environment", "sensors")
# Every value `Simulator.outcome()` reports (summary.json `outcome`; app/exits.py's exit codes).
OUTCOMES = (
    "target reached",
    "plan exhausted",
    "time limit",
    "all agents lost",
    "stopped",
    "stepped",
)


class RandomStreams:
    """One numpy Generator per subsystem, all spawned from the run's seed.

    Nothing in skyswarm calls `np.random.*` module functions: a subsystem draws only from its own
    stream, so adding draws in one subsystem never shifts another's numbers. The streams are
    `mission`, `comms`, `faults`, `environment` and `sensors`; a simulation's are `sim.rng`
    (a mission draws from `self.sim.rng.mission`).

        from skyswarm import RandomStreams

        rng = RandomStreams(seed=7)
        noise = rng.sensors.normal(0.0, 0.1, size=(4, 3))  # a numpy Generator: (4, 3) draws
        again = RandomStreams(seed=7).sensors.normal(0.0, 0.1, size=(4, 3))
        print((noise == again).all())  # True: same seed, same numbers

        busy = RandomStreams(seed=7)
        busy.mission.random(1_000)  # many more draws in the mission's stream ...
        print(busy.faults.exponential() == RandomStreams(seed=7).faults.exponential())  # True
    """

    def __init__(self, seed: int) -> None:
        self.seed = int(seed)
        children = np.random.SeedSequence(self.seed).spawn(len(STREAMS))
        for name, child in zip(STREAMS, children):
            setattr(self, name, np.random.Generator(np.random.PCG64(child)))

    mission: np.random.Generator
    comms: np.random.Generator
    faults: np.random.Generator
    environment: np.random.Generator
    sensors: np.random.Generator


class Simulator:
    """Container of the world and every agent; `step()` runs one tick in the phase order of
    docs/architecture.md (The tick).

    Extension points, one registry per phase (Protocols and examples in core/hooks.py):
    `add_pre_tick` (phase 2), `add_controller` (3), `add_environment` (4), `add_post_tick` (6)
    and `add_death_listener`; each has its `remove_…`. Phase 1 is the comms `dispatcher`.

    Build one from a scenario, advance it by ticks (`step`) or seconds (`run`), then `finish`
    (the mission's teardown and the summary) and `close`:

        from skyswarm import Simulator, load_scenario

        scenario = load_scenario("hover", ["agents.count=2", "simulation.duration_s=0.5"])
        sim = Simulator.from_scenario(scenario)  # no results_dir: nothing is written
        try:
            sim.step()  # one tick, phases 1 to 6
            print(sim.tick, sim.time_s)  # 1 0.0025
            print(sim.run(until_s=0.25))  # duration: stepped on to t = 0.25 s
            print(sim.run())  # duration: on to the scenario's 0.5 s
            summary = sim.finish()
            print(summary["outcome"], summary["ticks"])  # target reached 200
        finally:
            sim.close()
    """

    def __init__(
        self,
        settings: SimulationConfig | None = None,
        world: WorldConfig | None = None,
        base_dir: Path | str | None = None,
    ) -> None:
        self.settings = settings or SimulationConfig()
        self.world = make_world(self.settings.physics, self.settings.tick_s, self.settings.gravity)
        self._own_threads()  # numba's, for this process (core/backends)
        self._tuner: ThreadTuner | None = None  # threads = "auto" (`_thread_tuner`)
        self.rng = RandomStreams(self.settings.seed)
        self.tasks = TaskScheduler(self.world.ticks_for)
        self.tasks.on_error = self._task_failed
        self.agents: dict[AgentId, Agent] = {}
        self.dispatcher: MessageDispatcher | None = None  # phase 1 (attach_comms sets it)
        self._pre_tick = Registry[TickListener]("pre-tick listener")
        self._controllers = Registry[Controller]("controller")
        self._environment = Registry[EnvironmentForce]("environment force")
        self._post_tick = Registry[TickListener]("post-tick listener")
        self._death_listeners = Registry[DeathListener]("death listener")
        self.deaths: list[faults.DeathEvent] = []
        self.fault_injector = faults.FaultInjector(self)  # install_faults starts its processes
        self.collision_monitor: CollisionMonitor | None = None  # set by install_faults
        self.scenario: ScenarioConfig | None = None  # the scenario of from_scenario
        self.mission: Mission | None = None
        self.recorder: Recorder | None = None
        self.stop_reason = ""  # run()'s "duration" / "mission done" / "stopped"; "" never run
        self._verdict: str | None = None  # given with request_stop(outcome=...)
        self.events: Any = None  # core.events.EventScheduler of the scenario's [[events]]
        self._stop_requested = False
        self.closed = False  # close() released the world
        self.wall_s = 0.0
        self.compile_s = 0.0  # set-up time compiling or loading kernels (core/jit.py)
        self._base_dir = Path(base_dir) if base_dir else Path.cwd()
        if world is not None:
            self._build_scenery(world)

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_scenario(
        cls, scenario: ScenarioConfig, results_dir: Path | str | None = None
    ) -> Simulator:
        """Build the world, the mission and its agents, and (optionally) the results recorder."""
        sim = cls(scenario.simulation, scenario.world, scenario.base_dir)
        sim.scenario = scenario
        comms_from_scenario(sim, scenario)  # dispatcher + base stations, before the mission
        mission = scenario.mission_class(sim, scenario)
        sim.mission = mission
        mission.setup()
        sim.install_faults(scenario.faults)
        if scenario.events:  # [[events]]: fired in phase 6, after the fault injector
            from skyswarm.core.events import install_events

            sim.events = install_events(sim, scenario.events)
        if results_dir is not None:
            from skyswarm.core.recorder import Recorder

            sim.recorder = Recorder(Path(results_dir), sim, scenario)
            sim.add_post_tick(sim.recorder.post_tick)
        if mission.overrides("pre_tick"):
            sim.add_pre_tick(mission.pre_tick)
        if mission.overrides("post_tick"):
            sim.add_post_tick(mission.post_tick)
        if results_dir is not None:  # after the mission's: samples what the views show
            from skyswarm.core.timeline import Timeline

            sim.add_post_tick(Timeline(Path(results_dir), sim).post_tick)
        sim.compile_kernels()
        return sim

    def compile_kernels(self) -> float:
        """Compile (or load from the cache) every kernel the modules imported so far call,
        outside the clock (core/jit.py `compile_ahead`); adds the seconds to `compile_s`.
        `from_scenario` and `run` call it; a program stepping by hand may call it first.
        Cached kernels load without numba's full context refresh (core/kernel_loads.py)."""
        from skyswarm.core.kernel_loads import cached_loads_without_refresh

        with cached_loads_without_refresh():
            spent = jit.compile_ahead()
        self.compile_s += spent
        return spent

    def _build_scenery(self, cfg: WorldConfig) -> None:
        if cfg.ground:
            self.world.add_ground()
        if cfg.terrain:
            self.world.add_terrain(self._base_dir / cfg.terrain, cfg.terrain_cell_m)
        if cfg.heightfield:
            from skyswarm.core.backends.terrain import load_height_grid

            path = self._base_dir / cfg.heightfield
            hf = load_height_grid(path, cfg.heightfield_cell_m, cfg.heightfield_origin)
            self.world.add_heightfield(hf)
        for ob in cfg.obstacles:
            if ob.type == "box":
                self.world.add_box(ob.center, ob.size, np.radians(ob.yaw_deg))
            else:
                self.world.add_mesh(self._base_dir / ob.mesh, ob.center, ob.scale)

    def add_agent(self, agent: Agent) -> None:
        if agent.id in self.agents:
            raise ValueError(f"agent id {agent.id} is already used in this run")
        self.agents[agent.id] = agent
        if self.dispatcher is not None:
            self.dispatcher.sync()  # the new agent gets its transceiver at once

    @property
    def physical_agents(self) -> list[PhysicalAgent]:
        return [a for a in self.agents.values() if isinstance(a, PhysicalAgent)]

    def every(
        self,
        period_s: float,
        fn: Callable[[], Any],
        phase_s: float = 0.0,
        deadline_s: float | None = None,
        owner: Any = None,
        name: str | None = None,
    ) -> Task:
        """A periodic task; first run at the first tick >= now that matches the phase."""
        return self.tasks.every(
            period_s, fn, phase_s, deadline_s, now_tick=self.world.tick, owner=owner, name=name
        )

    # -- time -----------------------------------------------------------------------------
    @property
    def tick(self) -> int:
        return self.world.tick

    @property
    def time_s(self) -> float:
        return self.world.time_s

    # -- the hooks of each phase (core/hooks.py) -------------------------------------------
    def add_pre_tick(self, listener: TickListener) -> None:
        """Phase 2, after the due tasks: `listener(world)` every tick, in registration order."""
        self._pre_tick.add(listener)

    def remove_pre_tick(self, listener: TickListener) -> None:
        self._pre_tick.remove(listener)

    def add_controller(self, controller: Controller) -> None:
        """Phase 3: `controller(sim)` every tick turns setpoints into wrenches."""
        self._controllers.add(controller)

    def remove_controller(self, controller: Controller) -> None:
        self._controllers.remove(controller)

    def add_environment(self, force: EnvironmentForce) -> None:
        """Phase 4, before the physics step: `force(sim)` every tick (wind, drag, ...)."""
        self._environment.add(force)

    def remove_environment(self, force: EnvironmentForce) -> None:
        self._environment.remove(force)

    def add_post_tick(self, listener: TickListener) -> None:
        """Phase 6, after the state read: `listener(world)` every tick, in registration order."""
        self._post_tick.add(listener)

    def remove_post_tick(self, listener: TickListener) -> None:
        self._post_tick.remove(listener)

    def add_death_listener(self, listener: DeathListener) -> None:
        """`listener(event)` once per death, after the death is recorded."""
        self._death_listeners.add(listener)

    def remove_death_listener(self, listener: DeathListener) -> None:
        self._death_listeners.remove(listener)

    # What is registered, in call order (read-only: register with the methods above).
    @property
    def pre_tick_listeners(self) -> tuple[TickListener, ...]:
        return self._pre_tick.hooks

    @property
    def controllers(self) -> tuple[Controller, ...]:
        return self._controllers.hooks

    @property
    def environment_forces(self) -> tuple[EnvironmentForce, ...]:
        return self._environment.hooks

    @property
    def post_tick_listeners(self) -> tuple[TickListener, ...]:
        return self._post_tick.hooks

    @property
    def death_listeners(self) -> tuple[DeathListener, ...]:
        return self._death_listeners.hooks

    # -- the tick -------------------------------------------------------------------------
    def step(self) -> None:
        """One tick, phase by phase (docs/architecture.md, The tick)."""
        if self.closed:  # Bullet would say "Not connected to physics server", fast fly on
            raise RuntimeError(
                f"Simulator.step() at t = {self.time_s:g} s: the simulator is closed"
            )
        world = self.world
        if self.dispatcher is not None:
            self.dispatcher.deliver(world.tick)  # 1. comms: messages due this tick
        self.tasks.run_due(world.tick)  # 2. behaviour: due tasks, then pre-tick listeners
        self._pre_tick.fire(world)
        self._controllers.fire(self)  # 3. control
        self._environment.fire(self)  # 4. environment forces, then physics
        world.step_physics()
        world.read_state()  # 5. state: every body once, plus the one contact query
        self._post_tick.fire(world)  # 6. monitors: collisions, faults, recorder, metrics

    def acts_alone(self, controller: Controller) -> bool:
        """Whether a tick (`step`) is `controller`'s control phase and the physics alone: no
        radio, task, pre- or post-tick listener, environment force or other controller. A
        caller may then integrate several ticks in one compiled call (envs/batch.py). Kept
        beside `step`: a phase added there must be named here."""
        controllers = self._controllers.hooks
        return (
            self.dispatcher is None
            and not self.tasks.tasks
            and not self._pre_tick.hooks
            and not self._environment.hooks
            and not self._post_tick.hooks
            and len(controllers) == 1
            and controllers[0] is controller
        )

    def run(
        self,
        until_s: float | None = None,
        progress: Callable[[Simulator], None] | None = None,
        progress_every_s: float = 0.5,
    ) -> str:
        """Step until `until_s` (default: the configured duration) or the mission is done.

        Returns why it stopped: "duration", "mission done" or "stopped". With `[simulation]
        threads = "auto"` and PARALLEL_MIN live UAVs it also chooses numba's thread count as
        it goes (core/thread_tuner.py; results never depend on it).
        """
        end_s = self.settings.duration_s if until_s is None else until_s
        if (
            isinstance(end_s, bool)
            or not isinstance(end_s, numbers.Real)
            or not math.isfinite(end_s)
        ):
            raise ValueError(f"Simulator.run(until_s={until_s!r}): expected a finite time in s")
        end_tick = self.world.ticks_for_until(end_s)
        mission_done = self.mission.is_done if self.mission is not None else None
        self.compile_kernels()  # before the clock: kernels of anything added since set-up
        clock = time.perf_counter
        tuner = self._thread_tuner()
        if tuner is None:  # this run's own count (another Simulator may have set another)
            self._own_threads()
        start = clock()
        next_report = start + progress_every_s
        reason = "duration"
        if tuner is not None:
            tuner.resume(self.world.tick, start)
        try:
            while self.world.tick < end_tick:
                if self._stop_requested:
                    reason = "stopped"
                    break
                self.step()
                if tuner is not None and self.world.tick >= tuner.next_tick:
                    tuner.advance(self.world.tick, clock())
                if mission_done is not None and mission_done():
                    reason = "mission done"
                    break
                if progress is not None and clock() >= next_report:
                    self.wall_s += clock() - start
                    start = clock()
                    next_report = start + progress_every_s
                    progress(self)
        finally:  # also when interrupted: the summary's wall time and real-time factor hold
            self.wall_s += clock() - start
            if tuner is not None:
                tuner.finish(self.world.tick)
        self._stop_requested = False
        self.stop_reason = reason
        return reason

    def _own_threads(self) -> None:
        """numba's thread count as `[simulation] threads` sets it; "auto" is one thread until a
        run() tunes it (`_thread_tuner`)."""
        threads = self.settings.threads
        set_threads(1 if threads == "auto" else threads)

    def _thread_tuner(self) -> ThreadTuner | None:
        """`threads = "auto"`'s tuner, made by the first run() that has a swarm for the
        threaded passes (PARALLEL_MIN live UAVs) and two threads to choose from; None else."""
        if self.settings.threads != "auto":
            return None
        if self._tuner is None:
            budget = thread_budget()
            live = sum(a.alive for a in self.physical_agents)
            if budget < 2 or live < PARALLEL_MIN:
                return None
            self._tuner = ThreadTuner(budget, set_threads)
        return self._tuner

    def threads_summary(self) -> dict[str, Any]:
        """The summary's `threads`: the setting, and with "auto" the ticks flown on each count
        and the probes (core/thread_tuner.py); wall-clock, like `wall_time_s`."""
        if self._tuner is not None:
            return self._tuner.summary()
        return {"setting": self.settings.threads}

    def request_stop(self, outcome: str | None = None) -> None:
        """Stop `run()` before its next tick. `outcome` is the run's verdict when the mission has
        none, one of `OUTCOMES` (a user controller that flew its course says "target
        reached"); without it a stopped run reports "stopped" (an operator's or Ctrl-C's stop).

            def controller(state, command):
                ...
                if course.finished:
                    sim.request_stop(outcome="target reached")
        """
        if outcome is not None and outcome not in OUTCOMES:
            raise ValueError(f"outcome {outcome!r} is none of {', '.join(map(repr, OUTCOMES))}")
        self._stop_requested = True
        self._verdict = outcome

    # -- faults ---------------------------------------------------------------------------
    def kill(self, agent: Agent, cause: str, detail: str = "") -> bool:
        """Kill an agent (see core.faults.kill); False if it was already dead."""
        return faults.kill(self, agent, cause, detail)

    def install_faults(self, config: faults.FaultsConfig) -> None:
        """The collision monitor and the fault injector, as post-tick listeners (in that order);
        the injector watches every FaultCapable agent that exists now (`watch` adds more)."""
        self.collision_monitor = CollisionMonitor(self, config.collisions)
        self.add_post_tick(self.collision_monitor.post_tick)
        self.fault_injector = faults.FaultInjector(self, config.mode)
        capable = [a for a in self.agents.values() if isinstance(a, FaultCapable)]
        self.fault_injector.watch(capable)
        self.add_post_tick(self.fault_injector.post_tick)

    def _task_failed(self, task: Task, exc: BaseException) -> None:
        owner = task.owner
        if self.settings.strict or not isinstance(owner, Agent):
            raise exc
        faults.software_fault(self, owner, exc)

    # -- end ------------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        """Mission teardown, summary written (if recording); returns the summary."""
        if self.mission is not None:
            self.mission.teardown()
        summary = self.summary()
        if self.recorder is not None:
            self.recorder.close(summary)
        return summary

    def summary(self) -> dict[str, Any]:
        sim_s = self.time_s
        deaths: dict[str, int] = {}
        for d in self.deaths:
            deaths[d.kind] = deaths.get(d.kind, 0) + 1
        out = {
            "seed": self.rng.seed,
            "ticks": self.world.tick,
            "tick_s": self.world.tick_s,
            "sim_time_s": sim_s,
            "wall_time_s": self.wall_s,
            "compile_s": self.compile_s,  # set-up, not in wall_time_s (core/jit.py)
            "threads": self.threads_summary(),  # wall-clock too when "auto" tuned it
            "real_time_factor": sim_s / self.wall_s if self.wall_s > 0 else None,
            "stop_reason": self.stop_reason,
            "outcome": self.outcome(),
            "agents": len(self.agents),
            "alive": sum(a.alive for a in self.agents.values()),
            "deaths_by_cause": deaths,
            "tasks": self.tasks.summary(),
            "metrics": self.mission.metrics() if self.mission is not None else {},
        }
        if self.dispatcher is not None:
            out["comms"] = self.dispatcher.summary()
        if self.events is not None:
            out["events"] = self.events.fired
        return out

    def outcome(self) -> str:
        """What the run achieved (docs/architecture.md, Scheduled events and outcomes), in order:

        1. the mission's own verdict ("target reached", "plan exhausted") when it has one;
        2. the verdict given with `request_stop(outcome=...)` (e.g. by a user controller);
        3. "all agents lost" when every physical agent is dead;
        4. "time limit" when the run reached its duration, by `run()` or by hand-stepping
           (`step()` loops): "target reached" instead for a `duration_is_target` mission that
           lost no agent;
        5. "plan exhausted" when the mission stopped the run without a verdict;
        6. "stopped" when `run()` was stopped (`request_stop()`, the GUI's End, Ctrl-C);
        7. "stepped" when the run was only advanced by hand (`step()`, never `run()`) and ended
           short of its duration with no verdict: nothing was asked of it, nothing is claimed.
        """
        verdict = self.mission.outcome() if self.mission is not None else None
        if verdict is not None:
            return verdict
        if self._verdict is not None:
            return self._verdict
        bodies = self.physical_agents
        if bodies and not any(a.alive for a in bodies):
            return "all agents lost"
        reason = self.stop_reason
        if reason == "duration" or (
            not reason and self.world.tick >= self.world.ticks_for_until(self.settings.duration_s)
        ):
            whole = all(a.alive for a in bodies)
            held = whole and self.mission is not None and self.mission.duration_is_target
            return "target reached" if held else "time limit"
        if reason == "mission done":
            return "plan exhausted"
        return "stopped" if reason else "stepped"

    def close(self) -> None:
        """Release the world (Bullet's client) and the recorder; a step after it is an error."""
        self.closed = True
        if self.recorder is not None:
            self.recorder.close(None)
        self.world.close()
