"""Ctrl-C in the `skyswarm` process: always one line on stderr and exit 130, results kept.

The stages, in the order a process meets them:
- `interrupted_early`: installed at the top of app/cli.py, before the heavy modules import
  (there is nothing to keep yet): one line and exit 130 at once. Standard library only, so
  importing this module costs nothing before it is installed.
- `Interrupt.handler`: `main` swaps it in once the modules are loaded; it raises
  KeyboardInterrupt, which the run command turns into a run stopped with its results kept.
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
def deferred_sigint() -> Iterator[None]:
    """Ctrl-C waits until the block (writing the summary) is done, then interrupts."""
    hit: list[int] = []
    try:
        old = signal.signal(signal.SIGINT, lambda signum, frame: hit.append(signum))
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if hit:
        raise KeyboardInterrupt
