"""The proximity / avoidance layer: a ring around each flying UAV coloured by how close its
nearest neighbour is, against the scenario's `[avoidance]` distances (core/config.py
`AvoidanceConfig`):

- red (PROX_HIT): nearer than `radius_m`, the combined radius of two UAVs (a hit);
- amber (PROX_NEAR): nearer than `separation_m`, where the avoidance layer's plain repulsion
  pushes the pair apart (uav/avoidance.py, step 4);
- green (PROX_CLEAR): nobody within `separation_m`.

The ring's radius is half of `separation_m`, so two rings touch exactly when the pair is at
the separation distance. The colours come from the frame's positions only (one KD-tree query
for the whole swarm), so the replay draws what the live view drew, and the same with avoidance
off (the distances the avoidance would act on). In the live view a UAV whose avoidance layer
corrects its command right now (`Avoidance.active`) also gets a white ring inside
(PROX_AVOIDING); a recording does not hold that flag, so the replay draws no inner rings.

    lines = proximity_lines(frame, ProximityLimits.of(scenery))  # Renderer.render(extra=...)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from skyswarm.gui.scene import Frame, Scenery

RING_SEGMENTS = 20  # line segments per ring
PROX_HIT = (1.0, 0.15, 0.10, 0.95)  # RGBA: nearest neighbour closer than radius_m
PROX_NEAR = (1.0, 0.70, 0.10, 0.90)  # RGBA: closer than separation_m (repulsion acts)
PROX_CLEAR = (0.30, 0.90, 0.45, 0.55)  # RGBA: nobody within separation_m
PROX_AVOIDING = (1.0, 1.0, 1.0, 0.9)  # RGBA: the inner ring of a UAV the avoidance steers
AVOIDING_RING = 0.7  # the inner ring's radius, as a fraction of the outer one's


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


def proximity_lines(
    frame: Frame, limits: ProximityLimits, avoiding: np.ndarray | None = None
) -> list[np.ndarray]:
    """Line vertices (position + RGBA rows, two per segment) of a horizontal ring of radius
    `limits.near_m` / 2 around each alive flying agent, in its colour, and an inner white ring
    around those (N,) `avoiding` marks; [] when there is none."""
    dist = nearest_distances(frame)
    idx = np.flatnonzero(~np.isnan(dist))
    if len(idx) == 0:
        return []
    out = [_rings(frame.positions[idx], limits.near_m / 2, ring_colors(dist[idx], limits))]
    if avoiding is not None and (inner := np.flatnonzero(avoiding & ~np.isnan(dist))).size:
        color = np.tile(np.float32(PROX_AVOIDING), (len(inner), 1))
        out.append(_rings(frame.positions[inner], AVOIDING_RING * limits.near_m / 2, color))
    return out


def _rings(centers: np.ndarray, radius_m: float, colors: np.ndarray) -> np.ndarray:
    """(K * 2 * RING_SEGMENTS, 7) float32 line vertices of a horizontal ring around each of the
    (K, 3) `centers`, in the (K, 4) `colors`."""
    ang = np.linspace(0.0, 2 * np.pi, RING_SEGMENTS + 1)
    unit = np.c_[np.cos(ang), np.sin(ang), np.zeros_like(ang)] * radius_m
    seg = np.stack([unit[:-1], unit[1:]], axis=1).reshape(-1, 3)  # (2S, 3)
    out = np.empty((len(centers), len(seg), 7), dtype=np.float32)
    out[..., :3] = centers[:, None, :] + seg[None]
    out[..., 3:] = colors[:, None, :]
    return out.reshape(-1, 7)


def avoiding_flags(frame: Frame, agents: Sequence[Any]) -> np.ndarray | None:
    """(N,) bool: the agents of `frame` (`agents` in frame order: LiveSource.agents) whose
    swarm's avoidance layer corrects their command now; None when no swarm has one on."""
    from skyswarm.uav.agents import UavAgent

    flags = np.zeros(len(frame.ids), dtype=bool)
    found = False
    for k, a in enumerate(agents[: len(flags)]):
        if isinstance(a, UavAgent) and a.swarm.avoidance is not None:
            found = True
            flags[k] = bool(a.swarm.avoidance.active[a.index])
    return flags if found else None
