"""Issue 30, video: 1080p and 60 fps, and the picture-in-picture / side-by-side layouts
(gui/multiview.py) of `run --video`, `replay --video` and `snapshot`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT, shade_match

FLOCK = ROOT / "configs" / "flocking_coverage.toml"
DROP = ROOT / "configs" / "drop_test.toml"
SIZE = (1280, 720)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    env["PYTHONPATH"] = str(ROOT.parent)
    return env


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference run (flocking_coverage) recorded for 6 s: ten UAVs in a line, spread."""
    from skyswarm.app.cli import main

    out = tmp_path_factory.mktemp("flock") / "run"
    code = main(["run", str(FLOCK), "--duration", "6", "--out", str(out), "--quiet"])
    assert code == 5  # the time limit, short of the coverage target
    return out


def _still(recorded: Path, layout: str, **kw: Any) -> tuple[np.ndarray, Any, Any]:
    """(picture at t = 5 s, the ReplayStill's MultiView, the frame)."""
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.multiview import LayoutSpec
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    source = ReplaySource(recorded)
    still = ReplayStill(source, SIZE, CameraSpec("chase", target=3), layout=LayoutSpec(layout))
    image = still.render(5.0).copy()
    still.release()
    return image, still.views, source.frame_at(5.0)


def _drone_near(img: np.ndarray, x: float, y: float, rgb: Any, r: int = 3) -> bool:
    """A pixel within `r` of (x, y) in the drone's colour under some shade."""
    xi, yi = int(round(x)), int(round(y))
    patch = img[max(0, yi - r) : yi + r + 1, max(0, xi - r) : xi + r + 1].reshape(-1, 3)
    return any(shade_match(p, rgb) for p in patch)


def test_pip_shows_the_top_view_of_the_whole_swarm_bottom_right(recorded: Path) -> None:
    from skyswarm.gui.multiview import PIP_FRACTION, second_rect
    from skyswarm.gui.renderer import INSET_BORDER, LEADER, role_color

    single, _, _ = _still(recorded, "single")
    pip, views, frame = _still(recorded, "pip")
    x, y, w, h = second_rect("pip", SIZE)
    assert (w, h) == (int(SIZE[0] * PIP_FRACTION), int(SIZE[0] * PIP_FRACTION) * 720 // 1280)
    assert x + w == SIZE[0] - 8 and y + h == SIZE[1] - 8  # bottom right, 8 px margin
    region = (slice(y, y + h), slice(x, x + w))
    diff = np.abs(pip[region].astype(int) - single[region].astype(int)).max(axis=-1)
    # another view, not the chase camera's: the grids and the sky differ (~16 % measured)
    assert (diff > 24).mean() > 0.08, (diff > 24).mean()
    # its frame, top edge: INSET_BORDER at alpha 230 / 255 over the scene
    edge = pip[y, x + 5 : x + w - 5].astype(int)
    assert np.all(np.abs(edge - INSET_BORDER[:3]) <= 26), edge.max(axis=0)
    # Every UAV of the swarm at its place in the top view (the chase view shows a few).
    second = views.second.camera
    assert views.second.spec.name == "top"
    uavs = frame.alive & frame.mobile
    px = second.project(frame.positions[uavs], w, h)
    assert np.all((px >= 0) & (px < (w, h))), px
    k = int(frame.role_index[uavs][0])
    colors = [LEADER if lead else role_color(frame.roles[k], k) for lead in frame.leaders[uavs]]
    hits = [_drone_near(pip, x + u, y + v, c) for (u, v), c in zip(px, colors)]
    assert all(hits), hits
    # The chase view's framing keeps nothing under the picture-in-picture: the target UAV
    # is drawn outside it.
    main = views.main.camera
    tx, ty = main.project(frame.positions[frame.index_of(3)][None], *SIZE)[0]
    assert not (x <= tx < x + w and y <= ty < y + h)


def test_side_by_side_splits_the_picture_with_a_divider(recorded: Path) -> None:
    from skyswarm.gui.multiview import DIVIDER_PX, DIVIDER_RGBA, second_rect

    side, views, frame = _still(recorded, "side")
    x, y, w, h = second_rect("side", SIZE)
    assert (x, w, h) == (640 + DIVIDER_PX, 640 - DIVIDER_PX, 720)
    assert np.all(side[:, 640 : 640 + DIVIDER_PX] == DIVIDER_RGBA[:3])
    # The left view is the chase camera at half width: its aspect is the half's.
    assert views.main.size == (640, 720)
    assert abs(views.main.camera.aspect - 640 / 720) < 1e-9
    right = side[:, x:]
    assert right.std() > 5 and np.abs(right.astype(int) - side[:, :w].astype(int)).mean() > 5


def test_snapshot_takes_the_layout_and_rejects_an_unknown_one(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from PIL import Image

    from skyswarm.app.cli import main

    out = tmp_path / "pip.png"
    args = ["snapshot", str(recorded), "--time", "5", "--out", str(out)]
    assert main([*args, "--layout", "pip", "--camera", "chase", "--target", "3"]) == 0
    pip, _, _ = _still(recorded, "pip")
    shot = np.asarray(Image.open(out).convert("RGB"))
    assert np.array_equal(shot, pip)  # the CLI draws what ReplayStill draws
    assert main([*args, "--layout", "mosaic"]) == 2
    assert "invalid choice: 'mosaic'" in capsys.readouterr().err


def test_run_video_at_1080p_and_60_fps_with_a_pip(tmp_path: Path) -> None:
    """`--size 1080p --fps 60`: 1920x1080 frames, 60 per simulated second, tagged 60 fps."""
    import imageio_ffmpeg

    video = tmp_path / "out.mp4"
    cmd = [
        sys.executable, "-m", "skyswarm.app.cli", "run", str(DROP), "--duration", "1",
        "--set", "drop_test.height_m=30.0", "--quiet", "--out", str(tmp_path / "run"),
        "--video", str(video), "--size", "1080p", "--fps", "60", "--layout", "pip",
    ]  # fmt: skip
    out = subprocess.run(cmd, env=_env(), capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 5, out.stderr  # time limit: boxes still falling
    reader = imageio_ffmpeg.read_frames(str(video))
    meta = next(reader)
    assert meta["size"] == (1920, 1080)
    assert meta["fps"] == 60.0
    frames = [np.frombuffer(f, np.uint8).reshape(1080, 1920, 3) for f in reader]
    assert len(frames) == 60  # 1 s x 60 fps
    x, y, w, h = 1920 - 576 - 8, 1080 - 324 - 8, 576, 324  # the pip at 1080p
    last = frames[-1].astype(int)
    # the pip's dark frame (H.264 blurs it by a pixel or two: its middle row of 2 px)
    border = last[y + 1, x + 10 : x + w - 10]
    assert border.mean() < 60, border.mean()
    assert last[y + h // 2, x + w // 2].mean() > 60  # inside: the scene, not the frame


def test_size_shorthands_and_bad_sizes() -> None:
    import argparse

    from skyswarm.app.gui_commands import _size

    assert _size("1080p") == (1920, 1080) and _size("720P") == (1280, 720)
    assert _size("640x360") == (640, 360)
    with pytest.raises(argparse.ArgumentTypeError, match="720p or 1080p"):
        _size("4k")


def test_doc_pictures_are_made_by_the_command_line_only() -> None:
    """docs/make_screenshots.py imports nothing of skyswarm (it runs `skyswarm ...` commands),
    and the clip of the reference run it makes is in the docs, linked, and <= 5 MB."""
    import ast

    script = ROOT / "docs" / "make_screenshots.py"
    tree = ast.parse(script.read_text(encoding="utf-8"))
    modules = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    modules += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert modules and not [m for m in modules if m.startswith("skyswarm")], modules
    assert '"skyswarm.app.cli"' in script.read_text(encoding="utf-8")
    clip = ROOT / "docs" / "reference_run.mp4"
    assert 0 < clip.stat().st_size <= 5_000_000
    assert "(reference_run.mp4)" in (ROOT / "docs" / "gui.md").read_text(encoding="utf-8")
