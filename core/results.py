"""A run's results directory as pandas DataFrames: `load_results(dir)` (the facade's
`skyswarm.load_results`).

pandas (and pyarrow, for Parquet trajectories) is the optional `skyswarm[data]` extra; without
it `load_results` raises `MissingExtraError` (an ImportError) in one line naming the extra.
The files are described in core/recorder.py; binary and Parquet trajectories load to identical
frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.array_log import array_log_names, read_array_log
from skyswarm.core.limits import loads_json
from skyswarm.core.parquet import require
from skyswarm.core.recorder import read_header, read_trajectory

if TYPE_CHECKING:
    import pandas as pd

# sensors.csv (uav/estimation.py) estimate columns -> trajectory column names, with units
ESTIMATE_COLUMNS = {
    "est_x": "est_x_m",
    "est_y": "est_y_m",
    "est_z": "est_z_m",
    "est_vx": "est_vx_m_s",
    "est_vy": "est_vy_m_s",
    "est_vz": "est_vz_m_s",
    "est_roll": "est_roll_rad",
    "est_pitch": "est_pitch_rad",
    "est_yaw": "est_yaw_rad",
}


EVENT_TYPES = {  # events.csv column -> dtype ("str": text, "" when empty)
    "time_s": "float64",
    "tick": "int64",
    "kind": "str",
    "agent_id": "Int64",
    "cause": "str",
    "x": "float64",
    "y": "float64",
    "z": "float64",
    "detail": "str",
}


@dataclass(frozen=True)
class Results:
    """One run's results, read by `load_results`. Every frame is a pandas DataFrame.

    - `trajectory`: one row per live physical agent and sample (`[results] trajectory_hz`):
      `time_s`, `tick`, `agent_id`, `x_m`, `y_m`, `z_m` (world ENU), `qx`, `qy`, `qz`, `qw`
      (body-to-world quaternion), `vx_m_s`, `vy_m_s`, `vz_m_s`; when the run recorded a state
      estimate (`[uav.sensors]` on, sensors.csv) also `est_x_m` ... `est_yaw_rad` (the
      estimate's position, velocity and roll/pitch/yaw), NaN on the rows between estimate
      samples (`[uav.sensors] record_hz`) and for agents without one.
    - `timeseries`: timeseries.csv, one row per sample (`time_s`, `tick`, `alive`, the comms
      counters, the mission's `sample()` numbers).
    - `messages`: the comms counters in long form: `time_s`, `tick`, `channel`, `fate`
      (sent, delivered, lost_on_air, out_of_range ...), `count` (running total); empty without
      comms.
    - `events`: events.csv (`time_s`, `tick`, `kind`, `agent_id`, `cause`, `x`, `y`, `z`,
      `detail`); `deaths`: its rows of kind "death".
    - `summary`: summary.json as a dict, or None when the run did not finish (cut short).
    - `config`: the resolved scenario (config.toml) as a dict; `dir`: the directory.
    - `arrays`: the names of the run's array logs (a sensor's `record_every`: "lidar",
      "camera" ...), each read by `load_arrays(dir, name)`.

        results = load_results("results/hover_seed0")
        top = results.trajectory.groupby("agent_id")["z_m"].max()
        print(results.summary["outcome"], top.to_dict())
    """

    dir: Path
    trajectory: pd.DataFrame
    timeseries: pd.DataFrame
    messages: pd.DataFrame
    events: pd.DataFrame
    deaths: pd.DataFrame
    summary: dict[str, Any] | None
    config: dict[str, Any]
    arrays: tuple[str, ...] = ()


def load_results(results_dir: str | Path) -> Results:
    """Read a results directory of `skyswarm run` / `run_scenario(..., results_dir=...)` (binary
    or Parquet trajectory) into DataFrames; see `Results` for the columns.

        from skyswarm import load_results, run_scenario

        run_scenario("hover", results_dir="out", overrides=["simulation.duration_s=2"])
        results = load_results("out")
        print(results.trajectory[["time_s", "agent_id", "z_m"]].tail())

    A directory that is not a run is a `ConfigError` (one line); a missing pandas is a
    `MissingExtraError` naming `skyswarm[data]`.
    """
    pd = require("pandas")
    d = Path(results_dir)
    header = read_header(d)
    timeseries = _csv(pd, d / "timeseries.csv", ("time_s", "tick", "alive"))
    events = _csv(pd, d / "events.csv", _event_columns(), EVENT_TYPES)
    summary_path = d / "summary.json"
    summary = (
        loads_json(summary_path.read_text(encoding="utf-8"), str(summary_path))
        if summary_path.is_file()
        else None
    )
    config_path = d / "config.toml"
    from skyswarm.core.config import read_toml

    return Results(
        dir=d,
        trajectory=_trajectory(pd, d, float(header["tick_s"])),
        timeseries=timeseries,
        messages=_messages(pd, timeseries),
        events=events,
        deaths=events[events["kind"] == "death"].reset_index(drop=True),
        summary=summary,
        config=read_toml(config_path) if config_path.is_file() else {},
        arrays=tuple(array_log_names(d)),
    )


def load_arrays(results_dir: str | Path, name: str) -> dict[str, np.ndarray]:
    """The array log `name` of a results directory (a sensor with `record_every` > 0 writes
    one named after it), as numpy arrays: "tick" (K,) and "time_s" (K,) s of the K records,
    each recorded field (K, ...) and the log's constants ("ids" (N,) the agent ids, ...).
    Needs no pandas. The lidar's fields: "ranges" (K, N, M) m float32 (NaN: no return),
    "hit" (K, N, M), "origins" (K, N, 3) m, "rotation" (K, N, 3, 3), constant "beams_body"
    (M, 3); the camera's: "depth" (K, N, H, W) m, "rgb" (K, N, H, W, 3), "segmentation"
    (K, N, H, W), constant "K" (3, 3).

        scans = load_arrays("out", "lidar")
        world_dirs = scans["rotation"] @ scans["beams_body"].T  # (K, N, 3, M)

    A name the run did not record is a `ConfigError` listing the logs it has.
    """
    return read_array_log(results_dir, name)


def _event_columns() -> tuple[str, ...]:
    from skyswarm.core.recorder import EVENT_COLUMNS

    return EVENT_COLUMNS


def _csv(
    pd: Any, path: Path, columns: tuple[str, ...], types: dict[str, str] | None = None
) -> pd.DataFrame:
    """A CSV of the run; a torn last line (a run cut short) is dropped; no file: no rows.
    `types`: column dtypes (an empty cell of a numeric column is NaN / <NA>, of a text one "")."""
    if not path.is_file():
        return pd.DataFrame(columns=list(columns))
    if types is None:
        return pd.read_csv(path, on_bad_lines="skip")
    numeric = [c for c, t in types.items() if t != "str"]
    return pd.read_csv(
        path,
        on_bad_lines="skip",
        keep_default_na=False,
        na_values={c: [""] for c in numeric},
        dtype={c: (object if t == "str" else t) for c, t in types.items()},
    )


def _trajectory(pd: Any, d: Path, tick_s: float) -> pd.DataFrame:
    rec = read_trajectory(d)
    frame = pd.DataFrame(
        {
            "time_s": rec["tick"] * tick_s,
            "tick": rec["tick"],
            "agent_id": rec["agent_id"],
            **{f"{a}_m": rec["position"][:, i] for i, a in enumerate("xyz")},
            **{f"q{a}": rec["orientation"][:, i] for i, a in enumerate("xyzw")},
            **{f"v{a}_m_s": rec["velocity"][:, i] for i, a in enumerate("xyz")},
        }
    )
    sensors = d / "sensors.csv"
    if not sensors.is_file():
        return frame
    est = pd.read_csv(sensors, on_bad_lines="skip")
    if not len(est):
        return frame
    est = est[["time_s", "id", *ESTIMATE_COLUMNS]].rename(
        columns={"id": "agent_id", **ESTIMATE_COLUMNS}
    )
    est["tick"] = (est.pop("time_s") / tick_s).round().astype("int64")
    est["agent_id"] = est["agent_id"].astype("int64")
    return frame.merge(est, on=["tick", "agent_id"], how="left", validate="one_to_one")


def _messages(pd: Any, timeseries: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in timeseries.columns if c.startswith("comms.") and c.count(".") == 2]
    if not cols:
        return pd.DataFrame(
            {
                "time_s": pd.Series(dtype=float),
                "tick": pd.Series(dtype="int64"),
                "channel": pd.Series(dtype=object),
                "fate": pd.Series(dtype=object),
                "count": pd.Series(dtype="int64"),
            }
        )
    long = timeseries.melt(
        id_vars=["time_s", "tick"], value_vars=cols, var_name="key", value_name="count"
    )
    parts = long.pop("key").str.split(".", expand=True)
    long.insert(2, "channel", parts[1])
    long.insert(3, "fate", parts[2])
    return long
