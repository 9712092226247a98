"""The one way skyswarm compiles code: `njit`, numba's decorator with its on-disk cache kept
outside the package, in a directory keyed by the source of every compiled module.

numba checks a cached function against the file it was defined in alone. A kernel that calls a
helper of another file (uav/kernel.py calls core/frames.py) would keep running the old helper
after an edit there, so the cache directory is named by a hash of the source of every module of
the package that compiles code through this one (the files that import `skyswarm.core.jit`, and
this file): an edit to any of them starts a fresh directory and everything recompiles. The
directory lies in the user's cache (`platformdirs.user_cache_dir("skyswarm")`, or under
NUMBA_CACHE_DIR when the user set it), never in the package, which may be read-only, and whose
`__pycache__` folders numba would otherwise fill (an installed copy with a stray `uav/__pycache__`
reads as a namespace package). When that directory cannot be written, functions compile
without a cache rather than fall back to the package folder.

Usage, in a module of compiled code:

    from skyswarm.core.jit import njit, prange

    @njit(nogil=True)
    def total(a):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i]
        return s

Only numba's cache location changes: a function's options are its own (a module that wants
numpy's error model or `inline="always"` says so), `cache=True` is the default.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numba
import platformdirs
from numba import prange  # noqa: F401  (re-exported: compiled modules import both from here)
from numba.core import config as numba_config

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the `skyswarm` folder
_MARKERS = (b"skyswarm.core.jit import", b"from skyswarm.core import jit")


def compiled_modules(root: Path = PACKAGE_ROOT) -> list[Path]:
    """The package's modules of compiled code: this file and every module of the package's
    subpackages (folders with an __init__.py, reached from `root` through such folders: not
    tests/, bench/ or a build/ tree in a checkout) that imports this module, sorted."""
    here = Path(__file__).resolve()
    found = {here} if here.is_relative_to(root) else set()
    for path in package_modules(root):
        if any(marker in path.read_bytes() for marker in _MARKERS):
            found.add(path.resolve())
    return sorted(found)


def package_modules(root: Path = PACKAGE_ROOT) -> list[Path]:
    """Every .py file of `root` and of its subpackages: folders with an __init__.py reached
    from `root` through such folders (not tests/, bench/ or a build/ tree of a checkout)."""
    found, todo = [], [root]
    while todo:
        folder = todo.pop()
        for path in folder.iterdir():
            if path.is_dir() and (path / "__init__.py").is_file():
                todo.append(path)
            elif path.suffix == ".py":
                found.append(path)
    return sorted(found)


def source_key(paths: Iterable[Path], root: Path = PACKAGE_ROOT) -> str:
    """16 hex digits of a SHA-256 over each file's path relative to `root` and its bytes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_dir(root: Path = PACKAGE_ROOT, base: str | None = None) -> Path:
    """Where numba caches the package's compiled code: `base` (default: NUMBA_CACHE_DIR if set,
    else the user's cache directory) / "numba-" + the source key of `compiled_modules(root)`."""
    if base is None:
        base = os.environ.get("NUMBA_CACHE_DIR") or platformdirs.user_cache_dir(
            "skyswarm", appauthor=False
        )
    return Path(base) / f"numba-{source_key(compiled_modules(root), root)}"


@lru_cache(maxsize=1)
def _writable_cache_dir() -> Path | None:
    """This process's cache directory, created; None (and one warning) if it cannot be."""
    path = cache_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".probe-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as err:
        warnings.warn(
            f"skyswarm: numba cache directory {path} is not writable ({err}); compiled code is "
            "not cached (set NUMBA_CACHE_DIR to a writable folder)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return path


def njit(func: Callable | None = None, **options: Any) -> Any:
    """numba.njit with `cache=True` by default and the cache in `cache_dir()` (see the module
    docstring). Use bare (`@njit`) or with numba's options (`@njit(parallel=True)`)."""

    def decorate(f: Callable) -> Any:
        opts = {"cache": True, **options}
        where = _writable_cache_dir() if opts["cache"] else None
        if where is None:
            return numba.njit(**{**opts, "cache": False})(f)
        # numba fixes a function's cache path when caching is enabled, at decoration: point
        # its config there for this decoration only, so other libraries' caches are untouched.
        before = numba_config.CACHE_DIR
        numba_config.CACHE_DIR = str(where)
        try:
            return numba.njit(**opts)(f)
        finally:
            numba_config.CACHE_DIR = before

    return decorate if func is None else decorate(func)
