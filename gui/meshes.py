"""Triangle meshes for drawing: OBJ files from assets/ (via trimesh), a unit box, the ground grid.

Meshes are expanded to flat-shaded triangles (one normal per face): airframes and obstacles are
low-poly, and flat shading keeps their edges readable at a distance.

An OBJ file is parsed by trimesh once; its flat mesh is then kept in skyswarm's user cache
(`mesh_cache()`: a .npz named by a hash of the file's bytes and the scale), so that a process that
draws it again reads two arrays instead of importing trimesh with scipy and networkx: ~0.56 s
of CPU in each of a video's render processes, ~0.25 ms a frame of the reference run's video.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import platformdirs

from skyswarm.core.resources import ASSETS_DIR

MESH_FORMAT = b"flat-mesh-1"  # part of each cached mesh's key: a new layout, new files

ROLE_ASSETS = {"uav": "quadrotor.obj"}  # role -> OBJ in assets/; otherwise assets/<role>.obj
FALLBACK_BOX_M = 0.2  # m, edge of the box drawn for a role with no asset (the drop-test box)


@dataclass(frozen=True)
class Mesh:
    """Flat-shaded triangles: `vertices` and `normals` are (3 F, 3) float32 arrays (m)."""

    vertices: np.ndarray
    normals: np.ndarray

    @property
    def radius(self) -> float:
        """Bounding radius about the origin, m (used for ray picking)."""
        return float(np.max(np.linalg.norm(self.vertices, axis=1))) if len(self.vertices) else 0.0

    @property
    def interleaved(self) -> np.ndarray:
        """(3 F, 6) float32: position then normal per vertex."""
        return np.hstack([self.vertices, self.normals]).astype(np.float32)


def flat_mesh(vertices: np.ndarray, faces: np.ndarray) -> Mesh:
    """Expand indexed (V, 3) vertices and (F, 3) faces into a flat-shaded Mesh."""
    tri = np.asarray(vertices, dtype=np.float64)[np.asarray(faces, dtype=np.int64)]  # (F, 3, 3)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    normals = np.repeat(n[:, None, :], 3, axis=1)
    return Mesh(tri.reshape(-1, 3).astype(np.float32), normals.reshape(-1, 3).astype(np.float32))


def box_mesh(size: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> Mesh:
    """A box of full size `size` (m) centred on the origin."""
    h = np.asarray(size, dtype=np.float64) / 2
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
    faces = np.array(
        [
            [0, 2, 3], [0, 3, 1],  # -x
            [4, 5, 7], [4, 7, 6],  # +x
            [0, 1, 5], [0, 5, 4],  # -y
            [2, 6, 7], [2, 7, 3],  # +y
            [0, 4, 6], [0, 6, 2],  # -z
            [1, 3, 7], [1, 7, 5],  # +z
        ]
    )  # fmt: skip
    return flat_mesh(corners, faces)


def mesh_cache() -> Path:
    """The folder of cached flat meshes: skyswarm's user cache (XDG_CACHE_HOME on Linux)."""
    return Path(platformdirs.user_cache_dir("skyswarm", appauthor=False)) / "meshes"


def load_obj(path: str | Path, scale: float = 1.0) -> Mesh:
    """A flat-shaded Mesh from an OBJ file (any face count; trimesh triangulates), read from
    the cache when this file's bytes were parsed at this scale before."""
    data = Path(path).read_bytes()
    key = hashlib.sha256(MESH_FORMAT + repr(float(scale)).encode() + b"\0" + data).hexdigest()
    cached = mesh_cache() / f"{key[:32]}.npz"
    try:
        with np.load(cached, allow_pickle=False) as z:
            return Mesh(z["vertices"], z["normals"])
    except Exception:  # noqa: BLE001 - absent, unreadable or damaged: parse the file again
        pass
    import trimesh

    parsed = trimesh.load(Path(path), force="mesh", process=False)
    mesh = flat_mesh(np.asarray(parsed.vertices) * scale, np.asarray(parsed.faces))
    _keep(cached, mesh)
    return mesh


def _keep(target: Path, mesh: Mesh) -> None:
    """Write `mesh` to the cache file `target` (whole or not at all: a temporary file renamed
    over it); a cache that cannot be written is no error, the mesh is parsed next time."""
    tmp = target.with_name(f".{target.stem}-{os.getpid()}.npz")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, vertices=mesh.vertices, normals=mesh.normals)
        os.replace(tmp, target)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # no folder to write in at all
            pass


@lru_cache(maxsize=32)
def role_mesh(role: str, assets_dir: Path = ASSETS_DIR) -> Mesh:
    """The mesh drawn for agents of `role`: its OBJ in assets/, else a FALLBACK_BOX_M box."""
    path = assets_dir / ROLE_ASSETS.get(role, f"{role}.obj")
    if path.is_file():
        return load_obj(path)
    return box_mesh((FALLBACK_BOX_M,) * 3)


@lru_cache(maxsize=32)
def role_lod_mesh(role: str, assets_dir: Path = ASSETS_DIR) -> Mesh:
    """Far level of detail: a box of the role mesh's bounding extents (12 triangles)."""
    v = role_mesh(role, assets_dir).vertices
    if len(v) <= 36:
        return role_mesh(role, assets_dir)
    lo, hi = v.min(axis=0), v.max(axis=0)
    box = box_mesh(tuple(np.maximum(hi - lo, 1e-3)))
    return Mesh(box.vertices + ((lo + hi) / 2).astype(np.float32), box.normals)


def grid_lines(
    center: tuple[float, float], half_extent_m: float, step_m: float = 1.0, major_every: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Ground grid segments at z = 0: (minor (M, 2, 3), major (K, 2, 3)) float32, m.

    Lines lie on multiples of `step_m`, so the grid does not move with the scene's centre.
    """
    cx, cy = center
    lo_x, hi_x = cx - half_extent_m, cx + half_extent_m
    lo_y, hi_y = cy - half_extent_m, cy + half_extent_m
    minor: list[list[list[float]]] = []
    major: list[list[list[float]]] = []
    for axis, (lo, hi, olo, ohi) in enumerate(((lo_x, hi_x, lo_y, hi_y), (lo_y, hi_y, lo_x, hi_x))):
        first, last = int(np.ceil(lo / step_m)), int(np.floor(hi / step_m))
        for k in range(first, last + 1):
            v = k * step_m
            seg = [[v, olo, 0.0], [v, ohi, 0.0]] if axis == 0 else [[olo, v, 0.0], [ohi, v, 0.0]]
            (major if k % major_every == 0 else minor).append(seg)
    as_arr = lambda s: np.asarray(s, dtype=np.float32).reshape(-1, 2, 3)  # noqa: E731
    return as_arr(minor), as_arr(major)
