"""What the window's frame no longer redoes (docs/performance.md, Window), without changing the
picture: the shadow discs drawn again for the inset map from the main view's upload, and the
panel's buttons pasted from the last refresh while their labels are the same. Each cached
picture is compared with the same picture drawn from scratch, pixel for pixel. And what it
draws more cheaply: blob shadows as one quad per drone (against the triangle fans they
replaced, within 3 levels), the opaque panel copied instead of blended (the same bytes)."""

from __future__ import annotations

import numpy as np


def _swarm(n: int, seed: int = 0):  # noqa: ANN202 - a Frame
    from skyswarm.gui.scene import Frame

    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    pos = np.c_[(i % side) * 3.0, (i // side) * 3.0, 10.0 + rng.uniform(-1, 1, n)]
    q = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))
    return Frame(0.0, i + 1, ["uav"], np.zeros(n, np.intp), pos, q, np.ones(n, bool))


def test_shadows_reused_by_the_inset_draw_the_picture_drawn_from_scratch() -> None:
    """A 400-drone frame with the inset map: the canvas that reuses the shadow upload (main
    view, then inset, then the same frame again) gives the bytes of a fresh canvas; after the
    drones move (in place, as a live frame's copy would not, and the bench's does) the discs
    are rebuilt: again the fresh canvas's bytes, and not the old picture."""
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.layout import Layout
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    size = (640, 360)
    frame = _swarm(400)

    def picture(canvas: OffscreenCanvas) -> np.ndarray:
        layout = Layout.of(frame, size)
        cam = Director(CameraSpec(), size, layout.keep_out(), frame).update(frame)
        canvas.compose(frame, cam)
        return canvas.read().copy()

    kept = OffscreenCanvas(Scenery(), size)
    try:
        first, again = picture(kept), picture(kept)
        fresh = OffscreenCanvas(Scenery(), size, ctx=kept.ctx)
        assert np.array_equal(first, again) and np.array_equal(first, picture(fresh))
        frame.positions[:, :2] += 0.7  # every drone moves: new discs
        moved = picture(kept)
        fresh = OffscreenCanvas(Scenery(), size, ctx=kept.ctx)
        assert np.array_equal(moved, picture(fresh)) and not np.array_equal(moved, first)
    finally:
        kept.release()


def test_the_panels_kept_buttons_are_the_buttons_drawn_from_scratch() -> None:
    from skyswarm.gui.app import ACTIONS
    from skyswarm.gui.panel import AgentRow, Button, Panel

    buttons = [Button(a.button, a.method) for a in ACTIONS if a.button]
    rows = [AgentRow(i, "uav", "Position", 6.0 + i / 7, 1.5, i % 4 != 0) for i in range(40)]
    hud = ["t = 12.00 s", "alive 30/40"]
    labels = [b.label for b in buttons]

    def draw(panel: Panel, names: list[str]) -> np.ndarray:
        return panel.render(720, hud, rows, 3, ["agent 3  uav  alive"], "", False, 40, names)

    kept = Panel(buttons)
    first, again = draw(kept, labels), draw(kept, labels)
    assert np.array_equal(first, again) and np.array_equal(first, draw(Panel(buttons), labels))
    pause = ["Pause" if n == "Start" else n for n in labels]  # a button's label changes
    changed = draw(kept, pause)
    assert np.array_equal(changed, draw(Panel(buttons), pause))
    assert not np.array_equal(changed, first)
    short = Panel(buttons)  # a window shorter than the buttons: the strip is cut the same way
    assert np.array_equal(
        short.render(30, hud, rows, None), Panel(buttons).render(30, hud, rows, None)
    )
    assert np.array_equal(
        short.render(30, hud, rows, None), Panel(buttons).render(30, hud, rows, None)
    )


def test_rows_drawn_from_word_tiles_are_the_rows_drawn_whole() -> None:
    """2,000 agent rows (ids 0-19,999, every role and mode width, altitudes and speeds of every
    sign and size, alive and dead, selected or not) drawn word by word from the kept tiles,
    twice (tiles made, then reused), are the pixels of one `draw.text` per row."""
    from PIL import Image, ImageDraw

    from skyswarm.gui.panel import BG, DEAD_FG, FG, HILITE, PANEL_W, AgentRow, WordTiles
    from skyswarm.gui.text import LINE_PX, PAD_PX, font

    rng = np.random.default_rng(7)
    modes = ["Position", "GroundSpeedAltitudeAndHeading", "Attitude", "Manual", "-", "HOVER"]
    roles = ["uav", "base_station", "body", "scout_leader"]
    rows = [
        AgentRow(
            int(rng.integers(0, 20_000)),
            str(rng.choice(roles)),
            str(rng.choice(modes)),
            float(rng.uniform(-50, 2000)),
            float(rng.uniform(0, 99)),
            bool(rng.random() < 0.8),
        )  # fmt: skip
        for _ in range(2000)
    ]
    looks = [(FG if r.alive else DEAD_FG, HILITE if k % 7 == 0 else BG) for k, r in enumerate(rows)]
    size = (PANEL_W, LINE_PX * len(rows))

    def whole() -> np.ndarray:
        img = Image.new("RGBA", size, BG)
        draw = ImageDraw.Draw(img)
        for k, (row, (fill, bg)) in enumerate(zip(rows, looks)):
            draw.rectangle((0, k * LINE_PX, PANEL_W, (k + 1) * LINE_PX - 1), fill=bg)
            draw.text((PAD_PX, k * LINE_PX), row.text(), font=font(), fill=fill)
        return np.asarray(img)

    tiles = WordTiles()

    def tiled() -> np.ndarray:
        img = Image.new("RGBA", size, BG)
        draw = ImageDraw.Draw(img)
        for k, (row, (fill, bg)) in enumerate(zip(rows, looks)):
            draw.rectangle((0, k * LINE_PX, PANEL_W, (k + 1) * LINE_PX - 1), fill=bg)
            tiles.draw(img, draw, (PAD_PX, k * LINE_PX), row.text(), fill, bg)
        return np.asarray(img)

    want = whole()
    assert np.array_equal(tiled(), want)  # tiles made
    assert np.array_equal(tiled(), want)  # tiles reused


def test_the_window_clearing_all_at_once_shows_what_clearing_its_scene_showed(
    xvfb: str, monkeypatch
) -> None:
    """The main window (scene + opaque panel) clears its whole framebuffer, not the scene's
    viewport (a scissored clear is a quad on llvmpipe): its screenshot, 200 drones with trails,
    is the one a viewport-only clear gives."""
    from skyswarm.gui import renderer
    from skyswarm.gui.panel import AgentRow
    from skyswarm.gui.scene import Scenery
    from skyswarm.gui.views import ViewerBase, ViewOptions

    frame = _swarm(200)
    trail = frame.positions[:, None, :] + np.linspace(-4, 0, 20)[None, :, None] * [1, 0, 0]

    class Synthetic(ViewerBase):
        source = type("S", (), {"scenery": Scenery()})()

        def frame(self):  # noqa: ANN202
            return frame

        def rows(self) -> list[AgentRow]:
            return [AgentRow(int(i), "uav", "Position", 10.0, 1.0, True) for i in frame.ids]

        def hud_lines(self) -> list[str]:
            return ["t = 0.00 s"]

        def trail_points(self, shown):  # noqa: ANN001, ANN202
            return trail

    app = Synthetic("clear", (960, 540), ViewOptions(trails_s=4.0))
    try:
        at_once = app.main.screenshot()
        begin = renderer.Renderer._begin

        def viewport_only(self, camera, viewport, clear, clear_all=False, later=False):  # noqa: ANN001, ANN202
            return begin(self, camera, viewport, clear, False, later)

        monkeypatch.setattr(renderer.Renderer, "_begin", viewport_only)
        assert np.array_equal(app.main.screenshot(), at_once)
    finally:
        app.shutdown()


def _fan_shadows(pass_, frame) -> None:  # noqa: ANN001 - a DronePass, a Frame
    """The blob shadows as drawn before gui/drones.py `ShadowDiscs`: a 16-triangle fan per
    agent, alpha at the centre, 0 on the rim (the reference the quads are held to)."""
    import moderngl

    from skyswarm.gui.palette import SHADOW_ALPHA, SHADOW_FADE_M

    ok = frame.alive & np.all(np.isfinite(frame.positions), axis=1) & frame.mobile
    pos = frame.positions[ok]
    radii = pass_.agent_radii(frame)[ok] * 1.1
    alpha = SHADOW_ALPHA / (1.0 + 2.0 * np.maximum(pos[:, 2], 0.0) / SHADOW_FADE_M)
    ang = np.linspace(0.0, 2 * np.pi, 17)
    ring = np.c_[np.cos(ang), np.sin(ang)]
    rim = pos[:, None, :2] + radii[:, None, None] * ring[None]
    data = np.zeros((len(pos), 16, 3, 7), dtype=np.float32)
    data[:, :, 0, :2], data[:, :, 1, :2], data[:, :, 2, :2] = (
        pos[:, None, :2],
        rim[:, :-1],
        rim[:, 1:],
    )
    data[..., 2] = 0.01
    data[:, :, 0, 6] = alpha[:, None]
    pass_.flat.draw("fan", [data.reshape(-1, 7)], moderngl.TRIANGLES)


def test_shadow_quads_draw_the_layers_on_frame_the_triangle_fans_drew(monkeypatch) -> None:
    """The window's frame with trails and radio links on, 400 drones at 2-30 m, through the
    default framing and a close camera (shadows ~40 px across): blob shadows as one instanced
    quad per drone (2 triangles) against the 16-triangle fans they replaced differ by at most 3
    levels of 255 in any pixel (the fan's rim is a 16-gon: its alpha is within 2 % of the
    disc's), while the shadows themselves change the picture by far more."""
    from skyswarm.core.comms.fates import DELIVERED
    from skyswarm.core.comms.links import RadioLinks
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.drones import DronePass
    from skyswarm.gui.layout import Layout
    from skyswarm.gui.links import link_lines
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    size = (640, 360)
    frame = _swarm(400)
    frame.positions[:, 2] = np.linspace(2.0, 30.0, 400)
    back = np.linspace(-8.0, 0.0, 41)  # 8 m trails behind each drone
    trails = frame.positions[:, None, :] + back[None, :, None] * [1.0, 0.3, 0.0]
    ids = frame.ids
    links = link_lines(
        frame, RadioLinks(ids, np.roll(ids, 1), 0 * ids, 0 * ids + DELIVERED, 0 * ids)
    )
    default = Director(CameraSpec(), size, Layout.of(frame, size).keep_out(), frame).update(frame)
    close = OrbitCamera(tuple(frame.positions[0]), distance=12.0, elevation_deg=35.0)
    canvas = OffscreenCanvas(Scenery(), size)

    def picture(cam) -> np.ndarray:  # noqa: ANN001
        canvas.fbo.use()
        canvas.renderer.render(frame, cam, (0, 0, *size), trails=trails, extra=links)
        return canvas.read().astype(int)

    try:
        for cam in (default, close):
            quads = picture(cam)
            monkeypatch.setattr(DronePass, "draw_shadows", _fan_shadows)
            fans = picture(cam)
            monkeypatch.setattr(DronePass, "draw_shadows", lambda self, frame: None)
            bare = picture(cam)
            monkeypatch.undo()
            assert np.abs(quads - fans).max() <= 3, np.abs(quads - fans).max()
            assert np.abs(fans - bare).max() > 20  # the shadows are in the picture
    finally:
        canvas.release()


def test_an_opaque_image_is_copied_to_the_pixels_blending_gave() -> None:
    """The panel (opaque) is drawn without blending: the same bytes as blending it; an image
    with translucent pixels (the legend, the HUD) still blends."""
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    size = (320, 180)
    canvas = OffscreenCanvas(Scenery(), size)
    rng = np.random.default_rng(1)
    opaque = rng.integers(0, 256, (100, 90, 4), dtype=np.uint8)
    opaque[..., 3] = 255
    glass = opaque.copy()
    glass[..., 3] = 128
    r = canvas.renderer
    try:
        for img in (opaque, glass):
            frame = _swarm(4)
            canvas.render(frame, _camera_over(frame))
            r.draw_image(img, 30, 40, size)
            copied = canvas.read().copy()
            canvas.render(frame, _camera_over(frame))
            r.draw_image(img.copy(), 30, 40, size)  # a new object: uploaded and checked again
            again = canvas.read().copy()
            assert np.array_equal(copied, again)
            patch = copied[40:140, 30:120]
            if img is opaque:
                assert np.array_equal(patch, img[..., :3])  # blending at alpha 1 gave this
            else:
                assert not np.array_equal(patch, img[..., :3])  # blended over the scene
    finally:
        canvas.release()


def _camera_over(frame):  # noqa: ANN001, ANN202 - a Frame, a Camera
    from skyswarm.gui.camera import OrbitCamera

    return OrbitCamera(tuple(frame.positions.mean(axis=0)), distance=20.0, elevation_deg=40.0)


def _old_link_lines(frame, links) -> list[np.ndarray]:  # noqa: ANN001
    """gui/links.py `link_lines` before it built float32 rows directly (the reference)."""
    from skyswarm.core.comms.fates import DELIVERED
    from skyswarm.gui.drones import colored
    from skyswarm.gui.links import CHANNEL_COLORS, LINK_LOST

    if len(links.sender) == 0 or len(frame.ids) == 0:
        return []
    order = np.argsort(frame.ids)
    ids = frame.ids[order]

    def rows(agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.minimum(np.searchsorted(ids, agent_ids), len(ids) - 1)
        return order[k], ids[k] == agent_ids

    s, s_ok = rows(links.sender)
    r, r_ok = rows(links.receiver)
    ok = s_ok & r_ok
    ends = np.stack([frame.positions[s[ok]], frame.positions[r[ok]]], axis=1)
    delivered = links.fate[ok] == DELIVERED
    out = []
    if delivered.any():
        v = colored(ends[delivered].reshape(-1, 3), CHANNEL_COLORS[0])
        palette = np.asarray(CHANNEL_COLORS, dtype=np.float32)
        v[:, 3:] = np.repeat(palette[links.channel[ok][delivered] % len(palette)], 2, axis=0)
        out.append(v)
    if (~delivered).any():
        out.append(colored(ends[~delivered].reshape(-1, 3), LINK_LOST))
    return out


def test_link_vertices_built_in_float32_are_the_old_ones() -> None:
    """Radio link vertices built straight into float32 rows (gui/links.py) are the rows the
    old code built, byte for byte and in the same order (so the same pixels): 300 random
    cases of ids numbered 1..N, offset, shuffled and sparse; links to unknown ids (0, -3,
    beyond the last), every fate, 7 channels (4 colours, cycled), positions not finite."""
    from skyswarm.core.comms.links import RadioLinks
    from skyswarm.gui.links import agent_rows, link_lines
    from skyswarm.gui.scene import Frame

    rng = np.random.default_rng(0)
    for case in range(300):
        n = int(rng.integers(1, 60))
        ids = [np.arange(1, n + 1), rng.permutation(n) * 3 + 7, np.arange(5, 5 + n)][case % 3]
        pos = rng.normal(size=(n, 3)) * 100
        if case % 5 == 0:
            pos[rng.integers(0, n)] = np.nan
        frame = Frame(0.0, ids, ["uav"], np.zeros(n, np.intp), pos,
                      np.tile([0.0, 0, 0, 1], (n, 1)), np.ones(n, bool))  # fmt: skip
        k = int(rng.integers(0, 80))
        pool = np.r_[ids, [0, -3, 10**6, ids.max() + 1]]
        links = RadioLinks(
            rng.choice(pool, k), rng.choice(pool, k), rng.integers(0, 7, k),
            rng.integers(0, 5, k), np.zeros(k, np.int64),
        )  # fmt: skip
        got, want = link_lines(frame, links), _old_link_lines(frame, links)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), case
    rows, found = agent_rows(np.array([3, 4, 5]), np.array([2, 3, 5, 6]))
    assert rows[found].tolist() == [0, 2] and found.tolist() == [False, True, True, False]
    rows, found = agent_rows(np.array([9, 2, 5]), np.array([5, 9, 4]))
    assert rows[found].tolist() == [2, 0] and found.tolist() == [True, True, False]


def test_the_inset_frame_drawn_as_its_sides_is_the_whole_image_blended(monkeypatch) -> None:
    """The inset map's frame drawn as its four sides gives the bytes of the frame-sized image
    (transparent inside) blended over the whole inset, as before; the inset still counts as
    one occluder; and the sides are the same image objects every frame (not re-uploaded)."""
    from skyswarm.gui import renderer
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.layout import Layout
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    def whole_image(
        self, frame, camera, rect, target, marker_px=None, extra=(), ground_later=False
    ):  # noqa: ANN001, ANN202, E501
        x, y, w, h = rect
        px = marker_px or renderer.INSET_MARKER_PX
        self.render_view(frame, camera, rect, target, px, ground_later=ground_later)
        img = np.zeros((h, w, 4), dtype=np.uint8)
        img[:2], img[-2:], img[:, :2], img[:, -2:] = (renderer.INSET_BORDER,) * 4
        self.draw_image(img, x, y, target)

    size = (960, 540)  # the inset: 0.3 of the height, at least 120 px
    frame = _swarm(300)
    canvas = OffscreenCanvas(Scenery(), size)
    cam = Director(CameraSpec(), size, Layout.of(frame, size).keep_out(), frame).update(frame)
    try:
        canvas.compose(frame, cam)
        sides, occluders = canvas.read().copy(), list(canvas.renderer.occluders)
        with monkeypatch.context() as m:
            m.setattr(renderer.Renderer, "render_inset", whole_image)
            canvas.compose(frame, cam)
            whole, before = canvas.read().copy(), list(canvas.renderer.occluders)
        assert np.array_equal(sides, whole) and occluders == before
        inset = Layout.of(frame, size).inset
        assert inset is not None and inset in occluders
        x, y, w, h = inset
        assert (sides[y, x : x + w] != sides[y + 3, x : x + w]).any()  # the frame is drawn
    finally:
        canvas.release()
    assert renderer._border_sides(162, 162) is renderer._border_sides(162, 162)
