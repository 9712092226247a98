"""The proximity / avoidance layer: a ring around each flying UAV coloured by how close its
nearest neighbour is, against the scenario's `[avoidance]` distances (core/config.py
`AvoidanceConfig`):

- red (PROX_HIT): nearer than `radius_m`, the combined radius of two UAVs (a hit);
- amber (PROX_NEAR): nearer than `separation_m`, where the avoidance layer's plain repulsion
  pushes the pair apart (uav/avoidance.py, step 4);
- green (PROX_CLEAR): nobody within `separation_m`.

The ring's radius is half of `separation_m`, so two rings touch exactly when the pair is at
the separation distance. Computed from the frame's positions only (one KD-tree query for the
whole swarm), so the replay draws what the live view drew, and the same with avoidance off
(the distances the avoidance would act on).

    lines = proximity_lines(frame, ProximityLimits.of(scenery))  # Renderer.render(extra=...)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.gui.scene import Frame, Scenery

RING_SEGMENTS = 20  # line segments per ring
PROX_HIT = (1.0, 0.15, 0.10, 0.95)  # RGBA: nearest neighbour closer than radius_m
PROX_NEAR = (1.0, 0.70, 0.10, 0.90)  # RGBA: closer than separation_m (repulsion acts)
PROX_CLEAR = (0.30, 0.90, 0.45, 0.55)  # RGBA: nobody within separation_m


@dataclass(frozen=True)
class ProximityLimits:
    """The distances the rings are coloured by, m (AvoidanceConfig's defaults)."""

    hit_m: float = 1.2  # avoidance.radius_m
    near_m: float = 2.5  # avoidance.separation_m

    @classmethod
    def of(cls, scenery: Scenery) -> ProximityLimits:
        """The scenario's (`Scenery.proximity_m`: [avoidance] radius_m, separation_m)."""
        hit, near = scenery.proximity_m
        return cls(float(hit), float(max(near, 1e-3)))


def nearest_distances(frame: Frame) -> np.ndarray:
    """(N,) m: each agent's distance to the nearest other alive, flying agent (inf: none; NaN
    for the agents not alive and flying)."""
    flying = frame.alive & frame.mobile & np.all(np.isfinite(frame.positions), axis=1)
    out = np.full(len(frame.ids), np.nan)
    idx = np.flatnonzero(flying)
    if len(idx) == 1:
        out[idx] = np.inf
    elif len(idx) > 1:
        from scipy.spatial import cKDTree

        pts = frame.positions[idx]
        d, _ = cKDTree(pts).query(pts, k=2)
        out[idx] = d[:, 1]
    return out


def ring_colors(distances: np.ndarray, limits: ProximityLimits) -> np.ndarray:
    """(N, 4) float32 RGBA of each ring (module docstring) from the (N,) nearest distances."""
    colors = np.empty((len(distances), 4), dtype=np.float32)
    colors[:] = PROX_CLEAR
    colors[distances < limits.near_m] = PROX_NEAR
    colors[distances < limits.hit_m] = PROX_HIT
    return colors


def proximity_lines(frame: Frame, limits: ProximityLimits) -> list[np.ndarray]:
    """Line vertices (position + RGBA rows, two per segment) of a horizontal ring of radius
    `limits.near_m` / 2 around each alive flying agent, in its colour; [] when there is none."""
    dist = nearest_distances(frame)
    idx = np.flatnonzero(~np.isnan(dist))
    if len(idx) == 0:
        return []
    ang = np.linspace(0.0, 2 * np.pi, RING_SEGMENTS + 1)
    unit = np.c_[np.cos(ang), np.sin(ang), np.zeros_like(ang)] * (limits.near_m / 2)
    seg = np.stack([unit[:-1], unit[1:]], axis=1).reshape(-1, 3)  # (2S, 3)
    n, v = len(idx), len(seg)
    out = np.empty((n, v, 7), dtype=np.float32)
    out[..., :3] = frame.positions[idx][:, None, :] + seg[None]
    out[..., 3:] = ring_colors(dist[idx], limits)[:, None, :]
    return [out.reshape(-1, 7)]
