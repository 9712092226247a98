"""The sensor layer of a swarm: sensors sampled after physics, a complementary filter, the
estimate the controllers and behaviours act on, and an estimate-vs-truth file.

`SensorSuite.create(swarm, config)` returns None for the `ideal` preset (every sensor off): then
nothing here exists, nothing draws from the `sensors` stream and the UAVs act on the truth, so
trajectories are byte-identical to a build without sensors. Otherwise it is a post-tick listener
(phase 6): after `read_state` it samples every due sensor from the true state of all agents at
once and updates the estimate (numpy over agents, no per-agent Python).

The estimator is a complementary filter, chosen over a Kalman filter because its fixed gains
are exactly the steady state of a constant-velocity Kalman filter and cost a few array
operations per tick:
- roll and pitch: the AHRS output (truth + Ornstein–Uhlenbeck noise, QRSim's model);
- yaw: gyro-propagated, pulled toward the compass with time constant COMPASS_TAU_S (1 s);
- body rates: the gyros;
- position and velocity: propagated every tick with the accelerometer's specific force rotated
  by the estimated attitude (gravity removed); corrected at every GPS fix (x, y; and z without a
  barometer) and every barometer sample (z) by the second-order filter
  p += 2 w T e, v += w^2 T e (e the innovation, T the sample period, w the crossover:
  `gps_crossover_rad_s` 1, `baro_crossover_rad_s` 2).
A sensor switched off leaves its part of the estimate equal to the truth.

With `control_on = "estimate"` the swarm's compiled controller reads `control_state` (the
estimate in the layout of the world's state arrays) and the wrench is then recomputed from the
true attitude and velocity, so physics never sees the estimate.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.array_log import FOLDER as ARRAY_FOLDER
from skyswarm.core.array_log import ArrayLog
from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.core.geo import wrap_angle
from skyswarm.uav.estimation_kernel import attitude_and_propagation, truth_arrays
from skyswarm.uav.sensors import (
    Sensor,
    SensorsConfig,
    Setting,
    Truth,
    registered_sensors,
    sampling_order,
    ticks_of,
)

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.uav.swarm import Swarm

_NEVER = 1 << 62  # a tick no run reaches
COMPASS_TAU_S = 1.0  # yaw pulled toward the compass with this time constant
CSV_HEADER = (
    "time_s,id,x,y,z,est_x,est_y,est_z,vx,vy,vz,est_vx,est_vy,est_vz,"
    "roll,pitch,yaw,est_roll,est_pitch,est_yaw"
)  # then the columns of each sensor on that records some (the GPS: gps_ex, gps_ey, gps_ez)


def euler_to_quat(e: np.ndarray) -> np.ndarray:
    """(N, 3) roll, pitch, yaw (Z-Y-X) -> (N, 4) quaternions (x, y, z, w)."""
    cr, sr = np.cos(e[:, 0] / 2), np.sin(e[:, 0] / 2)
    cp, sp = np.cos(e[:, 1] / 2), np.sin(e[:, 1] / 2)
    cy, sy = np.cos(e[:, 2] / 2), np.sin(e[:, 2] / 2)
    return np.stack(
        [
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
            cr * cp * cy + sr * sp * sy,
        ],
        axis=1,
    )


class SensorSuite:
    """The sensors and the estimate of one swarm's N agents, all (N, ...) arrays.

    `sensors` are the registered sensors switched on (name -> `Sensor`, in sampling order);
    `position`, `velocity`, `euler`, `body_rate` the estimate; `gps_error` (N, 3) m the
    position input's last fix error (zeros without one)."""

    @classmethod
    def create(cls, swarm: Swarm, config: SensorsConfig) -> SensorSuite | None:
        """The suite, or None when every sensor is off (the `ideal` preset)."""
        return cls(swarm, config) if config.active else None

    def __init__(self, swarm: Swarm, config: SensorsConfig) -> None:
        self.swarm, self.config = swarm, config
        self.sim = swarm.sim
        self.rng = swarm.sim.rng.sensors
        self.dt = dt = swarm.dt
        n = self.n = swarm.n
        self.drives_control = config.control_on == "estimate"
        self._slots = np.ascontiguousarray(swarm.slots, dtype=np.int64)  # the compiled reads'
        self._last_velocity = np.zeros((n, 3))
        truth = self._truth()
        self._last_velocity = truth.velocity.copy()
        boxes, yaws = _boxes_of(swarm)
        scenario = swarm.sim.scenario
        setting = Setting(
            n, dt, swarm.g, boxes, self.rng, swarm.sim.world, np.asarray(swarm.slots),
            swarm.ids, yaws, getattr(scenario, "world", None), getattr(scenario, "base_dir", None),
        )  # fmt: skip
        built = {}  # built (and their start states drawn) in registration order
        for name in config.enabled():
            built[name] = registered_sensors()[name](config.resolved(name), setting, truth)
        self.sensors: dict[str, Sensor] = {s: built[s] for s in sampling_order(list(built))}
        self._sensor_list = list(self.sensors.values())
        self.on = frozenset(built)
        self._inputs = {s.feeds: s for s in built.values() if s.feeds is not None}
        # No sensor feeds the estimate and control flies the truth (e.g. only the proximity
        # sensor on): the estimate is the truth, so a tick only copies position and velocity
        # (and samples the sensors due); the attitude is derived when read (`euler`), and
        # `control_state` (read only when control flies the estimate) keeps its start values.
        self._truth_only = (
            not self._inputs
            and not self.drives_control
            and all(type(s).step is Sensor.step for s in built.values())
        )
        self._attitude_stale = False
        # IMU, AHRS and heading all on (the qrsim preset): attitude and propagation compiled
        self._compiled = all(f in self._inputs for f in ("inertial", "attitude", "heading"))
        self._start_estimate(truth)
        self._g = np.array([0.0, 0.0, swarm.g])
        heading = self._inputs.get("heading")
        self._heading_gain = min(heading.every * dt / COMPASS_TAU_S, 1.0) if heading else 0.0
        self.sq_error_sum = 0.0  # sum over ticks of the mean squared position error, m^2
        self.samples = 0
        self._record_every = (
            ticks_of(1.0 / config.record_hz, dt, "record_hz") if config.record_hz > 0 else 0
        )
        self._csv: Path | None = None  # sensors.csv, appended at each record (no open file)
        self._due_from, self._due_at = 0, -1  # `_due`: no tick is due in [from, at) (none yet)
        self._array_logs: dict[str, ArrayLog] = {}  # by sensor name, made at the first record
        self.sim.add_post_tick(self.update)

    def _start_estimate(self, truth: Truth) -> None:
        """The estimate from the sensors' first view of the start pose, and the controller's
        view of it in the layout of core.state.BodyState (rows 0..N-1)."""
        n, inputs = self.n, self._inputs
        gps, altitude = inputs.get("position"), inputs.get("altitude")
        self._zero_error = np.zeros((n, 3))
        self.position = truth.position + (gps.error if gps else self._zero_error)
        if gps is not None:
            self._history: deque[np.ndarray] = deque(maxlen=gps.latency + 1)
        if altitude is not None:
            self.position[:, 2] = altitude.altitude
        self.velocity = truth.velocity.copy()
        ahrs, heading = inputs.get("attitude"), inputs.get("heading")
        self.euler = (ahrs.euler if ahrs else truth.euler).copy()
        if ahrs is not None and heading is not None:
            self.euler[:, 2] = heading.yaw
        self.body_rate = truth.body_rate.copy()
        self.control_state = SimpleNamespace(
            position=self.position,
            linear_velocity=self.velocity,
            orientation=euler_to_quat(self.euler),
            angular_velocity=np.zeros((n, 3)),
        )
        self._sync_control()

    def restart(self, rows: np.ndarray) -> None:
        """The estimate of agents `rows` (k,) set to their true state now plus the position
        input's current error (after a teleport: an RL environment's reset). The sensors' own
        processes (GPS random walk, biases) go on; the next update corrects from there."""
        truth = self._truth()
        self._last_velocity[rows] = truth.velocity[rows]
        self.position[rows] = truth.position[rows] + self.gps_error[rows]
        self.velocity[rows] = truth.velocity[rows]
        self.euler[rows] = truth.euler[rows]
        self.body_rate[rows] = truth.body_rate[rows]
        self._sync_control()

    # the attitude estimate: derived from the truth when read after truth-only ticks
    @property
    def euler(self) -> np.ndarray:
        """(N, 3) rad, the estimated roll, pitch, yaw (Z-Y-X)."""
        if self._attitude_stale:
            self._refresh_attitude()
        return self._euler

    @euler.setter
    def euler(self, value: np.ndarray) -> None:
        self._euler = value

    @property
    def body_rate(self) -> np.ndarray:
        """(N, 3) rad/s, the estimated body rates."""
        if self._attitude_stale:
            self._refresh_attitude()
        return self._body_rate

    @body_rate.setter
    def body_rate(self, value: np.ndarray) -> None:
        self._body_rate = value

    def _refresh_attitude(self) -> None:
        """What `_update_attitude` gives with no attitude input: the true attitude and rates."""
        self._attitude_stale = False
        state, rows = self.sim.world.state, self.swarm.rows
        rot = quat_to_matrix(state.orientation[rows])
        self._body_rate[:] = np.einsum("nji,nj->ni", rot, state.angular_velocity[rows])
        self._euler[:] = euler_from_matrix(rot)

    def sensor(self, name: str) -> Sensor | None:
        """The sensor `name` if it is on, else None."""
        return self.sensors.get(name)

    @property
    def gps_error(self) -> np.ndarray:
        """(N, 3) m: the position input's last fix minus the truth; zeros without one."""
        gps = self._inputs.get("position")
        return gps.error if gps is not None else self._zero_error

    # -- truth ------------------------------------------------------------------------------
    def _truth(self) -> Truth:
        """The swarm's true state now (sensors.base.Truth); accel is the velocity change since
        the last update over one tick. quat_to_matrix, the einsum of the body rates and
        euler_from_matrix, compiled (uav/estimation_kernel.py) but for numpy's arctan2 and
        arcsin, whose bits are numpy's own."""
        state, rows, n = self.sim.world.state, self.swarm.rows, self.n
        rot, rate, accel = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3))
        ys, xs, clip = np.empty((n, 3)), np.empty((n, 3)), np.empty(n)
        truth_arrays(
            self._slots, state.orientation, state.angular_velocity, state.linear_velocity,
            self._last_velocity, self.dt, rot, rate, accel, ys, xs, clip,
        )  # fmt: skip
        euler = np.arctan2(ys, xs)  # roll, (0), yaw
        euler[:, 1] = np.arcsin(clip)
        pos, vel = state.position[rows], state.linear_velocity[rows]
        return Truth(pos, vel, accel, euler, rate, rot, self.swarm.alive)

    # -- phase 6 ----------------------------------------------------------------------------
    def update(self, world: World) -> None:
        """Sample the sensors due this tick (the state after physics) and update the estimate."""
        tick = world.tick
        if self._truth_only and not self._due(tick):
            self._follow_truth()
            return
        truth = self._truth()
        self._last_velocity = truth.velocity.copy()
        for sensor in self._sensor_list:
            sensor.step(tick, truth)
            k = sensor.arrays_every
            if k and sensor.fresh and (tick // sensor.every) % k == 0:
                self._log_arrays(sensor, tick, world.time_s)
        if self._truth_only:
            # What the two updates below give with no input: position and velocity are the
            # truth's (copied: each axis is overwritten by it), the attitude and rates the
            # truth's, derived from the same state arrays by the same code when read.
            self.position[:] = truth.position
            self.velocity[:] = truth.velocity
            self._attitude_stale = True
        else:
            self._attitude_stale = False  # recomputed here
            if self._compiled:
                self._update_compiled()
            else:
                rot_est = self._update_attitude(truth)
                self._propagate(truth, rot_est)
            self._correct_translation(tick, truth)
        pos, alive = truth.position, truth.alive
        live = int(alive.sum())
        if live:
            d = self.position - pos
            self.sq_error_sum += float(np.einsum("ni,ni,n->", d, d, alive)) / live
            self.samples += 1
        if self._record_every and tick % self._record_every == 0:
            self._record(world.time_s, truth)

    def _due(self, tick: int) -> bool:
        """True when a sensor samples or the record is written at `tick`: the first such tick
        from the last one looked at is kept, so the ticks between cost one comparison."""
        if not self._due_from <= tick <= self._due_at:
            self._due_from, self._due_at = tick, self._next_due(tick)
        return tick == self._due_at

    def _next_due(self, tick: int) -> int:
        """The first tick >= `tick` at which a sensor samples or the record is written."""
        periods = [s.every for s in self.sensors.values()]
        if self._record_every:
            periods.append(self._record_every)
        return min((-(-tick // p) * p for p in periods), default=_NEVER)

    def _follow_truth(self) -> None:
        """A truth-only tick with nothing due: what `update` gives then, without the attitude
        (the estimate is the truth; its error adds zero). Velocity is copied where `update`
        integrates the true acceleration over the tick, which rounds the same to within ulps."""
        state, rows = self.sim.world.state, self.swarm.rows
        for sensor in self._sensor_list:
            sensor.fresh = False
        velocity = state.linear_velocity[rows]
        if self._last_velocity.shape == velocity.shape:
            np.copyto(self._last_velocity, velocity)  # no new array per tick
        else:
            self._last_velocity = velocity.copy()
        self.position[:] = state.position[rows]
        self.velocity[:] = velocity
        self._attitude_stale = True
        if self.swarm.alive.any():
            self.samples += 1

    def _update_attitude(self, truth: Truth) -> np.ndarray:
        """Body rates from the gyros, roll and pitch from the AHRS, yaw from the gyros and the
        heading input; the (N, 3, 3) estimated body-to-world rotations."""
        inertial, ahrs = self._inputs.get("inertial"), self._inputs.get("attitude")
        heading, dt = self._inputs.get("heading"), self.dt
        self.body_rate[:] = inertial.gyro if inertial is not None else truth.body_rate
        e = self.euler
        e[:, :2] = (ahrs.euler if ahrs is not None else truth.euler)[:, :2]
        if heading is not None:
            roll, q_, r_ = e[:, 0], self.body_rate[:, 1], self.body_rate[:, 2]
            e[:, 2] += dt * (q_ * np.sin(roll) + r_ * np.cos(roll)) / np.cos(e[:, 1])
            if heading.fresh:
                e[:, 2] += self._heading_gain * wrap_angle(heading.yaw - e[:, 2])
            e[:, 2] = wrap_angle(e[:, 2])
        elif ahrs is not None:
            e[:, 2] = wrap_angle(ahrs.euler[:, 2])
        else:
            e[:, 2] = truth.euler[:, 2]
        c = self.control_state
        c.orientation[:] = euler_to_quat(e)
        rot_est = quat_to_matrix(c.orientation)
        c.angular_velocity[:] = np.einsum("nij,nj->ni", rot_est, self.body_rate)
        return rot_est

    def _update_compiled(self) -> None:
        """`_update_attitude` and `_propagate` with the IMU, the AHRS and a heading input on,
        in one compiled pass (uav/estimation_kernel.py; the same operations in the same order,
        tests/uav/test_estimation_kernel.py)."""
        inputs, c = self._inputs, self.control_state
        inertial, heading = inputs["inertial"], inputs["heading"]
        attitude_and_propagation(
            self._euler, inertial.gyro, inputs["attitude"].euler, heading.yaw, heading.fresh,
            self._heading_gain, self.dt, self._body_rate, c.orientation, c.angular_velocity,
            np.empty((self.n, 3, 3)), inertial.specific_force, self._g, self.position,
            self.velocity,
        )  # fmt: skip

    def _propagate(self, truth: Truth, rot_est: np.ndarray) -> None:
        """Move position and velocity by the specific force rotated by the estimated attitude
        (the true acceleration without an IMU)."""
        inertial, dt = self._inputs.get("inertial"), self.dt
        if inertial is not None:
            a_est = np.einsum("nij,nj->ni", rot_est, inertial.specific_force) - self._g
        else:
            a_est = truth.accel
        self.position += dt * self.velocity + (0.5 * dt * dt) * a_est
        self.velocity += dt * a_est

    def _correct_translation(self, tick: int, truth: Truth) -> None:
        """Correct position and velocity with the position fixes and altitude samples due
        (axes without a sensor follow the truth)."""
        inputs, dt = self._inputs, self.dt
        gps, altitude = inputs.get("position"), inputs.get("altitude")
        pos, vel = truth.position, truth.velocity
        if gps is not None:
            self._history.append(self.position.copy())
            for fix in gps.arrivals(tick):
                then = self._history[0] if gps.latency else self.position
                axes = slice(0, 2) if altitude is not None else slice(0, 3)
                innovation = fix[:, axes] - then[:, axes]
                w = self.config.gps_crossover_rad_s
                self._correct(axes, innovation, gps.every * dt, w)
        else:
            self.position[:, :2] = pos[:, :2]
            self.velocity[:, :2] = vel[:, :2]
        if altitude is not None:
            if altitude.fresh:
                innovation = (altitude.altitude - self.position[:, 2])[:, None]
                w = self.config.baro_crossover_rad_s
                self._correct(slice(2, 3), innovation, altitude.every * dt, w)
        elif gps is None:
            self.position[:, 2] = pos[:, 2]
            self.velocity[:, 2] = vel[:, 2]

    def _correct(self, axes: slice, e: np.ndarray, period_s: float, w: float) -> None:
        kp = min(2.0 * w * period_s, 1.0)
        self.position[:, axes] += kp * e
        self.velocity[:, axes] += (w * w * period_s) * e

    def _sync_control(self) -> None:
        c = self.control_state
        c.orientation[:] = euler_to_quat(self.euler)
        rot = quat_to_matrix(c.orientation)
        c.angular_velocity[:] = np.einsum("nij,nj->ni", rot, self.body_rate)

    # -- outputs ----------------------------------------------------------------------------
    def rms_error_m(self) -> float:
        """RMS distance between estimated and true position over the run so far, m."""
        return float(np.sqrt(self.sq_error_sum / max(self.samples, 1)))

    def readings(self, rows: np.ndarray) -> dict[str, object]:
        """Each sensor's `reading(rows)` that is not None, by name (a controller's
        `SwarmState.readings`)."""
        out = {name: sensor.reading(rows) for name, sensor in self.sensors.items()}
        return {name: r for name, r in out.items() if r is not None}

    def _log_arrays(self, sensor: Sensor, tick: int, t: float) -> None:
        """Append the sensor's `arrays()` to the array log named after it (core/array_log.py;
        the header, with the agent ids and its constants, at the first record)."""
        recorder = self.sim.recorder
        if recorder is None:
            return
        arrays = sensor.arrays()
        log = self._array_logs.get(sensor.name)
        if log is None:
            constants = {"ids": np.asarray(self.swarm.ids), **sensor.array_constants()}
            log = ArrayLog(recorder.dir / ARRAY_FOLDER, sensor.name, arrays, constants)
            self._array_logs[sensor.name] = log
        log.append(tick, t, arrays)

    def _record(self, t: float, truth: Truth) -> None:
        """Append one row per agent to sensors.csv: the truth and the estimate, then each
        sensor's `columns` (registration order)."""
        recorder = self.sim.recorder
        if recorder is None:
            return
        recorded = [s for name, s in registered_in_order(self.sensors) if s.columns]
        if self._csv is None:
            self._csv = recorder.dir / "sensors.csv"
            header = ",".join([CSV_HEADER, *(c for s in recorded for c in s.columns)])
            self._csv.write_text(header + "\n", encoding="utf-8")
        ids = np.array([a.id for a in self.swarm.agents], dtype=float)
        rows = np.column_stack(
            [
                np.full(self.n, t),
                ids,
                truth.position,
                self.position,
                truth.velocity,
                self.velocity,
                truth.euler,
                self.euler,
                *(s.record() for s in recorded),
            ]
        )
        with open(self._csv, "a", encoding="utf-8") as f:
            # time to 10 digits and whole ids: rows join the trajectory's ticks and agent ids
            fmt = ["%.10g", "%d", *["%.6g"] * (rows.shape[1] - 2)]
            np.savetxt(f, rows, fmt=fmt, delimiter=",")


def registered_in_order(sensors: dict[str, Sensor]) -> list[tuple[str, Sensor]]:
    """(name, sensor) of `sensors` in registration order."""
    return [(name, sensors[name]) for name in registered_sensors() if name in sensors]


def _boxes_of(swarm: Swarm) -> tuple[np.ndarray, np.ndarray]:
    """(B, 6) centre and half size of the scenario's static boxes, and their (B,) yaw rad."""
    scenario = swarm.sim.scenario
    world = getattr(scenario, "world", None) if scenario is not None else None
    objects = [o for o in getattr(world, "obstacles", ()) or () if o.type == "box"]
    boxes = [(*o.center, *(s / 2 for s in o.size)) for o in objects]
    yaws = np.radians([o.yaw_deg for o in objects]) if objects else np.zeros(0)
    return np.array(boxes, dtype=float).reshape(-1, 6), yaws
