"""Recording per agent group (issue 31): `[[results.groups]]` agents sampled at their own lower
rate, read back, replayed and exported like any run; bad rates refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
GROUPS = "results.groups=[{trajectory_hz=5.0, id_range=[5, 12]}, {trajectory_hz=10.0, ids=[1]}]"
PACKED = ('results.trajectory_precision="float32"', 'results.trajectory_compression="zstd"')


def _run(out: Path, *over: str) -> Simulator:
    sc = load_scenario(CONFIGS / "boids.toml", ["agents.count=12", *over])
    sim = Simulator.from_scenario(sc, results_dir=out)
    sim.run(until_s=2.0)
    sim.finish()
    return sim


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("groups")
    _run(tmp / "all", *PACKED)
    sim = _run(tmp / "grouped", GROUPS, *PACKED)
    assert sim.recorder is not None
    return {"all": tmp / "all", "grouped": tmp / "grouped"}


def test_each_group_is_sampled_at_its_rate_with_the_same_records(runs: dict) -> None:
    full, got = read_trajectory(runs["all"]), read_trajectory(runs["grouped"])
    counts = np.bincount(got["agent_id"], minlength=13)[1:]
    # 2 s: 41 samples at 20 Hz (agents 2-4), 21 at 10 Hz (agent 1), 11 at 5 Hz (agents 5-12)
    assert counts.tolist() == [21, 41, 41, 41] + [11] * 8
    assert (got["tick"][got["agent_id"] == 7] % 80 == 0).all()  # 0.2 s = 80 ticks of 2.5 ms
    key = {(int(t), int(a)): i for i, (t, a) in enumerate(zip(full["tick"], full["agent_id"]))}
    same = full[[key[(int(t), int(a))] for t, a in zip(got["tick"], got["agent_id"])]]
    assert same.tobytes() == got.tobytes()  # a subset of the full-rate run's records, exactly


def test_replay_holds_a_group_agents_last_sample(runs: dict) -> None:
    from skyswarm.gui.replay import ReplaySource

    src = ReplaySource(runs["grouped"])
    assert src.present.shape == (41, 12) and src.present.all()  # nobody drawn dead
    rec = read_trajectory(runs["grouped"])
    of7 = rec[rec["agent_id"] == 7]
    col = int(np.flatnonzero(src.ids == 7)[0])
    for k, tick in ((1, 0), (3, 0), (4, 80), (7, 80)):  # frames every 20 ticks, agent 7 every 80
        want = of7["position"][of7["tick"] == tick][0]
        np.testing.assert_array_equal(src.positions[k, col], want)


def test_export_writes_every_record_of_a_grouped_run(runs: dict, tmp_path: Path) -> None:
    from skyswarm.app.cli import main

    assert main(["export", str(runs["grouped"]), "--csv", str(tmp_path / "t.csv")]) == 0
    with open(tmp_path / "t.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 21 + 3 * 41 + 8 * 11
    assert sum(r["agent_id"] == "7" for r in rows) == 11


def test_the_size_estimate_counts_each_group_at_its_rate(tmp_path: Path) -> None:
    sc = load_scenario(CONFIGS / "boids.toml", ["agents.count=12", GROUPS])
    sim = Simulator.from_scenario(sc, results_dir=tmp_path / "est")
    size, text = sim.recorder.size_estimate(2.0)
    sim.run(until_s=2.0)
    sim.finish()
    assert size == (tmp_path / "est" / "trajectory.bin").stat().st_size == (21 + 123 + 88) * 96
    assert "232 records x 96 bytes" in text


@pytest.mark.parametrize(
    ("group", "key", "expected"),
    [
        ("{trajectory_hz=40.0, ids=[1]}", "groups[0].trajectory_hz", "divided by a whole"),
        ("{trajectory_hz=8.0, ids=[1]}", "groups[0].trajectory_hz", "divided by a whole"),
        ("{trajectory_hz=3.0, ids=[1]}", "groups[0].trajectory_hz", "whole number"),
        ("{trajectory_hz=5.0}", "groups[0]", "ids, id_range or role"),
        ("{trajectory_hz=5.0, id_range=[9, 3]}", "groups[0].id_range", "[first, last]"),
    ],
)
def test_a_bad_group_is_one_line_naming_its_key(group: str, key: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario(CONFIGS / "boids.toml", [f"results.groups=[{group}]"])
    text = str(err.value)
    assert f"results.{key}" in text and expected in text and "\n" not in text, text


def test_quantised_needs_zstd() -> None:
    with pytest.raises(ConfigError, match="trajectory_precision.*quantised"):
        load_scenario(CONFIGS / "boids.toml", ['results.trajectory_precision="quantised"'])


def test_load_results_has_each_agents_own_rows(runs: dict) -> None:
    pytest.importorskip("pandas")
    from skyswarm import load_results

    traj = load_results(runs["grouped"]).trajectory
    assert len(traj) == 21 + 3 * 41 + 8 * 11
    times = traj[traj["agent_id"] == 7]["time_s"].to_numpy()
    np.testing.assert_allclose(times, 0.2 * np.arange(11))  # 5 Hz: every 0.2 s


def test_replay_draws_a_group_agent_dead_once_a_due_sample_is_missing(tmp_path: Path) -> None:
    """Agent 2 (every 80 ticks) last recorded at tick 160: alive up to tick 220, dead from
    240, when its sample was due; agent 1 (every 20 ticks) recorded throughout."""
    import json

    from skyswarm.core.recorder import TRAJECTORY_DTYPE
    from skyswarm.gui.replay import ReplaySource

    ticks1, ticks2 = np.arange(0, 401, 20), np.array([0, 80, 160])
    rec = np.zeros(len(ticks1) + len(ticks2), dtype=TRAJECTORY_DTYPE)
    rec["tick"] = np.r_[ticks1, ticks2]
    rec["agent_id"] = np.r_[np.ones(len(ticks1)), np.full(3, 2)]
    rec["orientation"] = [0.0, 0.0, 0.0, 1.0]
    rec["position"][:, 0] = rec["tick"]
    rec = rec[np.argsort(rec["tick"], kind="stable")]
    (tmp_path / "trajectory.bin").write_bytes(rec.tobytes())
    agents = [{"id": 1, "role": "uav", "name": "a", "every_ticks": 20}]
    agents.append({"id": 2, "role": "uav", "name": "b", "every_ticks": 80})
    header = {"tick_s": 0.0025, "sample_every_ticks": 20, "agents": agents}
    header["dtype"] = [[n, TRAJECTORY_DTYPE[n].base.str, list(TRAJECTORY_DTYPE[n].shape)]
                       for n in TRAJECTORY_DTYPE.names]  # fmt: skip
    (tmp_path / "trajectory.json").write_text(json.dumps(header), encoding="utf-8")
    src = ReplaySource(tmp_path)
    assert src.present[:, 0].all()
    alive2 = src.present[:, 1]
    assert alive2.tolist() == [t < 240 for t in ticks1]
    assert src.positions[11, 1, 0] == 160.0  # tick 220: its sample of tick 160, held
