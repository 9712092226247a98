"""How a command ends: its exit code, and its one line on stderr.

Exit codes: 0 success (a run: its outcome is "target reached"), 1 I/O error, 2 bad input (one
line on stderr, no traceback), 130 interrupted; a run that finished short of what it was asked
exits with its outcome's code: 4 plan exhausted, 5 time limit, 6 all agents lost
(`OUTCOME_EXIT`; the outcome is also in summary.json).

Standard library only: app/interrupts.py, whose handler is installed before the heavy modules
import, exits with EXIT_INTERRUPTED from here.
"""

from __future__ import annotations

import contextlib
import sys

EXIT_IO_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_PLAN_EXHAUSTED = 4  # the mission ran out of plan short of its target
EXIT_TIME_LIMIT = 5  # the run hit simulation.duration_s short of its target
EXIT_ALL_LOST = 6  # every agent died
OUTCOME_EXIT = {
    "target reached": 0,
    "plan exhausted": EXIT_PLAN_EXHAUSTED,
    "time limit": EXIT_TIME_LIMIT,
    "all agents lost": EXIT_ALL_LOST,
    "stopped": EXIT_INTERRUPTED,
}


def error(text: str, prefix: str = "skyswarm: error: ") -> None:
    line = " ".join(text.split())  # exactly one line, whatever the message held
    with contextlib.suppress(OSError):
        print(f"{prefix}{line}", file=sys.stderr, flush=True)


def os_message(exc: OSError) -> str:
    where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror or type(exc).__name__}{where}"
