"""Import pybullet without its C-level "pybullet build time" banner on stdout.

The banner is printed by the extension's initialisation with printf; when stdout is a pipe it is
buffered and would surface in the middle of a run's output (or a CSV piped to a file).
"""

from __future__ import annotations

import ctypes
import os
import sys
from types import ModuleType


def import_pybullet() -> ModuleType:
    if "pybullet" in sys.modules:
        return sys.modules["pybullet"]
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no real stdout (e.g. captured): nothing to hide
        import pybullet

        return pybullet
    sys.stdout.flush()
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), fd)
            import pybullet

            try:
                ctypes.CDLL(None).fflush(None)  # push the C buffer into /dev/null, not later
            except (OSError, AttributeError):
                pass
    finally:
        os.dup2(saved, fd)
        os.close(saved)
    return pybullet
