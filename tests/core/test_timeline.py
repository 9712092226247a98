"""core/timeline.py: the view samples a recorded run writes for replay (HUD, modes, leaders,
groups, overlays), one at each trajectory tick where they changed."""

from __future__ import annotations

import json
from bisect import bisect_right
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.overlays import Lines, as_overlay
from skyswarm.core.simulator import Simulator
from skyswarm.core.timeline import (
    MAPS,
    Timeline,
    apply_changes,
    group_leaders,
    highlighted,
    map_changes,
    read_timeline,
)
from tests.core.old_timeline import rewrite_as_old

ROOT = Path(__file__).resolve().parents[2]
FLOCK = ROOT / "configs/flocking_coverage.toml"
TRAJ_EVERY = 40  # flocking_coverage: 10 Hz trajectory at 2.5 ms ticks


def _live(sim: Simulator) -> dict[str, Any]:
    """What the live view shows now, in the timeline's terms (overlay data as float32 bytes)."""
    m = sim.mission
    overlays = [o for o in map(as_overlay, m.overlays()) if o is not None]
    return {
        "hud": [str(line) for line in m.hud()],
        "leaders": highlighted(m),
        "highlight": m.highlight_role,
        "modes": {str(a.id): a.mode_name() for a in sim.agents.values()},
        "groups": {str(k): v for k, v in group_leaders(m).items()},
        "overlays": [
            (o.segments if isinstance(o, Lines) else o.corners).tobytes() + str(o.color).encode()
            for o in overlays
        ],
    }


def _read(sample: dict[str, Any]) -> dict[str, Any]:
    """A read sample in `_live`'s terms."""
    out = {k: sample[k] for k in ("hud", "leaders", "highlight", "modes", "groups")}
    out["overlays"] = [
        ov["data"].tobytes() + str(ov["color"]).encode() for ov in sample["overlays"]
    ]
    return out


def test_a_sample_at_each_trajectory_tick_where_the_view_changed_holds_what_live_showed(
    tmp_path: Path,
) -> None:
    sim = Simulator.from_scenario(load_scenario(FLOCK), tmp_path)
    assert sim.recorder is not None and sim.recorder.traj_every == TRAJ_EVERY
    live = {0: _live(sim)}
    for _ in range(2000):  # 5 s
        sim.step()
        if sim.world.tick % TRAJ_EVERY == 0:
            live[sim.world.tick] = _live(sim)
    sim.finish()
    sim.close()
    samples = read_timeline(tmp_path)
    ticks = [s["tick"] for s in samples]
    assert ticks[0] == 0 and all(t % TRAJ_EVERY == 0 for t in ticks)
    # At every trajectory tick (the replay's poses) the sample at or before it is what the
    # live view showed at that tick: HUD, leaders, modes, groups, overlays.
    for tick, want in live.items():
        assert _read(samples[bisect_right(ticks, tick) - 1]) == want, tick
    # The flock elects UAV 1 in its first tick: shown from the first trajectory tick on (0.1 s).
    assert ticks[1] == TRAJ_EVERY and samples[1]["leaders"] == [1]
    assert samples[0]["hud"][1].startswith("leader none")
    # The first coverage reported (the HUD's line and the cells) at its own trajectory tick, not
    # at the next multiple of 0.5 s as before (measured: 1.2 s, tick 480; shown from 1.5 s then).
    first = next(s for s in samples if not s["hud"][0].startswith("coverage   0.0 %"))
    assert first["tick"] % 200 != 0 and len(first["overlays"][1]["data"]) > 0
    # Written only when something changed: 6 samples for the 51 trajectory ticks.
    assert len(samples) < len(live) / 5
    # Each row writes exactly the fields that changed since the previous one.
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    names = {v: k for k, v in MAPS.items()}  # mode_changes: modes
    for row, before, after in zip(rows[1:], samples, samples[1:]):
        written = {names.get(k, k) for k in row if k != "tick"}
        changed = {k for k, v in _read(after).items() if _read(before)[k] != v}
        assert written == changed, row["tick"]


def test_a_map_is_written_as_its_changes_when_fewer_changed_than_it_holds() -> None:
    old = {"1": "HOVER", "2": "POSITION", "3": "-"}
    new = {"1": "HOVER", "2": "VELOCITY", "4": "-"}  # 2 changed, 3 gone, 4 new
    changes = map_changes(old, new)
    assert changes == {"2": "VELOCITY", "4": "-", "3": None}
    assert apply_changes(old, changes) == new and old["2"] == "POSITION"  # a new map
    assert map_changes(new, new) == {}


def test_no_results_dir_no_timeline_and_the_periods_must_be_whole_ticks(tmp_path: Path) -> None:
    assert read_timeline(tmp_path) == []
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover.toml"))
    try:
        with pytest.raises(ValueError, match="whole number of ticks"):
            Timeline(tmp_path, sim, period_s=0.001)  # 0.4 tick
        with pytest.raises(ValueError, match="every_ticks 0"):
            Timeline(tmp_path, sim, every_ticks=0)
    finally:
        sim.close()


def test_a_truncated_last_line_keeps_the_whole_samples(tmp_path: Path) -> None:
    sim = Simulator.from_scenario(load_scenario(FLOCK), tmp_path)
    for _ in range(600):
        sim.step()
    sim.close()
    whole = read_timeline(tmp_path)
    assert len(whole) >= 3
    with (tmp_path / "timeline.jsonl").open("a") as f:
        f.write('{"tick": 640, "hud"')  # a run killed mid-write
    samples = read_timeline(tmp_path)
    assert [s["tick"] for s in samples] == [s["tick"] for s in whole]
    assert [_read(s) for s in samples] == [_read(s) for s in whole]


@pytest.mark.parametrize("start", [0, 200], ids=["from-tick-0", "from-0.5-s"])
def test_a_timeline_of_the_old_writer_still_reads(tmp_path: Path, start: int) -> None:
    """Results directories written before the change-driven samples hold every field in every
    row, every 0.5 s (from tick 0, or, older still, from 0.5 s), `overlays` null when unchanged:
    they read as they did, each sample what the run showed at its tick."""
    sim = Simulator.from_scenario(load_scenario(FLOCK), tmp_path)
    for _ in range(1200):
        sim.step()
    sim.close()
    new = read_timeline(tmp_path)
    new_ticks = [s["tick"] for s in new]
    rewrite_as_old(tmp_path, range(start, 1201, 200))
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    assert all(len(r) == 7 for r in rows)  # tick, hud, modes, leaders, highlight, groups, overlays
    assert rows[0]["overlays"] is not None and any(r["overlays"] is None for r in rows)
    old = read_timeline(tmp_path)
    assert [s["tick"] for s in old] == list(range(start, 1201, 200))
    for got in old:
        assert _read(got) == _read(new[bisect_right(new_ticks, got["tick"]) - 1])


def test_the_timeline_leaves_the_run_bit_identical(tmp_path: Path) -> None:
    """The timeline only reads: the same seed flies the same trajectory with the timeline (and
    its looks at every trajectory tick) as without any results directory."""
    flown = []
    for out in (tmp_path, None):
        sim = Simulator.from_scenario(load_scenario(FLOCK), out)
        for _ in range(400):
            sim.step()
        flown.append(sim.world.state.position.copy())  # NaN in the unused body slots
        sim.close()
    assert np.array_equal(flown[0], flown[1], equal_nan=True)


def test_modes_are_read_as_an_array_and_each_change_lands_at_its_trajectory_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A swarm is its UAVs' `ModeSource`: while no code changes, the timeline compares the
    array and asks no UAV for its `mode_name()`; a mode commanded to one UAV between two
    trajectory ticks is written at the next one, as that UAV's change alone."""
    from skyswarm.uav.agents import UavAgent

    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover.toml"), tmp_path)
    swarm = sim.mission.swarm
    every = sim.recorder.traj_every  # 20 Hz: 20 ticks
    asked = []
    name = UavAgent.mode_name
    monkeypatch.setattr(UavAgent, "mode_name", lambda self: asked.append(self.id) or name(self))
    for _ in range(4 * every):
        sim.step()
    assert asked == []  # nothing changed since the first look (before the patch)
    sim.step()  # one tick past a trajectory tick, then the command
    swarm.command.velocity([2], [[1.0, 0.0, 0.0]])
    for _ in range(2 * every):
        sim.step()
    assert sorted(set(asked)) == sorted(int(i) for i in swarm.ids)  # asked once, on the change
    sim.finish()
    sim.close()
    rows = [json.loads(line) for line in (tmp_path / "timeline.jsonl").read_text().splitlines()]
    changed = [r for r in rows if "mode_changes" in r or ("modes" in r and r["tick"] > 0)]
    uav = str(int(swarm.ids[2]))
    assert [(r["tick"], r.get("mode_changes")) for r in changed] == [(5 * every, {uav: "Velocity"})]
