"""Results as DataFrames (`skyswarm.load_results`, core/results.py) and the Parquet trajectory
(`[results] format = "parquet"`, core/parquet.py): the same run written both ways loads to
identical frames, and a missing extra is one line naming `skyswarm[data]`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import skyswarm
from skyswarm.core.config import load_scenario
from skyswarm.core.parquet import MissingExtraError, require
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.resources import shipped
from skyswarm.core.schema import ConfigError


@pytest.fixture(autouse=True, scope="module")
def _data_extra() -> None:
    """The data extra (CI installs it with .[dev]): without pandas or pyarrow every test here
    skips. Imported by this module's first test, not at collection (~1.6 s in every worker)."""
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")


# hover_qrsim: 4 UAVs on QRSim's sensors (an estimate, sensors.csv at 10 Hz) with the radio on;
# agent 2 is killed at 0.5 s so that deaths and the trajectory's shrinking rows are exercised.
OVERRIDES = [
    "simulation.duration_s=1.0",
    'events=[{at_s=0.5, action="kill", target=2}]',
]


def _run(out: Path, fmt: str) -> None:
    skyswarm.run_scenario(
        "hover_qrsim", results_dir=out, overrides=[*OVERRIDES, f'results.format="{fmt}"']
    )


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("results")
    _run(tmp / "binary", "binary")
    _run(tmp / "parquet", "parquet")
    return tmp / "binary", tmp / "parquet"


def test_binary_and_parquet_runs_load_to_identical_dataframes(both) -> None:
    binary, parquet = both
    assert (binary / "trajectory.bin").is_file() and not (binary / "trajectory.parquet").exists()
    assert (parquet / "trajectory.parquet").is_file() and not (parquet / "trajectory.bin").exists()
    import pandas as pd

    a, b = skyswarm.load_results(binary), skyswarm.load_results(parquet)
    for name in ("trajectory", "timeseries", "messages", "events", "deaths"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    np.testing.assert_array_equal(read_trajectory(binary), read_trajectory(parquet))
    assert a.summary["outcome"] == b.summary["outcome"]


def test_the_trajectory_frame_has_every_sample_and_the_estimate_beside_the_truth(both) -> None:
    res = skyswarm.load_results(both[0])
    traj = res.trajectory
    # 20 Hz over 1 s: samples at ticks 0, 20, ..., 400 (21 of them); 4 UAVs until agent 2 dies
    # at tick 200 (the sample of that tick is taken after the death: 3 rows from it on).
    per_tick = traj.groupby("tick").size()
    assert len(per_tick) == 21 and per_tick.index[-1] == 400
    assert per_tick.loc[:180].eq(4).all() and per_tick.loc[200:].eq(3).all()
    assert traj["time_s"].iloc[-1] == 400 * 0.0025
    # sensors.csv at 10 Hz: every other trajectory sample has the estimate, close to the truth
    has = traj["est_x_m"].notna()
    assert 0 < has.sum() < len(traj)
    err = np.hypot(traj.loc[has, "est_x_m"] - traj.loc[has, "x_m"], 0)
    assert err.max() < 5.0  # GPS-grade: metres, not tens of metres
    assert res.deaths[["tick", "agent_id"]].values.tolist() == [[200, 2]]
    assert set(res.messages["channel"]) >= {"radio"} and "delivered" in set(res.messages["fate"])
    assert res.config["simulation"]["duration_s"] == 1.0


def test_a_run_without_sensors_has_no_estimate_columns(tmp_path: Path) -> None:
    skyswarm.run_scenario("hover", tmp_path, ["simulation.duration_s=0.1"])
    traj = skyswarm.load_results(tmp_path).trajectory
    assert not [c for c in traj.columns if c.startswith("est_")]
    assert len(traj) == 4 * 3  # hover's four UAVs at ticks 0, 20, 40


def test_a_missing_pandas_is_one_line_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    with pytest.raises(MissingExtraError) as err:
        skyswarm.load_results(tmp_path)
    text = str(err.value)
    assert "\n" not in text and "pip install 'skyswarm[data]'" in text and "pandas" in text
    assert isinstance(err.value, ImportError)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # imported by an earlier test
    with pytest.raises(MissingExtraError, match=r"^pyarrow is not installed"):
        require("pyarrow.parquet")


def test_parquet_output_without_pyarrow_is_refused_when_the_scenario_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a)
    )
    with pytest.raises(ConfigError) as err:
        load_scenario(shipped()["hover"], ['results.format="parquet"'])
    assert "results.format" in str(err.value) and "skyswarm[data]" in str(err.value)
    load_scenario(shipped()["hover"], ['results.format="binary"'])  # binary needs nothing


def test_an_unknown_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="results.format"):
        load_scenario(shipped()["hover"], ['results.format="hdf5"'])


def test_a_directory_that_is_not_a_run_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no trajectory.json"):
        skyswarm.load_results(tmp_path)


def test_a_file_given_as_the_results_folder_is_one_line(tmp_path: Path) -> None:
    # Before: NotADirectoryError "[Errno 20] Not a directory: '.../trajectory.json'".
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(ConfigError, match="expected a results directory of `skyswarm run`"):
        skyswarm.load_results(tmp_path / "summary.json")
