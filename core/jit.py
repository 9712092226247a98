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

Inside that directory a module's functions are cached by the module's folder within the
package and stamped with its source's hash (`_PackageLocator`), not by the absolute path numba
uses: `pip install .`, `pip install -e .`, a wheel in another venv or a moved checkout of the
same source all load what any of them compiled.

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

Compile before the clock: numba compiles a kernel (or loads it from the cache) on its first call,
which would land inside a run's timed loop. A module that calls a kernel from Python declares
the argument types it calls it with, `ahead(kernel, "i8[1] f8[2] f8 ?")`, and `compile_ahead()`
(the simulator's set-up; `skyswarm warmup` for every compiled module) compiles or loads them all
before the first tick, so the set-up's `compile_s` holds that time and the loop none of it:

    ahead(total, "f8[1]")   # total(a) is called with a C-contiguous float64 vector
    seconds = compile_ahead()
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

import numba
import platformdirs
from numba import prange  # noqa: F401  (re-exported: compiled modules import both from here)
from numba import types as nb_types
from numba.core import caching as numba_caching
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


@lru_cache(maxsize=64)
def _source_digest(path: str, mtime_ns: int, size: int) -> bytes:
    """SHA-256 of a source file (memoised by its mtime and size: an edit re-hashes it)."""
    return hashlib.sha256(Path(path).read_bytes()).digest()


class _PackageLocator(numba_caching._CacheLocator):
    """Where numba caches a function of this package: `_writable_cache_dir()` / the source
    folder's path inside the package ("uav", "core_backends"), stamped with the source's hash.
    numba's own locator names the folder by the source's absolute path (and older numba
    versions stamp the file's mtime), so every install of the same source compiled everything
    again.
    Functions outside the package get numba's locators (None here)."""

    def __init__(self, py_func: Any, py_file: str, where: Path, inside: Path) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(where / ("_".join(inside.parts) or "skyswarm"))

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> bytes:
        st = os.stat(self._py_file)
        return _source_digest(self._py_file, st.st_mtime_ns, st.st_size)

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> _PackageLocator | None:
        where = _writable_cache_dir()
        folder = Path(py_file).resolve().parent
        if where is None or not folder.is_relative_to(PACKAGE_ROOT):
            return None
        locator = cls(py_func, py_file, where, folder.relative_to(PACKAGE_ROOT))
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator


class _PackageCacheImpl(numba_caching.CompileResultCacheImpl):
    _locator_classes = [_PackageLocator, *numba_caching.CompileResultCacheImpl._locator_classes]


class _PackageCache(numba_caching.FunctionCache):
    """numba's function cache with `_PackageLocator` tried first."""

    _impl_class = _PackageCacheImpl


def njit(func: Callable | None = None, **options: Any) -> Any:
    """numba.njit with `cache=True` by default and the cache in `cache_dir()` (see the module
    docstring). Use bare (`@njit`) or with numba's options (`@njit(parallel=True)`)."""

    def decorate(f: Callable) -> Any:
        opts = {"cache": True, **options}
        where = _writable_cache_dir() if opts["cache"] else None
        if where is None:
            kernel = numba.njit(**{**opts, "cache": False})(f)
        else:
            # numba fixes a function's cache path when caching is enabled, at decoration: point
            # its config there for this decoration only, so other libraries' caches are intact.
            before = numba_config.CACHE_DIR
            numba_config.CACHE_DIR = str(where)
            try:
                kernel = numba.njit(**opts)(f)
                kernel._cache = _PackageCache(f)  # before anything compiled: see the class
            finally:
                numba_config.CACHE_DIR = before
        _KERNELS.append(kernel)
        return kernel

    return decorate if func is None else decorate(func)


_SCALARS = {"f8": nb_types.float64, "i8": nb_types.int64, "u1": nb_types.uint8}
_SCALARS["?"] = nb_types.boolean
_AHEAD: list[tuple[Any, tuple[Any, ...]]] = []  # (kernel, numba argument types), in import order
_KERNELS: list[Any] = []  # every dispatcher `njit` made, in import order


def arg_type(code: str | Any) -> Any:
    """The numba type of one argument: "f8" / "i8" / "u1" / "?" a scalar (float64, int64,
    uint8, bool), "f8[2]" a C-contiguous 2-d array of float64, "f8[2A]" one of any layout (a
    strided view), "(i8[1] f8[2])" a tuple; anything else is taken as a numba type already
    (e.g. `numba.typeof(records)` of a structured array)."""
    if not isinstance(code, str):
        return code
    if code.startswith("("):
        return nb_types.Tuple(tuple(arg_type(c) for c in code[1:-1].split()))
    name, _, dims = code.partition("[")
    scalar = _SCALARS[name]
    if not dims:
        return scalar
    return nb_types.Array(scalar, int(dims[0]), "A" if dims[1] == "A" else "C")


def ahead(kernel: Any, *signatures: str | tuple[Any, ...]) -> None:
    """Declare the argument types `kernel` is called with from Python, one signature each: a
    string of `arg_type` codes separated by spaces, or a tuple of codes and numba types.
    `compile_ahead()` compiles (or loads from the cache) every declared signature.

        ahead(merge_rows, "i8[1] f8[2] i8 (i8[1] f8[2])")
    """
    for sig in signatures:
        codes = re.findall(r"\([^)]*\)|\S+", sig) if isinstance(sig, str) else sig
        _AHEAD.append((kernel, tuple(arg_type(c) for c in codes)))


def compile_ahead() -> float:
    """Compile, or load from the cache, every signature declared with `ahead` by the modules
    imported so far (a signature already compiled costs nothing); returns the wall seconds."""
    start = time.perf_counter()
    for kernel, types in list(_AHEAD):
        kernel.compile(types)
    return time.perf_counter() - start


def kernel_count() -> int:
    """How many distinct kernels `ahead` has declared signatures of in this process."""
    return len({id(k) for k, _ in _AHEAD})


def callees(kernel: Any) -> list[Any]:
    """The kernels made by `njit` that `kernel` calls, directly or through the ones it calls:
    the names its code (and its nested code's) reads that its module binds to such a kernel,
    or to a module holding one by that name, as numba resolves them (closures are not read)."""
    made = {id(k) for k in _KERNELS}
    found: dict[int, Any] = {}
    todo = [kernel]
    while todo:
        func = todo.pop().py_func
        names: set[str] = set()
        codes = [func.__code__]
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes.extend(c for c in code.co_consts if isinstance(c, CodeType))
        for name in sorted(names):
            value = func.__globals__.get(name)
            called = [value] if id(value) in made else []
            if isinstance(value, ModuleType):  # frames.to_body
                called = [
                    getattr(value, n) for n in sorted(names) if id(getattr(value, n, None)) in made
                ]
            for k in called:
                if k is not kernel and id(k) not in found:
                    found[id(k)] = k
                    todo.append(k)
    return list(found.values())


def _inlined(kernel: Any) -> bool:
    """numba inlines `kernel` into its callers' IR (`inline="always"`): no code, no cache of its
    own."""
    return kernel.targetoptions.get("inline", "never") == "always"


def _weight(kernel: Any) -> int:
    """A kernel's compile cost, estimated: bytes of Python bytecode of it and of every kernel it
    calls (what numba types and lowers), twice for a threaded one (parfor passes, a gufunc)."""
    size = sum(len(k.py_func.__code__.co_code) for k in [kernel, *callees(kernel)])
    return size * (2 if kernel.targetoptions.get("parallel") else 1)


def groups() -> list[list[tuple[Any, tuple[Any, ...]]]]:
    """The declared (kernel, types) signatures in the groups one process of `skyswarm warmup`
    compiles whole, heaviest first (by `_weight`, per signature): every signature of a kernel,
    with every kernel that shares a compiled callee with it (fly and fly_parallel both call
    uav.kernel._fly_range: compiling a kernel compiles its callees and writes their cache
    index, which one process must own). Callees numba inlines (`inline="always"`) are compiled
    inside each caller and join nothing."""
    kernels: list[Any] = []
    for kernel, _ in _AHEAD:
        if all(kernel is not k for k in kernels):
            kernels.append(kernel)
    root = list(range(len(kernels)))  # union-find over the declared kernels

    def find(i: int) -> int:
        while root[i] != i:
            i = root[i]
        return i

    owner: dict[int, int] = {}  # id of a compiled kernel -> a declared kernel that compiles it
    for i, kernel in enumerate(kernels):
        for k in [kernel, *callees(kernel)]:
            if _inlined(k):
                continue
            j = owner.setdefault(id(k), i)
            root[find(i)] = find(j)
    weight = {id(k): _weight(k) for k in kernels}
    out: dict[int, list[tuple[Any, tuple[Any, ...]]]] = {}
    index = {id(k): i for i, k in enumerate(kernels)}
    for kernel, types in _AHEAD:
        out.setdefault(find(index[id(kernel)]), []).append((kernel, types))
    cost = {g: sum(weight[id(k)] for k, _ in sigs) for g, sigs in out.items()}
    return [out[g] for g in sorted(out, key=lambda g: (-cost[g], g))]


def shares(parts: int) -> list[list[tuple[Any, tuple[Any, ...]]]]:
    """The declared (kernel, types) signatures split into `parts` shares of whole `groups()`:
    heaviest first, each to the lightest share so far (by `_weight`), so no two shares compile
    one kernel or write one cache index."""
    out: list[list[tuple[Any, tuple[Any, ...]]]] = [[] for _ in range(parts)]
    load = [0] * parts
    for group in groups():
        i = load.index(min(load))
        out[i].extend(group)
        load[i] += sum(_weight(k) for k, _ in group)
    return out


def compile_group(index: int) -> int:
    """Compile (or load) `groups()[index]`: one work item of `skyswarm warmup`'s processes.
    Returns the number of signatures compiled."""
    mine = groups()[index]
    for kernel, types in mine:
        kernel.compile(types)
    return len(mine)


def declared_count() -> int:
    """How many signatures `ahead` has declared in this process (imported modules)."""
    return len(_AHEAD)


def compiled_signatures() -> dict[str, int]:
    """How many signatures each kernel made by `njit` has compiled in this process (qualified
    name -> count): a run whose counts grow after `compile_ahead()` compiled inside its loop."""
    return {f"{k.py_func.__module__}.{k.__name__}": len(k.signatures) for k in _KERNELS}
