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


def test_samples_at_the_start_and_every_half_second_with_hud_modes_and_changed_overlays(
    tmp_path: Path,
) -> None:
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/flocking_coverage.toml"), tmp_path)
    start_hud, start_overlays = sim.mission.hud(), sim.mission.overlays()
    for _ in range(2000):  # 5 s
        sim.step()
    live_hud, live_overlays = sim.mission.hud(), sim.mission.overlays()
    sim.finish()
    sim.close()
    samples = read_timeline(tmp_path)
    # Tick 0 (the state the run starts from, the live view's first frame), tick 1 (after the
    # first tick's tasks), then 200, 400, ..., 2000: every 0.5 s at 2.5 ms; the last is the
    # final state.
    assert [s["tick"] for s in samples] == [0, 1, *range(200, 2001, 200)]
    first, after_first = samples[0], samples[1]
    assert first["hud"] == start_hud and first["hud"][1].startswith("leader none")
    assert first["leaders"] == [] and first["highlight"] == "leader"
    assert set(first["modes"]) == {str(a.id) for a in sim.agents.values()}
    assert len(first["overlays"]) == len(start_overlays) == 2  # the area outline from the start
    # The flock elects its leader (UAV 1, the lowest id) in its first tick: the live view shows
    # it from 2.5 ms on, and so does the replay, from the second sample.
    assert after_first["leaders"] == [1] and after_first["hud"][1].startswith("leader 1 ")
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
    assert [s["tick"] for s in samples] == [0, 1, 200, 400]
    assert samples[0]["hud"] == [] and samples[0]["overlays"] == []  # hover: no HUD, no overlays


def test_a_timeline_written_before_the_start_samples_still_reads(tmp_path: Path) -> None:
    """Results directories written before the tick-0 and tick-1 samples start at 0.5 s; their
    samples read as before (overlays "unchanged" resolve against the first one read)."""
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/flocking_coverage.toml"), tmp_path)
    for _ in range(600):
        sim.step()
    sim.close()
    new = read_timeline(tmp_path)
    index = tmp_path / "timeline.jsonl"
    rows = [json.loads(line) for line in index.read_text().splitlines()]
    assert rows[2]["overlays"] is None  # unchanged since tick 0: not written again
    # As the old recorder wrote it: tick 200 was the first sample, so it held the overlays.
    # timeline.bin keeps its blocks; the first two rows' entries point into it still.
    rows[2]["overlays"] = rows[0]["overlays"]
    index.write_text("".join(json.dumps(r) + "\n" for r in rows[2:]))
    old = read_timeline(tmp_path)
    assert [s["tick"] for s in old] == [200, 400, 600]
    for got, want in zip(old, new[2:]):
        assert got["hud"] == want["hud"] and got["leaders"] == want["leaders"]
        assert [o["data"].tolist() for o in got["overlays"]] == [
            o["data"].tolist() for o in want["overlays"]
        ]


def test_the_start_samples_leave_the_run_bit_identical(tmp_path: Path) -> None:
    """The timeline only reads: the same seed flies the same trajectory with the timeline (and
    its samples at ticks 0 and 1) as without any results directory."""
    cfg = ROOT / "configs/flocking_coverage.toml"
    flown = []
    for out in (tmp_path, None):
        sim = Simulator.from_scenario(load_scenario(cfg), out)
        for _ in range(400):
            sim.step()
        flown.append(sim.world.state.position.copy())  # NaN in the unused body slots
        sim.close()
    assert np.array_equal(flown[0], flown[1], equal_nan=True)
