"""Results directories that skyswarm may write, empty and lock — and the ones it never touches.

A run's directory holds a marker file, `.skyswarm-run.json`, naming the run (scenario, seed,
process, start time). The marker is also the directory's lock: the process writing the run
holds an exclusive `flock` on it until the run ends, so a second process asking for the same
directory is refused (exit 2, one line) instead of interleaving its records with the first's.

`claim(out, overwrite, scenario_file)` refuses, before anything is written:
- a symlink (its target may be anything of the user's), or a path that is a file;
- the working directory, the home directory, the filesystem root, or any parent of those or
  of the scenario file;
- a non-empty directory without the marker (skyswarm did not write it: never emptied, even
  with `--overwrite`), or with it but without `--overwrite`;
- with `--overwrite`, a mount point (emptying it would empty a whole filesystem);
- a directory another process holds.

    held = claim(Path("results/run1"), overwrite=False, scenario_file="configs/hover.toml")
    try:
        ...  # write the run into held.path
    finally:
        held.release()
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skyswarm.core.files import MARKER, marker_bytes, temporary_beside
from skyswarm.core.schema import ConfigError

try:  # POSIX
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

except ImportError:  # pragma: no cover - Windows: a byte-range lock on the marker's first byte
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True


@dataclass
class HeldDir:
    """A results directory this process holds: `path`, the marker's open descriptor `fd` (the
    lock), whether the directory was `created` by this claim and whether it `had_marker`."""

    path: Path
    fd: int
    created: bool
    had_marker: bool

    def release(self) -> None:
        """Unlock (the marker stays: it names the run)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def discard(self) -> None:
        """Bad input found after the claim: leave the directory as it was found (a directory
        this claim created is removed; an existing one loses what this run wrote)."""
        try:
            if self.created:
                shutil.rmtree(self.path, ignore_errors=True)
            else:
                _empty(self.path, keep=MARKER if self.had_marker else None)
        finally:
            self.release()


def claim(out: Path, overwrite: bool, scenario_file: str = "") -> HeldDir:
    """Check, lock, (with `overwrite`) empty and mark `out` for one run; ConfigError if any
    rule of the module docstring refuses it. Nothing is written when it is refused."""
    if out.is_symlink():
        raise _refuse(out, f"a real directory, not a symlink (to {os.path.realpath(out)})")
    if out.exists() and not out.is_dir():
        raise _refuse(out, "a directory (this is a file)")
    if out.exists():
        _check_not_protected(out, scenario_file)
        return _claim_existing(out, overwrite, scenario_file, created=False)
    _check_creatable(out)
    try:
        out.mkdir(parents=True)
    except FileExistsError:  # another process made it a moment ago: the lock decides
        return claim(out, overwrite, scenario_file)
    return _claim_existing(out, overwrite, scenario_file, created=True)


def hold(out: Path, scenario_file: str = "") -> HeldDir:
    """Only the lock, for a folder that is added to and never emptied (a sweep's, whose
    `--resume` continues it): `out` (created if need be, never a symlink) held by this process,
    or ConfigError if another holds it."""
    if out.is_symlink():
        raise _refuse(out, f"a real directory, not a symlink (to {os.path.realpath(out)})")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    marker = out / MARKER
    had_marker = marker.is_file()
    fd = os.open(marker, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    if not _try_lock(fd):
        owner = _owner(fd)
        os.close(fd)
        raise _refuse(out, f"a folder no other skyswarm process is writing ({owner})")
    _write_marker(fd, out, scenario_file)
    return HeldDir(out, fd, created, had_marker)


def _claim_existing(out: Path, overwrite: bool, scenario_file: str, created: bool) -> HeldDir:
    marker = out / MARKER
    had_marker = marker.is_file() and not marker.is_symlink()
    if not had_marker and _others(out):
        raise _refuse(
            out,
            "an empty or new directory (--overwrite empties only a folder skyswarm wrote, "
            f"with its {MARKER}; this one has files of someone else's)",
        )
    if not os.access(out, os.W_OK | os.X_OK):
        raise _refuse(out, "a writable directory")
    fd = os.open(marker, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    if not _try_lock(fd):
        owner = _owner(fd)
        os.close(fd)
        raise _refuse(out, f"a results directory no other skyswarm run is writing ({owner})")
    held = HeldDir(out, fd, created, had_marker)
    try:
        if _others(out):
            if not overwrite:
                raise _refuse(out, "an empty or new directory (or --overwrite)")
            if os.path.ismount(out):
                raise _refuse(out, "a directory that is not a mount point (to be emptied)")
            _empty(out, keep=MARKER)
        _write_marker(fd, out, scenario_file)
    except BaseException:
        if not had_marker and not created:
            marker.unlink(missing_ok=True)
        held.release()
        raise
    return held


def _others(out: Path) -> list[Path]:
    return [p for p in out.iterdir() if p.name != MARKER]


def _empty(out: Path, keep: str | None) -> None:
    """Remove every entry of `out` but `keep`; symlinks are removed, never followed."""
    for child in out.iterdir():
        if child.name == keep:
            continue
        if child.is_dir() and not child.is_symlink() and not os.path.ismount(child):
            shutil.rmtree(child)
        else:
            child.unlink()


def _check_not_protected(out: Path, scenario_file: str) -> None:
    """Never the working directory, home, root, or a parent of those or of the scenario."""
    real = Path(os.path.realpath(out))
    guarded = {"the working directory": Path.cwd(), "the home directory": Path.home()}
    if scenario_file:
        guarded["the scenario's folder"] = Path(scenario_file).resolve().parent
    for what, path in guarded.items():
        path = Path(os.path.realpath(path))
        if real == path or real in path.parents:
            raise _refuse(out, f"a results directory that is neither {what} nor a parent of it")
    if real == Path(real.anchor):
        raise _refuse(out, "a results directory, not the filesystem root")


def _check_creatable(out: Path) -> None:
    """The only sure test of "can be created": create (and remove) a probe in the nearest
    existing ancestor."""
    parent = out.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    try:
        if not parent.is_dir():
            raise NotADirectoryError(str(parent))
        os.rmdir(tempfile.mkdtemp(prefix=".skyswarm-probe-", dir=parent))
    except OSError as exc:
        from skyswarm.app.exits import os_message

        raise _refuse(out, f"a path under a writable directory ({os_message(exc)})") from None


def _write_marker(fd: int, out: Path, scenario_file: str) -> None:
    data = marker_bytes(out, scenario_file)
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)


def _owner(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        if isinstance(info, dict) and "pid" in info:
            return f"held by pid {info['pid']} on {info.get('host', '?')}"
    return "held by another process"


def _refuse(out: Path, expected: str) -> ConfigError:
    return ConfigError("", "--out", str(out), expected)


def check_room(out: Path, need_bytes: int, what: str = "the trajectory") -> None:
    """Refuse, before the run starts, a results directory whose filesystem has less free room
    than `need_bytes` (the recorder's estimate of `what`): the run would die of a full disk
    hours in. A need within the free room, or a filesystem that cannot tell, passes.

        size, line = sim.recorder.size_estimate(duration_s)
        check_room(out, size)  # ConfigError: --out = 'run': expected room for ...
    """
    try:
        free = shutil.disk_usage(out).free
    except OSError:
        return
    if need_bytes > free:
        expected = (
            f"room for {what} (~{need_bytes / 1e6:,.1f} MB estimated, "
            f"{free / 1e6:,.1f} MB free there; shorten the run or lower results.trajectory_hz)"
        )
        raise _refuse(out, expected)


# -- files written next to a run: exports and plots ---------------------------------------------
def check_export_target(target: Path, results: Path, overwrite: bool, flag: str) -> None:
    """Refuse an export `target` (the value of `flag`) that is a file of the run directory
    `results` or of any run directory (a folder with a marker or a trajectory header), a
    directory, or (without `overwrite`) an existing file."""
    real = Path(os.path.realpath(target))
    run = Path(os.path.realpath(results))
    if real == run or run in real.parents:
        raise ConfigError("", flag, str(target), f"a file outside the run directory {results}")
    folder = real.parent
    if (folder / MARKER).exists() or (folder / "trajectory.json").exists():
        expected = f"a file outside run directories ({folder} is one)"
        raise ConfigError("", flag, str(target), expected)
    check_new_file(target, overwrite, flag)


def check_new_file(
    target: Path,
    overwrite: bool,
    flag: str,
    hint: str = "or --overwrite",
    make_folders: bool = False,
) -> None:
    """Refuse, before any work, a `target` file (the value of `flag`) that `atomic_path` could
    not write: a directory, an existing file without `overwrite`, or a name whose folder is
    missing, not a folder, or not writable (the temporary file goes there). With
    `make_folders` a missing folder is made now, and a temporary file written there and
    removed: what the writer will do, tried before the work rather than after it."""
    if target.is_dir():
        raise ConfigError("", flag, str(target), "a file name (this is a directory)")
    if os.path.lexists(target) and not overwrite:
        raise ConfigError("", flag, str(target), f"a new file ({hint})")
    folder = target.absolute().parent
    if make_folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            temporary_beside(target).unlink()
        except OSError as exc:
            expected = f"a file in a folder that can be written ({exc.strerror}: {folder})"
            raise ConfigError("", flag, str(target), expected) from None
        return  # the folder is there and was written to: nothing left to check
    if not folder.is_dir():
        missing = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(
            "", flag, str(target), f"a file in an existing folder ({folder} {missing})"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError("", flag, str(target), f"a file in a writable folder (not {folder})")


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path in `path`'s folder to write to; when the block ends without error it is
    fsynced and renamed over `path` (a reader or a crash never sees half a file, and a symlink
    at `path` is replaced, never written through); on error it is removed and `path` is as it
    was.

        with atomic_path(Path("map.png")) as tmp:
            fig.savefig(tmp, format="png")
    """
    tmp = temporary_beside(path)  # the error names the file asked for, not the temporary one
    try:
        yield tmp
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
