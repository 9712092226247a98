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

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.backends import BodyShape
from skyswarm.core.comms.beacons import BeaconNet
from skyswarm.core.frames import euler_from_matrix, quat_to_matrix, yaw_quaternion
from skyswarm.core.geo import heading_to_yaw
from skyswarm.core.state import rows_of_slots
from skyswarm.core.wind import WindConfig, WindField
from skyswarm.uav import events as _events  # noqa: F401  (registers the UAV event actions)
from skyswarm.uav.avoidance import Avoidance
from skyswarm.uav.battery import Battery
from skyswarm.uav.commands import CommandInterface, ControllerFn, UserController
from skyswarm.uav.config import UavConfig
from skyswarm.uav.control import (
    MEMORY,
    MODES,
    POSITION,
    Cascade,
    ControlConfig,
    ControlMode,
    Measured,
    Setpoints,
)
from skyswarm.uav.estimation import SensorSuite
from skyswarm.uav.estimation_kernel import TrueWrench
from skyswarm.uav.flight_kernel import FlightKernel
from skyswarm.uav.mixer import Mixer
from skyswarm.uav.model import (
    REST_HEIGHT_M,
    LandingGear,
    Motors,
    WrenchModel,
)

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator
    from skyswarm.uav.agents import UavAgent
    from skyswarm.uav.group import Commands, GroupBehaviour, GroupInputs
    from skyswarm.uav.model import Airframe


class Swarm:
    """N quadrotors of one airframe: bodies, setpoints, controller and motor state. It is the
    `core.hooks.EstimateSource` of its UAVs (their state estimate when sensors are on) and
    their `core.hooks.ModeSource` (their control modes, for the timeline).

    Build it in a mission's `setup()` from the scenario's agents and `[uav]` section, then
    command it (`command`, a `CommandInterface`) or give it a controller (`control`):

        self.swarm = Swarm.from_scenario(self.sim, self.config, hovering=True, altitude_m=2.0)
        self.swarm.command.position(None, self.swarm.start_positions + [0.0, 0.0, 2.0])
        self.swarm.control(0.01, my_controller)  # my_controller(state, command), 100 Hz

    Arrays over the swarm (N rows, swarm index order): `ids`, `alive`, `start_positions`
    (N, 3) m; `n` is N.
    """

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
        self.slots = slots = add_uav_bodies(world, config.airframe, positions, yaws)
        self.rows = rows_of_slots(slots)  # (N,) rows of the state arrays, a slice if it can
        self.setpoints = Setpoints(n)
        self.g = float(sim.settings.gravity)  # m/s^2, the world's: the controller's feed-forward
        config.airframe.check_can_fly(self.g, config.file)  # in this world's gravity
        self.cascade = Cascade(config.airframe, config.control, n, self.dt, self.g)
        self.mixer = Mixer(config.airframe)
        self.motors = Motors(config.airframe, n, self.dt)
        self.wrench = WrenchModel(config.airframe)
        # Spring-damper legs (airframe option), added to the wrench each tick; None: rigid mesh.
        # Only over a ground plane (the legs push against z = 0).
        self.gear = (
            LandingGear(config.airframe)
            if config.airframe.gear_points_m and world.has_ground
            else None
        )
        # Compiled once per process (numba's cache); the objects above own every constant.
        self.kernel = FlightKernel(self.cascade, self.mixer, self.motors, self.wrench, slots)
        self.alive = np.ones(n, dtype=bool)
        self.motor_ok = np.ones((n, 4))  # 0 for a failed motor (physical faults)
        self._motor_fault_count = 0  # bumped by fail_motors
        self.battery = Battery(self, config.battery) if config.battery.enabled else None
        self._alive_rows: np.ndarray | None = None  # None while all agents live
        self._live_slots = slots  # (n_alive,) slots of the live bodies, wrenched each tick
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
        self.ids = np.array(list(ids), dtype=np.int64).reshape(n)  # (N,) agent ids
        # None (preset ideal): act on the truth; else the sensors and the estimate (phase 6)
        self.sensors = SensorSuite.create(self, config.sensors)
        self._estimate_kernel = None
        if self.sensors is not None and self.sensors.drives_control:
            self._estimate_kernel = FlightKernel(
                self.cascade, self.mixer, self.motors, self.wrench, np.arange(n)
            )
            self._true_wrench = TrueWrench(self.wrench, slots)  # compiled WrenchModel.compute
        cls = agent_class or AutonomousUavAgent
        self.agents = [
            cls(sim, int(i), int(s), self, k) for k, (i, s) in enumerate(zip(ids, slots))
        ]
        self.avoidance = Avoidance.create(self)  # [avoidance]: None (off) flies the setpoints
        self.command = CommandInterface(self)  # commands at every level, as arrays
        if hovering:
            weight = config.airframe.mass_kg * self.g  # N, in this world's gravity
            self.motors.thrust[:] = weight / 4
            self.cascade.demand[:, 0] = weight
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
        hovering, it holds (x, y, z), or (x, y, `altitude_m`) where the agent's z is 0 (a
        hovering start in the ground plane is a ValueError). `yaws` (N,) rad overrides the
        agents' configured headings.
        """
        specs = scenario.agents.resolved()
        start = np.array([s.position for s in specs], dtype=float).reshape(-1, 3)
        if hovering and altitude_m is not None:
            start[start[:, 2] == 0.0, 2] = altitude_m
        elif not hovering:
            start[:, 2] += REST_HEIGHT_M
        low = start[:, 2] < REST_HEIGHT_M
        if hovering and sim.world.has_ground and low.any():
            k = int(np.argmax(low))
            raise ValueError(
                f"Swarm.from_scenario(hovering=True): agent {specs[k].id} would hover at z = "
                f"{start[k, 2]:g} m, in the ground: expected altitude_m= (the height for the "
                "agents at z = 0) or agents above the ground"
            )
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
        if not len(self._live_slots):
            return
        on_estimate = self._estimate_kernel is not None
        avoidance = self.avoidance
        try:  # avoidance's corrections lent to the records for this call alone (no copy)
            (self._estimate_kernel if on_estimate else self.kernel).step(
                self.sensors.control_state if on_estimate else self.sim.world.state,
                self.setpoints if avoidance is None else avoidance.lend(),
                self.cascade,
                self.alive,
                self.motor_ok,
                self.motors.params,
                self.motors.thrust,
                self.force,
                self.torque,
                self.wind,
            )
        finally:
            if avoidance is not None:
                avoidance.give_back()
        if on_estimate:  # thrusts from the estimate; the wrench from the true attitude and air
            state = self.sim.world.state
            self.force, self.torque = self._true_wrench(state, self.motors.thrust, self.wind)
        if self.battery is not None:
            faults = self._motor_fault_count
            limited = self.battery.drain(self.motors.thrust)  # True: F_M cut a thrust
            if limited or faults != self._motor_fault_count:  # the wrench sees it now
                m, rot = self.measure()
                self.force, self.torque = self.wrench.compute(
                    self.motors.thrust, rot, m.velocity, self.wind, m.position, m.body_rate
                )
        # LandingGear.may_touch of the agents' rows (N >= 1 here), compiled
        if self.gear is not None and self.kernel.lowest(self.sim.world.state) <= self.gear.reach:
            m, rot = self.measure()  # the legs' springs and dampers, from the true state
            omega = self.sim.world.state.angular_velocity[self.rows]
            f_gear, t_gear = self.gear.wrench(m.position, rot, m.velocity, omega)
            self.force += f_gear
            self.torque += t_gear
        world = self.sim.world
        if self._alive_rows is None:  # read at the step (the kernel writes them next tick)
            world.hold_wrenches(self._live_slots, self.force, self.torque)
        else:
            rows = self._alive_rows
            world.apply_wrenches(self._live_slots, self.force[rows], self.torque[rows])

    def kernel_alone(self) -> bool:
        """Whether this swarm's tick (`__call__`) is its flight kernel on the true state and the
        held wrench alone, every agent alive: no sensors (the estimate), battery, landing gear
        or avoidance. A caller may then fly several ticks in one compiled call (envs/batch.py).
        Kept beside `__call__`: work added there must be named here."""
        return (
            self.sensors is None
            and self.battery is None
            and self.gear is None
            and self.avoidance is None
            and self._estimate_kernel is None
            and bool(self.alive.all())
        )

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
        self._live_slots = self.slots[self._alive_rows]

    def restart(
        self,
        index: np.ndarray,
        position: np.ndarray,
        quaternion: np.ndarray,
        velocity: np.ndarray,
    ) -> None:
        """Teleport agents `index` (k,) (swarm indices, alive) to (k, 3) positions m with (k, 4)
        quaternions (x, y, z, w) and (k, 3) world velocities m/s, at rest in rotation, with the
        controller's memory cleared (integrals, last signals), the motors at hover thrust and
        the estimate restarted from the new truth. Their control mode and setpoints stay. What
        an RL environment's per-episode reset does instead of rebuilding the simulator.

            swarm.restart(np.array([0]), np.array([[0, 0, 10.0]]), np.array([[0, 0, 0, 1.0]]),
                          np.zeros((1, 3)))
        """
        idx = np.asarray(index, dtype=np.intp)
        self.sim.world.reset_bodies(
            self.slots[idx], position, quaternion, velocity, np.zeros((len(idx), 3))
        )
        weight = self.config.airframe.mass_kg * self.g  # N
        memory = self.cascade.memory
        if memory.flags.c_contiguous:  # zero bytes: np.zeros' records, 7x faster than them
            memory.view(np.uint8).reshape(len(memory), memory.dtype.itemsize)[idx] = 0
        else:
            memory[idx] = np.zeros(1, MEMORY)
        self.cascade.demand[idx, 0] = weight
        self.motors.thrust[idx] = weight / 4
        self.force[idx] = 0.0
        self.torque[idx] = 0.0
        if self.sensors is not None:
            self.sensors.restart(idx)

    def fail_motors(self, index: int, motors: Sequence[int]) -> None:
        """Motors of agent `index` stop producing thrust at once and for good."""
        for k in motors:
            self.motor_ok[index, k] = 0.0
            self.motors.thrust[index, k] = 0.0
        self._motor_fault_count += 1

    # -- swarm-level behaviour (uav/group.py) -----------------------------------------------
    def beacons(
        self,
        period_s: float,
        *,
        channel: str = "radio",
        extra_fields: Sequence[str] = (),
        extra: Callable[[np.ndarray], np.ndarray] | None = None,
        timeout_s: float | None = None,
        phase_s: float = 0.0,
        log: bool = False,
    ) -> BeaconNet:
        """Every agent beacons its sensed state (plus `extra(rows)`, (n, k) for the k
        `extra_fields`) every `period_s` on `channel` (core/comms/beacons.py)."""
        from skyswarm.uav.group import beacon_source

        if self.sim.dispatcher is None:
            raise RuntimeError("beacons need the simulator's dispatcher (core.comms.attach_comms)")
        return BeaconNet(
            self.sim.dispatcher,
            self.agents,
            beacon_source(self, extra),
            period_s,
            channel=channel,
            extra_fields=extra_fields,
            timeout_s=timeout_s,
            phase_s=phase_s,
            log=log,
        )

    def behave(
        self,
        period_s: float,
        fn: Callable[[GroupInputs], Commands | None],
        *,
        beacons: BeaconNet | None = None,
        members: Sequence[int] | None = None,
        phase_s: float = 0.0,
        name: str = "group",
    ) -> GroupBehaviour:
        """Run the swarm-level behaviour `fn` every `period_s` for the alive agents (of
        `members`: swarm indices or a boolean mask, each agent once, as the commands take;
        default all) with the neighbours heard on `beacons`."""
        from skyswarm.uav.group import GroupBehaviour

        rows = None if members is None else self.command.agent_indices(members, "behave")
        behaviour = GroupBehaviour(self, fn, period_s, beacons, rows)
        behaviour.task = self.sim.every(period_s, behaviour, phase_s, owner=behaviour, name=name)
        return behaviour

    def control(
        self,
        period_s: float,
        fn: ControllerFn,
        *,
        members: Sequence[int] | None = None,
        phase_s: float = 0.0,
        name: str = "controller",
    ) -> UserController:
        """Call the user controller `fn(state, command)` every `period_s` (a whole number of
        ticks; `self.dt` for every tick) with the sensed state of the alive agents (of
        `members`: swarm indices or a boolean mask, each agent once, as the commands take;
        default all) and this swarm's `CommandInterface`. It runs in the behaviour phase, so
        its commands fly from the control phase of the same tick.

            def climb(state, command):
                command.velocity(state.index, np.tile([0.0, 0.0, 1.0], (state.n, 1)))

            swarm.control(0.02, climb)
        """
        if not callable(fn):
            raise TypeError(f"control: fn {fn!r} is not callable: expected fn(state, command)")
        # indices or a boolean mask, checked now (a mask used to be read as indices 0 and 1)
        rows = None if members is None else self.command.agent_indices(members, "control")
        controller = UserController(self, fn, period_s, rows)
        self.sim.every(period_s, controller, phase_s, owner=controller, name=name)
        return controller

    def retune(self, control: ControlConfig) -> None:
        """Fly from the next tick on with the gains and limits of `control` (a [control]
        section, e.g. `dataclasses.replace(swarm.config.control, max_speed_m_s=3.0)`); the
        loops' integrals and every agent's mode and setpoints are kept."""
        from skyswarm.uav.flight_kernel import pack_constants

        self.config = dataclasses.replace(self.config, control=control)
        self.cascade.retune(control, self.config.airframe)
        packed = pack_constants(self.cascade, self.mixer, self.motors, self.wrench)
        for kernel in (self.kernel, self._estimate_kernel):
            if kernel is not None:
                kernel.constants = packed.copy()
        self.command.read_limits()

    def mode_of(self, index: int) -> ControlMode:
        return MODES[self.setpoints.mode[index]]

    # -- core.hooks.ModeSource: the modes the timeline records -------------------------------
    def mode_codes(self) -> np.ndarray:
        """(N,) each UAV's mode, an index into `uav.control.MODES` (the live setpoint array)."""
        return self.setpoints.mode

    # -- core.hooks.EstimateSource: what the timeline and the views show beside the truth -----
    def estimated_positions(self) -> np.ndarray | None:
        """(N, 3) m, world ENU, each UAV's estimated position (the sensor suite's live array:
        read it before the next tick); None with sensors off (the controller flies the truth)."""
        return None if self.sensors is None else self.sensors.position

    def gps_errors(self) -> np.ndarray | None:
        """(N, 3) m, each UAV's GPS fix minus its true position (zeros without a GPS model);
        None with sensors off."""
        return None if self.sensors is None else self.sensors.gps_error

    def set_mode(self, index: np.ndarray | Sequence[int] | int, mode: ControlMode) -> None:
        """Switch agents to `mode` bumplessly (see uav.bumpless)."""
        from skyswarm.uav.bumpless import enter_mode

        idx = np.atleast_1d(np.asarray(index, dtype=np.intp))
        m, _ = self.measure()
        enter_mode(self, idx, mode, m)


def add_uav_bodies(world: World, airframe: Airframe, positions: np.ndarray, yaws) -> np.ndarray:
    """N quadrotor bodies through the World seam: (N, 3) centre-of-mass positions m, (N,) ENU
    yaws rad, the airframe's mass, inertia and mesh; returns their (N,) slots."""
    if not airframe.mesh:
        raise ValueError("the airframe names no mesh file")
    return world.add_bodies(
        BodyShape(mesh=Path(airframe.mesh)),
        airframe.mass_kg,
        np.asarray(positions, dtype=float),
        yaw_quaternion(np.asarray(yaws, dtype=float)).tolist(),
        inertia=airframe.inertia_kg_m2,
    )
