"""The README stays a true front page: the two commands it opens with, a short page whose links
all lead somewhere, a code sample that runs; and the documentation it points to names every
CLI command there is (each with --help) and every benchmark there is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "skyswarm.app.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def _code() -> str:
    """The fenced blocks and inline code spans of the README and the docs, one per line."""
    out = []
    for page in [README, *sorted(DOCS.rglob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        out += re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
        out += re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text)
    return "\n".join(out)


def test_readme_quick_start_commands(repo_root):
    text = (repo_root / "README.md").read_text()
    fences = [b.split("```", 1)[0].strip() for b in text.split("```bash\n")[1:3]]
    assert fences[0] == "pip install . && skyswarm run flocking_coverage"
    assert fences[1] == ".ci/run"
    assert (repo_root / "configs/flocking_coverage.toml").is_file()  # shipped, found by name


def test_readme_is_a_front_page_whose_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "![" in text and "(docs/screenshot_3d.png)" in text  # the one picture
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert len(local) >= 20  # the page is mostly a map into the docs
    missing = [link for link in local if not (ROOT / link).is_file()]
    assert not missing, f"README links to missing files: {missing}"


def test_readme_code_sample_runs(tmp_path):
    text = README.read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(code) == 1
    proc = subprocess.run(
        [sys.executable, "-c", code[0]], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # both runs end with an honest outcome: the hover run and the controller-driven run
    assert proc.stdout.count("target reached") == 2, proc.stdout


def test_every_cli_command_is_documented_and_every_documented_one_has_help():
    usage = _cli("--help").stdout
    commands = set(re.search(r"\{([a-z,]+)\}", usage).group(1).split(","))
    assert {"run", "view", "replay", "batch", "validate", "init"} <= commands
    cli_page = (DOCS / "guide" / "cli.md").read_text(encoding="utf-8")
    undocumented = [c for c in sorted(commands) if f"skyswarm {c}" not in cli_page]
    assert not undocumented, f"not in docs/guide/cli.md: {undocumented}"
    # every command the README or the docs show as code (a shell line, `skyswarm x`) exists
    shown = set(re.findall(r"(?:^\s*\$?\s*|&& |=\S* )skyswarm ([a-z]+)", _code(), re.M))
    assert {"run", "view", "batch", "init"} <= shown  # the pattern finds them
    assert shown <= commands, f"documented but not commands: {sorted(shown - commands)}"
    for command in sorted(commands):
        proc = _cli(command, "--help")
        assert proc.returncode == 0, (command, proc.stderr)


def test_bench_lists_every_benchmark_and_the_docs_reproduce_each():
    proc = _cli("bench", "--list")
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == sorted(p.stem for p in (ROOT / "bench").glob("*.py"))
    perf = (DOCS / "performance.md").read_text(encoding="utf-8")
    for name in names:  # each benchmark on the performance page, with its command
        assert f"python bench/{name}.py" in perf or f"skyswarm bench {name}" in perf, name
