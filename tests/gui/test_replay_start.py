"""The replay from its first frame (issue 30): the timeline's start sample (core/timeline.py,
tick 0) and its samples at each trajectory tick where the view changed give the replay the HUD
lines, leader and overlays the live view had, so its cameras (whose keep-out corners are laid
out from the first frame's HUD and legend) move as the live capture's from the first frame on;
a results directory written before those samples (every 0.5 s, its first at 0.5 s) still
replays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.core.old_timeline import rewrite_as_old
from tests.gui.conftest import ROOT

FLOCK = ROOT / "configs" / "flocking_coverage.toml"
SIZE, FPS, END_S = (1280, 720), 10.0, 2.0  # at 320x180 the HUD has no keep-out corner


def _live(out: Path, camera: Any, layout: Any) -> dict[str, Any]:
    """A recorded run captured as `run --video` captures it: per frame (k = 1, 2, ... at k / FPS)
    the main and second cameras' matrices and the frame's HUD and leader ids; the main view's
    keep-out corners."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture

    sim = Simulator.from_scenario(load_scenario(FLOCK, [f"simulation.duration_s={END_S}"]), out)
    cap = Capture(sim, fps=FPS, size=SIZE, camera=camera, layout=layout)  # no files
    seen: list[tuple[float, np.ndarray, Any, list[str], Any]] = []

    def submit(frame: Any, cam: Any, second: Any, sensed: Any) -> None:
        """What the capture hands its renderer, kept instead of drawn (not compared here)."""
        second_m = None if second is None else second.matrix.copy()
        leaders = frame.ids[frame.leaders].tolist()
        seen.append((frame.time_s, cam.matrix.copy(), second_m, list(frame.hud), leaders))

    cap.worker.submit = submit  # type: ignore[method-assign]
    try:
        sim.run()
        keep_out = cap.director.keep_out
    finally:
        cap.close()
        sim.finish()
        sim.close()
    return {"frames": seen, "keep_out": keep_out}


@pytest.mark.parametrize(
    ("camera", "layout"),
    [("swarm", "single"), ("chase", "pip")],
    ids=["default", "chase-pip"],
)
def test_replay_cameras_and_view_data_equal_the_live_capture_from_the_first_frame(
    tmp_path: Path, camera: str, layout: str
) -> None:
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.multiview import LayoutSpec
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    spec, lay = CameraSpec(camera, target=3 if camera == "chase" else None), LayoutSpec(layout)
    live = _live(tmp_path / "run", spec, lay)
    assert len(live["frames"]) == END_S * FPS
    still = ReplayStill(ReplaySource(tmp_path / "run"), SIZE, spec, layout=lay)
    try:
        # The keep-out corners come from the first frame: the live run's tick 0 (two HUD lines
        # and a legend of two roles) and the replay's tick-0 sample, the same. Without that
        # sample the replay laid them out from a frame without HUD lines (measured: the HUD's
        # corner 0.589 x 0.794 of the half-frame instead of 0.673 x 0.894).
        assert still.director.keep_out == live["keep_out"]
        for k, (t, main, second, hud, leader) in enumerate(live["frames"], start=1):
            assert t == pytest.approx(k / FPS)
            still.draw(k / FPS)  # as export_video draws frame k
            frame = still.source.frame_at(k / FPS)
            # float64 trajectory, the poses the live frames had: the same cameras to rounding
            np.testing.assert_allclose(still.director.camera.matrix, main, rtol=1e-9, atol=1e-9)
            if second is not None:
                got = still.views.second.camera.matrix  # type: ignore[union-attr]
                np.testing.assert_allclose(got, second, rtol=1e-9, atol=1e-9)
            # Every frame the live view's HUD and leader: UAV 1 elected in the first tick from
            # the first frame (0.1 s) on, the first coverage reported at 1.2 s (1.5 s when the
            # timeline was sampled every 0.5 s).
            assert frame.hud == hud and frame.ids[frame.leaders].tolist() == leader, t
            assert leader == [1] and hud[1].startswith("leader 1 ")
        assert len({h[0] for *_, h, _ in live["frames"]}) > 1  # the coverage line changed
    finally:
        still.release()


def test_a_results_directory_without_the_start_samples_still_replays(tmp_path: Path) -> None:
    """Written before the tick-0 sample, every 0.5 s: nothing of the mission's before 0.5 s (as
    such directories always replayed), the same at its samples."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    out = tmp_path / "run"
    sim = Simulator.from_scenario(load_scenario(FLOCK, ["simulation.duration_s=1.0"]), out)
    sim.run()
    sim.finish()
    sim.close()
    new = ReplaySource(out)
    rewrite_as_old(out, [200, 400])
    rows = [json.loads(line) for line in (out / "timeline.jsonl").read_text().splitlines()]
    assert [r["tick"] for r in rows] == [200, 400] and "modes" in rows[1]  # every field
    old = ReplaySource(out)
    early = old.frame_at(0.25)
    assert early.hud == [] and early.leader is None and early.overlays == []
    assert new.frame_at(0.25).hud[1].startswith("leader 1 ")
    for t in (0.5, 1.0):
        a, b = old.frame_at(t), new.frame_at(t)
        assert a.hud == b.hud and np.array_equal(a.leader, b.leader)
        assert len(a.overlays) == len(b.overlays) == 2
    still = ReplayStill(old, SIZE)
    try:
        assert still.render(0.1).shape == (SIZE[1], SIZE[0], 3)
    finally:
        still.release()
