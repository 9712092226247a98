"""Sweep files: a base scenario, parameters to vary, seeds -> a validated list of runs.

A sweep file is TOML with four tables (key paths may be dotted keys or quoted strings):

    [sweep]                      # SweepSettings: scenario, seed, seeds, retries, out
    [fixed]                      # key.path = value, applied to every run
    [grid]                       # key.path = [values...]: the cartesian product
    [[points]]                   # key.path = value: explicit parameter sets (added to the grid)

Every grid point is validated as a scenario before anything runs, so a misspelt key path is an
error naming the sweep key. Each run's seed is derived from the sweep seed, a hash of the point's
canonical parameter values and the replicate number (numpy SeedSequence), never from the order
of the points or Python's salted `hash()`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.core.config import ScenarioConfig, load_scenario, read_toml
from skyswarm.core.schema import ConfigError, build, param

SEED_KEY = "simulation.seed"


@dataclass(frozen=True)
class SweepSettings:
    scenario: str = param(doc="base scenario TOML file, relative to the sweep file")
    seed: int = param(0, "sweep root seed; each run's seed is derived from it and its point", ge=0)
    seeds: int | tuple[int, ...] = param(
        1, "replicates per point: a count, or a list of distinct replicate numbers", ge=0
    )
    retries: int = param(1, "extra attempts for a run that raises or whose worker dies", ge=0)
    out: str = param("", "output folder (default results/sweeps/<sweep file name>)")

    def validate(self, path: str, file: str) -> None:
        key = f"{path}.seeds"
        if isinstance(self.seeds, int) and self.seeds < 1:
            raise ConfigError(file, key, self.seeds, "a count >= 1 or a non-empty list")
        if isinstance(self.seeds, tuple):
            if not self.seeds:
                raise ConfigError(file, key, list(self.seeds), "a non-empty list of integers")
            if len(set(self.seeds)) != len(self.seeds):
                raise ConfigError(file, key, list(self.seeds), "a list without repeated seeds")

    @property
    def replicates(self) -> tuple[int, ...]:
        return tuple(range(self.seeds)) if isinstance(self.seeds, int) else self.seeds


@dataclass(frozen=True)
class SweepFileSchema:
    """The top level of a sweep file (tables other than `sweep` are checked by `load_sweep`)."""

    sweep: SweepSettings = param(doc="[sweep]: base scenario, seeds, retries, output folder")
    fixed: Any = param(None, "[fixed]: key.path = value applied to every run")
    grid: Any = param(None, "[grid]: key.path = [values]; every combination is a point")
    points: tuple[Any, ...] = param((), "[[points]]: explicit parameter sets")


@dataclass(frozen=True)
class Point:
    """One parameter set: `params` maps scenario key paths to values; `source` maps them to the
    sweep-file key that set them (for error messages)."""

    index: int
    params: Mapping[str, Any]
    source: Mapping[str, str]

    @property
    def digest(self) -> str:
        return hashlib.sha256(canonical(self.params).encode()).hexdigest()


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs for one run; picklable, no open resources."""

    run: str  # run id, also the run directory's name
    point: int
    replicate: int
    seed: int
    params: Mapping[str, Any]
    scenario: str  # absolute path of the base scenario
    overrides: tuple[str, ...]  # fixed, then the point's parameters, then the seed
    run_dir: str
    config_hash: str


@dataclass(frozen=True)
class Sweep:
    file: str
    settings: SweepSettings
    scenario: Path
    fixed: Mapping[str, Any]
    points: tuple[Point, ...]
    param_keys: tuple[str, ...]  # every varied key path, in order of first appearance
    resolved: tuple[ScenarioConfig, ...] = field(repr=False)  # one per point

    def runs(self, out: Path) -> list[RunSpec]:
        """Every point x replicate, in a deterministic order (point, then replicate)."""
        return [
            self._spec(point, scn, rep, out)
            for point, scn in zip(self.points, self.resolved)
            for rep in self.settings.replicates
        ]

    def _spec(self, point: Point, scn: ScenarioConfig, rep: int, out: Path) -> RunSpec:
        seed = derive_seed(self.settings.seed, point.params, rep)
        run = f"{point.digest[:10]}-r{rep}"
        settings = {**self.fixed, **point.params}
        overrides = (*(override(k, v) for k, v in settings.items()), override(SEED_KEY, seed))
        return RunSpec(
            run=run,
            point=point.index,
            replicate=rep,
            seed=seed,
            params=dict(point.params),
            scenario=str(self.scenario),
            overrides=overrides,
            run_dir=str((out / "runs" / run).resolve()),
            config_hash=config_hash(scn, seed),
        )


def canonical(value: Any) -> str:
    """A stable text of plain data: sorted keys, shortest round-trip floats."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def derive_seed(sweep_seed: int, params: Mapping[str, Any], replicate: int) -> int:
    """The run seed (0 <= seed < 2**63) of a point's replicate, independent of point order."""
    words = np.frombuffer(hashlib.sha256(canonical(params).encode()).digest(), dtype="<u4")
    seq = np.random.SeedSequence([sweep_seed, *words.tolist(), replicate])
    hi, lo = (int(w) for w in seq.generate_state(2, np.uint32))
    return ((hi << 32) | lo) & (2**63 - 1)


def config_hash(scenario: ScenarioConfig, seed: int) -> str:
    """SHA-256 of the resolved config a run uses (its results folder excluded)."""
    data = scenario.as_dict()
    data["simulation"]["seed"] = seed
    data["results"].pop("dir", None)
    return hashlib.sha256(canonical(data).encode()).hexdigest()


def override(key: str, value: Any) -> str:
    """`key=value` with the value written as TOML (read back by core.config.parse_override)."""
    import tomli_w

    return f"{key}={tomli_w.dumps({'v': value}).partition('=')[2].strip()}"


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested TOML tables -> {"a.b.c": leaf}; a quoted "a.b" key counts as the path a.b."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping):
            out.update(flatten(value, path))
        else:
            out[path] = value
    return out


MAX_RUNS = 10_000  # default cap of `skyswarm batch --max-runs`


def load_sweep(
    path: str | Path, max_runs: int = MAX_RUNS, announce: Callable[[str], None] | None = None
) -> Sweep:
    """Read and validate a sweep file, including every point's scenario. The number of runs is
    computed from the grid's axis lengths (never by enumerating it) and given to `announce`
    before any point is built; more than `max_runs` is a ConfigError."""
    file = str(path)
    top = build(SweepFileSchema, read_toml(path), "", file)
    settings = top.sweep
    scenario = (Path(path).resolve().parent / settings.scenario).resolve()
    if not scenario.is_file():
        raise ConfigError(file, "sweep.scenario", settings.scenario, f"a file ({scenario})")
    fixed = _table(top.fixed, "fixed", file)
    n_points, n_runs = count_runs(top.grid, top.points, settings, file)
    if announce is not None:
        announce(f"sweep: {n_runs} runs ({n_points} points x {n_runs // n_points} replicates)")
    if n_runs > max_runs:  # named by what made it too many: the points, or their replicates
        key = ("grid" if top.grid is not None else "points") if n_points > max_runs else None
        raise ConfigError(
            file,
            key or "sweep.seeds",
            f"{n_runs} runs",
            f"at most --max-runs {max_runs} runs (or raise it)",
        )
    points = _points(top.grid, top.points, file)
    keys = tuple(dict.fromkeys(k for p in points for k in p.params))
    fixed_src = {k: f"fixed.{k}" for k in fixed}
    for source, values in ((fixed_src, fixed), *((p.source, p.params) for p in points)):
        if SEED_KEY in values:
            raise ConfigError(
                file, source[SEED_KEY], values[SEED_KEY], "no simulation.seed (use sweep.seeds)"
            )
    resolved = tuple(_validate_point(scenario, fixed, fixed_src, p, file) for p in points)
    return Sweep(file, settings, scenario, fixed, points, keys, resolved)


def count_runs(
    grid: Any, explicit: Sequence[Any], settings: SweepSettings, file: str
) -> tuple[int, int]:
    """(points, runs) of a sweep from the lengths of its grid axes, the explicit points and the
    replicates: a product of counts, whatever the size (nothing is enumerated)."""
    axes = _table(grid, "grid", file)
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(file, f"grid.{key}", values, "a non-empty list of values")
    n_points = (math.prod(len(v) for v in axes.values()) if axes else 0) + len(explicit)
    if n_points == 0:
        raise ConfigError(file, "grid", {}, "at least one key.path = [values] (or [[points]])")
    seeds = settings.seeds
    return n_points, n_points * (seeds if isinstance(seeds, int) else len(seeds))


def _table(value: Any, key: str, file: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(file, key, value, "a table of key.path = value")
    return flatten(value)


def _points(grid: Any, explicit: Sequence[Any], file: str) -> list[Point]:
    axes = _table(grid, "grid", file)  # checked by count_runs: non-empty lists, >= 1 point
    points: list[Point] = []
    if axes:
        for combo in itertools.product(*axes.values()):
            params = dict(zip(axes, combo))
            points.append(Point(len(points), params, {k: f"grid.{k}" for k in axes}))
    for i, table in enumerate(explicit):
        params = _table(table, f"points[{i}]", file)
        if not params:
            raise ConfigError(file, f"points[{i}]", table, "a table of key.path = value")
        points.append(Point(len(points), params, {k: f"points[{i}].{k}" for k in params}))
    seen: dict[str, int] = {}
    for p in points:
        if p.digest in seen:
            key = next(iter(p.source.values())).rsplit(".", 1)[0]
            raise ConfigError(file, key, dict(p.params), "a parameter set not listed before")
        seen[p.digest] = p.index
    return points


def _validate_point(
    scenario: Path, fixed: Mapping[str, Any], fixed_src: Mapping[str, str], point: Point, file: str
) -> ScenarioConfig:
    """The point's scenario; a scenario error is re-raised at the sweep key that caused it."""
    settings = {**fixed, **point.params}
    try:
        return load_scenario(scenario, [override(k, v) for k, v in settings.items()])
    except ConfigError as exc:
        source = {**fixed_src, **point.source}
        for key, where in source.items():
            if _related(key, exc.key):
                expected = f"{exc.expected} (at {exc.key} in {scenario.name})"
                raise ConfigError(file, where, settings[key], expected) from None
        raise


def _related(param_key: str, error_key: str) -> bool:
    """Whether a scenario error at `error_key` comes from setting `param_key`."""
    return (
        error_key == param_key
        or error_key.startswith((param_key + ".", param_key + "["))
        or param_key.startswith(error_key + ".")
    )
