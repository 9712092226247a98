"""The trajectory as Parquet (`[results] format = "parquet"`): written and read back as the
records of `core.recorder.TRAJECTORY_DTYPE`, so every reader of a run (replay, plot, export,
`load_results`) sees the same arrays as from trajectory.bin.

Columns (flat, one row per agent and sample): `tick`, `agent_id` (int64), `x`, `y`, `z` (m,
world ENU), `qx`, `qy`, `qz`, `qw` (body-to-world quaternion), `vx`, `vy`, `vz` (m/s, world).
Rows are buffered and written as row groups of `ROW_GROUP_ROWS`; the file is complete once the
run's recorder is closed (a killed run leaves the row groups written before it, without a
footer: use the binary format where a run may be cut short).

pyarrow is the optional `skyswarm[data]` extra; `require("pyarrow")` turns its absence into one
line naming the extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

FILE = "trajectory.parquet"
ROW_GROUP_ROWS = 1 << 16  # rows buffered before a row group is written
COLUMNS = {  # parquet column -> (record field, component or None)
    "tick": ("tick", None),
    "agent_id": ("agent_id", None),
    "x": ("position", 0),
    "y": ("position", 1),
    "z": ("position", 2),
    "qx": ("orientation", 0),
    "qy": ("orientation", 1),
    "qz": ("orientation", 2),
    "qw": ("orientation", 3),
    "vx": ("velocity", 0),
    "vy": ("velocity", 1),
    "vz": ("velocity", 2),
}


class MissingExtraError(ImportError):
    """An optional dependency of the `skyswarm[data]` extra is not installed."""


def require(module: str) -> Any:
    """Import `module` (one of "pandas", "pyarrow", "pyarrow.parquet") or raise
    `MissingExtraError` in one line naming the extra that brings it."""
    try:
        if module == "pandas":
            import pandas as found
        elif module == "pyarrow":
            import pyarrow as found
        elif module == "pyarrow.parquet":
            import pyarrow.parquet as found
        else:
            raise ValueError(f"{module!r} is not a module of the data extra")
    except ImportError:
        top = module.split(".")[0]
        raise MissingExtraError(
            f"{top} is not installed: results as DataFrames and Parquet need the data extra "
            "(pip install 'skyswarm[data]')"
        ) from None
    return found


class ParquetTrajectory:
    """Appends trajectory records ((K,) of TRAJECTORY_DTYPE) to trajectory.parquet."""

    def __init__(self, path: Path) -> None:
        pa = require("pyarrow")
        pq = require("pyarrow.parquet")
        self._pa = pa
        fields = [
            (n, pa.int64() if comp is None else pa.float64()) for n, (_, comp) in COLUMNS.items()
        ]
        self._schema = pa.schema(fields)
        self._writer = pq.ParquetWriter(str(path), self._schema)
        self._buffer: list[np.ndarray] = []
        self._rows = 0

    def write(self, records: np.ndarray, stream: int = 0) -> None:
        """Append `records`; `stream` (the recorder's agent group) is not stored: each row
        holds its own tick."""
        self._buffer.append(records.copy())
        self._rows += len(records)
        if self._rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self._rows:
            return
        rec = np.concatenate(self._buffer)
        arrays = [
            self._pa.array(
                rec[field] if comp is None else np.ascontiguousarray(rec[field][:, comp])
            )
            for field, comp in COLUMNS.values()
        ]
        self._writer.write_table(self._pa.Table.from_arrays(arrays, schema=self._schema))
        self._buffer, self._rows = [], 0

    def close(self) -> None:
        self.flush()
        self._writer.close()


def read_parquet_trajectory(path: Path, dtype: np.dtype) -> np.ndarray:
    """The records of a trajectory.parquet as an array of `dtype` (TRAJECTORY_DTYPE)."""
    pq = require("pyarrow.parquet")
    table = pq.read_table(str(path))
    out = np.empty(table.num_rows, dtype=dtype)
    for name, (field, comp) in COLUMNS.items():
        column = table.column(name).to_numpy()
        if comp is None:
            out[field] = column
        else:
            out[field][:, comp] = column
    return out
