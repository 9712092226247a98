"""Trails kept on the GPU (gui/trails.py `TrailPass`) draw the picture the line vertices built
in numpy every frame drew (the code before, kept here as `_old_draw_lines`), pixel for pixel:
1,000 trails thinned to MAX_TRAIL_SEGMENTS, a ring that wraps and records between frames
(only the new rows uploaded), points that are not finite, the dead hidden, and a replay's
(N, T, 3) points; with radio links, crosses, drops and the selection drawn around them in the
order they were."""

from __future__ import annotations

import numpy as np
import pytest


def _old_trail_lines(trails: np.ndarray) -> list[np.ndarray]:
    """gui/renderer.py `trail_lines` before TrailPass: line vertices (position + RGBA rows)."""
    from skyswarm.gui.palette import TRAIL
    from skyswarm.gui.trails import MAX_TRAIL_SEGMENTS

    out = []
    for tr in [trails] if trails.ndim == 3 else []:
        n, t = tr.shape[:2]
        stride = -(-n * (t - 1) // MAX_TRAIL_SEGMENTS)
        if stride > 1:
            tr = tr[:, ::-stride][:, ::-1]
            n, t = tr.shape[:2]
        if n == 0 or t < 2:
            continue
        v = np.empty((n, t - 1, 2, 7), dtype=np.float32)
        v[:, :, 0, :3], v[:, :, 1, :3] = tr[:, :-1], tr[:, 1:]
        v[..., 3:6] = TRAIL[:3]
        alpha = np.linspace(0.0, TRAIL[3], t, dtype=np.float32)
        v[:, :, 0, 6], v[:, :, 1, 6] = alpha[:-1], alpha[1:]
        if not np.isfinite(tr).all():
            v = v[np.isfinite(v[..., :3]).all(axis=(2, 3))]
        out.append(v.reshape(-1, 7))
    return out


def _old_draw_lines(self, frame, selected, trails, extra=()) -> None:  # noqa: ANN001
    """Renderer._draw_lines before TrailPass: every line in one batch, trails from points."""
    import moderngl

    from skyswarm.gui.drones import colored
    from skyswarm.gui.overlays import ground_cross
    from skyswarm.gui.palette import DEAD_CROSS, DEAD_CROSS_M, SELECTED
    from skyswarm.gui.trails import TrailRing

    if isinstance(trails, TrailRing):
        trails = trails.points()
    lines = list(extra)
    dead = ~frame.alive & np.all(np.isfinite(frame.positions), axis=1)
    if dead.any():
        cross = ground_cross(frame.positions[dead, :2], DEAD_CROSS_M)
        lines.append(colored(cross.reshape(-1, 3), DEAD_CROSS))
    lines += _old_trail_lines(trails) if trails is not None else []
    lines += self._station_drops(frame)
    pose = frame.pose_of(selected)
    if pose is not None and np.all(np.isfinite(pose[0])):
        p = pose[0]
        lines.append(colored(np.array([p, [p[0], p[1], 0.0]]), SELECTED))
    self.flat.draw("lines", lines, moderngl.LINES)


def _flock(n: int, seed: int = 0):  # noqa: ANN202 - a Frame and per-drone arcs
    """n drones on a grid 3 m apart at 4-16 m, each flying level at 2 m/s on an arc of its
    own heading and turn rate (up to 0.3 rad/s); base station last when asked."""
    from skyswarm.gui.scene import Frame

    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    base = np.c_[(i % side) * 3.0, (i // side) * 3.0, rng.uniform(4.0, 16.0, n)]
    heading, turn = rng.uniform(0, 2 * np.pi, n), rng.uniform(-0.3, 0.3, n)
    q = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))
    frame = Frame(0.0, i + 1, ["uav"], np.zeros(n, np.intp), base.copy(), q, np.ones(n, bool))

    def move(t: float) -> None:
        ang = heading + turn * t
        frame.time_s = t
        frame.positions[:, 0] = base[:, 0] + 2.0 / turn * (np.sin(ang) - np.sin(heading))
        frame.positions[:, 1] = base[:, 1] - 2.0 / turn * (np.cos(ang) - np.cos(heading))

    return frame, move


def _links(frame):  # noqa: ANN001, ANN202 - line vertices of 2 links per drone, 1 in 8 lost
    from skyswarm.core.comms.fates import DELIVERED, LOST
    from skyswarm.core.comms.links import RadioLinks
    from skyswarm.gui.links import link_lines

    ids = np.repeat(frame.ids, 2)
    to = np.roll(ids, 3)
    fate = np.where(np.arange(len(ids)) % 8 == 5, LOST, DELIVERED)
    return link_lines(frame, RadioLinks(ids, to, ids % 3, fate, 0 * ids))


@pytest.fixture(scope="module")
def canvas():  # noqa: ANN201
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    c = OffscreenCanvas(Scenery(), (640, 360))
    yield c
    c.release()


def _pictures(canvas, frame, cam, trails, monkeypatch, selected=None):  # noqa: ANN001, ANN202
    """(new, old): the frame drawn with TrailPass, then with the line vertices of before."""
    from skyswarm.gui import renderer

    def picture() -> np.ndarray:
        canvas.fbo.use()
        r = canvas.renderer
        r.render(frame, cam, (0, 0, *canvas.size), selected, trails=trails, extra=_links(frame))
        return canvas.read().copy()

    new = picture()
    with monkeypatch.context() as m:
        m.setattr(renderer.Renderer, "_draw_lines", _old_draw_lines)
        old = picture()
    return new, old


def _cameras(frame, size):  # noqa: ANN001, ANN202
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.layout import Layout

    default = Director(CameraSpec(), size, Layout.of(frame, size).keep_out(), frame).update(frame)
    close = OrbitCamera(tuple(frame.positions[0]), distance=15.0, elevation_deg=30.0)
    return default, close


def test_a_thousand_trails_kept_on_the_gpu_are_the_line_vertices_pixels(
    canvas, monkeypatch
) -> None:
    """1,000 drones, 12 s trails (60 points each, thinned to every 3rd: 20,000 segments),
    recorded live into a ring that wraps: each of 14 frames (a point kept every 6th: rows
    uploaded one by one, the segments rebuilt) through the default framing and a close camera
    is the old picture byte for byte; and the trails are in it (off, it differs)."""
    from skyswarm.gui.trails import TRAIL_EVERY_S, TrailBuffer

    frame, move = _flock(1000)
    buf = TrailBuffer(12.0)
    t = 0.0
    while t < 14.0:  # 70 points: the 60-row ring has wrapped
        move(t)
        buf.record(frame)
        t += TRAIL_EVERY_S
    for k in range(14):
        move(t + k / 30)
        buf.record(frame)
        ring = buf.view(frame)
        assert ring is not None and ring.count > len(ring.ring)
        default, close = _cameras(frame, canvas.size)
        for cam in (default, close) if k % 6 == 0 else (default,):
            new, old = _pictures(canvas, frame, cam, ring, monkeypatch)
            assert np.array_equal(new, old), (k, np.abs(new.astype(int) - old).max())
        assert canvas.renderer.trail_pass.segments == 20_000
    with_trails, _ = _pictures(canvas, frame, default, ring, monkeypatch)
    bare, _ = _pictures(canvas, frame, default, None, monkeypatch)
    assert (bare != with_trails).any(axis=2).sum() > 5_000


def test_points_not_finite_and_the_dead_hidden_draw_what_the_old_lines_drew(
    canvas, monkeypatch
) -> None:
    """300 drones, 4 s trails: some lost their position for a few points (NaN rows in the
    ring), some have none now, a tenth are dead and hidden; the segments with an end not
    finite are left out as before, the hidden agents' trails are not drawn, and a buffer that
    starts anew (a reset: a new epoch) is uploaded whole. Byte for byte the old picture."""
    from skyswarm.gui.trails import TRAIL_EVERY_S, TrailBuffer

    frame, move = _flock(300, seed=3)
    buf = TrailBuffer(4.0)
    t = 0.0
    height = frame.positions[:, 2].copy()
    lost = np.where(np.arange(300) % 7 == 0, np.nan, 1.0)
    for k in range(30):
        move(t)
        frame.positions[:, 2] = height * (lost if 10 <= k < 13 else 1.0)  # every 7th: 3 points
        buf.record(frame)
        t += TRAIL_EVERY_S
    move(t)
    frame.positions[:, 2] = height
    frame.positions[5::50, 2] = np.inf  # no position now
    frame.alive[::10] = False
    ring = buf.view(frame)
    assert ring is not None
    default, close = _cameras(_flock(300, seed=3)[0], canvas.size)
    for trails in (ring, ring.only(frame.alive)):
        for cam in (default, close):
            new, old = _pictures(canvas, frame, cam, trails, monkeypatch, selected=4)
            assert np.array_equal(new, old)
    counts = []
    for trails in (ring, ring.only(frame.alive)):
        _pictures(canvas, frame, default, trails, monkeypatch)
        counts.append(canvas.renderer.trail_pass.segments)
    # 20 segments a trail (20 points kept, then now), less those with an end lost: the first 3
    # of every 7th agent's (its 3 oldest points), the last of every 50th's (no position now)
    assert counts[0] == 300 * 20 - 43 * 3 - 6
    assert counts[1] == counts[0] - (30 * 20 - 5 * 3)  # the dead: rows 0, 10, ..., 290
    buf.clear()  # a reset: the same rows, another epoch, uploaded whole
    for k in range(4):
        move(t + k * TRAIL_EVERY_S)
        buf.record(frame)
    again = buf.view(frame)
    assert again is not None and again.epoch != ring.epoch
    new, old = _pictures(canvas, frame, default, again, monkeypatch)
    assert np.array_equal(new, old)


def test_a_replays_points_draw_the_live_rings_pixels(canvas, monkeypatch) -> None:
    """The replay hands (N, T, 3) points (gui/player.py, `recorded_trail`): drawn through the
    same pass (uploaded whole each frame), they give the live TrailRing's picture and the old
    lines' picture; and a ring drawn again after another ring in the same renderer is
    re-uploaded (its epoch changed in between)."""
    from skyswarm.gui.trails import TRAIL_EVERY_S, TrailBuffer

    frame, move = _flock(500, seed=5)
    buf = TrailBuffer(12.0)
    for k in range(40):
        move(k * TRAIL_EVERY_S)
        buf.record(frame)
    move(40 * TRAIL_EVERY_S - 0.1)
    ring = buf.view(frame)
    assert ring is not None
    points = ring.points()
    assert points.shape == (500, 41, 3)
    cam = _cameras(frame, canvas.size)[0]
    live, old = _pictures(canvas, frame, cam, ring, monkeypatch)
    replay, _ = _pictures(canvas, frame, cam, points, monkeypatch)
    assert np.array_equal(live, old) and np.array_equal(replay, live)
    again, _ = _pictures(canvas, frame, cam, ring, monkeypatch)
    assert np.array_equal(again, live)


def test_ring_points_are_the_buffers_points_oldest_first() -> None:
    """TrailRing.points: the kept points oldest first, then now, for a ring not yet full and
    one that wrapped; `only` keeps the shown agents' rows; of_points gives the points back."""
    from skyswarm.gui.scene import Frame
    from skyswarm.gui.trails import TRAIL_EVERY_S, TrailBuffer, TrailRing

    ids = np.array([4, 9, 2])
    frame = Frame(0.0, ids, ["uav"], np.zeros(3, np.intp), np.zeros((3, 3)),
                  np.tile([0.0, 0, 0, 1], (3, 1)), np.ones(3, bool))  # fmt: skip
    buf = TrailBuffer(3 * TRAIL_EVERY_S)  # 3 rows
    for k in range(5):
        frame.time_s, frame.positions[:, 0] = k * TRAIL_EVERY_S, k + np.arange(3) * 10.0
        buf.record(frame)
    frame.positions[:, 0] = 99.0
    ring = buf.view(frame)
    assert ring is not None and ring.count == 5 and ring.kept == 3
    assert ring.rows().tolist() == [2, 0, 1]
    pts = ring.points()
    assert pts[:, :, 0].tolist() == [[2, 3, 4, 99], [12, 13, 14, 99], [22, 23, 24, 99]]
    assert np.array_equal(buf.points(frame), pts)
    assert ring.only(np.array([True, False, True])).points()[:, 0, 0].tolist() == [2, 22]
    back = TrailRing.of_points(pts)
    assert np.array_equal(back.points(), pts) and back.epoch != ring.epoch
    with pytest.raises(ValueError, match="trail points"):
        TrailRing.of_points(np.zeros((3, 0, 3)))


def test_trails_growing_from_the_first_point_draw_the_old_pixels(canvas, monkeypatch) -> None:
    """A run's first seconds: the ring not yet full, a point kept every frame (each upload one
    new row, the segments rebuilt), hidden for two frames and shown again (the rows recorded
    meanwhile uploaded at once): every frame the old picture, byte for byte."""
    from skyswarm.gui.trails import TRAIL_EVERY_S, TrailBuffer

    frame, move = _flock(200, seed=9)
    buf = TrailBuffer(12.0)
    cam = _cameras(frame, canvas.size)[1]
    for k in range(9):
        move(k * TRAIL_EVERY_S)
        buf.record(frame)
        ring = buf.view(frame)
        assert ring is not None and ring.count == k + 1 < len(ring.ring)
        if k in (4, 5):
            continue  # trails hidden (the L key): nothing drawn, nothing uploaded
        new, old = _pictures(canvas, frame, cam, ring, monkeypatch)
        assert np.array_equal(new, old), k
        assert canvas.renderer.trail_pass.segments == 200 * (k + 1)
