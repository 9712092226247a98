"""Offscreen rendering (EGL, no DISPLAY): pixels, video, frames; the GUI stays optional."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.gui.conftest import ROOT, near_color, shade_match

DROP = ROOT / "configs" / "drop_test.toml"
EXIT_TIME_LIMIT = 5  # app/cli.py: the run hit its duration short of the mission's target


def _no_display_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env


def test_headless_run_imports_no_gui_library(tmp_path: Path) -> None:
    # In a fresh interpreter, so other tests' imports cannot hide an import from core.
    code = f"""
import sys
import skyswarm.app.cli, skyswarm.core.simulator, skyswarm.core.recorder
import skyswarm.missions.drop_test
out = {str(tmp_path / "r")!r}
rc = skyswarm.app.cli.main(["run", {str(DROP)!r}, "--duration", "0.1", "--quiet", "--out", out])
assert rc in (0, 5), rc  # 5: the shortened run ends at its time limit (app/cli.py)
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("pyglet", "moderngl"))
print("GUI modules:", bad)
sys.exit(1 if bad else 0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "GUI modules: []" in out.stdout


def test_offscreen_render_puts_each_box_at_its_projected_pixel() -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.renderer import GRID_MAJOR, ROLE_COLORS, SKY
    from skyswarm.gui.scene import LiveSource

    sim = Simulator.from_scenario(load_scenario(DROP))
    src = LiveSource(sim)
    frame = src.frame()
    canvas = OffscreenCanvas(src.scenery, (640, 360))
    cam = OrbitCamera(target=(2.0, 2.0, 8.0), distance=14.0, azimuth_deg=-70, elevation_deg=35)
    img = canvas.render(frame, cam)
    assert img.shape == (360, 640, 3)
    px = cam.project(frame.positions, 640, 360)
    assert len(px) == 9
    for (x, y), agent_id in zip(px, frame.ids):
        assert 0 <= x < 640 and 0 <= y < 360, (agent_id, x, y)
        assert shade_match(img[int(y), int(x)], ROLE_COLORS["body"]), (
            agent_id,
            img[int(y), int(x)],
        )
    # Ground grid: the major line x = 0 m, at 5 on-screen points along it (between the boxes'
    # shadows, which darken the line under the boxes at y = 0, 2, 4 m).
    line = cam.project(np.array([[0.0, y, 0.0] for y in (1, 3, 5, 6, 8)]), 640, 360)
    hits = [near_color(img, x, y, GRID_MAJOR) for x, y in line]
    assert all(hits), hits
    # The ground reaches the top of this view (10 deg below the horizon, ~90 m away): the plane
    # covers far more than the scenario, so no sky shows under the horizon.
    assert not np.allclose(img[0, 320], np.array(SKY) * 255, atol=8)
    assert img[0, 320, 1] > img[0, 320, 2]  # greenish ground, fogged, not blue sky
    canvas.release()
    sim.close()


def test_run_with_video_and_frames_without_display(tmp_path: Path) -> None:
    import imageio_ffmpeg
    from PIL import Image

    # 30 m drop: the boxes are still falling at 2 s, so the run lasts its full duration.
    args = ["--duration", "2", "--set", "drop_test.height_m=30.0", "--quiet"]
    cmd = [sys.executable, "-m", "skyswarm.app.cli", "run", str(DROP), *args]
    video, frames = tmp_path / "out.mp4", tmp_path / "frames"
    out = subprocess.run(
        [*cmd, "--out", str(tmp_path / "with"), "--video", str(video), "--frames", str(frames)],
        env=_no_display_env(), capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert out.returncode == EXIT_TIME_LIMIT, out.stderr  # cut at 2 s, boxes still falling
    reader = imageio_ffmpeg.read_frames(str(video))
    meta = next(reader)
    decoded = [np.frombuffer(f, np.uint8).reshape(720, 1280, 3) for f in reader]
    assert meta["size"] == (1280, 720)
    assert meta["fps"] == 30.0
    assert len(decoded) == 60  # 2 s x 30 fps
    pngs = sorted(frames.glob("frame_*.png"))
    assert len(pngs) == 60
    for png in (pngs[0], pngs[-1]):
        img = np.asarray(Image.open(png))
        assert img.shape == (720, 1280, 3)
        assert img.std() > 10  # not blank
        assert len(np.unique(img.reshape(-1, 3), axis=0)) > 20
    # Rendering never changes results: same trajectory bytes as a run with no video.
    plain = subprocess.run(
        [*cmd, "--out", str(tmp_path / "plain")], capture_output=True, text=True, cwd=ROOT
    )
    assert plain.returncode == EXIT_TIME_LIMIT, plain.stderr
    a = (tmp_path / "with" / "trajectory.bin").read_bytes()
    b = (tmp_path / "plain" / "trajectory.bin").read_bytes()
    assert len(a) > 0 and a == b


def test_replay_export_frame_count(tmp_path: Path) -> None:
    from skyswarm.app.cli import main
    from skyswarm.gui.replay import ReplaySource, export_video

    rc = main(["run", str(DROP), "--duration", "1", "--quiet", "--out", str(tmp_path / "r")])
    assert rc == EXIT_TIME_LIMIT  # 1 s: the boxes have not all landed
    src = ReplaySource(tmp_path / "r")
    assert src.duration_s == pytest.approx(1.0)
    n = export_video(tmp_path / "r", None, tmp_path / "f", fps=10, size=(320, 240))
    assert n == 10 and len(list((tmp_path / "f").glob("*.png"))) == 10


def test_render_process_writes_the_same_frames_as_rendering_in_process(tmp_path: Path) -> None:
    from PIL import Image

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture

    flock = ROOT / "configs" / "flocking_coverage.toml"
    images = {}
    for process in (False, True):
        sim = Simulator.from_scenario(load_scenario(flock, ["simulation.duration_s=3.0"]))
        out = tmp_path / f"p{process}"
        cap = Capture(sim, frames=out, fps=4.0, size=(320, 180), process=process)
        sim.run()
        cap.close()
        sim.close()
        images[process] = [np.asarray(Image.open(f)) for f in sorted(out.glob("*.png"))]
    # 3 s at 4 fps: 12 frames; overlays travel with the first frame, then only when changed.
    assert len(images[False]) == len(images[True]) == 12
    for a, b in zip(images[False], images[True]):
        assert np.array_equal(a, b)


def test_render_process_draws_each_frame_with_the_camera_as_it_was_submitted(tmp_path) -> None:
    """The caller moves one camera object between frames (the swarm follower does, every
    frame). The render process must draw each frame from where the camera was when it was
    submitted, however deep the queue: it once drew queued frames from a later camera."""
    from PIL import Image

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import LocalRender, RenderPool, RenderSpec
    from skyswarm.gui.framing import default_camera, scene_extent, shown_points
    from skyswarm.gui.scene import LiveSource

    flock = ROOT / "configs" / "flocking_coverage.toml"
    sim = Simulator.from_scenario(load_scenario(flock, ["simulation.duration_s=1.0"]))
    source = LiveSource(sim)
    frame = source.frame()
    shown = shown_points(frame)
    center, half = scene_extent(shown)
    azimuths = [-60.0 + 30.0 * k for k in range(8)]  # 8 frames: they all fit in the queue
    images = {}
    for name, make in (("local", LocalRender), ("process", RenderPool)):
        out = tmp_path / name
        spec = RenderSpec(source.scenery, (160, 90), tuple(center), half, None, out, 4.0, False)
        worker, camera = make(spec), default_camera("orbit", shown)
        for az in azimuths:
            camera.azimuth_deg = az
            worker.submit(frame, camera)
        camera.azimuth_deg = 120.0  # moved on before the queued frames were drawn
        worker.close()
        images[name] = [np.asarray(Image.open(f)) for f in sorted(out.glob("*.png"))]
    sim.close()
    assert len(images["local"]) == len(images["process"]) == len(azimuths)
    for a, b in zip(images["local"], images["process"]):
        assert np.array_equal(a, b)
    assert not np.array_equal(images["local"][0], images["local"][-1])  # the views differ


def test_render_pool_writes_the_video_of_one_renderer_in_frame_order(tmp_path: Path) -> None:
    """Two render processes draw alternate frames into shared memory and this process writes
    them to ffmpeg in order: the decoded video equals the one drawn and encoded in-process,
    frame by frame, and the shared memory is gone afterwards."""
    from multiprocessing.shared_memory import SharedMemory

    import imageio_ffmpeg

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.capture import Capture

    flock = ROOT / "configs" / "flocking_coverage.toml"
    decoded = {}
    for workers in (None, 2):
        sim = Simulator.from_scenario(load_scenario(flock, ["simulation.duration_s=2.0"]))
        video = tmp_path / f"w{workers}.mp4"
        cap = Capture(
            sim, video=video, fps=15.0, size=(320, 180), process=workers is not None,
            workers=workers,
        )  # fmt: skip
        sim.run()
        if workers is not None:
            shm_name = cap.worker.shm.name
        cap.close()
        sim.close()
        reader = imageio_ffmpeg.read_frames(str(video))
        next(reader)
        decoded[workers] = [np.frombuffer(f, np.uint8) for f in reader]
    assert len(decoded[None]) == len(decoded[2]) == 30  # 2 s at 15 fps
    for a, b in zip(decoded[None], decoded[2]):
        assert np.array_equal(a, b)
    # the frames differ from one another, so a swapped pair would have shown
    assert not np.array_equal(decoded[None][0], decoded[None][-1])
    with pytest.raises(FileNotFoundError):
        SharedMemory(name=shm_name)


def test_render_pool_reports_a_worker_that_fails(tmp_path: Path) -> None:
    """A render process that cannot start (a scenery mesh that is not there) makes the pool
    raise, naming the error, instead of waiting for frames that never come."""
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.capture import RenderPool, RenderSpec
    from skyswarm.gui.scene import Frame, Scenery, upright

    scenery = Scenery(meshes=((tmp_path / "missing.obj", (0.0, 0.0, 0.0), 1.0),))
    spec = RenderSpec(scenery, (64, 36), (0.0, 0.0), 10.0, tmp_path / "v.mp4", None, 10.0, False)
    pool = RenderPool(spec, workers=2)
    frame = Frame(0.0, np.array([1]), ["uav"], np.zeros(1, int), np.zeros((1, 3)), upright(1),
                  np.ones(1, bool))  # fmt: skip
    failed = "video render process failed: worker .*missing"
    with pytest.raises(RuntimeError, match=failed):
        for _ in range(1000):  # a failure shows at a submit or at close, within seconds
            pool.submit(frame, OrbitCamera((0.0, 0.0, 0.0), 10.0))
        pool.close()
    with pytest.raises(RuntimeError, match=failed):  # closing after it cleans up, and says so
        pool.close()
    assert not any(p.is_alive() for p in pool.procs)


def test_a_pool_closed_while_its_collector_waits_for_the_next_frame_is_no_failure(
    tmp_path: Path,
) -> None:
    """Every frame collected, the collector waits for one more; close() then ends the workers,
    which exit at once. The collector must see the end, not a worker that left its frame
    undone ("video render process failed: exited with 0", seen once in CI)."""
    import time

    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.capture import WAIT_S, RenderPool, RenderSpec
    from skyswarm.gui.scene import Frame, Scenery, upright

    frame = Frame(0.0, np.array([1]), ["uav"], np.zeros(1, int), np.zeros((1, 3)), upright(1),
                  np.ones(1, bool))  # fmt: skip
    for k in range(6):
        spec = RenderSpec(Scenery(), (64, 36), (0.0, 0.0), 10.0, tmp_path / f"v{k}.mp4", None,
                          10.0, False)  # fmt: skip
        pool = RenderPool(spec, workers=2)
        for _ in range(4):
            pool.submit(frame, OrbitCamera((0.0, 0.0, 0.0), 10.0))
        time.sleep(2.0 + WAIT_S * k / 6)  # the four collected; close at a spread of moments
        pool.close()  # raised here, now and then, before
        assert pool.video is not None and (tmp_path / f"v{k}.mp4").stat().st_size > 0


def test_render_processes_rasterise_with_the_threads_the_cores_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llvmpipe's rasteriser threads in each render process: none where the render processes,
    the simulation and ffmpeg fill the cores (2 cores: the drawing thread rasterises), else
    the cores left over; counted by Mesa's thread names while the pool draws. A user's own
    LP_NUM_THREADS is kept."""
    import os
    import time

    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.capture import RenderPool, RenderSpec, raster_threads
    from skyswarm.gui.scene import Frame, Scenery, upright

    assert [raster_threads(c, 2) for c in (1, 2, 3, 4, 6, 8)] == [0, 0, 0, 1, 2, 3]
    assert raster_threads(2, 1) == 0 and raster_threads(4, 1) == 2

    def threads_seen(env: str | None) -> list[int]:
        if env is None:
            monkeypatch.delenv("LP_NUM_THREADS", raising=False)
        else:
            monkeypatch.setenv("LP_NUM_THREADS", env)
        spec = RenderSpec(Scenery(), (64, 36), (0.0, 0.0), 10.0, tmp_path / f"v{env}.mp4", None,
                          10.0, False)  # fmt: skip
        pool = RenderPool(spec, workers=2)
        frame = Frame(0.0, np.array([1]), ["uav"], np.zeros(1, int), np.zeros((1, 3)), upright(1),
                      np.ones(1, bool))  # fmt: skip
        try:
            for _ in range(20):
                pool.submit(frame, OrbitCamera((0.0, 0.0, 0.0), 10.0))
            time.sleep(3.0)  # both workers have drawn (their contexts exist) and wait for more
            counts = []
            for p in pool.procs:
                names = [(Path(t) / "comm").read_text().strip()
                         for t in Path(f"/proc/{p.pid}/task").iterdir()]  # fmt: skip
                counts.append(sum(n.startswith("llvmpipe") for n in names))
        finally:
            pool.close()
        return counts

    assert threads_seen(None) == [raster_threads(os.cpu_count() or 1, 2)] * 2
    assert threads_seen("1") == [1, 1]


def test_video_without_the_gui_extra_is_a_one_line_bad_input(tmp_path: Path) -> None:
    """`run --video` where moderngl is not installed: exit 2 and one line naming the option and
    the extra to install, before any results directory exists."""
    out = tmp_path / "r"
    code = f"""
import sys
sys.modules["moderngl"] = None  # import moderngl now raises ImportError, as when not installed
from skyswarm.app.cli import main
sys.exit(main(["run", {str(DROP)!r}, "--duration", "0.1", "--out", {str(out)!r},
               "--video", {str(tmp_path / "v.mp4")!r}]))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--video" in lines[0] and "skyswarm[gui]" in lines[0], lines
    assert not out.exists()


def test_video_of_odd_size_is_a_one_line_bad_input(tmp_path: Path) -> None:
    """yuv420p needs an even width and height: `--size 1281x720` with `--video` is refused
    before the run starts (exit 2, one line naming --size), not in the render process."""
    out = tmp_path / "r"
    cmd = [sys.executable, "-m", "skyswarm.app.cli", "run", str(DROP), "--duration", "0.1",
           "--out", str(out), "--video", str(tmp_path / "v.mp4"), "--size", "1281x720"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "--size = '1281x720'" in lines[0] and "even" in lines[0], lines
    assert not out.exists()
