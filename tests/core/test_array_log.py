"""core/array_log.py: arrays appended record by record and read back exactly, a half-written
tail ignored, and a missing log named in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.array_log import FOLDER, ArrayLog, array_log_names, read_array_log
from skyswarm.core.schema import ConfigError


def test_records_round_trip_in_their_dtypes_with_the_constants(tmp_path: Path) -> None:
    # Three records of a float32 (2, 3) with a NaN and an inf, an int64 (2, 3) holding the
    # int64 minimum (rays.MISS) and a uint8 (2, 2, 3) image: read back bit for bit.
    rng = np.random.default_rng(0)
    fields = {"r": np.zeros((2, 3), np.float32), "h": np.zeros((2, 3), np.int64),
              "img": np.zeros((2, 2, 3), np.uint8)}  # fmt: skip
    log = ArrayLog(tmp_path / FOLDER, "scan", fields, constants={"beams": np.eye(3)})
    written = []
    for k in range(3):
        rec = {
            "r": rng.standard_normal((2, 3)).astype(np.float32),
            "h": rng.integers(-5, 5, (2, 3)),
            "img": rng.integers(0, 256, (2, 2, 3), np.uint8),
        }
        rec["r"][0, 0], rec["r"][1, 2], rec["h"][1, 1] = np.nan, np.inf, np.iinfo(np.int64).min
        log.append(40 * (k + 1), 0.1 * (k + 1), rec)
        written.append(rec)
    got = read_array_log(tmp_path, "scan")
    assert got["tick"].tolist() == [40, 80, 120] and got["time_s"] == pytest.approx([0.1, 0.2, 0.3])
    for name in fields:
        want = np.stack([w[name] for w in written])
        assert got[name].dtype == want.dtype and got[name].shape == (3, *fields[name].shape)
        assert np.array_equal(got[name], want, equal_nan=name == "r")
    assert np.array_equal(got["beams"], np.eye(3)) and array_log_names(tmp_path) == ["scan"]


def test_a_half_written_record_is_ignored_and_a_missing_log_is_named(tmp_path: Path) -> None:
    log = ArrayLog(tmp_path / FOLDER, "scan", {"r": np.zeros(4, np.float32)})
    log.append(1, 0.0025, {"r": np.arange(4, dtype=np.float32)})
    log.append(2, 0.005, {"r": np.ones(4, dtype=np.float32)})
    with open(log.path, "r+b") as f:  # a run killed in the middle of the second record
        f.truncate(log.dtype.itemsize + 5)
    got = read_array_log(tmp_path, "scan")
    assert got["tick"].tolist() == [1] and got["r"].tolist() == [[0.0, 1.0, 2.0, 3.0]]
    with pytest.raises(ConfigError, match=r"arrays = 'camera': expected .*has: scan"):
        read_array_log(tmp_path, "camera")
