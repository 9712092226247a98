"""core/timeline.py: the view samples a recorded run writes for replay (HUD, modes, overlays)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.core.timeline import Timeline, read_timeline

ROOT = Path(__file__).resolve().parents[2]


def test_samples_every_half_second_with_hud_modes_and_changed_overlays(tmp_path: Path) -> None:
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/flocking_coverage.toml"), tmp_path)
    for _ in range(2000):  # 5 s
        sim.step()
    live_hud, live_overlays = sim.mission.hud(), sim.mission.overlays()
    sim.finish()
    sim.close()
    samples = read_timeline(tmp_path)
    # Ticks 200, 400, ..., 2000: every 0.5 s at 2.5 ms, and the last one is the final state.
    assert [s["tick"] for s in samples] == list(range(200, 2001, 200))
    last = samples[-1]
    assert last["hud"] == live_hud and last["hud"][0].startswith("coverage")
    assert set(last["modes"]) == {str(a.id) for a in sim.agents.values()}
    # The flock's acting leader, as the live view colours it (one leader, a UAV of the flock).
    assert last["leaders"] == sim.mission.role_members("leader") and len(last["leaders"]) == 1
    assert len(last["overlays"]) == len(live_overlays) == 2  # area outline, covered cells
    for got, want in zip(last["overlays"], live_overlays):
        key = "segments" if "segments" in want else "corners"
        assert got["kind"] == key
        assert np.array_equal(got["data"], np.asarray(want[key], np.float32))
        assert got["color"] == pytest.approx(want["color"])
    # An overlay list equal to the previous sample's is not stored again (null in the index).
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert rows[0]["overlays"] is not None
    unchanged = [r["overlays"] is None for r in rows[1:]]
    assert any(unchanged)  # the outline and the cells seen do not change every 0.5 s
    stored = sum(len(r["overlays"]) for r in rows if r["overlays"] is not None)
    assert stored < 2 * len(rows)


def test_no_results_dir_no_timeline_and_a_period_must_be_whole_ticks(tmp_path: Path) -> None:
    assert read_timeline(tmp_path) == []
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover.toml"))
    try:
        with pytest.raises(ValueError, match="whole number of ticks"):
            Timeline(tmp_path, sim, period_s=0.001)  # 0.4 tick
    finally:
        sim.close()


def test_a_truncated_last_line_keeps_the_whole_samples(tmp_path: Path) -> None:
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover.toml"), tmp_path)
    for _ in range(400):
        sim.step()
    sim.close()
    with (tmp_path / "timeline.jsonl").open("a") as f:
        f.write('{"tick": 600, "hud"')  # a run killed mid-write
    samples = read_timeline(tmp_path)
    assert [s["tick"] for s in samples] == [200, 400]
    assert samples[0]["hud"] == [] and samples[0]["overlays"] == []  # hover: no HUD, no overlays
