"""Cost of `run --video`: the reference run (flocking_coverage, to the mission's end) headless
and with a 1280x720, 30 fps video, one after the other in the same invocation, as a ratio.

The video renders only at the video rate (a post-tick listener that returns at once between
frames) and hands each frame to a render process that draws it (EGL) and encodes H.264 at CRF
26, preset superfast (gui/offscreen.py), while the simulation steps on; the ground grid fades out
before it gets finer than a few pixels, so it does not shimmer (shimmer is noise the encoder
pays bits for). A third run renders in the simulation's process with preset veryfast, as before
the render process, for a ratio measured under the same load.

    python bench/video.py [SCENARIO]     # table on stdout, JSON in bench/results/video.json
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
o.VIDEO_PRESET = "veryfast"
g.start_capture = lambda args, sim: o.Capture(
    sim, args.video, None, args.fps, args.size, args.camera, process=False)
sys.exit(main(sys.argv[1:]))
"""


def timed_run(
    scenario: str, out: Path, extra: list[str], before: bool = False
) -> tuple[float, float]:
    """(wall s, CPU s) of one run; the CPU time includes ffmpeg (a waited-for descendant), and
    holds better than the wall time on a machine shared with other work. `before`: render in
    the simulation's process, preset veryfast."""
    head = [sys.executable, "-c", BEFORE] if before else [sys.executable, "-m", "skyswarm.app.cli"]
    cmd = [*head, "run", scenario, "--out", str(out), "--quiet"]
    cpu0 = _children_cpu()
    start = time.perf_counter()
    subprocess.run([*cmd, *extra], capture_output=True)  # exit 5 if the run is cut short
    return time.perf_counter() - start, _children_cpu() - cpu0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> None:
    scenario = sys.argv[1] if len(sys.argv) > 1 else "flocking_coverage"
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        headless, headless_cpu = timed_run(scenario, d / "plain", [])
        video = d / "run.mp4"
        with_video, video_cpu = timed_run(scenario, d / "video", ["--video", str(video)])
        old = d / "before.mp4"
        before, before_cpu = timed_run(scenario, d / "before", ["--video", str(old)], True)
        before_mb = old.stat().st_size / 1e6
        summary = json.loads((d / "video" / "summary.json").read_text(encoding="utf-8"))
        sim_s = summary["ticks"] * summary["tick_s"]
        size_mb = video.stat().st_size / 1e6
        same = (d / "plain" / "trajectory.bin").read_bytes() == (
            d / "video" / "trajectory.bin"
        ).read_bytes()
    result = {
        "scenario": scenario,
        "simulated_s": sim_s,
        "frames": round(sim_s * 30),
        "headless_wall_s": headless,
        "video_wall_s": with_video,
        "ratio": with_video / headless,
        "headless_cpu_s": headless_cpu,
        "video_cpu_s": video_cpu,
        "cpu_ratio": video_cpu / headless_cpu,
        "before_wall_s": before,
        "before_cpu_s": before_cpu,
        "before_ratio": before / headless,
        "before_MB": before_mb,
        "load_average": list(os.getloadavg()),
        "video_MB": size_mb,
        "video_Mbit_s": size_mb * 8 / sim_s,
        "same_trajectory": same,
        "targets": {"ratio_max": TARGET_RATIO, "MB_max": TARGET_MB},
        "machine": platform.platform(),
    }
    print(f"{'run':<22}{'wall s':>10}{'CPU s':>10}")
    print(f"{'headless':<22}{headless:>10.1f}{headless_cpu:>10.1f}")
    print(f"{'--video 720p 30 fps':<22}{with_video:>10.1f}{video_cpu:>10.1f}")
    print(f"{'before (in-process)':<22}{before:>10.1f}{before_cpu:>10.1f}")
    print(
        f"ratio wall {result['ratio']:.2f}, CPU {result['cpu_ratio']:.2f} "
        f"(target <= {TARGET_RATIO:g}), video {size_mb:.1f} MB "
        f"(target <= {TARGET_MB:g}), {result['video_Mbit_s']:.2f} Mbit/s over {sim_s:.1f} s, "
        f"trajectory identical: {same}; before: ratio {before / headless:.2f}, {before_mb:.1f} MB; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    out = Path(__file__).parent / "results" / "video.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
