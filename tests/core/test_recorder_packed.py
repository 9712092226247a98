"""Recording for big swarms (issue 31): float32 trajectories and zstd streams, read back by
`read_trajectory` as the same float64 records (core/recorder.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.recorder import TRAJECTORY_DTYPE, read_trajectory
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
FLOATS = ("position", "orientation", "velocity")


def record(tmp: Path, name: str, *over: str) -> tuple[np.ndarray, Simulator]:
    sc = load_scenario(CONFIGS / "boids.toml", ["agents.count=12", *over])
    sim = Simulator.from_scenario(sc, results_dir=tmp / name)
    sim.run(until_s=2.0)
    sim.finish()
    return read_trajectory(tmp / name), sim


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    tmp = tmp_path_factory.mktemp("packed")
    out = {}
    for name, over in {
        "plain": (),
        "zstd": ('results.trajectory_compression="zstd"',),
        "f32": ('results.trajectory_precision="float32"',),
        "f32zstd": (
            'results.trajectory_precision="float32"',
            'results.trajectory_compression="zstd"',
        ),
        "quant": (
            'results.trajectory_precision="quantised"',
            'results.trajectory_compression="zstd"',
        ),
    }.items():
        out[name] = record(tmp, name, *over)[0]
        out[f"{name}_dir"] = tmp / name
    return out


def test_zstd_is_lossless_and_smaller(runs: dict) -> None:
    assert runs["zstd"].dtype == TRAJECTORY_DTYPE and len(runs["plain"]) == 12 * 41
    assert runs["zstd"].tobytes() == runs["plain"].tobytes()  # byte-identical round trip
    plain = (runs["plain_dir"] / "trajectory.bin").stat().st_size
    assert plain == len(runs["plain"]) * 96
    zstd = (runs["zstd_dir"] / "trajectory.bin").stat().st_size
    assert zstd < 0.8 * plain, zstd / plain  # 12 UAVs: small frames; 0.62 at 1,000 boids


def test_float32_is_within_the_documented_bound(runs: dict) -> None:
    for name in ("f32", "f32zstd"):
        got = runs[name]
        assert got.dtype == TRAJECTORY_DTYPE  # readers see float64 records as before
        np.testing.assert_array_equal(got["tick"], runs["plain"]["tick"])
        np.testing.assert_array_equal(got["agent_id"], runs["plain"]["agent_id"])
        for f in FLOATS:  # rounded to the nearest float32: |error| <= 2^-24 |value|
            exact = runs["plain"][f]
            err = np.abs(got[f] - exact)
            assert (err <= 2.0**-24 * np.abs(exact)).all()
            assert err.max() > 0.0  # really stored as float32
    assert runs["f32"].tobytes() == runs["f32zstd"].tobytes()
    size = (runs["f32_dir"] / "trajectory.bin").stat().st_size
    assert size == len(runs["f32"]) * (8 + 8 + 4 * 10)


def test_quantised_is_within_half_a_step_and_smallest(runs: dict) -> None:
    from skyswarm.core.trajectory_codec import QUANTUM

    got = runs["quant"]
    assert got.dtype == TRAJECTORY_DTYPE
    np.testing.assert_array_equal(got["agent_id"], runs["plain"]["agent_id"])
    for f, q in QUANTUM.items():  # the nearest multiple of the step: |error| <= step / 2
        err = np.abs(got[f] - runs["plain"][f])
        assert err.max() <= q / 2 and err.max() > q / 4, (f, err.max() / q)
    sizes = {n: (runs[f"{n}_dir"] / "trajectory.bin").stat().st_size for n in ("f32zstd", "quant")}
    assert sizes["quant"] < 0.6 * sizes["f32zstd"], sizes


def test_a_cut_zstd_file_reads_up_to_its_last_whole_block(runs: dict, tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    cut.mkdir()
    for name in ("trajectory.json",):
        (cut / name).write_bytes((runs["zstd_dir"] / name).read_bytes())
    data = (runs["zstd_dir"] / "trajectory.bin").read_bytes()
    (cut / "trajectory.bin").write_bytes(data[: len(data) * 2 // 3])  # a killed run's file
    got = read_trajectory(cut)
    assert 0 < len(got) < len(runs["plain"])
    assert got.tobytes() == runs["plain"][: len(got)].tobytes()  # a prefix, exactly


def test_the_size_estimate_is_the_uncompressed_file(tmp_path: Path) -> None:
    sc = load_scenario(CONFIGS / "boids.toml", ["agents.count=12"])
    sim = Simulator.from_scenario(sc, results_dir=tmp_path / "est")
    size, text = sim.recorder.size_estimate(2.0)
    sim.run(until_s=2.0)
    sim.finish()
    assert size == (tmp_path / "est" / "trajectory.bin").stat().st_size == 12 * 41 * 96
    assert text.startswith("trajectory: ~0.0 MB uncompressed (12 agents, 492 records x 96 bytes")


def test_parquet_refuses_the_binary_packing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="trajectory_precision"):
        load_scenario(
            CONFIGS / "boids.toml",
            ['results.format="parquet"', 'results.trajectory_compression="zstd"'],
        )
