"""A file written whole: its bytes go to a hidden temporary file beside it, renamed over it
when complete (app/results_dir.py `atomic_path`, gui/video.py `VideoWriter`), so a reader or
a failed run never sees half a file and an existing one stays whole until then."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def temporary_beside(path: Path, suffix: str = ".tmp") -> Path:
    """A new empty file `.NAME.XXXXXXXX<suffix>` in `path`'s folder, with the permissions a
    file created there gets (0o666 less the process's umask; tempfile's own are 0o600, which
    would leave a plot or a video unreadable to the user's group once renamed). OSError names
    `path`, not the temporary file."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    finally:
        os.close(fd)
    return Path(name)


def _umask() -> int:
    """The process's umask (read by setting it and setting it back; no other way in Python
    before 3.13's os.umask query on Linux /proc)."""
    try:
        with open(f"/proc/{os.getpid()}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
