"""docs/extending.md's Python snippets run top to bottom, so the page cannot drift from the
API it documents."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "extending.md").read_text(), re.S)


def test_the_page_has_snippets() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_snippet_runs(index: int, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
