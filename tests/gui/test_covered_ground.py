"""The ground skipped under the inset map (Renderer.render(covered=)): the inset clears its rect
and draws over it, so the main view's ground and ground overlays there were never seen. The
picture with the ground scissored around the inset is compared, byte for byte, with the one
drawn whole: the video's picture (t = 0, a dead UAV, no UAV alive, coverage quads and area
lines on the ground) and the window's (trails wrapping in their ring, the layers on)."""

from __future__ import annotations

import numpy as np
import pytest


def test_uncovered_tiles_the_viewport_outside_the_covered_rects() -> None:
    """Random viewports and covered rects (inside, across an edge, outside, overlapping):
    the parts cover every pixel outside the covered rects once, and none inside."""
    from skyswarm.gui.renderer import uncovered

    rng = np.random.default_rng(3)
    for _ in range(200):
        vp = (int(rng.integers(0, 20)), int(rng.integers(0, 20)), 60, 40)
        covered = [
            (
                int(rng.integers(-10, 80)),
                int(rng.integers(-10, 60)),
                *map(int, rng.integers(1, 40, 2)),
            )
            for _ in range(int(rng.integers(1, 3)))
        ]
        want = _inside(vp).astype(int)
        for rect in covered:
            want[_inside(rect)] = 0
        got = np.zeros((100, 100), dtype=int)
        for px, py, pw, ph in uncovered(vp, covered):
            assert pw > 0 and ph > 0
            got[py : py + ph, px : px + pw] += 1
        assert np.array_equal(got, want)
    assert uncovered((0, 0, 10, 10), [(20, 20, 5, 5)]) == [(0, 0, 10, 10)]


def _inside(rect: tuple[int, int, int, int]) -> np.ndarray:
    """(100, 100) bool: the pixels (row y, column x) of `rect` (x, y, w, h)."""
    py, px = np.mgrid[0:100, 0:100]
    x, y, w, h = rect
    return (px >= x) & (px < x + w) & (py >= y) & (py < y + h)


def _flight(n: int, t: float, dead: np.ndarray | None = None):  # noqa: ANN202 - a Frame
    """n UAVs and a base station over a field half covered (coverage quads, an area outline
    on the ground), at time t; `dead` (n,) bool: those have fallen where they flew."""
    from skyswarm.gui.overlays import Lines, Quads, rectangle
    from skyswarm.gui.scene import Frame

    i = np.arange(n)
    pos = np.c_[20.0 + 3.0 * i + 2.0 * t, 10.0 + 1.5 * t + (i % 3), np.full(n, 12.0)]
    alive = np.ones(n, dtype=bool) if dead is None else ~dead
    pos[~alive, 2] = 0.0
    q = np.tile([0.0, 0.0, 0.0, 1.0], (n + 1, 1))
    cells = np.stack([rectangle(x, 0.0, x + 4.0, 60.0, 0.01) for x in range(0, 48, 8)])
    area = rectangle(-5.0, -5.0, 80.0, 70.0, 0.02)
    outline = np.stack([area, np.roll(area, -1, axis=0)], axis=1)
    return Frame(
        t, np.r_[i + 1, 100], ["base_station", "uav"], np.r_[np.ones(n, np.intp), 0],
        np.vstack([pos, [[-20.0, -20.0, 0.0]]]), q, np.r_[alive, True],
        overlays=[Quads(cells, (0.3, 0.8, 0.4, 0.4)), Lines(outline, (1.0, 0.85, 0.2, 1.0))],
        hud=["coverage 40.0 %"], leader=np.r_[i == 0, False],
    )  # fmt: skip


@pytest.mark.parametrize(
    ("t", "dead"),
    [(0.0, None), (8.0, np.r_[False, True, False, False, False, False]), (8.0, np.ones(6, bool))],
    ids=["t0", "a dead uav", "none alive"],
)
def test_the_video_picture_with_the_ground_skipped_under_the_inset_is_the_whole_ground(
    monkeypatch, t: float, dead: np.ndarray | None
) -> None:
    """The video's picture (OffscreenCanvas.compose, 960x540: the inset 162 px) with the
    ground and its overlays scissored around the inset is the picture drawn whole, for the
    swarm's follow camera and for a top camera; and the scissors are used (4 parts)."""
    from skyswarm.gui import renderer
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.layout import Layout
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    size = (960, 540)
    frame = _flight(6, t, dead)
    canvas = OffscreenCanvas(Scenery(), size, (30.0, 30.0), 40.0)
    render, parts = renderer.Renderer.render, []

    def whole(self, *args, covered=(), **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        return render(self, *args, **kwargs)

    def counted(viewport, covered):  # noqa: ANN001, ANN202
        parts.append(len(renderer_uncovered(viewport, covered)))
        return renderer_uncovered(viewport, covered)

    renderer_uncovered = renderer.uncovered
    try:
        for spec in (CameraSpec(), CameraSpec("top")):
            keep_out = Layout.of(frame, size).keep_out()
            cam = Director(spec, size, keep_out, frame).update(frame)
            with monkeypatch.context() as m:
                m.setattr(renderer, "uncovered", counted)
                canvas.compose(frame, cam)
                skipped = canvas.read().copy()
            with monkeypatch.context() as m:
                m.setattr(renderer.Renderer, "render", whole)
                canvas.compose(frame, cam)
                drawn = canvas.read().copy()
            assert np.array_equal(skipped, drawn)
        assert parts == [4, 4]  # left of the inset, right of it (the margin), below, above
    finally:
        canvas.release()


def test_the_window_with_the_ground_skipped_under_the_inset_shows_the_whole_ground(
    xvfb: str,
) -> None:
    """The main window (scene, inset map, legend, panel), 300 drones over the covered field
    with 4 s trails whose ring has wrapped, radio links and a dead drone: its screenshot with
    the ground skipped under the inset is the one drawn whole; with the inset hidden (I) the
    window covers nothing."""
    from skyswarm.gui.panel import AgentRow
    from skyswarm.gui.scene import Scenery
    from skyswarm.gui.trails import TRAIL_EVERY_S, TrailBuffer
    from skyswarm.gui.views import ViewerBase, ViewOptions

    n = 300
    dead = np.zeros(n, dtype=bool)
    dead[7] = True
    frame = _flight(n, 0.0, dead)
    trail = TrailBuffer(4.0)
    for k in range(3 * trail.capacity + 5):  # wrapped more than twice
        frame.positions[:n, 0] += 0.4 * TRAIL_EVERY_S * np.cos(0.1 * k)
        frame.positions[:n, 1] += 0.4 * TRAIL_EVERY_S * np.sin(0.1 * k)
        trail.record(frame)
    links = np.c_[
        frame.positions[:n:3], np.tile([0.0, 1.0, 1.0, 1.0], (len(frame.positions[:n:3]), 1))
    ]
    links = np.repeat(links, 2, axis=0).astype(np.float32)
    links[1::2, :3] += [3.0, 0.0, 0.0]

    class Synthetic(ViewerBase):
        source = type("S", (), {"scenery": Scenery()})()

        def frame(self):  # noqa: ANN202
            return frame

        def rows(self) -> list[AgentRow]:
            return [AgentRow(int(i), "uav", "Position", 12.0, 1.0, True) for i in frame.ids]

        def hud_lines(self) -> list[str]:
            return ["t = 0.00 s"]

        def trail_points(self, shown):  # noqa: ANN001, ANN202
            return trail.view(shown)

        def extra_lines(self):  # noqa: ANN202
            return [*super().extra_lines(), links]

    app = Synthetic("covered", (1280, 720), ViewOptions(trails_s=4.0, links=True))
    try:
        win = app.main
        assert len(win.covered(win)) == 1
        skipped = win.screenshot()
        covered, win.covered = win.covered, None
        assert np.array_equal(win.screenshot(), skipped)
        win.covered = covered
        app.toggle_inset()
        assert win.covered(win) == []
    finally:
        app.shutdown()
