"""Results of a run, written as the run goes.

One directory per run:
- `config.toml`       the resolved scenario (defaults filled in, overrides applied);
- `timeseries.csv`    one row per sample: time, alive agents, the mission's `sample()` numbers;
- `events.csv`        deaths and other events, one row each;
- `trajectory.bin`    fixed-size little-endian records (dtype `TRAJECTORY_DTYPE`) of every live
                      physical agent at `results.trajectory_hz` (the agents of a
                      `[[results.groups]]` table at its lower rate), described by
                      `trajectory.json` (or, with `results.format = "parquet"`, the same records
                      as columns of `trajectory.parquet`, core/parquet.py); for big swarms its
                      floats may be stored as float32 or quantised and compressed by zstd
                      (`results.trajectory_precision`, `trajectory_compression`, codec in
                      core/trajectory_codec.py; trajectory.json says which), read back by
                      `read_trajectory` as float64 records; the records of one sample tick come
                      stream by stream (agents of no group, then each group), in agent order;
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

from skyswarm.core.files import open_results_folder
from skyswarm.core.trajectory_codec import (
    CODEC,
    QUANTUM,
    BinaryTrajectory,
    decode,
    decode_v1,
    dequantise,
    quantised_dtype,
)

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


def stored_dtype(precision: str) -> np.dtype:
    """The records as trajectory.bin stores them: TRAJECTORY_DTYPE, with float32 floats for
    precision "float32", int64 multiples of `trajectory_codec.QUANTUM` for "quantised"."""
    if precision == "float64":
        return TRAJECTORY_DTYPE
    if precision == "quantised":
        return quantised_dtype(TRAJECTORY_DTYPE)
    fields = []
    for name in TRAJECTORY_DTYPE.names:
        base, shape = TRAJECTORY_DTYPE[name].base, TRAJECTORY_DTYPE[name].shape
        fields.append((name, "<f4" if base.kind == "f" else base.str, shape))
    return np.dtype(fields)


# zstd bytes / uncompressed bytes of a flying swarm's trajectory by precision (1,000 boids,
# 30 m radio, bench/recording.py); hovering UAVs compress ~50x better
ZSTD_RATIO = {"float64": 0.62, "float32": 0.40, "quantised": 0.086}

EVENT_COLUMNS = ("time_s", "tick", "kind", "agent_id", "cause", "x", "y", "z", "detail")


class Recorder:
    """A post-tick listener that samples the run into the results directory.

    `traj_every`: ticks between trajectory samples of the agents of no `[[results.groups]]`
    (the poses a replay has; core/timeline.py looks at the view state at the same ticks)."""

    def __init__(self, out_dir: Path, sim: Simulator, scenario: ScenarioConfig) -> None:
        import tomli_w

        self.dir = out_dir
        open_results_folder(out_dir, scenario.file)  # never a folder of the user's files
        self.sim = sim
        world = sim.world
        res = scenario.results
        self._precision = res.trajectory_precision
        self._stored = stored_dtype(res.trajectory_precision)  # the records as written
        self._zstd = res.format == "binary" and res.trajectory_compression == "zstd"
        self.traj_every = max(1, world.ticks_for_until(1.0 / res.trajectory_hz))
        self._groups = res.groups
        self._stream_cache: dict[int, int] = {}
        # ticks between samples of each stream: 0 the agents of no group, k + 1 groups[k]
        self.stream_every = (self.traj_every,) + tuple(
            max(1, world.ticks_for_until(1.0 / g.trajectory_hz)) for g in res.groups
        )
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
            self._traj = BinaryTrajectory(
                open(out_dir / "trajectory.bin", "wb"),
                self._stored,
                self._zstd,
                tuple(k * world.tick_s for k in self.stream_every),
                res.trajectory_precision == "quantised",
            )
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
        self._streams = np.zeros(0, dtype=np.intp)
        self._write_header(scenario)
        self.closed = False
        self.post_tick(world)  # the initial state, tick 0

    def _write_header(self, scenario: ScenarioConfig) -> None:
        agents = [
            {
                "id": int(a.id),
                "role": a.role,
                "name": a.name,
                "every_ticks": self.stream_every[self._stream_of(a.id, a.role)],
            }
            for a in self.sim.physical_agents
        ]
        res, stored = scenario.results, self._stored
        header = {
            "format": "skyswarm trajectory v1",
            "file": self.trajectory_file,  # trajectory.bin or trajectory.parquet
            "dtype": [[n, stored[n].base.str, list(stored[n].shape)] for n in stored.names],
            "record_bytes": stored.itemsize,
            "compression": res.trajectory_compression,  # "zstd": core/trajectory_codec.py
            "codec": CODEC,
            "quantum": QUANTUM if res.trajectory_precision == "quantised" else None,
            "tick_s": self.sim.world.tick_s,
            "sample_every_ticks": self.traj_every,  # agents of no [[results.groups]]
            "stream_every_ticks": list(self.stream_every),  # stream 0, then each group's
            "agents": agents,
            "scenario": scenario.file,
            "geo_origin": list(scenario.geo.origin) or None,  # lat deg, lon deg, alt m of ENU 0
        }
        (self.dir / "trajectory.json").write_text(json.dumps(header, indent=1), encoding="utf-8")

    def _stream_of(self, agent_id: int, role: str) -> int:
        """0 for an agent of no `[[results.groups]]`, else 1 + the first group holding it
        (looked up once per agent: the live set is re-read at every death)."""
        stream = self._stream_cache.get(agent_id)
        if stream is None:
            held = (k + 1 for k, g in enumerate(self._groups) if g.holds(agent_id, role))
            stream = self._stream_cache[agent_id] = next(held, 0)
        return stream

    def size_estimate(self, duration_s: float) -> tuple[int, str]:
        """(bytes, one line) of the trajectory a run of `duration_s` writes with every agent
        alive: agents x their samples x record bytes, before any compression (the line adds
        zstd's typical ratio for a flying swarm, measured by bench/recording.py)."""
        ticks = self.sim.world.ticks_for_until(duration_s)
        agents = self.sim.physical_agents
        counts = np.bincount([self._stream_of(a.id, a.role) for a in agents], minlength=1)
        samples = sum(int(c) * (ticks // k + 1) for c, k in zip(counts, self.stream_every))
        size = samples * self._stored.itemsize
        text = (
            f"trajectory: ~{size / 1e6:,.1f} MB {'before zstd' if self._zstd else 'uncompressed'}"
            f" ({len(agents):,} agents, {samples:,} records x {self._stored.itemsize} bytes)"
        )
        if self._zstd:
            ratio = ZSTD_RATIO[self._precision]
            text += f"; zstd: ~{size * ratio / 1e6:,.1f} MB flying boids, hover far less"
        return size, text

    def disk_estimate(self, duration_s: float) -> int:
        """Bytes the trajectory of a run of `duration_s` is expected to take on disk: the
        `size_estimate` bytes, times zstd's typical ratio for a flying swarm when compressed."""
        size = self.size_estimate(duration_s)[0]
        return round(size * ZSTD_RATIO[self._precision]) if self._zstd else size

    # -- sampling -------------------------------------------------------------------------
    def post_tick(self, world: World) -> None:
        tick = world.tick
        if tick % self.traj_every == 0:
            self._write_trajectory(tick)
        if tick % self.ts_every == 0:
            self._write_sample(tick)

    def _tracked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        key = (len(self.sim.agents), len(self.sim.deaths))
        if key != self._cache_key:
            live = [a for a in self.sim.physical_agents if a.alive]
            self._ids = np.array([a.id for a in live], dtype=np.int64)
            self._slots = np.array([a.slot for a in live], dtype=np.intp)
            self._streams = np.array([self._stream_of(a.id, a.role) for a in live], dtype=np.intp)
            self._cache_key = key
        return self._ids, self._slots, self._streams

    def _write_trajectory(self, tick: int) -> None:
        """One sample: stream by stream (the agents of no group, then each group due at `tick`),
        each in agent order."""
        ids, slots, streams = self._tracked()
        st = self.sim.world.state
        for stream, every in enumerate(self.stream_every):
            if tick % every:
                continue
            pick = slots if len(self.stream_every) == 1 else slots[streams == stream]
            rec = np.empty(len(pick), dtype=TRAJECTORY_DTYPE)
            rec["tick"] = tick
            rec["agent_id"] = ids if len(self.stream_every) == 1 else ids[streams == stream]
            rec["position"] = st.position[pick]
            rec["orientation"] = st.orientation[pick]
            rec["velocity"] = st.linear_velocity[pick]
            self._traj.write(rec, stream)

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
    from skyswarm.core.limits import loads_json
    from skyswarm.core.schema import ConfigError

    path = Path(results_dir) / "trajectory.json"
    try:
        header = loads_json(path.read_text(encoding="utf-8"), str(path))
    except (FileNotFoundError, NotADirectoryError):  # a file given as the folder: the same
        raise ConfigError(
            str(results_dir),
            "(results)",
            str(results_dir),
            "a results directory of `skyswarm run` (no trajectory.json)",
        ) from None
    except ConfigError:  # nested too deep: that one line, not "cut short"
        raise
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
    stored, header = _stored_format(Path(results_dir))
    raw = path.read_bytes()
    if header.get("compression") == "zstd" and header.get("codec") == CODEC:
        every = header.get("stream_every_ticks") or [header["sample_every_ticks"]]
        samples = decode(raw, stored, tuple(k * float(header["tick_s"]) for k in every))
        del raw
    else:
        if header.get("compression") == "zstd":
            raw = decode_v1(raw, stored.itemsize)
        n = len(raw) // stored.itemsize
        samples = [np.frombuffer(raw[: n * stored.itemsize], dtype=stored)]
        if stored == TRAJECTORY_DTYPE:
            return samples[0]
    out = np.empty(sum(len(s) for s in samples), dtype=TRAJECTORY_DTYPE)
    at = 0
    for s in samples:  # sample by sample into one array: no stored-dtype copy of the whole run
        out[at : at + len(s)] = dequantise(s, TRAJECTORY_DTYPE) if header.get("quantum") else s
        at += len(s)
    return out


def _stored_format(results_dir: Path) -> tuple[np.dtype, dict[str, Any]]:
    """The stored record dtype and the header of trajectory.json (float64 records, no header,
    when it is missing or names none: runs written before they existed)."""
    from skyswarm.core.limits import loads_json
    from skyswarm.core.schema import ConfigError

    path = results_dir / "trajectory.json"
    try:
        header = loads_json(path.read_text(encoding="utf-8"), str(path))
        dtype = np.dtype([(n, s, tuple(shape)) for n, s, shape in header["dtype"]])
    except ConfigError:  # nested too deep: one line, never records read in a guessed format
        raise
    except (OSError, ValueError, KeyError, TypeError):
        return TRAJECTORY_DTYPE, {}
    return dtype, header
