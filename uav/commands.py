"""Commands at every level of the cascade, for any subset of a swarm's UAVs, as arrays.

`Swarm.command` is a `CommandInterface`. Each method takes the agents to command (`agents`:
swarm indices, a boolean mask over the swarm, or None for every UAV) and one array row per
agent, switches the agents not yet at that level bumplessly (uav/bumpless.py) and writes their
setpoints; the compiled kernel flies them from the next control phase on. Nothing here runs per
agent in Python, so a command may be written every tick (400 Hz) or at any slower rate; it
holds until the next one.

    cmd = swarm.command
    cmd.position(None, [[0, 0, 10]] * swarm.n)               # x, y, z m (+ yaw rad)
    cmd.velocity([0, 1], [[1, 0, 0], [0, 1, 0.5]])           # world ENU m/s (+ yaw rate)
    cmd.attitude([2], roll=[0.1], pitch=[0.0], thrust=[12.0])  # rad, N (+ yaw or yaw rate)
    cmd.body_rates([3], rates=[[0.5, 0, 0]], thrust=[11.8])  # p, q, r rad/s body, N
    cmd.motors([4], thrust_n=[[2.9, 2.9, 2.9, 2.9]])         # N per motor (or normalised,
                                                             #  or rotor speed rad/s)

Limits saturate, as documented on each method (the airframe's and [control]'s numbers); NaN or
inf in a command is a `CommandError` naming the agent and the field, and so is a wrong shape,
and an agent index given twice in one call (its last row would silently win).
Levels (docs: concepts/commands): Position and Velocity(+heading) run the whole cascade;
Attitude enters at the angle loops; BodyRates at the rate loops (gains `[control.body_rate]`,
yaw on `[control.yaw_rate]`); Motors replaces the mixer's output, through the motor model
(its lag, or the rotor-speed model, and the 0..max_thrust_n saturation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.uav import control as ctl

if TYPE_CHECKING:
    from skyswarm.uav.sensors.camera import ImageReading
    from skyswarm.uav.sensors.lidar import ScanReading
    from skyswarm.uav.swarm import Swarm

AgentsLike = Sequence[int] | np.ndarray | None
ArrayLike = Sequence[float] | Sequence[Sequence[float]] | np.ndarray


class CommandError(ValueError):
    """A command the swarm cannot take: a wrong shape, NaN or inf, an unknown agent. The message
    is one line naming the level, the field and the agent.

        try:
            swarm.command.velocity([0], [[1.0, float("nan"), 0.0]])
        except CommandError as exc:
            print(exc)  # command velocity: v of agent 0 (id 1) is [1.0, nan, 0.0]: expected ...
    """


class CommandInterface:
    """Vectorised commands for one swarm (its `command` attribute): each method takes the agents
    (swarm indices, a boolean mask (N,), or None for all) and one array row per agent, and the
    level holds until the next command. Limits saturate as each method documents.

        cmd = swarm.command
        cmd.position(None, [[0, 0, 10]] * swarm.n)                # m, world ENU (+ yaw rad)
        cmd.velocity([0, 1], [[1, 0, 0], [0, 1, 0.5]])            # m/s (+ yaw rate rad/s)
        cmd.attitude([2], roll=[0.1], pitch=[0.0], thrust=[12.0])  # rad, N collective
        cmd.body_rates([3], rates=[[0.5, 0, 0]], thrust=[11.8])   # rad/s body FLU, N
        cmd.motors([4], normalised=[[0.5, 0.5, 0.5, 0.5]])        # of max_thrust_n
        cmd.hold([0, 1])                                          # hold where they are
    """

    def __init__(self, swarm: Swarm) -> None:
        self.swarm = swarm
        self.read_limits()

    def read_limits(self) -> None:
        """The limits below, from the swarm's [control] and airframe (again after a retune)."""
        cfg, af = self.swarm.config.control, self.swarm.config.airframe
        self.max_tilt = math.radians(af.max_tilt_deg)  # rad, roll and pitch commands
        self.max_body_rate = math.radians(cfg.max_body_rate_deg_s)  # rad/s, p and q
        self.max_yaw_rate = math.radians(cfg.max_yaw_rate_deg_s)  # rad/s, r
        self.max_speed = cfg.max_speed_m_s  # m/s, horizontal
        self.climb, self.descent = cfg.max_climb_m_s, cfg.max_descent_m_s  # m/s
        self.f_max = af.max_thrust_n  # N, one motor
        self.k_f = af.thrust_coefficient_n_s2  # N s^2/rad^2 (rotor-speed commands)

    # -- levels ---------------------------------------------------------------------------
    def position(self, agents: AgentsLike, xyz: ArrayLike, yaw: ArrayLike | None = None) -> None:
        """Fly to world positions `xyz` (k, 3) m (z = altitude above the ground plane), holding
        yaw `yaw` (k,) rad ENU (None: keep each agent's yaw target). Speeds are limited by
        [control] max_speed_m_s, max_climb_m_s and max_descent_m_s."""
        idx = self.agent_indices(agents, "position")
        at = self._rows(agents, idx)
        p = self._array(xyz, (len(idx), 3), idx, "position", "xyz")
        y = None if yaw is None else self._array(yaw, (len(idx),), idx, "position", "yaw")
        self._enter(idx, at, ctl.POSITION)
        sp = self.swarm.setpoints
        sp.position[at] = p[:, :2]
        sp.altitude[at] = p[:, 2]
        if y is not None:
            sp.yaw[at] = y

    def velocity(
        self,
        agents: AgentsLike,
        v: ArrayLike,
        yaw_rate: ArrayLike | None = None,
        yaw: ArrayLike | None = None,
    ) -> None:
        """Fly world-frame (ENU) velocities `v` (k, 3) m/s with a yaw rate (k,) rad/s (default
        0), or holding a yaw (k,) rad ENU. The horizontal speed is scaled down to [control]
        max_speed_m_s (direction kept), vz clipped to [-max_descent_m_s, max_climb_m_s], the yaw
        rate to +-max_yaw_rate_deg_s."""
        if yaw_rate is not None and yaw is not None:
            raise CommandError("command velocity: give yaw_rate or yaw, not both")
        idx = self.agent_indices(agents, "velocity")
        at = self._rows(agents, idx)
        w = self._array(v, (len(idx), 3), idx, "velocity", "v").copy()
        speed = np.hypot(w[:, 0], w[:, 1])
        scale = np.minimum(1.0, self.max_speed / np.maximum(speed, 1e-12))
        w[:, :2] *= scale[:, None]
        w[:, 2] = np.clip(w[:, 2], -self.descent, self.climb)
        if yaw is not None:
            y = self._array(yaw, (len(idx),), idx, "velocity", "yaw")
            self._enter(idx, at, ctl.VELOCITY_AND_HEADING)
            self.swarm.setpoints.yaw[at] = y
        else:
            r = self._optional(yaw_rate, len(idx), idx, "velocity", "yaw_rate")
            self._enter(idx, at, ctl.VELOCITY)
            self.swarm.setpoints.attitude[at, 2] = np.clip(r, -self.max_yaw_rate, self.max_yaw_rate)
        self.swarm.setpoints.velocity[at] = w

    def attitude(
        self,
        agents: AgentsLike,
        roll: ArrayLike,
        pitch: ArrayLike,
        thrust: ArrayLike,
        yaw_rate: ArrayLike | None = None,
        yaw: ArrayLike | None = None,
    ) -> None:
        """Hold roll and pitch angles (k,) rad (clipped to the airframe's max_tilt_deg) with a
        collective thrust (k,) N (clipped to [0, 4 max_thrust_n]) and a yaw rate (k,) rad/s
        (default 0, clipped to +-max_yaw_rate_deg_s) or a yaw angle (k,) rad ENU."""
        if yaw_rate is not None and yaw is not None:
            raise CommandError("command attitude: give yaw_rate or yaw, not both")
        idx = self.agent_indices(agents, "attitude")
        at = self._rows(agents, idx)
        k = len(idx)
        rp = [
            self._array(a, (k,), idx, "attitude", f) for a, f in ((roll, "roll"), (pitch, "pitch"))
        ]
        f = self._array(thrust, (k,), idx, "attitude", "thrust")
        y = None if yaw is None else self._array(yaw, (k,), idx, "attitude", "yaw")
        r = self._optional(yaw_rate, k, idx, "attitude", "yaw_rate")
        self._enter(idx, at, ctl.ATTITUDE)
        sp = self.swarm.setpoints
        sp.attitude[at, 0] = np.clip(rp[0], -self.max_tilt, self.max_tilt)
        sp.attitude[at, 1] = np.clip(rp[1], -self.max_tilt, self.max_tilt)
        sp.attitude[at, 2] = np.clip(r, -self.max_yaw_rate, self.max_yaw_rate)
        sp.thrust[at] = np.clip(f, 0.0, 4.0 * self.f_max)
        sp.yaw_hold[at] = y is not None
        if y is not None:
            sp.yaw[at] = y

    def body_rates(self, agents: AgentsLike, rates: ArrayLike, thrust: ArrayLike) -> None:
        """Hold body rates `rates` (k, 3) rad/s (p, q, r about body x forward, y left, z up;
        p and q clipped to +-[control] max_body_rate_deg_s, r to +-max_yaw_rate_deg_s) with a
        collective thrust (k,) N (clipped to [0, 4 max_thrust_n]). What RL policies and
        autopilots' inner loops command."""
        idx = self.agent_indices(agents, "body_rates")
        at = self._rows(agents, idx)
        w = self._array(rates, (len(idx), 3), idx, "body_rates", "rates")
        f = self._array(thrust, (len(idx),), idx, "body_rates", "thrust")
        self._enter(idx, at, ctl.BODY_RATES)
        sp = self.swarm.setpoints
        sp.rates[at, :2] = np.clip(w[:, :2], -self.max_body_rate, self.max_body_rate)
        sp.rates[at, 2] = np.clip(w[:, 2], -self.max_yaw_rate, self.max_yaw_rate)
        sp.thrust[at] = np.clip(f, 0.0, 4.0 * self.f_max)

    def motors(
        self,
        agents: AgentsLike,
        thrust_n: ArrayLike | None = None,
        *,
        normalised: ArrayLike | None = None,
        rotor_speed: ArrayLike | None = None,
    ) -> None:
        """Command the four motors directly (k, 4), in the mixer's motor order (45, 135, 225,
        315 deg from the nose): thrusts N, or `normalised` 0..1 of max_thrust_n, or
        `rotor_speed` rad/s (thrust k_f w^2). Exactly one of the three. Commands are clipped to
        [0, max_thrust_n]; the motor model's lag (or rotor-speed dynamics) then applies."""
        given = [x is not None for x in (thrust_n, normalised, rotor_speed)]
        if sum(given) != 1:
            raise CommandError(
                "command motors: give exactly one of thrust_n, normalised, rotor_speed"
            )
        idx = self.agent_indices(agents, "motors")
        at = self._rows(agents, idx)
        shape = (len(idx), 4)
        if thrust_n is not None:
            f = self._array(thrust_n, shape, idx, "motors", "thrust_n")
        elif normalised is not None:
            f = self._array(normalised, shape, idx, "motors", "normalised") * self.f_max
        else:
            if self.k_f <= 0.0:
                raise CommandError(
                    "command motors: rotor_speed needs the airframe's thrust_coefficient_n_s2 "
                    "(> 0; e.g. quad_x_rotor), this airframe has 0"
                )
            w = self._array(rotor_speed, shape, idx, "motors", "rotor_speed")
            f = self.k_f * w * w
        self._enter(idx, at, ctl.MOTORS)
        self.swarm.setpoints.motors[at] = np.clip(f, 0.0, self.f_max)

    def hold(self, agents: AgentsLike) -> None:
        """Hold position: Position mode at each agent's current sensed spot and yaw."""
        idx = self.agent_indices(agents, "hold")
        self.swarm.set_mode(idx, ctl.POSITION)

    # -- checks ---------------------------------------------------------------------------
    def agent_indices(self, agents: AgentsLike, level: str) -> np.ndarray:
        """Swarm indices (k,) from indices, a boolean mask (N,) or None (all); a CommandError
        naming `level` (the command or the caller) for anything else."""
        n = self.swarm.n
        if agents is None:
            return np.arange(n)
        a = np.asarray(agents)
        if a.dtype == bool:
            if a.shape != (n,):
                raise CommandError(
                    f"command {level}: a boolean agent mask needs shape ({n},), got {a.shape}"
                )
            return np.flatnonzero(a)
        if a.ndim == 0:
            a = a.reshape(1)
        if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
            raise CommandError(f"command {level}: agents must be swarm indices, got {agents!r}")
        bad = (a < 0) | (a >= n)
        if bad.any():
            raise CommandError(
                f"command {level}: agent index {int(a[bad][0])} is not in the swarm (0..{n - 1})"
            )
        idx = a.astype(np.intp)
        repeated = first_repeat(idx)
        if repeated is not None:  # its last row would silently win
            raise CommandError(
                f"command {level}: agent index {repeated} is given {int((idx == repeated).sum())} "
                "times: expected each agent at most once (one row per agent)"
            )
        return idx

    def _array(
        self, values: ArrayLike, shape: tuple[int, ...], idx: np.ndarray, level: str, field: str
    ) -> np.ndarray:
        """`values` as a float array of `shape`, or a CommandError naming agent and field."""
        try:
            a = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise CommandError(f"command {level}: {field} is not numeric: {values!r}") from None
        if a.shape != shape:
            raise CommandError(
                f"command {level}: {field} needs shape {shape} for {len(idx)} agents, got {a.shape}"
            )
        finite = np.isfinite(a)
        if not finite.all():
            row = int(np.argwhere(~finite)[0][0])
            value = a.reshape(len(idx), -1)[row]
            raise CommandError(
                f"command {level}: {field} of agent {int(idx[row])} "
                f"(id {int(self.swarm.ids[idx[row]])}) is {value.tolist()}: expected finite numbers"
            )
        return a

    def _optional(
        self, values: ArrayLike | None, k: int, idx: np.ndarray, level: str, field: str
    ) -> np.ndarray:
        return np.zeros(k) if values is None else self._array(values, (k,), idx, level, field)

    @staticmethod
    def _rows(agents: AgentsLike, idx: np.ndarray) -> slice | np.ndarray:
        """Where the setpoints of `idx` are written: every row as a slice when `agents` is
        None (a strided record field written through an index array of all N rows costs
        ~0.25 ms at 4,096 agents, the slice a fraction of it), else `idx`."""
        return slice(None) if agents is None else idx

    def _enter(self, idx: np.ndarray, at: slice | np.ndarray, mode: ctl.ControlMode) -> None:
        """Switch the agents of `idx` (their rows `at`, `_rows`) not yet in `mode` (bumpless,
        in one call)."""
        switch = idx[self.swarm.setpoints.mode[at] != ctl.mode_index(mode)]
        if len(switch):
            self.swarm.set_mode(switch, mode)


def first_repeat(idx: np.ndarray) -> int | None:
    """The first value of the integers `idx` (k,) that occurs more than once, or None.
    Strictly increasing indices (np.flatnonzero's, a mask's) are told apart in one pass."""
    if len(idx) < 2 or (idx[1:] > idx[:-1]).all():
        return None
    values, counts = np.unique(idx, return_counts=True)
    if (counts == 1).all():
        return None
    return int(idx[np.argmax(np.isin(idx, values[counts > 1]))])


@dataclass(frozen=True)
class SwarmState:
    """What a controller sees at one call: arrays over the n alive agents of its group.

    The sensed state (the estimate when `[uav.sensors]` drives control, else the truth), in the
    world frame ENU unless named: `position` (n, 3) m, `velocity` (n, 3) m/s, `quaternion`
    (n, 4) body-to-world (x, y, z, w), `euler` (n, 3) roll, pitch, yaw rad, `body_rates` (n, 3)
    p, q, r rad/s in the body frame (FLU); `thrust` (n, 4) N the motors give now; `index` (n,)
    swarm indices (pass them to the `CommandInterface`), `ids` (n,) agent ids; `tick`,
    `time_s` (s) and `dt` (s, the controller's period). `readings`: the last sample of each
    switched-on sensor that offers one (`Sensor.reading`), by name, rows as `index`; `lidar`,
    `rangefinder` (`ScanReading`: ranges (n, M) m ...) and `camera` (`ImageReading`: depth
    (n, H, W) m ...) name the shipped ones, None while that sensor is off.

        def stop_at_walls(state: SwarmState, command: CommandInterface) -> None:
            ahead = state.lidar.ranges[:, 0]  # m, beam 0 looks along the body's +x
            speed = np.where(np.nan_to_num(ahead, nan=np.inf) < 3.0, 0.0, 2.0)
            command.velocity(state.index, np.column_stack([speed, 0 * speed, 0 * speed]))

        def level_out(state: SwarmState, command: CommandInterface) -> None:
            rates = -4.0 * state.euler * [1.0, 1.0, 0.0]  # rad/s back to level, no yaw rate
            command.body_rates(state.index, rates, np.full(state.n, 11.8))

        swarm.control(0.05, stop_at_walls, members=[0, 1])  # 20 Hz, with the lidar on
        swarm.control(0.01, level_out, members=[2, 3])  # 100 Hz
    """

    tick: int
    time_s: float
    dt: float  # s, the controller's period
    index: np.ndarray
    ids: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    quaternion: np.ndarray
    euler: np.ndarray
    body_rates: np.ndarray
    thrust: np.ndarray
    readings: Mapping[str, object] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.index)

    @property
    def lidar(self) -> ScanReading | None:
        return self.readings.get("lidar")  # type: ignore[return-value]

    @property
    def rangefinder(self) -> ScanReading | None:
        return self.readings.get("rangefinder")  # type: ignore[return-value]

    @property
    def camera(self) -> ImageReading | None:
        return self.readings.get("camera")  # type: ignore[return-value]


class ControllerFn(Protocol):
    """A user controller: reads the state, writes commands (`Swarm.control`).

    Any function of that signature; installed with `Swarm.control(period_s, fn)`:

        def hover_at_10m(state: SwarmState, command: CommandInterface) -> None:
            target = state.position.copy()
            target[:, 2] = 10.0
            command.position(state.index, target)

        swarm.control(0.02, hover_at_10m)  # 50 Hz
    """

    def __call__(self, state: SwarmState, command: CommandInterface) -> None: ...


@dataclass(eq=False)
class UserController:
    """A controller installed on a swarm: called every `period_s` in the behaviour phase (before
    the compiled control phase of the same tick) for the alive agents of `members`."""

    swarm: Swarm
    fn: ControllerFn
    period_s: float
    members: np.ndarray | None = None  # swarm indices (None: the whole swarm)

    def __call__(self) -> None:
        sw = self.swarm
        if self.members is None:
            index = np.flatnonzero(sw.alive)
        else:
            index = self.members[sw.alive[self.members]]
        if len(index):
            self.fn(sensed_swarm_state(sw, index, self.period_s), sw.command)


def sensed_swarm_state(swarm: Swarm, index: np.ndarray, dt: float = 0.0) -> SwarmState:
    """The `SwarmState` of swarm indices `index` (the estimate or the truth, as the swarm's
    controller reads it)."""
    s = swarm.sensors
    if s is not None and s.drives_control:
        state, rows = s.control_state, index
    else:
        state, rows = swarm.sim.world.state, swarm.slots[index]
    quat = np.array(state.orientation[rows], dtype=float)
    rot = quat_to_matrix(quat)
    body_rates = np.einsum("nji,nj->ni", rot, state.angular_velocity[rows])
    sim = swarm.sim
    return SwarmState(
        sim.tick,
        sim.time_s,
        dt,
        index,
        swarm.ids[index],
        np.array(state.position[rows], dtype=float),
        np.array(state.linear_velocity[rows], dtype=float),
        quat,
        euler_from_matrix(rot),
        body_rates,
        swarm.motors.thrust[index].copy(),
        {} if s is None else s.readings(index),
    )
