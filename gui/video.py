"""The video path of offscreen rendering: H.264 through ffmpeg, PNG frames, and the
time/metric overlay every video carries.

A video frame reaches ffmpeg as planar yuv420p (BT.709, limited range, tagged so, as players
assume for HD), converted from the framebuffer's RGBA by the render process that drew it
(gui/yuv.py, ~1.5 ms a 720p frame): 1.5 bytes a pixel through the pipe instead of 4, and
ffmpeg passes it to x264 without a conversion of its own (its RGBA -> yuv420p cost ~3.8 ms).
RGBA (bottom row first: ffmpeg flips the rows as it converts) and RGB are taken too.
Frames drawn into shared memory by render processes reach the pipe without a copy (vmsplice
lends their pages; `VideoWriter._feed`).
"""

from __future__ import annotations

import collections
import ctypes
import errno
import fcntl
import os
import queue
import struct
import subprocess
import tempfile
import termios
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.files import temporary_beside

if TYPE_CHECKING:
    from skyswarm.gui.renderer import Renderer
    from skyswarm.gui.scene import Frame


@dataclass(frozen=True)
class Encoder:
    """x264 settings: constant rate factor, preset, and options on top of the preset."""

    crf: int = 26  # 23 is x264's default; +6 halves the bitrate
    preset: str = "ultrafast"
    x264_params: str = "bframes=8:cabac=1"  # "" for the preset alone


# Chosen by measurement on 900 frames of the reference run (README, "Video"): ultrafast with
# B-frames and CABAC back on costs ~60 % of superfast's CPU per 720p frame for about the same
# file size; ultrafast alone writes 3.5x the bytes (no B-frames: every frame predicted from
# the one before). The views are mostly static between frames, which B-frames exploit.
ENCODER = Encoder()
KR, KB = 0.2126, 0.0722  # BT.709 luma weights of red and blue (green: 1 - KR - KB)
PIX_FMTS = {"rgb24": 3.0, "rgba": 4.0, "yuv420p": 1.5}  # input formats: bytes a pixel
# What a video's frames reach ffmpeg as, from `run --video`'s render processes and from
# `replay --video`: yuv420p converted by the process that drew them (gui/yuv.py), 1.5 bytes a
# pixel, which ffmpeg encodes without converting (docs/gui.md: ~4 ms less CPU a frame).
VIDEO_FMT = "yuv420p"
PIPE_BYTES = 1 << 20  # pipe buffer to ffmpeg (Linux default 64 kB): writes wait less often
F_SETPIPE_SZ = 1031  # fcntl command (Linux); not in Python's fcntl module before 3.10
LENT_POLL_S = 0.002  # how often the feeder looks whether ffmpeg has read a lent buffer
# Frames a VideoWriter holds for its feeder thread: the renderer goes on drawing while ffmpeg
# takes the previous frames (a 720p RGBA frame is 3.7 MB, more than any pipe buffer, so writing
# it in the rendering thread waited ~3 ms per frame for ffmpeg to read, up to 7 at p90).
FEED_FRAMES = 3


def bt709_yuv(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) float Y, Cb, Cr (limited range, 8-bit code values) of (..., 3) uint8 RGB: what
    the encoder is given for each pixel (before 4:2:0 averages the chroma of 2x2 blocks)."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    y = c @ np.array([KR, 1.0 - KR - KB, KB])
    cb = (c[..., 2] - y) / (2.0 * (1.0 - KB))
    cr = (c[..., 0] - y) / (2.0 * (1.0 - KR))
    return np.stack([16.0 + 219.0 * y, 128.0 + 224.0 * cb, 128.0 + 224.0 * cr], axis=-1)


def decode_rgb(path: Path, size: tuple[int, int]) -> np.ndarray:
    """(frames, H, W, 3) uint8 RGB of the video at `path` (`size` = W, H), decoded with the
    matrix and range our videos are tagged with (BT.709, limited), said explicitly."""
    import imageio_ffmpeg

    w, h = size
    raw = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-i", str(path),
         "-vf", "scale=in_color_matrix=bt709:in_range=tv", "-f", "rawvideo", "-pix_fmt", "rgb24",
         "-"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


class VideoWriter:
    """MP4 (H.264, yuv420p BT.709, x264 with `encoder`) through the ffmpeg binary that
    imageio-ffmpeg ships.

    Frames are (H, W, 3) uint8 RGB images, top row first; with `pix_fmt="rgba"` the RGBA
    bytes of a framebuffer as OpenGL reads them, bottom row first (ffmpeg flips the rows as it
    converts the colours, at no extra cost); with `pix_fmt="yuv420p"` planar BT.709
    limited-range frames, top row first (gui/yuv.py makes them), which ffmpeg encodes as they
    are. With write_into no copy on the way. A feeder thread writes the frames to ffmpeg from
    FEED_FRAMES buffers.
    """

    def __init__(
        self,
        path: Path,
        size: tuple[int, int],
        fps: float,
        pix_fmt: str = "rgb24",
        encoder: Encoder = ENCODER,
    ) -> None:
        import imageio_ffmpeg

        if size[0] % 2 or size[1] % 2:
            raise ValueError(f"video size must be even in both axes for yuv420p, got {size}")
        if pix_fmt not in PIX_FMTS:
            raise ValueError(f"pix_fmt must be one of {', '.join(PIX_FMTS)}, got {pix_fmt!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.size, self.pix_fmt = path, size, pix_fmt
        # ffmpeg writes a hidden file beside `path` (the same suffix: it picks the container by
        # name), renamed over `path` when the video is complete: a failed run leaves no half
        # video, and an existing file (replaced only when the caller was told to) stays whole
        # until then.
        self._part = temporary_beside(path, path.suffix)
        self.frame_bytes = int(size[0] * size[1] * PIX_FMTS[pix_fmt])
        tags = "setparams=range=tv:colorspace=bt709:color_primaries=bt709:color_trc=bt709"
        if pix_fmt == "yuv420p":  # converted already: only say what it is
            vf = tags
        else:
            flip = "vflip," if pix_fmt == "rgba" else ""
            vf = f"{flip}scale=out_color_matrix=bt709:out_range=tv,{tags}"
        x264 = ["-x264-params", encoder.x264_params] if encoder.x264_params else []
        cmd = [
            imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-y",
            "-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{size[0]}x{size[1]}",
            "-framerate", f"{fps:g}", "-i", "pipe:0", "-an",
            "-vf", vf,
            "-c:v", "libx264", "-preset", encoder.preset, "-crf", str(encoder.crf), *x264,
            "-pix_fmt", "yuv420p", str(self._part),
        ]  # fmt: skip
        self._log = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=self._log, bufsize=0)
        except OSError:
            self._part.unlink(missing_ok=True)
            raise
        fd = self._proc.stdin.fileno()  # type: ignore[union-attr]
        try:  # a bigger pipe: fewer wake-ups of the feeder and ffmpeg per frame
            fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # refused (over the system's limit): the default pipe works too
            pass
        self._fd = fd
        # (bytes sent up to its end, done) of each buffer lent to the pipe, oldest first
        self._lent: collections.deque[tuple[int, Callable[[], object]]] = collections.deque()
        self._splice = _VMSPLICE is not None and _unread(fd) == 0  # FIONREAD answers too
        self.frames = 0
        # Frame buffers cycle free -> filled -> written -> free; None in `_filled` ends the feed.
        # A filled entry is (buffer, done): done() hands back a buffer the caller owns
        # (write_shared); None puts one of the writer's own back in `_free`.
        self._free: queue.Queue[bytearray] = queue.Queue()
        for _ in range(FEED_FRAMES):
            self._free.put(bytearray(self.frame_bytes))
        self._filled: queue.Queue[tuple[Any, Callable[[], object] | None] | None] = queue.Queue()
        self._broken = False
        self._feeder = threading.Thread(target=self._feed, name="ffmpeg-feeder", daemon=True)
        self._feeder.start()

    def _feed(self) -> None:
        """The feeder thread: filled buffers into ffmpeg's stdin (the GIL is released while
        the pipe is written); after a broken pipe it only recycles them.

        A caller's buffer (write_shared: a slot of shared memory) goes into the pipe by
        `vmsplice`: its pages are lent to the pipe, not copied (a 720p frame's copy cost the
        feeder ~0.9 ms of kernel time), and ffmpeg reads them from there. So the buffer is
        handed back only once ffmpeg has read past its end (the bytes sent less those the
        pipe still holds, FIONREAD), looked at after every frame and, while buffers are
        lent and no frame comes, every LENT_POLL_S."""
        stdin = self._proc.stdin
        lent = self._lent
        sent = 0  # bytes into the pipe
        while True:
            try:
                item = self._filled.get(timeout=LENT_POLL_S) if lent else self._filled.get()
            except queue.Empty:
                self._hand_back_read(sent)
                continue
            if item is None:
                break
            buf, done = item
            splice = done is not None and self._splice
            if not self._broken:
                try:
                    if splice:
                        _splice_all(self._fd, buf)
                    else:
                        stdin.write(buf)  # type: ignore[union-attr]
                    sent += len(buf)
                except (OSError, ValueError):  # ffmpeg gone (broken pipe) or the pipe failed
                    self._broken = True
            if done is None:
                self._free.put(buf)
            elif splice and not self._broken:
                lent.append((sent, done))
            else:
                done()
            self._hand_back_read(sent)

    def _hand_back_read(self, sent: int) -> None:
        """Hand back the lent buffers ffmpeg has read all of (all of them once the pipe is
        broken: nothing reads it any more)."""
        lent = self._lent
        if not lent:
            return
        read = sent if self._broken else sent - _unread(self._fd)
        while lent and (self._broken or lent[0][0] <= read):
            lent.popleft()[1]()

    def write(self, frame: np.ndarray | memoryview | bytes | bytearray) -> None:
        """Queue one frame (see the class docstring for the layout): it is copied into one of
        FEED_FRAMES buffers and written to ffmpeg by the feeder thread, so the caller may
        reuse `frame` at once; waits only while every buffer is still queued."""
        data = memoryview(np.ascontiguousarray(frame) if isinstance(frame, np.ndarray) else frame)
        if data.nbytes != self.frame_bytes:
            raise ValueError(
                f"a {self.size[0]}x{self.size[1]} {self.pix_fmt} frame is {self.frame_bytes}"
                f" bytes, got {data.nbytes}"
            )
        self.write_into(lambda buf: buf.__setitem__(slice(None), data.cast("B")))

    def write_into(self, fill: Callable[[bytearray], object]) -> None:
        """Queue one frame that `fill` writes into the writer's next free buffer (the
        framebuffer read straight into it: no copy on the way to ffmpeg)."""
        if self._broken:
            self._fail()
        buf = self._free.get()
        fill(buf)
        self._filled.put((buf, None))
        self.frames += 1

    def write_shared(self, frame: memoryview, done: Callable[[], object]) -> None:
        """Queue one frame in a buffer the caller owns (a slot of shared memory another
        process drew into): the feeder writes it as it is, then calls `done()`, after which
        the caller may reuse the buffer (also when a broken pipe drops the frame)."""
        if self._broken:
            self._fail()
        if frame.nbytes != self.frame_bytes:
            raise ValueError(f"a frame is {self.frame_bytes} bytes, got {frame.nbytes}")
        self._filled.put((frame, done))
        self.frames += 1

    def close(self) -> None:
        """Write the queued frames and finish the file; raises if ffmpeg failed."""
        self._filled.put(None)
        self._feeder.join()
        try:
            self._proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
        code = self._proc.wait()
        self._hand_back()
        error = self._error()
        self._log.close()
        if code != 0 or self._broken:
            self._part.unlink(missing_ok=True)
            raise RuntimeError(f"ffmpeg exited with {code} writing {self.path}: {error}")
        os.replace(self._part, self.path)

    def _fail(self) -> None:
        self._filled.put(None)
        self._feeder.join()
        self._proc.wait()
        self._hand_back()
        self._part.unlink(missing_ok=True)
        raise RuntimeError(f"ffmpeg stopped writing {self.path}: {self._error()}")

    def _hand_back(self) -> None:
        """The buffers still lent to the pipe, back to their owners (ffmpeg has exited)."""
        while self._lent:
            self._lent.popleft()[1]()

    def _error(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace").strip()[-500:]


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _libc_vmsplice() -> Any:
    """libc's vmsplice (Linux), or None."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).vmsplice
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_size_t, ctypes.c_uint]
    fn.restype = ctypes.c_ssize_t
    return fn


_VMSPLICE = _libc_vmsplice()


def _unread(fd: int) -> int:
    """Bytes in the pipe `fd` not read yet (FIONREAD; -1 if it cannot say)."""
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return -1


def _splice_all(fd: int, buf: memoryview) -> None:
    """Lend all of `buf` (writable) to the pipe `fd` (vmsplice, blocking while it is full; the
    GIL released meanwhile); OSError as a write would raise it."""
    anchor = ctypes.c_char.from_buffer(buf)
    try:
        iov = _Iovec(ctypes.addressof(anchor), len(buf))
        while iov.len:
            n = _VMSPLICE(fd, ctypes.byref(iov), 1, 0)
            if n < 0:
                err = ctypes.get_errno()
                if err == errno.EINTR:
                    continue
                raise OSError(err, os.strerror(err))
            iov.base += n
            iov.len -= n
    finally:
        del anchor  # the buffer's export: the shared memory can be closed later


class FrameWriter:
    """Numbered PNG files `frame_00000.png`, ... in a directory."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.frames = 0

    def write(self, image: np.ndarray, index: int | None = None) -> None:
        """Save `image` as the next frame, or as frame `index` (render processes sharing
        the frames of one video each write theirs)."""
        from PIL import Image

        k = self.frames if index is None else index
        Image.fromarray(image).save(self.dir / f"frame_{k:05d}.png", compress_level=1)
        self.frames += 1

    def close(self) -> None:
        pass


def draw_hud(renderer: Renderer, size: tuple[int, int], frame: Frame) -> None:
    """The video overlay: time, alive agents and the mission's HUD lines top left, the colour
    legend bottom left (its image made once per set of entries)."""
    from skyswarm.gui.renderer import legend_entries

    alive = frame.alive & frame.mobile
    line = f"t = {frame.time_s:6.2f} s   alive {int(alive.sum())}/{int(frame.mobile.sum())}"
    renderer.draw_image(hud_text_image((line, *frame.hud)), 8, 8, size)
    legend = _legend(tuple(legend_entries(frame)))
    renderer.draw_image(legend, 8, size[1] - legend.shape[0] - 8, size)


def hud_text_image(lines: tuple[str, ...]) -> np.ndarray:
    """gui.text.text_image(lines), built from one cached image per line: of a video's HUD only
    the time changes every frame, so only that line is drawn again."""
    from skyswarm.gui.text import BACKDROP, LINE_PX, PAD_PX

    rows = [_line_image(s) for s in lines]
    width = max((r.shape[1] for r in rows), default=2 * PAD_PX)
    out = np.empty((len(rows) * LINE_PX + 2 * PAD_PX, max(1, width), 4), dtype=np.uint8)
    out[:] = BACKDROP
    for i, r in enumerate(rows):
        # the line's band, and under the last line the bottom padding too (descenders)
        band = LINE_PX + (PAD_PX if i == len(rows) - 1 else 0)
        top = PAD_PX + i * LINE_PX
        out[top : top + band, : r.shape[1]] = r[PAD_PX : PAD_PX + band]
    return out


@lru_cache(maxsize=64)
def _line_image(line: str) -> np.ndarray:
    from skyswarm.gui.text import text_image

    img = text_image([line])
    img.flags.writeable = False
    return img


@lru_cache(maxsize=8)
def _legend(entries: tuple[tuple[str, tuple[float, float, float]], ...]) -> np.ndarray:
    from skyswarm.gui.text import legend_image

    return legend_image(entries)
