"""The viewer's tools for watching a swarm: zoom to the cursor, following, framing, glides; the
agent filter and inspector with the estimate ghost; Stop / Reset; mission commands on keys 1..9;
simulation pacing that leaves the frame rate alone."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.gui.conftest import ROOT

DROP = ROOT / "configs" / "drop_test.toml"
HOVER = ROOT / "configs" / "hover.toml"
QRSIM = ["uav.sensors.preset='qrsim'"]


# -- cameras -------------------------------------------------------------------------------
@pytest.mark.parametrize("px", [(200.0, 500.0), (1000.0, 650.0), (640.0, 360.0)])
def test_orbit_zoom_keeps_the_ground_point_under_the_cursor(px) -> None:
    from skyswarm.gui.camera import ZOOM_PER_NOTCH, OrbitCamera

    cam = OrbitCamera((10.0, -5.0, 0.0), distance=60.0, azimuth_deg=-60, elevation_deg=30)
    ground = cam._hit_ground(*px, 1280, 720, 0.0)  # noqa: SLF001
    cam.zoom_at(3, *px, 1280, 720)
    assert cam.distance == pytest.approx(60.0 * ZOOM_PER_NOTCH**3)  # 3 notches in
    # The point under the cursor stays there (to 1e-6 px): zooming goes *to* it.
    assert cam.project(ground[None], 1280, 720)[0] == pytest.approx(px, abs=1e-6)
    cam.zoom_at(-5, *px, 1280, 720)  # and out again, from the same point
    assert cam.project(ground[None], 1280, 720)[0] == pytest.approx(px, abs=1e-6)


def test_top_zoom_keeps_the_point_under_the_cursor_and_following_zooms_about_the_agent() -> None:
    from skyswarm.gui.camera import OrbitCamera, TopCamera

    top = TopCamera((0.0, 0.0), half_height=50.0)
    ground = top._hit_ground(100.0, 100.0, 800, 600, 0.0)  # noqa: SLF001
    top.zoom_at(4, 100.0, 100.0, 800, 600)
    assert top.half_height == pytest.approx(50.0 * 0.9**4)
    assert top.project(ground[None], 800, 600)[0] == pytest.approx([100.0, 100.0], abs=1e-6)
    cam = OrbitCamera((0.0, 0.0, 5.0), distance=40.0)
    cam.follow = lambda: np.array([0.0, 0.0, 5.0])
    cam.zoom_at(2, 10.0, 700.0, 1280, 720)  # far off centre: ignored while following
    assert cam.target == pytest.approx([0.0, 0.0, 5.0]) and cam.distance == pytest.approx(32.4)


def test_glide_eases_exponentially_then_lands_exactly_and_follow_trails_the_agent() -> None:
    from skyswarm.gui.camera import FOLLOW_TAU_S, GLIDE_TAU_S, OrbitCamera

    cam = OrbitCamera((0.0, 0.0, 0.0), distance=100.0)
    cam.glide_to(np.array([10.0, 0.0, 0.0]), 50.0)
    cam.animate(GLIDE_TAU_S)  # one time constant: 1 - 1/e of the way
    assert cam.target[0] == pytest.approx(10.0 * (1 - math.exp(-1)))
    assert cam.distance == pytest.approx(100.0 - 50.0 * (1 - math.exp(-1)))
    for _ in range(100):
        cam.animate(0.05)  # 5 s = 20 tau: within 0.1 %, then set exactly
    assert cam.glide is None and cam.distance == 50.0 and list(cam.target) == [10.0, 0.0, 0.0]
    agent = np.array([3.0, 4.0, 12.0])
    cam.follow = lambda: agent
    cam.animate(FOLLOW_TAU_S)
    assert np.linalg.norm(cam.target - agent) == pytest.approx(
        np.linalg.norm([7.0, -4.0, -12.0]) * math.exp(-1)
    )
    cam.drag(5, 0, pan=True)  # panning lets go of the agent
    assert cam.follow is None


# -- the agent list ------------------------------------------------------------------------
def test_filter_rows_by_id_role_mode_and_state() -> None:
    from skyswarm.gui.panel import AgentRow, filter_rows

    rows = [
        AgentRow(i, "uav" if i < 8 else "base_station", "Position", 10.0, 1.0, i % 3 != 0)
        for i in range(1, 11)
    ]
    ids = lambda text: [r.agent_id for r in filter_rows(rows, text)]  # noqa: E731
    assert ids("") == list(range(1, 11))
    assert ids("3") == [3]  # a number is an exact id, not a prefix (13, 30 ...)
    assert ids("dead") == [3, 6, 9] and ids("alive") == [1, 2, 4, 5, 7, 8, 10]
    assert ids("UAV dead") == [3, 6]  # every word must match; case-insensitive
    assert ids("base") == [8, 9, 10] and ids("pos") == list(range(1, 11))
    assert ids("hover") == []


# -- windowed viewer -----------------------------------------------------------------------
@pytest.fixture
def hover_viewer(xvfb: str) -> Iterator[object]:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp

    sim = Simulator.from_scenario(load_scenario(HOVER, QRSIM))
    app = ViewerApp(sim)
    yield app
    app.shutdown()
    app.session.sim.close()


def _step(app, ticks: int) -> None:  # noqa: ANN001
    for _ in range(ticks):
        app.session.step_once()


def test_filter_typing_captures_keys_and_escape_clears_without_closing(hover_viewer) -> None:
    from pyglet.window import key

    app = hover_viewer
    win = app.main
    assert win.on_key_press(key.SLASH, 0)
    win.on_text("/")  # the character of the key that opened the filter
    win.on_text("3")
    assert app.typing and app.filter_text == "3"
    assert [r.agent_id for r in app.shown_rows()] == [3]
    win.on_key_press(key.K, 0)  # a command key while typing: text, not "kill"
    assert app.session.sim.agents[3].alive
    win.on_key_press(key.ESCAPE, 0)  # clears the filter; the window stays open
    assert not app.typing and app.filter_text == "" and app.windows == [win]
    assert len(app.shown_rows()) == 4
    img = app.panel_image(720)
    assert img.shape == (720, 360, 4)


def test_inspector_shows_mode_setpoints_comms_and_estimate_and_the_ghost_is_drawn(
    hover_viewer,
) -> None:
    from skyswarm.gui.renderer import GHOST

    app = hover_viewer
    _step(app, 800)  # 2 s: climbing to the hover altitude on the qrsim estimate
    app.select(2)
    lines = app.inspector_lines()
    frame = app.frame()
    i = frame.index_of(2)
    err = float(np.linalg.norm(frame.estimates[i] - frame.positions[i]))
    assert 0.0 < err < 5.0  # qrsim: a GPS-driven estimate, off the truth by decimetres to m
    assert lines[0] == "agent 2  uav  alive"
    assert lines[1].startswith("mode ")
    assert lines[2].startswith("set ") and "alt" in lines[2]
    assert any(s.startswith("msgs in") for s in lines)
    assert f"estimate off truth {err:.2f} m (white ghost)" in lines
    gps = frame.gps_fixes[i] - frame.positions[i]
    assert (
        lines[-1]
        == f"GPS error {np.linalg.norm(gps[:2]):.2f} m horiz., {gps[2]:+.2f} m vert. (pink +)"
    )
    # The ghost: the selected drone's mesh drawn faint white at the estimate.
    win = app.main
    cam = win.camera
    cam.target, cam.distance = frame.estimates[i].copy(), 4.0
    win.render_now()
    with_ghost = win.screenshot().astype(int)
    app.selected = None
    win.render_now()
    without = win.screenshot().astype(int)
    _, _, w, h = win.scene_viewport
    x, y = (int(v) for v in cam.project(frame.estimates[i][None], w, h)[0])
    patch = slice(y - 10, y + 11), slice(x - 10, x + 11)
    brighter = (with_ghost[patch] - without[patch]).sum(axis=-1) > 30
    assert brighter.sum() >= 20, brighter.sum()  # a translucent white blend brightens pixels
    assert GHOST[3] < 1.0


def test_follow_and_frame_keys_glide_the_camera(hover_viewer) -> None:
    from pyglet.window import key

    from skyswarm.gui.framing import FILL

    app = hover_viewer
    _step(app, 400)
    win = app.main
    app.select(3)
    win.on_key_press(key.F, 0)
    assert app.following and win.camera.follow is not None
    for _ in range(40):
        app.animate_cameras(0.05)  # 2 s of wall time, the drones barely move
    target = app.frame().positions[app.frame().index_of(3)]
    assert np.linalg.norm(win.camera.target - target) < 0.01
    win.camera.distance = 500.0
    win.on_key_press(key.G, 0)  # frame the swarm: stops following, glides in
    assert not app.following and win.camera.follow is None
    for _ in range(100):
        app.animate_cameras(0.05)
    assert win.camera.glide is None
    _, _, w, h = win.scene_viewport
    px = win.camera.project(app.frame().positions, w, h)
    half = np.array([w, h]) / 2
    # Every drone within the FILL fraction of the half-frame, and the swarm not tiny: the
    # farthest one beyond half of it.
    reach = np.abs(px - half) / half
    assert reach.max() <= FILL + 1e-6 and reach.max() > 0.5 * FILL


def test_mission_commands_on_keys_1_to_9_with_the_selected_agent(hover_viewer) -> None:
    from pyglet.window import key

    app = hover_viewer
    calls: list[tuple[str, int | None]] = []

    def broken(agent_id: int | None) -> None:
        raise RuntimeError("no plan")

    mission = app.session.sim.mission
    mission.gui_commands = lambda: [  # read with getattr, like overlays()
        ("mark", lambda i: calls.append(("mark", i))),
        ("broken", broken),
    ]
    app.select(4)
    assert app.main.on_key_press(key._1, 0)
    assert calls == [("mark", 4)] and app.command_note == "ran 1: mark"
    app.main.on_key_press(key._2, 0)  # an exception is reported, the viewer goes on
    assert app.command_note == "2: broken failed: RuntimeError: no plan"
    assert not app.on_key(key._3, 0)  # no third command
    assert "mission: 1 mark  2 broken" in app.hud_lines()
    help_text = app.help_lines()
    assert "     1   mark" in help_text and "     2   broken" in help_text
    app.select(None)
    app.main.on_key_press(key._1, 0)
    assert calls[-1] == ("mark", None)


def test_stop_ends_the_run_and_reset_restarts_it_recording_next_to_it(
    xvfb: str, tmp_path: Path
) -> None:
    import json

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.session import STOP_CAUSE

    out = tmp_path / "run"
    sim = Simulator.from_scenario(load_scenario(DROP), out)
    app = ViewerApp(sim, results_dir=out)
    try:
        _step(app, 100)
        app.stop_run()
        assert app.session.finished and sim.stop_reason == STOP_CAUSE
        _step(app, 10)
        assert sim.world.tick == 100  # a stopped run does not step
        app.reset_run()
        assert app.session.sim is not sim and app.session.sim.world.tick == 0
        assert app.session.running  # the restarted run goes at once
        assert json.loads((out / "summary.json").read_text())["stop_reason"] == STOP_CAUSE
        app.session.advance(0.1, budget_s=10.0)
        assert app.session.sim.world.tick == 40
        app.reset_run()  # a second reset: the running run ends with "reset"
        summary = json.loads((tmp_path / "run-reset-1" / "summary.json").read_text())
        assert summary["stop_reason"] == "reset"
        assert (tmp_path / "run-reset-2").is_dir()
    finally:
        app.shutdown()
        app.session.sim.finish()
        app.session.sim.close()


# -- pacing ---------------------------------------------------------------------------------
class FakeClock:
    """A wall clock that each simulation step advances by `step_s`."""

    def __init__(self, step_s: float) -> None:
        self.now, self.step_s = 0.0, step_s

    def __call__(self) -> float:
        return self.now


def test_a_slow_simulation_gets_its_budget_per_frame_and_no_more() -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.session import (
        FRAME_TARGET_S,
        MAX_STEP_WALL_S,
        MIN_STEP_WALL_S,
        SimSession,
    )

    sim = Simulator.from_scenario(load_scenario(DROP))
    clock = FakeClock(0.010)  # 10 ms of wall time per 2.5 ms tick: 4x slower than real time
    s = SimSession(sim, clock=clock)
    step = sim.step

    def slow_step() -> None:
        step()
        clock.now += clock.step_s

    sim.step = slow_step  # type: ignore[method-assign]
    # A frame that took 20 ms to draw leaves 13.3 ms of a 30 fps frame for the simulation:
    budget = s.frame_budget(0.020)
    assert budget == pytest.approx(FRAME_TARGET_S - 0.020)
    # 1 s of wall time owed (400 ticks), but the frame gets 2 ticks (20 ms > 13.3 ms) and the
    # rest of the debt is dropped: the next frame is not late, the run goes slower instead.
    assert s.advance(1.0, budget) == 2
    assert s.advance(0.0, budget) == 0
    # Limits: a slow frame still steps >= 1 tick; a fast one at most MAX_STEP_WALL_S.
    assert s.frame_budget(0.5) == MIN_STEP_WALL_S and s.advance(1.0, s.frame_budget(0.5)) == 1
    assert s.frame_budget(0.0) == pytest.approx(FRAME_TARGET_S) and FRAME_TARGET_S < MAX_STEP_WALL_S
    assert sim.world.tick == 3
    sim.close()


def test_one_tick_per_frame_still_records_the_headless_trajectory(tmp_path: Path) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.session import SimSession

    scenario = load_scenario(HOVER, [*QRSIM, "simulation.duration_s=1.0"])
    head = Simulator.from_scenario(scenario, tmp_path / "headless")
    head.run()
    head.finish()
    head.close()
    sim = Simulator.from_scenario(scenario, tmp_path / "viewed")
    s = SimSession(sim, speed=4.0)
    frames = 0
    while not s.finished:
        s.advance(0.05, budget_s=0.0)  # a starved budget: exactly one tick per frame
        frames += 1
    assert frames == 400  # 1 s / 2.5 ms
    sim.finish()
    sim.close()
    a = (tmp_path / "headless" / "trajectory.bin").read_bytes()
    b = (tmp_path / "viewed" / "trajectory.bin").read_bytes()
    assert len(a) > 0 and a == b  # sensors on (qrsim draws): still bit-identical


def test_panel_button_labels_follow_the_run_state(hover_viewer) -> None:
    app = hover_viewer
    label = lambda: app.button_label("start_or_pause", "Start")  # noqa: E731
    app.session.started = False
    assert label() == "Start"
    app.start_or_pause()
    assert label() == "Pause"
    app.start_or_pause()
    assert label() == "Resume"
    app.toggle_follow()
    assert app.button_label("toggle_follow", "Follow") == "Unfollow"
    app.stop_run()
    assert label() == "Ended"
    assert app.panel_image(720).shape == (720, 360, 4)  # drawn with the state's labels
