"""Issue 30 in the live window: the main camera follows the swarm (gui/director.py) until the user
moves it, the camera flags of `view`/`replay`, the screenshot key and motion trails, under Xvfb
with pixels counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT, shade_match

DROP = ROOT / "configs" / "drop_test.toml"  # 9 boxes in a 3 x 3 grid, 2 m apart, from 10 m


def _viewer(options: Any = None, results_dir: Path | None = None) -> Any:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp

    sim = Simulator.from_scenario(load_scenario(DROP))
    app = ViewerApp(sim, results_dir=results_dir, options=options)
    app.session.clock = lambda: 0.0  # a frozen wall clock: update(dt) steps every tick owed
    return app


def _send(win: Any, *event: Any) -> None:
    """Dispatch an input event and handle it now (outside the loop pyglet queues it)."""
    win.dispatch_event(*event)
    win.dispatch_pending_events()


def _close(app: Any) -> None:
    sim = app.session.sim
    app.shutdown()
    sim.close()


@pytest.fixture
def viewer(xvfb: str) -> Iterator[Any]:
    app = _viewer()
    yield app
    _close(app)


def _in_view(app: Any) -> tuple[np.ndarray, tuple[int, int]]:
    """(N, 2) pixel of every agent in the main view, and the view's (w, h)."""
    win = app.main
    _, _, w, h = win.scene_viewport
    return win.camera.project(app.frame().positions, w, h), (w, h)


def test_default_camera_follows_the_falling_swarm_and_keeps_it_out_of_the_inset(viewer) -> None:
    app = viewer
    for _ in range(4):  # 0.8 s: the boxes fall 10 - 9.81 * 0.8^2 / 2 = 3.1 m
        app.update(0.2)
        app.main.render_now()
        xy, (w, h) = _in_view(app)
        x0, y0, iw, ih = app.layout(app.frame(), (w, h)).inset
        assert np.all((xy >= 0) & (xy < (w, h)))
        assert not np.any((xy[:, 0] > x0) & (xy[:, 1] < y0 + ih))  # none under the inset
        # framed, not the whole scene: the 4 m wide grid of boxes spans over half the view
        assert np.ptp(xy[:, 0]) > w / 2
    cam = app.main.camera
    z = app.frame().positions[0, 2]
    assert z < 7.5 and cam.target[2] == pytest.approx(z, abs=1e-6)  # centre of the boxes


def test_a_drag_holds_the_camera_and_r_follows_the_swarm_again(viewer) -> None:
    from pyglet.window import key, mouse

    app, win = viewer, viewer.main
    app.update(0.1)
    win.render_now()
    _send(win, "on_mouse_press", 300, 300, mouse.RIGHT, 0)
    _send(win, "on_mouse_drag", 300, 300, 40, 0, mouse.RIGHT, 0)  # pan 40 px
    _send(win, "on_mouse_release", 340, 300, mouse.RIGHT, 0)
    held = win.camera.target.copy()
    for _ in range(3):
        app.update(0.2)
        win.render_now()
    assert np.array_equal(win.camera.target, held)  # left where the user put it
    _send(win, "on_key_press", key.R, 0)
    win.render_now()
    z = app.frame().positions[0, 2]
    assert held[2] - z > 1.0  # the boxes fell below where the camera was held
    assert win.camera.target[2] == pytest.approx(z, abs=1e-6)  # followed again
    assert win.camera.azimuth_deg == pytest.approx(-60.0)  # the spec's direction


@pytest.mark.parametrize("name", ["top", "chase", "fpv", "orbit", "free"])
def test_camera_flags_choose_the_main_camera(xvfb: str, name: str) -> None:
    from skyswarm.gui.camera import ChaseCamera, FirstPersonCamera, OrbitCamera, TopCamera
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.views import ViewOptions

    spec = CameraSpec(name, distance_m=6.0 if name == "chase" else None, target=5)
    app = _viewer(ViewOptions(spec))
    try:
        app.update(0.1)
        app.main.render_now()
        cam = app.main.camera
        kind = {"top": TopCamera, "chase": ChaseCamera, "fpv": FirstPersonCamera}
        assert isinstance(cam, kind.get(name, OrbitCamera))
        xy, (w, h) = _in_view(app)
        i = app.frame().index_of(5)
        if name == "chase":  # behind UAV 5, looking at it: in the middle of the view
            assert abs(xy[i, 0] - w / 2) < 2 and abs(xy[i, 1] - h / 2) < 2
            eye = np.linalg.inv(cam.view)[:3, 3]
            assert np.linalg.norm(eye - app.frame().positions[i]) == pytest.approx(6.0, abs=0.01)
        if name in ("top", "orbit"):  # --target frames that UAV alone: it is at the centre
            assert abs(xy[i, 0] - w / 2) < 2 and abs(xy[i, 1] - h / 2) < 2
    finally:
        _close(app)


def test_screenshot_key_writes_the_view_to_the_results_directory(xvfb: str, tmp_path) -> None:
    from PIL import Image
    from pyglet.window import key

    from skyswarm.gui.renderer import ROLE_COLORS

    app = _viewer(results_dir=tmp_path / "run")
    try:
        app.update(0.2)
        app.main.render_now()
        _send(app.main, "on_key_press", key.P, 0)
        shots = sorted((tmp_path / "run").glob("screenshot_*.png"))
        assert [p.name for p in shots] == ["screenshot_00000.20s.png"]
        img = np.asarray(Image.open(shots[0]))
        assert img.shape == (720, 1280, 3)
        xy, _ = _in_view(app)
        for x, y in xy:  # every box at its pixel, in its colour
            assert shade_match(img[int(y), int(x)], ROLE_COLORS["body"])
        assert app.main.ctx.error == "GL_NO_ERROR"  # nothing left for pyglet to raise
        _send(app.main, "on_key_press", key.P, 0)  # same time: a second name
        names = sorted(p.name for p in (tmp_path / "run").glob("screenshot_*.png"))
        assert names == ["screenshot_00000.20s-2.png", "screenshot_00000.20s.png"]
        assert "wrote" in app.note
    finally:
        _close(app)


def _magenta(img: np.ndarray) -> np.ndarray:
    """(H, W) bool: pixels the trail colour (magenta) tints: red and blue well above green."""
    rgb = img.astype(int)
    return (rgb[..., 0] - rgb[..., 1] > 40) & (rgb[..., 2] - rgb[..., 1] > 40)


def test_trails_key_draws_each_fall_as_a_fading_line(viewer) -> None:
    from pyglet.window import key

    from skyswarm.gui.trails import TRAIL_EVERY_S

    app, win = viewer, viewer.main
    for _ in range(6):  # 1.2 s of fall: 7 trail points, 10 m down to 2.9 m
        app.update(0.2)
    pts = app.trails()
    assert pts.shape[1] == 0  # off by default
    _send(win, "on_key_press", key.L, 0)
    pts = app.trails()
    assert pts.shape == (9, 7 + 1, 3)  # points at t = 0, 0.2, ..., 1.2 s and now
    assert TRAIL_EVERY_S == 0.2
    assert pts[0, 0, 2] == pytest.approx(10.0)
    assert pts[0, -1, 2] == pytest.approx(10 - 9.81 * 1.2**2 / 2, abs=0.02)
    on = win.screenshot()
    _send(win, "on_key_press", key.L, 0)
    off = win.screenshot()
    _, _, w, h = win.scene_viewport
    # Along each box's trail at t = 1.0 s (5.1 m, 2 m above the box), where the fade from the
    # oldest point (transparent) has reached 5/7 of the trail's alpha.
    mid = pts[:, 5]
    hits = 0
    for x, y in win.camera.project(mid, w, h):
        if 0 <= x < w and 0 <= y < h:
            hits += bool(_magenta(on[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2]).any())
    assert hits >= 7  # the others may be behind a box
    assert not _magenta(off[:, :w]).any()


def test_view_and_replay_take_the_camera_and_layer_flags(capsys) -> None:
    from skyswarm.app.cli import _parser, main
    from skyswarm.app.gui_commands import view_options
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.views import ViewOptions

    argv = ["view", str(DROP), "--camera", "chase", "--target", "3", "--distance", "5"]
    opts = view_options(_parser().parse_args([*argv, "--trails", "--no-inset"]))
    assert opts == ViewOptions(CameraSpec("chase", 5.0, None, None, 3), False, True, 12.0)
    rep = _parser().parse_args(["replay", "RUN", "--camera", "top", "--trails", "30"])
    assert view_options(rep) == ViewOptions(CameraSpec("top"), True, True, 30.0)
    # A bad value: one line naming the option, exit 2, before any window opens.
    assert main(["view", str(DROP), "--trails", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--trails" in err[0] and "> 0" in err[0]


def test_replay_trails_are_the_live_trails(xvfb: str, tmp_path: Path) -> None:
    from skyswarm.app.cli import main
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.player import ReplayApp
    from skyswarm.gui.replay import ReplaySource
    from skyswarm.gui.scene import LiveSource
    from skyswarm.gui.trails import TrailBuffer
    from skyswarm.gui.views import ViewOptions

    assert main(["run", str(DROP), "--duration", "1.5", "--quiet", "--out", str(tmp_path)]) == 0
    sim = Simulator.from_scenario(load_scenario(DROP))
    live, source = TrailBuffer(1.0), LiveSource(sim)
    try:
        live.record(source.frame())
        while sim.time_s < 1.2 - 1e-9:
            sim.step()
            live.record(source.frame())
        want = live.points(source.frame())
    finally:
        sim.close()
    assert want.shape == (9, 5 + 1, 3)  # 1 s of 0.2 s points (0.4 .. 1.2 s), then now
    app = ReplayApp(ReplaySource(tmp_path), options=ViewOptions(CameraSpec(), trails_s=1.0))
    try:
        app.seek(1.2)
        got = app.trails()
        assert got.shape == want.shape
        assert np.allclose(got, want, atol=1e-9)
        assert got[0, 0, 2] == pytest.approx(10 - 9.81 * 0.4**2 / 2, abs=0.01)
    finally:
        app.shutdown()


NOT_LAYERS = {"toggle_help", "toggle_follow", "toggle_pause", "toggle_joystick"}
NOT_LAYERS |= {"toggle_subjective_mode"}  # chase / first person in the subjective window


@pytest.mark.parametrize("command", ["view", "replay"])
def test_every_layer_key_is_on_the_help_overlay_with_a_flag_the_command_takes(
    command: str,
) -> None:
    """Each layer a window toggles by a key (an Action whose method is toggle_*) is a line of
    the help overlay naming its flag, and that flag changes the command's ViewOptions."""
    import re
    from types import SimpleNamespace

    from skyswarm.app.cli import _parser
    from skyswarm.app.gui_commands import view_options
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.player import ReplayApp
    from skyswarm.gui.views import ViewerBase

    actions = (ViewerApp if command == "view" else ReplayApp).actions
    lines = ViewerBase.help_lines(SimpleNamespace(actions=actions))  # type: ignore[arg-type]
    head = [command, str(DROP) if command == "view" else "RUN"]
    base = view_options(_parser().parse_args(head))
    layers = [a for a in actions if a.method.startswith("toggle_") and a.method not in NOT_LAYERS]
    live_only = {"O", "E", "B"} if command == "view" else set()
    expected = {"L", "I", "M", "X", "D", "U", "A"} | live_only
    assert {a.key_label for a in layers} == expected
    for action in layers:
        line = next(x for x in lines if x.split()[0] == action.key_label)
        flag = re.search(r"\((--[a-z-]+)", line)
        assert flag is not None, line
        opts = view_options(_parser().parse_args([*head, flag.group(1)]))
        assert opts != base, (command, flag.group(1))
    assert any(x.split()[:1] == ["P"] and "PNG" in x for x in lines)  # the screenshot key


def test_dead_and_leader_keys_hide_the_fallen_and_the_leader_colour(xvfb: str) -> None:
    """Flocking coverage with UAV 5 killed: its dark body and red ground cross, and the cyan
    leader (UAV 1), are in the 3D view; D hides the dead, U draws the leader in its role's
    colour; the legend follows; D and U again bring both back. --no-dead / --no-leader start
    that way."""
    from pyglet.window import key

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.palette import DEAD, LEADER, role_color
    from skyswarm.gui.renderer import legend_entries
    from skyswarm.gui.views import ViewOptions
    from tests.gui.conftest import near_color

    sim = Simulator.from_scenario(load_scenario(ROOT / "configs" / "flocking_coverage.toml"))
    app = ViewerApp(sim)
    app.session.clock = lambda: 0.0
    try:
        app.update(1.0)
        assert sim.kill(sim.agents[5], "test")
        app.update(0.1)

        def shot() -> tuple[np.ndarray, np.ndarray, Any]:
            app.main.render_now()
            frame = app.frame()
            _, _, w, h = app.main.scene_viewport
            return app.main.screenshot(), app.main.camera.project(frame.positions, w, h), frame

        img, xy, frame = shot()
        dead, lead = xy[frame.index_of(5)], xy[frame.index_of(1)]
        _, _, w, h = app.main.scene_viewport
        cross = app.main.camera.project(frame.positions[[frame.index_of(5)]] * [1, 1, 0], w, h)
        assert near_color(img, *dead, DEAD, 2) and near_color(img, *lead, LEADER, 2)
        assert _red_near(img, cross[0])
        for k in (key.D, key.U):
            _send(app.main, "on_key_press", k, 0)
        img, _, _ = shot()
        assert not near_color(img, *dead, DEAD, 4) and not _red_near(img, cross[0])
        assert not near_color(img, *lead, LEADER, 4)
        assert near_color(img, *lead, role_color("uav", 0), 2)
        shown = frame.shown(app.show_dead, app.show_leader)
        assert [n for n, _ in legend_entries(shown)] == ["base_station", "uav"]
        for k in (key.D, key.U):
            _send(app.main, "on_key_press", k, 0)
        img, _, _ = shot()
        assert near_color(img, *dead, DEAD, 2) and near_color(img, *lead, LEADER, 2)
    finally:
        app.shutdown()
    flagged = ViewerApp(sim, options=ViewOptions(dead=False, leader=False))
    try:
        assert not flagged.show_dead and not flagged.show_leader
    finally:
        flagged.shutdown()
        sim.close()


def _red_near(img: np.ndarray, xy: np.ndarray, r: int = 6) -> bool:
    """Any pixel within `r` of `xy` as red as the dead's ground cross (palette DEAD_CROSS)."""
    x, y = (int(round(v)) for v in xy)
    patch = img[max(0, y - r) : y + r + 1, max(0, x - r) : x + r + 1].astype(int)
    return bool(np.any((patch[..., 0] - patch[..., 1] > 60) & (patch[..., 0] - patch[..., 2] > 60)))
