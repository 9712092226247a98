"""The proximity sensor, `[uav.sensors.proximity]`: range and bearing of the other UAVs and of
the scenario's boxes within range and field of view, at most `max_targets` of them per UAV (the
nearest, as a radar's track list), so a scan is (N, K) whatever the swarm's size. It feeds no
estimator input: the avoidance layer (uav/avoidance.py) reads its `scan`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.backends import threaded
from skyswarm.core.schema import param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor
from skyswarm.uav.sensors.nearest import (
    mask_empty,
    nearest_targets,
    nearest_targets_parallel,
    scan_values,
)


@dataclass(frozen=True)
class ProximityConfig:
    """proximity: range and bearing of other UAVs (and boxes) in range and field of view"""

    enabled: bool | None = param(None, "scan for nearby UAVs and obstacles")
    period_s: float | None = param(None, "scan period, s (whole ticks)", gt=0.0)
    range_m: float | None = param(None, "detection range, m", gt=0.0)
    fov_deg: float | None = param(None, "horizontal field of view about the heading, deg", gt=0)
    range_sigma_m: float | None = param(None, "range noise, m", ge=0.0)
    bearing_sigma_rad: float | None = param(None, "bearing noise, rad", ge=0.0)
    max_targets: int | None = param(
        None, "targets reported per UAV and scan: the nearest this many (a track list)", ge=1
    )


@dataclass
class Scan:
    """One proximity scan of N agents: (N, K) slots, K = `max_targets`, each agent's K nearest
    targets seen (ties by target index), in order of target index, the empty slots last.

    `target` int64: the target's index (j < N: agent j; N + b: box b; -1: empty slot);
    `detected` bool (`target >= 0`); `range_m` and `bearing_rad` (relative to the heading,
    counter-clockwise) with noise, NaN in empty slots; `elevation_rad` above the horizontal
    (+ up), without noise (its draws would shift the sensors stream of every run), NaN
    likewise. `dense()` gives the (N, N + B) view of the same detections."""

    target: np.ndarray
    detected: np.ndarray
    range_m: np.ndarray
    bearing_rad: np.ndarray
    elevation_rad: np.ndarray

    def dense(self, m: int) -> Scan:
        """The same detections as (N, M) arrays indexed by target (M = N + B: every UAV, then
        the boxes; `target[i, j] = j` where detected, else -1), for small swarms and tests:
        O(N M) memory."""
        n = len(self.target)
        rows, slot = np.nonzero(self.detected)
        cols = self.target[rows, slot]
        out = [np.full((n, m), -1, dtype=np.int64), np.zeros((n, m), dtype=bool)]
        out += [np.full((n, m), np.nan) for _ in range(3)]
        out[0][rows, cols] = cols
        out[1][rows, cols] = True
        for a, name in zip(out[2:], ("range_m", "bearing_rad", "elevation_rad"), strict=True):
            a[rows, cols] = getattr(self, name)[rows, slot]
        return Scan(*out)


def scan(
    positions: np.ndarray,
    yaws: np.ndarray,
    alive: np.ndarray,
    boxes: np.ndarray,
    cfg: ProximityConfig,
    rng,
) -> Scan:
    """Range/bearing of each live agent's `max_targets` nearest live UAVs and nearest points of
    boxes (B, 6: centre, half size, axis-aligned) within `range_m` and `fov_deg`: (N, K) slots,
    found through a grid of the UAVs (uav/sensors/nearest.py; on numba's threads from
    core.backends.PARALLEL_MIN agents, the same result), O(N K) memory. Draws the range,
    then the bearing noise from `rng`: per (agent, target) pair when all N + B targets fit in
    the K slots (the dense model's draws, bit for bit), else per slot (`_noise`)."""
    n, k = len(positions), int(cfg.max_targets)
    target = np.empty((n, k), dtype=np.int64)
    rel = np.empty((n, k, 3))
    dist = np.empty((n, k))
    (nearest_targets_parallel if threaded(n) else nearest_targets)(
        np.ascontiguousarray(positions, dtype=float),
        np.ascontiguousarray(yaws, dtype=float),
        np.ascontiguousarray(alive, dtype=bool),
        np.ascontiguousarray(boxes, dtype=float).reshape(-1, 6),
        float(cfg.range_m),
        math.radians(cfg.fov_deg) / 2,
        target,
        rel,
        dist,
    )
    ok = target >= 0  # (empty slots: dist inf, masked out below)
    # numpy's arctan2s on the same strided views as ever (a contiguous input may take numpy's
    # vectorised arctan2, which differs in the last bit); the arithmetic around them compiled
    heading = np.arctan2(rel[..., 1], rel[..., 0])
    z_range, z_bearing = _noise(target, ok, n + len(boxes), rng)
    noisy_r, noisy_b, horizontal = np.empty((n, k)), np.empty((n, k)), np.empty((n, k))
    scan_values(
        target, dist, rel, heading, np.ascontiguousarray(yaws, dtype=float),
        np.ascontiguousarray(z_range), np.ascontiguousarray(z_bearing),
        float(cfg.range_sigma_m), float(cfg.bearing_sigma_rad), noisy_r, noisy_b, horizontal,
    )  # fmt: skip
    elevation = np.arctan2(rel[..., 2], horizontal)
    mask_empty(target, elevation)
    return Scan(target, ok, noisy_r, noisy_b, elevation)


def _scan_numpy(target, rel, dist, yaws, boxes, cfg, rng) -> Scan:
    """The numpy expressions `scan` computes after the search, kept as the reference its
    compiled pass is pinned to (tests/uav/test_scan_shortcuts.py)."""
    n = len(target)
    ok = target >= 0
    bearing = np.arctan2(rel[..., 1], rel[..., 0]) - yaws[:, None]
    bearing = (bearing + np.pi) % (2 * np.pi) - np.pi
    z_range, z_bearing = _noise(target, ok, n + len(boxes), rng)
    noisy_r = dist + cfg.range_sigma_m * z_range
    noisy_b = bearing + cfg.bearing_sigma_rad * z_bearing
    elevation = np.arctan2(rel[..., 2], np.hypot(rel[..., 0], rel[..., 1]))
    return Scan(
        target,
        ok,
        np.where(ok, noisy_r, np.nan),
        np.where(ok, noisy_b, np.nan),
        np.where(ok, elevation, np.nan),
    )


def _noise(target: np.ndarray, ok: np.ndarray, m: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(N, K) standard normals of the range and of the bearing of each slot. When every target
    fits in the slots (M = N + B <= K) they are drawn per (agent, target) pair, (N, M) each, so
    a small swarm's scan is the dense model's to the bit; else per slot, (N, K) each: never more
    than 2 N K draws."""
    n, k = target.shape
    if m > k:
        return rng.standard_normal((n, k)), rng.standard_normal((n, k))
    col = np.where(ok, target, 0)
    z_range, z_bearing = rng.standard_normal((n, m)), rng.standard_normal((n, m))
    return np.take_along_axis(z_range, col, 1), np.take_along_axis(z_bearing, col, 1)


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
        max_targets=16,
    )

    def __init__(self, cfg: ProximityConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.boxes = setting.boxes
        self.scan: Scan | None = None

    def sample(self, tick: int, truth: Truth) -> None:
        self.scan = scan(
            truth.position, truth.euler[:, 2], truth.alive, self.boxes, self.cfg, self.rng
        )
