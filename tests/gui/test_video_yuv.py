"""The video's colour conversion in the render process (gui/yuv.py): BT.709 limited range per
pixel, 4:2:0 chroma as each 2x2 block's mean, upright; the encoded video against the rendered
picture, beside ffmpeg's own conversion of the same frames; the same video twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.gui.video import decode_rgb
from tests.gui.conftest import ROOT

FLOCK = ROOT / "configs" / "flocking_coverage.toml"
# Fixed-point coefficients (2**-16) put a value at most 3 * 255 * 2**-17 = 0.006 from the exact
# one before rounding: the code is the nearest but where the exact value is that close to a half.
ROUNDING = 0.5 + 0.006


def _convert(rgba_top_first: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Y, U, V planes of an (H, W, 4) uint8 image, handed over as OpenGL reads it."""
    from skyswarm.gui.yuv import rgba_to_yuv420p, yuv420p_planes

    h, w = rgba_top_first.shape[:2]
    gl_rows = np.ascontiguousarray(rgba_top_first[::-1]).view(np.uint32).reshape(h, w)
    buf = bytearray(w * h * 3 // 2)
    planes = yuv420p_planes(buf, (w, h))
    rgba_to_yuv420p(gl_rows, *planes)
    return planes


def test_each_pixel_is_bt709_limited_range_and_each_block_its_mean() -> None:
    from skyswarm.gui.video import bt709_yuv

    rng = np.random.default_rng(7)
    h, w = 48, 80
    img = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    img[:8, :8, :3] = 0  # the ends of the range: black is Y 16, white Y 235, both U = V = 128
    img[:8, 8:16, :3] = 255
    y, u, v = _convert(img)
    exact = bt709_yuv(img[..., :3])  # (H, W, 3) float
    assert np.abs(y - exact[..., 0]).max() <= ROUNDING
    block = exact.reshape(h // 2, 2, w // 2, 2, 3).mean(axis=(1, 3))
    assert np.abs(u - block[..., 1]).max() <= ROUNDING
    assert np.abs(v - block[..., 2]).max() <= ROUNDING
    assert (y[:8, :8] == 16).all() and (y[:8, 8:16] == 235).all()
    assert (u[:4, :8] == 128).all() and (v[:4, :8] == 128).all()
    # upright: the top rows of the picture are the first of the Y plane (a flipped picture
    # would put the random bottom rows there)
    assert np.array_equal(y[:8, :16] == 16, np.arange(16)[None, :].repeat(8, 0) < 8)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b) ** 2)
    return float(10 * np.log10(255.0**2 / mse)) if mse > 0 else float("inf")


def test_video_shows_the_rendered_picture_as_well_as_ffmpeg_conversion_did(
    tmp_path: Path,
) -> None:
    """`run --video`'s path (yuv420p made by the render process, 2 of them) against the
    rendered frames (the PNGs the same run writes) and against the RGBA path it replaced
    (ffmpeg converting the same frames): as close to the picture, within 0.3 dB."""
    from PIL import Image

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture
    from skyswarm.gui.video import VideoWriter

    size, fps = (640, 360), 10.0
    sim = Simulator.from_scenario(load_scenario(FLOCK, ["simulation.duration_s=3.0"]))
    video, frames = tmp_path / "yuv.mp4", tmp_path / "frames"
    cap = Capture(sim, video=video, frames=frames, fps=fps, size=size, process=True, workers=2)
    sim.run()
    cap.close()
    sim.close()
    shown = np.stack([np.asarray(Image.open(p)) for p in sorted(frames.glob("frame_*.png"))])
    assert shown.shape == (30, 360, 640, 3)  # 3 s at 10 fps
    old = VideoWriter(tmp_path / "rgba.mp4", size, fps, "rgba")
    for img in shown:  # as a render process handed them over before: RGBA, bottom row first
        old.write(np.dstack([img, np.full(img.shape[:2], 255, np.uint8)])[::-1])
    old.close()
    ours, theirs = decode_rgb(video, size), decode_rgb(tmp_path / "rgba.mp4", size)
    assert len(ours) == len(theirs) == 30
    ours_db, theirs_db = _psnr(ours, shown), _psnr(theirs, shown)
    # docs/gui.md: 34.8 against 34.7 dB over 300 frames of the reference run at 1280x720
    assert ours_db > 30.0 and ours_db > theirs_db - 0.3, (ours_db, theirs_db)
    for k in (0, 15, 29):  # every frame, not the mean only
        assert _psnr(ours[k], shown[k]) > _psnr(theirs[k], shown[k]) - 0.5


def test_the_same_run_makes_the_same_video_byte_for_byte(tmp_path: Path) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture

    made = []
    for k in range(2):
        sim = Simulator.from_scenario(load_scenario(FLOCK, ["simulation.duration_s=2.0"]))
        video = tmp_path / f"v{k}.mp4"
        cap = Capture(sim, video=video, fps=15.0, size=(320, 180), process=True, workers=2)
        sim.run()
        cap.close()
        sim.close()
        made.append(video.read_bytes())
    assert len(made[0]) > 10_000 and made[0] == made[1]


def _stream_line(path: Path) -> str:
    """The video stream's line of `ffmpeg -i` (codec, pixel format, range, matrix/primaries/
    transfer, size), without its bit rate (the one thing two encodes of a picture differ in)."""
    import re
    import subprocess

    import imageio_ffmpeg

    info = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
        capture_output=True, text=True,
    ).stderr  # fmt: skip
    line = next(s for s in info.splitlines() if "Video:" in s)
    return re.sub(r"\d+ kb/s", "", line.split("Video:", 1)[1]).strip()


def test_replay_video_is_fed_yuv420p_and_shows_the_run_video_picture(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """`replay --video` hands ffmpeg what `run --video` hands it: planar yuv420p made by
    gui/yuv.py from the framebuffer (each frame the kernel's conversion of the picture, byte
    for byte), so the file is tagged the same and decodes to the run video's picture."""
    from PIL import Image

    import skyswarm.gui.offscreen as offscreen
    from skyswarm.app.cli import main
    from skyswarm.gui.replay import export_video

    size, fps = (320, 180), 10.0
    run, run_mp4, rep_mp4 = tmp_path / "run", tmp_path / "run.mp4", tmp_path / "replay.mp4"
    code = main(
        ["run", str(FLOCK), "--duration", "3", "--out", str(run), "--video", str(run_mp4),
         "--size", "320x180", "--fps", "10", "--quiet"]
    )  # fmt: skip
    assert code == 5  # the time limit
    fed: list[tuple[str, bytes]] = []

    class Spy(offscreen.VideoWriter):
        def write_into(self, fill: Any) -> None:
            def filled(buf: bytearray) -> None:
                fill(buf)
                fed.append((self.pix_fmt, bytes(buf)))

            super().write_into(filled)

    monkeypatch.setattr(offscreen, "VideoWriter", Spy)
    assert export_video(run, rep_mp4, tmp_path / "png", fps, size) == 30
    pngs = sorted((tmp_path / "png").glob("frame_*.png"))
    assert len(fed) == len(pngs) == 30
    for (pix_fmt, sent), png in zip(fed, pngs):
        rgb = np.asarray(Image.open(png))
        rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
        assert pix_fmt == "yuv420p"
        assert sent == b"".join(p.tobytes() for p in _convert(rgba))
    line = _stream_line(rep_mp4)
    assert "yuv420p(tv, bt709" in line and "320x180" in line, line
    assert line == _stream_line(run_mp4)
    ours, live = decode_rgb(rep_mp4, size), decode_rgb(run_mp4, size)
    assert ours.shape == live.shape == (30, 180, 320, 3)
    shown = np.stack([np.asarray(Image.open(p)) for p in pngs])
    assert _psnr(ours, shown) > 30.0  # the picture drawn, as test_video_shows_... asks
    # Every frame the replay draws what the run drew: the timeline holds the HUD lines, leader
    # and overlays the run showed at each trajectory tick (the 10 fps frames' ticks), the
    # trajectory the poses, so both writers are fed the same bytes and x264 makes the same
    # pictures of them. Measured: all 30 frames identical; 41.0 dB when the timeline was sampled
    # every 0.5 s (34.7 dB where the coverage changed between two samples, 1.1-1.4 s and
    # 2.1-2.4 s), 23.8 dB before it sampled tick 0.
    assert np.array_equal(ours, live), _psnr(ours, live)
