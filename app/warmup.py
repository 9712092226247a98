"""`skyswarm warmup`: compile every compiled kernel of the package into numba's cache ahead of
the first run (e.g. while building a container image), so that no run, not even the first
after an install, spends its set-up compiling (core/jit.py: `compile_ahead`, the cache
directory outside the package).

    $ skyswarm warmup
    compiled 22 kernel signatures in 128.4 s into /home/me/.cache/skyswarm/numba-3f2a…

numba compiles on one core: `--jobs N` (default: every core) runs N processes, which take the
kernels' groups (`jit.groups()`: every signature of a kernel, with the kernels that share a
compiled callee, so no two processes write one kernel's cache index) from one queue, the
heaviest first, each the next group as it finishes one.
"""

from __future__ import annotations

import argparse
import importlib.util
from typing import Any

# skyswarm.core.jit (numba) is imported by the command, not here: the CLI's parser imports
# this module, and `skyswarm --help` or a bad input's one line should not wait for numba


def add_warmup_parser(sub: Any) -> None:
    """Register `skyswarm warmup` on the CLI's subparsers."""
    p = sub.add_parser("warmup", help="compile every kernel into the cache ahead of any run")
    p.add_argument(
        "--jobs",
        type=_jobs,
        default=None,
        help="processes compiling at once (default: one per core)",
    )
    p.set_defaults(func=cmd_warmup)


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a whole number >= 1")
    return value


def import_compiled_modules() -> None:
    """Import every module of compiled code (`jit.compiled_modules`; tests/core/
    test_compile_ahead.py checks the list is whole): each declares its kernels' types."""
    import skyswarm.core.backends.ray_grid
    import skyswarm.core.backends.rays
    import skyswarm.core.backends.spatial_hash
    import skyswarm.core.backends.terrain
    import skyswarm.core.comms.beacon_kernels
    import skyswarm.core.comms.nearest_table
    import skyswarm.core.frames
    import skyswarm.core.monitor_kernels
    import skyswarm.gui.ground  # the offscreen pictures' ground (render processes)
    import skyswarm.gui.yuv  # the video's colour conversion (render processes)
    import skyswarm.missions._boids_steering
    import skyswarm.uav.avoidance_kernel  # (with uav.avoidance_steer, which it calls)
    import skyswarm.uav.avoidance_separation
    import skyswarm.uav.estimation_kernel
    import skyswarm.uav.flight_kernel  # (with uav.kernel and uav.kernel_block, which it calls)
    import skyswarm.uav.sensors.nearest  # noqa: F401

    if importlib.util.find_spec("gymnasium") is not None:  # the `envs` extra: the RL kernels
        import skyswarm.envs.judge  # noqa: F401


def compile_group(index: int) -> int:
    """Compile group `index` of `jit.groups()` (every signature of its kernels); returns the
    number of signatures compiled. Runs in a worker process of `cmd_warmup`."""
    import skyswarm.core.jit as jit
    from skyswarm.core.kernel_loads import cached_loads_without_refresh

    import_compiled_modules()
    with cached_loads_without_refresh():  # a kernel cached already loads; a missing one compiles
        return jit.compile_group(index)


def _cache_meshes() -> None:
    """The shipped OBJ meshes parsed into skyswarm's mesh cache (gui/meshes.py), where the
    `gui` extra is installed: render processes then read them without importing trimesh."""
    if importlib.util.find_spec("moderngl") is None:
        return
    from skyswarm.core.resources import ASSETS_DIR
    from skyswarm.gui.meshes import load_obj

    for path in sorted(ASSETS_DIR.glob("*.obj")):
        load_obj(path)


def cmd_warmup(args: argparse.Namespace) -> int:
    import os
    import time

    import skyswarm.core.jit as jit
    from skyswarm.core.kernel_loads import cached_loads_without_refresh

    import_compiled_modules()
    jobs = args.jobs if args.jobs is not None else os.cpu_count() or 1
    count = len(jit.groups())
    jobs = max(1, min(jobs, count))
    start = time.perf_counter()
    if jobs == 1:
        jit.compile_ahead()
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            # one group per work item, the heaviest first: a process takes the next as it ends
            for _ in pool.imap_unordered(compile_group, range(count), chunksize=1):
                pass
        with cached_loads_without_refresh():  # loads what the workers cached (no compiling)
            jit.compile_ahead()
    _cache_meshes()
    seconds = time.perf_counter() - start
    where = jit.cache_dir()
    print(
        f"compiled {jit.declared_count()} kernel signatures in {seconds:.1f} s into {where}"
        + (f" ({jobs} processes)" if jobs > 1 else "")
    )
    return 0
