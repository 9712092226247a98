"""`threaded()` reads numba's thread count through its compiled getter once numba's threads
run (no locks per call), and still follows `numba.set_num_threads` and a replaced
`numba.get_num_threads` (tests monkeypatch it)."""

from __future__ import annotations

import numba

from skyswarm.core import backends
from skyswarm.core.backends import PARALLEL_MIN, threaded


def test_the_thread_count_follows_set_num_threads_and_a_replaced_getter(monkeypatch) -> None:
    before = numba.get_num_threads()  # starts numba's threads: the fast path from here on
    try:
        for count in range(1, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(count)
            assert backends._thread_count() == count == numba.get_num_threads()
            assert threaded(PARALLEL_MIN) == (count > 1)
        monkeypatch.setattr(numba, "get_num_threads", lambda: 7)
        assert backends._thread_count() == 7 and threaded(PARALLEL_MIN)
        monkeypatch.setattr(numba, "get_num_threads", lambda: 1)
        assert not threaded(10**6)
    finally:
        numba.set_num_threads(before)
