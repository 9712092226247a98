"""Issue 32 in the live view (gui/sensor_views.py): a UAV's camera as a picture-in-picture
(key E, `view --camera-pip`) and the lidar beams drawn (key B, `view --lidar`), under Xvfb."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT

FIELD = ROOT / "configs" / "obstacle_field.toml"  # six UAVs, a 32-beam lidar, walls and pillars
CAMERA = [
    "uav.sensors.camera.enabled=true", "uav.sensors.camera.width=32",
    "uav.sensors.camera.height=24", "uav.sensors.camera.period_s=0.05",
]  # fmt: skip


def _press(win: Any, symbol: int) -> None:
    win.dispatch_event("on_key_press", symbol, 0)
    win.dispatch_pending_events()


@pytest.fixture
def field(xvfb: str) -> Iterator[Any]:
    """The obstacle field with a 32 x 24 camera on every UAV, 0.3 s in (sensors sampled)."""
    import skyswarm.gui.sensor_camera  # noqa: F401 - registers the `egl` camera renderer
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp

    sim = Simulator.from_scenario(load_scenario(FIELD, CAMERA))
    sim.run(until_s=0.3)
    app = ViewerApp(sim)
    yield app
    app.shutdown()
    sim.close()


def _yellow(img: np.ndarray) -> np.ndarray:
    c = img.astype(int)
    return (c[..., 0] > 170) & (c[..., 1] > 160) & (c[..., 2] < 110)


def test_lidar_key_draws_each_beam_to_its_hit(field: Any) -> None:
    from pyglet.window import key

    from skyswarm.gui.sensor_views import BEAM_HIT, BEAM_MISS

    app, win = field, field.main
    assert app.extra_lines() == []
    off = win.screenshot()
    _press(win, key.B)
    lines = app.extra_lines()
    lidar = app.session.sim.agents[1].swarm.sensors.sensor("lidar")
    rows = np.concatenate(lines)
    assert len(rows) == 2 * 6 * 32  # six UAVs x 32 beams, two vertices each
    hits = np.concatenate([b for b in lines if np.allclose(b[0, 3:], BEAM_HIT)])
    misses = [b for b in lines if np.allclose(b[0, 3:], BEAM_MISS)]
    n_hit = int(np.isfinite(lidar.ranges).sum())
    assert len(hits) == 2 * n_hit and n_hit > 0
    # Each hit beam ends at origin + direction x range (float32 vertices).
    ok = np.isfinite(lidar.ranges)
    ends = (lidar.origins[:, None, :] + lidar.directions * lidar.ranges[..., None])[ok]
    np.testing.assert_allclose(hits[1::2, :3], ends, atol=1e-4)
    np.testing.assert_allclose(hits[0::2, :3], np.repeat(lidar.origins, 32, 0)[ok.ravel()], 1e-5)
    if misses:  # a miss reaches max_range_m
        m = np.concatenate(misses)
        length = np.linalg.norm(m[1::2, :3] - m[0::2, :3], axis=1)
        np.testing.assert_allclose(length, lidar.cfg.max_range_m, rtol=1e-5)
    on = win.screenshot()
    assert _yellow(on).sum() > _yellow(off).sum() + 300
    # With a UAV selected, its beams only.
    app.select(3)
    assert len(np.concatenate(app.extra_lines())) == 2 * 32


def test_camera_key_shows_the_selected_uav_s_camera_bottom_right(field: Any) -> None:
    from pyglet.window import key

    from skyswarm.gui.sensor_views import CAPTION_PX, PIP_WIDTH_PX, depth_grey

    app, win = field, field.main
    assert app.pip_image() is None
    _press(win, key.E)
    app.select(4)
    image = app.pip_image()
    cam = app.session.sim.agents[4].swarm.sensors.sensor("camera")
    k = PIP_WIDTH_PX // 32  # 6: each 32 x 24 image scaled to 192 x 144
    assert image.shape == (CAPTION_PX + 24 * k, 2 * 32 * k, 4)
    row = app.session.sim.agents[4].index
    np.testing.assert_array_equal(image[CAPTION_PX::k, : 32 * k : k, :3], cam.rgb[row])
    grey = depth_grey(cam.depth[row], cam.cfg.max_depth_m)
    np.testing.assert_array_equal(image[CAPTION_PX::k, 32 * k :: k, 0], grey)
    assert np.isfinite(cam.depth[row]).mean() > 0.3  # it sees the ground ahead and below
    shot = win.screenshot()
    _, _, sw, sh = win.scene_viewport
    h, w = image.shape[:2]
    x, y = sw - w - 8, shot.shape[0] - h - 8
    # The opaque image part of the picture-in-picture is on screen exactly.
    np.testing.assert_array_equal(
        shot[y + CAPTION_PX : y + h, x : x + w], image[CAPTION_PX:, :, :3]
    )
    _press(win, key.E)
    assert app.pip_image() is None


def test_view_flags_switch_both_on(capsys: pytest.CaptureFixture[str]) -> None:
    from skyswarm.app.cli import _parser
    from skyswarm.app.gui_commands import view_options

    opts = view_options(_parser().parse_args(["view", str(FIELD), "--camera-pip", "--lidar"]))
    assert opts.sensor_camera and opts.lidar
    plain = view_options(_parser().parse_args(["view", str(FIELD)]))
    assert not plain.sensor_camera and not plain.lidar
    rep = view_options(_parser().parse_args(["replay", "RUN"]))
    assert not rep.sensor_camera and not rep.lidar  # a recording holds no scans or images


def test_depth_grey_edges() -> None:
    from skyswarm.gui.sensor_views import DEPTH_FAR, DEPTH_NEAR, depth_grey

    d = np.array([[0.0, 50.0, 100.0, 200.0, np.inf, np.nan]])
    g = depth_grey(d, 100.0)
    assert g.tolist() == [[DEPTH_NEAR, (DEPTH_NEAR + DEPTH_FAR) / 2, DEPTH_FAR, DEPTH_FAR, 0, 0]]


def test_run_frames_show_the_target_s_beams_and_camera(tmp_path: Path) -> None:
    """`run --frames --lidar --camera-pip --target 3`: the render processes draw UAV 3's beams
    and its camera bottom right, as the recorded frame shows them; without the flags, neither."""
    from PIL import Image

    from skyswarm.app.cli import main
    from skyswarm.gui.sensor_views import CAPTION_PX, PIP_WIDTH_PX

    shots = {}
    for flags in ((), ("--lidar", "--camera-pip")):
        out, run = tmp_path / f"f{len(flags)}", tmp_path / f"r{len(flags)}"
        args = [
            "run", str(FIELD), "--duration", "0.5", "--quiet", "--out", str(run),
            "--frames", str(out), "--fps", "4", "--size", "960x540", "--camera", "chase",
            "--target", "3", "--distance", "6", *[a for c in CAMERA for a in ("--set", c)], *flags,
        ]  # fmt: skip
        assert main(args) == 5  # the time limit, short of the goals
        pngs = sorted(out.glob("frame_*.png"))
        assert len(pngs) == 2  # 0.5 s x 4 fps
        shots[bool(flags)] = np.asarray(Image.open(pngs[-1]).convert("RGB"))
    on, off = shots[True], shots[False]
    assert _yellow(on).sum() > _yellow(off).sum() + 200  # the beams
    k = PIP_WIDTH_PX // 32
    h, w = CAPTION_PX + 24 * k, 64 * k
    x, y = 960 - w - 8, 540 - h - 8
    band = on[y + 2 : y + CAPTION_PX - 2, x + 2 : x + w - 2].astype(int)
    assert band.mean() < 90  # the caption's dark band (with its white text)
    diff = np.abs(on[y : y + h, x : x + w].astype(int) - off[y : y + h, x : x + w]).max(axis=-1)
    assert (diff > 30).mean() > 0.5
