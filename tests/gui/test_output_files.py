"""The files the picture commands write by a name the user gives (`run --video/--frames`,
`replay --video`, `snapshot --out`): nothing of the user's is replaced without `--overwrite`,
every refusal is one line and exit 2 before any work, and a video or a snapshot appears whole
(written beside, renamed when complete) with the permissions of any new file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from skyswarm.app.cli import main
from tests.app.test_results_safety import _one_line_refusal as _refused
from tests.app.test_results_safety import tree_hash
from tests.gui.conftest import ROOT

HOVER = str(ROOT / "configs" / "hover.toml")
RUN = ["run", HOVER, "--quiet", "--no-plots", "--duration", "0.1"]  # 3 frames at 30 fps


@pytest.fixture
def users(tmp_path: Path) -> Path:
    """A folder of the user's holding a video, a picture, frames and notes."""
    folder = tmp_path / "talk"
    (folder / "frames").mkdir(parents=True)
    (folder / "demo.mp4").write_bytes(b"the user's own video")
    (folder / "still.png").write_bytes(b"the user's own picture")
    (folder / "frames" / "frame_00000.png").write_bytes(b"the user's own frame")
    (folder / "frames" / "notes.txt").write_text("keep me\n")
    return folder


@pytest.fixture(scope="module")
def a_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("recorded") / "run"
    assert main([*RUN, "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize(
    ("option", "name", "needle"),
    [
        ("--video", "demo.mp4", "a new file (or --overwrite)"),
        ("--video", "notes.txt", "ending .mp4, .mkv, .mov"),
        ("--video", "frames", "ending .mp4"),  # a folder without a video's name
        ("--frames", "frames", "without frame_*.png files"),
        ("--frames", "still.png", "a folder (this is a file)"),
    ],
)
def test_run_refuses_to_replace_the_users_files(
    users, tmp_path, capsys, monkeypatch, option, name, needle
):
    before = tree_hash(users)
    out = tmp_path / "never"
    monkeypatch.chdir(users)  # short names: the error line shortens a long value
    assert main([*RUN, "--out", str(out), option, name]) == 2
    _refused(capsys, option, name, needle)
    assert tree_hash(users) == before
    assert not out.exists()  # refused before the run made its results directory


def test_overwrite_replaces_the_video_whole_and_nothing_else(users, tmp_path, capsys):
    from skyswarm.gui.video import decode_rgb

    others = {k: v for k, v in tree_hash(users).items() if k != "demo.mp4"}
    video = users / "demo.mp4"
    args = [*RUN, "--out", str(tmp_path / "r"), "--video", str(video), "--overwrite"]
    old = os.umask(0o027)
    try:
        assert main(args) == 0
    finally:
        os.umask(old)
    assert len(decode_rgb(video, (1280, 720))) == 3  # an MP4 of the run's three frames
    assert stat.S_IMODE(video.stat().st_mode) == 0o640  # a new file's mode under umask 027
    assert {k: v for k, v in tree_hash(users).items() if k != "demo.mp4"} == others
    assert not [p.name for p in users.iterdir() if p.name.startswith(".")]  # no part left


def test_overwrite_rewrites_the_frames_only(users, tmp_path):
    frames = users / "frames"
    args = [*RUN, "--out", str(tmp_path / "r"), "--frames", str(frames), "--overwrite"]
    assert main(args) == 0
    names = sorted(p.name for p in frames.iterdir())
    assert names == ["frame_00000.png", "frame_00001.png", "frame_00002.png", "notes.txt"]
    assert (frames / "frame_00000.png").read_bytes()[:4] == b"\x89PNG"
    assert (frames / "notes.txt").read_text() == "keep me\n"


def test_a_new_video_goes_into_folders_made_for_it(tmp_path):
    video = tmp_path / "talk" / "clips" / "hover.mp4"
    assert main([*RUN, "--out", str(tmp_path / "r"), "--video", str(video)]) == 0
    assert video.is_file() and [p.name for p in video.parent.iterdir()] == ["hover.mp4"]


def test_a_video_no_folder_can_hold_is_refused_before_the_run(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    out = tmp_path / "never"
    assert main([*RUN, "--out", str(out), "--video", str(blocker / "v.mp4")]) == 2
    _refused(capsys, "--video", "a folder that can be written")
    assert not out.exists() and blocker.read_text() == "x"


def test_replay_refuses_an_existing_video_and_replaces_it_when_told(
    a_run, users, capsys, monkeypatch
):
    video = users / "demo.mp4"
    monkeypatch.chdir(users)
    assert main(["replay", str(a_run), "--video", "demo.mp4"]) == 2
    _refused(capsys, "--video", "a new file (or --overwrite)")
    assert video.read_bytes() == b"the user's own video"
    assert main(["replay", str(a_run), "--video", str(video), "--overwrite"]) == 0
    assert video.read_bytes()[4:8] == b"ftyp"


def test_snapshot_refuses_an_existing_picture_or_another_format(a_run, users, capsys, monkeypatch):
    before = tree_hash(users)
    monkeypatch.chdir(users)
    still = users / "still.png"
    assert main(["snapshot", str(a_run), "--time", "0.05", "--out", str(still)]) == 2
    _refused(capsys, "--out", "a new file (or --overwrite)")
    jpeg = users / "still.jpg"
    assert main(["snapshot", str(a_run), "--time", "0.05", "--out", str(jpeg)]) == 2
    _refused(capsys, "--out", "ending .png")
    assert tree_hash(users) == before
    assert main(["snapshot", str(a_run), "--time", "0.05", "--out", str(still), "--overwrite"]) == 0
    from PIL import Image

    with Image.open(still) as im:
        assert im.size == (1280, 720) and np.asarray(im).std() > 1.0  # a picture, not blank


def test_a_failed_video_leaves_neither_a_file_nor_a_part(tmp_path):
    from skyswarm.gui.video import VideoWriter

    out = tmp_path / "v.mp4"
    writer = VideoWriter(out, (64, 32), 30.0, "rgb24")
    writer.write(np.zeros((32, 64, 3), np.uint8))
    assert not out.exists()  # only the hidden part while it is written
    writer._proc.kill()  # ffmpeg dies mid-video
    writer._proc.wait()
    with pytest.raises(RuntimeError, match="v.mp4"):
        for _ in range(8):  # the feeder notices the broken pipe within a few frames
            writer.write(np.zeros((32, 64, 3), np.uint8))
        writer.close()
    assert list(tmp_path.iterdir()) == []
