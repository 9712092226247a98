"""core/jit.py: numba's cache outside the package, keyed by the source of every compiled
module (issue 28: "numba's cache never inside the package"; issue 36: shared frame helpers)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from skyswarm.core import jit

# Every module of the package that compiles code today: all must be in the cache key.
COMPILED = {
    "core/jit.py",
    "core/frames.py",
    "core/backends/fast_kernel.py",
    "core/backends/fast_block.py",  # its integration on SIMD lanes, a block at a time
    "core/backends/ray_grid.py",
    "core/backends/rays.py",
    "core/backends/spatial_hash.py",
    "core/backends/terrain.py",
    "core/comms/beacon_kernels.py",
    "core/comms/nearest_table.py",  # the bounded beacon table's K nearest, by cells
    "core/monitor_kernels.py",  # the collision guard and the hover metric (phase 6)
    "gui/ground.py",  # the offscreen pictures' ground, painted under what OpenGL drew
    "gui/yuv.py",  # the video's RGBA -> yuv420p in the render processes
    "uav/kernel.py",
    "uav/kernel_block.py",  # the flight kernel on SIMD lanes, a block of one mode at a time
    "uav/kernel_math.py",  # the flight kernel's inlined scalar helpers
    "uav/flight_kernel.py",  # declares the kernel's argument types (`ahead`)
    "uav/avoidance_kernel.py",
    "uav/avoidance_separation.py",
    "uav/avoidance_steer.py",  # the layer's every-tick steer
    "uav/estimation_kernel.py",  # the estimate-based control path (qrsim sensors)
    "uav/sensors/nearest.py",
    "missions/_boids_steering.py",
    "envs/judge.py",  # the vector env's rewards, ends and observations in one pass
    "envs/actions.py",  # the vector env's action check and body-rate commands
}


def rel(paths: list[Path], root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in paths}


def copy_compiled(dst: Path) -> Path:
    """The compiled modules and one plain module, copied into a package-like tree."""
    for name in [*COMPILED, "core/geo.py"]:
        (dst / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(jit.PACKAGE_ROOT / name, dst / name)
    for folder in {p.parent for p in dst.rglob("*.py")} - {dst}:  # subpackages, as installed
        (folder / "__init__.py").touch()
    return dst


def test_the_key_covers_every_module_of_compiled_code() -> None:
    assert rel(jit.compiled_modules(), jit.PACKAGE_ROOT) == COMPILED


def test_no_module_compiles_around_core_jit() -> None:
    """A module that called numba's own decorators would be missing from the key (and cache
    into the package): only core/jit.py may."""
    offenders = []
    for path in jit.package_modules():
        parts = path.relative_to(jit.PACKAGE_ROOT).parts
        if path.name == "jit.py" and parts[0] == "core":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module == "numba":
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                names = [node.attr] if node.value.id in ("nb", "numba") else []
            if {"njit", "jit", "generated_jit", "vectorize", "guvectorize"} & set(names):
                offenders.append(f"{path.relative_to(jit.PACKAGE_ROOT)}:{node.lineno}")
    assert offenders == []


def test_editing_a_shared_helper_moves_the_cache(tmp_path: Path) -> None:
    root = copy_compiled(tmp_path / "pkg")
    base = str(tmp_path / "cache")
    before = jit.cache_dir(root, base)
    assert before.parent == Path(base) and before.name.startswith("numba-")
    assert jit.cache_dir(root, base) == before  # stable
    (root / "core/geo.py").write_text((root / "core/geo.py").read_text() + "\n# edit\n")
    assert jit.cache_dir(root, base) == before  # no compiled code there
    frames = root / "core/frames.py"
    frames.write_text(frames.read_text().replace("1 - 2 * (yy + zz)", "1 - 2 * (zz + yy)"))
    assert jit.cache_dir(root, base) != before
    # a new module of compiled code joins the key by importing core.jit
    frames.write_text((jit.PACKAGE_ROOT / "core/frames.py").read_text())
    assert jit.cache_dir(root, base) == before
    (root / "uav/extra.py").write_text("from skyswarm.core.jit import njit\n")
    assert jit.cache_dir(root, base) != before


def test_numba_cache_dir_of_the_user_is_the_base(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert jit.cache_dir().parent == tmp_path
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    assert jit.PACKAGE_ROOT not in jit.cache_dir().parents


def test_a_fast_run_writes_its_cache_outside_the_package(tmp_path: Path) -> None:
    """A fresh interpreter steps fast-backend bodies (fast_kernel, spatial_hash and the frames
    compiled from scratch): every cache file lands in NUMBA_CACHE_DIR/numba-<key>, none in the
    package."""
    start = time.time() - 1.0
    code = (
        "from skyswarm.core.backends import BodyShape, make_world\n"
        "w = make_world('fast', 0.0025, 9.81); w.add_ground()\n"
        "w.add_bodies(BodyShape(half_extents=(0.1, 0.1, 0.1)), 1.0, [(0, 0, 1), (0.1, 0, 1.3)])\n"
        "for _ in range(400): w.step_physics()\n"
        "assert w.contacts.pairs(), 'the bodies should rest on the ground'\n"
    )
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=600)
    written = [p for p in tmp_path.rglob("*.nbi")]
    assert written and all(p.is_relative_to(jit.cache_dir(base=str(tmp_path))) for p in written)
    assert {p.name.split(".")[0] for p in written} >= {"fast_kernel", "spatial_hash"}
    in_package = [
        p
        for pattern in ("*.nbi", "*.nbc")
        for p in jit.PACKAGE_ROOT.rglob(pattern)
        if p.stat().st_mtime >= start
    ]
    assert in_package == []
