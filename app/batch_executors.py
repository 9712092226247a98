"""Where the runs of `skyswarm batch` execute: a local process pool or a Dask cluster.

Both speak the `Executor` protocol the coordinator (app/batch.py) drives: `capacity` runs in
flight, `submit` one run (app/batch_worker.py, `execute_run`), `wait` for the first to finish,
`release` a future whose result the coordinator has taken, `abort` on Ctrl-C, `close`.
`session` (the coordinator's id of the sweep invocation) goes into each execution's start
record (app/batch_worker.py, `record_start`).
"""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

from skyswarm.app.batch_worker import execute_run, init_worker
from skyswarm.app.sweep import RunSpec


class Executor(Protocol):
    capacity: int  # runs to keep in flight

    def submit(self, spec: RunSpec, attempt: int, session: str) -> Any: ...
    def wait(self, futures: list[Any], timeout: float) -> list[Any]: ...
    def release(self, future: Any) -> None: ...
    def abort(self, futures: list[Any]) -> None: ...
    def close(self) -> None: ...


class LocalPool:
    """concurrent.futures process pool; forkserver (or spawn) children, never a fork of a
    process that may hold a pybullet client. Workers ignore SIGINT."""

    def __init__(self, workers: int) -> None:
        self.capacity = workers
        self._pool = self._new_pool()

    def _new_pool(self) -> Any:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        if "forkserver" in mp.get_all_start_methods():
            ctx = mp.get_context("forkserver")
            # imported once in the fork server (no physics client, no numba thread yet), so
            # each worker starts without paying the imports again
            ctx.set_forkserver_preload(["skyswarm.app.batch_worker", "skyswarm.core.simulator"])
        else:  # pragma: no cover - Windows / macOS without forkserver
            ctx = mp.get_context("spawn")
        threads = max(1, (os.cpu_count() or 1) // self.capacity)  # no over-subscription
        return ProcessPoolExecutor(
            self.capacity,
            mp_context=ctx,
            initializer=init_worker,
            initargs=(os.getpid(), threads),
        )

    def submit(self, spec: RunSpec, attempt: int, session: str) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self._pool.submit(execute_run, spec, attempt, session)
        except BrokenProcessPool:  # a worker died earlier: its futures failed, start afresh
            self._pool.shutdown(wait=False)
            self._pool = self._new_pool()
            return self._pool.submit(execute_run, spec, attempt, session)

    def wait(self, futures: list[Any], timeout: float) -> list[Any]:
        from concurrent.futures import FIRST_COMPLETED, wait

        return list(wait(futures, timeout, return_when=FIRST_COMPLETED).done)

    def release(self, future: Any) -> None:
        pass  # a finished process-pool future holds nothing a worker death could undo

    def abort(self, futures: list[Any]) -> None:
        # Python < 3.14 has no public way to stop running workers: terminate them by pid.
        procs = list(getattr(self._pool, "_processes", {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.terminate()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskCluster:
    """A dask.distributed Client on a running scheduler; one slot per worker thread (start
    workers with `--nthreads 1`: pybullet runs hold the GIL). The slot count is re-read every
    few seconds, so workers that join later (dask-jobqueue, Kubernetes scaling) get work."""

    def __init__(self, address: str, timeout_s: float = 30.0) -> None:
        from distributed import Client

        self.client = Client(address, timeout=timeout_s)
        self.client.wait_for_workers(1, timeout=timeout_s)
        self._slots, self._read_at = 1, -1e9

    @property
    def capacity(self) -> int:
        if time.monotonic() - self._read_at > 2.0:
            self._slots = max(1, sum(self.client.nthreads().values()))
            self._read_at = time.monotonic()
        return self._slots

    def submit(self, spec: RunSpec, attempt: int, session: str) -> Any:
        # Dask re-runs a task whose worker died on another worker (up to the scheduler's
        # allowed-failures) without telling the client: the run's start records count those
        key = f"skyswarm-{spec.run}-a{attempt}-{time.time_ns()}"
        return self.client.submit(execute_run, spec, attempt, session, key=key, pure=False)

    def wait(self, futures: list[Any], timeout: float) -> list[Any]:
        from distributed import wait

        try:
            return list(wait(futures, timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:
            return []

    def release(self, future: Any) -> None:
        # The result is taken: let the scheduler forget it now. A result still wanted sits in
        # its worker's memory, and if that worker dies the scheduler runs the task again (a
        # finished run re-executed behind the coordinator's back, its folder rewritten).
        future.release()

    def abort(self, futures: list[Any]) -> None:
        self.client.cancel(futures)

    def close(self) -> None:
        self.client.close()
