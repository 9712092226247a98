"""Ending `skyswarm view` (and `replay`): Esc, the close button and Ctrl-C each end the process
with every window closed and, for `view`, summary.json written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gui.conftest import ROOT

HOVER = ROOT / "configs" / "hover.toml"

# Runs the real CLI; once the viewer is up (1 s of event loop) it opens the top view and then
# performs ACTION on the main window through pyglet's own event dispatch.
DRIVER = """
import sys, pyglet
from pyglet.window import key
from skyswarm.app.cli import main
from skyswarm.gui import app as gui_app

ACTION = sys.argv[1]
original = gui_app.ViewerApp.__init__

def init(self, *a, **k):
    original(self, *a, **k)
    def act(dt):
        self.open_top_view()
        if ACTION == "esc":
            self.main.dispatch_event("on_key_press", key.ESCAPE, 0)
        elif ACTION == "close":
            self.main.dispatch_event("on_close")
        print("ready", len(self.windows), flush=True)
    pyglet.clock.schedule_once(act, 1.0)

gui_app.ViewerApp.__init__ = init
rc = main(["view", sys.argv[2], "--out", sys.argv[3], "--speed", "1"])
print("windows left", len(pyglet.app.windows), flush=True)
sys.exit(rc)
"""


def _unbuffered(args: list[str], env: dict) -> subprocess.Popen:
    """`python -c *args` with unbuffered byte pipes: a line read before `communicate` takes only
    that line. (A text pipe's readline reads ahead a whole chunk, and `communicate` reads the
    pipe itself: output already printed when the test read "ready" was lost. Seen on a loaded
    machine: Esc closed the view and printed "windows left 0" before the test read "ready".)"""
    return subprocess.Popen(
        [sys.executable, "-c", *args], cwd=ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
    )  # fmt: skip


def _line(proc: subprocess.Popen) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().decode()


@pytest.mark.parametrize(("action", "code"), [("esc", 0), ("close", 0), ("sigint", 130)])
def test_view_ends_cleanly_with_summary(xvfb: str, tmp_path: Path, action: str, code: int) -> None:
    out = tmp_path / "run"
    proc = _unbuffered([DRIVER, action, str(HOVER), str(out)], {**os.environ, "DISPLAY": xvfb})
    try:
        line = _line(proc)  # "ready N" once the action is done (or the run is up)
        assert line.startswith("ready"), line + proc.stderr.read().decode()  # type: ignore[union-attr]
        if action == "sigint":
            proc.send_signal(signal.SIGINT)
        rest, err = (b.decode() for b in proc.communicate(timeout=60))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    if action == "sigint":  # the promised line, from the CLI's one interrupt path
        assert err.strip().splitlines()[-1] == "skyswarm: interrupted", err
    assert "windows left 0" in rest  # the top view closed with the main window
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    expected = "interrupted" if action == "sigint" else "window closed"
    assert summary["stop_reason"] == expected


def test_esc_closes_the_joystick_window_alone_and_on_the_main_window_closes_all(xvfb) -> None:
    import pyglet
    from pyglet.window import key

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp

    before = len(pyglet.app.windows)  # other tests' windows may still be open
    sim = Simulator.from_scenario(load_scenario(HOVER))
    app = ViewerApp(sim)
    try:
        app.select(1)
        app.toggle_joystick()
        joy = app.joystick.window  # type: ignore[union-attr]
        top = app.open_top_view()
        assert joy is not None and len(pyglet.app.windows) == before + 3
        # The handlers directly (the loop's dispatch is exercised by the subprocess test above;
        # pumping here would hand a closed window its queued resize event).
        joy.on_key_press(key.ESCAPE, 0)
        assert joy.context is None  # closed ...
        assert app.main.context is not None and top.context is not None  # ... alone
        app.main.on_key_press(key.ESCAPE, 0)
        assert app.main.context is None and top.context is None
        assert len(pyglet.app.windows) == before and app.windows == []
    finally:
        app.shutdown()
        sim.close()


# The replay window: ready once its event loop has run 1 s (it plays on; nothing to save).
REPLAY_DRIVER = """
import sys, pyglet
from skyswarm.app.cli import main
from skyswarm.gui import player

original = player.ReplayApp.__init__

def init(self, *a, **k):
    original(self, *a, **k)
    pyglet.clock.schedule_once(lambda dt: print("ready", flush=True), 1.0)

player.ReplayApp.__init__ = init
rc = main(["replay", sys.argv[1]])
print("windows left", len(pyglet.app.windows), flush=True)
sys.exit(rc)
"""


def test_ctrl_c_on_replay_prints_the_line_and_exits_130(xvfb: str, tmp_path: Path) -> None:
    """Ctrl-C on the replay window: the one interrupt path of every command (app/cli.py)."""
    from skyswarm.app.cli import main

    run = tmp_path / "run"
    assert main(["run", str(HOVER), "--duration", "2", "--out", str(run), "--quiet"]) == 0
    code, rest, err = _interrupted_when_ready(
        [REPLAY_DRIVER, str(run)], {**os.environ, "DISPLAY": xvfb}, timeout=60
    )
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "skyswarm: interrupted", err
    assert "windows left 0" in rest


def _interrupted_when_ready(args: list[str], env: dict, timeout: float) -> tuple[int, str, str]:
    """`python -c *args`, sent SIGINT once it prints "ready" on stdout; (exit code, the rest of
    stdout, stderr)."""
    proc = _unbuffered(args, env)
    try:
        seen = [_line(proc)]  # lines before "ready" (a size estimate ...) skipped
        while seen[-1] not in ("ready\n", ""):
            seen.append(_line(proc))
        assert seen[-1] == "ready\n", "".join(seen) + proc.stderr.read().decode()  # type: ignore[union-attr]
        proc.send_signal(signal.SIGINT)
        rest, err = (b.decode() for b in proc.communicate(timeout=timeout))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, rest, err


# `run --video`: once the loop has stepped 1 s of simulated time, the driver prints "ready" (from
# the progress bar's update, so Ctrl-C lands inside the loop, not in the set-up).
VIDEO_DRIVER = """
import sys
from skyswarm.app import run_command
from skyswarm.app.cli import main

original = run_command._ProgressBar.update
said = []

def update(self, sim):
    original(self, sim)
    if not said and sim.time_s >= 1.0:
        said.append(True)
        print("ready", flush=True)

run_command._ProgressBar.update = update
sys.exit(main(["run", sys.argv[1], "--duration", "60", "--out", sys.argv[2],
               "--video", sys.argv[3], "--size", "320x240"]))
"""


def test_ctrl_c_on_run_video_says_at_once_that_it_finishes_the_video(tmp_path: Path) -> None:
    """The queued frames take seconds to draw after Ctrl-C: a line says so before that wait,
    and the run ends with the interrupt's own line, exit 130, the video and summary kept."""
    out, video = tmp_path / "run", tmp_path / "clip.mp4"
    args = [VIDEO_DRIVER, str(HOVER), str(out), str(video)]
    code, _, err = _interrupted_when_ready(args, dict(os.environ), timeout=300)
    assert code == 130, err
    lines = [s.split("\r")[-1] for s in err.strip().splitlines()]
    said = lines.index("skyswarm: interrupted; finishing the video's queued frames")
    assert lines[-1] == "skyswarm: interrupted; results kept" and said < len(lines) - 1, err
    assert video.stat().st_size > 0
    assert json.loads((out / "summary.json").read_text(encoding="utf-8"))["stop_reason"] == (
        "interrupted"
    )
