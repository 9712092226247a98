"""GUI test fixtures: an Xvfb display started by the tests, and pixel-colour helpers."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
XVFB_DISPLAY = ":99"


@pytest.fixture(scope="session")
def xvfb() -> Iterator[str]:
    """Start Xvfb on :99 (or the next free display) for the session and point DISPLAY at it;
    skip if Xvfb is missing."""
    binary = shutil.which("Xvfb")
    if binary is None:
        reason = "Xvfb is not installed (apt-get install -y xvfb); windowed GUI tests skipped"
        print(reason)
        pytest.skip(reason)
    display = _free_display()
    proc = subprocess.Popen(
        [binary, display, "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lock = Path(f"/tmp/.X11-unix/X{display[1:]}")
    for _ in range(100):  # up to 5 s for the socket
        if lock.exists() or proc.poll() is not None:
            break
        time.sleep(0.05)
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    try:
        yield display
    finally:
        if old is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = old
        proc.terminate()
        proc.wait(timeout=10)


def _free_display() -> str:
    """XVFB_DISPLAY, or the next display number no X server holds (another process's Xvfb,
    e.g. `xvfb-run` or a parallel test session, may have :99 with its own authority)."""
    n = int(XVFB_DISPLAY[1:])
    while Path(f"/tmp/.X{n}-lock").exists() or Path(f"/tmp/.X11-unix/X{n}").exists():
        n += 1
    return f":{n}"


def shade_match(pixel: np.ndarray, rgb: tuple[float, ...], tol: float = 0.08) -> bool:
    """True if `pixel` (uint8 RGB) is `rgb` (0..1) under a Lambert shade factor in [0.4, 1.05],
    within `tol` (fraction of full scale) per channel."""
    p = np.asarray(pixel, dtype=float) / 255.0
    c = np.asarray(rgb[:3], dtype=float)
    shade = float(p @ c / (c @ c))
    return 0.4 <= shade <= 1.05 and bool(np.all(np.abs(p - shade * c) <= tol))


def near_color(img: np.ndarray, x: float, y: float, rgb: tuple[float, ...], r: int = 1) -> bool:
    """True if any pixel within `r` of (x, y) is `rgb` (0..1) within 12/255 per channel."""
    xi, yi = int(round(x)), int(round(y))
    patch = img[max(0, yi - r) : yi + r + 1, max(0, xi - r) : xi + r + 1].astype(float)
    target = np.asarray(rgb[:3]) * 255
    return bool(np.any(np.all(np.abs(patch - target) <= 12, axis=-1)))
