"""core/kernel_loads.py: the set-up loads cached kernels without numba's full context refresh
(issue 28: a fixed ~0.6 CPU s of every process that builds a Simulator), and nothing else
changes: the same results, kernels compiled as usual when the cache lacks them, numba restored
after the block."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
from numba.core import caching as numba_caching

from skyswarm.core.kernel_loads import _ORIGINAL, cached_loads_without_refresh

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

# A fresh process: build and fly the reference flock for 0.25 s; print what numba imported and the
# final state. With "refresh", numba's full refresh runs first (what every load did before).
SCRIPT = """
import json, sys
import numpy as np
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
if sys.argv[2] == "refresh":
    from numba.core.registry import cpu_target
    cpu_target.target_context.refresh()
sc = load_scenario(sys.argv[1], ["simulation.duration_s=0.25"])
sim = Simulator.from_scenario(sc)
refreshed = "numba.np.linalg" in sys.modules
sim.run()
state = sim.world.state
rows = slice(0, state.size)
print(json.dumps({
    "refreshed": refreshed,
    "refreshed_in_loop": not refreshed and "numba.np.linalg" in sys.modules,
    "compile_s": sim.compile_s,
    "bits": np.concatenate([state.position[rows], state.linear_velocity[rows]]).tobytes().hex(),
}))
sim.close()
"""


def _fly(mode: str) -> dict:
    cfg = str(CONFIGS / "flocking_coverage.toml")
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, cfg, mode],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_run_loads_its_kernels_without_the_refresh_and_flies_the_same() -> None:
    light, full = _fly("light"), _fly("refresh")
    assert not light["refreshed"]  # numba's implementation library was never imported
    assert not light["refreshed_in_loop"]  # nor paid later, inside the clock
    assert full["refreshed"]
    assert light["compile_s"] > 0.0  # the kernels were still loaded before the clock
    assert light["bits"] == full["bits"]  # the same machine code: the same flight, bit for bit


def test_a_kernel_missing_from_the_cache_compiles_inside_the_block() -> None:
    @numba.njit(cache=False)
    def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # needs numba's linalg registry
        return np.linalg.solve(a, b)

    with cached_loads_without_refresh():
        assert numba_caching.Cache.load_overload is not _ORIGINAL
        got = solve(np.eye(2) * 2.0, np.ones(2))
    assert numba_caching.Cache.load_overload is _ORIGINAL  # numba as it was after the block
    assert got.tolist() == [0.5, 0.5]


def test_nested_blocks_restore_numba_once() -> None:
    with cached_loads_without_refresh():
        with cached_loads_without_refresh():
            pass
        assert numba_caching.Cache.load_overload is not _ORIGINAL
    assert numba_caching.Cache.load_overload is _ORIGINAL
