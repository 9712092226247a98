"""Files skyswarm writes without harming the user's.

- A file written whole: its bytes go to a hidden temporary file beside it, renamed over it
  when complete (app/results_dir.py `atomic_path`, gui/video.py `VideoWriter`), so a reader or
  a failed run never sees half a file and an existing one stays whole until then.
- A results folder a run writes into (the recorder's `open_results_folder`): new, empty or
  marked as a skyswarm run's, never a folder of the user's own files."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
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


# A run's results folder holds this file, naming the run: skyswarm wrote the folder, so a run
# may write into it again (app/results_dir.py also locks it while a CLI run writes).
MARKER = ".skyswarm-run.json"


def marker_bytes(out: Path, scenario_file: str) -> bytes:
    """The marker's content: the run's folder name, its scenario, process, host and start."""
    info = {
        "run": out.name,
        "scenario": str(Path(scenario_file).resolve()) if scenario_file else "",
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": dt.datetime.now().isoformat(timespec="seconds"),
    }
    return json.dumps(info, indent=1).encode()


def open_results_folder(out: Path, scenario_file: str) -> None:
    """Make `out` ready for a run's files, or refuse it: new or empty (marked now), or a folder
    a skyswarm run wrote (its MARKER; the run's files of the same names are replaced). A folder
    holding anything else is the user's: its config.toml or summary.json would be replaced, so
    ConfigError (key `results_dir`), nothing written. (`skyswarm run --out` asks more of a
    folder, app/results_dir.py `claim`: empty, or emptied with --overwrite.)"""
    from skyswarm.core.schema import ConfigError

    if out.exists() and not out.is_dir():
        raise ConfigError("", "results_dir", str(out), "a folder (this is a file)")
    out.mkdir(parents=True, exist_ok=True)
    marker = out / MARKER
    if marker.is_file() and not marker.is_symlink():
        return
    if any(out.iterdir()):
        expected = (
            f"a new or empty folder, or one a skyswarm run wrote (with its {MARKER}); "
            "this one holds other files, which the run's files could replace"
        )
        raise ConfigError("", "results_dir", str(out), expected)
    mark_results_folder(out, scenario_file)


def mark_results_folder(out: Path, scenario_file: str) -> None:
    """Write `out`'s MARKER unless it has one: for a folder skyswarm made for a run (a sweep's
    run folder, app/batch_worker.py, before it writes its own files there)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:  # O_EXCL: an existing marker, or a symlink in its place, is never written through
        fd = os.open(out / MARKER, flags, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as f:
        f.write(marker_bytes(out, scenario_file))
