"""Switching installs cannot shadow the package (issue 28), and reuses what was compiled.

`pip install .` then `pip install -e .` into one virtual environment: numba's cache once lived
in site-packages/skyswarm/uav/__pycache__, pip left it behind when it removed the copy, and
that folder turned `skyswarm` into an empty namespace package ("No module named
'skyswarm.uav.agents'"). Here, in a throwaway venv that reuses this interpreter's packages
(--system-site-packages; no downloads, no build isolation) and a copy of the source:

1. the non-editable install steps every shipped scenario (every shipped mission) ten ticks.
   Its user cache directory is a fresh one, seeded with this checkout's compiled code (the same
   source: core/jit.py keys the cache by content, not by the install's path) except the
   `uav/sensors` folder's: the proximity sensor's kernels compile anew. numba's cache log
   (NUMBA_DEBUG_CACHE) shows every save in the user cache, none in the installed package (and
   nothing appears there that pip did not install, its RECORD), and loads of the seeded code
   at the new install path;
2. the editable install of the same source leaves no `skyswarm` folder in site-packages, and
   every shipped scenario builds its simulation from the source tree (every mission module
   imported, agents and world made).

Slow: two pip installs and the `uav/sensors` kernels compiled (the rest loaded if this checkout ran
`skyswarm warmup`, as .ci/run does; compiled too otherwise).

pip, not uv, even where uv is installed (tests/test_wheel.py uses it): the switch under test is
pip's (its uninstall removes what RECORD lists and leaves the rest, which is how the stale folder
survived), and pip records the bytecode it compiles in RECORD, which the check above relies on;
uv 0.13 writes no bytecode by default and leaves what `--compile-bytecode` writes out of RECORD
(measured: 204 .pyc files, none listed), so the first run would "write" unrecorded files. The
two pip installs are ~6 CPU-s of this test's ~25.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

STEP_EVERY_SCENARIO = """
import sys
import skyswarm
from skyswarm.core.config import load_scenario
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.simulator import Simulator
print(skyswarm.__file__)
ticks = int(sys.argv[1])
missions = set()
for path in sorted(CONFIGS_DIR.glob("*.toml")):
    scenario = load_scenario(path)
    sim = Simulator.from_scenario(scenario)
    try:
        for _ in range(ticks):  # 10 ticks, 25 ms: every kernel of the scenario runs
            sim.step()
    finally:
        sim.close()
    missions.add(scenario.mission.type)
print(len(missions), " ".join(sorted(missions)))
"""
# the cache folder not seeded: the proximity sensor's kernels (uav/sensors/nearest.py; every
# shipped mission senses its neighbours by default), compiled by the installed copy
SEEDLESS = "uav_sensors"
SHIPPED_MISSIONS = 10  # boids, drop_test, fire_tracking, flight_plan, flocking_coverage, hover,
# vasarhelyi, waypoints, obstacle_field, the mavlink scenario's vehicles (configs/*.toml)


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (
        f"{cmd} -> {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    )
    return out.stdout


def _cache_paths(log: str, what: str) -> list[Path]:
    """The files of numba's cache log lines "[cache] <what> <path>"."""
    return [
        Path(line.split(what, 1)[1].strip().strip("'")).resolve()
        for line in log.splitlines()
        if line.startswith("[cache]") and what in line
    ]


def _copy_source(dst: Path) -> Path:
    """The checkout's files (tracked and untracked, not ignored): no build/, results/, caches."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True,
        text=True,
    )
    if listed.returncode != 0:  # not a git checkout: copy all but the usual debris
        debris = shutil.ignore_patterns(".git", "build", "results", "*.egg-info", "__pycache__")
        shutil.copytree(ROOT, dst, ignore=debris)
        return dst
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dst / name)
    return dst


def _site_packages(env_dir: Path) -> Path:
    scheme = {"base": str(env_dir), "platbase": str(env_dir)}
    return Path(sysconfig.get_path("purelib", vars=scheme))


def _recorded(site: Path) -> set[Path]:
    (record,) = site.glob("skyswarm-*.dist-info/RECORD")
    return {(site / line.split(",")[0]).resolve() for line in record.read_text().splitlines()}


def _seed_cache(user_cache: Path) -> None:
    """This checkout's numba cache directory, copied into `user_cache`/skyswarm, all but the
    SEEDLESS folder (absent folders, an unwarmed checkout: compiled in the test instead)."""
    from skyswarm.core.jit import cache_dir

    warm = cache_dir()
    seeded = user_cache / "skyswarm" / warm.name
    seeded.mkdir(parents=True)
    if warm.is_dir():
        for folder in warm.iterdir():
            if folder.is_dir() and folder.name != SEEDLESS:
                shutil.copytree(folder, seeded / folder.name)


def test_install_then_editable_in_one_venv_runs_every_mission(tmp_path):
    src = _copy_source(tmp_path / "src" / "skyswarm")
    env_dir = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(env_dir)],
        check=True,
        timeout=120,
    )
    python = str(env_dir / "bin" / "python")
    # the user's cache directory (platformdirs: $XDG_CACHE_HOME/skyswarm) is a fresh one here,
    # so the test sees where numba writes and leaves nothing in the real ~/.cache
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "NUMBA_CACHE_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")
    _seed_cache(tmp_path / "user-cache")
    work = tmp_path / "elsewhere"
    work.mkdir()
    pip = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    pip += ["--disable-pip-version-check"]
    site = _site_packages(env_dir)

    _run([*pip, str(src)], cwd=work, env=env)
    log_env = {**env, "NUMBA_DEBUG_CACHE": "1"}  # numba's cache log, on stdout
    stepped = _run([python, "-c", STEP_EVERY_SCENARIO, "10"], cwd=work, env=log_env)
    out = [line for line in stepped.splitlines() if not line.startswith("[cache]")]
    assert Path(out[0]).parent == site / "skyswarm"  # the installed copy
    assert out[1].startswith(f"{SHIPPED_MISSIONS} "), out[1]
    written = {p.resolve() for p in (site / "skyswarm").rglob("*") if p.is_file()}
    assert not written - _recorded(site), sorted(written - _recorded(site))[:5]
    # ... because numba's cache went to the user's cache directory (index and code files)
    user = (tmp_path / "user-cache" / "skyswarm").resolve()
    cached = list(user.glob("numba-*/**/*.nbi"))
    assert len(cached) >= 10, cached
    saved = _cache_paths(stepped, "data saved to")
    assert saved and all(p.is_relative_to(user) for p in saved), saved  # SEEDLESS's, and only there
    assert any(p.parent.name == SEEDLESS for p in saved), saved
    loaded = _cache_paths(stepped, "data loaded from")
    assert any(p.parent.name != SEEDLESS for p in loaded), loaded  # the seed, at a new path

    _run([*pip, "-e", str(src)], cwd=work, env=env)
    assert not (site / "skyswarm").exists(), sorted((site / "skyswarm").rglob("*"))[:5]
    out = _run([python, "-c", STEP_EVERY_SCENARIO, "0"], cwd=work, env=env).splitlines()
    assert Path(out[0]) == src / "__init__.py"  # the source tree, not a leftover folder
    assert out[1].startswith(f"{SHIPPED_MISSIONS} "), out[1]
