"""Fixtures of the MAVLink tests: a live run on 127.0.0.1 (see harness.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("pymavlink")  # the [mavlink] extra (in [dev]: CI installs it)

from tests.mavlink.harness import Run  # noqa: E402


@pytest.fixture
def mav_run(repo_root):
    """`mav_run(n=1, config=..., overrides=[...])` -> a connected Run, closed afterwards."""
    runs = []

    def make(n: int = 1, **kw) -> Run:
        run = Run(repo_root, n, **kw)
        runs.append(run)
        run.connect()
        return run

    yield make
    for run in runs:
        run.close()
