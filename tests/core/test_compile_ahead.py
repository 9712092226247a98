"""Compile before the clock (issue 31): every kernel a run calls is compiled, or loaded from the
cache, during the set-up (core/jit.py `ahead` / `compile_ahead`), the time is reported apart
as `compile_s`, and `skyswarm warmup` compiles every declared kernel ahead of any run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import skyswarm.core.backends as backends
from skyswarm.app.cli import main
from skyswarm.core import jit
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


FAST = 'simulation.physics="fast"'
K_NEAREST = "comms.channels.radio.neighbour_table=8"


@pytest.mark.parametrize(
    ("name", "over", "until_s"),
    [
        ("boids", [FAST, "agents.count=40"], 1.5),  # beacons (pairs, merge), steering, flight
        ("boids", [FAST, "agents.count=40", K_NEAREST], 0.5),  # the bounded table's pass
        ("obstacle_field", [FAST], 1.5),  # boxes: contacts and the body hash
        ("drop_test", [FAST], 1.5),  # ground impacts
        ("boids", ['simulation.physics="bullet"', "agents.count=10"], 0.5),  # kernels on Bullet
        # the threaded variants (from PARALLEL_MIN bodies with more than one thread)
        ("hover", [FAST, "agents.count=2048", "simulation.threads=2"], 0.1),
    ],
    ids=["boids", "boids-k-nearest", "obstacle_field", "drop_test", "boids-bullet", "threaded"],
)
def test_no_kernel_compiles_inside_the_loop(
    name: str, over: list[str], until_s: float, tmp_path: Path
) -> None:
    threaded = "simulation.threads=2" in over
    if threaded and numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba started one thread: no threaded variant runs")
    before_threads = numba.get_num_threads()
    try:
        sc = load_scenario(CONFIGS / f"{name}.toml", over)
        sim = Simulator.from_scenario(sc, results_dir=tmp_path / "out")
        assert backends.threaded(len(sim.agents)) == threaded  # which variants the loop runs
        before = jit.compiled_signatures()
        assert sim.compile_s > 0.0  # the set-up compiled or loaded the declared kernels
        sim.run(until_s=until_s)  # beacons every 0.1 s, steering, contacts: every kernel called
        after = jit.compiled_signatures()
        summary = sim.finish()
    finally:
        numba.set_num_threads(before_threads)
    grown = {k: (before[k], n) for k, n in after.items() if n != before.get(k)}
    assert grown == {}  # a kernel compiled inside the loop: its `ahead` types are wrong
    assert summary["compile_s"] == sim.compile_s
    assert summary["wall_time_s"] > 0.0


def test_compile_ahead_is_free_once_compiled() -> None:
    jit.compile_ahead()
    assert jit.compile_ahead() < 0.05  # every signature already there: a dict look-up each


def test_arg_types_read_the_declared_codes() -> None:
    t = jit.arg_type
    assert t("f8") == numba.float64 and t("?") == numba.boolean and t("u1") == numba.uint8
    assert t("i8[1]") == numba.typeof(np.zeros(3, dtype=np.int64))
    assert t("f8[2]") == numba.typeof(np.zeros((3, 2)))
    assert t("f8[2A]") == numba.typeof(np.zeros((3, 4))[:, :2])  # a strided view
    assert t("(i8[1] f8[2])") == numba.types.Tuple((t("i8[1]"), t("f8[2]")))
    rec = numba.typeof(np.zeros(1, np.dtype([("a", "f8")])))
    assert t(rec) is rec


def test_warmup_compiles_every_declared_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warmup"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"compiled {jit.declared_count()} kernel signatures in ")
    assert str(jit.cache_dir()) in line
    # every module of compiled code was imported and declared its kernels: none left lazy
    declared = {f"{k.py_func.__module__}.{k.__name__}" for k, _ in jit._AHEAD}
    assert {"skyswarm.uav.kernel.fly_parallel", "skyswarm.core.backends.rays.cast_rays"} <= declared
    # in a fresh process (this one has imported whatever earlier tests imported)
    probe = (
        "import sys; from skyswarm.app.warmup import import_compiled_modules as i; i(); "
        "print('\\n'.join(str(getattr(m, '__file__', None)) for m in list(sys.modules.values())))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    imported = {Path(f).resolve() for f in out.stdout.splitlines() if f != "None"}
    assert set(jit.compiled_modules()) <= imported  # app/warmup.py's import list is whole
    counts = jit.compiled_signatures()
    assert all(counts[name] >= 1 for name in declared)


def _compiled(kernel: object) -> set[int]:
    """Ids of the kernels compiling `kernel` compiles and caches: itself and its callees that
    numba does not inline."""
    return {id(k) for k in [kernel, *jit.callees(kernel)] if not jit._inlined(k)}


def test_warmup_groups_and_shares_split_by_whole_kernels() -> None:
    import skyswarm.app.warmup as warmup
    import skyswarm.uav.kernel as flight

    warmup.import_compiled_modules()
    declared = sorted((id(k), str(t)) for k, t in jit._AHEAD)
    groups = jit.groups()
    assert sorted((id(k), str(t)) for g in groups for k, t in g) == declared  # each once
    # no two groups compile one kernel: not a declared one, not a callee (its cache index)
    built = [set().union(*(_compiled(k) for k, _ in g)) for g in groups]
    assert all(not (a & b) for i, a in enumerate(built) for b in built[i + 1 :])
    weights = [sum(jit._weight(k) for k, _ in g) for g in groups]
    assert weights == sorted(weights, reverse=True)  # the heaviest first
    fly = next(g for g in groups if any(k is flight.fly for k, _ in g))
    # fly and fly_ticks share the block path's stages (uav/kernel_block.py), and fly_ticks the
    # fast backend's step (step_bodies): one group
    names = {k.__name__ for k, _ in fly}
    assert {"fly", "fly_parallel", "fly_ticks", "fly_ticks_parallel", "step_bodies"} <= names
    assert any(k is flight._fly_range for k in jit.callees(flight.fly_parallel))
    assert any(k is flight._pid for k in jit.callees(flight.fly))  # through the stages
    for parts in (1, 2, 3):
        got = jit.shares(parts)
        assert len(got) == parts
        assert sorted((id(k), str(t)) for s in got for k, t in s) == declared
        built = [set().union(*(_compiled(k) for k, _ in share)) for share in got]
        assert all(not (a & b) for i, a in enumerate(built) for b in built[i + 1 :])
    for parts in (2, 3):  # each group to the lightest share so far: within the heaviest one
        loads = [sum(jit._weight(k) for k, _ in share) for share in jit.shares(parts)]
        assert max(loads) - min(loads) <= weights[0]


def test_callees_follow_names_and_module_attributes() -> None:
    import skyswarm.core.backends.fast_kernel as fast
    import skyswarm.core.frames as frames

    names = {k.__name__ for k in jit.callees(fast.step_bodies)}
    assert {"_step_range", "_integrate", "_turn", "terrain_height"} <= names
    assert "rotation_rows" in names  # core/frames.py's, imported by name
    assert jit.callees(frames.rotation_rows) == []  # calls no kernel
    assert jit._inlined(frames.rotation_rows) and not jit._inlined(fast.step_bodies)


def test_serial_and_threaded_kernels_share_one_compiled_range() -> None:
    """fly passes its first row as an int64, not a literal 0: a literal would type `lo` as
    Literal[int](0) and compile (35 CPU-s) and cache a second `_fly_range` beside the one
    fly_parallel's chunks call. Typed again here without a cache: one signature, int64."""
    import skyswarm.uav.flight_kernel  # noqa: F401  (declares fly's types)
    import skyswarm.uav.kernel as flight

    types = next(t for k, t in jit._AHEAD if k is flight.fly)
    for kernel in (flight.fly, flight.fly_parallel):
        opts = {k: v for k, v in kernel.targetoptions.items() if k in ("parallel", "error_model")}
        fresh = numba.njit(cache=False, **opts)(kernel.py_func)
        fresh.compile(types)  # types the call: loads or compiles _fly_range for its types
    assert len(flight._fly_range.signatures) == 1
    assert flight._fly_range.signatures[0][0] == numba.int64


def test_fast_step_kernels_share_one_compiled_range() -> None:
    """The same for the fast backend's step_bodies and step_bodies_parallel (_step_range)."""
    import skyswarm.core.backends.fast_kernel as fast

    types = next(t for k, t in jit._AHEAD if k is fast.step_bodies)
    for kernel in (fast.step_bodies, fast.step_bodies_parallel):
        opts = {k: v for k, v in kernel.targetoptions.items() if k == "parallel"}
        numba.njit(cache=False, **opts)(kernel.py_func).compile(types)
    assert [sig[0] for sig in fast._step_range.signatures] == [numba.int64]


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_warmup_refuses_a_bad_job_count(jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warmup", "--jobs", jobs]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"got '{jobs}', expected a whole number >= 1" in err[0]


@pytest.mark.parametrize(("threads", "want"), [(1, 1), (0, None), (64, None)])
def test_simulation_threads_sets_numba_threads(threads: int, want: int | None) -> None:
    before = numba.get_num_threads()
    try:
        sc = load_scenario(CONFIGS / "hover.toml", [f"simulation.threads={threads}"])
        Simulator(sc.simulation)
        top = numba.config.NUMBA_NUM_THREADS  # 0 and more than numba started: all of them
        assert numba.get_num_threads() == (want if want is not None else top)
    finally:
        numba.set_num_threads(before)
