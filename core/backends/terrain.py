"""Heightfield terrain: heights on a regular grid, from a height-grid file or sampled from a
triangle-mesh terrain.

The surface is the grid's triangulation: each cell is two triangles split along the diagonal
from sample (i, j) to (i + 1, j + 1), heights linear on each (core/backends/fast_kernel.py,
`terrain_height`). Both backends see this same surface for a height grid: the fast backend
contacts it directly, Bullet gets these triangles as a mesh (`Heightfield.triangles`). A mesh
terrain stays a mesh on Bullet; the fast backend samples it at `cell_m` (the top surface
above each grid point), exact where the mesh is itself a grid of that spacing and diagonal,
else within the sampling error of a `cell_m` grid (stated, never silent: README, Physics
backends).

Usage:

    hf = load_height_grid("hills.csv", cell_m=2.0, origin=(-50.0, -50.0, 0.0))
    hf = sample_mesh(*load_mesh("hill.obj"), cell_m=0.5)
    hf.height_at(np.array([1.0]), np.array([2.0]))   # (1,) m, NaN off the grid
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skyswarm.core.backends.fast_kernel import _opts, terrain_height
from skyswarm.core.jit import ahead, njit


@dataclass(frozen=True, eq=False)
class Heightfield:
    """`heights` (ny, nx) m: row j at y = y0 + j cell_m, column i at x = x0 + i cell_m;
    NaN where there is no terrain. `origin` (x0, y0)."""

    heights: np.ndarray
    cell_m: float
    origin: tuple[float, float]

    def __post_init__(self) -> None:
        h = self.heights
        if h.ndim != 2 or h.shape[0] < 2 or h.shape[1] < 2:
            raise ValueError(f"a height grid needs at least 2 x 2 samples, got shape {h.shape}")
        if not np.isfinite(h).any():
            raise ValueError("a height grid needs at least one finite height")
        if not (math.isfinite(self.cell_m) and self.cell_m > 0):
            raise ValueError(f"grid spacing {self.cell_m!r} m: expected > 0")

    @property
    def top(self) -> float:
        """The highest height, m."""
        return float(np.nanmax(self.heights))

    def height_at(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Heights m at the points (x, y) (1-D arrays), NaN off the terrain."""
        out = np.empty(len(x))
        normal = np.empty(3)
        h = np.ascontiguousarray(self.heights, dtype=float)
        for k in range(len(x)):
            out[k] = terrain_height(h, *self.origin, self.cell_m, x[k], y[k], normal)
        return out

    def triangles(self) -> tuple[np.ndarray, np.ndarray]:
        """(V, 3) vertices m and (F, 3) triangles of the surface (two per cell whose three
        corners are heights, the same diagonal as the fast backend), for Bullet."""
        ny, nx = self.heights.shape
        x = self.origin[0] + self.cell_m * np.arange(nx)
        y = self.origin[1] + self.cell_m * np.arange(ny)
        gx, gy = np.meshgrid(x, y)
        vertices = np.column_stack([gx.ravel(), gy.ravel(), np.nan_to_num(self.heights).ravel()])
        j, i = np.meshgrid(np.arange(ny - 1), np.arange(nx - 1), indexing="ij")
        v00, v10 = (j * nx + i).ravel(), (j * nx + i + 1).ravel()
        v01, v11 = ((j + 1) * nx + i).ravel(), ((j + 1) * nx + i + 1).ravel()
        faces = np.concatenate([np.column_stack([v00, v10, v11]), np.column_stack([v00, v11, v01])])
        ok = np.isfinite(self.heights).ravel()
        return vertices, faces[ok[faces].all(axis=1)]


def load_height_grid(
    path: str | Path, cell_m: float, origin: tuple[float, float] = (0.0, 0.0)
) -> Heightfield:
    """A CSV of heights m (comma-separated; row j at y0 + j cell_m, column i at x0 + i cell_m;
    `nan` for no terrain), or a .npy (ny, nx) array."""
    path = Path(path)
    if path.suffix == ".npy":
        heights = np.load(path)
    else:
        heights = np.loadtxt(path, delimiter=",", ndmin=2)
    return Heightfield(np.ascontiguousarray(heights, dtype=float), float(cell_m), origin)


def sample_mesh(vertices: np.ndarray, faces: np.ndarray, cell_m: float) -> Heightfield:
    """The top surface of a triangle mesh (vertices m, (F, 3) faces) sampled on a grid of
    spacing `cell_m` over the mesh's x-y extent; NaN where no triangle covers a sample."""
    lo, hi = vertices[:, :2].min(axis=0), vertices[:, :2].max(axis=0)
    nx = int(math.floor((hi[0] - lo[0]) / cell_m + 1e-9)) + 1
    ny = int(math.floor((hi[1] - lo[1]) / cell_m + 1e-9)) + 1
    heights = np.full((max(ny, 2), max(nx, 2)), np.nan)
    _rasterise(
        np.asarray(vertices, float), np.asarray(faces, np.int64), lo[0], lo[1], cell_m, heights
    )
    return Heightfield(heights, float(cell_m), (float(lo[0]), float(lo[1])))


@njit(**_opts)
def _rasterise(v, faces, x0, y0, cell, out):
    """The highest triangle above each grid sample (barycentric test with a 1e-9 tolerance, so
    samples on shared edges and vertices are covered)."""
    ny, nx = out.shape
    for f in range(len(faces)):
        a, b, c = faces[f, 0], faces[f, 1], faces[f, 2]
        ax, ay, az = v[a, 0], v[a, 1], v[a, 2]
        bx, by, bz = v[b, 0], v[b, 1], v[b, 2]
        cx, cy, cz = v[c, 0], v[c, 1], v[c, 2]
        det = (by - cy) * (ax - cx) + (cx - bx) * (ay - cy)
        if abs(det) < 1e-15:  # vertical or degenerate: no top surface
            continue
        i0 = max(0, int(math.ceil((min(ax, bx, cx) - x0) / cell - 1e-9)))
        i1 = min(nx - 1, int(math.floor((max(ax, bx, cx) - x0) / cell + 1e-9)))
        j0 = max(0, int(math.ceil((min(ay, by, cy) - y0) / cell - 1e-9)))
        j1 = min(ny - 1, int(math.floor((max(ay, by, cy) - y0) / cell + 1e-9)))
        for j in range(j0, j1 + 1):
            y = y0 + j * cell
            for i in range(i0, i1 + 1):
                x = x0 + i * cell
                la = ((by - cy) * (x - cx) + (cx - bx) * (y - cy)) / det
                lb = ((cy - ay) * (x - cx) + (ax - cx) * (y - cy)) / det
                lc = 1.0 - la - lb
                if la >= -1e-9 and lb >= -1e-9 and lc >= -1e-9:
                    z = la * az + lb * bz + lc * cz
                    if not (out[j, i] >= z):  # NaN or lower
                        out[j, i] = z


ahead(_rasterise, "f8[2] i8[2] f8 f8 f8 f8[2]")  # compiled before the clock (core/jit.py)
ahead(terrain_height, "f8[2] f8 f8 f8 f8 f8 f8[1]")  # HeightGrid's Python-side sampling
