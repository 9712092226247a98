"""The wheel, installed as a user would: a fresh venv, outside the checkout.

Builds the wheel from this checkout (build isolation: only the build-system requires), installs it
(with its runtime dependencies, no extras) into a new virtual environment, and from a directory
that has nothing of the repository runs a shipped scenario by name and a user scenario that names
the built-in airframe. By uv where `python -m uv` works (.ci/run installs it, and its cache holds
every dependency: the build, the venv and the install take ~3 CPU-s, linked from uv's cache), by
pip otherwise (~45 CPU-s: pip's own venv, every dependency unpacked and byte-compiled). Either
way the venv holds the wheel's declared dependencies only: one it does not declare fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

USER_SCENARIO = """\
# A user's own scenario, outside any checkout: two UAVs hover on the built-in airframe.
[simulation]
duration_s = 2.0
seed = 5

[mission]
type = "hover"

[agents]
count = 2
spacing_m = 4.0

[uav]
airframe = "quad_x"
"""


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900):
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (
        f"{cmd} -> {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    )
    return out


def _uv() -> list[str] | None:
    """`python -m uv`, when this interpreter has it."""
    try:
        found = subprocess.run(
            [sys.executable, "-m", "uv", "--version"], capture_output=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [sys.executable, "-m", "uv"] if found.returncode == 0 else None


def _uv_run(uv: list[str], args: list[str], cwd: Path, env: dict[str, str] | None = None):
    """A uv command from its cache alone (no index request: .ci/run filled it), and with the
    index when the cache lacks something (a developer's first run)."""
    out = subprocess.run(
        [*uv, *args, "--offline"], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    return out if out.returncode == 0 else _run([*uv, *args], cwd=cwd, env=env)


def _clean_env(bin_dir: Path) -> dict[str, str]:
    """This environment without the checkout's path, with the venv first on PATH, and bytecode
    written: the throwaway venv's packages are compiled once, by the first test that imports them
    (uv installs no bytecode), not again in every test's process."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(venv bin dir, an empty working directory, environment) with the wheel installed."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    env_dir = base / "venv"
    bin_dir = env_dir / "bin"
    uv = _uv()
    if uv is not None:
        # uv's build isolates like pip's (a fresh env with the build-system requires); its venv
        # has no pip, no setuptools: the packages the install adds, and nothing else
        _uv_run(uv, ["build", "--wheel", "--quiet", "--out-dir", str(dist), str(ROOT)], base)
        wheels = sorted(dist.glob("skyswarm-*.whl"))
        assert len(wheels) == 1, wheels
        _run([*uv, "venv", "--quiet", "--python", sys.executable, str(env_dir)], cwd=base)
        env = _clean_env(bin_dir)
        install = ["pip", "install", "--quiet", "--python", str(bin_dir / "python")]
        _uv_run(uv, [*install, str(wheels[0])], base, env)
    else:
        pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist)]
        _run([*pip, str(ROOT)], cwd=base)
        wheels = sorted(dist.glob("skyswarm-*.whl"))
        assert len(wheels) == 1, wheels
        venv.create(env_dir, with_pip=True)
        env = _clean_env(bin_dir)
        install = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet"]
        _run([*install, "--disable-pip-version-check", str(wheels[0])], cwd=base, env=env)
    work = base / "elsewhere"
    work.mkdir()
    return bin_dir, work, env


def test_wheel_holds_one_namespace_and_the_package_data(installed) -> None:
    bin_dir, work, env = installed
    code = (
        "import importlib.util, skyswarm, pathlib\n"
        "root = pathlib.Path(skyswarm.__file__).parent\n"
        "print([n for n in ('core', 'uav', 'gui', 'missions', 'app')"
        " if importlib.util.find_spec(n) is not None])\n"
        "print(sorted(p.name for p in (root / 'configs').glob('*.toml')))\n"
        "print((root / 'configs/airframes/quad_x.toml').is_file(),"
        " (root / 'assets/quadrotor.obj').is_file(),"
        " (root / 'configs/joysticks/gamepad.toml').is_file())\n"
        "print('site-packages' in str(root))\n"
    )
    out = _run([str(bin_dir / "python"), "-c", code], cwd=work, env=env).stdout.splitlines()
    assert out[0] == "[]"  # `import core` (or uav, gui, ...) fails: only skyswarm is installed
    assert "hover.toml" in out[1] and "flocking_coverage.toml" in out[1]
    assert out[2] == "True True True"
    assert out[3] == "True"  # the installed copy, not the checkout


def test_wheel_installs_nothing_at_top_level_but_skyswarm(installed) -> None:
    bin_dir, _, _ = installed
    (wheel,) = (bin_dir.parents[1] / "dist").glob("skyswarm-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"skyswarm", wheel.name.split("-py")[0] + ".dist-info"}, top
    # tests, benchmarks, docs and build debris stay in the checkout
    assert not [n for n in names if n.split("/")[1] in ("tests", "bench", "docs", "build")]
    entry_points = zipfile.ZipFile(wheel).read(f"{sorted(top)[1]}/entry_points.txt").decode()
    assert "skyswarm = skyswarm.app.cli:main" in entry_points  # the console script


def test_every_shipped_scenario_validates_from_the_wheel(installed) -> None:
    """Validation opens every file a scenario names (airframes, meshes, height grids, plans):
    a data file left out of the wheel's package data fails here."""
    bin_dir, work, env = installed
    code = (
        "from skyswarm import load_scenario\n"
        "from skyswarm.core.resources import shipped\n"
        "names = sorted(shipped())\n"
        "for name in names:\n"
        "    load_scenario(name)\n"
        "print(len(names))\n"
    )
    out = _run([str(bin_dir / "python"), "-c", code], cwd=work, env=env).stdout.split()
    assert out == [str(len(list((ROOT / "configs").glob("*.toml"))))]


def test_shipped_scenario_runs_by_name_from_any_directory(installed) -> None:
    bin_dir, work, env = installed
    _run(
        [str(bin_dir / "skyswarm"), "run", "hover", "--duration", "2", "--quiet", "--out", "r1"],
        cwd=work,
        env=env,
    )
    summary = json.loads((work / "r1" / "summary.json").read_text())
    assert summary["ticks"] == 800  # 2 s at 2.5 ms
    assert summary["alive"] == summary["agents"] == 4  # the shipped hover scenario's four UAVs


def test_user_scenario_names_the_builtin_airframe(installed) -> None:
    bin_dir, work, env = installed
    (work / "mine.toml").write_text(USER_SCENARIO)
    _run(
        [str(bin_dir / "skyswarm"), "run", "mine.toml", "--quiet", "--out", "r2"], cwd=work, env=env
    )
    summary = json.loads((work / "r2" / "summary.json").read_text())
    assert summary["seed"] == 5 and summary["ticks"] == 800
    assert summary["alive"] == 2


def test_init_copies_a_scenario_that_runs_where_it_lands(installed) -> None:
    bin_dir, work, env = installed
    sub = work / "copy"
    sub.mkdir()
    _run([str(bin_dir / "skyswarm"), "init", "waypoints"], cwd=sub, env=env)
    assert (sub / "waypoints.toml").is_file()
    _run([str(bin_dir / "skyswarm"), "validate", "waypoints.toml"], cwd=sub, env=env)
    again = subprocess.run(
        [str(bin_dir / "skyswarm"), "init", "waypoints"],
        cwd=sub,
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 2 and "--force" in again.stderr
