"""OBJ meshes read into arrays, for every backend and for scenario checks.

trimesh only, no physics engine: the fast backend (a mesh body's bounding box, a terrain mesh
sampled to a height grid), Bullet (mesh scenery) and core/checks.py (a referenced mesh parses)
read meshes through this one function, so reading one never imports pybullet.

Usage:

    vertices, faces = load_mesh("hill.obj", scale=2.0)   # (V, 3) m, (F, 3) vertex indices
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def load_mesh(path: str | Path, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float vertices in m (the file's units times `scale`) and (F, 3) int triangle
    indices of an OBJ file."""
    import trimesh  # deferred: only scenes with meshes pay for the import

    mesh = trimesh.load(Path(path), force="mesh", process=False)
    return np.asarray(mesh.vertices, dtype=float) * scale, np.asarray(mesh.faces, dtype=np.int64)
