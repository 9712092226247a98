"""The README stays true: its config reference is generated from the validated dataclasses, and
the commands it shows exist."""

from __future__ import annotations

import importlib.util
import subprocess
import sys


def _updater(repo_root):
    spec = importlib.util.spec_from_file_location(
        "update_readme", repo_root / "docs/update_readme.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_reference_in_readme_is_current(repo_root):
    text = (repo_root / "README.md").read_text()
    block = _updater(repo_root).config_reference()
    assert block in text, "stale config reference: run python docs/update_readme.py"


def test_readme_quick_start_commands(repo_root):
    text = (repo_root / "README.md").read_text()
    fences = [b.split("```", 1)[0].strip() for b in text.split("```bash\n")[1:3]]
    assert fences[0] == "pip install . && skyswarm run flocking_coverage"
    assert fences[1] == ".ci/run"
    assert (repo_root / "configs/flocking_coverage.toml").is_file()  # shipped, found by name


def test_every_cli_command_in_readme_has_help(repo_root):
    text = (repo_root / "README.md").read_text()
    commands = (
        "run",
        "view",
        "replay",
        "batch",
        "plot",
        "export",
        "bench",
        "validate",
        "missions",
        "scenarios",
        "init",
    )
    for command in commands:
        assert f"skyswarm {command}" in text
        proc = subprocess.run(
            [sys.executable, "-m", "skyswarm.app.cli", command, "--help"],
            capture_output=True,
            text=True,
            cwd=repo_root,
            timeout=120,
        )
        assert proc.returncode == 0, (command, proc.stderr)


def test_bench_lists_every_benchmark(repo_root):
    proc = subprocess.run(
        [sys.executable, "-m", "skyswarm.app.cli", "bench", "--list"],
        capture_output=True,
        text=True,
        cwd=repo_root,
        timeout=120,
    )
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == sorted(p.stem for p in (repo_root / "bench").glob("*.py"))
    for name in names:  # every benchmark documented in the README's performance section
        assert f"bench/{name}.py" in (repo_root / "README.md").read_text()
