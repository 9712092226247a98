"""A swarm: every UAV of one airframe type as struct-of-arrays, flown in one vectorised pass.

`Swarm` is registered with `sim.add_controller` (phase 3 of the tick). Per tick it reads the world's
state arrays, runs the cascade, the mixer and the motors for all agents at once, and applies
one force and one torque per live body. The body drag in that force acts on the airspeed
v - wind; the wind per agent comes from the scenario's [wind] section (core/wind.py), is
updated in phase 4 for the next tick, and is zero, with no wind work at all, when disabled.
The whole path is one compiled call (uav/kernel.py), which agrees with the one-agent reference
uav/reference.py within 1e-9 (tests/uav/test_uav_reference.py). Agent objects (uav/agents.py)
are thin handles that read and write these arrays by index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.geo import heading_to_yaw
from skyswarm.core.state import rows_of_slots
from skyswarm.core.wind import WindConfig, WindField
from skyswarm.uav import kernel
from skyswarm.uav.battery import Battery
from skyswarm.uav.config import UavConfig
from skyswarm.uav.control import MODES, POSITION, Cascade, ControlMode, Measured, Setpoints
from skyswarm.uav.frames import euler_from_matrix, quat_to_matrix
from skyswarm.uav.mixer import Mixer
from skyswarm.uav.model import REST_HEIGHT_M, Motors, WrenchApplier, WrenchModel, create_bodies

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator
    from skyswarm.uav.agents import UavAgent


class Swarm:
    """N quadrotors of one airframe: bodies, setpoints, controller and motor state."""

    def __init__(
        self,
        sim: Simulator,
        config: UavConfig,
        ids: Sequence[int],
        positions: np.ndarray,
        yaws: np.ndarray,
        agent_class: type[UavAgent] | None = None,
        hovering: bool = False,
        wind: WindConfig | None = None,
    ) -> None:
        """Create one body and agent per id: (N, 3) start positions m, (N,) ENU yaws rad.

        `hovering`: start airborne in Position mode holding the start pose, motors at hover
        thrust; otherwise motors off in Manual mode (sitting on the ground). `wind`: the air
        the swarm flies in; by default the scenario's [wind] section (calm without one).
        """
        from skyswarm.uav.agents import AutonomousUavAgent

        self.sim, self.config = sim, config
        world = sim.world
        positions = np.asarray(positions, dtype=float).reshape(-1, 3)
        self.start_positions = positions.copy()  # (N, 3) m, where the bodies were created
        n = len(positions)
        self.n, self.dt = n, world.tick_s
        self.bodies = create_bodies(world, config.airframe, positions, np.asarray(yaws))
        slots = np.asarray(world.track(self.bodies))
        self.rows = rows_of_slots(slots)  # (N,) rows of the state arrays, a slice if it can
        self.setpoints = Setpoints(n)
        self.cascade = Cascade(config.airframe, config.control, n, self.dt)
        self.mixer = Mixer(config.airframe)
        self.motors = Motors(config.airframe, n, self.dt)
        self.wrench = WrenchModel(config.airframe)
        self.applier = WrenchApplier(world)
        # Compiled once per process (numba's cache); the objects above own every constant.
        self.kernel = kernel.FlightKernel(self.cascade, self.mixer, self.motors, self.wrench, slots)
        self.alive = np.ones(n, dtype=bool)
        self.motor_ok = np.ones((n, 4))  # 0 for a failed motor (physical faults)
        self._motor_fault_count = 0  # bumped by fail_motors
        self.battery = Battery(self, config.battery) if config.battery.enabled else None
        self._alive_rows: np.ndarray | None = None  # None while all agents live
        self._live_bodies = list(self.bodies)
        self.force = np.zeros((n, 3))  # N, body frame, last applied
        self.torque = np.zeros((n, 3))  # N m, world frame, last applied
        self.wind = np.zeros((n, 3))  # m/s, world frame, at each agent: what its drag sees
        self.wind_field: WindField | None = None
        self._wind_every = 1  # ticks between wind updates
        if wind is None:
            scenario = sim.scenario
            wind = scenario.wind if scenario is not None else WindConfig()
        if wind.enabled:
            self._install_wind(wind)
        cls = agent_class or AutonomousUavAgent
        self.agents = [
            cls(sim, int(i), b, int(s), self, k)
            for k, (i, b, s) in enumerate(zip(ids, self.bodies, slots))
        ]
        if hovering:
            self.motors.thrust[:] = config.airframe.weight_n / 4
            self.cascade.demand[:, 0] = config.airframe.weight_n
            self.set_mode(np.arange(n), POSITION)
            sp = self.setpoints
            sp.position[:] = positions[:, :2]
            sp.altitude[:] = positions[:, 2]
            sp.yaw[:] = np.asarray(yaws, dtype=float)
        sim.add_controller(self)

    @classmethod
    def from_scenario(
        cls,
        sim: Simulator,
        scenario: ScenarioConfig,
        agent_class: type[UavAgent] | None = None,
        *,
        hovering: bool = False,
        altitude_m: float | None = None,
        yaws: np.ndarray | None = None,
    ) -> Swarm:
        """The scenario's agents as one swarm of its `[uav]` airframe.

        On the ground (`hovering=False`) each body stands on its legs at its agent's (x, y, z);
        hovering, it holds (x, y, z), or (x, y, `altitude_m`) where the agent's z is 0. `yaws`
        (N,) rad overrides the agents' configured headings.
        """
        specs = scenario.agents.resolved()
        start = np.array([s.position for s in specs], dtype=float).reshape(-1, 3)
        if hovering and altitude_m is not None:
            start[start[:, 2] == 0.0, 2] = altitude_m
        elif not hovering:
            start[:, 2] += REST_HEIGHT_M
        if yaws is None:
            yaws = np.array([heading_to_yaw(s.heading_deg) for s in specs], dtype=float)
        uav = scenario.section("uav").load(scenario.base_dir)
        ids = [s.id for s in specs]
        return cls(sim, uav, ids, start, yaws, agent_class=agent_class, hovering=hovering)

    # -- the 400 Hz path ------------------------------------------------------------------
    def measure(self) -> tuple[Measured, np.ndarray]:
        """Measurements of every agent from the world's state arrays, and (N, 3, 3) rotations."""
        state, rows = self.sim.world.state, self.rows
        rot = quat_to_matrix(state.orientation[rows])
        omega = state.angular_velocity[rows]
        body_rate = np.einsum("nji,nj->ni", rot, omega)
        m = Measured(
            state.position[rows],
            state.linear_velocity[rows],
            euler_from_matrix(rot),
            body_rate,
            rot[:, 2, 2],
        )
        return m, rot

    def __call__(self, sim: Simulator) -> None:
        """Phase 3: setpoints -> cascade -> mixer -> motors -> one force + one torque per body."""
        if not self._live_bodies:
            return
        self.kernel.step(
            self.sim.world.state,
            self.setpoints,
            self.cascade,
            self.alive,
            self.motor_ok,
            self.motors.thrust,
            self.force,
            self.torque,
            self.wind,
        )
        if self.battery is not None:
            faults = self._motor_fault_count
            self.battery.drain(self.motors.thrust)
            if faults != self._motor_fault_count:  # power cut now: the wrench sees it now
                m, rot = self.measure()
                self.force, self.torque = self.wrench.compute(
                    self.motors.thrust, rot, m.velocity, self.wind
                )
        if self._alive_rows is None:
            self.applier.apply(self._live_bodies, self.force, self.torque)
        else:
            rows = self._alive_rows
            self.applier.apply(self._live_bodies, self.force[rows], self.torque[rows])

    # -- wind (phase 4) -------------------------------------------------------------------
    def _install_wind(self, config: WindConfig) -> None:
        """Wind per agent from the `environment` random stream, updated in phase 4."""
        self._wind_every = config.ticks_per_update(self.dt)
        self.wind_field = WindField(config, self.n, self.sim.rng.environment)
        self.wind = self.wind_field.velocity  # updated in place
        self._advance_wind()  # the first tick already flies in it
        self.sim.add_environment(self.update_wind)

    def update_wind(self, sim: Simulator) -> None:
        """Phase 4: the wind the drag sees from the next tick on, every `update_hz`."""
        if (sim.tick + 1) % self._wind_every == 0:
            self._advance_wind()

    def _advance_wind(self) -> None:
        state, rows = self.sim.world.state, self.rows
        assert self.wind_field is not None
        dt = self._wind_every * self.dt  # s since the last update
        self.wind_field.update(state.position[rows], state.linear_velocity[rows], dt)

    # -- agents ---------------------------------------------------------------------------
    def kill(self, index: int) -> None:
        """Mask agent `index` out: no more wrench, motors stopped."""
        self.alive[index] = False
        self.motors.thrust[index] = 0.0
        self._alive_rows = np.flatnonzero(self.alive)
        self._live_bodies = [self.bodies[i] for i in self._alive_rows]

    def fail_motors(self, index: int, motors: Sequence[int]) -> None:
        """Motors of agent `index` stop producing thrust at once and for good."""
        for k in motors:
            self.motor_ok[index, k] = 0.0
            self.motors.thrust[index, k] = 0.0
        self._motor_fault_count += 1

    def mode_of(self, index: int) -> ControlMode:
        return MODES[self.setpoints.mode[index]]

    def set_mode(self, index: np.ndarray | Sequence[int] | int, mode: ControlMode) -> None:
        """Switch agents to `mode` bumplessly (see uav.bumpless)."""
        from skyswarm.uav.bumpless import enter_mode

        idx = np.atleast_1d(np.asarray(index, dtype=np.intp))
        m, _ = self.measure()
        enter_mode(self, idx, mode, m)
