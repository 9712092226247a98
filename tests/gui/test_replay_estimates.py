"""Replay parity of the state estimate (Xvfb): with sensors on, the replay's estimate ghost and
inspector lines at time t are the live viewer's at t; without sensors, or from a timeline written
before estimates were recorded, the replay shows no ghost and no estimate lines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.gui.conftest import ROOT

SHOW_S = 3.0  # s: an estimate sample of the timeline (every 0.5 s) and a trajectory sample (20 Hz)
AGENT = 2
PATCH = 24  # px: half side of the compared square around the ghost


def _ghost_view(app, est: np.ndarray) -> tuple[np.ndarray, tuple[float, float]]:
    """Screenshot of the main window looking at the estimate from 3 m, and its pixel."""
    from skyswarm.gui.camera import OrbitCamera

    app.main.camera = OrbitCamera(tuple(est), 3.0, azimuth_deg=-60, elevation_deg=15)
    app.main.render_now()
    _, _, w, h = app.main.scene_viewport
    x, y = app.main.camera.project(est[None], w, h)[0]
    return app.main.screenshot(), (float(x), float(y))


def _patch(img: np.ndarray, xy: tuple[float, float]) -> np.ndarray:
    x, y = int(round(xy[0])), int(round(xy[1]))
    return img[y - PATCH : y + PATCH, x - PATCH : x + PATCH, :3].astype(int)


@pytest.fixture(scope="module")
def live_run(xvfb: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """hover_qrsim (QRSim sensors) viewed live to SHOW_S with agent 2 selected: its frame,
    inspector lines, a screenshot around the ghost and the results directory."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp

    out = tmp_path_factory.mktemp("qrsim")
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover_qrsim.toml"), out)
    app = ViewerApp(sim)
    try:
        sim.run(until_s=SHOW_S)
        app.select(AGENT)
        frame = app.frame()
        est = frame.estimates[frame.index_of(AGENT)].copy()
        shot, xy = _ghost_view(app, est)
        lines = app.inspector_lines()
    finally:
        for win in list(app.windows):
            win.close()
        sim.finish()
        sim.close()
    return {"dir": out, "frame": frame, "est": est, "shot": shot, "xy": xy, "lines": lines}


def _replay(results: Path):
    from skyswarm.gui.player import ReplayApp
    from skyswarm.gui.replay import ReplaySource

    app = ReplayApp(ReplaySource(results))
    app.seek(SHOW_S)
    app.paused = True
    app.select(AGENT)
    return app


def test_replay_shows_the_live_ghost_and_estimate_lines_at_the_same_time(live_run) -> None:
    live = live_run["frame"]
    app = _replay(live_run["dir"])
    try:
        frame = app.frame()
        assert frame.time_s == pytest.approx(SHOW_S)
        # Truth (float64 trajectory) + float32 offsets of ~0.3 m: the live numbers within 1e-6 m.
        np.testing.assert_allclose(frame.estimates[:4], live.estimates[:4], rtol=0, atol=1e-6)
        np.testing.assert_allclose(frame.gps_fixes[:4], live.gps_fixes[:4], rtol=0, atol=1e-6)
        i = live.index_of(AGENT)
        assert np.linalg.norm(live.estimates[i] - live.positions[i]) > 0.05  # a visible offset
        # The inspector's estimate lines, word for word (2-decimal numbers from the same values).
        est_lines = [s for s in live_run["lines"] if s.startswith(("estimate", "GPS"))]
        assert len(est_lines) == 2
        assert [s for s in app.inspector_lines() if s.startswith(("estimate", "GPS"))] == est_lines
        # The replay draws the same pixels around the ghost: same camera, same frame. (That the
        # ghost is in these pixels: the next test, which replays the same run without it.)
        shot, xy = _ghost_view(app, live_run["est"])
        assert xy == pytest.approx(live_run["xy"], abs=1e-3)
        diff = np.abs(_patch(shot, xy) - _patch(live_run["shot"], live_run["xy"]))
        assert diff.mean() < 2.0 and np.mean(diff.max(axis=-1) > 24) < 0.01, diff.mean()
    finally:
        for win in list(app.windows):
            win.close()


def test_old_timeline_without_estimates_replays_without_ghost(live_run, tmp_path: Path) -> None:
    """A timeline written before estimates were recorded (its rows lack the key) still replays;
    it shows no ghost and no estimate lines, like a run without sensors."""
    import shutil

    old = tmp_path / "old"
    shutil.copytree(live_run["dir"], old)
    index = old / "timeline.jsonl"
    rows = [json.loads(line) for line in index.read_text().splitlines()]
    assert all("estimates" in r for r in rows)
    index.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "estimates"}) + "\n"
                             for r in rows))  # fmt: skip
    app = _replay(old)
    try:
        frame = app.frame()
        assert frame.estimates is None and frame.gps_fixes is None
        lines = app.inspector_lines()
        assert lines[0].startswith(f"agent {AGENT}") and not any("estimate" in s for s in lines)
        shot, xy = _ghost_view(app, live_run["est"])
        # Same run, time, selection and camera as the live picture: only the ghost is missing,
        # and its white mesh and line are far (> 40 of 255 per channel) from what is behind.
        ghost = np.abs(_patch(shot, xy) - _patch(live_run["shot"], live_run["xy"])).max()
        assert ghost > 40
    finally:
        for win in list(app.windows):
            win.close()


def test_no_sensors_no_ghost_in_replay(xvfb: str, tmp_path: Path) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    sim = Simulator.from_scenario(load_scenario(ROOT / "configs/hover.toml"), tmp_path)
    sim.run(until_s=1.0)
    sim.finish()
    sim.close()
    app = _replay(tmp_path)
    try:
        frame = app.frame()
        assert frame.estimates is None and frame.gps_fixes is None
        assert not any("estimate" in s for s in app.inspector_lines())
    finally:
        for win in list(app.windows):
            win.close()
