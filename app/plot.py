"""Plots of a results directory (matplotlib, Agg backend, PNG): `skyswarm plot RESULTDIR`.

Written into RESULTDIR:
- `map.png`: top view (x east, y north, m): every physical agent's trajectory (trajectory.bin)
  with its start (circle) and, for the dead, the place of death (red x, from events.csv), plus the
  mission's map layer when the mission left one (below);
- `timeseries.png`: against simulated time: coverage (every time-series column whose name starts
  with `coverage`), alive agents (`alive` and the mission's `alive_*` columns), and messages
  (running totals of `comms.CHANNEL.sent`, `.delivered` and the losses of each channel);
- `mission.png`: one small panel per remaining mission column (e.g. separation, formation error),
  when there are any;
- `fire.png`: when the run left `fire.npz` (the fire-tracking mission, missions/wildfire/views.py
  documents its arrays): the grid at four times, unburnt / burning / burnt cells, and the
  perimeter the base station knew then (yellow).

Map layer. A mission may write `coverage.npz` into the results directory at teardown (the
flocking coverage mission does) with these arrays, all in m, world ENU:
- `areas` (K, 4, 2): outlines of the areas, corners in drawing order;
- `cell_polygons` (M, 4, 2): the grid cells, corners in drawing order;
- `cell_values` (M,): a value in [0, 1] per cell, drawn from grey (0: not covered) to green (1);
- optionally `area_ids` (K,): labels of the areas.
Only core files are read: any mission's run can be plotted.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from skyswarm.core.recorder import read_trajectory

FIGURES = ("map.png", "timeseries.png", "mission.png", "fire.png")
_GENERIC = ("time_s", "tick", "alive")


def plot_results(results_dir: Path | str) -> list[Path]:
    """Write the PNGs of a run; returns their paths. Raises FileNotFoundError if the directory
    holds no run (no timeseries.csv and no trajectory.bin)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: never a window, works on servers
    out = Path(results_dir)
    if not (out / "timeseries.csv").is_file() and not (out / "trajectory.bin").is_file():
        raise FileNotFoundError(f"{out}: not a results directory (no timeseries.csv)")
    series = read_timeseries(out)
    if not series and len(read_trajectory(out)) == 0:
        raise FileNotFoundError(f"{out}: nothing to plot yet (no samples recorded)")
    written = [plot_map(out)]
    if series:
        written.append(plot_timeseries(out, series))
        extra = plot_mission_series(out, series)
        if extra is not None:
            written.append(extra)
    if (out / "fire.npz").is_file():
        written.append(plot_fire(out))
    return written


def save_png(fig, path: Path) -> None:
    """`fig` as a PNG at `path`, atomically (app/results_dir.py `atomic_path`)."""
    from skyswarm.app.results_dir import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", bbox_inches="tight")


# -- reading ----------------------------------------------------------------------------------
def read_timeseries(results_dir: Path) -> dict[str, np.ndarray]:
    """timeseries.csv as column name -> (T,) float array (NaN where a cell is empty or text)."""
    path = results_dir / "timeseries.csv"
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if len(rows) < 2:
        return {}
    header, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]  # torn last row
    if not body:
        return {}
    return {name: np.array([_num(r[k]) for r in body]) for k, name in enumerate(header)}


def read_deaths(results_dir: Path) -> list[tuple[float, int, float, float]]:
    """(time s, agent id, x m, y m) of every death with a known position."""
    path = results_dir / "events.csv"
    if not path.is_file():
        return []
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("kind") == "death" and row.get("x") and row.get("agent_id"):
                x, y = _num(row["x"]), _num(row["y"] or "")
                if math.isfinite(x) and math.isfinite(y) and row["agent_id"].isdigit():
                    out.append((_num(row["time_s"]), int(row["agent_id"]), x, y))
    return out


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


# -- figures ----------------------------------------------------------------------------------
def plot_map(results_dir: Path) -> Path:
    """map.png: map layer, trajectories, starts and death sites."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 8), dpi=110)
    layer = results_dir / "coverage.npz"
    if layer.is_file():
        _draw_layer(ax, np.load(layer))
    traj = read_trajectory(results_dir)  # trajectory.bin or .parquet; none: no records
    for agent in np.unique(traj["agent_id"]) if len(traj) else []:
        rec = traj[traj["agent_id"] == agent]
        xy = rec["position"][np.argsort(rec["tick"], kind="stable"), :2]
        (line,) = ax.plot(xy[:, 0], xy[:, 1], lw=0.8, alpha=0.85)
        ax.plot(*xy[0], "o", ms=3, color=line.get_color())
    deaths = read_deaths(results_dir)
    for t, agent, x, y in deaths:
        ax.plot(x, y, "x", color="red", ms=9, mew=2)
        ax.annotate(
            f"{agent} ({t:.0f} s)",
            (x, y),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
            color="red",
        )
    ax.set_aspect("equal")
    ax.set_xlabel("x east (m)")
    ax.set_ylabel("y north (m)")
    ax.set_title(f"{results_dir.name}: trajectories, deaths (x)")
    ax.grid(alpha=0.3)
    out = results_dir / "map.png"
    save_png(fig, out)
    plt.close(fig)
    return out


def _draw_layer(ax, layer: np.lib.npyio.NpzFile) -> None:  # noqa: ANN001 (matplotlib Axes)
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import LinearSegmentedColormap

    if "cell_polygons" in layer and "cell_values" in layer:
        cmap = LinearSegmentedColormap.from_list("cover", ["#d9d9d9", "#4caf50"])
        cells = PolyCollection(
            layer["cell_polygons"],
            array=layer["cell_values"],
            cmap=cmap,
            edgecolors="none",
            zorder=0,
        )
        cells.set_clim(0.0, 1.0)
        ax.add_collection(cells)
    if "areas" in layer:
        ids = layer["area_ids"] if "area_ids" in layer else np.arange(len(layer["areas"]))
        for corners, area_id in zip(layer["areas"], ids):
            ring = np.vstack([corners, corners[:1]])
            ax.plot(ring[:, 0], ring[:, 1], color="#b8860b", lw=1.5, zorder=1)
            ax.annotate(f"area {area_id}", corners.mean(axis=0), color="#b8860b", fontsize=8)
    ax.autoscale_view()


def plot_timeseries(results_dir: Path, series: dict[str, np.ndarray]) -> Path:
    """timeseries.png: coverage, alive agents, message counts against time."""
    import matplotlib.pyplot as plt

    t = series.get("time_s", np.arange(len(next(iter(series.values())))))
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), dpi=110, sharex=True)
    cov = [k for k in series if k.startswith("coverage")]
    for k in cov:
        axes[0].plot(t, 100.0 * series[k], label=k)
    axes[0].set_ylabel("coverage (%)")
    for k in [k for k in series if k == "alive" or k.startswith("alive_")]:
        axes[1].step(t, series[k], where="post", label=k)
    axes[1].set_ylabel("alive agents")
    for k in sorted(series):
        parts = k.split(".")
        if parts[0] == "comms" and len(parts) == 3 and parts[2] in _MESSAGE_FATES:
            axes[2].plot(t, series[k], label=f"{parts[1]} {parts[2]}")
    axes[2].set_ylabel("messages (running total)")
    if axes[2].get_lines():
        axes[2].set_yscale("symlog", linthresh=10.0)  # losses are orders below deliveries
    axes[2].set_xlabel("time (s)")
    for ax in axes:
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="best")
    fig.suptitle(results_dir.name)
    out = results_dir / "timeseries.png"
    save_png(fig, out)
    plt.close(fig)
    return out


_MESSAGE_FATES = ("sent", "delivered", "lost_on_air", "out_of_range")


def plot_mission_series(results_dir: Path, series: dict[str, np.ndarray]) -> Path | None:
    """mission.png: one panel per mission column not drawn in timeseries.png (None if none)."""
    import matplotlib.pyplot as plt

    names = [
        k
        for k in series
        if k not in _GENERIC
        and not k.startswith(("coverage", "alive_", "comms."))
        and np.isfinite(series[k]).any()
    ]
    if not names:
        return None
    t = series.get("time_s", np.arange(len(series[names[0]])))
    cols = 2 if len(names) > 1 else 1
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(9, 2.4 * rows), dpi=110, squeeze=False)
    for ax, name in zip(axes.ravel(), names):
        ax.plot(t, series[name], lw=0.9)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("time (s)", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(names) :]:
        ax.set_visible(False)
    fig.tight_layout()
    out = results_dir / "mission.png"
    save_png(fig, out)
    plt.close(fig)
    return out


def plot_fire(results_dir: Path) -> Path:
    """fire.png: the fire grid of `fire.npz` at a quarter, half, three quarters and the end of
    the run: unburnt (green; grey without fuel), burning (red), burnt (black), and the outline
    of the area the base station knew as burnt by then, holes filled (yellow)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from scipy import ndimage

    rec = np.load(results_dir / "fire.npz")
    ign, out, known = rec["ignited_s"], rec["burnt_s"], rec["known_s"]
    ny, nx = ign.shape
    x0, y0 = rec["origin"]
    c = float(rec["cell_m"])
    extent = (x0, x0 + nx * c, y0, y0 + ny * c)
    series = read_timeseries(results_dir)
    times = [t for t in (ign, out, known) if np.isfinite(t).any()]
    end = max([float(np.nanmax(t)) for t in times] + [float(np.nanmax(series.get("time_s", [0])))])
    cmap = ListedColormap(["#bdbdbd", "#a5d6a7", "#e53935", "#212121"])
    fig, axes = plt.subplots(2, 2, figsize=(10, 10), dpi=100, sharex=True, sharey=True)
    for ax, t in zip(axes.ravel(), np.linspace(end / 4, end, 4)):
        state = np.where(rec["fuel"] > 0.0, 1, 0)
        with np.errstate(invalid="ignore"):
            state[ign <= t] = 2
            state[out <= t] = 3
            knew = ndimage.binary_fill_holes(known <= t).astype(float)
        ax.imshow(state, cmap=cmap, vmin=0, vmax=3, origin="lower", extent=extent)
        if knew.any():
            xs = x0 + (np.arange(nx) + 0.5) * c
            ys = y0 + (np.arange(ny) + 0.5) * c
            ax.contour(xs, ys, knew, levels=[0.5], colors="#ffd600", linewidths=1.5)
        ax.set_title(f"t = {t:.0f} s", fontsize=9)
        ax.set_aspect("equal")
    for ax in axes[-1]:
        ax.set_xlabel("x east (m)")
    for ax in axes[:, 0]:
        ax.set_ylabel("y north (m)")
    fig.suptitle(f"{results_dir.name}: fire (red burning, black burnt), known perimeter (yellow)")
    fig.tight_layout()
    path = results_dir / "fire.png"
    save_png(fig, path)
    plt.close(fig)
    return path
