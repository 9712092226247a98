"""The video path (gui/video.py): colours and orientation as encoded, the HUD in every frame,
the cached HUD text, mission overlays cached between frames, and ffmpeg's errors."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.gui.conftest import ROOT

DROP = ROOT / "configs" / "drop_test.toml"
# Quadrant colours (RGB 0..255): the BT.709 and BT.601 matrices give green Y values 28 apart
# (173 and 145), and each quadrant is 2x2-block aligned, so 4:2:0 chroma is its own colour.
TOP_LEFT, TOP_RIGHT = (255, 0, 0), (0, 255, 0)
BOTTOM_LEFT, BOTTOM_RIGHT = (0, 0, 255), (242, 107, 20)


def _decode_yuv420(path: Path, size: tuple[int, int]) -> np.ndarray:
    """(frames, W * H * 3 / 2) uint8: the stream's own yuv420p samples (no conversion)."""
    import imageio_ffmpeg

    w, h = size
    raw = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(path),
         "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return np.frombuffer(raw, np.uint8).reshape(-1, w * h * 3 // 2)


def test_encoded_colours_are_bt709_limited_range_and_upright(tmp_path: Path) -> None:
    from skyswarm.gui.video import Encoder, VideoWriter, bt709_yuv

    w, h = 64, 32
    img = np.zeros((h, w, 3), np.uint8)  # top row first
    img[: h // 2, : w // 2], img[: h // 2, w // 2 :] = TOP_LEFT, TOP_RIGHT
    img[h // 2 :, : w // 2], img[h // 2 :, w // 2 :] = BOTTOM_LEFT, BOTTOM_RIGHT
    # What the render process sends: RGBA as OpenGL reads it, bottom row first.
    gl_rows = np.dstack([img, np.full((h, w), 255, np.uint8)])[::-1].copy()
    lossless = Encoder(crf=0, preset="ultrafast", x264_params="")  # compare samples exactly
    out = tmp_path / "q.mp4"
    writer = VideoWriter(out, (w, h), 30.0, "rgba", lossless)
    for _ in range(3):
        writer.write(gl_rows.tobytes())
    writer.close()
    frames = _decode_yuv420(out, (w, h))
    assert len(frames) == 3
    y = frames[0, : w * h].reshape(h, w)
    u = frames[0, w * h : w * h * 5 // 4].reshape(h // 2, w // 2)
    v = frames[0, w * h * 5 // 4 :].reshape(h // 2, w // 2)
    for (row, col), rgb in (
        ((8, 16), TOP_LEFT), ((8, 48), TOP_RIGHT),
        ((24, 16), BOTTOM_LEFT), ((24, 48), BOTTOM_RIGHT),
    ):  # fmt: skip
        want = bt709_yuv(np.array(rgb))
        got = np.array([y[row, col], u[row // 2, col // 2], v[row // 2, col // 2]], float)
        # within 1 code value: the conversion rounds once; a flipped image or BT.601 is off
        # by 28+ in Y for the green and red quadrants
        assert np.all(np.abs(got - want) <= 1.0), (rgb, got, want)


def test_every_video_frame_carries_the_hud(tmp_path: Path) -> None:
    import imageio_ffmpeg

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture

    size, fps = (320, 180), 5.0
    videos = {}
    for hud in (True, False):
        sim = Simulator.from_scenario(load_scenario(DROP, ["simulation.duration_s=1.0"]))
        videos[hud] = tmp_path / f"hud_{hud}.mp4"
        cap = Capture(sim, video=videos[hud], fps=fps, size=size, hud=hud)
        sim.run()
        cap.close()
        sim.close()
    decoded = {}
    for hud, path in videos.items():
        reader = imageio_ffmpeg.read_frames(str(path))
        meta = next(reader)
        assert meta["size"] == size
        decoded[hud] = [np.frombuffer(f, np.uint8).reshape(180, 320, 3) for f in reader]
    assert len(decoded[True]) == len(decoded[False]) == 5  # 1 s at 5 fps
    for with_hud, plain in zip(decoded[True], decoded[False]):
        box = (slice(12, 40), slice(12, 120))  # inside the HUD's first text line, top left
        # The translucent dark backdrop darkens the view there by far more than encoding noise,
        # and its white text leaves bright pixels the ground never has.
        assert with_hud[box].mean() < plain[box].mean() - 40
        assert (with_hud[box].min(axis=-1) > 200).sum() >= 20
        below = (slice(100, 180), slice(150, 320))  # away from the HUD and the legend
        assert np.abs(with_hud[below].astype(int) - plain[below]).mean() < 3


def test_cached_hud_text_is_the_text_image() -> None:
    from skyswarm.gui.text import text_image
    from skyswarm.gui.video import hud_text_image

    for lines in (
        ("t =   1.23 s   alive 10/10", "coverage  5.1 % (target 99 %)", "Qjgpy descenders"),
        ("gjpqy|",),  # descenders of the last line reach into the bottom padding
        (),
    ):
        assert np.array_equal(hud_text_image(lines), text_image(list(lines)))


def test_overlays_are_uploaded_again_only_for_a_new_list() -> None:
    from skyswarm.gui.camera import TopCamera
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.overlays import Quads, rectangle
    from skyswarm.gui.scene import Frame, Scenery

    canvas = OffscreenCanvas(Scenery(), (64, 64), (0.0, 0.0), 10.0)
    cam = TopCamera(center=(0.0, 0.0), half_height=10.0)
    empty = np.zeros(0, np.int64)

    def frame(overlays: list) -> Frame:
        return Frame(0.0, empty, [], empty, np.zeros((0, 3)), np.zeros((0, 4)),
                     np.zeros(0, bool), overlays)  # fmt: skip

    red = [Quads(rectangle(-5, -5, 5, 5)[None], (1.0, 0.0, 0.0, 1.0))]
    blue = [Quads(rectangle(-5, -5, 5, 5)[None], (0.0, 0.0, 1.0, 1.0))]
    centre = (32, 32)
    assert tuple(canvas.render(frame(red), cam)[centre]) == (255, 0, 0)
    assert canvas.renderer.flat.is_current("overlay_tris", red)
    assert tuple(canvas.render(frame(red), cam)[centre]) == (255, 0, 0)  # drawn again, cached
    # A new list with the same shapes but another colour must not show the cached red quad.
    assert tuple(canvas.render(frame(blue), cam)[centre]) == (0, 0, 255)
    assert not canvas.renderer.flat.is_current("overlay_tris", red)
    assert tuple(canvas.render(frame([]), cam)[centre]) != (0, 0, 255)  # and none: gone
    canvas.release()


def test_video_writer_errors_name_the_problem(tmp_path: Path) -> None:
    from skyswarm.gui.video import Encoder, VideoWriter

    with pytest.raises(ValueError, match="even"):
        VideoWriter(tmp_path / "odd.mp4", (63, 32), 30.0)
    writer = VideoWriter(tmp_path / "a.mp4", (64, 32), 30.0, "rgba")
    with pytest.raises(ValueError, match=r"64x32 rgba frame is 8192 bytes, got 6144"):
        writer.write(np.zeros((32, 64, 3), np.uint8))  # RGB given to an RGBA writer
    writer.close()
    bad = VideoWriter(tmp_path / "b.mp4", (64, 32), 30.0, encoder=Encoder(preset="nosuch"))
    with pytest.raises(RuntimeError, match="ffmpeg"):
        for _ in range(200):  # ffmpeg stops at once; the pipe breaks within a few frames
            bad.write(np.zeros((32, 64, 3), np.uint8))
        bad.close()


@pytest.mark.parametrize("size", [(64, 32), (640, 480)])
def test_buffers_lent_to_the_pipe_are_handed_back_only_once_ffmpeg_read_them(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """write_shared lends each buffer to ffmpeg's pipe (vmsplice: its pages, not a copy). The
    caller overwrites a buffer as soon as it is handed back, as a render process refills its
    slot of shared memory: every frame must still be encoded as it was when queued, for frames
    smaller than the pipe (many in it at once) and larger (one frame spans several fills)."""
    import threading
    from multiprocessing.shared_memory import SharedMemory

    import skyswarm.gui.video as video

    assert video._VMSPLICE is not None  # Linux: the lending path is the one tested
    w, h = size
    nbytes, slots, frames = w * h * 4, 3, 24
    shm = SharedMemory(create=True, size=slots * nbytes)
    views = [shm.buf[k * nbytes : (k + 1) * nbytes] for k in range(slots)]
    free = [threading.Semaphore(1) for _ in range(slots)]
    grey = [40 + 8 * k for k in range(frames)]  # frame k: one grey level, its own

    def hand_back(s: int) -> None:
        views[s][:] = b"\xff" * nbytes  # scribbled at once: a later read of it shows white
        free[s].release()

    lossless = video.Encoder(crf=0, preset="ultrafast", x264_params="")
    out = tmp_path / "lent.mp4"
    writer = video.VideoWriter(out, size, 30.0, "rgba", lossless)
    try:
        for k in range(frames):
            s = k % slots
            free[s].acquire()
            views[s][:] = bytes([grey[k], grey[k], grey[k], 255]) * (w * h)
            writer.write_shared(views[s], lambda s=s: hand_back(s))
        writer.close()
        for s in range(slots):  # every buffer handed back by close()
            assert free[s].acquire(timeout=5.0)
    finally:
        for v in views:
            v.release()
        shm.close()
        shm.unlink()
    luma = _decode_yuv420(out, size)[:, : w * h].astype(int)
    assert len(luma) == frames
    want = np.array([video.bt709_yuv(np.array([g, g, g]))[0] for g in grey])
    assert np.all(np.abs(luma - want[:, None]) <= 1.0)  # no pixel of any frame scribbled
