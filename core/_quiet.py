"""Import pybullet without its C-level "pybullet build time" banner.

The banner is printed by the extension's initialisation with printf (to stdout or stderr,
depending on the build); it would surface in the middle of a run's output, a CSV piped to a
file, or the one-line error of a bad config. Both descriptors point at /dev/null during the
import; a failing import still raises its Python exception afterwards.
"""

from __future__ import annotations

import ctypes
import os
import sys
from types import ModuleType


def import_pybullet() -> ModuleType:
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    saved: list[tuple[int, int]] = []
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            stream.flush()
        except (AttributeError, OSError, ValueError):  # captured or closed: nothing to hide
            continue
        saved.append((fd, os.dup(fd)))
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd, _ in saved:
            os.dup2(devnull, fd)
        import pybullet

        try:
            ctypes.CDLL(None).fflush(None)  # push C buffers into /dev/null, not later
        except (OSError, AttributeError):
            pass
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)
    return pybullet
