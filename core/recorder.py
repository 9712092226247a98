"""Results of a run, written as the run goes.

One directory per run:
- `config.toml`       the resolved scenario (defaults filled in, overrides applied);
- `timeseries.csv`    one row per sample: time, alive agents, the mission's `sample()` numbers;
- `events.csv`        deaths and other events, one row each;
- `trajectory.bin`    fixed-size little-endian records (dtype `TRAJECTORY_DTYPE`) of every live
                      physical agent at `results.trajectory_hz`, described by `trajectory.json`
                      (or, with `results.format = "parquet"`, the same records as columns of
                      `trajectory.parquet`, core/parquet.py);
- `summary.json`      written last: seed, versions, ticks, wall time, real-time factor, task
                      statistics, deaths by cause, mission metrics.
Every sample is flushed to the OS, so a killed process leaves valid files up to the last sample
(trajectory.parquet excepted: it is complete when the recorder is closed).
`skyswarm.load_results` (core/results.py) reads a directory into pandas DataFrames.
"""

from __future__ import annotations

import csv
import json
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.faults import DeathEvent
    from skyswarm.core.simulator import Simulator

TRAJECTORY_DTYPE = np.dtype(
    [
        ("tick", "<i8"),
        ("agent_id", "<i8"),
        ("position", "<f8", (3,)),  # m, world ENU
        ("orientation", "<f8", (4,)),  # quaternion x, y, z, w
        ("velocity", "<f8", (3,)),  # m/s, world
    ]
)
EVENT_COLUMNS = ("time_s", "tick", "kind", "agent_id", "cause", "x", "y", "z", "detail")


class Recorder:
    """A post-tick listener that samples the run into the results directory."""

    def __init__(self, out_dir: Path, sim: Simulator, scenario: ScenarioConfig) -> None:
        import tomli_w

        self.dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self.sim = sim
        world = sim.world
        res = scenario.results
        self.traj_every = max(1, world.ticks_for_until(1.0 / res.trajectory_hz))
        self.ts_every = max(1, world.ticks_for_until(1.0 / res.timeseries_hz))
        (out_dir / "config.toml").write_text(tomli_w.dumps(scenario.as_dict()), encoding="utf-8")
        (out_dir / "summary.json").unlink(
            missing_ok=True
        )  # a rerun into the same dir is incomplete until its end
        self._traj: Any
        if res.format == "parquet":
            from skyswarm.core.parquet import FILE, ParquetTrajectory

            (out_dir / "trajectory.bin").unlink(missing_ok=True)  # a rerun in the same dir
            self._traj = ParquetTrajectory(out_dir / FILE)
        else:
            from skyswarm.core.parquet import FILE

            (out_dir / FILE).unlink(missing_ok=True)
            self._traj = BinaryTrajectory(open(out_dir / "trajectory.bin", "wb"))
        self.trajectory_file = FILE if res.format == "parquet" else "trajectory.bin"
        self._events_file = open(out_dir / "events.csv", "w", newline="", encoding="utf-8")
        self._events = csv.writer(self._events_file)
        self._events.writerow(EVENT_COLUMNS)
        self._events_file.flush()
        self._ts_file = open(out_dir / "timeseries.csv", "w", newline="", encoding="utf-8")
        self._ts: csv.writer | None = None
        self._ts_columns: list[str] = []
        self._cache_key: tuple[int, int] = (-1, -1)
        self._ids = np.zeros(0, dtype=np.int64)
        self._slots = np.zeros(0, dtype=np.intp)
        self._write_header(scenario)
        self.closed = False
        self.post_tick(world)  # the initial state, tick 0

    def _write_header(self, scenario: ScenarioConfig) -> None:
        agents = [
            {"id": int(a.id), "role": a.role, "name": a.name} for a in self.sim.physical_agents
        ]
        header = {
            "format": "skyswarm trajectory v1",
            "file": self.trajectory_file,  # trajectory.bin or trajectory.parquet
            "dtype": [
                [n, TRAJECTORY_DTYPE[n].base.str, list(TRAJECTORY_DTYPE[n].shape)]
                for n in TRAJECTORY_DTYPE.names
            ],
            "record_bytes": TRAJECTORY_DTYPE.itemsize,
            "tick_s": self.sim.world.tick_s,
            "sample_every_ticks": self.traj_every,
            "agents": agents,
            "scenario": scenario.file,
            "geo_origin": list(scenario.geo.origin) or None,  # lat deg, lon deg, alt m of ENU 0
        }
        (self.dir / "trajectory.json").write_text(json.dumps(header, indent=1), encoding="utf-8")

    # -- sampling -------------------------------------------------------------------------
    def post_tick(self, world: World) -> None:
        tick = world.tick
        if tick % self.traj_every == 0:
            self._write_trajectory(tick)
        if tick % self.ts_every == 0:
            self._write_sample(tick)

    def _tracked(self) -> tuple[np.ndarray, np.ndarray]:
        key = (len(self.sim.agents), len(self.sim.deaths))
        if key != self._cache_key:
            live = [a for a in self.sim.physical_agents if a.alive]
            self._ids = np.array([a.id for a in live], dtype=np.int64)
            self._slots = np.array([a.slot for a in live], dtype=np.intp)
            self._cache_key = key
        return self._ids, self._slots

    def _write_trajectory(self, tick: int) -> None:
        ids, slots = self._tracked()
        st = self.sim.world.state
        rec = np.empty(len(ids), dtype=TRAJECTORY_DTYPE)
        rec["tick"] = tick
        rec["agent_id"] = ids
        rec["position"] = st.position[slots]
        rec["orientation"] = st.orientation[slots]
        rec["velocity"] = st.linear_velocity[slots]
        self._traj.write(rec)

    def _write_sample(self, tick: int) -> None:
        row: dict[str, Any] = {
            "time_s": round(tick * self.sim.world.tick_s, 9),
            "tick": tick,
            "alive": len(self.sim.agents) - len(self.sim.deaths),  # an agent dies once
        }
        if self.sim.dispatcher is not None:
            row.update(self.sim.dispatcher.sample())
        if self.sim.mission is not None:
            row.update(self.sim.mission.sample())
        if self._ts is None:
            self._ts_columns = list(row)
            self._ts = csv.writer(self._ts_file)
            self._ts.writerow(self._ts_columns)
        elif list(row) != self._ts_columns:
            changed = sorted(set(row) ^ set(self._ts_columns))
            raise ValueError(f"time-series columns changed at tick {tick}: {changed}")
        self._ts.writerow([_fmt(row[c]) for c in self._ts_columns])
        self._ts_file.flush()

    def event(
        self,
        kind: str,
        agent_id: int | None,
        cause: str = "",
        position: Any = None,
        detail: str = "",
    ) -> None:
        x, y, z = position if position is not None else ("", "", "")
        world = self.sim.world
        self._events.writerow(
            [
                round(world.time_s, 9),
                world.tick,
                kind,
                "" if agent_id is None else agent_id,
                cause,
                _fmt(x),
                _fmt(y),
                _fmt(z),
                detail,
            ]
        )
        self._events_file.flush()

    def death(self, event: DeathEvent) -> None:
        self.event("death", event.agent_id, event.cause, event.position, event.detail)

    # -- end ------------------------------------------------------------------------------
    def close(self, summary: dict[str, Any] | None) -> None:
        if self.closed:
            return
        self.closed = True
        for f in (self._traj, self._events_file, self._ts_file):
            f.close()
        if summary is not None:
            summary = dict(summary, versions=versions())
            text = json.dumps(summary, indent=2, default=_json_default)
            tmp = self.dir / "summary.json.tmp"  # written whole, then renamed: never half a file
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.dir / "summary.json")


class BinaryTrajectory:
    """trajectory.bin: the records' bytes, flushed to the OS every sample."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def write(self, records: np.ndarray) -> None:
        self._file.write(records.tobytes())
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _fmt(v: Any) -> Any:
    if isinstance(v, float | np.floating):
        return repr(float(v))  # shortest round-trip text: bit-identical when read back
    return v


def _json_default(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(f"not JSON serialisable: {type(v).__name__}")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("skyswarm", "numpy", "pybullet", "trimesh"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def read_header(results_dir: Path | str) -> dict[str, Any]:
    """trajectory.json of a run; a missing, empty or torn header is a ConfigError (one line)."""
    from skyswarm.core.schema import ConfigError

    path = Path(results_dir) / "trajectory.json"
    try:
        header = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            str(results_dir),
            "(results)",
            str(results_dir),
            "a results directory of `skyswarm run` (no trajectory.json)",
        ) from None
    except (ValueError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict) or not isinstance(header.get("tick_s"), int | float):
        raise ConfigError(
            str(path), "(file)", str(path), "a complete trajectory header (the run was cut short)"
        )
    return header


def read_trajectory(results_dir: Path | str) -> np.ndarray:
    """All complete trajectory records of a run (a truncated last record is ignored; no file:
    no records), from trajectory.bin or trajectory.parquet, whichever the run wrote: a
    structured array of `TRAJECTORY_DTYPE` (`tick`, `agent_id`, `position` (3,) m,
    `orientation` (4,) quaternion x, y, z, w, `velocity` (3,) m/s). Needs no pandas:

        rec = read_trajectory("results/hover")
        z_of_1 = rec["position"][rec["agent_id"] == 1, 2]  # m, every sample of agent 1
    """
    from skyswarm.core.parquet import FILE, read_parquet_trajectory

    parquet = Path(results_dir) / FILE
    if parquet.is_file():
        return read_parquet_trajectory(parquet, TRAJECTORY_DTYPE)
    path = Path(results_dir) / "trajectory.bin"
    if not path.is_file():
        return np.zeros(0, dtype=TRAJECTORY_DTYPE)
    raw = path.read_bytes()
    n = len(raw) // TRAJECTORY_DTYPE.itemsize
    return np.frombuffer(raw[: n * TRAJECTORY_DTYPE.itemsize], dtype=TRAJECTORY_DTYPE)
