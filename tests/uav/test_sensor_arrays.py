"""A sensor's `record_every`: the lidar's scans of a run written to the results directory's array
log and read back by `skyswarm.load_arrays` equal to what the sensor held (the round trip)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from skyswarm import load_arrays
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "obstacle_field.toml"
MISSION = 'mission.type="skyswarm.missions.obstacle_field:ObstacleField"'


def test_every_fourth_lidar_scan_is_written_and_read_back_exactly(tmp_path: Path) -> None:
    # The obstacle field's 32-beam lidar at 20 Hz (every 20 ticks) for 1 s, record_every = 4:
    # the scans of ticks 80, 160, ..., 400 (5 records), the last equal to the sensor's arrays
    # at the end of the run (float32 ranges, NaN for no return), the agent ids and the beams.
    overrides = [MISSION, "simulation.duration_s=1.0", "uav.sensors.lidar.record_every=4"]
    sim = Simulator.from_scenario(load_scenario(CONFIG, overrides), tmp_path / "run")
    try:
        sim.run()
        lidar = sim.mission.swarm.sensors.sensor("lidar")
        got = load_arrays(tmp_path / "run", "lidar")
    finally:
        sim.finish()
        sim.close()
    assert got["tick"].tolist() == [80, 160, 240, 320, 400]
    assert np.allclose(got["time_s"], np.array([80, 160, 240, 320, 400]) * 0.0025)
    assert got["ranges"].shape == (5, 6, 32) and got["ranges"].dtype == np.float32
    assert np.array_equal(got["ranges"][-1], lidar.ranges.astype(np.float32), equal_nan=True)
    assert np.array_equal(got["hit"][-1], lidar.hit)
    assert np.allclose(got["origins"][-1], lidar.origins, atol=1e-5)
    world_dirs = got["rotation"][-1] @ got["beams_body"].T  # (N, 3, M)
    assert np.allclose(np.swapaxes(world_dirs, 1, 2), lidar.directions, atol=1e-6)
    assert got["ids"].tolist() == [1, 2, 3, 4, 5, 6]
    assert np.isfinite(got["ranges"]).any() and not np.array_equal(
        got["ranges"][0], got["ranges"][-1]
    )


def test_without_record_every_no_array_log_is_written(tmp_path: Path) -> None:
    sim = Simulator.from_scenario(
        load_scenario(CONFIG, [MISSION, "simulation.duration_s=0.2"]), tmp_path / "run"
    )
    try:
        sim.run()
    finally:
        sim.finish()
        sim.close()
    assert not (tmp_path / "run" / "arrays").exists()
