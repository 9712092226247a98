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
    python bench/video.py --repeat 3 [--no-before]
        # three rounds one after the other, and the median ratio: the headless run alone moves
        # by 10-20 % between minutes on a shared machine, so one round's ratio is a rough figure;
        # the comparison run goes first in every other round
    python bench/video.py --replay RUN [--before-tree DIR] [--repeat N]
        # `replay RUN --video` (RUN: a results directory) with this tree and DIR's, alternated

Every round also prints the `--video` run's CPU by process, read from /proc (render
processes, ffmpeg, and the simulation's own process beyond the headless run's CPU).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
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
import skyswarm.gui.capture as o
from skyswarm.app.cli import main
from skyswarm.gui.video import Encoder
g.start_capture = lambda args, sim: o.Capture(
    sim, args.video, None, args.fps, args.size, args.camera, process=True,
    encoder=Encoder(26, "superfast", ""))
sys.exit(main(sys.argv[1:]))
"""


def timed_run(
    scenario: str,
    out: Path,
    extra: list[str],
    before: bool = False,
    tree: str | None = None,
    procs: dict[str, float] | None = None,
) -> tuple[float, float]:
    """(wall s, CPU s) of one run; the CPU time includes the render process and ffmpeg
    (waited-for descendants). `before`: the encoder settings used before (superfast), or with
    `tree` the plain CLI of the source tree in that directory. `procs`, if given, gets the
    CPU s of the run's own process ("simulation"), its render processes ("render") and ffmpeg
    ("ffmpeg"), read from /proc every SAMPLE_S (Linux; the last reading before each exits)."""
    env = dict(os.environ)
    head = [sys.executable, "-m", "skyswarm.app.cli"]
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    elif before:
        head = [sys.executable, "-c", BEFORE]
    cmd = [*head, "run", scenario, "--out", str(out), "--quiet"]
    return _timed([*cmd, *extra], env, procs)  # exit 5: run cut short


SAMPLE_S = 0.2  # how often a run's processes' CPU times are read from /proc


def _timed(
    cmd: list[str], env: dict[str, str], procs: dict[str, float] | None = None
) -> tuple[float, float]:
    """(wall s, CPU s of it and its descendants) of `cmd`; `procs` as `timed_run` fills it."""
    cpu0 = _children_cpu()
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    last: dict[int, tuple[str, float]] = {}
    while procs is not None and child.poll() is None:
        for pid in [child.pid, *_descendants(child.pid)]:
            cpu = _proc_cpu(pid)
            if cpu is not None:
                last[pid] = (last[pid][0] if pid in last else _kind(pid, child.pid), cpu[0])
        time.sleep(SAMPLE_S)
    child.wait()
    wall = time.perf_counter() - start
    if procs is not None:
        for kind, cpu in last.values():
            procs[kind] = procs.get(kind, 0.0) + cpu
    return wall, _children_cpu() - cpu0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _proc_cpu(pid: int) -> tuple[float, int] | None:
    """(user + system CPU s, parent pid) of a process from /proc, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[1])


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (cpu := _proc_cpu(int(name))) is not None:
            children.setdefault(cpu[1], []).append(int(name))
    out, stack = [], [root]
    while stack:
        for pid in children.get(stack.pop(), []):
            out.append(pid)
            stack.append(pid)
    return out


def _kind(pid: int, root: int) -> str:
    if pid == root:
        return "simulation"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "ffmpeg" in cmd:
        return "ffmpeg"
    return "render" if "multiprocessing" in cmd and "resource_tracker" not in cmd else "other"


def one_round(scenario: str, tree: str | None, with_before: bool, flip: bool = False) -> dict:
    """Headless, then --video and (with_before) the comparison run, in that order or (`flip`)
    the other: walls, CPU, file sizes."""
    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        headless, headless_cpu = timed_run(scenario, d / "plain", [])
        old = d / "before.mp4"

        def before_run() -> tuple[float, float]:
            return timed_run(scenario, d / "before", ["--video", str(old)], True, tree)

        if with_before and flip:
            before, before_cpu = before_run()
        video = d / "run.mp4"
        procs: dict[str, float] = {}
        with_video, video_cpu = timed_run(
            scenario, d / "video", ["--video", str(video)], procs=procs
        )
        r = {"headless_wall_s": headless, "headless_cpu_s": headless_cpu}
        r |= {"video_wall_s": with_video, "video_cpu_s": video_cpu, "video_processes_cpu_s": procs}
        plain = (d / "plain" / "trajectory.bin").read_bytes()
        r["same_trajectory"] = plain == (d / "video" / "trajectory.bin").read_bytes()
        r["video_MB"] = video.stat().st_size / 1e6
        summary = json.loads((d / "video" / "summary.json").read_text(encoding="utf-8"))
        r["simulated_s"] = summary["ticks"] * summary["tick_s"]
        if with_before:
            if not flip:
                before, before_cpu = before_run()
            r |= {"before_wall_s": before, "before_cpu_s": before_cpu}
            r["before_MB"] = old.stat().st_size / 1e6
            r["before_same_trajectory"] = plain == (d / "before" / "trajectory.bin").read_bytes()
    frames = int(r["simulated_s"] * 30 + 1e-6)
    r["frames"] = frames
    r["ratio"] = r["video_wall_s"] / headless
    r["render_encode_cpu_ms_per_frame"] = 1000 * (video_cpu - headless_cpu) / frames
    r["render_processes_cpu_ms_per_frame"] = 1000 * procs.get("render", 0.0) / frames
    r["ffmpeg_cpu_ms_per_frame"] = 1000 * procs.get("ffmpeg", 0.0) / frames
    r["simulation_extra_cpu_ms_per_frame"] = (
        1000 * (procs.get("simulation", 0.0) - headless_cpu) / frames
    )
    if with_before:
        r["before_ratio"] = r["before_wall_s"] / headless
        r["before_render_encode_cpu_ms_per_frame"] = (
            1000 * (r["before_cpu_s"] - headless_cpu) / frames
        )
    r["load_average_start"], r["load_average"] = load_start, list(os.getloadavg())
    return r


def replay_rounds(run: Path, tree: str | None, repeat: int) -> list[dict]:
    """`replay RUN --video` with this source tree and (with `tree`) the one in that directory,
    alternated (the other first in every other round): wall s, CPU ms a frame (all processes:
    replay draws in its own process, ffmpeg encodes), MB."""
    from skyswarm.gui.replay import ReplaySource

    frames = int(ReplaySource(run).duration_s * 30 + 1e-6)
    variants = {"now": None, **({"before": tree} if tree else {})}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repeat):
            order = list(variants) if k % 2 == 0 else list(variants)[::-1]
            for name in order:
                env = dict(os.environ)
                if variants[name] is not None:
                    env["PYTHONPATH"] = variants[name]  # type: ignore[assignment]
                out = Path(tmp) / f"{name}.mp4"
                load = os.getloadavg()[0]
                cmd = [sys.executable, "-m", "skyswarm.app.cli", "replay", str(run), "--video"]
                wall, cpu = _timed([*cmd, str(out)], env)
                rows.append(
                    {"round": k + 1, "tree": name, "wall_s": wall, "frames": frames,
                     "cpu_ms_per_frame": 1000 * cpu / frames, "MB": out.stat().st_size / 1e6,
                     "load_average": [load, os.getloadavg()[0]]}
                )  # fmt: skip
                r = rows[-1]
                print(
                    f"round {k + 1} {name:<7} {wall:7.1f} s wall {r['cpu_ms_per_frame']:6.2f} CPU"
                    f" ms a frame {r['MB']:6.2f} MB  load {load:.1f} -> {os.getloadavg()[0]:.1f}"
                )
    return rows


def main() -> None:
    args = sys.argv[1:]
    if {"-h", "--help"} & set(args):
        print(__doc__)
        return
    tree = None
    if "--before-tree" in args:
        k = args.index("--before-tree")
        tree = str(Path(args[k + 1]).resolve())
        del args[k : k + 2]
    repeat = 1
    if "--repeat" in args:
        k = args.index("--repeat")
        repeat = int(args[k + 1])
        del args[k : k + 2]
    if "--replay" in args:
        rows = replay_rounds(Path(args[args.index("--replay") + 1]), tree, repeat)
        out = Path(__file__).parent / "results" / "video_replay.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
        return
    with_before = "--no-before" not in args
    args = [a for a in args if a != "--no-before"]
    if any(a.startswith("-") for a in args) or len(args) > 1:
        print(f"video.py: {' '.join(args)}: expected at most a scenario (see the module doc)")
        raise SystemExit(2)
    scenario = args[0] if args else "flocking_coverage"
    label = f"before ({'tree ' + Path(tree).name if tree else 'superfast'})"
    # the video and the comparison run in turn first: the load of a shared machine drifts
    rounds = [one_round(scenario, tree, with_before, k % 2 == 1) for k in range(repeat)]
    print(
        f"{'round':<7}{'headless s':>11}{'video s':>9}{'x headless':>12}{'CPU ms/frame':>14}"
        f"{'MB':>7}"
        + (f"{'before s':>10}{'x headless':>12}{'CPU ms/frame':>14}" if with_before else "")
    )
    for k, r in enumerate(rounds, 1):
        line = (
            f"{k:<7}{r['headless_wall_s']:>11.1f}{r['video_wall_s']:>9.1f}{r['ratio']:>12.2f}"
            f"{r['render_encode_cpu_ms_per_frame']:>14.1f}{r['video_MB']:>7.1f}"
        )
        if with_before:
            line += (
                f"{r['before_wall_s']:>10.1f}{r['before_ratio']:>12.2f}"
                f"{r['before_render_encode_cpu_ms_per_frame']:>14.1f}"
            )
        print(line)
        print(
            f"{'':<7}--video CPU ms a frame: render processes"
            f" {r['render_processes_cpu_ms_per_frame']:.1f},"
            f" ffmpeg {r['ffmpeg_cpu_ms_per_frame']:.1f},"
            f" simulation beyond headless {r['simulation_extra_cpu_ms_per_frame']:.1f}; load"
            f" {r['load_average_start'][0]:.1f} -> {r['load_average'][0]:.1f}"
        )
    median = statistics.median(r["ratio"] for r in rounds)
    last = rounds[-1]
    print(
        f"{last['frames']} frames over {last['simulated_s']:.1f} s; median ratio {median:.2f} over "
        f"{repeat} round(s); targets: <= {TARGET_RATIO:g}x headless wall, <= {TARGET_MB:g} MB; "
        f"trajectory identical to headless in every round: "
        f"{all(r['same_trajectory'] for r in rounds)}"
        + (
            f" (before: {all(r['before_same_trajectory'] for r in rounds)}, {label})"
            if with_before
            else ""
        )
        + f"; load average {os.getloadavg()[0]:.1f}"
    )
    result = {
        "scenario": scenario,
        "rounds": rounds,
        "median_ratio": median,
        "before": label if with_before else None,
        "targets": {"ratio_max": TARGET_RATIO, "MB_max": TARGET_MB},
        "machine": platform.platform(),
    }
    out = Path(__file__).parent / "results" / "video.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
