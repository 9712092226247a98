"""Lidar and rangefinders, `[uav.sensors.lidar]` and `[uav.sensors.rangefinder]`: beams fixed
in the body frame, cast for every UAV of the swarm in one `World.cast_rays` call per sample.

A pattern is `channels` rows of `beams` beams: azimuths spread over `fov_deg` (0 ahead,
counter-clockwise; a 360 deg scan starts ahead and never repeats a beam), elevations over
`vfov_deg` (0: a flat 2-D scan). The sensor frame is the body frame turned by `mount_rpy_deg`
(roll, pitch, yaw; pitch +90 points the forward beam straight down) and every beam starts at
the body centre plus `mount_m`. A beam never sees its own UAV: a hit on it is cast again
from just past it (on Bullet the airframe is several convex parts, and a ray from inside one
meets the others; `_cast_past_own`).
The same class with other defaults is the single-beam rangefinder (down, 10 m).

What a sample holds, (N, M) arrays, M = channels x beams (channel-major):
- `ranges` m: the distance to the nearest hit plus white noise (`sigma_m`, clipped at 0);
  NaN for no return (nothing within `max_range_m`, a dropout with probability `dropout`, a
  dead UAV);
- `hit`: what the beam hit, as the world names it: a body slot (>= 0), GROUND (-1), the k-th
  obstacle or terrain (-2 - k), or `rays.MISS`; `agent`: the index of this swarm's UAV hit,
  else -1;
- `origins` (N, 3) m and `directions` (N, M, 3) unit vectors, world frame; `rotation`
  (N, 3, 3) the body-to-world rotations of the scan.
With `record_every = k` every k-th scan goes to the results directory's array log `lidar`
(`arrays()`; read with `skyswarm.load_arrays(dir, "lidar")`).
Noise and dropout draw (N, M) normals then (N, M) uniforms from the `sensors` stream at every
sample, whatever was hit, so one seed gives one scan sequence.

Usage, in a scenario (a 32-beam horizontal scan at 10 Hz) and in a behaviour:

    [uav.sensors.lidar]
    enabled = true
    beams = 32
    period_s = 0.1

    lidar = swarm.sensors.sensor("lidar")     # None while it is off
    nearest = np.nanmin(lidar.ranges, axis=1)  # (N,) m, NaN: nothing in range
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.backends.rays import MISS
from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor

# A beam never sees its own UAV: past a hit on it, cast again this far on, at most this often
# (Bullet's quadrotor is 6 convex parts; 2 mm: Bullet's ray test hits a surface within 1 mm)
OWN_STEP_M = 0.002  # m
OWN_PARTS = 6


@dataclass(frozen=True)
class LidarConfig:
    """lidar: ranges along beams fixed in the body frame (a scan, a 3-D pattern, one beam)"""

    enabled: bool | None = param(None, "cast the beams")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    beams: int | None = param(None, "beams per channel (azimuths)", ge=1)
    fov_deg: float | None = param(None, "azimuth spread, deg (360: a full turn)", ge=0, le=360)
    channels: int | None = param(None, "rows of beams (elevations)", ge=1)
    vfov_deg: float | None = param(None, "elevation spread, deg (0: a flat scan)", ge=0, le=180)
    max_range_m: float | None = param(None, "maximum range, m", gt=0.0)
    sigma_m: float | None = param(None, "range noise (white), m", ge=0.0)
    dropout: float | None = param(None, "probability that a beam returns nothing", ge=0, le=1)
    mount_m: tuple[float, float, float] | None = param(None, "beam origin, body frame, m")
    mount_rpy_deg: tuple[float, float, float] | None = param(
        None, "sensor frame: roll, pitch, yaw from the body frame, deg (pitch 90: down)"
    )
    record_every: int | None = param(
        None, "write every k-th scan to the results' array log (arrays/NAME.bin), 0: never", ge=0
    )


@dataclass(frozen=True)
class ScanReading:
    """A controller's view of the last scan (`SwarmState.lidar`, `.rangefinder`) for its n
    agents: `tick` of the scan (-1: none yet), `ranges` (n, M) m (NaN: no return), `hit` and
    `agent` (n, M) as on `Lidar`, `origins` (n, 3) m and `directions` (n, M, 3) world frame."""

    tick: int
    ranges: np.ndarray
    hit: np.ndarray
    agent: np.ndarray
    origins: np.ndarray
    directions: np.ndarray


def beam_directions(cfg: LidarConfig) -> np.ndarray:
    """(channels x beams, 3) unit directions of the pattern in the body frame."""
    if cfg.fov_deg >= 360.0:
        az = 2 * np.pi * np.arange(cfg.beams) / cfg.beams
    else:
        az = np.radians(np.linspace(-cfg.fov_deg / 2, cfg.fov_deg / 2, cfg.beams))
        az = az if cfg.beams > 1 else np.zeros(1)
    el = np.radians(np.linspace(-cfg.vfov_deg / 2, cfg.vfov_deg / 2, cfg.channels))
    el = el if cfg.channels > 1 else np.zeros(1)
    e, a = np.meshgrid(el, az, indexing="ij")
    sensor = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1)
    return sensor.reshape(-1, 3) @ mount_rotation(cfg.mount_rpy_deg).T


def mount_rotation(rpy_deg: tuple[float, float, float]) -> np.ndarray:
    """(3, 3) sensor-to-body rotation, Z-Y-X: yaw, then pitch, then roll (deg)."""
    r, p, y = np.radians(rpy_deg)
    rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    return rz @ ry @ rx


@register_sensor
class Lidar(Sensor):
    """The last scan of the swarm: `ranges`, `hit`, `agent`, `origins`, `directions` (see the
    module docstring); NaN ranges before the first sample."""

    name = "lidar"
    Config = LidarConfig
    defaults = LidarConfig(
        enabled=False,  # off unless a scenario turns it on (it costs ray casts)
        period_s=0.1,  # s, 10 Hz
        beams=32,
        fov_deg=360.0,
        channels=1,
        vfov_deg=0.0,
        max_range_m=20.0,  # m
        sigma_m=0.02,  # m
        dropout=0.0,
        mount_m=(0.0, 0.0, 0.0),  # m
        mount_rpy_deg=(0.0, 0.0, 0.0),  # deg
        record_every=0,  # scans: no array log
    )
    columns = ("lidar_min_m",)

    def __init__(self, cfg: LidarConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        world = setting.world
        if world is None or not world.capabilities.rays:
            physics = "none" if world is None else world.name
            raise ConfigError(
                "", f"uav.sensors.{self.name}.enabled", True,
                f"false: physics {physics!r} casts no rays (use 'bullet' or 'fast')",
            )  # fmt: skip
        self.world, self.slots = world, np.asarray(setting.slots, dtype=np.int64)
        self.beams_body = beam_directions(cfg)  # (M, 3)
        self.mount = np.asarray(cfg.mount_m, dtype=float)
        m = len(self.beams_body)
        self.ranges = np.full((self.n, m), np.nan)
        self.hit = np.full((self.n, m), MISS, dtype=np.int64)
        self.agent = np.full((self.n, m), -1, dtype=np.int64)
        self.origins = truth.position.copy()
        self.rotation = truth.rotation.copy()  # (N, 3, 3) body to world at the last scan
        self.directions = np.zeros((self.n, m, 3))
        # body slot -> agent index of this swarm (-1: a body of another swarm or none)
        self._agent_of_slot = np.full(int(self.slots.max(initial=-1)) + 2, -1, dtype=np.int64)
        self._agent_of_slot[self.slots] = np.arange(self.n)

    def sample(self, tick: int, truth: Truth) -> None:
        n, m = self.ranges.shape
        rot = self.rotation = truth.rotation
        self.origins = truth.position + rot @ self.mount
        self.directions = np.einsum("nij,mj->nmi", rot, self.beams_body)
        live = np.flatnonzero(truth.alive)
        d = np.full((n, m), np.inf)
        hit = np.full((n, m), MISS, dtype=np.int64)
        if len(live):
            o = np.repeat(self.origins[live], m, axis=0)
            own = np.repeat(self.slots[live], m)
            dist, ids = self._cast_past_own(o, self.directions[live].reshape(-1, 3), own)
            d[live], hit[live] = dist.reshape(-1, m), ids.reshape(-1, m)
        noise = self.cfg.sigma_m * self.rng.standard_normal((n, m))
        lost = self.rng.random((n, m)) < self.cfg.dropout
        returned = np.isfinite(d) & ~lost
        self.ranges = np.where(returned, np.maximum(d + noise, 0.0), np.nan)
        self.hit = np.where(returned, hit, MISS)
        body = returned & (hit >= 0) & (hit < len(self._agent_of_slot))
        self.agent = np.where(body, self._agent_of_slot[np.where(body, hit, 0)], -1)

    def _cast_past_own(
        self, origins: np.ndarray, dirs: np.ndarray, own: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """World.cast_rays of (R, 3) origins and unit directions, never stopping at the ray's
        own UAV (`own` (R,) its slot). On Bullet a UAV is a compound of convex hulls (hub,
        arms, motors, legs, nose): a ray from inside the hub does not see the hub but meets
        the other parts from outside. Such a ray is cast again from just past that hit, up to
        OWN_PARTS times (then: no return); on the fast backend (the UAV one box) never."""
        t_max = self.cfg.max_range_m
        dist, ids = self.world.cast_rays(origins, dirs, t_max)
        for _ in range(OWN_PARTS):
            again = np.flatnonzero(ids == own)
            if not len(again):
                return dist, ids
            start = dist[again] + OWN_STEP_M  # m along the ray, past the own part
            o2 = origins[again] + start[:, None] * dirs[again]
            d2, i2 = self.world.cast_rays(o2, dirs[again], t_max)
            beyond = start + d2 > t_max
            dist[again] = np.where(beyond, np.inf, start + d2)
            ids[again] = np.where(beyond, MISS, i2)
        ids = np.where(ids == own, MISS, ids)
        return np.where(ids == MISS, np.inf, dist), ids

    def reading(self, rows: np.ndarray) -> ScanReading:
        """The last scan of the swarm indices `rows` (copies)."""
        return ScanReading(
            self.sampled_tick, self.ranges[rows], self.hit[rows], self.agent[rows],
            self.origins[rows], self.directions[rows],
        )  # fmt: skip

    def arrays(self) -> dict[str, np.ndarray]:
        """The array log's record: `ranges` (N, M) float32 m (NaN: no return), `hit` (N, M)
        int64, `origins` (N, 3) m and `rotation` (N, 3, 3) body to world, float32 (a beam's
        world direction: rotation @ beams_body)."""
        return {
            "ranges": self.ranges.astype(np.float32),
            "hit": self.hit,
            "origins": self.origins.astype(np.float32),
            "rotation": self.rotation.astype(np.float32),
        }

    def array_constants(self) -> dict[str, np.ndarray]:
        """`beams_body` (M, 3): the beams' unit directions in the body frame."""
        return {"beams_body": self.beams_body}

    def record(self) -> np.ndarray:
        """(N, 1): the shortest range of the last scan, m (NaN: no return)."""
        r = self.ranges
        out = np.full(self.n, np.nan)
        seen = np.isfinite(r).any(axis=1)
        out[seen] = np.nanmin(r[seen], axis=1)
        return out[:, None]


@register_sensor
class Rangefinder(Lidar):
    """A single downward beam (height above what lies below), beside a lidar if wanted."""

    name = "rangefinder"
    defaults = LidarConfig(
        enabled=False,
        period_s=0.05,  # s, 20 Hz
        beams=1,
        fov_deg=0.0,
        channels=1,
        vfov_deg=0.0,
        max_range_m=10.0,  # m
        sigma_m=0.01,  # m
        dropout=0.0,
        mount_m=(0.0, 0.0, 0.0),  # m
        mount_rpy_deg=(0.0, 90.0, 0.0),  # deg: pitched down
        record_every=0,  # samples: no array log
    )
    columns = ("rangefinder_m",)
