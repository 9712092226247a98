"""The command line starts without numba where it needs no kernel: `skyswarm --help`, and a
scenario refused for bad TOML (one line, exit 2), in a fresh interpreter. numba and the kernels'
modules cost ~0.4 s of CPU to import; a run imports them when it builds its simulation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from skyswarm.app.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(code, 'numba' in sys.modules, file=sys.__stderr__)
"""


def _probe(args: list[str], cwd: Path) -> tuple[str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    return proc.stdout, proc.stderr


def test_help_imports_no_numba(tmp_path: Path) -> None:
    out, err = _probe(["--help"], tmp_path)
    assert "warmup" in out and "run" in out  # the whole parser, every command listed
    assert err.splitlines()[-1] == "0 False"


def test_bad_toml_is_refused_before_numba_is_imported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("x = \n")
    _, err = _probe(["run", str(bad), "--quiet"], tmp_path)
    lines = err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("skyswarm: error: ") and "bad.toml" in lines[0]
    assert lines[1] == "2 False"  # exit 2, and numba never imported


def test_a_run_imports_numba(tmp_path: Path) -> None:
    """The probe can see numba: a run that builds its simulation imports it."""
    _, err = _probe(["run", "hover", "--quiet", "--no-plots", "--duration", "0.1"], tmp_path)
    assert err.splitlines()[-1] in ("0 True", "5 True"), err
