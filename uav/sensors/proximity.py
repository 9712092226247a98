"""The proximity sensor, `[uav.sensors.proximity]`: range and bearing of the other UAVs and of
the scenario's boxes within range and field of view. It feeds no estimator input: the avoidance
layer (uav/avoidance.py) reads its `scan`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor


@dataclass(frozen=True)
class ProximityConfig:
    """proximity: range and bearing of other UAVs (and boxes) in range and field of view"""

    enabled: bool | None = param(None, "scan for nearby UAVs and obstacles")
    period_s: float | None = param(None, "scan period, s (whole ticks)", gt=0.0)
    range_m: float | None = param(None, "detection range, m", gt=0.0)
    fov_deg: float | None = param(None, "horizontal field of view about the heading, deg", gt=0)
    range_sigma_m: float | None = param(None, "range noise, m", ge=0.0)
    bearing_sigma_rad: float | None = param(None, "bearing noise, rad", ge=0.0)


@dataclass
class Scan:
    """One proximity scan of N agents: (N, M) arrays, M = N other UAVs then the boxes.

    `detected` bool; `range_m` and `bearing_rad` (relative to the heading, counter-clockwise)
    with noise, NaN where nothing is detected; `elevation_rad` above the horizontal (+ up),
    without noise (its draws would shift the sensors stream of every run), NaN likewise;
    `target` the target index (< N: agent index)."""

    detected: np.ndarray
    range_m: np.ndarray
    bearing_rad: np.ndarray
    elevation_rad: np.ndarray


def scan(
    positions: np.ndarray,
    yaws: np.ndarray,
    alive: np.ndarray,
    boxes: np.ndarray,
    cfg: ProximityConfig,
    rng,
) -> Scan:
    """Range/bearing of live UAVs and of the nearest point of each box (B, 6: centre, half
    size, axis-aligned) within `range_m` and `fov_deg` of each live agent; (N, N + B)."""
    n = len(positions)
    targets = positions
    if len(boxes):
        c, h = boxes[:, None, :3], boxes[:, None, 3:6]
        nearest = np.clip(positions[None, :, :], c - h, c + h)  # (B, N, 3)
        d_box = nearest - positions[None, :, :]
    rel = targets[None, :, :] - positions[:, None, :]  # (N, N, 3)
    if len(boxes):
        rel = np.concatenate([rel, d_box.transpose(1, 0, 2)], axis=1)
    dist = np.linalg.norm(rel, axis=2)
    bearing = np.arctan2(rel[..., 1], rel[..., 0]) - yaws[:, None]
    bearing = (bearing + np.pi) % (2 * np.pi) - np.pi
    half_fov = np.radians(cfg.fov_deg) / 2
    ok = (dist <= cfg.range_m) & (np.abs(bearing) <= half_fov + 1e-12)
    ok[:, :n] &= alive[None, :]
    ok[np.arange(n), np.arange(n)] = False
    ok &= alive[:, None]
    noisy_r = dist + cfg.range_sigma_m * rng.standard_normal(dist.shape)
    noisy_b = bearing + cfg.bearing_sigma_rad * rng.standard_normal(dist.shape)
    elevation = np.arctan2(rel[..., 2], np.hypot(rel[..., 0], rel[..., 1]))
    return Scan(
        ok,
        np.where(ok, noisy_r, np.nan),
        np.where(ok, noisy_b, np.nan),
        np.where(ok, elevation, np.nan),
    )


@register_sensor
class Proximity(Sensor):
    """`scan`: the last `Scan` of the N agents (None before the first)."""

    name = "proximity"
    Config = ProximityConfig
    defaults = ProximityConfig(
        enabled=True,
        period_s=0.1,
        range_m=10.0,
        fov_deg=360.0,
        range_sigma_m=0.05,
        bearing_sigma_rad=0.02,
    )

    def __init__(self, cfg: ProximityConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.boxes = setting.boxes
        self.scan: Scan | None = None

    def sample(self, tick: int, truth: Truth) -> None:
        self.scan = scan(
            truth.position, truth.euler[:, 2], truth.alive, self.boxes, self.cfg, self.rng
        )
