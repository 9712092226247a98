"""Ctrl-C in the `skyswarm` process: always one line on stderr and exit 130, results kept.

The stages, in the order a process meets them:
- `interrupted_early`: installed at the top of app/cli.py, before the heavy modules import
  (there is nothing to keep yet): one line and exit 130 at once. Standard library only, so
  importing this module costs nothing before it is installed.
- `Interrupt.handler`: `main` swaps it in once the modules are loaded; it raises
  KeyboardInterrupt, which the run command turns into a run stopped with its results kept.
- `polled_sigint`: while the run loop steps, the first Ctrl-C only asks it to stop, and the
  loop's progress check (every 0.5 s of wall time) raises at a point between ticks; a second
  Ctrl-C raises at once.
- `deferred_sigint`: while the summary is written, Ctrl-C waits until the block is done.
- `forget_unhandled_interrupt`: at the end of `main`, so the interpreter exits with the code
  `main` returned.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

from skyswarm.app.exits import EXIT_INTERRUPTED


def interrupted_early(signum, frame) -> None:  # Ctrl-C while the heavy modules import
    os.write(2, b"skyswarm: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


class Interrupt:
    """Ctrl-C as the CLI sees it. The handler raises KeyboardInterrupt and remembers that it
    did: a KeyboardInterrupt raised inside a C callback (numba's LLVM calls back into Python
    while it compiles) is swallowed by ctypes as "unraisable", so the run would go on as if
    Ctrl-C had never been pressed. The remembered flag is checked again once set-up is over and
    at every progress report of the run (`check`)."""

    pending = False

    @classmethod
    def handler(cls, signum, frame) -> None:
        cls.pending = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.pending:
            raise KeyboardInterrupt


def quiet_unraisable(hook):
    def quiet(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and Interrupt.pending:
            return  # a Ctrl-C swallowed by a C callback: acted on at the next `check`
        hook(unraisable)

    return quiet


def forget_unhandled_interrupt() -> None:
    """CPython marks a KeyboardInterrupt that escapes code run by exec() of a string (the
    dataclasses module builds __init__ and __hash__ that way while our modules import) as
    unhandled, and at exit the interpreter then kills itself with SIGINT (exit -2) although the
    exception was caught and 130 returned. Any exec() of a string clears that mark."""
    exec("")


@contextlib.contextmanager
def polled_sigint() -> Iterator[None]:
    """While the block runs the simulation loop, the first Ctrl-C sets `Interrupt.pending`
    only; the loop's progress callback calls `Interrupt.check()`, which raises between ticks.

    A KeyboardInterrupt raised wherever the signal lands can land inside the standard
    library's own locking: in `multiprocessing.Queue.put` (the video's frames on their way to
    the render processes) between `Condition.notify` waking the queue's feeder thread and
    taking it off the waiting list, after which the feeder sleeps through the next item -- the
    end-of-frames marker -- and the run hangs at exit. So the loop is only ever stopped between
    ticks. A second Ctrl-C raises at once: a tick that never ends (a mission's endless loop)
    can still be interrupted."""

    def handler(signum, frame) -> None:
        if Interrupt.pending:
            raise KeyboardInterrupt
        Interrupt.pending = True

    with _sigint(handler):
        yield


@contextlib.contextmanager
def deferred_sigint() -> Iterator[None]:
    """Ctrl-C waits until the block (writing the summary) is done, then interrupts."""
    hit: list[int] = []
    with _sigint(lambda signum, frame: hit.append(signum)):
        yield
    if hit:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _sigint(handler) -> Iterator[None]:
    """SIGINT goes to `handler` inside the block, and back to the previous handler after it
    (outside the main thread, where no handler can be set, nothing changes)."""
    try:
        old = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
