"""What hides what: ground overlays drawn without a depth test (no obstacles), overlays in the
air and overlays with obstacles depth-tested; two HUD images of one size in one frame; a frame
drawn from a camera's fixed snapshot."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gui.conftest import shade_match

SIZE = (320, 180)
RED = (1.0, 0.0, 0.0, 1.0)
BLUE = (0.0, 0.0, 1.0, 1.0)


def _frame(positions: list[list[float]], overlays: list) -> object:
    from skyswarm.gui.scene import Frame, upright

    n = len(positions)
    return Frame(
        time_s=0.0, ids=np.arange(1, n + 1), roles=["uav"], role_index=np.zeros(n, int),
        positions=np.array(positions, float).reshape(-1, 3), orientations=upright(n),
        alive=np.ones(n, bool), overlays=overlays,
    )  # fmt: skip


def _canvas(boxes: tuple = ()) -> object:
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    return OffscreenCanvas(Scenery(boxes=boxes), SIZE, (0.0, 0.0), 20.0)


def _pixel(img: np.ndarray, cam: object, point: list[float]) -> np.ndarray:
    x, y = cam.project(np.array([point]), *SIZE)[0]
    return img[int(round(y)), int(round(x))]


def _is(pixel: np.ndarray, rgb: tuple[float, ...]) -> bool:
    return bool(np.all(np.abs(pixel.astype(float) - np.array(rgb[:3]) * 255) <= 12))


def _camera() -> object:
    from skyswarm.gui.camera import OrbitCamera

    return OrbitCamera((0.0, 0.0, 1.0), distance=6.0, azimuth_deg=-90.0, elevation_deg=30.0)


def test_a_drone_above_a_ground_overlay_is_drawn_over_it() -> None:
    """The coverage cell under a hovering drone is drawn with no depth test, before the drones:
    the drone's pixel shows the drone (drawn after it, it would show the cell), the cell shows
    around it."""
    from skyswarm.gui.overlays import Quads, rectangle
    from skyswarm.gui.renderer import ROLE_COLORS

    canvas, cam = _canvas(), _camera()
    cell = [Quads(rectangle(-3, -3, 3, 3)[None], RED)]
    img = canvas.render(_frame([[0.0, 0.0, 1.0]], cell), cam)
    assert shade_match(_pixel(img, cam, [0.0, 0.0, 1.0]), ROLE_COLORS["uav"])
    assert _is(_pixel(img, cam, [2.0, 2.0, 0.0]), RED)
    canvas.release()


def test_an_overlay_in_the_air_in_front_of_a_drone_hides_it() -> None:
    """A quad 2 m up between the camera and the drone is not a ground overlay: it is drawn after
    the drones with the depth test, so it covers the drone behind it."""
    from skyswarm.gui.overlays import Quads

    canvas, cam = _canvas(), _camera()
    # camera at azimuth -90: it looks north from the south; the wall stands at y = -1.5 m
    wall = np.array([[-1, -1.5, 0.5], [1, -1.5, 0.5], [1, -1.5, 3.0], [-1, -1.5, 3.0]], float)
    img = canvas.render(_frame([[0.0, 0.0, 1.0]], [Quads(wall[None], BLUE)]), cam)
    assert _is(_pixel(img, cam, [0.0, 0.0, 1.0]), BLUE)
    canvas.release()


@pytest.mark.parametrize("behind", [True, False])
def test_with_an_obstacle_ground_overlays_are_depth_tested(behind: bool) -> None:
    """A box 1 m tall at the origin and a red ground cell: behind the box (seen from the camera)
    the box hides the cell; in front of it the cell shows."""
    from skyswarm.gui.overlays import Quads, rectangle
    from skyswarm.gui.renderer import OBSTACLE

    canvas, cam = _canvas(boxes=(((0.0, 0.0, 0.5), (1.0, 1.0, 1.0), 0.0),)), _camera()
    y = 1.5 if behind else -1.5
    cell = [Quads(rectangle(-0.4, y - 0.4, 0.4, y + 0.4)[None], RED)]
    img = canvas.render(_frame([[9.0, 9.0, -50.0]], cell), cam)
    # the ray to the cell's centre: through the box's face when the cell is behind it
    px = _pixel(img, cam, [0.0, y, 0.0])
    if behind:
        assert shade_match(px, OBSTACLE) and not _is(px, RED), px
    else:
        assert _is(px, RED), px
    canvas.release()


def test_two_images_of_one_size_in_one_frame_both_show() -> None:
    """Two HUD images of the same size drawn in one frame land in the two textures of that size
    (each is uploaded once): both show, each at its place."""
    canvas, cam = _canvas(), _camera()
    red = np.zeros((10, 20, 4), np.uint8)
    red[..., 0], red[..., 3] = 255, 255
    blue = np.zeros((10, 20, 4), np.uint8)
    blue[..., 2], blue[..., 3] = 255, 255

    def hud(renderer: object, size: tuple[int, int]) -> None:
        renderer.draw_image(red, 0, 0, size)
        renderer.draw_image(blue, 100, 100, size)

    for _ in range(2):  # the second frame draws both again from the textures, no upload
        canvas.draw(_frame([[9.0, 9.0, -50.0]], []), cam, overlay=hud)
        img = canvas.read()
        assert tuple(img[5, 10]) == (255, 0, 0)
        assert tuple(img[105, 110]) == (0, 0, 255)
    canvas.release()


def test_a_frame_drawn_from_the_camera_s_fixed_snapshot_is_the_same() -> None:
    from skyswarm.gui.camera import FixedCamera

    canvas, cam = _canvas(), _camera()
    frame = _frame([[0.0, 0.0, 1.0], [1.0, 0.5, 2.0]], [])
    cam.aspect = SIZE[0] / SIZE[1]
    fixed = cam.fixed()
    assert isinstance(fixed, FixedCamera)
    assert np.array_equal(fixed.matrix, cam.projection @ cam.view)
    a = canvas.render(frame, cam).copy()
    b = canvas.render(frame, fixed)
    assert np.array_equal(a, b)
    canvas.release()
