"""`skyswarm warmup`: compile every compiled kernel of the package into numba's cache ahead of
the first run (e.g. while building a container image), so that no run, not even the first
after an install, spends its set-up compiling (core/jit.py: `compile_ahead`, the cache
directory outside the package).

    $ skyswarm warmup
    compiled 22 kernel signatures in 128.4 s into /home/me/.cache/skyswarm/numba-3f2a…
"""

from __future__ import annotations

import argparse
from typing import Any

import skyswarm.core.jit as jit


def add_warmup_parser(sub: Any) -> None:
    """Register `skyswarm warmup` on the CLI's subparsers."""
    p = sub.add_parser("warmup", help="compile every kernel into the cache ahead of any run")
    p.set_defaults(func=cmd_warmup)


def import_compiled_modules() -> None:
    """Import every module of compiled code (`jit.compiled_modules`; tests/core/
    test_compile_ahead.py checks the list is whole): each declares its kernels' types."""
    import skyswarm.core.backends.ray_grid
    import skyswarm.core.backends.rays
    import skyswarm.core.backends.spatial_hash
    import skyswarm.core.backends.terrain
    import skyswarm.core.comms.beacon_kernels
    import skyswarm.core.frames
    import skyswarm.missions._boids_steering
    import skyswarm.uav.avoidance_kernel
    import skyswarm.uav.flight_kernel  # (with uav.kernel, which it calls)
    import skyswarm.uav.sensors.nearest  # noqa: F401


def cmd_warmup(args: argparse.Namespace) -> int:
    import_compiled_modules()
    seconds = jit.compile_ahead()
    where = jit.cache_dir()
    print(f"compiled {jit.declared_count()} kernel signatures in {seconds:.1f} s into {where}")
    return 0
