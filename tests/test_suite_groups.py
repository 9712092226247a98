"""The suite's parallel run keeps a shared flight on one worker (tests/conftest.py): under
`pytest -n 2 --dist loadgroup`, as .ci/run runs it, the tests that use a module-scoped fixture
get their module's xdist group and all run where the fixture was made. pytest 9.2 with
pytest-xdist 3.8 silently dropped every group (xdist rewrites a node id pytest no longer reads),
and each worker flew the shared runs again."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODULE = """
import os, time
import pytest

@pytest.fixture(scope="module")
def flight():
    return os.environ["PYTEST_XDIST_WORKER"]

@pytest.mark.parametrize("k", range(6))
def test_shares_the_flight(flight, k):
    time.sleep(0.1)
    assert flight == os.environ["PYTEST_XDIST_WORKER"]  # made on this very worker

@pytest.mark.parametrize("k", range(6))
def test_alone(k):
    time.sleep(0.1)
"""


def test_tests_of_a_module_fixture_run_on_one_worker(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_groups.py").write_text(MODULE, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
         "no:cacheprovider", "-o", "addopts=", "test_groups.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    lines = [line.strip() for line in out.stdout.splitlines()]
    shared = [line for line in lines if "PASSED" in line and "shares" in line]
    assert len(shared) == 6, out.stdout[-3000:]
    assert all(line.endswith("@test_groups.py") for line in shared), shared  # the group ...
    assert len({line.split("]")[0] for line in shared}) == 1, shared  # ... on one worker
