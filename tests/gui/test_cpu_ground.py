"""The offscreen pictures' ground painted on the CPU (gui/ground.py) under what OpenGL drew:
the same picture as the ground drawn by `GROUND_FS` through every kind of camera (the video's
follow camera, top, chase, first person, a low orbit with the horizon, fog and the far plane,
the ground quad's edge), with the translucent layers over it (shadows, coverage quads, the
HUD's box) blended as before; a camera that rolls keeps the OpenGL ground."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.gui.test_covered_ground import _flight

SIZE = (960, 540)
# Where the two grounds may differ: the grid's anti-aliased edges (the shader's derivatives are
# the 2x2 block's differences, the CPU's the exact ones: near the horizon, where they change
# fast within a block, a line's edge moves by a fraction of a pixel) and the rounding of a
# premultiplied colour, a few levels; a wrong fog, grid, horizon or blend is tens of levels
# over many pixels.
FAR_OFF_LEVELS = 16
FAR_OFF_SHARE = 0.001
MEAN_LEVELS = 0.3


def _pictures(canvas, frame, cam, monkeypatch) -> tuple[np.ndarray, np.ndarray, list]:  # noqa: ANN001
    """(painted, drawn, the painted frame's ground views): the video's picture of `frame`
    through `cam` with the ground painted on the CPU, and with `ground_view` saying no, so
    the renderer draws it with GROUND_FS as the window does."""
    from skyswarm.gui import renderer

    canvas.compose(frame, cam)
    painted = canvas.read().astype(int)
    views = list(canvas.renderer.ground_views)
    with monkeypatch.context() as m:
        m.setattr(renderer, "ground_view", lambda *a, **k: None)
        canvas.compose(frame, cam)
        drawn = canvas.read().astype(int)
    assert canvas.renderer.ground_views == []
    return painted, drawn, views


def _cameras(frame):  # noqa: ANN001, ANN202
    from skyswarm.gui.camera import ChaseCamera, FirstPersonCamera, OrbitCamera, TopCamera
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.layout import Layout

    keep_out = Layout.of(frame, SIZE).keep_out()
    pose = frame.pose_of(int(frame.ids[0]))
    return {
        "follow": Director(CameraSpec(), SIZE, keep_out, frame).update(frame),
        "top": Director(CameraSpec("top"), SIZE, keep_out, frame).update(frame),
        "chase": ChaseCamera(lambda: pose, 6.0),
        "first person": FirstPersonCamera(lambda: pose),
        # the horizon a third of the way down: sky, fog to the far plane and beyond it
        "low orbit": OrbitCamera((30.0, 30.0, 0.0), 60.0, -30.0, 4.0),
        # the ground quad's edge (20 km from the scene's centre) in the middle of the view
        "top at the edge": TopCamera((30.0 + 20000.0, 30.0), 40.0),
    }


@pytest.mark.parametrize(
    "name", ["follow", "top", "chase", "first person", "low orbit", "top at the edge"]
)
def test_the_painted_ground_is_the_shader_s_ground(monkeypatch, name: str) -> None:
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    frame = _flight(6, 8.0)
    canvas = OffscreenCanvas(Scenery(), SIZE, (30.0, 30.0), 40.0)
    try:
        cam = _cameras(frame)[name]
        painted, drawn, views = _pictures(canvas, frame, cam, monkeypatch)
    finally:
        canvas.release()
    # every camera is level: the CPU paints the ground of the inset map's top view (first:
    # its pixels then cover the main view's) and of the main view
    assert len(views) == 2
    assert views[0].inv_fog == 0.0 and views[0].viewport[2] < SIZE[0] // 4
    assert views[1].viewport == (0, 0, *SIZE)
    diff = np.abs(painted - drawn).max(axis=-1)
    assert (diff > FAR_OFF_LEVELS).mean() < FAR_OFF_SHARE, (name, (diff > FAR_OFF_LEVELS).mean())
    assert diff.mean() < MEAN_LEVELS, (name, diff.mean())
    x, y, w, h = views[0].viewport  # the inset map alone (~5 % of the picture)
    inset = diff[SIZE[1] - y - h : SIZE[1] - y, x : x + w]
    assert (inset > FAR_OFF_LEVELS).mean() < FAR_OFF_SHARE and inset.mean() < MEAN_LEVELS
    # Not two blank pictures: the grid shows (several distinct shades of ground), and both
    # pictures have the same ones where the scene is ground.
    assert len(np.unique(drawn.reshape(-1, 3), axis=0)) > 50
    if name == "top at the edge":  # ground left of the middle, the horizon colour right of it
        from skyswarm.gui.palette import HORIZON

        row = SIZE[1] // 2 + 40  # below the HUD's lines, above the legend
        right = painted[row, SIZE[0] // 2 + 20 : SIZE[0] // 2 + 200]
        assert np.all(np.abs(right - np.round(np.array(HORIZON) * 255)) <= 1)
        left = painted[row, SIZE[0] // 2 - 200 : SIZE[0] // 2 - 20]
        assert np.abs(left - np.round(np.array(HORIZON) * 255)).max() > 40
    if name == "low orbit":  # the sky's gradient at the top, the ground at the bottom
        assert np.abs(painted[5, SIZE[0] // 3] - painted[-5, SIZE[0] // 3]).max() > 40


def test_a_camera_that_rolls_keeps_the_shader_s_ground(monkeypatch) -> None:
    """Rows of a rolled view are not level on the ground: `ground_view` says no, the renderer
    draws the main view's ground itself, and the picture is the shader's byte for byte outside
    the inset map (whose top view the CPU still paints: within the tolerances above)."""
    from skyswarm.gui.camera import FixedCamera, OrbitCamera
    from skyswarm.gui.layout import Layout
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    frame = _flight(6, 8.0)
    orbit = OrbitCamera((30.0, 30.0, 0.0), 60.0, -30.0, 35.0)
    orbit.aspect = SIZE[0] / SIZE[1]
    a = math.radians(12.0)
    roll = np.eye(4)
    roll[:2, :2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    cam = FixedCamera(roll @ orbit.view, orbit.projection, orbit.aspect)
    canvas = OffscreenCanvas(Scenery(), SIZE, (30.0, 30.0), 40.0)
    try:
        painted, drawn, views = _pictures(canvas, frame, cam, monkeypatch)
    finally:
        canvas.release()
    x, y, w, h = Layout.of(frame, SIZE).inset
    assert [v.viewport for v in views] == [(x, SIZE[1] - y - h, w, h)]  # the inset's alone
    outside = np.ones(SIZE[::-1], bool)
    outside[y : y + h, x : x + w] = False
    assert np.array_equal(painted[outside], drawn[outside])
    diff = np.abs(painted - drawn).max(axis=-1)[~outside]
    assert (diff > FAR_OFF_LEVELS).mean() < FAR_OFF_SHARE and diff.mean() < MEAN_LEVELS
    assert diff.max() > 0  # the inset's ground is the CPU's, not the shader's


def test_the_ground_goes_under_each_premultiplied_pixel_rounded() -> None:
    """`_under` for every alpha and ground byte: the pixel's premultiplied channel plus
    (255 - alpha) / 255 of the ground's, rounded to the nearest level; alpha becomes 255."""
    from skyswarm.gui.ground import _under

    a = np.repeat(np.arange(256, dtype=np.uint32), 256)
    g = np.tile(np.arange(256, dtype=np.uint32), 256)
    c = (a * 7) % (a + 1)  # a premultiplied channel: at most alpha
    row = (c | (c << 8) | (c << 16) | (a << 24)).astype(np.uint32)
    ground = (g | ((255 - g) << 8) | (g << 16)).astype(np.uint32)
    _under(row, ground)
    want = lambda gb: c + np.floor((255 - a) * gb / 255 + 0.5).astype(np.uint32)  # noqa: E731
    assert np.array_equal(row & 0xFF, want(g))
    assert np.array_equal((row >> 8) & 0xFF, want(255 - g))
    assert np.array_equal((row >> 16) & 0xFF, want(g))
    assert np.all(row >> 24 == 255)


def test_a_canvas_loads_its_kernels_without_numba_s_context_refresh() -> None:
    """A fresh process drawing and reading a video frame (a render process's start) loads
    the ground's and the colour conversion's cached kernels without numba's context refresh,
    which imports ~300 modules (linear algebra, random generators): ~0.4 s of CPU in each
    render process before its first frame."""
    import subprocess
    import sys
    from pathlib import Path

    code = """
import sys
import numpy as np
from skyswarm.gui import yuv
from skyswarm.gui.camera import OrbitCamera
from skyswarm.gui.offscreen import OffscreenCanvas
from skyswarm.gui.scene import Frame, Scenery, upright
yuv.prepare()
c = OffscreenCanvas(Scenery(), (64, 36))
f = Frame(0.0, np.array([1]), ["uav"], np.zeros(1, int), np.zeros((1, 3)), upright(1),
          np.ones(1, bool))
c.compose(f, OrbitCamera((0.0, 0.0, 0.0), 10.0))
buf = bytearray(64 * 36 * 3 // 2)
c.read_yuv420p_into(buf)
assert any(buf), "a blank frame"
print(sorted(m for m in ("numba.np.linalg", "numba.np.random") if m in sys.modules))
"""
    from skyswarm.gui import ground, yuv

    ground.prepare()  # cached (compiled here if the cache was cold)
    yuv.prepare()
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root.parent, check=True)  # fmt: skip
    assert res.stdout.strip() == "[]", res.stdout
