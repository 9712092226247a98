"""The Parquet trajectory writer (core/parquet.py) across its row-group boundary: records
written in uneven batches that cross ROW_GROUP_ROWS come back bit for bit, in order, from
several row groups (the run-level round trip is tests/core/test_results.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skyswarm.core import parquet
from skyswarm.core.recorder import TRAJECTORY_DTYPE


@pytest.fixture(autouse=True, scope="module")
def pq():
    """pyarrow.parquet (the data extra; every test here skips without it), imported by this
    module's first test, not at collection."""
    return pytest.importorskip("pyarrow.parquet")


def records(rng: np.random.Generator, start: int, n: int) -> np.ndarray:
    rec = np.zeros(n, dtype=TRAJECTORY_DTYPE)
    rec["tick"] = start + np.arange(n) // 7  # 7 agents a tick
    rec["agent_id"] = np.arange(n) % 7 + 1
    for field in ("position", "orientation", "velocity"):
        rec[field] = rng.standard_normal(rec[field].shape) * 1e3  # every float64 bit in use
    return rec


def test_batches_across_row_groups_read_back_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pq
) -> None:
    monkeypatch.setattr(parquet, "ROW_GROUP_ROWS", 1000)  # small groups: several in the file
    rng = np.random.default_rng(7)
    sizes = [7, 999, 1001, 3, 2500, 1]  # below, at, across and far beyond a group
    batches, start = [], 0
    for size in sizes:
        batches.append(records(rng, start, size))
        start += size
    path = tmp_path / parquet.FILE
    writer = parquet.ParquetTrajectory(path)
    for batch in batches:
        writer.write(batch)
    writer.close()
    back = parquet.read_parquet_trajectory(path, TRAJECTORY_DTYPE)
    np.testing.assert_array_equal(back, np.concatenate(batches))
    assert back.dtype == TRAJECTORY_DTYPE and len(back) == sum(sizes)
    groups = pq.ParquetFile(path).metadata.num_row_groups
    assert groups >= 3, groups  # 4,511 rows flushed at >= 1,000: three or more groups


def test_an_empty_run_is_an_empty_trajectory(tmp_path: Path) -> None:
    path = tmp_path / parquet.FILE
    parquet.ParquetTrajectory(path).close()
    back = parquet.read_parquet_trajectory(path, TRAJECTORY_DTYPE)
    assert back.shape == (0,) and back.dtype == TRAJECTORY_DTYPE
