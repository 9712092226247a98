"""OBJ meshes kept in skyswarm's cache (gui/meshes.py): parsed by trimesh once, then read back
without importing it (each video render process saved ~0.56 s of CPU), the same arrays; a
changed file is parsed anew, a damaged or unwritable cache costs only the parse."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
QUAD = ROOT / "assets" / "quadrotor.obj"

LOAD = """
import sys
import numpy as np
from skyswarm.gui.meshes import load_obj
m = load_obj(sys.argv[1], float(sys.argv[2]))
np.savez(sys.argv[3], vertices=m.vertices, normals=m.normals)
print("trimesh" in sys.modules)
"""


def _load(path: Path, scale: float, out: Path, cache_home: Path) -> tuple[bool, np.ndarray]:
    """(trimesh imported, vertices) of load_obj(path, scale) in a fresh process."""
    env = {"XDG_CACHE_HOME": str(cache_home), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [sys.executable, "-c", LOAD, str(path), str(scale), str(out)],
        capture_output=True, text=True, env=env, cwd=ROOT.parent, check=True,
    )  # fmt: skip
    with np.load(out) as z:
        return res.stdout.strip() == "True", z["vertices"].copy()


def test_a_mesh_parsed_once_is_read_back_without_trimesh(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    imported, first = _load(QUAD, 1.0, tmp_path / "a.npz", cache)
    assert imported and len(list((cache / "skyswarm" / "meshes").glob("*.npz"))) == 1
    imported, again = _load(QUAD, 1.0, tmp_path / "b.npz", cache)
    assert not imported and np.array_equal(first, again) and len(first) > 36
    imported, scaled = _load(QUAD, 2.0, tmp_path / "c.npz", cache)  # another scale, another key
    assert imported and np.array_equal(scaled, first * 2)


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    obj = tmp_path / "m.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    _, before = _load(obj, 1.0, tmp_path / "a.npz", cache)
    obj.write_text("v 0 0 0\nv 3 0 0\nv 0 1 0\nf 1 2 3\n")  # one vertex moved
    imported, after = _load(obj, 1.0, tmp_path / "b.npz", cache)
    assert imported and after[1].tolist() == [3.0, 0.0, 0.0] and before[1].tolist() == [1, 0, 0]


def test_a_damaged_or_unwritable_cache_only_costs_the_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyswarm.gui import meshes

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    want = meshes.load_obj(QUAD)
    (kept,) = meshes.mesh_cache().glob("*.npz")
    kept.write_bytes(b"not a zip")  # damaged: parsed again and written whole
    assert np.array_equal(meshes.load_obj(QUAD).vertices, want.vertices)
    with np.load(kept) as z:
        assert np.array_equal(z["normals"], want.normals)
    blocked = tmp_path / "file"
    blocked.write_text("")  # the cache's folder cannot be made under a file
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert np.array_equal(meshes.load_obj(QUAD).vertices, want.vertices)
