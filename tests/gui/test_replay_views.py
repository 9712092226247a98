"""Replay in the live viewer's views (Xvfb): agent list, selection, top and subjective views at a
chosen replay time; and the live panel's mode column and base-station row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.gui.conftest import ROOT, shade_match

FLOCK = ROOT / "configs" / "flocking_coverage.toml"
KILLED, KILL_AT_S, END_S = 3, 2.0, 5.0
SHOW_S = 4.5  # s: replay time checked (a trajectory sample: 10 Hz)
UAV_ORANGE = (0.95, 0.42, 0.08)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5 s of flocking coverage with agent 3 killed at 2 s, recorded to a results directory."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    out = tmp_path_factory.mktemp("flock")
    sim = Simulator.from_scenario(load_scenario(FLOCK), out)
    sim.run(until_s=KILL_AT_S)
    assert sim.kill(sim.agents[KILLED], "test kill")
    sim.run(until_s=END_S)
    sim.finish()
    sim.close()
    return out


@pytest.fixture
def replay(xvfb: str, recorded: Path) -> Iterator[object]:
    from skyswarm.gui.player import ReplayApp
    from skyswarm.gui.replay import ReplaySource

    app = ReplayApp(ReplaySource(recorded))
    yield app
    for w in list(app.windows):
        w.close()


def _click_row(app: object, index: int) -> None:
    from pyglet.window import mouse

    from skyswarm.gui.panel import PANEL_W
    from skyswarm.gui.text import LINE_PX

    win = app.main  # type: ignore[attr-defined]
    win.render_now()  # lays out the panel
    w, h = win.fb_size
    y = app.panel.list_top + index * LINE_PX + LINE_PX // 2  # type: ignore[attr-defined]
    win.dispatch_event("on_mouse_press", w - PANEL_W + 40, h - y, mouse.LEFT, 0)
    win.dispatch_event("on_mouse_release", w - PANEL_W + 40, h - y, mouse.LEFT, 0)
    win.dispatch_pending_events()


def test_replay_panel_lists_agents_and_base_station_alive_at_replay_time(replay) -> None:
    app = replay
    app.seek(1.0)
    rows = {r.agent_id: r for r in app.rows()}
    assert sorted(rows) == list(range(11))  # 10 UAVs, base station 0 from config.toml
    assert rows[0].role == "base_station" and rows[0].altitude_m == pytest.approx(2.0)
    assert rows[KILLED].alive and rows[KILLED].role == "uav"
    app.seek(SHOW_S)
    rows = {r.agent_id: r for r in app.rows()}
    assert not rows[KILLED].alive and rows[KILLED].speed_m_s == 0.0
    assert sum(r.alive for r in rows.values()) == 10
    assert "alive 10/11" in app.hud_lines()
    assert rows[5].altitude_m == pytest.approx(app.frame().positions[4, 2])


def test_replay_select_by_list_and_top_view_shows_recorded_positions(replay, recorded) -> None:
    from pyglet.window import key

    from skyswarm.core.recorder import read_trajectory
    from skyswarm.core.timeline import read_timeline
    from skyswarm.gui.renderer import LEADER, ROLE_COLORS, SELECTED

    app = replay
    app.seek(SHOW_S)
    app.paused = True
    _click_row(app, 4)  # fifth row: agent 5
    assert app.selected == 5
    app.main.dispatch_event("on_key_press", key.T, 0)
    app.main.dispatch_pending_events()
    assert app.top is not None and len(app.windows) == 2
    top = app.top
    rec = read_trajectory(recorded)
    at = rec[rec["tick"] == round(SHOW_S / 0.0025)]
    assert sorted(at["agent_id"]) == [i for i in range(1, 11) if i != KILLED]
    # Zoom onto the swarm and the base station: 0.34 m drones are ~7 px wide at this scale.
    pts = np.vstack([at["position"][:, :2], [[0.0, -10.0]]])
    top.camera.center = (pts.min(axis=0) + pts.max(axis=0)) / 2
    top.camera.half_height = float(np.ptp(pts, axis=0).max()) / 2 + 3.0
    top.render_now()
    img = top.screenshot()
    _, _, w, h = top.scene_viewport
    px = top.camera.project(at["position"], w, h)
    # The flock's leader at SHOW_S (recorded by the timeline) is drawn in the leader colour.
    sample = [row for row in read_timeline(recorded) if row["tick"] * 0.0025 <= SHOW_S][-1]
    leaders = set(sample["leaders"])
    assert len(leaders) == 1 and 5 not in leaders
    assert top.camera.half_height < 25.0  # at least 14 px per m
    for (x, y), r in zip(px, at):
        assert 0 <= x < w and 0 <= y < h
        rgb = UAV_ORANGE if r["agent_id"] not in leaders else LEADER
        rgb = SELECTED if r["agent_id"] == 5 else rgb
        assert shade_match(img[int(y), int(x)], rgb), (r["agent_id"], x, y, img[int(y), int(x)])
    # The replay draws exactly the recorded positions.
    frame = app.frame()
    for r in at:
        i = frame.index_of(int(r["agent_id"]))
        assert np.array_equal(frame.positions[i], r["position"])
    # The base station from config.toml: its mast seen from above at (0, -10).
    (sx, sy) = top.camera.project(np.array([[0.0, -10.0, 2.0]]), w, h)[0]
    assert shade_match(img[int(sy), int(sx)], ROLE_COLORS["base_station"]), img[int(sy), int(sx)]


def test_replay_click_drone_selects_and_subjective_view_follows_it(replay) -> None:
    from pyglet.window import key, mouse

    from skyswarm.gui.camera import FirstPersonCamera
    from skyswarm.gui.renderer import SELECTED

    app = replay
    app.seek(SHOW_S)
    win = app.main
    _, _, w, h = win.scene_viewport
    frame = app.frame()
    win.camera.target = frame.positions[frame.index_of(7)].copy()  # the drone under the centre
    win.camera.distance = 6.0
    x, y = win.camera.project(frame.positions, w, h)[frame.index_of(7)]
    win.dispatch_event("on_mouse_press", int(x), int(h - y), mouse.LEFT, 0)
    win.dispatch_event("on_mouse_release", int(x), int(h - y), mouse.LEFT, 0)
    win.dispatch_pending_events()
    assert app.selected == 7
    win.dispatch_event("on_key_press", key.V, 0)
    win.dispatch_pending_events()
    sub = app.subjective
    assert sub is not None and len(app.windows) == 2
    sub.render_now()
    img = sub.screenshot()
    _, _, sw, sh = sub.scene_viewport
    cx, cy = sub.camera.project(frame.positions[[frame.index_of(7)]], sw, sh)[0]
    assert abs(cx - sw / 2) < 1 and abs(cy - sh / 2) < 1  # chase camera looks at agent 7
    assert shade_match(img[int(cy), int(cx)], SELECTED)
    win.dispatch_event("on_key_press", key.C, 0)  # chase -> first person
    win.dispatch_pending_events()
    assert isinstance(sub.camera, FirstPersonCamera)


def test_live_panel_shows_mode_names_and_the_base_station(xvfb: str) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.panel import short_mode
    from skyswarm.gui.renderer import ROLE_COLORS

    sim = Simulator.from_scenario(load_scenario(FLOCK))
    app = ViewerApp(sim)
    try:
        sim.run(until_s=3.0)  # airborne, flocking: the UAVs fly a velocity / altitude mode
        rows = app.rows()
        assert [r.agent_id for r in rows] == [*range(1, 11), 0]
        for row in rows[:10]:
            name = sim.agents[row.agent_id].mode.name
            assert row.mode == name and "<" not in row.text()
            assert short_mode(name) in row.text()
        assert {r.mode for r in rows[:10]} != {"Manual"}  # the mode changed after take-off
        assert (rows[10].role, rows[10].mode, rows[10].altitude_m) == ("base_station", "-", 2.0)
        assert short_mode("GroundSpeedAltitudeAndHeading") == "GSAlt+Hdg"
        assert short_mode("GroundSpeedAndVertSpeed") == "GS+VS"
        # The base station's mast in the live 3D window.
        app.main.camera = OrbitCamera((0.0, -10.0, 1.0), 9.0, azimuth_deg=-70, elevation_deg=20)
        app.main.render_now()
        img = app.main.screenshot()
        _, _, w, h = app.main.scene_viewport
        for z in (2.0, 1.0, 0.3):  # radio head, mast, near the base plate
            x, y = app.main.camera.project(np.array([[0.0, -10.0, z]]), w, h)[0]
            assert shade_match(img[int(y), int(x)], ROLE_COLORS["base_station"]), (z, x, y)
    finally:
        for win in list(app.windows):
            win.close()
        sim.close()


def test_replay_follow_key_keeps_the_3d_camera_on_the_selected_drone_as_it_plays(replay) -> None:
    from pyglet.window import key

    replay.seek(SHOW_S - 1.0)
    replay.select(5)
    replay.main.on_key_press(key.F, 0)
    replay.paused = True
    for _ in range(40):  # 2 s of wall time paused: the camera settles on the drone
        replay.update(0.05)
    frame = replay.frame()
    assert np.linalg.norm(replay.main.camera.target - frame.positions[frame.index_of(5)]) < 0.01
    replay.paused = False
    before = frame.positions[frame.index_of(5)].copy()
    replay.update(0.5)  # 0.5 s of playing, one frame: the camera trails the moving drone
    frame = replay.frame()
    now = frame.positions[frame.index_of(5)]
    gap = np.linalg.norm(replay.main.camera.target - now)
    moved = np.linalg.norm(now - before)
    assert moved > 0.5  # the flock is flying
    # One easing step of 0.5 s with a 0.12 s time constant leaves e^(-0.5 / 0.12) of the move.
    assert gap == pytest.approx(moved * np.exp(-0.5 / 0.12), rel=1e-6)


def test_replay_colours_the_recorded_leader_as_live_did(recorded: Path) -> None:
    """The timeline records the mission's "leader" role; a replay frame marks exactly that agent
    (the live view colours it cyan), and the frame at t = 0 (before any sample) marks none."""
    from skyswarm.core.timeline import read_timeline
    from skyswarm.gui.replay import ReplaySource

    src = ReplaySource(recorded)
    last = read_timeline(recorded)[-1]
    t = last["tick"] * 0.0025
    frame = src.frame_at(t)
    assert len(last["leaders"]) == 1
    assert frame.ids[frame.leaders].tolist() == last["leaders"]
    assert not src.frame_at(0.0).leaders.any()
