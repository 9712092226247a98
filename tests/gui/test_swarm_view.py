"""Issue 30: every drone readable in the default view (measured with the ID buffer at 1280x720,
the picture a user sees: HUD, legend and inset map hide what is under them), and the replay of a
recorded run drawing what the live view drew at the same time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT

FLOCK = ROOT / "configs" / "flocking_coverage.toml"
BOIDS = ROOT / "configs" / "boids.toml"
SIZE = (1280, 720)
TIMES_S = (2.0, 20.0, 40.0, 80.0)  # the issue saw specks at 2 s
# the replay from its first frame: the start (the timeline's tick-0 sample) and a frame where
# the flock has its leader (elected in the first tick, recorded from the first trajectory tick)
REPLAY_TIMES_S = (0.0, 0.3, *TIMES_S)  # 0.3 s: a trajectory sample (10 Hz)
MIN_PX = 60  # issue 30: each live drone of the reference run covers >= 60 px
MIN_PX_1000 = 12  # ... and each of 1,000 boids >= 12 px


def _measure(canvas: Any, frame: Any, spec: Any = None) -> tuple[np.ndarray, np.ndarray, Any]:
    """(pixels per agent, (N, 2) projected centres, camera) of the default live view."""
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.layout import Layout
    from skyswarm.gui.picking import agent_pixels

    layout = Layout.of(frame, SIZE)
    director = Director(spec or CameraSpec(), SIZE, layout.keep_out(), frame)
    cam = director.update(frame)
    counts = agent_pixels(canvas, frame, cam, layout.rects())
    return counts, cam.project(frame.positions, *SIZE), cam


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference run recorded to 80 s: its live frames, pixel counts and live pictures at
    REPLAY_TIMES_S (the one slow part of this module, ~45 s on a loaded 2-core machine). The
    live pictures are drawn by a ReplayStill fed the live frames: the same canvas, camera and
    layers as `run --video` (its views laid out from the frame at 0 s, as `run --video` lays
    them out from the run's first), so comparing with the replay's compares the data only."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.replay import ReplayStill
    from skyswarm.gui.scene import LiveSource

    out = tmp_path_factory.mktemp("reference")
    scenario = load_scenario(FLOCK, [f"simulation.duration_s={TIMES_S[-1]}"])
    sim = Simulator.from_scenario(scenario, out)
    source = LiveSource(sim)
    canvas = OffscreenCanvas(source.scenery, SIZE)
    result: dict[str, Any] = {"dir": out, "frames": {}, "counts": {}, "xy": {}, "live": {}}
    try:
        for t in REPLAY_TIMES_S:
            while sim.time_s < t - 1e-9:
                sim.step()
            frame = source.frame()
            result["frames"][t] = frame
            result["counts"][t], result["xy"][t], _ = _measure(canvas, frame)
        sim.finish()
    finally:
        sim.close()
    canvas.release()
    # The live picture at each time: the same camera and layers the live view draws, from the
    # live frames (what `run --video` draws at t), next to the replay's.
    live = ReplayStill(_LiveFrames(result["frames"], source.scenery), SIZE)  # type: ignore[arg-type]
    for t in REPLAY_TIMES_S:
        result["live"][t] = live.render(t).copy()
    live.release()
    return result


class _LiveFrames:
    """A ReplaySource look-alike serving the live frames (and the recording's scenery)."""

    def __init__(self, frames: dict[float, Any], scenery: Any) -> None:
        self.frames, self.scenery = frames, scenery

    def frame_at(self, time_s: float) -> Any:
        return self.frames[time_s]


@pytest.mark.slow
@pytest.mark.parametrize("t", TIMES_S)
def test_every_live_drone_of_the_reference_run_covers_60_px_in_frame(
    reference: dict[str, Any], t: float
) -> None:
    frame = reference["frames"][t]
    drones = frame.alive & frame.mobile
    assert drones.sum() == 10, "no UAV of the reference run dies before 80 s"
    counts, xy = reference["counts"][t][drones], reference["xy"][t][drones]
    assert counts.min() >= MIN_PX, (t, counts)
    assert np.all((xy >= 0) & (xy < SIZE)), (t, xy)
    # Large, not just visible: the flock spans a good part of the frame's width or height.
    span = xy.max(axis=0) - xy.min(axis=0)
    assert max(span[0] / SIZE[0], span[1] / SIZE[1]) >= 0.4, (t, span)


@pytest.mark.slow
@pytest.mark.parametrize("t", REPLAY_TIMES_S)
def test_replay_frame_equals_the_live_frame(reference: dict[str, Any], t: float) -> None:
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    still = ReplayStill(ReplaySource(reference["dir"]), SIZE)
    replay = still.render(t).astype(int)
    still.release()
    live = reference["live"][t].astype(int)
    diff = np.abs(replay - live).max(axis=-1)
    # The recording stores float32 poses and the live view has no recorded scenery here (flat
    # ground either way): a few anti-aliased edge pixels may differ, not a drone's place.
    assert (diff > 24).mean() < 0.002, (t, (diff > 24).mean())
    assert diff.mean() < 0.5, (t, diff.mean())


@pytest.mark.slow
def test_snapshot_command_renders_a_recorded_moment(
    reference: dict[str, Any], tmp_path: Path
) -> None:
    from PIL import Image

    from skyswarm.app.cli import main

    out = tmp_path / "snap.png"
    code = main(["snapshot", str(reference["dir"]), "--time", "40", "--out", str(out)])
    assert code == 0 and out.is_file()
    image = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert image.shape == (SIZE[1], SIZE[0], 3)
    diff = np.abs(image - reference["live"][40.0].astype(int)).max(axis=-1)
    assert (diff > 24).mean() < 0.002
    # Another camera from the same options: top, chasing UAV 3, differs from the default.
    top = tmp_path / "top.png"
    args = ["snapshot", str(reference["dir"]), "--time", "40", "--out", str(top)]
    assert main([*args, "--camera", "chase", "--target", "3", "--distance", "6"]) == 0
    chase = np.asarray(Image.open(top).convert("RGB")).astype(int)
    assert np.abs(chase - image).max(axis=-1).mean() > 10
    bad = main([*args, "--time", "1000"])
    assert bad == 2  # a time past the recording: one line, exit 2


@pytest.mark.slow
def test_1000_boids_each_cover_12_px_at_the_default_zoom() -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import LiveSource

    overrides = ["agents.count=1000", "simulation.physics=fast", "simulation.duration_s=1"]
    sim = Simulator.from_scenario(load_scenario(BOIDS, overrides))
    try:
        source = LiveSource(sim)
        canvas = OffscreenCanvas(source.scenery, SIZE)
        for t in (0.0, 1.0):
            while sim.time_s < t - 1e-9:
                sim.step()
            frame = source.frame()
            counts, xy, _ = _measure(canvas, frame)
            drones = frame.alive & frame.mobile
            assert drones.sum() == 1000
            assert counts[drones].min() >= MIN_PX_1000, (t, np.sort(counts[drones])[:10])
            assert np.all((xy[drones] >= 0) & (xy[drones] < SIZE))
        canvas.release()
    finally:
        sim.close()


def test_markers_switch_off_to_meshes_only() -> None:
    """Markers off: a far drone is its mesh (a few pixels), on: a marker of >= 60 px."""
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.picking import agent_pixels
    from skyswarm.gui.scene import Frame, Scenery

    frame = Frame(
        0.0, np.array([1]), ["uav"], np.zeros(1, np.intp), np.array([[0.0, 0.0, 5.0]]),
        np.array([[0.0, 0.0, 0.0, 1.0]]), np.ones(1, bool),
    )  # fmt: skip
    canvas = OffscreenCanvas(Scenery(), SIZE)
    cam = OrbitCamera((0.0, 0.0, 5.0), distance=150.0)
    on = agent_pixels(canvas, frame, cam)[0]
    canvas.renderer.markers = False
    off = agent_pixels(canvas, frame, cam)[0]
    canvas.release()
    assert on >= MIN_PX and off < 30, (on, off)


@pytest.mark.parametrize("pitch_deg", [0.0, 10.0, 20.0])
def test_fpv_camera_leaves_out_the_uav_it_rides_and_chase_shows_it(pitch_deg: float) -> None:
    """FPV from UAV 1's camera mount, nose down by `pitch_deg` as in forward flight: its own
    arms and rotors are not drawn (they covered ~126,000 px at 10 deg, 14 % of the frame),
    UAV 2 six metres ahead is; the chase camera behind UAV 1 shows UAV 1 large."""
    from skyswarm.gui.director import CameraSpec, Director
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.picking import agent_pixels
    from skyswarm.gui.scene import Frame, Scenery

    half = np.radians(pitch_deg) / 2  # positive about +y: nose (+x) down
    q = [0.0, np.sin(half), 0.0, np.cos(half)]
    frame = Frame(
        0.0, np.array([1, 2]), ["uav"], np.zeros(2, np.intp),
        np.array([[0.0, 0.0, 5.0], [6.0, 0.0, 4.5]]), np.array([q, q]), np.ones(2, bool),
    )  # fmt: skip
    canvas = OffscreenCanvas(Scenery(), SIZE)
    try:
        seen = {}
        for name in ("fpv", "chase"):
            director = Director(CameraSpec(name, target=1), SIZE, None, frame)
            seen[name] = agent_pixels(canvas, frame, director.update(frame))
    finally:
        canvas.release()
    assert seen["fpv"][0] == 0 and seen["fpv"][1] >= MIN_PX, seen
    assert seen["chase"][0] >= 400 and seen["chase"][1] >= 40, seen


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [[], ["--camera", "chase", "--target", "3", "--proximity", "--layout", "pip"]],
    ids=["default", "chase-pip-proximity"],
)
def test_run_frames_equal_snapshots_of_the_recording(tmp_path: Path, options: list[str]) -> None:
    """The live path end to end: `run --frames` (render processes fed by the simulation) and
    `snapshot` of the run's recording at the same times, with the same camera and layer
    options, draw the same pictures (measured: no pixel off by more than 24 levels, mean 0.08
    to 0.15 levels)."""
    from PIL import Image

    from skyswarm.app.cli import main

    frames, run = tmp_path / "frames", tmp_path / "run"
    args = ["run", str(FLOCK), "--duration", "4", "--fps", "1", "--quiet"]
    assert main([*args, "--frames", str(frames), "--out", str(run), *options]) == 5  # time limit
    assert len(list(frames.glob("frame_*.png"))) == 4
    for t in (1, 2, 4):  # frame k (from 0) shows t = (k + 1) / fps
        live = np.asarray(Image.open(frames / f"frame_{t - 1:05d}.png").convert("RGB"))
        out = tmp_path / f"snap_{t}.png"
        assert main(["snapshot", str(run), "--time", str(t), "--out", str(out), *options]) == 0
        replay = np.asarray(Image.open(out).convert("RGB"))
        assert replay.shape == live.shape == (SIZE[1], SIZE[0], 3)
        diff = np.abs(replay.astype(int) - live.astype(int)).max(axis=-1)
        assert (diff > 24).mean() < 0.002 and diff.mean() < 0.5, (t, (diff > 24).mean())
    # Not equal by accident: the picture moves between the frames compared.
    first = np.asarray(Image.open(frames / "frame_00000.png").convert("RGB")).astype(int)
    last = np.asarray(Image.open(frames / "frame_00003.png").convert("RGB")).astype(int)
    assert (np.abs(first - last).max(axis=-1) > 24).mean() > 0.01
