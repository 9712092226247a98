"""What the views and plots show of a fire: overlay arrays and the `fire.npz` record.

Overlays (`Mission.overlays`, plain data, recorded by core/timeline.py for replay): the
grid outline, burning cells (red) and burnt cells (near black) as quads just above the terrain
(on flat ground, runs of equal cells along a row merged into one quad; on a slope, one quad per
cell with its corners at the terrain height there, so the drawn terrain never hides part of it),
and the base station's known perimeter (yellow segments along the edges between known-burnt and
not-known-burnt burnable cells, ends at the corners' heights). Unburnt cells are the ground
itself.

`fire.npz` (written at teardown, read by `skyswarm plot`, app/plot.py): `origin` (2,) m,
`cell_m`, `elevation` (ny, nx) m, `fuel` (ny, nx), `ignited_s` and `burnt_s` (ny, nx) s (NaN:
never), from which the state of every cell at any time follows (burning while ignited <= t <
burnt), and `known_s` (ny, nx) s: when the base station first knew each cell as burning (NaN:
never), from which its known perimeter at any time follows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.missions.coverage import row_runs
from skyswarm.missions.wildfire.fire import BURNING, BURNT, FireGrid

BURNING_RGBA = (1.0, 0.25, 0.05, 0.85)
BURNT_RGBA = (0.08, 0.07, 0.06, 0.8)
PERIMETER_RGBA = (1.0, 0.9, 0.1, 1.0)
OUTLINE_RGBA = (0.7, 0.7, 0.7, 1.0)


def corner_heights(grid: FireGrid) -> np.ndarray:
    """(ny + 1, nx + 1) m: the elevation at the cell corners (corner (j, i) at origin +
    (i, j) cell_m), the mean of the (up to 4) cell centres around it."""
    e = np.pad(grid.elevation, 1, mode="edge")
    return (e[:-1, :-1] + e[1:, :-1] + e[:-1, 1:] + e[1:, 1:]) / 4.0


def cell_quads(grid: FireGrid, mask: np.ndarray, lift_m: float) -> np.ndarray:
    """(M, 4, 3) one quad per True cell of `mask`, corners `lift_m` above the terrain, m."""
    j, i = np.nonzero(mask)
    z = corner_heights(grid) + lift_m
    c, ox, oy = grid.cell_m, grid.origin[0], grid.origin[1]
    x0, x1, y0, y1 = ox + i * c, ox + (i + 1) * c, oy + j * c, oy + (j + 1) * c
    return np.stack(
        [
            np.stack([x0, y0, z[j, i]], 1),
            np.stack([x1, y0, z[j, i + 1]], 1),
            np.stack([x1, y1, z[j + 1, i + 1]], 1),
            np.stack([x0, y1, z[j + 1, i]], 1),
        ],
        axis=1,
    ).reshape(-1, 4, 3)


def run_quads(grid: FireGrid, mask: np.ndarray, lift_m: float) -> np.ndarray:
    """(M, 4, 3) quads covering the True cells of `mask`, m: on flat ground one per run along a
    row; on a slope one per cell (`cell_quads`)."""
    if np.ptp(grid.elevation) > 0.0:
        return cell_quads(grid, mask, lift_m)
    js, starts, ends = row_runs(mask)
    if len(js) == 0:
        return np.zeros((0, 4, 3))
    c = grid.cell_m
    x0 = grid.origin[0] + starts * c
    x1 = grid.origin[0] + ends * c
    y0 = grid.origin[1] + js * c
    y1 = y0 + c
    z0 = grid.elevation[js, starts] + lift_m
    z1 = grid.elevation[js, ends - 1] + lift_m
    return np.stack(
        [
            np.stack([x0, y0, z0], 1),
            np.stack([x1, y0, z1], 1),
            np.stack([x1, y1, z1], 1),
            np.stack([x0, y1, z0], 1),
        ],
        axis=1,
    )


def perimeter_segments(grid: FireGrid, known: np.ndarray, lift_m: float) -> np.ndarray:
    """(M, 2, 3): cell edges between `known` cells and burnable cells outside it, m."""
    burnable = grid.fuel > 0.0
    c, ox, oy = grid.cell_m, grid.origin[0], grid.origin[1]
    zc = corner_heights(grid) + lift_m
    segs = []
    # east/west edges: between (j, i) and (j, i + 1), from corner (j, i + 1) to (j + 1, i + 1)
    a, b = known[:, :-1], known[:, 1:]
    for mask in ((a & ~b & burnable[:, 1:]), (b & ~a & burnable[:, :-1])):
        j, i = np.nonzero(mask)
        x = ox + (i + 1) * c
        p0 = np.stack([x, oy + j * c, zc[j, i + 1]], 1)
        segs.append(np.stack([p0, np.stack([x, oy + (j + 1) * c, zc[j + 1, i + 1]], 1)], 1))
    # north/south edges: between (j, i) and (j + 1, i), from corner (j + 1, i) to (j + 1, i + 1)
    a, b = known[:-1, :], known[1:, :]
    for mask in ((a & ~b & burnable[1:, :]), (b & ~a & burnable[:-1, :])):
        j, i = np.nonzero(mask)
        y = oy + (j + 1) * c
        p0 = np.stack([ox + i * c, y, zc[j + 1, i]], 1)
        segs.append(np.stack([p0, np.stack([ox + (i + 1) * c, y, zc[j + 1, i + 1]], 1)], 1))
    return np.concatenate(segs) if segs else np.zeros((0, 2, 3))


def outline(grid: FireGrid) -> np.ndarray:
    """(4, 2, 3): the grid's border at ground level, m."""
    ny, nx = grid.shape
    x0, y0 = grid.origin
    x1, y1 = x0 + nx * grid.cell_m, y0 + ny * grid.cell_m
    z = float(grid.elevation.min()) + 0.05
    c = np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]])
    return np.stack([c, np.roll(c, -1, axis=0)], axis=1)


def fire_overlays(grid: FireGrid, known: np.ndarray) -> list[dict[str, Any]]:
    """The overlay list of a fire and the base station's knowledge of it (plain data)."""
    return [
        {"segments": outline(grid), "color": OUTLINE_RGBA},
        {"corners": run_quads(grid, grid.state == BURNT, 0.10), "color": BURNT_RGBA},
        {"corners": run_quads(grid, grid.state == BURNING, 0.15), "color": BURNING_RGBA},
        {"segments": perimeter_segments(grid, known, 0.3), "color": PERIMETER_RGBA},
    ]


def save_record(path: Path, grid: FireGrid, known_s: np.ndarray) -> None:
    """Write `fire.npz` (see the module doc)."""
    np.savez_compressed(
        path,
        origin=grid.origin,
        cell_m=np.array(grid.cell_m),
        elevation=grid.elevation,
        fuel=grid.fuel,
        ignited_s=grid.ignited_s,
        burnt_s=grid.burnt_s,
        known_s=known_s,
    )
