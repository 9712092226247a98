"""Regenerate the README's and the docs' pictures and the reference run's clip with the
command line only (`skyswarm run`, `snapshot`, `replay --video`, `view`): every picture here
can be made again by a user with the commands this script prints.

    python docs/make_screenshots.py [SECONDS]

Records the reference scenario (configs/flocking_coverage.toml) for SECONDS (40) of simulated
time and 1,000 boids on the fast backend for 3 s, then writes into docs/:

- screenshot_3d.png: behind the leader, the flock abreast (`--camera chase --target 1
  --distance 22 --elevation 25`) at t = SECONDS;
- screenshot_top.png: `--camera top` with the proximity rings (`--proximity`);
- screenshot_replay.png: chasing UAV 3 with the top view as a picture-in-picture
  (`--camera chase --target 3 --layout pip`);
- screenshot_1000.png: the 1,000 boids at the default camera;
- reference_run.mp4: the reference run's first SECONDS s, 640x360 at 15 fps (`replay --video`);
- screenshot_window.png: the viewer window (`skyswarm view`, its P key pressed by xdotool on
  Xvfb until a screenshot is at t >= 4 s; skipped without them).

The PNGs are written as 256-colour palette images (about a third of the RGB file's size).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
FLOCK = ROOT / "configs" / "flocking_coverage.toml"
BOIDS = ROOT / "configs" / "boids.toml"
CLIP = DOCS / "reference_run.mp4"
CLIP_MAX_MB = 5.0
WINDOW_AT_S = 4.0  # s, simulated: the window's screenshot is the first at or after this
WINDOW_WAIT_S = 600.0  # s, wall: at most this long for it


def skyswarm(*args: str, env: dict[str, str] | None = None) -> None:
    """Run `skyswarm ARGS` (this checkout's), printing the command; a failure stops here
    (a run cut at its duration exits 5: expected)."""
    cmd = [sys.executable, "-m", "skyswarm.app.cli", *args]
    print("$ skyswarm " + " ".join(args), flush=True)
    code = subprocess.run(cmd, env=env).returncode
    if code not in (0, 5):
        raise SystemExit(f"skyswarm {args[0]} exited with {code}")


def small_png(path: Path) -> None:
    """Rewrite `path` as a 256-colour palette PNG (max-coverage: the colours of markers and
    legend within a few levels; median cut turned the base station's purple grey)."""
    image = Image.open(path).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MAXCOVERAGE).save(path, optimize=True)
    print(f"wrote {path} ({path.stat().st_size // 1024} kB)")


def snapshot(run: Path, t: float, name: str, *options: str) -> None:
    out = DOCS / name
    # --overwrite: the docs' own pictures, which this script made before
    skyswarm("snapshot", str(run), "--time", f"{t:g}", "--out", str(out), "--overwrite", *options)
    small_png(out)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
    with tempfile.TemporaryDirectory() as tmp:
        run, boids = Path(tmp) / "flock", Path(tmp) / "boids"
        skyswarm("run", str(FLOCK), "--duration", f"{seconds:g}", "--out", str(run), "--quiet")
        snapshot(
            run, seconds, "screenshot_3d.png",
            "--camera", "chase", "--target", "1", "--distance", "22", "--elevation", "25",
        )  # fmt: skip
        snapshot(run, seconds, "screenshot_top.png", "--camera", "top", "--proximity")
        snapshot(
            run, seconds, "screenshot_replay.png",
            "--camera", "chase", "--target", "3", "--distance", "6", "--layout", "pip",
        )  # fmt: skip
        skyswarm(
            "replay", str(run), "--video", str(CLIP), "--size", "640x360", "--fps", "15",
            "--overwrite",
        )  # fmt: skip
        mb = CLIP.stat().st_size / 1e6
        print(f"wrote {CLIP} ({mb:.1f} MB)")
        if mb > CLIP_MAX_MB:
            raise SystemExit(f"{CLIP} is {mb:.1f} MB, over {CLIP_MAX_MB} MB")
        skyswarm(
            "run", str(BOIDS), "--duration", "3", "--out", str(boids), "--quiet",
            "--set", "agents.count=1000", "--set", "simulation.physics='fast'",
        )  # fmt: skip
        snapshot(boids, 3.0, "screenshot_1000.png")
        window(seconds, Path(tmp) / "view")


def window(seconds: float, out: Path) -> None:
    """`skyswarm view` of the reference run with qrsim sensors, chasing UAV 5 with trails and
    the proximity rings, on its own Xvfb; xdotool presses P (a screenshot into `out`, named by
    the simulated time) every 2 s until one is at or after WINDOW_AT_S of simulated time (the
    window's pace depends on the machine: llvmpipe on a loaded one runs it at 0.1x), then
    Escape."""
    xvfb, xdotool = shutil.which("Xvfb"), shutil.which("xdotool")
    if xvfb is None or xdotool is None:
        print("no Xvfb or no xdotool: screenshot_window.png not made")
        return
    display = ":95"
    server = subprocess.Popen([xvfb, display, "-screen", "0", "1600x900x24", "-nolisten", "tcp"])
    env = {**os.environ, "DISPLAY": display}
    try:
        time.sleep(1.0)
        args = [
            "view", str(FLOCK), "--set", "uav.sensors.preset='qrsim'", "--speed", "4",
            "--camera", "chase", "--target", "5", "--distance", "7", "--trails", "--proximity",
            "--out", str(out),
        ]  # fmt: skip
        print("$ skyswarm " + " ".join(args), f"  (then key P at t >= {WINDOW_AT_S:g} s, Escape)")
        viewer = subprocess.Popen([sys.executable, "-m", "skyswarm.app.cli", *args], env=env)
        time.sleep(8.0)  # start-up
        key = [xdotool, "search", "--name", "3D view", "windowfocus", "--sync", "key"]
        deadline = time.monotonic() + WINDOW_WAIT_S
        shot = None
        while shot is None and time.monotonic() < deadline and viewer.poll() is None:
            subprocess.run([*key, "p"], env=env, check=False)  # fails until the window is up
            time.sleep(2.0)
            late = [p for p in sorted(out.glob("screenshot_*.png")) if shot_time(p) >= WINDOW_AT_S]
            shot = late[0] if late else None
        subprocess.run([*key, "Escape"], env=env, check=False)
        viewer.wait(timeout=60)
        if shot is None:
            print(f"no screenshot at t >= {WINDOW_AT_S:g} s: screenshot_window.png not made")
            return
        target = DOCS / "screenshot_window.png"
        shutil.copyfile(shot, target)
        small_png(target)
    finally:
        server.terminate()
        server.wait()


def shot_time(path: Path) -> float:
    """The simulated time, s, in a screenshot's name (screenshot_00012.40s.png, ...-2.png)."""
    return float(path.stem.split("_", 1)[1].split("s", 1)[0])


if __name__ == "__main__":
    main()
