"""Command-line glue of the GUI: `run --video/--frames`, `view`, `replay`.

This module imports only argparse-level things, so app/cli.py can register the GUI commands
without loading pyglet or moderngl; those load inside the command functions.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyswarm.app.exits import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator


SIZE_NAMES = {"720p": (1280, 720), "1080p": (1920, 1080)}  # --size shorthands


def _size(text: str) -> tuple[int, int]:
    if text.lower() in SIZE_NAMES:
        return SIZE_NAMES[text.lower()]
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        msg = f"expected WIDTHxHEIGHT such as 1280x720, or 720p or 1080p, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return w, h


def _video_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--video", type=Path, metavar="OUT.mp4", help="write an MP4 (offscreen, EGL)")
    p.add_argument("--frames", type=Path, metavar="DIR", help="write PNG frames to DIR")
    p.add_argument(
        "--fps", type=float, default=30.0,
        help="frames per simulated second, also the video's frame rate (30; e.g. 60)",
    )  # fmt: skip
    p.add_argument(
        "--size", type=_size, default=(1280, 720), help="WIDTHxHEIGHT, 720p or 1080p (1280x720)"
    )
    camera_args(p)
    layout_args(p)


LAYOUT_NAMES = ("single", "pip", "side")  # gui/multiview.py LAYOUTS


def layout_args(p: argparse.ArgumentParser) -> None:
    """--layout single|pip|side and --second-camera NAME of an offscreen picture."""
    p.add_argument(
        "--layout", choices=LAYOUT_NAMES, default="single",
        help="single view, pip (second view bottom right) or side (side by side)",
    )  # fmt: skip
    p.add_argument(
        "--second-camera", choices=CAMERA_NAMES, metavar="NAME",
        help="the pip / side view's camera (top; chase when --camera is top)",
    )  # fmt: skip


def layout_spec(args: argparse.Namespace) -> Any:
    """The gui/multiview.py LayoutSpec of --layout and --second-camera (a chase or FPV second
    camera rides --target; the others frame the whole swarm)."""
    from skyswarm.gui.director import CameraSpec
    from skyswarm.gui.multiview import LayoutSpec

    name = getattr(args, "layout", "single")
    second = getattr(args, "second_camera", None)
    if second is None:
        return LayoutSpec(name)
    target = args.target if second in ("chase", "fpv") else None
    return LayoutSpec(name, CameraSpec(second, target=target))


CAMERA_NAMES = ("swarm", "orbit", "top", "chase", "fpv", "free")  # gui/director.py CAMERAS


def camera_args(p: argparse.ArgumentParser) -> None:
    """--camera NAME --distance M --elevation DEG --target ID, and the layers' switches."""
    p.add_argument(
        "--camera", choices=CAMERA_NAMES, default="swarm",
        help="swarm (default: keeps the UAVs large), orbit, top, chase, fpv or free",
    )  # fmt: skip
    p.add_argument("--distance", type=float, metavar="M", help="camera distance, m")
    p.add_argument("--elevation", type=float, metavar="DEG", help="camera elevation, deg")
    p.add_argument("--target", type=int, metavar="ID", help="agent the camera follows")
    p.add_argument("--no-markers", action="store_true", help="meshes only, no far markers")
    p.add_argument("--no-inset", action="store_true", help="no inset map of the whole area")
    p.add_argument(
        "--proximity", action="store_true",
        help="rings coloured by the nearest neighbour's distance (avoidance); key X",
    )  # fmt: skip
    p.add_argument(
        "--groups", action="store_true",
        help="a line from each UAV to its group's leader (a split flock's parts); key A",
    )  # fmt: skip


def camera_spec(args: argparse.Namespace) -> Any:
    """The gui/director.py CameraSpec of the camera options (a bad distance: ConfigError)."""
    from skyswarm.core.schema import ConfigError
    from skyswarm.gui.director import CameraSpec

    if args.distance is not None and not (0 < args.distance < 1e5):
        raise ConfigError("", "--distance", args.distance, "a distance > 0 m")
    if args.elevation is not None and not (-89 <= args.elevation <= 89):
        raise ConfigError("", "--elevation", args.elevation, "an angle in [-89, 89] deg")
    return CameraSpec(args.camera, args.distance, args.elevation, None, args.target)


DEFAULT_TRAIL_S = 12.0  # gui/trails.py DEFAULT_TRAIL_S (not imported: no pyglet here)


def window_args(p: argparse.ArgumentParser) -> None:
    """The layers of a window (`view`, `replay`), each also toggled by a key (help overlay)."""
    p.add_argument(
        "--trails", type=float, nargs="?", const=DEFAULT_TRAIL_S, metavar="S",
        help=f"show motion trails of the last S s ({DEFAULT_TRAIL_S:g}); key L",
    )  # fmt: skip
    p.add_argument("--no-dead", action="store_true", help="hide dead UAVs and their crosses; key D")
    p.add_argument(
        "--no-leader", action="store_true", help="the leader in its role's colour; key U"
    )


def view_options(args: argparse.Namespace) -> Any:
    """The gui/views.py ViewOptions of the window options (a bad value: ConfigError)."""
    from skyswarm.core.schema import ConfigError
    from skyswarm.gui.views import ViewOptions

    trails = args.trails
    if trails is not None and not (0 < trails <= 3600):
        raise ConfigError("", "--trails", trails, "a trail length > 0 and <= 3600 s")
    links = args.links  # `view` only (`replay` sets False): a recording has no links
    live = getattr(args, "camera_pip", False), getattr(args, "lidar", False)  # `view` only
    return ViewOptions(
        camera_spec(args), not args.no_inset, not args.no_markers, trails, links, args.proximity,
        not args.no_dead, not args.no_leader, *live, groups=args.groups,
    )  # fmt: skip


def interrupted(code: int) -> int:
    """A window command's exit code; Ctrl-C (130) goes through `main`'s one interrupt path,
    which prints `skyswarm: interrupted` and returns 130 like every other command."""
    if code == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    return code


def add_gui_parsers(
    sub: Any, run: argparse.ArgumentParser, scenario_args: Callable[[argparse.ArgumentParser], None]
) -> None:
    """Add `--video/--frames` to `run`, and the `view` and `replay` subcommands."""
    _video_args(run)
    sensor_args(run)

    view = sub.add_parser("view", help="run a scenario in a 3D window with the mission panel")
    scenario_args(view)
    view.add_argument("--speed", type=float, help="sim s per wall s (1.0)")
    view.add_argument("--size", type=_size, default=(1280, 720), help="window size (1280x720)")
    view.add_argument("--out", type=Path, help="also record results to this directory")
    camera_args(view)
    window_args(view)
    view.add_argument("--links", action="store_true", help="show radio links, losses red; key O")
    from skyswarm.app import mavlink_flags

    mavlink_flags.add_args(view, realtime=False)  # --mavlink, --mavlink-bind (docs/mavlink.md)
    sensor_args(view)
    view.set_defaults(func=cmd_view)

    rep = sub.add_parser("replay", help="play a recorded run (results directory) in 3D")
    rep.add_argument("results", type=Path, help="results directory of a run")
    rep.add_argument("--speed", type=float, default=1.0, help="playback speed factor (1.0)")
    _video_args(rep)
    rep.add_argument(
        "--overwrite", action="store_true", help="replace an existing --video, rewrite --frames"
    )
    window_args(rep)
    rep.set_defaults(func=cmd_replay, links=False)

    snap = sub.add_parser("snapshot", help="render a PNG of a recorded run at a time")
    snap.add_argument("results", type=Path, help="results directory of a run")
    snap.add_argument("--time", type=float, required=True, metavar="T", help="simulated s")
    snap.add_argument("--out", type=Path, required=True, metavar="FILE.png", help="PNG to write")
    snap.add_argument(
        "--size", type=_size, default=(1280, 720), help="WIDTHxHEIGHT, 720p or 1080p (1280x720)"
    )
    snap.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    camera_args(snap)
    layout_args(snap)
    snap.set_defaults(func=cmd_snapshot)


def sensor_args(p: argparse.ArgumentParser) -> None:
    """--camera-pip and --lidar: what the UAVs' sensors see (`view`, `run --video/--frames`;
    a recording holds neither, so not `replay`)."""
    p.add_argument(
        "--camera-pip", action="store_true",
        help="a UAV's camera (rgb | depth) in a corner: --target's, else the first; key E",
    )  # fmt: skip
    p.add_argument(
        "--lidar", action="store_true", help="draw the lidar beams (--target's, else all); key B"
    )


def require_gui(option: str, value: object) -> None:
    """Import the capture code (moderngl, ffmpeg); without the GUI extra installed, a one-line
    bad-input error naming the option instead of a traceback."""
    from skyswarm.core.schema import ConfigError

    try:
        import skyswarm.gui.capture  # noqa: F401
    except ImportError as exc:
        expected = f"the GUI extra installed: pip install 'skyswarm[gui]' ({exc})"
        raise ConfigError("", option, str(value), expected) from None


# Containers ffmpeg writes H.264 into, chosen by the file's name (another name would fail in
# ffmpeg after the run, or write something no player expects).
VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov")
FRAME_GLOB = "frame_*.png"  # what --frames writes (gui/video.py FrameWriter)


def require_display(command: str) -> None:
    """A window needs a display: without one (a server, an ssh session without X forwarding),
    a one-line bad-input error naming what works there instead of pyglet's traceback."""
    from skyswarm.core.schema import ConfigError

    require_gui(command, os.environ.get("DISPLAY", ""))
    import pyglet

    pyglet.options["shadow_window"] = False  # as gui/windows.py: no hidden window to fail on
    from pyglet.window import NoSuchDisplayException

    missing: tuple[type[Exception], ...] = (NoSuchDisplayException,)
    try:  # X11's own class of it (not a subclass of the one above)
        from pyglet.display.xlib import NoSuchDisplayException as NoX11Display

        missing += (NoX11Display,)
    except ImportError:  # not an X11 platform
        pass
    try:
        pyglet.display.get_display()
    except missing:
        expected = (
            "a display to open a window on (none here: `xvfb-run skyswarm ...` gives one; "
            "`skyswarm run --video` and `skyswarm snapshot` need none)"
        )
        raise ConfigError("", "DISPLAY", os.environ.get("DISPLAY", "(unset)"), expected) from None


def check_capture(args: argparse.Namespace) -> None:
    """Before a run starts: `--video`/`--frames` can be written (the GUI extra is there) and
    replace nothing of the user's (`check_outputs`)."""
    for option in ("video", "frames"):
        value = getattr(args, option, None)
        if value is not None:
            require_gui(f"--{option}", value)
    w, h = getattr(args, "size", (2, 2))
    if getattr(args, "video", None) is not None and (w % 2 or h % 2):
        from skyswarm.core.schema import ConfigError

        expected = "an even width and height (H.264 in yuv420p halves both for colour)"
        raise ConfigError("", "--size", f"{w}x{h}", expected)
    check_outputs(args)


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, a `--video` file that exists or is not named as a video, and a
    `--frames` folder that is a file or already holds frames, unless `--overwrite`: then an
    existing video is replaced (when the new one is complete) and the frames of the same
    numbers are rewritten, nothing else in the folder touched."""
    from skyswarm.app.results_dir import check_new_file
    from skyswarm.core.schema import ConfigError

    overwrite = bool(getattr(args, "overwrite", False))
    video = getattr(args, "video", None)
    if video is not None:
        if video.suffix.lower() not in VIDEO_SUFFIXES:
            expected = f"a video file name ending {', '.join(VIDEO_SUFFIXES)}"
            raise ConfigError("", "--video", str(video), expected)
        check_new_file(video, overwrite, "--video", make_folders=True)
    frames = getattr(args, "frames", None)
    if frames is None:
        return
    if frames.exists() and not frames.is_dir():
        raise ConfigError("", "--frames", str(frames), "a folder (this is a file)")
    if frames.is_dir() and not overwrite and next(frames.glob(FRAME_GLOB), None) is not None:
        expected = f"a folder without {FRAME_GLOB} files (or --overwrite to rewrite them)"
        raise ConfigError("", "--frames", str(frames), expected)


def start_capture(args: argparse.Namespace, sim: Simulator) -> Any:
    """A gui.capture.Capture for `run --video/--frames`, or None when neither is given; it
    renders and encodes in a child process while the simulation steps."""
    if getattr(args, "video", None) is None and getattr(args, "frames", None) is None:
        return None
    from skyswarm.gui.capture import Capture

    return Capture(
        sim, args.video, args.frames, args.fps, args.size, camera_spec(args), process=True,
        inset=not args.no_inset, markers=not args.no_markers, layout=layout_spec(args),
        proximity=args.proximity, lidar=args.lidar, sensor_camera=args.camera_pip,
        groups=args.groups,
    )  # fmt: skip


def cmd_view(args: argparse.Namespace) -> int:
    from skyswarm.app.mavlink_flags import view_attach
    from skyswarm.app.scenarios import load_args
    from skyswarm.gui.app import view_scenario

    scenario = load_args(args)
    require_display("view")
    options = view_options(args)
    attach = view_attach(args)  # MAVLink vehicles with --mavlink / [mavlink] enabled
    if args.out is None:
        code = view_scenario(
            scenario, speed=args.speed, size=args.size, options=options, attach=attach
        )
        return interrupted(code)
    from skyswarm.app.results_dir import claim

    held = claim(args.out, overwrite=False, scenario_file=scenario.file)  # new or empty, locked
    try:
        code = view_scenario(
            scenario, speed=args.speed, size=args.size, results_dir=args.out, options=options,
            attach=attach,
        )  # fmt: skip
    finally:
        held.release()
    return interrupted(code)


def cmd_replay(args: argparse.Namespace) -> int:
    from skyswarm.core.recorder import read_header, read_trajectory
    from skyswarm.core.schema import ConfigError
    from skyswarm.gui.player import replay_window
    from skyswarm.gui.replay import export_video

    header = read_header(args.results)  # one-line error on a missing or torn header
    records = read_trajectory(args.results)  # a torn last record is dropped
    ticks = sorted(set(records["tick"].tolist()))
    span_s = (ticks[-1] - ticks[0]) * header["tick_s"] if ticks else 0.0
    frames = span_s * args.fps if args.video is not None or args.frames is not None else 1.0
    if len(ticks) < 2 or frames < 1.0:  # nothing to show: never an empty or invalid video
        raise ConfigError(
            str(args.results),
            "(results)",
            str(args.results),
            f"a run of at least two samples and one frame ({len(ticks)} over {span_s:g} s)",
        )
    if args.video is not None or args.frames is not None:
        check_capture(args)
        n = export_video(
            args.results, args.video, args.frames, args.fps, args.size, camera_spec(args),
            inset=not args.no_inset, markers=not args.no_markers, layout=layout_spec(args),
            proximity=args.proximity, groups=args.groups,
        )  # fmt: skip
        print(f"wrote {n} frames")
        return 0
    require_display("replay")
    options = view_options(args)
    return interrupted(replay_window(args.results, args.speed, args.size, options))


def cmd_snapshot(args: argparse.Namespace) -> int:
    """`skyswarm snapshot RUN --time T --out FILE.png`: the picture the live view showed at T."""
    from PIL import Image

    from skyswarm.core.recorder import read_header
    from skyswarm.core.schema import ConfigError

    require_gui("snapshot", args.results)
    from skyswarm.app.results_dir import atomic_path, check_new_file
    from skyswarm.gui.replay import ReplaySource, ReplayStill

    read_header(args.results)  # one-line error on a missing or torn header
    if args.out.suffix.lower() != ".png":
        raise ConfigError("", "--out", str(args.out), "a file name ending .png")
    check_new_file(args.out, args.overwrite, "--out", make_folders=True)
    source = ReplaySource(args.results)
    if not (0.0 <= args.time <= source.duration_s + 1e-9):
        expected = f"a time in [0, {source.duration_s:g}] s (the recording)"
        raise ConfigError(str(args.results), "--time", args.time, expected)
    still = ReplayStill(
        source, args.size, camera_spec(args), inset=not args.no_inset,
        markers=not args.no_markers, layout=layout_spec(args), proximity=args.proximity,
        groups=args.groups,
    )  # fmt: skip
    try:
        image = still.render(args.time).copy()
    finally:
        still.release()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out) as tmp:  # the PNG whole or not at all
        Image.fromarray(image).save(tmp, format="PNG")
    print(f"wrote {args.out} (t = {args.time:g} s)")
    return 0
