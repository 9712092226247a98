"""A window without a display (a server, ssh without X forwarding): `view` and `replay` say so
in one line, exit 2, before anything is built or written; the picture commands that need no
display still work there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gui.conftest import ROOT

HOVER = str(ROOT / "configs" / "hover.toml")


def _cli(args: list[str], display: str | None, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    if display is not None:
        env["DISPLAY"] = display
    return subprocess.run(
        [sys.executable, "-m", "skyswarm.app.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize(("display", "shown"), [(None, "'(unset)'"), (":4242", "':4242'")])
def test_view_without_a_display_is_one_line_and_writes_nothing(tmp_path, display, shown):
    proc = _cli(["view", HOVER, "--out", "run"], display, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"DISPLAY = {shown}: expected a display" in proc.stderr
    assert "xvfb-run" in proc.stderr and "--video" in proc.stderr  # what works instead
    assert list(tmp_path.iterdir()) == []  # no results directory


def test_replay_without_a_display_refuses_the_window_but_writes_the_video(tmp_path):
    run = tmp_path / "run"
    made = _cli(["run", HOVER, "--duration", "0.2", "--quiet", "--out", str(run)], None, tmp_path)
    assert made.returncode == 0, made.stderr
    proc = _cli(["replay", str(run)], None, tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "DISPLAY = '(unset)'" in proc.stderr
    video = tmp_path / "r.mp4"
    proc = _cli(["replay", str(run), "--video", str(video)], None, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert video.read_bytes()[4:8] == b"ftyp"
