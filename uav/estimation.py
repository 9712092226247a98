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

from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.core.geo import wrap_angle
from skyswarm.uav.sensors import (
    GaussMarkov,
    GpsModel,
    RandomWalk,
    Scan,
    SensorsConfig,
    scan,
    ticks_of,
)

if TYPE_CHECKING:
    from skyswarm.core.world import World
    from skyswarm.uav.swarm import Swarm

COMPASS_TAU_S = 1.0  # yaw pulled toward the compass with this time constant
CSV_HEADER = (
    "time_s,id,x,y,z,est_x,est_y,est_z,vx,vy,vz,est_vx,est_vy,est_vz,"
    "roll,pitch,yaw,est_roll,est_pitch,est_yaw,gps_ex,gps_ey,gps_ez"
)


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
    """The sensors and the estimate of one swarm's N agents, all (N, ...) arrays."""

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
        cfg = {name: config.resolved(name) for name in ("gps", "baro", "imu", "attitude")}
        cfg.update({name: config.resolved(name) for name in ("compass", "proximity")})
        self.cfg = cfg
        self.every = {}
        for name, c in cfg.items():
            if c["enabled"] and "period_s" in c:
                self.every[name] = ticks_of(c["period_s"], dt, f"{name}.period_s")
        on = {name for name, c in cfg.items() if c["enabled"]}
        self.on = on
        rng = self.rng
        # truth now
        pos, vel, euler, rate, _ = self._truth()
        self._last_velocity = vel.copy()
        self.gps_error = np.zeros((n, 3))
        self.gps: GpsModel | None = None
        if "gps" in on:
            self.gps = GpsModel(cfg["gps"], n, rng)
            self.gps_error = self.gps.error = np.einsum(
                "nis,ns->ni",
                self.gps.rows,
                np.broadcast_to(self.gps.pseudorange.x, (n, len(self.gps.los))),
            )
            self.latency = ticks_of(cfg["gps"]["latency_s"], dt, "gps.latency_s", allow_zero=True)
            self._history: deque[np.ndarray] = deque(maxlen=self.latency + 1)
            self._pending: deque[tuple[int, np.ndarray]] = deque()
        self.baro_bias: GaussMarkov | None = None
        if "baro" in on:
            b = cfg["baro"]
            self.baro_bias = GaussMarkov(
                (n,), b["bias_sigma_m"], b["bias_tau_s"], b["period_s"], rng
            )
        self.gyro_bias = self.accel_bias = None
        if "imu" in on:
            i = cfg["imu"]
            self.gyro_bias = RandomWalk((n, 3), i["gyro_bias_walk"], i["period_s"], rng)
            self.accel_bias = RandomWalk((n, 3), i["accel_bias_walk"], i["period_s"], rng)
        self.gyro = rate.copy()  # (N, 3) rad/s, the last gyro sample
        self.baro_altitude = pos[:, 2].copy()  # (N,) m, the last barometer sample
        self.compass_yaw = euler[:, 2].copy()  # (N,) rad ENU, the last compass sample (unwrapped)
        g = swarm.g  # m/s^2, the world's gravity: what the accelerometers feel at rest
        self.specific_force = np.tile([0.0, 0.0, g], (n, 1))  # (N, 3) m/s^2 body, last sample
        self.attitude_noise: GaussMarkov | None = None
        if "attitude" in on:
            a = cfg["attitude"]
            self.attitude_noise = GaussMarkov((n, 3), a["sigma_rad"], a["tau_s"], dt, rng)
        # the estimate, started from the sensors' first view of the start pose
        self.position = pos + self.gps_error
        if self.baro_bias is not None:
            self.position[:, 2] = pos[:, 2] + self.baro_bias.x
        self.velocity = vel.copy()
        self.euler = euler.copy()
        if self.attitude_noise is not None:
            self.euler += self.attitude_noise.x
            if "compass" in on:
                self.euler[:, 2] = euler[:, 2]
        self.body_rate = rate.copy()
        self.scan: Scan | None = None
        self._g = np.array([0.0, 0.0, g])
        self._compass_gain = (
            min(self.every["compass"] * dt / COMPASS_TAU_S, 1.0) if "compass" in on else 0.0
        )
        self._boxes = _boxes_of(swarm)
        # the controller's view, in the layout of core.state.BodyState (rows 0..N-1)
        self.control_state = SimpleNamespace(
            position=self.position,
            linear_velocity=self.velocity,
            orientation=euler_to_quat(self.euler),
            angular_velocity=np.zeros((n, 3)),
        )
        self._sync_control()
        self.sq_error_sum = 0.0  # sum over ticks of the mean squared position error, m^2
        self.samples = 0
        self._record_every = (
            ticks_of(1.0 / config.record_hz, dt, "record_hz") if config.record_hz > 0 else 0
        )
        self._csv: Path | None = None  # sensors.csv, appended at each record (no open file)
        self.sim.add_post_tick(self.update)

    # -- truth ------------------------------------------------------------------------------
    def _truth(self) -> tuple[np.ndarray, ...]:
        """(N, 3) true position m, velocity m/s, Euler angles rad, body rates rad/s, and the
        (N, 3, 3) body-to-world rotations."""
        state, rows = self.sim.world.state, self.swarm.rows
        rot = quat_to_matrix(state.orientation[rows])
        rate = np.einsum("nji,nj->ni", rot, state.angular_velocity[rows])
        pos, vel = state.position[rows], state.linear_velocity[rows]
        return pos, vel, euler_from_matrix(rot), rate, rot

    # -- phase 6 ----------------------------------------------------------------------------
    def update(self, world: World) -> None:
        """Sample the sensors due this tick (the state after physics) and update the estimate."""
        tick = world.tick
        dt, on, every, rng, n = self.dt, self.on, self.every, self.rng, self.n
        pos, vel, euler, rate, rot = self._truth()
        accel = (vel - self._last_velocity) / dt
        self._last_velocity = vel.copy()
        # inertial sensors
        if "imu" in on:
            if tick % every["imu"] == 0:
                imu = self.cfg["imu"]
                force_world = accel + self._g
                self.specific_force = (
                    np.einsum("nji,nj->ni", rot, force_world)
                    + self.accel_bias.step()
                    + imu["accel_sigma_m_s2"] * rng.standard_normal((n, 3))
                )
                self.gyro = (
                    rate
                    + self.gyro_bias.step()
                    + imu["gyro_sigma_rad_s"] * rng.standard_normal((n, 3))
                )
            self.body_rate[:] = self.gyro
        else:
            self.body_rate[:] = rate
        # attitude: roll and pitch from the AHRS; yaw from the gyros and the compass
        e = self.euler
        if self.attitude_noise is not None:
            noise = self.attitude_noise.step()
            e[:, :2] = euler[:, :2] + noise[:, :2]
        else:
            e[:, :2] = euler[:, :2]
        if "compass" in on:
            roll, q_, r_ = e[:, 0], self.body_rate[:, 1], self.body_rate[:, 2]
            e[:, 2] += dt * (q_ * np.sin(roll) + r_ * np.cos(roll)) / np.cos(e[:, 1])
            if tick % every["compass"] == 0:
                sigma = self.cfg["compass"]["sigma_rad"]
                reading = euler[:, 2] + sigma * rng.standard_normal(n)
                self.compass_yaw = reading
                e[:, 2] += self._compass_gain * wrap_angle(reading - e[:, 2])
            e[:, 2] = wrap_angle(e[:, 2])
        elif self.attitude_noise is not None:
            e[:, 2] = wrap_angle(euler[:, 2] + self.attitude_noise.x[:, 2])
        else:
            e[:, 2] = euler[:, 2]
        c = self.control_state
        c.orientation[:] = euler_to_quat(e)
        rot_est = quat_to_matrix(c.orientation)
        c.angular_velocity[:] = np.einsum("nij,nj->ni", rot_est, self.body_rate)
        # translation: propagate, then correct with the fixes due
        if "imu" in on:
            a_est = np.einsum("nij,nj->ni", rot_est, self.specific_force) - self._g
        else:
            a_est = accel
        self.position += dt * self.velocity + (0.5 * dt * dt) * a_est
        self.velocity += dt * a_est
        gps = self.gps
        if gps is not None:
            self._history.append(self.position.copy())
            if tick % every["gps"] == 0:
                self.gps_error = gps.step()
                self._pending.append((tick + self.latency, pos + self.gps_error))
            while self._pending and self._pending[0][0] <= tick:
                _, fix = self._pending.popleft()
                then = self._history[0] if self.latency else self.position
                axes = slice(0, 2) if self.baro_bias is not None else slice(0, 3)
                innovation = fix[:, axes] - then[:, axes]
                w = self.config.gps_crossover_rad_s
                self._correct(axes, innovation, every["gps"] * dt, w)
        else:
            self.position[:, :2] = pos[:, :2]
            self.velocity[:, :2] = vel[:, :2]
        if self.baro_bias is not None:
            if tick % every["baro"] == 0:
                sigma = self.cfg["baro"]["noise_sigma_m"]
                h = pos[:, 2] + self.baro_bias.step() + sigma * rng.standard_normal(n)
                self.baro_altitude = h
                innovation = (h - self.position[:, 2])[:, None]
                self._correct(
                    slice(2, 3), innovation, every["baro"] * dt, self.config.baro_crossover_rad_s
                )
        elif gps is None:
            self.position[:, 2] = pos[:, 2]
            self.velocity[:, 2] = vel[:, 2]
        if "proximity" in on and tick % every["proximity"] == 0:
            self.scan = scan(
                pos, euler[:, 2], self.swarm.alive, self._boxes, self.cfg["proximity"], rng
            )
        alive = self.swarm.alive
        live = int(alive.sum())
        if live:
            d = self.position - pos
            self.sq_error_sum += float(np.einsum("ni,ni,n->", d, d, alive)) / live
            self.samples += 1
        if self._record_every and tick % self._record_every == 0:
            self._record(world.time_s, pos, vel, euler)

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

    def _record(self, t: float, pos: np.ndarray, vel: np.ndarray, euler: np.ndarray) -> None:
        recorder = self.sim.recorder
        if recorder is None:
            return
        if self._csv is None:
            self._csv = recorder.dir / "sensors.csv"
            self._csv.write_text(CSV_HEADER + "\n", encoding="utf-8")
        ids = np.array([a.id for a in self.swarm.agents], dtype=float)
        rows = np.column_stack(
            [
                np.full(self.n, t),
                ids,
                pos,
                self.position,
                vel,
                self.velocity,
                euler,
                self.euler,
                self.gps_error,
            ]
        )
        with open(self._csv, "a", encoding="utf-8") as f:
            np.savetxt(f, rows, fmt="%.6g", delimiter=",")


def _boxes_of(swarm: Swarm) -> np.ndarray:
    """(B, 6) centre and half size of the scenario's static boxes (their yaw is ignored)."""
    scenario = swarm.sim.scenario
    world = getattr(scenario, "world", None) if scenario is not None else None
    objects = getattr(world, "obstacles", ()) or ()
    boxes = [(*o.center, *(s / 2 for s in o.size)) for o in objects if o.type == "box"]
    return np.array(boxes, dtype=float).reshape(-1, 6)
