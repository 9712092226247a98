"""The documentation site stays true: it builds with `mkdocs build --strict` (no broken link,
anchor or API reference, every page in the nav), its generated config reference is current, and
the tutorials marked `<!-- docs-test: run -->` run top to bottom as a reader would run them."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUN_MARK = "<!-- docs-test: run -->"
# Pages that must stay runnable (the marker could be dropped by mistake; these cannot).
MUST_RUN = {"tutorials/first-scenario.md", "tutorials/controller.md", "tutorials/mission.md"}
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
TITLE = re.compile(r'title="([^"]+)"')


def _generator():
    spec = importlib.util.spec_from_file_location("gen_config", DOCS / "gen_config_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_reference_page_is_current() -> None:
    page = (DOCS / "reference" / "config.md").read_text(encoding="utf-8")
    assert page == _generator().page(), "stale: run python docs/gen_config_reference.py"
    # the page holds every core section and is not an empty shell
    for section in ("[simulation]", "[agents]", "[uav]", "[wind]", "[comms]"):
        assert f"**{section}**" in page


def _import_path(tmp_path: Path) -> Path:
    """A directory whose `skyswarm` is this checkout, whatever the checkout is called."""
    path = tmp_path / "path"
    path.mkdir()
    (path / "skyswarm").symlink_to(ROOT, target_is_directory=True)
    return path


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra")
    # mkdocstrings reads the package from source, found through SKYSWARM_DOCS_PATH
    env = dict(os.environ, SKYSWARM_DOCS_PATH=str(_import_path(tmp_path)), NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    log = proc.stderr + proc.stdout
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0 and not warnings, "\n".join(warnings) or log[-3000:]
    # the API pages were rendered from the docstrings, not left as `:::` lines
    api = (tmp_path / "s" / "reference" / "api" / "commands" / "index.html").read_text()
    assert "CommandInterface" in api and "body_rates" in api and ":::" not in api
    assert (tmp_path / "s" / "tutorials" / "controller" / "index.html").is_file()


def _runnable_pages() -> list[str]:
    return sorted(
        str(p.relative_to(DOCS))
        for p in DOCS.rglob("*.md")
        if RUN_MARK in p.read_text(encoding="utf-8")
    )


def test_the_pages_that_must_run_are_marked() -> None:
    assert MUST_RUN <= set(_runnable_pages())


def blocks(text: str) -> list[tuple[str, str | None, str]]:
    """(language, title or None, body) of each fenced block of a page, in order."""
    out = []
    for lang, info, body in FENCE.findall(text):
        title = TITLE.search(info)
        out.append((lang, title.group(1) if title else None, body))
    return out


def test_block_parser_reads_titles_and_languages() -> None:
    text = '```toml title="a.toml"\nx = 1\n```\n\n```python\nprint(1)\n```\n\n```bash\nls\n```\n'
    assert blocks(text) == [
        ("toml", "a.toml", "x = 1\n"),
        ("python", None, "print(1)\n"),
        ("bash", None, "ls\n"),
    ]


@pytest.mark.parametrize("page", _runnable_pages())
def test_tutorial_runs_top_to_bottom(page: str, tmp_path: Path) -> None:
    """Titled blocks are files (written where the reader would save them); untitled python
    blocks run in order in one namespace, in a fresh interpreter, from an empty directory."""
    work = tmp_path / "work"
    work.mkdir()
    # the skyswarm this test sees (PYTHONPATH or the editable install), by its own path, so
    # numba's cache (keyed by the source files' paths) is the one earlier runs filled
    script = [
        "import os, sys",
        "sys.path.insert(0, os.getcwd())",
        "import skyswarm",
        f"assert skyswarm.__file__ == {str(ROOT / '__init__.py')!r}, skyswarm.__file__",
    ]
    ran = 0
    for lang, title, body in blocks((DOCS / page).read_text(encoding="utf-8")):
        if title is not None:
            (work / title).parent.mkdir(parents=True, exist_ok=True)
            (work / title).write_text(body, encoding="utf-8")
        elif lang == "python":
            script.append(f"exec(compile({body!r}, {f'{page} block {ran}'!r}, 'exec'))")
            ran += 1
    assert ran >= 2, f"{page} is marked to run but has {ran} python blocks"
    env = dict(os.environ)
    env.pop("DISPLAY", None)  # tutorials that run are headless
    proc = subprocess.run(
        [sys.executable, "-c", "\n".join(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
