"""The replay in step with the live view (issue 30, "replay identical to live"): what the mission
shows (HUD lines, leader, groups, modes, overlays) changes at any tick, and the timeline
(core/timeline.py) records it at the trajectory tick it first shows at, so the replay's frame
at a trajectory sample's time is the live frame of that tick, not the state of up to 0.5 s
before (the timeline's old period). Measured on the reference run: its first coverage report
reaches the base station between 1.1 and 1.2 s, which the live view shows from the 1.2 s frame
on and the replay showed from 1.5 s."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT

FLOCK = ROOT / "configs/flocking_coverage.toml"
SIZE, FPS, END_S = (640, 360), 10.0, 1.6  # FPS: the run's 10 Hz trajectory, one frame a sample
CHANGE_S = 1.2  # s: the first frame with a coverage reported (HUD line and cells)


def _overlays(frame: Any) -> list[tuple[str, tuple[float, ...], bytes]]:
    """A frame's overlays as (type, colour, float32 data bytes)."""
    from skyswarm.core.overlays import Lines

    return [
        (
            type(o).__name__,
            tuple(o.color),
            (o.segments if isinstance(o, Lines) else o.corners).tobytes(),
        )
        for o in frame.overlays
    ]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference run to END_S captured as `run --video` captures it (FPS, SIZE, default
    camera), drawn offscreen: per frame the time, the picture, what the frame held of the
    mission (HUD, leader ids, groups, highlight, overlays) and each agent's control mode."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture

    out = tmp_path_factory.mktemp("sync") / "run"
    sim = Simulator.from_scenario(load_scenario(FLOCK, [f"simulation.duration_s={END_S}"]), out)
    cap = Capture(sim, fps=FPS, size=SIZE)  # no files: the frames are drawn and kept here
    frames: list[dict[str, Any]] = []
    draw = cap.worker.submit

    def submit(frame: Any, cam: Any, second: Any, sensed: Any) -> None:
        draw(frame, cam, second, sensed)
        frames.append({
            "t": frame.time_s, "picture": cap.worker.canvas.read().copy(),
            "hud": list(frame.hud), "leaders": frame.ids[frame.leaders].tolist(),
            "group": None if frame.group is None else frame.group.tolist(),
            "highlight": frame.highlight, "overlays": _overlays(frame),
            "modes": {str(a.id): a.mode_name() for a in sim.agents.values()},
        })  # fmt: skip

    cap.worker.submit = submit  # type: ignore[method-assign]
    try:
        sim.run()
    finally:
        cap.close()
        sim.finish()
        sim.close()
    assert len(frames) == round(END_S * FPS)
    return {"dir": out, "frames": frames}


def test_every_replayed_frame_holds_what_the_live_frame_held(live: dict[str, Any]) -> None:
    from skyswarm.gui.replay import ReplaySource

    source = ReplaySource(live["dir"])
    for k, want in enumerate(live["frames"], start=1):
        assert want["t"] == pytest.approx(k / FPS)  # a trajectory sample's time
        got = source.frame_at(k / FPS)
        assert got.time_s == pytest.approx(want["t"])
        assert got.hud == want["hud"], got.time_s
        assert got.ids[got.leaders].tolist() == want["leaders"], got.time_s
        assert (None if got.group is None else got.group.tolist()) == want["group"], got.time_s
        assert got.highlight == want["highlight"]
        assert _overlays(got) == want["overlays"], got.time_s
        assert source.view_data(k / FPS)[2] == want["modes"], got.time_s
    # The change the old timeline showed late: the coverage line and cells first at CHANGE_S,
    # not a multiple of its 0.5 s period.
    huds = [f["hud"][0] for f in live["frames"]]
    first = next(k for k, h in enumerate(huds, start=1) if h != huds[0])
    assert first / FPS == pytest.approx(CHANGE_S)
    changed = live["frames"][first - 1]
    assert changed["overlays"] != live["frames"][first - 2]["overlays"]


def test_the_replayed_picture_at_the_change_is_the_live_picture(live: dict[str, Any]) -> None:
    """Drawn by the same layers with the same camera, the replay's picture of each frame equals
    the live one; at CHANGE_S that includes the HUD's new coverage line and the first cells."""
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    still = ReplayStill(ReplaySource(live["dir"]), SIZE)
    try:
        for k, want in enumerate(live["frames"], start=1):
            got = still.render(k / FPS)  # every frame in order: the camera follows as live's
            diff = np.abs(got.astype(int) - want["picture"]).max(axis=-1)
            assert (diff > 8).mean() < 1e-4, (k / FPS, (diff > 8).mean())
    finally:
        still.release()
    # The change is visible: the live picture at CHANGE_S differs from the frame before where
    # the HUD is (its top left corner) and elsewhere (the cells), so a replay one frame late
    # would fail the comparison above.
    k = round(CHANGE_S * FPS)
    before, at = (live["frames"][i]["picture"].astype(int) for i in (k - 2, k - 1))
    hud_corner = np.abs(at - before)[:60, :320].max(axis=-1)
    assert (hud_corner > 64).sum() > 20
