"""Cost of `run --video`: the reference run (flocking_coverage, to the mission's end) headless
and with a 1280x720, 30 fps video, one after the other in the same invocation, as a ratio.

The video renders only at the video rate (a post-tick listener that returns at once between
frames) and hands each frame to a render process that draws it (EGL, Mesa llvmpipe here) and
pipes its RGBA bytes to ffmpeg (x264 preset ultrafast with B-frames and CABAC, CRF 26;
gui/video.py), while the simulation steps on. A third run is the same with the encoder settings
used before (preset superfast), for the encoder's share under the same load.

The CPU rows count every process (simulation, render process, ffmpeg); "render+encode CPU per
frame" is (video CPU - headless CPU) / frames, which holds better than the wall time on a
machine shared with other work.

    python bench/video.py [SCENARIO]     # table on stdout, JSON in bench/results/video.json
    python bench/video.py [SCENARIO] --before-tree DIR
        # the third run with an older source tree instead (DIR holds skyswarm/, e.g. from
        # `mkdir -p DIR/skyswarm && git archive REV | tar -x -C DIR/skyswarm`)
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 4.0  # video run wall time / headless wall time
TARGET_MB = 40.0


BEFORE = """
import sys
import skyswarm.app.gui_commands as g
import skyswarm.gui.offscreen as o
from skyswarm.app.cli import main
from skyswarm.gui.video import Encoder
g.start_capture = lambda args, sim: o.Capture(
    sim, args.video, None, args.fps, args.size, args.camera, process=True,
    encoder=Encoder(26, "superfast", ""))
sys.exit(main(sys.argv[1:]))
"""


def timed_run(
    scenario: str, out: Path, extra: list[str], before: bool = False, tree: str | None = None
) -> tuple[float, float]:
    """(wall s, CPU s) of one run; the CPU time includes the render process and ffmpeg
    (waited-for descendants). `before`: the encoder settings used before (superfast), or with
    `tree` the plain CLI of the source tree in that directory."""
    env = dict(os.environ)
    head = [sys.executable, "-m", "skyswarm.app.cli"]
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    elif before:
        head = [sys.executable, "-c", BEFORE]
    cmd = [*head, "run", scenario, "--out", str(out), "--quiet"]
    cpu0 = _children_cpu()
    start = time.perf_counter()
    subprocess.run([*cmd, *extra], capture_output=True, env=env)  # exit 5: run cut short
    return time.perf_counter() - start, _children_cpu() - cpu0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    args = sys.argv[1:]
    tree = None
    if "--before-tree" in args:
        k = args.index("--before-tree")
        tree = str(Path(args[k + 1]).resolve())
        del args[k : k + 2]
    scenario = args[0] if args else "flocking_coverage"
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        headless, headless_cpu = timed_run(scenario, d / "plain", [])
        video = d / "run.mp4"
        with_video, video_cpu = timed_run(scenario, d / "video", ["--video", str(video)])
        old = d / "before.mp4"
        before, before_cpu = timed_run(scenario, d / "before", ["--video", str(old)], True, tree)
        before_mb = old.stat().st_size / 1e6
        summary = json.loads((d / "video" / "summary.json").read_text(encoding="utf-8"))
        sim_s = summary["ticks"] * summary["tick_s"]
        size_mb = video.stat().st_size / 1e6
        plain = (d / "plain" / "trajectory.bin").read_bytes()
        same = plain == (d / "video" / "trajectory.bin").read_bytes()
        same_before = plain == (d / "before" / "trajectory.bin").read_bytes()
    frames = int(sim_s * 30 + 1e-6)
    per_frame = 1000 * (video_cpu - headless_cpu) / frames
    per_frame_before = 1000 * (before_cpu - headless_cpu) / frames
    label = f"before ({'tree ' + Path(tree).name if tree else 'superfast'})"
    result = {
        "scenario": scenario,
        "simulated_s": sim_s,
        "frames": frames,
        "headless_wall_s": headless,
        "video_wall_s": with_video,
        "ratio": with_video / headless,
        "headless_cpu_s": headless_cpu,
        "video_cpu_s": video_cpu,
        "cpu_ratio": video_cpu / headless_cpu,
        "render_encode_cpu_ms_per_frame": per_frame,
        "before": label,
        "before_wall_s": before,
        "before_cpu_s": before_cpu,
        "before_ratio": before / headless,
        "before_render_encode_cpu_ms_per_frame": per_frame_before,
        "before_MB": before_mb,
        "before_same_trajectory": same_before,
        "load_average": list(os.getloadavg()),
        "video_MB": size_mb,
        "video_Mbit_s": size_mb * 8 / sim_s,
        "same_trajectory": same,
        "targets": {"ratio_max": TARGET_RATIO, "MB_max": TARGET_MB},
        "machine": platform.platform(),
    }
    print(f"{'run':<26}{'wall s':>9}{'CPU s':>9}{'x headless':>12}{'CPU ms/frame':>14}{'MB':>7}")
    print(f"{'headless':<26}{headless:>9.1f}{headless_cpu:>9.1f}{1.0:>12.2f}")
    for name, wall, cpu, ms, mb in (
        ("--video 720p 30 fps", with_video, video_cpu, per_frame, size_mb),
        (label, before, before_cpu, per_frame_before, before_mb),
    ):
        print(f"{name:<26}{wall:>9.1f}{cpu:>9.1f}{wall / headless:>12.2f}{ms:>14.1f}{mb:>7.1f}")
    print(
        f"{frames} frames over {sim_s:.1f} s; targets: <= {TARGET_RATIO:g}x headless wall, "
        f"<= {TARGET_MB:g} MB; video {result['video_Mbit_s']:.2f} Mbit/s; trajectory identical "
        f"to headless: {same} (before: {same_before}); render+encode CPU per frame "
        f"after/before {per_frame / per_frame_before:.2f}; load average {os.getloadavg()[0]:.1f}"
    )
    out = Path(__file__).parent / "results" / "video.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
