"""The avoidance layer's scan on numba's threads (uav/avoidance_kernel.py
`scan_tracks_parallel`, `scan_push_parallel`; uav/avoidance_separation.py
`min_separation_parallel`; chosen by
core.backends.threaded) against its serial passes: every array the passes read or write is the
same to the bit after each pass, on one thread and on two, for a dense crowd of 2,500 UAVs
(closing pairs everywhere, the guard, dead agents with NaN state, boxes); each agent's slice of
the closing pairs (`start`) holds what the serial pass writes for that agent alone; and a
whole 2,500-UAV run writes the same results on two threads as on one."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np
import pytest
from conftest import ROOT
from test_avoidance_kernel import command, kd_min, place

import skyswarm.uav.avoidance as avoidance_module
from skyswarm.core.backends import PARALLEL_MIN
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.uav.avoidance_kernel import CHUNK, scan_tracks
from skyswarm.uav.avoidance_separation import min_separation, min_separation_parallel
from skyswarm.uav.sensors.proximity import Proximity, Scan, scan

HOVER = ROOT / "configs" / "hover.toml"
N = 2500  # >= PARALLEL_MIN, 10 work items of CHUNK, the last one short
TWO = min(2, numba.config.NUMBA_NUM_THREADS)
PASSES = ("scan_tracks", "scan_push", "min_separation")
# `scan_tracks`' arguments that are its outputs (the others it only reads)
TRACKS_OUT = (16, 17, 18, 19, 20, 21, 22, 23, 24)


# the layer's state that a scan reads or leaves in place (the rest it writes whole)
CARRIED = ("_own_v", "guarded", "push", "active", "escape", "normal", "cap", "slack")


class Crowd(NamedTuple):
    sim: Simulator
    scans: list[Scan]
    moves: list[np.ndarray]  # (N, 3) positions at each scan, m
    yaw: np.ndarray  # (N,) rad
    vel: np.ndarray  # (N, 3) m/s
    before: dict  # the layer's state before its first scan (`fly_scans` starts from it)


def crowd() -> Crowd:
    """A hover run of N UAVs (not stepped) placed in a dense random crowd: 35 m square, 10 m
    up +-0.5 m, random headings and velocities (every pair closing or not), every steered mode
    (and untouched ones), 40 dead with NaN position, attitude and velocity, two boxes among
    them; three scans 0.1 s apart as they move, and the positions of each."""
    sim = Simulator.from_scenario(load_scenario(HOVER, [f"agents.count={N}"]))
    rng = np.random.default_rng(3)
    pos = np.column_stack([rng.uniform(0, 35, (N, 2)), rng.normal(10, 0.5, N)])
    yaw = rng.uniform(-math.pi, math.pi, N)
    vel = rng.normal(0, 2.0, (N, 3))
    alive = sim.mission.swarm.alive
    dead = rng.choice(N, 40, replace=False)
    alive[dead] = False
    yaw[dead], vel[dead] = np.nan, np.nan
    command(sim, rng)
    boxes = np.array([[10.0, 10.0, 10.0, 2.0, 1.0, 3.0], [25.0, 5.0, 10.0, 1.0, 4.0, 3.0]])
    scans, moves = [], []
    for i in range(3):
        at = pos + 0.1 * i * np.nan_to_num(vel)
        seen = scan(at, np.nan_to_num(yaw), alive, boxes, Proximity.defaults, rng)
        at[dead] = np.nan  # (the scan sees no dead UAV: its rows are empty either way)
        scans.append(seen)
        moves.append(at)
    av = sim.mission.swarm.avoidance
    before = {k: getattr(av, k) for k in ("_p", "_v", "target", "_own_p", "min_ttc_s")}
    before.update({k: getattr(av, k).copy() for k in CARRIED})
    return Crowd(sim, scans, moves, yaw, vel, before)


@pytest.fixture(scope="module")
def dense() -> Iterator[Crowd]:
    made = crowd()
    yield made
    made.sim.close()


def fly_scans(dense: Crowd, parallel: bool, threads: int, monkeypatch) -> list[dict]:
    """The three scans through the layer's `_on_scan` from the same start (no tracks yet),
    with the threaded passes (`parallel`) or the serial ones, on `threads` numba threads: per
    pass called, its arguments as they are after the call (arrays copied) and its return."""
    sim = dense.sim
    av = sim.mission.swarm.avoidance
    calls: list[dict] = []

    def spy(name: str, kernel):
        def call(*args):
            out = kernel(*args)
            args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
            calls.append({"pass": name, "args": args, "returned": out})
            return out

        return call

    for name in PASSES:
        for kernel in (name, name + "_parallel"):
            monkeypatch.setattr(
                avoidance_module, kernel, spy(kernel, getattr(avoidance_module, kernel))
            )
    monkeypatch.setattr(avoidance_module, "threaded", lambda n, at_least=None: parallel)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        for k, v in dense.before.items():
            setattr(av, k, v.copy() if isinstance(v, np.ndarray) else v)
        av._buffers, av._grid, av.min_separation_m = None, None, math.inf
        for sc, at in zip(dense.scans, dense.moves, strict=True):
            place(sim, at, dense.yaw, dense.vel)
            av._on_scan(sc)
    finally:
        numba.set_num_threads(before)
        monkeypatch.undo()
    return calls


def same_bits(a, b) -> bool:
    """Arrays of the same shape, type and bytes (NaN payloads and signed zeros included), or
    equal scalars."""
    if not isinstance(a, np.ndarray):
        return type(a) is type(b) and a == b
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def serial(dense: Crowd) -> list[dict]:
    with pytest.MonkeyPatch.context() as mp:
        return fly_scans(dense, False, 1, mp)


@pytest.mark.parametrize("threads", [1, TWO])
def test_threaded_scan_passes_are_the_serial_ones_to_the_bit(dense, serial, threads) -> None:
    # every output of every pass (the tracks, measurements, residuals, commands, distances,
    # the closing pairs' exponents before and after numpy's exp, push, normal, cap, slack,
    # escape, guarded, active, the own tracks, min_tau, near, the smallest separation) and
    # every input, after each of the three scans
    with pytest.MonkeyPatch.context() as mp:
        threaded = fly_scans(dense, True, threads, mp)
    assert [c["pass"] for c in serial] == list(PASSES) * 3
    assert [c["pass"] for c in threaded] == [p + "_parallel" for p in PASSES] * 3
    for i, (s, t) in enumerate(zip(serial, threaded, strict=True)):
        extra = {"scan_tracks": 2, "scan_push": 1, "min_separation": 0}[s["pass"]]
        assert len(t["args"]) == len(s["args"]) + extra
        pairs = list(zip(s["args"], t["args"], strict=False))
        if s["pass"] == "min_separation":  # its work space `nxt`: only the live UAVs' links
            live = s["args"][1]  # (the dead's are never written: whatever np.empty left)
            pairs[4] = (pairs[4][0][live], pairs[4][1][live])
        for j, (a, b) in enumerate(pairs):
            assert same_bits(a, b), f"call {i} ({s['pass']}): argument {j} differs"
        got, want = t["returned"], s["returned"]
        if s["pass"] == "scan_tracks":
            assert got[0] == want[0] and got[2] == want[2]
            assert np.float64(got[1]).tobytes() == np.float64(want[1]).tobytes()
        elif s["pass"] == "min_separation":
            assert np.float64(got).tobytes() == np.float64(want).tobytes()
    # the crowd exercised what it is for: closing pairs, pushes, the guard, the dead, a grid
    last_tracks, last_push = serial[6], serial[7]
    assert last_tracks["returned"][0] > N and last_tracks["returned"][2]  # pairs, and near
    push, guarded, active = (last_push["args"][k] for k in (16, 21, 22))
    assert (push != 0).any(axis=1).sum() > N // 2 and guarded.sum() > 100
    assert 0 < active.sum() < N and np.isfinite(serial[8]["returned"])


def test_each_agent_s_closing_pairs_are_its_own_slice(dense) -> None:
    # `start` of the threaded pass: agent i's exponents are earg[start[i]:start[i + 1]], the
    # ones the serial pass writes for agent i alone (its rows of every argument)
    with pytest.MonkeyPatch.context() as mp:
        calls = fly_scans(dense, True, TWO, mp)
    for call in calls[3::3]:  # the second and third scans' tracks (the first starts them)
        args = call["args"]  # as after the pass: what it read is as it read it
        earg, start = args[23], args[25]
        assert start[0] == 0 and start[-1] == call["returned"][0]
        assert (np.diff(start) >= 0).all() and np.diff(start).max() > 1
        for i in range(0, N, 7):
            alone = [_row(a, i) if j not in (11, 15) else a for j, a in enumerate(args[:25])]
            for j in TRACKS_OUT:  # the outputs: written by this call, not into `args`
                alone[j] = alone[j].copy()
            alone[23] = np.zeros(args[0].shape[1])  # (one agent's at most K closing pairs)
            m, _, _ = scan_tracks(*alone)
            assert m == start[i + 1] - start[i]
            assert same_bits(alone[23][:m], earg[start[i] : start[i + 1]])


def _row(a, i: int):
    """Agent i's rows of an (N, ...) array (a C-contiguous view), anything else as it is."""
    if isinstance(a, np.ndarray) and a.ndim >= 1 and a.shape[0] == N:
        return a[i : i + 1]
    return a


@pytest.mark.parametrize("seed", range(4))
def test_threaded_min_separation_is_the_serial_one_and_the_kd_trees(seed: int) -> None:
    # 3,000 UAVs (12 work items) in a layer, a cube, far from the origin; a fifth dead (NaN
    # positions), sparse tracks: the same distance on two threads, bit for bit, as the serial
    # grid and the KD-tree; inf with no tracked pair; 0.0 for two at one point
    rng = np.random.default_rng(seed)
    n, k = 3000, 4
    scale = (30.0, 300.0)[seed % 2]
    pos = rng.uniform(-scale, scale, (n, 3)) + (1e5 if seed == 3 else 0.0)
    if seed == 1:
        pos[:, 2] = 10.0
    alive = rng.random(n) < 0.8
    alive[:2] = True
    pos[~alive] = np.nan
    target = np.where(rng.random((n, k)) < 0.5, rng.integers(0, n + 3, (n, k)), -1)
    target[0, 0] = 1
    head, nxt = np.empty(1 << 13, np.int64), np.empty(n, np.int64)
    before = numba.get_num_threads()
    numba.set_num_threads(TWO)
    try:
        got = min_separation_parallel(pos, alive, target, head, nxt)
        assert got == min_separation(pos, alive, target, head, nxt) == kd_min(pos[alive])
        none = np.full((n, k), -1)
        assert min_separation_parallel(pos, alive, none, head, nxt) == math.inf
        pos[1] = pos[0]
        assert min_separation_parallel(pos, alive, target, head, nxt) == 0.0
    finally:
        numba.set_num_threads(before)


def test_a_2500_uav_avoidance_run_is_the_same_on_two_threads_as_on_one(
    tmp_path: Path, monkeypatch
) -> None:
    # a hover crowd 1.6 m apart (inside the 2.5 m separation: every UAV pushed; the guard for
    # the pairs pushed within 1.5 m), 1 s on the fast engine: the threaded scans ran on two
    # threads, and every file written and the layer's summary are those of one thread, to
    # the byte
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba started one thread: no threaded variant runs")
    ran = []
    real = avoidance_module.scan_tracks_parallel
    monkeypatch.setattr(
        avoidance_module, "scan_tracks_parallel", lambda *a: ran.append(1) or real(*a)
    )
    over = [
        f"agents.count={N}", "agents.spacing_m=1.6", 'simulation.physics="fast"',
        "simulation.duration_s=1.0",
    ]  # fmt: skip
    layers, summaries = {}, {}
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            sc = load_scenario(HOVER, [*over, f"simulation.threads={threads}"])
            sim = Simulator.from_scenario(sc, results_dir=tmp_path / f"t{threads}")
            sim.run()
            summaries[threads] = sim.finish()
            layers[threads] = sim.mission.swarm.avoidance.summary()
            sim.close()
            if threads == 1:
                assert ran == []
    finally:
        numba.set_num_threads(before)
    assert len(ran) == 9  # the scans at 0.1 .. 0.9 s, threaded
    assert layers[1] == layers[2]
    assert 0.0 < layers[1]["guard_agent_s"] < layers[1]["engaged_agent_s"]
    timing = ("wall_time_s", "compile_s", "real_time_factor", "threads")
    one, two = summaries[1], summaries[2]
    assert {k: v for k, v in one.items() if k not in timing} == {
        k: v for k, v in two.items() if k not in timing
    }
    files = sorted(p.name for p in (tmp_path / "t1").iterdir())
    assert "trajectory.bin" in files
    for name in files:
        a, b = (tmp_path / f"t{t}" / name for t in (1, 2))
        if name == "summary.json":
            a_, b_ = (json.loads(p.read_text()) for p in (a, b))
            assert {k: v for k, v in a_.items() if k not in timing} == {
                k: v for k, v in b_.items() if k not in timing
            }
        elif name == "config.toml":  # it says which thread count was asked for
            assert a.read_text().replace("threads = 1", "threads = 2") == b.read_text()
        elif name != ".skyswarm-run.json":  # (the run's folder name and process)
            assert a.read_bytes() == b.read_bytes(), name
    assert PARALLEL_MIN <= N and N % CHUNK  # the threaded path, and a short last work item
