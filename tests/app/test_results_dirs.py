"""Results directories: `--out` must be new or empty (`--overwrite` empties one skyswarm wrote),
and the readers take a run cut at any point (torn last record, torn last CSV row)."""

from __future__ import annotations

import pytest

from skyswarm.app.cli import main
from skyswarm.app.exits import EXIT_TIME_LIMIT
from skyswarm.app.plot import read_timeseries
from skyswarm.core.recorder import TRAJECTORY_DTYPE, read_header, read_trajectory
from skyswarm.core.schema import ConfigError

RUN = ["run", "drop_test", "--quiet", "--duration", "0.2"]  # boxes still falling: time limit


def test_a_non_empty_out_needs_overwrite_which_empties_it(tmp_path, capsys):
    out = tmp_path / "run"  # a run skyswarm wrote (a folder it did not: tests/app/
    assert main([*RUN, "--out", str(out)]) == EXIT_TIME_LIMIT  # test_results_safety.py)
    (out / "coverage.npz").write_bytes(b"an old run's layer")
    assert main([*RUN, "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "coverage.npz").exists()  # refused: untouched
    assert main([*RUN, "--out", str(out), "--overwrite"]) == EXIT_TIME_LIMIT
    assert not (out / "coverage.npz").exists()  # the old layer never mixes with the new run
    # 0.2 s at 40 Hz (drop_test.toml) from t = 0: ticks 0, 10, ..., 80 -> 9 samples of 9 agents
    assert len(read_trajectory(out)) == 9 * 9


def test_readers_drop_a_torn_last_record_and_row(tmp_path):
    out = tmp_path / "run"
    assert main([*RUN, "--out", str(out)]) == EXIT_TIME_LIMIT
    whole = read_trajectory(out)
    traj = out / "trajectory.bin"
    traj.write_bytes(traj.read_bytes()[: -TRAJECTORY_DTYPE.itemsize // 2])  # half a record cut
    assert len(read_trajectory(out)) == len(whole) - 1
    ts = out / "timeseries.csv"
    text = ts.read_text()
    rows = len(text.splitlines()) - 1
    ts.write_text(text[: text.rindex(",")])  # the last row loses its last cell
    assert len(read_timeseries(out)["time_s"]) == rows - 1


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"agents": []}'])
def test_a_torn_or_empty_header_is_one_config_error(tmp_path, text):
    (tmp_path / "trajectory.json").write_text(text)
    with pytest.raises(ConfigError, match="a complete trajectory header"):
        read_header(tmp_path)
