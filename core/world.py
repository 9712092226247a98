"""The World seam's names, where the rest of skyswarm has always imported them from.

The seam and the factory live in core/backends/ (`World`, `make_world`, `BodyShape`,
`ContactReport`, `GROUND`); the backends in core/backends/bullet.py and core/backends/fast.py.
"""

from __future__ import annotations

from skyswarm.core.backends import GROUND, BodyShape, ContactReport, World, make_world
from skyswarm.core.backends.bullet import BulletWorld, load_mesh

__all__ = [
    "GROUND",
    "BodyShape",
    "BulletWorld",
    "ContactReport",
    "World",
    "load_mesh",
    "make_world",
]
