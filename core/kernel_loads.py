"""Loading compiled kernels from numba's cache without numba's full context refresh.

numba refreshes its CPU target context before every load from its on-disk cache
(`Cache.load_overload` calls `target_context.refresh()`). The first refresh of a process imports
numba's whole library of implementations (typed containers, random generators, linear algebra,
which imports scipy.linalg) and installs their registries: about 0.6 CPU s, the largest share of
what a run's set-up spends in `compile_s` when every kernel is cached already (docs/
performance.md). A cached kernel needs none of it: its machine code is linked as it was saved.
What it does need of the refresh is numba's runtime (NRT: the allocator compiled code calls),
which `rtsys.initialize` sets up in a few milliseconds.

`cached_loads_without_refresh()` swaps numba's `load_overload` for one that initialises the
runtime and loads, for the duration of the `with` block (the simulator's `compile_kernels`). A
signature the cache does not hold is compiled as usual: numba's compiler refreshes the context
itself. Outside the block numba is as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from numba.core import caching as numba_caching

_ORIGINAL = numba_caching.Cache.load_overload
# the parts of numba's own load_overload this relies on (numba 0.5x-0.6x); without them the
# block changes nothing
_USABLE = all(
    hasattr(numba_caching.Cache, name)
    for name in ("load_overload", "_load_overload", "_guard_against_spurious_io_errors")
)


def _load_overload(cache: Any, sig: Any, target_context: Any) -> Any:
    """numba's `Cache.load_overload` with `target_context.refresh()` replaced by the runtime's
    initialisation, the one part of the refresh that loaded code uses."""
    from numba.core.runtime.nrt import rtsys

    rtsys.initialize(target_context)
    with cache._guard_against_spurious_io_errors():
        return cache._load_overload(sig, target_context)
    return None  # the guard swallowed an I/O error: not cached (numba's own behaviour)


@contextmanager
def cached_loads_without_refresh() -> Iterator[None]:
    """Inside the block, kernels load from numba's cache without the full context refresh."""
    if not _USABLE or numba_caching.Cache.load_overload is not _ORIGINAL:
        yield  # unknown numba, or a block already open: leave numba alone
        return
    numba_caching.Cache.load_overload = _load_overload  # type: ignore[method-assign]
    try:
        yield
    finally:
        numba_caching.Cache.load_overload = _ORIGINAL  # type: ignore[method-assign]
