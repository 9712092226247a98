"""Sweep outputs: `sweep.csv` (one row per run), `aggregate.csv` (per point) and metric plots.

Row columns, in order: run, point, replicate, seed, the varied key paths, status, attempts,
error, then the run's summary.json flattened with dots (`metrics.<name>`, `alive`,
`deaths_by_cause.<cause>`, `comms.<...>`, ...), then wall-clock columns under `timing.`
(`timing.wall_time_s`, `timing.compile_s`, `timing.real_time_factor`, `timing.tasks.*`,
`timing.threads.*`).
Everything before `timing.` is a function of the config and the seed only, so it is identical
whatever the executor or worker count; the `timing.` columns are not.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from skyswarm.app.sweep import flatten

WALL_CLOCK_KEYS = ("wall_time_s", "compile_s", "real_time_factor", "tasks", "threads")
TIMING = "timing."
NOT_IN_TABLE = ("seed", "versions")  # the seed has its own column; versions are per install
AGGREGATED_PREFIXES = ("metrics.", "deaths_by_cause.", "comms.")
AGGREGATED = ("alive", "sim_time_s", "timing.wall_time_s", "timing.real_time_factor")

Row = dict[str, Any]


def summary_columns(summary: Mapping[str, Any]) -> Row:
    """A run's summary.json as flat columns; wall-clock values moved under `timing.`."""
    out: Row = {}
    for key, value in summary.items():
        if key in NOT_IN_TABLE:
            continue
        name = TIMING + key if key in WALL_CLOCK_KEYS else key
        out.update(flatten({name: value}) if isinstance(value, Mapping) else {name: value})
    return out


class SweepTable:
    """`sweep.csv`, appended as runs finish (rewritten when a new column appears) and rewritten
    sorted by (point, replicate) by `finish()`. Rows are kept with their Python values.

    The constructor writes the header and `rows` (the runs a --resume found complete) in one
    atomic rewrite: a full disk leaves the previous table as it was, never a shorter one."""

    def __init__(self, path: Path, head: Sequence[str], rows: Iterable[Row] = ()) -> None:
        self.path = path
        self.head = list(head)
        self.rows: list[Row] = list(rows)
        self.columns: list[str] = []
        self._rewrite()

    def add(self, row: Row) -> None:
        self.rows.append(row)
        if set(row) <= set(self.columns):
            with open(self.path, "a", newline="", encoding="utf-8") as f:
                size = f.tell()
                try:
                    csv.writer(f).writerow(_cells(row, self.columns))
                    f.flush()
                except OSError:  # full disk: no torn row left behind
                    f.truncate(size)
                    raise
        else:
            self._rewrite()

    def finish(self) -> None:
        self.rows.sort(key=lambda r: (r["point"], r["replicate"]))
        self._rewrite()

    def _rewrite(self) -> None:
        extra = {c for r in self.rows for c in r} - set(self.head)
        timing = sorted(c for c in extra if c.startswith(TIMING))
        self.columns = [*self.head, *sorted(extra - set(timing)), *timing]
        _write_table(self.path, self.columns, self.rows)


def _cells(row: Row, columns: Sequence[str]) -> list[Any]:
    return [_cell(row.get(c)) for c in columns]


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # shortest round-trip text
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def metric_columns(rows: Iterable[Row]) -> list[str]:
    """The numeric columns `aggregate.csv` summarises, sorted, `timing.` last."""
    found = {c for r in rows for c, v in r.items() if _aggregated(c) and _is_number(v)}
    return sorted(found, key=lambda c: (c.startswith(TIMING), c))


def _aggregated(column: str) -> bool:
    return column.startswith(AGGREGATED_PREFIXES) or column in AGGREGATED


def stats(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, sample std and the 95 % Student-t confidence interval of the mean."""
    from scipy import stats as st

    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci95_low": None, "ci95_high": None}
    mean = math.fsum(values) / n
    if n < 2:
        return {"n": 1, "mean": mean, "std": None, "ci95_low": None, "ci95_high": None}
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(st.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    return {"n": n, "mean": mean, "std": std, "ci95_low": mean - half, "ci95_high": mean + half}


def aggregate(rows: Sequence[Row], param_keys: Sequence[str]) -> list[Row]:
    """One row per point: its parameters, run counts, and `stats()` of every numeric column
    over the point's successful runs (`<column>.mean`, `.std`, `.ci95_low`, ...)."""
    by_point: dict[int, list[Row]] = {}
    for r in sorted(rows, key=lambda r: (r["point"], r["replicate"])):
        by_point.setdefault(r["point"], []).append(r)
    metrics = metric_columns(rows)
    out = []
    for point, runs in by_point.items():
        ok = [r for r in runs if r["status"] == "ok"]
        agg: Row = {"point": point, **{k: runs[0].get(k) for k in param_keys}}
        agg.update(runs=len(runs), ok=len(ok), failed=len(runs) - len(ok))
        for m in metrics:
            values = [float(r[m]) for r in ok if _is_number(r.get(m))]
            agg.update({f"{m}.{k}": v for k, v in stats(values).items()})
        out.append(agg)
    return out


def write_csv(path: Path, rows: Sequence[Row]) -> None:
    """Write atomically (`replace_atomically`): a full disk leaves the previous file intact."""
    _write_table(path, list(dict.fromkeys(c for r in rows for c in r)), rows)


def write_text(path: Path, text: str) -> None:
    """`path.write_text(text)`, atomically (`replace_atomically`)."""
    replace_atomically(path, lambda f: f.write(text))


def replace_atomically(path: Path, write: Callable[[IO[str]], object]) -> None:
    """Replace `path` by what `write(f)` writes: into `<path>.tmp` in the same folder, flushed
    and fsynced, then `os.replace`d over `path`. A reader or a crash never sees half a file; a
    full disk (or any error) leaves the previous file as it was and no `.tmp` behind."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_table(path: Path, columns: Sequence[str], rows: Iterable[Row]) -> None:
    def write(f: IO[str]) -> None:
        out = csv.writer(f)
        out.writerow(columns)
        out.writerows(_cells(r, columns) for r in rows)

    replace_atomically(path, write)


def plot_metrics(agg: Sequence[Row], param_keys: Sequence[str], folder: Path) -> list[Path]:
    """One PNG per mission metric and varied parameter: mean vs parameter value with 95 % CI
    bars, one line per combination of the other varied parameters."""
    metrics = sorted({c[: -len(".mean")] for r in agg for c in r if c.endswith(".mean")})
    metrics = [m for m in metrics if m.startswith("metrics.")]
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for m in metrics:
        if not any(r.get(f"{m}.mean") is not None for r in agg):
            continue
        for key in param_keys:
            path = folder / f"{m.removeprefix('metrics.')}__vs__{key}.png"
            _plot_one(agg, m, key, [k for k in param_keys if k != key], path)
            written.append(path)
    return written


def _plot_one(agg: Sequence[Row], metric: str, key: str, others: list[str], path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=100)
    FigureCanvasAgg(fig)  # Agg, no display and no pyplot global state
    ax = fig.add_subplot()
    rows = [r for r in agg if r.get(key) is not None and r.get(f"{metric}.mean") is not None]
    numeric = all(_is_number(r[key]) for r in rows)
    ticks = list(dict.fromkeys(str(r[key]) for r in rows))
    lines: dict[str, list[Row]] = {}
    for r in rows:
        label = ", ".join(f"{k}={r.get(k)}" for k in others) or metric
        lines.setdefault(label, []).append(r)
    for label, line in lines.items():
        line.sort(key=lambda r: r[key] if numeric else ticks.index(str(r[key])))
        x = [r[key] if numeric else ticks.index(str(r[key])) for r in line]
        y = [r[f"{metric}.mean"] for r in line]
        err = [_half_width(r, metric) for r in line]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label=label)
    if not numeric:
        ax.set_xticks(range(len(ticks)), ticks)
    ax.set_xlabel(key)
    ax.set_ylabel(f"{metric} (mean, 95% CI)")
    ax.grid(True, alpha=0.3)
    if len(lines) > 1:
        ax.legend(fontsize="small")
    fig.tight_layout()
    from skyswarm.app.results_dir import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png")


def _half_width(row: Row, metric: str) -> float:
    high, mean = row.get(f"{metric}.ci95_high"), row[f"{metric}.mean"]
    return 0.0 if high is None else high - mean
