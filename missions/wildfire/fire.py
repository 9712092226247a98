"""The fire environment: a cell grid that burns, stochastically, one grid step at a time.

The model is EMBYR's (Hargrove et al. 2000, "Simulating fire patterns in heterogeneous
landscapes", Ecological Modelling 135: 243-263), the one the SimUAV seed implements: every cell
is unburnt, burning or burnt; in each step every burning cell ignites each unburnt neighbour (4-
or 8-connected) with a probability, independently, then burns on for `burn_steps` steps in all
(EMBYR: one) and is burnt. The seed keeps the probability constant; here it depends on the
target cell and the direction of spread as in the cellular automaton of Alexandridis et al.
(2008, "A cellular automata model for forest fire spread prediction: the case of the wildfire
that swept through Spetses Island in 1990", Applied Mathematics and Computation 204: 191-201):

    p = clip(p0 * fuel * eta_M * exp(V (c1 + c2 (cos(theta) - 1))) * exp(a * slope_deg), 0, 1)

- `fuel` the target cell's fuel factor (0: nothing to burn, a fire break; 1: nominal);
- `eta_M` Rothermel's (1972) moisture damping coefficient 1 - 2.59 r + 5.11 r^2 - 3.52 r^3 with
  r = moisture / extinction moisture (clipped to 1, where it is 0: too wet to burn);
- `V` the mean wind 20 ft above the ground (core/wind.py's `speed_m_s`), `theta` the angle between
  the wind (towards) and the direction of spread, c1 = 0.045 s/m, c2 = 0.131 s/m (Alexandridis):
  downwind / upwind = exp(2 c2 V) for equal cells;
- `slope_deg` = atan(rise / run) from the burning cell to its neighbour, a = 0.078 /deg
  (Alexandridis): upslope / downslope = exp(2 a slope).

One step is vectorised over the grid (numpy; per neighbour direction one shifted multiply of the
cells' survival probabilities inside the burning bounding box) and draws one uniform number per
cell that could ignite, from the generator the owner hands it (the run's environment stream).
States are int8: UNBURNT 0, BURNING 1, BURNT 2; arrays are (ny, nx), row j north, column i east;
cell (j, i) has its centre at origin + ((i + 0.5) cell_m, (j + 0.5) cell_m).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from skyswarm.core.config import WorldConfig
from skyswarm.core.resources import ASSETS_DIR, is_file
from skyswarm.core.schema import ConfigError, param

UNBURNT, BURNING, BURNT = 0, 1, 2
OFFSETS = {
    4: ((0, 1), (0, -1), (1, 0), (-1, 0)),
    8: ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1)),
}  # (dj, di): from a burning cell to the neighbour it may ignite


@dataclass(frozen=True)
class Rect:
    """A rectangle on the ground (`[[fire.ignitions]]` without time, `[[fire.breaks]]`)."""

    center: tuple[float, float] = param(doc="(x, y) centre, m, ENU", length=2)
    size: tuple[float, float] = param(
        (0.0, 0.0), "(width east, height north), m; 0 x 0: the one cell at the centre", ge=0.0
    )


@dataclass(frozen=True)
class Ignition:
    """A `[[fire.ignitions]]` table: cells set burning at a time."""

    center: tuple[float, float] = param(doc="(x, y) centre, m, ENU", length=2)
    size: tuple[float, float] = param(
        (0.0, 0.0), "(width east, height north), m; 0 x 0: the one cell at the centre", ge=0.0
    )
    at_s: float = param(0.0, "time of ignition, s (rounded to the fire step after it)", ge=0.0)


MAX_CELLS_PER_SIDE = 100_000  # 10^10 cells: memory refuses far earlier, counts stay finite


@dataclass(frozen=True)
class FireConfig:
    """The `[fire]` section: the grid, its fuel and terrain, the spread model and ignitions."""

    origin: tuple[float, float] = param((0.0, 0.0), "south-west corner of the grid, m", length=2)
    size: tuple[float, float] = param((200.0, 200.0), "(width east, height north), m", gt=0.0)
    cell_m: float = param(5.0, "cell size, m", gt=0.0)
    step_s: float = param(2.0, "period of a grid step, s (whole ticks)", gt=0.0, period=True)
    neighbourhood: Literal[4, 8] = param(8, "4 (edges) or 8 (edges and corners) neighbours")
    p_spread: float = param(0.3, "p0: probability per step to each neighbour", ge=0.0, le=1.0)
    burn_steps: int = param(1, "steps a cell burns before it is burnt (EMBYR: 1)", ge=1)
    fuel: float = param(1.0, "fuel factor of every cell (0: no fuel)", ge=0.0)
    moisture: float = param(0.0, "fuel moisture, fraction of dry mass", ge=0.0)
    moisture_ext: float = param(0.3, "moisture of extinction (Rothermel M_x), fraction", gt=0.0)
    wind_c1: float = param(0.045, "wind constant c1, s/m (Alexandridis 2008)", ge=0.0)
    wind_c2: float = param(0.131, "wind constant c2, s/m: downwind/upwind = exp(2 c2 V)", ge=0.0)
    slope_a: float = param(0.078, "slope constant a, 1/deg (Alexandridis 2008)", ge=0.0)
    elevation: str = param(
        "flat",
        "flat; terrain (the [world] height grid or terrain mesh); or a heightmap over the grid:"
        " .npy array (m) or .png (grey x heightmap_scale_m)",
    )
    heightmap_scale_m: float = param(1.0, "multiplies the heightmap's values, m", gt=0.0)
    breaks: tuple[Rect, ...] = param((), "zero-fuel rectangles ([[fire.breaks]])")
    ignitions: tuple[Ignition, ...] = param((), "ignitions ([[fire.ignitions]])")

    def validate(self, path: str, file: str) -> None:
        """At most MAX_CELLS_PER_SIDE cells a side (a cell far smaller than the grid overflows
        the cell count: found by tools/fuzz_inputs.py)."""
        for side in self.size:
            if not side / self.cell_m <= MAX_CELLS_PER_SIDE:
                raise ConfigError(
                    file,
                    f"{path}.cell_m",
                    self.cell_m,
                    f"a cell of at least {side / MAX_CELLS_PER_SIDE:.6g} m "
                    f"(at most {MAX_CELLS_PER_SIDE} cells a side of {side:g} m)",
                )

    @property
    def shape(self) -> tuple[int, int]:
        """(ny, nx) cells."""
        return max(1, round(self.size[1] / self.cell_m)), max(1, round(self.size[0] / self.cell_m))


def moisture_damping(ratio: float) -> float:
    """Rothermel's moisture damping coefficient for moisture / extinction moisture `ratio`."""
    r = max(ratio, 0.0)
    if r >= 1.0:
        return 0.0  # at or above the moisture of extinction nothing burns
    return max(0.0, 1.0 - 2.59 * r + 5.11 * r**2 - 3.52 * r**3)


def load_heightmap(
    cfg: FireConfig, base_dir: Path, file: str = "", world: WorldConfig | None = None
) -> np.ndarray:
    """The (ny, nx) elevation of the cell centres, m: flat; the scenario's terrain (`world`:
    its height grid, or its mesh sampled at half a cell) at the cell centres, 0 off it; or a
    heightmap resampled bilinearly over the grid (its first row is the south edge). A bare file
    name not found next to the scenario is looked up in the shipped assets."""
    ny, nx = cfg.shape
    if cfg.elevation == "flat":
        return np.zeros((ny, nx))
    if cfg.elevation == "terrain":
        return _terrain_heights(cfg, base_dir, file, world)
    path = Path(cfg.elevation)
    if not path.is_absolute():
        path = base_dir / path if is_file(base_dir / path) else ASSETS_DIR / path
    if path.suffix not in (".npy", ".png") or not is_file(path):
        raise ConfigError(file, "fire.elevation", cfg.elevation, "flat or an existing .npy/.png")
    if path.suffix == ".npy":
        raw = np.asarray(np.load(path), dtype=float)
    else:
        import matplotlib.image

        img = np.asarray(matplotlib.image.imread(path), dtype=float)
        raw = img[..., :3].mean(axis=2) if img.ndim == 3 else img
        raw = raw[::-1]  # image rows run north to south
    if raw.ndim != 2 or min(raw.shape) < 2 or not np.isfinite(raw).all():
        raise ConfigError(file, "fire.elevation", cfg.elevation, "a finite 2-D heightmap")
    return cfg.heightmap_scale_m * resample(raw, ny, nx)


def _terrain_heights(
    cfg: FireConfig, base_dir: Path, file: str, world: WorldConfig | None
) -> np.ndarray:
    from skyswarm.core.backends.terrain import load_height_grid, sample_mesh

    for key in ("heightfield", "terrain"):  # read here before core's checks run: check it
        name = getattr(world, key) if world is not None else ""
        if name and not is_file(base_dir / name):
            raise ConfigError(file, f"world.{key}", name, "an existing file (fire.elevation)")
    if world is not None and world.heightfield:
        hf = load_height_grid(
            base_dir / world.heightfield, world.heightfield_cell_m, world.heightfield_origin
        )
    elif world is not None and world.terrain:
        from skyswarm.core.backends.meshes import load_mesh
        from skyswarm.core.checks import check_mesh

        # a file that is not an OBJ mesh (trimesh: NotImplementedError ...) is one line
        check_mesh(base_dir / world.terrain, file, "world.terrain", world.terrain)
        hf = sample_mesh(*load_mesh(base_dir / world.terrain), cfg.cell_m / 2.0)
    else:
        raise ConfigError(
            file, "fire.elevation", "terrain", "a [world] heightfield or terrain to read it from"
        )
    ny, nx = cfg.shape
    x = cfg.origin[0] + (np.arange(nx) + 0.5) * cfg.cell_m
    y = cfg.origin[1] + (np.arange(ny) + 0.5) * cfg.cell_m
    gx, gy = np.meshgrid(x, y)
    return np.nan_to_num(hf.height_at(gx.ravel(), gy.ravel()).reshape(ny, nx), nan=0.0)


def resample(raw: np.ndarray, ny: int, nx: int) -> np.ndarray:
    """Bilinear resampling of a (h, w) array spanning the grid onto (ny, nx) cell centres."""
    ys = (np.arange(ny) + 0.5) / ny * (raw.shape[0] - 1)
    xs = (np.arange(nx) + 0.5) / nx * (raw.shape[1] - 1)
    rows = np.array([np.interp(xs, np.arange(raw.shape[1]), r) for r in raw])  # (h, nx)
    return np.array([np.interp(ys, np.arange(raw.shape[0]), c) for c in rows.T]).T


class FireGrid:
    """The burning grid. `step(now_s)` advances one step; `ignite_at` sets cells burning.

    `fuel` (ny, nx) factor and `elevation` (ny, nx) m may be changed before the first step
    (call `refresh()` after); `set_wind((vx, vy))` m/s (towards, 20 ft) recomputes the spread
    probabilities when the wind changes.
    """

    def __init__(
        self,
        cfg: FireConfig,
        rng: np.random.Generator,
        elevation: np.ndarray | None = None,
    ) -> None:
        self.cfg = cfg
        self.rng = rng
        self.shape = cfg.shape
        ny, nx = self.shape
        self.origin = np.asarray(cfg.origin, dtype=float)
        self.cell_m = float(cfg.cell_m)
        self.state = np.zeros(self.shape, dtype=np.int8)
        self.left = np.zeros(self.shape, dtype=np.int32)  # steps of burning left
        self.ignited_s = np.full(self.shape, np.nan)  # s, when each cell caught fire
        self.burnt_s = np.full(self.shape, np.nan)  # s, when it burnt out
        self.source = np.full(self.shape, -1, dtype=np.int32)  # the ignition it descends from
        self.ignitions = 0
        self.elevation = np.zeros(self.shape) if elevation is None else np.asarray(elevation)
        self.fuel = np.full(self.shape, float(cfg.fuel))
        for b in cfg.breaks:
            self.fuel[self.rect_mask(b.center, b.size)] = 0.0
        self.offsets = OFFSETS[cfg.neighbourhood]
        self.wind = np.zeros(2)
        self.steps = 0
        self.refresh()

    # -- geometry ---------------------------------------------------------------------------
    def cell_of(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) m -> (..., 2) int (j, i), unclipped."""
        rel = (np.asarray(xy, dtype=float)[..., :2] - self.origin) / self.cell_m
        return np.floor(rel[..., ::-1]).astype(int)

    def centres(self, j: np.ndarray, i: np.ndarray) -> np.ndarray:
        """(K,) rows and columns -> (K, 2) cell centres, m."""
        return self.origin + (np.stack([i, j], axis=-1) + 0.5) * self.cell_m

    def rect_mask(self, center: tuple[float, float], size: tuple[float, float]) -> np.ndarray:
        """Cells whose centre lies in the rectangle; at least the cell holding `center`."""
        ny, nx = self.shape
        x = self.origin[0] + (np.arange(nx) + 0.5) * self.cell_m
        y = self.origin[1] + (np.arange(ny) + 0.5) * self.cell_m
        inx = np.abs(x - center[0]) <= size[0] / 2 + 1e-9
        iny = np.abs(y - center[1]) <= size[1] / 2 + 1e-9
        mask = iny[:, None] & inx[None, :]
        j, i = self.cell_of(np.asarray(center))
        if 0 <= j < ny and 0 <= i < nx:
            mask[j, i] = True
        return mask

    def elevation_at(self, xy: np.ndarray) -> np.ndarray:
        """(..., 2) m -> (...) elevation of the cell under each point (edge cells outside), m."""
        ji = self.cell_of(xy)
        j = np.clip(ji[..., 0], 0, self.shape[0] - 1)
        i = np.clip(ji[..., 1], 0, self.shape[1] - 1)
        return self.elevation[j, i]

    # -- model ------------------------------------------------------------------------------
    def set_wind(self, wind_xy: np.ndarray) -> None:
        """Mean wind (towards, 20 ft above ground) (2,) m/s; recomputes p when it changed."""
        w = np.asarray(wind_xy, dtype=float)[:2]
        if not np.array_equal(w, self.wind):
            self.wind = w.copy()
            self.refresh()

    def refresh(self) -> None:
        """Recompute the per-direction ignition probabilities (after fuel, terrain or wind)."""
        cfg = self.cfg
        speed = float(np.hypot(*self.wind))
        eta = moisture_damping(cfg.moisture / cfg.moisture_ext)
        base = cfg.p_spread * self.fuel * eta  # (ny, nx), of the target cell
        self.p_dir = []
        for dj, di in self.offsets:
            dist = self.cell_m * math.hypot(dj, di)
            f_wind = 1.0
            if speed > 0.0:
                cos = (di * self.wind[0] + dj * self.wind[1]) / (math.hypot(dj, di) * speed)
                f_wind = math.exp(speed * (cfg.wind_c1 + cfg.wind_c2 * (cos - 1.0)))
            p = np.zeros(self.shape)
            tgt, src = _slices(dj, di)
            rise = self.elevation[tgt] - self.elevation[src]
            slope_deg = np.degrees(np.arctan(rise / dist))
            p[tgt] = base[tgt] * f_wind * np.exp(cfg.slope_a * slope_deg)
            self.p_dir.append(np.clip(p, 0.0, 1.0))

    def ignite_at(self, cells: np.ndarray, now_s: float) -> int:
        """Set the unburnt cells of a bool (ny, nx) mask burning as ignition number
        `self.ignitions` (counted from 0, see `source`); returns how many caught."""
        new = cells & (self.state == UNBURNT) & (self.fuel > 0.0)
        self.state[new] = BURNING
        self.left[new] = self.cfg.burn_steps
        self.ignited_s[new] = now_s
        self.source[new] = self.ignitions
        self.ignitions += 1
        return int(new.sum())

    def step(self, now_s: float) -> int:
        """One grid step at time `now_s` (s); returns the number of cells newly ignited."""
        self.steps += 1
        burning = self.state == BURNING
        rows, cols = np.flatnonzero(burning.any(axis=1)), np.flatnonzero(burning.any(axis=0))
        if rows.size == 0:
            return 0
        ny, nx = self.shape
        j0, j1 = max(rows[0] - 1, 0), min(rows[-1] + 2, ny)
        i0, i1 = max(cols[0] - 1, 0), min(cols[-1] + 2, nx)
        box = (slice(j0, j1), slice(i0, i1))
        b = burning[box].astype(float)
        survive = np.ones_like(b)  # probability that no burning neighbour ignites the cell
        for (dj, di), p in zip(self.offsets, self.p_dir):
            tgt, src = _slices(dj, di, b.shape)
            survive[tgt] *= 1.0 - p[box][tgt] * b[src]
        ignite_p = 1.0 - survive
        cand = np.flatnonzero((self.state[box] == UNBURNT).ravel() & (ignite_p.ravel() > 0.0))
        draws = self.rng.random(cand.size)
        hit = cand[draws < ignite_p.ravel()[cand]]
        # burn-out of the cells that were burning at the start of the step
        self.left[burning] -= 1
        out = burning & (self.left <= 0)
        self.state[out] = BURNT
        self.burnt_s[out] = now_s
        jj, ii = np.unravel_index(hit, b.shape)
        jj, ii = jj + j0, ii + i0
        self.state[jj, ii] = BURNING
        self.left[jj, ii] = self.cfg.burn_steps
        self.ignited_s[jj, ii] = now_s
        self.source[jj, ii] = self._sources(jj, ii, burning)
        return int(hit.size)

    def _sources(self, jj: np.ndarray, ii: np.ndarray, burning: np.ndarray) -> np.ndarray:
        """Ignition numbers inherited by new cells: the highest among their burning neighbours."""
        ny, nx = self.shape
        out = np.full(jj.shape, -1, dtype=np.int32)
        for dj, di in self.offsets:
            sj, si = jj - dj, ii - di
            ok = (sj >= 0) & (sj < ny) & (si >= 0) & (si < nx)
            ok[ok] &= burning[sj[ok], si[ok]]
            out[ok] = np.maximum(out[ok], self.source[sj[ok], si[ok]])
        return out

    # -- views ------------------------------------------------------------------------------
    def front(self) -> np.ndarray:
        """Bool (ny, nx): burning cells with an unburnt, burnable 4-neighbour (the true front)."""
        fresh = (self.state == UNBURNT) & (self.fuel > 0.0)
        near = np.zeros(self.shape, dtype=bool)
        for dj, di in OFFSETS[4]:
            tgt, src = _slices(dj, di, self.shape)
            near[src] |= fresh[tgt]
        return (self.state == BURNING) & near

    def counts(self) -> tuple[int, int]:
        """(burning, burnt) cells."""
        return int((self.state == BURNING).sum()), int((self.state == BURNT).sum())


def _slices(dj: int, di: int, shape: tuple[int, int] | None = None) -> tuple[tuple, tuple]:
    """Index pairs (target, source) with target = source + (dj, di), inside the array."""

    def one(d: int) -> tuple[slice, slice]:
        if d > 0:
            return slice(d, None), slice(None, -d)
        if d < 0:
            return slice(None, d), slice(-d, None)
        return slice(None), slice(None)

    tj, sj = one(dj)
    ti, si = one(di)
    return (tj, ti), (sj, si)
