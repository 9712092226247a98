"""The group layer (issue 30, "the leader and its group"): on a split flock
(configs/flocking_split.toml: a 20 m radio across a 29.5 m formation), each member's line goes to
the leader of its part, the parts drawn are the mission's, and the replay draws what the live
view drew; the legend names the highlighted role as the mission names it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT

SPLIT = ROOT / "configs" / "flocking_split.toml"
SPLIT_BY_S = 120.0  # s: the flock splits well before (at 15.5 s with seed 1 on 2026-11-28)
SIZE = (1280, 720)


def _parts(mission: Any) -> dict[int, set[int]]:
    """{leader: its part, the leader included} from the members' own beliefs: each follows the
    lowest id it hears (`FlockUav.leader_id`), which may follow a lower one; a chain ends at a
    member leading itself."""
    follows = {u.id: u.leader_id for u in mission.uavs if u.alive}
    parts: dict[int, set[int]] = {}
    for uid in follows:
        lead = uid
        while follows.get(lead) not in (None, lead):
            lead = follows[lead]
        if follows.get(lead) == lead:
            parts.setdefault(lead, set()).add(uid)
    return parts


def _drawn(frame: Any, lines: list[np.ndarray]) -> tuple[dict[int, set[int]], dict[int, tuple]]:
    """({leader: the members joined to it, itself included}, {leader: RGBA}) read back from the
    line vertices: each end is the agent at that position."""
    groups: dict[int, set[int]] = {}
    colors: dict[int, tuple] = {}
    for v in lines:
        for a, b in v.reshape(-1, 2, 7):
            m = int(frame.ids[np.argmin(np.linalg.norm(frame.positions - a[:3], axis=1))])
            lead = int(frame.ids[np.argmin(np.linalg.norm(frame.positions - b[:3], axis=1))])
            groups.setdefault(lead, {lead}).add(m)
            assert colors.setdefault(lead, tuple(a[3:])) == tuple(a[3:]) == tuple(b[3:])
    return groups, colors


class _LiveFrames:
    """A ReplaySource look-alike serving one live frame (and the live scenery)."""

    def __init__(self, frame: Any, scenery: Any) -> None:
        self.frame, self.scenery = frame, scenery

    def frame_at(self, time_s: float) -> Any:
        return self.frame


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The split flock recorded until the first multiple of PERIOD_S (0.5 s, also a 10 Hz
    trajectory tick, where the timeline looks) with two leaders at once: that time `t`, the
    live frame, the mission's parts and leaders then."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.core.timeline import PERIOD_S
    from skyswarm.gui.scene import LiveSource

    out = tmp_path_factory.mktemp("split")
    scenario = load_scenario(SPLIT, [f"simulation.duration_s={SPLIT_BY_S}"])
    sim = Simulator.from_scenario(scenario, out)
    source = LiveSource(sim)
    try:
        while len(sim.mission.role_members("leader")) < 2:
            assert sim.time_s < SPLIT_BY_S, "the flock did not split"
            target = sim.time_s + PERIOD_S
            while sim.time_s < target - 1e-9:
                sim.step()
        result = {
            "dir": out, "t": sim.time_s, "frame": source.frame(), "scenery": source.scenery,
            "parts": _parts(sim.mission), "leaders": sorted(sim.mission.role_members("leader")),
        }  # fmt: skip
        sim.finish()
    finally:
        sim.close()
    return result


def test_the_lines_join_each_member_to_the_leader_of_its_part(split: dict[str, Any]) -> None:
    from skyswarm.gui.groups import group_color, group_lines

    frame, parts = split["frame"], split["parts"]
    assert len(parts) >= 2 and sorted(parts) == split["leaders"]  # the flock is split
    assert sum(len(p) for p in parts.values()) == 10  # every member is in a part
    lines = group_lines(frame)
    assert sum(len(v) for v in lines) == 2 * (10 - len(parts))  # a line per non-leader
    groups, colors = _drawn(frame, lines)
    assert groups == parts
    ranks = {lead: k for k, lead in enumerate(sorted(parts))}
    assert colors == {lead: tuple(np.float32(group_color(ranks[lead]))) for lead in parts}
    assert len(set(colors.values())) == len(parts)  # one colour per part


def test_replay_draws_the_groups_the_live_view_drew(split: dict[str, Any], tmp_path: Path) -> None:
    """The timeline records `groups`: the replay's lines at the split are the live ones (float32
    poses), and its picture (top camera, groups on) equals the live picture; each group's
    colour covers pixels with the layer on and none with it off; `snapshot --groups` draws the
    same picture."""
    from PIL import Image

    from skyswarm.app.cli import main
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.groups import group_color, group_lines
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    live_frame = split["frame"]
    source = ReplaySource(split["dir"])
    frame = source.frame_at(split["t"])
    assert frame.group is not None and np.array_equal(frame.group, live_frame.group)
    (got,), (want,) = group_lines(frame), group_lines(live_frame)
    assert np.allclose(got, want, atol=1e-4)
    top = CameraSpec("top")
    pictures = {}
    for name, src, groups in (
        ("live", _LiveFrames(live_frame, split["scenery"]), True),
        ("replay", source, True),
        ("off", source, False),
    ):
        still = ReplayStill(src, SIZE, top, hud=False, inset=False, groups=groups)  # type: ignore[arg-type]
        pictures[name] = still.render(split["t"]).astype(int)
        still.release()
    diff = np.abs(pictures["replay"] - pictures["live"]).max(axis=-1)
    assert (diff > 24).mean() < 0.001 and diff.mean() < 0.5, ((diff > 24).mean(), diff.mean())

    def count(image: np.ndarray, k: int) -> int:
        rgb = np.round(np.array(group_color(k)[:3]) * 255).astype(int)
        return int((np.abs(image - rgb).max(axis=-1) <= 2).sum())

    leaders = sorted(split["parts"])
    lined = [k for k, lead in enumerate(leaders) if len(split["parts"][lead]) > 1]
    assert lined  # some part has members besides its leader
    for k in lined:  # each part with members: its colour with the layer on, not without
        on, off = count(pictures["replay"], k), count(pictures["off"], k)
        assert on >= 30 and off <= 2, (k, on, off)
    shots = {}
    for flag in ((), ("--groups",)):
        out = tmp_path / f"groups{len(flag)}.png"
        argv = ["snapshot", str(split["dir"]), "--time", str(split["t"]), "--out", str(out)]
        assert main([*argv, "--camera", "top", "--no-inset", *flag]) == 0
        shots[bool(flag)] = np.asarray(Image.open(out).convert("RGB")).astype(int)
    for k in lined:
        assert count(shots[True], k) >= count(shots[False], k) + 30, k


def test_the_groups_key_and_flag_toggle_the_layer_in_the_replay_window(
    xvfb: str, split: dict[str, Any]
) -> None:
    from pyglet.window import key

    from skyswarm.app.cli import _parser
    from skyswarm.app.gui_commands import view_options
    from skyswarm.gui.groups import group_lines
    from skyswarm.gui.player import ReplayApp
    from skyswarm.gui.replay import ReplaySource

    options = view_options(_parser().parse_args(["replay", "RUN", "--groups"]))
    app = ReplayApp(ReplaySource(split["dir"]), options=options)
    try:
        app.seek(split["t"])
        (lines,) = app.extra_lines()
        assert np.array_equal(lines, group_lines(app.frame())[0])
        app.on_key(key.A, 0)
        assert app.extra_lines() == []
        app.on_key(key.A, 0)
        assert len(app.extra_lines()) == 1
        assert any(line.split()[0] == "A" and "--groups" in line for line in app.help_lines())
    finally:
        app.shutdown()


def test_the_legend_names_the_highlighted_role_as_the_mission_does(split: dict[str, Any]) -> None:
    """ "leader" for flocking coverage (recorded in the timeline for the replay), "scout" for a
    mission highlighting scouts; no entry while nobody holds the role."""
    from dataclasses import replace

    from skyswarm.gui.palette import LEADER
    from skyswarm.gui.renderer import legend_entries
    from skyswarm.gui.replay import ReplaySource

    frame = ReplaySource(split["dir"]).frame_at(split["t"])
    assert frame.highlight == "leader" == split["frame"].highlight
    assert legend_entries(frame) == legend_entries(split["frame"])
    labels = dict(legend_entries(frame))
    assert labels["leader"] == LEADER and "uav (follower)" in labels
    scouts = replace(frame, highlight="scout")
    labels = dict(legend_entries(scouts))
    assert labels["scout"] == LEADER and "leader" not in labels and "uav" in labels
    nobody = replace(scouts, leader=np.zeros(len(frame.ids), dtype=bool))
    assert [n for n, _ in legend_entries(nobody)] == ["base_station", "uav"]
    unnamed = replace(frame, highlight=None)  # a timeline written before the name was
    assert "leader" in dict(legend_entries(unnamed))
