"""The encoding side of `run --video`, alone: consecutive 1280x720 frames of a recorded run
drawn as the video draws them, then handed to ffmpeg the ways compared in docs/gui.md ("Where a
video frame's CPU goes"), alternated over rounds; ffmpeg's CPU a frame, the file's size and
its PSNR against the rendered picture (decoded as tagged, BT.709 limited range).

    python bench/video_encode.py RUN [FIRST] [COUNT] [ROUNDS]
        # RUN: `skyswarm run flocking_coverage --out RUN`; frames FIRST.. (default 1500, 300
        # of them), 3 rounds; table on stdout, JSON in bench/results/video_encode.json

Variants: "rgba" is how the video was made before (ffmpeg flips and converts the RGBA read
back, swscale); "yuv420p" is gui/yuv.py's conversion in the render process (its CPU a frame is
measured here too) with ffmpeg only encoding; each with x264's threads left to x264 ("auto")
or one thread. The frames sit in files, so the pipe's cost is not in these numbers.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from gui_offscreen import SIZE, video_cameras  # noqa: E402

from skyswarm.gui.offscreen import OffscreenCanvas  # noqa: E402
from skyswarm.gui.video import ENCODER  # noqa: E402
from skyswarm.gui.yuv import prepare, rgba_to_yuv420p, yuv420p_planes  # noqa: E402

TAGS = "setparams=range=tv:colorspace=bt709:color_primaries=bt709:color_trc=bt709"
X264 = "bframes=8:cabac=1"  # the shipped options but threads (gui/video.py ENCODER)
VARIANTS = {  # name: (input, x264 params)
    "rgba, threads auto": ("rgba", X264),
    "rgba, threads=1": ("rgba", X264 + ":threads=1"),
    "yuv420p, threads auto": ("yuv420p", X264),
    "yuv420p, threads=1": ("yuv420p", X264 + ":threads=1"),
}


def dump(run: Path, first: int, count: int, rgba: Path, yuv: Path) -> dict[str, float]:
    """Frames first.. of `run`'s video into the files `rgba` (as read back) and `yuv`
    (converted); ms a frame of the conversion (process CPU)."""
    src, center, half, items = video_cameras(run, 1)
    canvas = OffscreenCanvas(src.scenery, SIZE, center, half)
    w, h = SIZE
    pixels = np.empty((h, w), np.uint32)
    out = bytearray(w * h * 3 // 2)
    planes = yuv420p_planes(out, SIZE)
    prepare()
    spent = 0.0
    with rgba.open("wb") as fa, yuv.open("wb") as fy:
        for frame, cam in items[first : first + count]:
            canvas.compose(frame, cam, True, True)
            canvas.read_rgba_into(pixels)  # the ground painted in (gui/ground.py)
            t0 = time.process_time()
            rgba_to_yuv420p(pixels, *planes)
            spent += time.process_time() - t0
            fa.write(pixels.tobytes())
            fy.write(out)
    canvas.release()
    return {"convert_ms": 1000 * spent / count}


def ffmpeg_cmd(source: Path, fmt: str, x264: str, out: Path) -> list[str]:
    import imageio_ffmpeg

    vf = TAGS if fmt == "yuv420p" else f"vflip,scale=out_color_matrix=bt709:out_range=tv,{TAGS}"
    return [
        imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y",
        "-f", "rawvideo", "-pix_fmt", fmt, "-s", f"{SIZE[0]}x{SIZE[1]}", "-framerate", "30",
        "-i", str(source), "-an", "-vf", vf, "-c:v", "libx264", "-preset", ENCODER.preset,
        "-crf", str(ENCODER.crf), "-x264-params", x264, "-pix_fmt", "yuv420p", str(out),
    ]  # fmt: skip


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def psnr(video: Path, rgba: Path, count: int) -> dict[str, float]:
    """PSNR (dB) and largest error of the decoded `video` against the rendered frames."""
    from skyswarm.gui.video import decode_rgb

    w, h = SIZE
    got = decode_rgb(video, SIZE)
    shown = np.memmap(rgba, np.uint8, "r").reshape(-1, h, w, 4)[:, ::-1, :, :3]
    sq, worst = 0.0, 0
    for k in range(count):
        d = got[k].astype(np.int16) - shown[k]
        sq += float(np.mean(d.astype(np.float64) ** 2))
        worst = max(worst, int(np.abs(d).max()))
    return {"psnr_db": float(10 * np.log10(255.0**2 / (sq / count))), "max_error": worst}


def main() -> None:
    run = Path(sys.argv[1])
    given = [int(a) for a in sys.argv[2:5]]
    first, count, rounds = given + [1500, 300, 3][len(given) :]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        rgba, yuv = d / "frames.rgba", d / "frames.yuv"
        result: dict = dump(run, first, count, rgba, yuv)
        cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(rounds):
            order = list(VARIANTS.items())
            for name, (fmt, x264) in order if r % 2 == 0 else order[::-1]:
                c0 = children_cpu()
                src = rgba if fmt == "rgba" else yuv
                subprocess.run(ffmpeg_cmd(src, fmt, x264, d / f"{fmt}{x264}.mp4"), check=True)
                cpu[name].append(1000 * (children_cpu() - c0) / count)
        rows = {}
        for name, (fmt, x264) in VARIANTS.items():
            out = d / f"{fmt}{x264}.mp4"
            rows[name] = {"ffmpeg_cpu_ms": cpu[name], "MB": out.stat().st_size / 1e6}
            rows[name] |= psnr(out, rgba, count)
    result |= {"frames": count, "first": first, "variants": rows, "load": os.getloadavg()[0]}
    print(f"conversion in the render process: {result['convert_ms']:.2f} ms a frame")
    print(f"{'variant':<24}{'ffmpeg CPU ms a frame':>30}{'MB':>7}{'PSNR dB':>9}{'max err':>9}")
    for name, r in rows.items():
        ms = " ".join(f"{x:5.2f}" for x in r["ffmpeg_cpu_ms"])
        print(f"{name:<24}{ms:>30}{r['MB']:>7.2f}{r['psnr_db']:>9.2f}{r['max_error']:>9}")
    print(f"{count} frames from frame {first}; load average {result['load']:.1f}")
    out = Path(__file__).parent / "results" / "video_encode.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
