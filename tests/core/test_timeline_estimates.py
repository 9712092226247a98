"""core/timeline.py with sensors on: every 0.5 s a sample holds the swarm's state estimate (as
offsets from the truth) and GPS error, equal to what the live swarm had at that tick, and the
samples read in between hold the last; none without sensors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from skyswarm.core.config import load_scenario
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.simulator import Simulator
from skyswarm.core.timeline import read_timeline

ROOT = Path(__file__).resolve().parents[2]


def test_sensor_run_records_the_live_estimate_and_gps_error_at_each_sample(tmp_path: Path) -> None:
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover_qrsim.toml"), tmp_path)
    swarm = next(a.swarm for a in sim.agents.values() if getattr(a, "swarm", None) is not None)
    live: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    live[0] = (swarm.sensors.position.copy(), swarm.sensors.gps_error.copy())
    for _ in range(600):  # 1.5 s: estimate samples at ticks 0, 200, 400, 600
        sim.step()
        if sim.world.tick % 200 == 0:
            live[sim.world.tick] = (swarm.sensors.position.copy(), swarm.sensors.gps_error.copy())
    ids = [a.id for a in sim.agents.values()]
    sim.finish()
    sim.close()
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert [r["tick"] for r in rows if "estimates" in r] == [0, 200, 400, 600]
    samples = read_timeline(tmp_path)
    rec = read_trajectory(tmp_path)
    for s in samples:
        # Every sample holds the estimate of the last estimate sample at or before it (the
        # others are changes of the view at trajectory ticks between them).
        estimated = max(t for t in live if t <= s["tick"])
        block = s["estimates"]
        assert block["ids"].tolist() == ids  # the swarm's agents, in its index order
        truth = np.array([rec[(rec["tick"] == estimated) & (rec["agent_id"] == i)]["position"][0]
                          for i in ids])  # fmt: skip
        est, gps = live[estimated]
        # Offsets of a few tenths of a metre stored as float32: 2^-24 relative, well under
        # 1e-6 m; absolute positions (10 m up) would round to ~1e-6 m already.
        np.testing.assert_allclose(truth + block["estimate_offset"], est, rtol=0, atol=1e-6)
        np.testing.assert_allclose(block["gps_error"], gps, rtol=0, atol=1e-6)
        # Not the truth: QRSim's sensors put the estimate decimetres off (GPS + baro + bias).
        assert np.linalg.norm(block["estimate_offset"], axis=1).max() > 0.01


def test_no_sensors_records_no_estimates(tmp_path: Path) -> None:
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover.toml"), tmp_path)
    for _ in range(400):
        sim.step()
    sim.finish()
    sim.close()
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert rows and all("estimates" not in r for r in rows)  # ideal: estimate = truth
    assert all("estimates" not in s for s in read_timeline(tmp_path))
