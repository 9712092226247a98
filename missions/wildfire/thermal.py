"""A downward thermal camera: which burning cells of the fire grid a UAV sees.

The camera looks straight down (gimballed, image north-up): its footprint on the ground is the
square of half-size `h tan(fov / 2)` around the point under the UAV, with `h` the height above
the cell under it. A cell is in view when its centre lies inside the footprint; a burning cell in
view is reported hot with probability 1 - `false_negative` (independent per cell and frame, from
the generator the owner hands it); nothing else is reported hot (no false positives: a burning
cell is far hotter than any background).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import param
from skyswarm.missions.wildfire.fire import BURNING, FireGrid


@dataclass(frozen=True)
class ThermalConfig:
    """The `[thermal]` section: every UAV's downward thermal camera."""

    fov_deg: float = param(80.0, "full angle of the square field of view, deg", gt=0.0, lt=170.0)
    false_negative: float = param(
        0.1, "probability that a burning cell in view is missed, per frame", ge=0.0, le=1.0
    )
    min_altitude_m: float = param(2.0, "below this height the camera records nothing, m", ge=0)


@dataclass(frozen=True, slots=True)
class Frame:
    """One image: the window of cells in view and which of them looked hot."""

    time_s: float
    window: tuple[int, int, int, int]  # rows j0:j1, columns i0:i1 of the grid
    hot: np.ndarray  # (j1 - j0, i1 - i0) bool

    @property
    def empty(self) -> bool:
        return self.hot.size == 0


def footprint_half_m(height_m: float, fov_deg: float) -> float:
    """Half the side of the square footprint (m) at `height_m` above the ground."""
    return max(height_m, 0.0) * math.tan(math.radians(fov_deg) / 2.0)


def window(grid: FireGrid, position: np.ndarray, cfg: ThermalConfig) -> tuple[int, int, int, int]:
    """Cells whose centres lie in the footprint of a camera at (3,) `position` m: rows j0:j1,
    columns i0:i1 (possibly empty)."""
    height = float(position[2]) - float(grid.elevation_at(position[:2]))
    if height < cfg.min_altitude_m:
        return (0, 0, 0, 0)
    half = footprint_half_m(height, cfg.fov_deg) / grid.cell_m
    rel = (np.asarray(position[:2], dtype=float) - grid.origin) / grid.cell_m - 0.5  # in cells
    lo = np.ceil(rel - half - 1e-9).astype(int)
    hi = np.floor(rel + half + 1e-9).astype(int) + 1
    ny, nx = grid.shape
    i0, i1 = min(max(lo[0], 0), nx), min(max(hi[0], 0), nx)
    j0, j1 = min(max(lo[1], 0), ny), min(max(hi[1], 0), ny)
    return (j0, max(j0, j1), i0, max(i0, i1))


class ThermalCamera:
    """The camera of one UAV over `grid`; `frame(position, now_s)` takes one image."""

    def __init__(self, cfg: ThermalConfig, grid: FireGrid, rng: np.random.Generator) -> None:
        self.cfg = cfg
        self.grid = grid
        self.rng = rng

    def frame(self, position: np.ndarray, now_s: float) -> Frame:
        """One image from (3,) `position` (m, world ENU) at `now_s`."""
        j0, j1, i0, i1 = window(self.grid, position, self.cfg)
        burning = self.grid.state[j0:j1, i0:i1] == BURNING
        if self.cfg.false_negative > 0.0 and burning.any():
            burning &= self.rng.random(burning.shape) >= self.cfg.false_negative
        return Frame(now_s, (j0, j1, i0, i1), burning)


def in_view(grid: FireGrid, positions: np.ndarray, cfg: ThermalConfig) -> np.ndarray:
    """Bool (ny, nx): cells inside the footprint of any camera at (N, 3) `positions` (m)."""
    seen = np.zeros(grid.shape, dtype=bool)
    for p in positions:
        j0, j1, i0, i1 = window(grid, p, cfg)
        seen[j0:j1, i0:i1] = True
    return seen
