"""Area coverage geometry: areas and their grids, the camera footprint, lane planning.

Each area is a rectangle with its own frame: `u` across the sweep (positive to the right of the
sweep heading) and `v` along the sweep heading, both in m from the area centre. Its coverage grid
has `n_u x n_v` cells laid out in that frame; a grid is an `(n_u, n_v)` bool array. A UAV's
downward (nadir, gimballed) camera sees a square of half-size `a = h tan(fov / 2)` on the
ground, turned with the UAV's yaw; a cell is seen when its centre lies inside that square.

Lane planning is boustrophedon: parallel lanes along `v`, each covering a band of `u` as wide as
the flock's swath, flown in alternate directions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.geo import heading_to_yaw


@dataclass(frozen=True)
class Lane:
    """One pass of the flock centre along the area's `v` axis, in area coordinates (m)."""

    area: int  # index of the area in the mission's list
    u: float  # cross-track position of the flock centre, m
    v0: float  # along-track start, m
    v1: float  # along-track end, m


class Area:
    """A rectangle to explore and its coverage grid geometry (no coverage state).

    `center` (x, y) m ENU; `size` = (width across the sweep, length along it) m; `heading_deg`
    the compass direction of the sweep; `cell_m` the requested cell size (m), adjusted so that
    whole cells tile the rectangle.
    """

    def __init__(
        self,
        area_id: int,
        center: tuple[float, float],
        size: tuple[float, float],
        heading_deg: float,
        cell_m: float,
    ) -> None:
        self.id = int(area_id)
        self.center = np.asarray(center, dtype=float)
        self.width, self.length = float(size[0]), float(size[1])
        self.heading_deg = float(heading_deg)
        yaw = float(heading_to_yaw(heading_deg))
        self.vhat = np.array([math.cos(yaw), math.sin(yaw)])  # along the sweep
        self.uhat = np.array([self.vhat[1], -self.vhat[0]])  # to the right of the sweep
        self.n_u = max(1, round(self.width / cell_m))
        self.n_v = max(1, round(self.length / cell_m))
        self.cell_u, self.cell_v = self.width / self.n_u, self.length / self.n_v
        self.u_centres = -self.width / 2 + (np.arange(self.n_u) + 0.5) * self.cell_u
        self.v_centres = -self.length / 2 + (np.arange(self.n_v) + 0.5) * self.cell_v
        uu, vv = np.meshgrid(self.u_centres, self.v_centres, indexing="ij")
        self.cell_xy = self.to_world(uu, vv)  # (n_u, n_v, 2) m
        self._cell_planes = np.ascontiguousarray(np.moveaxis(self.cell_xy, -1, 0))  # (2, n_u, n_v)
        self._uv_axes = np.ascontiguousarray(np.stack([self.uhat, self.vhat], axis=1))  # (2, 2)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n_u, self.n_v

    @property
    def cells(self) -> int:
        return self.n_u * self.n_v

    def grid(self) -> np.ndarray:
        """An empty (n_u, n_v) bool coverage grid."""
        return np.zeros(self.shape, dtype=bool)

    def to_area(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) world x, y (m) -> (..., 2) area u, v (m)."""
        d = np.asarray(xy, dtype=float)[..., :2] - self.center
        return np.stack([d @ self.uhat, d @ self.vhat], axis=-1)

    def to_world(self, u: np.ndarray | float, v: np.ndarray | float) -> np.ndarray:
        """Area u, v (m, broadcastable) -> (..., 2) world x, y (m)."""
        u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
        return self.center + u[..., None] * self.uhat + v[..., None] * self.vhat

    def sweep_heading(self, forward: bool) -> float:
        """Compass heading (deg) of a pass towards +v (forward) or -v."""
        return self.heading_deg % 360.0 if forward else (self.heading_deg + 180.0) % 360.0

    def corners(self) -> np.ndarray:
        """(4, 2) world corners, m, in drawing order."""
        hu, hv = self.width / 2, self.length / 2
        return self.to_world(np.array([-hu, hu, hu, -hu]), np.array([-hv, -hv, hv, hv]))

    def cell_polygons(self) -> np.ndarray:
        """(n_u * n_v, 4, 2) world corners of every cell (row-major like the grid), m."""
        du = 0.5 * self.cell_u * self.uhat
        dv = 0.5 * self.cell_v * self.vhat
        c = self.cell_xy.reshape(-1, 1, 2)
        return c + np.stack([-du - dv, du - dv, du + dv, -du + dv])[None]

    def run_polygons(self, mask: np.ndarray) -> np.ndarray:
        """(M, 4, 2) world corners, m, of quads covering the True cells of an (n_u, n_v) `mask`:
        one per run of consecutive cells along `v`, corners in the order of `cell_polygons`.
        The same ground as one quad per cell with a fraction of the quads (a drawn coverage
        overlay costs a software rasteriser per triangle)."""
        iu, start, end = row_runs(mask)
        hu = 0.5 * self.cell_u
        u = self.u_centres[iu]
        v0 = self.v_centres[start] - 0.5 * self.cell_v
        v1 = self.v_centres[end - 1] + 0.5 * self.cell_v
        us = np.stack([u - hu, u + hu, u + hu, u - hu], axis=1)
        vs = np.stack([v0, v0, v1, v1], axis=1)
        return self.to_world(us, vs).reshape(-1, 4, 2)

    def footprint(
        self, xy: np.ndarray, yaw_rad: float, half_m: float
    ) -> tuple[slice, slice, np.ndarray] | None:
        """Cells whose centre is inside a square footprint: (u slice, v slice, bool block).

        `xy` (2,) m is the footprint centre, `yaw_rad` (ENU) turns the square, `half_m` is its
        half-size. None when the footprint misses the grid. Only the cells of the footprint's
        bounding box are tested, so the cost does not grow with the area.
        """
        at = np.asarray(xy, dtype=float)[:2]
        # to_area's two products in one call: vector @ (2, 2) gives the bits of `d @ uhat` and
        # `d @ vhat` (tests/missions/test_flock_perf_identity.py), the stack left out
        u, v = ((at - self.center) @ self._uv_axes).tolist()
        r = half_m * math.sqrt(2.0)
        iu0 = max(0, math.floor((u - r + self.width / 2) / self.cell_u))
        iu1 = min(self.n_u, math.ceil((u + r + self.width / 2) / self.cell_u))
        iv0 = max(0, math.floor((v - r + self.length / 2) / self.cell_v))
        iv1 = min(self.n_v, math.ceil((v + r + self.length / 2) / self.cell_v))
        if iu0 >= iu1 or iv0 >= iv1:
            return None
        su, sv = slice(iu0, iu1), slice(iv0, iv1)
        # the cells' offsets (dx, dy) turned into the footprint's frame, both rows at once:
        # fwd = c dx + s dy, left = c dy - s dx = (-s) dx + c dy (the same roundings)
        d = self._cell_planes[:, su, sv] - at.reshape(2, 1, 1)
        c, s = math.cos(yaw_rad), math.sin(yaw_rad)
        turned = _turn(c, s) * d  # (2 rows, 2 terms, k_u, k_v)
        rows = turned[:, 0] + turned[:, 1]
        inside = np.abs(rows, out=rows) <= half_m
        return su, sv, inside[0] & inside[1]

    def strip_mask(self, u_lo: float, u_hi: float, v_lo: float, v_hi: float) -> np.ndarray:
        """(n_u, n_v) bool: cells whose centre has u in [u_lo, u_hi) and v in [v_lo, v_hi]."""
        mu = (self.u_centres >= u_lo) & (self.u_centres < u_hi)
        mv = (self.v_centres >= v_lo) & (self.v_centres <= v_hi)
        return mu[:, None] & mv[None, :]


def _turn(c: float, s: float) -> np.ndarray:
    """(2, 2, 1, 1) rows (fwd, left) of the footprint's rotation, to broadcast on (2, k, l)."""
    return np.array((c, s, -s, c)).reshape(2, 2, 1, 1)


def footprint_half_m(altitude_m: float, fov_deg: float) -> float:
    """Half-size (m) of the square ground footprint of a nadir camera of full angle `fov_deg`."""
    return max(0.0, altitude_m) * math.tan(math.radians(fov_deg) / 2)


def plan_lanes(
    area: int,
    band: tuple[float, float],
    swath_m: float,
    v_range: tuple[float, float],
    from_high_u: bool,
    start_low_v: bool,
) -> list[Lane]:
    """Boustrophedon lanes covering the `u` band [lo, hi] (m) with a flock of swath `swath_m`.

    Lanes are as few as possible and evenly spread: the first is centred half a swath inside
    the band's starting edge, the last half a swath inside the other edge, so neighbouring lanes
    overlap rather than leave gaps. Directions alternate, starting at the `v` end given.
    """
    lo, hi = band
    width = hi - lo
    if width <= 0:
        return []
    m = max(1, math.ceil(width / swath_m - 1e-9))
    if m == 1:
        centres = [lo + width / 2]
    else:
        step = (width - swath_m) / (m - 1)
        centres = [lo + swath_m / 2 + k * step for k in range(m)]
    if from_high_u:
        centres = centres[::-1]
    va, vb = v_range
    lanes = []
    low = start_low_v
    for u in centres:
        lanes.append(Lane(area, u, va if low else vb, vb if low else va))
        low = not low
    return lanes


def plan_holes(
    area: Area,
    area_index: int,
    holes: np.ndarray,
    swath_m: float,
    here_uv: tuple[float, float],
    margin_m: float,
    min_cells: int,
    edge_m: float = 0.0,
) -> list[Lane]:
    """Lanes that sweep the unseen cells `holes` ((n_u, n_v) bool) of one area.

    Columns holding holes are grouped greedily into bands one swath wide, starting from the
    side of the area nearest `here_uv` (m); a band with fewer than `min_cells` holes is skipped.
    Each lane covers only the `v` extent of its band's holes, extended by `margin_m` (m) at both
    ends, and starts at the end nearest the previous lane's end.

    `edge_m` (m) > 0: a band that holds a column at the area's edge puts the swath's outer edge
    `edge_m` beyond the area's, as far as the band's other end allows (a band starting at the
    edge is that much narrower): the flock's outermost member is the one most often astray
    (in a split flock, the member at the edge of the radio range), so the edge is flown by
    the next one in.
    """
    cols = np.flatnonzero(holes.any(axis=1))
    if not len(cols):
        return []
    from_high = here_uv[0] > 0.0
    order = cols[::-1] if from_high else cols
    edges = (0, area.n_u - 1)
    bands: list[np.ndarray] = []
    while len(order):
        u0 = area.u_centres[order[0]]
        reach = swath_m - 0.5 * area.cell_u - (edge_m if order[0] in edges else 0.0)
        inside = np.abs(area.u_centres[order] - u0) < max(reach, 0.5 * area.cell_u)
        bands.append(order[inside])
        order = order[~inside]
    lanes: list[Lane] = []
    v_here = here_uv[1]
    for band in bands:
        block = holes[band]
        if block.sum() < min_cells:
            continue
        us = area.u_centres[band]
        rows = np.flatnonzero(block.any(axis=0))
        v_lo = area.v_centres[rows[0]] - margin_m
        v_hi = area.v_centres[rows[-1]] + margin_m
        u = _edge_shift(area, band, 0.5 * (us.min() + us.max()), swath_m, edge_m)
        start_low = abs(v_here - v_lo) <= abs(v_here - v_hi)
        lanes.append(Lane(area_index, u, v_lo if start_low else v_hi, v_hi if start_low else v_lo))
        v_here = lanes[-1].v1
    return lanes


def _edge_shift(area: Area, band: np.ndarray, u: float, swath_m: float, edge_m: float) -> float:
    """The lane centre `u` (m) of a band of columns moved outwards so that the swath passes
    `edge_m` beyond an area edge the band touches, within what still covers the band."""
    if edge_m <= 0.0:
        return u
    us, half_cell, half = area.u_centres[band], 0.5 * area.cell_u, 0.5 * swath_m
    if band.min() == 0:
        u = max(min(u, -area.width / 2 - edge_m + half), us.max() + half_cell - half)
    if band.max() == area.n_u - 1:
        u = min(max(u, area.width / 2 + edge_m - half), us.min() - half_cell + half)
    return float(u)


def carry_over(old: Area, grid: np.ndarray, new: Area, fill: bool | int) -> np.ndarray:
    """A grid of `old` ((n_u, n_v), any dtype) resampled onto the cells of `new`: each new
    cell takes the value of the old cell its centre lies in, `fill` outside the old area."""
    uv = old.to_area(new.cell_xy)
    iu = np.floor((uv[..., 0] + old.width / 2) / old.cell_u).astype(np.int64)
    iv = np.floor((uv[..., 1] + old.length / 2) / old.cell_v).astype(np.int64)
    inside = (iu >= 0) & (iu < old.n_u) & (iv >= 0) & (iv < old.n_v)
    out = np.full(new.shape, fill, dtype=grid.dtype)
    out[inside] = grid[iu[inside], iv[inside]]
    return out


def pack(grid: np.ndarray) -> bytes:
    """A bool grid as bytes, 8 cells a byte (what goes on the air)."""
    return np.packbits(grid.ravel()).tobytes()


def unpack(data: bytes, shape: tuple[int, int]) -> np.ndarray:
    """The inverse of `pack` for a grid of `shape`."""
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), count=shape[0] * shape[1])
    return bits.astype(bool).reshape(shape)


def row_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of consecutive True cells along the last axis of a 2-D bool `mask`: (row, first
    column, end column (exclusive)) arrays, one entry per run, in row-major order."""
    m = np.asarray(mask, dtype=bool)
    padded = np.zeros((m.shape[0], m.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = m
    d = np.diff(padded, axis=1)
    rows, starts = np.nonzero(d == 1)
    _, ends = np.nonzero(d == -1)  # the same row order: each row's runs start, end, start, ...
    return rows, starts, ends
