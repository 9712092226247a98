"""The avoidance layer's compiled passes (uav/avoidance_kernel.py, uav/avoidance_steer.py)
against the numpy reference (uav/avoidance_reference.py `_on_scan_numpy`, `_track`,
`_correction`, `_own_track`, `_barrier`): the same state, bit for bit, after each scan, at the
edges (no neighbours, a UAV exactly at the guard distance, dead agents with NaN state, yaws of
+-180 deg, boxes, every steered mode), and the per-tick `steer` (its skip below the smallest
cap, the yaws read only for heading-frame modes; `steer_lent_parallel` on two threads)."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from conftest import ROOT

from skyswarm.core.config import AvoidanceConfig, load_scenario
from skyswarm.core.geo import yaw_of
from skyswarm.core.simulator import Simulator
from skyswarm.uav import control as ctl
from skyswarm.uav.avoidance import _KINDS, PASSES, Avoidance
from skyswarm.uav.avoidance_separation import min_separation
from skyswarm.uav.avoidance_steer import (
    mode_kinds,
    steer,
    steer_lent,
    steer_lent_parallel,
    yaw_terms,
)
from skyswarm.uav.control import SETPOINT
from skyswarm.uav.sensors.proximity import Proximity, Scan, scan

HOVER = ROOT / "configs" / "hover.toml"
STATE = (
    "_p", "_v", "_valid", "target", "push", "normal", "cap", "slack", "escape", "guarded",
    "active", "_own_p", "_own_v", "min_ttc_s",
)  # fmt: skip
MODES = (ctl.POSITION, ctl.VELOCITY, ctl.GROUND_SPEED_AND_ALTITUDE, ctl.MANUAL)


def layer(n: int, overrides: tuple[str, ...] = ()) -> tuple[Simulator, Avoidance]:
    """A hover run of `n` UAVs (not stepped) and its avoidance layer."""
    sim = Simulator.from_scenario(load_scenario(HOVER, [f"agents.count={n}", *overrides]))
    return sim, sim.mission.swarm.avoidance


def snapshot(av: Avoidance) -> dict:
    return {
        k: (v.copy() if isinstance(v, np.ndarray) else v) for k in STATE for v in [getattr(av, k)]
    }


def restore(av: Avoidance, state: dict) -> None:
    for k, v in state.items():
        setattr(av, k, v.copy() if isinstance(v, np.ndarray) else v)


def bits(x: np.ndarray) -> bytes:
    """The bytes of `x`, every NaN made the same NaN (the sign of a NaN, which only a dead
    agent's unused push can have, differs between numpy's and the compiled arithmetic)."""
    if x.dtype.kind == "f":
        x = np.where(np.isnan(x), np.nan, x)
    return x.tobytes()


def same(a: dict, b: dict) -> list[str]:
    """Names whose values differ in any bit (signs of zero included; NaN is NaN)."""
    out = []
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, np.ndarray):
            if x.shape != y.shape or x.dtype != y.dtype or bits(x) != bits(y):
                out.append(k)
        elif not (x == y or (x != x and y != y)):
            out.append(k)
    return out


def both_ways(av: Avoidance, scans: list[Scan], before=None) -> list[dict]:
    """Each scan in turn through the compiled pass and the numpy reference from the same start;
    asserts the two agree in every bit after each; `before(i)` moves the world first. Returns
    the states after each scan."""
    start = snapshot(av)
    compiled, reference = [], []
    for path, out in ((av._on_scan, compiled), (av._on_scan_numpy, reference)):
        restore(av, start)
        av._own_p = None if start["_own_p"] is None else start["_own_p"].copy()
        for i, sc in enumerate(scans):
            if before is not None:
                before(i)
            path(sc)
            out.append(snapshot(av))
    for i, (c, r) in enumerate(zip(compiled, reference, strict=True)):
        assert same(c, r) == [], f"scan {i}: {same(c, r)} differ"
    return compiled


def place(sim: Simulator, pos: np.ndarray, yaw: np.ndarray, vel: np.ndarray) -> None:
    state, rows = sim.world.state, sim.mission.swarm.rows
    state.position[rows] = pos
    state.linear_velocity[rows] = vel
    q = np.zeros((len(yaw), 4))
    q[:, 2], q[:, 3] = np.sin(yaw / 2), np.cos(yaw / 2)
    state.orientation[rows] = q


def command(sim: Simulator, rng: np.random.Generator) -> None:
    """Every agent a mode of MODES (Position, world velocity, heading frame, untouched) and a
    random target or velocity."""
    sp = sim.mission.swarm.setpoints
    n = len(sp.records)
    sp.mode[:] = [ctl.mode_index(MODES[i % len(MODES)]) for i in range(n)]
    sp.position[:] = rng.uniform(-30, 30, (n, 2))
    sp.velocity[:] = rng.uniform(-6, 6, (n, 3))


def real_scans(overrides: tuple[str, ...]) -> dict:
    """60 UAVs on a jittered 3 m grid (closer than the separation and guard distances here and
    there), every steered mode, yaws out to +-180 deg, two of them dead, three scans as they
    move (tracks start, continue and drop out), through both passes (`both_ways`): the state
    after the last."""
    n = 60
    sim, av = layer(n, overrides)
    rng = np.random.default_rng(7)
    grid = np.stack(np.meshgrid(np.arange(10) * 3.0, np.arange(6) * 3.0), -1).reshape(-1, 2)
    pos = np.column_stack([grid, np.full(n, 10.0)]) + rng.normal(0, 0.6, (n, 3))
    yaw = rng.uniform(-math.pi, math.pi, n)
    yaw[:4] = (math.pi, -math.pi, math.nextafter(math.pi, 0), -math.nextafter(math.pi, 0))
    vel = rng.normal(0, 2.0, (n, 3))
    alive = av.swarm.alive
    alive[[5, 17]] = False
    command(sim, rng)
    cfg = Proximity.defaults
    boxes = np.zeros((0, 6))
    scans = []
    for _ in range(3):
        place(sim, pos, yaw, vel)
        scans.append(scan(pos, yaw, alive, boxes, cfg, rng))
        pos = pos + 0.1 * vel
    moves = [pos - 0.1 * vel * (3 - i) for i in range(3)]
    return both_ways(av, scans, lambda i: place(sim, moves[i], yaw, vel))[-1]


@pytest.mark.parametrize("overdrive", [None, 0.0, 2.0])
def test_real_scans_match_the_numpy_reference_bit_for_bit(overdrive: float | None) -> None:
    # the barrier's overdrive as shipped (1), off and doubled
    last = real_scans(() if overdrive is None else (f"avoidance.overdrive={overdrive}",))
    assert last["target"].max() >= 0 and np.isfinite(last["cap"]).any()  # tracks and caps
    assert last["min_ttc_s"] < math.inf and (last["push"] != 0).any()  # the terms acted
    assert not last["active"][[5, 17]].any()  # the dead are left alone
    if overdrive != 0.0:  # it acted: some caps lower than with it off, none higher
        off = real_scans(("avoidance.overdrive=0",))["cap"]
        finite = np.isfinite(off)
        assert (last["cap"][finite] < off[finite]).any()
        assert (last["cap"][finite] <= off[finite]).all()


def hand_scan(rows: list[list[tuple[int, float, float]]], k: int = 4) -> Scan:
    """A scan of len(rows) agents: each a list of (target, range m, bearing rad) seen level."""
    n = len(rows)
    target = np.full((n, k), -1, dtype=np.int64)
    rng, bearing = np.full((n, k), np.nan), np.full((n, k), np.nan)
    for i, row in enumerate(rows):
        for s, (t, r, b) in enumerate(row):
            target[i, s], rng[i, s], bearing[i, s] = t, r, b
    ok = target >= 0
    return Scan(target, ok, rng, bearing, np.where(ok, 0.0, np.nan))


def test_no_neighbours_no_tracks_no_correction() -> None:
    sim, av = layer(3)
    command(sim, np.random.default_rng(1))
    place(sim, np.array([[0.0, 0, 10], [50, 0, 10], [0, 50, 10]]), np.zeros(3), np.zeros((3, 3)))
    s = both_ways(av, [hand_scan([[], [], []])] * 2)[-1]
    assert (s["target"] == -1).all() and (s["push"] == 0).all() and np.isinf(s["cap"]).all()
    assert not s["active"].any() and s["min_ttc_s"] == math.inf


@pytest.mark.parametrize(
    ("gap_m", "guarded"), [(1.5, False), (math.nextafter(1.5, 0), True), (1e-3, True)]
)
def test_exactly_at_the_guard_distance(gap_m: float, guarded: bool) -> None:
    # guard_m = 1.5 m is strict: a UAV exactly 1.5 m away (east of agent 0, facing east) is the
    # barrier's, a hair nearer the guard's; agent 1 sees agent 0 180 deg behind it
    assert AvoidanceConfig().guard_m == 1.5
    sim, av = layer(2)
    sp = av.swarm.setpoints
    sp.mode[:] = ctl.mode_index(ctl.POSITION)
    sp.position[:] = [[10.0, 0.0], [-10.0, 0.0]]  # each flies through the other
    place(sim, np.array([[0.0, 0, 10], [gap_m, 0, 10]]), np.array([0.0, math.pi]), np.zeros((2, 3)))
    sc = hand_scan([[(1, gap_m, 0.0)], [(0, gap_m, 0.0)]])
    s = both_ways(av, [sc, sc])[-1]
    assert s["guarded"].tolist() == [guarded, guarded]
    # barrier_rate 1: draw apart at (2.0 - gap) / 2; a UAV at rest does not, so it is that much
    # over its cap and the overdrive (1) asks for as much again
    draw_apart = 0.5 * (gap_m - 2.0)
    assert s["cap"][0, 0] == pytest.approx(draw_apart - 1.0 * (0.0 - draw_apart))
    assert s["active"].all()


def test_dead_agents_with_nan_state_and_a_box() -> None:
    # agent 2 is dead with a NaN position and attitude (and still in the scan rows, empty);
    # agent 0 also sees a box (target index >= N): barrier only, never the guard
    sim, av = layer(3)
    command(sim, np.random.default_rng(3))
    pos = np.array([[0.0, 0, 10], [3.0, 0, 10], [np.nan, np.nan, np.nan]])
    place(sim, pos, np.array([0.3, -0.2, np.nan]), np.ones((3, 3)))
    av.swarm.alive[2] = False
    sc = hand_scan([[(1, 3.0, 0.1), (3, 1.0, math.pi / 2)], [(0, 3.0, math.pi - 0.1)], []])
    s = both_ways(av, [sc, sc])[-1]
    assert not s["active"][2] and not s["guarded"][0]  # a box 1 m away: no guard
    assert s["cap"][0].min() < 0.0  # ...but the barrier draws the agent away from it


def test_steer_skips_the_passes_below_the_smallest_cap_without_changing_a_bit() -> None:
    # random commands, pushes and half-planes: skipping an agent whose velocity is below all
    # its caps (slack) flies exactly what the passes fly (slack -inf: never skipped)
    rng = np.random.default_rng(11)
    n, k = 2000, 8
    records = np.zeros(n, SETPOINT)
    records["mode"] = [ctl.mode_index(MODES[i % 3]) for i in range(n)]
    records["position"] = rng.uniform(-5, 5, (n, 2))
    records["velocity"] = rng.uniform(-3, 3, (n, 3))
    ang = rng.uniform(-math.pi, math.pi, (n, k))
    normal = np.stack([np.cos(ang), np.sin(ang)], 2)
    cap = np.where(rng.random((n, k)) < 0.3, np.inf, rng.uniform(-0.5, 6.0, (n, k)))
    push = rng.normal(0, 0.5, (n, 2)) * (rng.random((n, 1)) < 0.5)
    guarded = rng.random(n) < 0.05
    escape = rng.normal(0, 1.5, (n, 2))
    source = rng.uniform(-5, 5, (n + 7, 3))
    rows = rng.permutation(n + 7)[:n]
    yaw = rng.uniform(-math.pi, math.pi, n)
    outs = []
    for slack in (cap.min(axis=1), np.full(n, -np.inf)):
        pos, v, changed = np.zeros((n, 3)), np.zeros((n, 2)), np.zeros(n, dtype=bool)
        out = np.zeros(n, SETPOINT)
        got = steer(
            np.ones(n, dtype=bool), mode_kinds(), records, source, rows, yaw, True, push, escape,
            guarded, normal, cap, slack, 1.0, 8.0, PASSES, pos, v, changed, out,
        )  # fmt: skip
        outs.append((got, v[changed].tobytes(), changed.tobytes(), out.tobytes()))
        assert (pos[changed] == source[rows][changed]).all()
    assert outs[0] == outs[1]
    assert 0 < outs[0][0][0] < n  # some changed, some flew their command


def test_steer_asks_for_the_yaws_only_for_heading_frame_modes() -> None:
    n = 4
    records = np.zeros(n, SETPOINT)
    records["mode"] = ctl.mode_index(ctl.POSITION)
    args = dict(
        escape=np.zeros((n, 2)), guarded=np.zeros(n, dtype=bool), normal=np.zeros((n, 1, 2)),
        cap=np.full((n, 1), np.inf), slack=np.full(n, np.inf),
    )  # fmt: skip
    push = np.full((n, 2), 0.5)

    def run(have_yaw: bool, yaw: np.ndarray) -> tuple:
        v, changed, out = np.zeros((n, 2)), np.zeros(n, dtype=bool), np.zeros(n, SETPOINT)
        got = steer(
            np.ones(n, dtype=bool), _KINDS, records, np.zeros((n, 3)), np.arange(n), yaw,
            have_yaw, push, args["escape"], args["guarded"], args["normal"], args["cap"],
            args["slack"], 1.0, 8.0, PASSES, np.zeros((n, 3)), v, changed, out,
        )  # fmt: skip
        return got, out

    assert run(False, np.zeros(n))[0] == (n, 0)  # Position: no yaw needed
    records["mode"][2] = ctl.mode_index(ctl.GROUND_SPEED_AND_ALTITUDE)
    assert run(False, np.zeros(n))[0] == (-1, 0)  # a heading-frame mode: call with yaws
    got, out = run(True, np.full(n, math.pi / 2))
    assert got == (n, 0)
    # the push (0.5, 0.5) world in the frame of a UAV heading north: forward 0.5, right 0.5
    assert out["velocity"][2, :2] == pytest.approx([0.5, -0.5])


def test_a_heading_frame_mission_reads_the_yaws_from_then_on() -> None:
    # through `setpoints`: an agent in a heading-frame mode switches the yaws on, and the
    # copy it flies has the velocity in that agent's frame
    sim, av = layer(2)
    sp = av.swarm.setpoints
    sp.mode[:] = ctl.mode_index(ctl.GROUND_SPEED_AND_ALTITUDE)
    sp.velocity[:] = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    place(sim, np.array([[0.0, 0, 10], [2.2, 0, 10]]), np.array([0.0, math.pi]), np.zeros((2, 3)))
    av.proximity.scan = hand_scan([[(1, 2.2, 0.0)], [(0, 2.2, 0.0)]])
    assert not av._need_yaw
    flown = av.setpoints()
    assert av._need_yaw and flown is not av.swarm.setpoints
    # both fly towards each other 2.2 m apart, inside the safe distance: the barrier stops
    # them and draws them apart (backwards in each one's own frame)
    assert (flown.records["velocity"][:, 0] < 0.0).all()
    assert (sp.velocity[:, 0] == 1.0).all()  # the mission's own setpoints are untouched


@pytest.mark.parametrize("mode", [ctl.POSITION, ctl.GROUND_SPEED_AND_ALTITUDE, ctl.VELOCITY])
def test_lend_flies_the_copy_s_setpoints_in_place_and_gives_the_mission_s_back(mode) -> None:
    # three UAVs, two closing inside the safe distance (corrected) and one far away (not):
    # `lend` writes into the swarm's records what `setpoints` writes into its copy, the third
    # untouched; `give_back` restores every byte; with nothing to correct, nothing is lent
    sim, av = layer(3)
    sp = av.swarm.setpoints
    sp.mode[:] = ctl.mode_index(mode)
    sp.velocity[:] = [[1.0, 0.2, 0.0], [-1.0, 0.1, 0.0], [0.3, 0.0, 0.0]]
    sp.position[:] = [[5.0, 0.0], [-3.0, 0.0], [80.0, 1.0]]
    pos = np.array([[0.0, 0, 10], [2.2, 0, 10], [60.0, 0, 10]])
    place(sim, pos, np.array([0.3, math.pi, 0.0]), np.zeros((3, 3)))
    av.proximity.scan = hand_scan([[(1, 2.2, 0.0)], [(0, 2.2, 0.0)], []])
    mission = sp.records.copy()
    copy = av.setpoints().records.copy()
    assert bits(copy) != bits(mission)
    lent = av.lend()
    assert lent is av.swarm.setpoints and av._lent
    assert bits(sp.records) == bits(copy)  # the same setpoints flown, to the bit
    av.give_back()
    assert bits(sp.records) == bits(mission) and not av._lent
    av.give_back()  # twice: nothing more
    assert bits(sp.records) == bits(mission)
    av.proximity.scan = hand_scan([[], [], []])  # nobody near: the records as they are
    assert av.lend() is av.swarm.setpoints and not av._lent
    assert bits(sp.records) == bits(mission)


def kd_min(pos: np.ndarray) -> float:
    """The reference: each UAV's nearest by a KD-tree, the smallest norm of those pairs."""
    from scipy.spatial import cKDTree

    _, j = cKDTree(pos).query(pos, k=2)
    return float(np.linalg.norm(pos[j[:, 1]] - pos, axis=1).min())


@pytest.mark.parametrize("seed", range(6))
def test_min_separation_on_the_grid_is_the_kd_trees(seed: int) -> None:
    # random swarms (a flat layer, a cube, far from the origin, a tight cluster) with dead
    # UAVs and sparse tracks: the grid sized by the nearest tracked pair finds the true nearest
    # pair, bit for bit; with no tracked pair of live UAVs it says inf (the KD-tree's turn)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    scale = (1.0, 30.0, 300.0)[seed % 3]
    pos = rng.uniform(-scale, scale, (n, 3)) + (1e5 if seed == 4 else 0.0)
    if seed % 2:
        pos[:, 2] = 10.0  # a layer
    alive = rng.random(n) < 0.8
    alive[:2] = True
    k = 4
    target = np.where(rng.random((n, k)) < 0.5, rng.integers(0, n + 3, (n, k)), -1)
    target[0, 0] = 1  # at least one live pair tracked
    head, nxt = np.empty(1 << 10, np.int64), np.empty(n, np.int64)
    got = min_separation(pos, alive, target, head, nxt)
    assert got == kd_min(pos[alive])
    assert min_separation(pos, alive, np.full((n, k), -1), head, nxt) == math.inf
    pos[1] = pos[0]  # two at the same point
    assert min_separation(pos, alive, target, head, nxt) == 0.0


def test_the_measured_separation_is_the_same_with_and_without_tracks() -> None:
    sim, av = layer(30)
    rng = np.random.default_rng(5)
    pos = np.column_stack([rng.uniform(0, 20, (30, 2)), np.full(30, 10.0)])
    place(sim, pos, np.zeros(30), np.zeros((30, 3)))
    av.target = np.full((30, 4), -1)
    av._measure()  # no tracks: the KD-tree
    kd = av.min_separation_m
    av.min_separation_m, av.target[:, 0] = math.inf, np.arange(1, 31) % 30
    av._measure()  # the grid
    assert av.min_separation_m == kd == kd_min(pos)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 17, 1000, 10_001])
def test_yaw_terms_then_numpys_arctan2_is_yaw_of_to_the_bit(n: int) -> None:
    """The per-tick yaws of `Avoidance._yaws` (the arithmetic compiled, no gather, numpy's
    arctan2 kept) equal yaw_of(orientation[rows]), every bit, for random and level attitudes,
    the yaw seam at +-pi and signed zeros, rows in any order, into an offset output too."""
    rng = np.random.default_rng(n)
    q = rng.normal(size=(n + 9, 4))
    q /= np.linalg.norm(q, axis=1)[:, None]
    q[: (n + 9) // 3, :2] = 0.0  # level: yaw about z only
    q[1::5] = [0.0, 0.0, 1.0, 0.0]  # yaw pi
    q[2::7] = [-0.0, 0.0, -0.0, 1.0]  # zero yaw, signed zeros
    q[3::11, 2] *= -1e-300  # near the seam from either side
    rows = rng.permutation(n + 9)[:n].astype(np.int64)
    want = yaw_of(q[rows])
    num, den = np.empty(n + 1)[1:], np.empty(n + 1)[1:]  # (not 16-byte aligned)
    yaw_terms(q, rows, num, den)
    assert np.arctan2(num, den).tobytes() == want.tobytes()


@pytest.mark.parametrize("heading_without_yaw", [False, True])
def test_threaded_lend_is_the_serial_lend_to_the_bit(heading_without_yaw: bool) -> None:
    # 2,500 agents over every steered mode (and untouched ones), some guarded, barriers and
    # pushes of every size, on two threads (10 chunks): `steer_lent_parallel` writes the
    # records, the kept values, the velocities and the changed flags `steer_lent` writes, and
    # returns its counts; a heading-frame agent without the yaws gives (-1, 0) on both
    rng = np.random.default_rng(7)
    n, k = 2500, 3
    modes = [ctl.POSITION, ctl.GROUND_SPEED_AND_ALTITUDE, ctl.VELOCITY, ctl.ATTITUDE]
    records = np.zeros(n, SETPOINT)
    records["mode"] = [ctl.mode_index(modes[i]) for i in rng.integers(0, 4, n)]
    records["position"] = rng.uniform(-20, 20, (n, 2))
    records["velocity"] = rng.normal(0, 3, (n, 3))
    source = rng.uniform(-20, 20, (n, 3))
    active = rng.random(n) < 0.9
    push = rng.normal(0, 1.0, (n, 2)) * (rng.random((n, 1)) < 0.6)
    ang = rng.uniform(-np.pi, np.pi, (n, k))
    normal = np.ascontiguousarray(np.stack([np.cos(ang), np.sin(ang)], 2))
    cap = rng.uniform(-0.5, 4.0, (n, k))
    slack = cap.min(axis=1)
    guarded = rng.random(n) < 0.05
    escape = rng.normal(0, 1.5, (n, 2))
    yaw = rng.uniform(-np.pi, np.pi, n)

    def lend(kernel) -> tuple:
        rec = records.copy()
        pos, v, changed, saved = (
            np.zeros((n, 3)),
            np.zeros((n, 2)),
            np.zeros(n, bool),
            np.zeros((n, 2)),
        )
        got = kernel(
            active, _KINDS, rec, source, np.arange(n), yaw, not heading_without_yaw, push,
            escape, guarded, normal, cap, slack, 1.0, 8.0, PASSES, pos, v, changed, saved,
        )  # fmt: skip
        return got, rec, v, changed, saved

    serial = lend(steer_lent)
    before = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        threaded = lend(steer_lent_parallel)
    finally:
        numba.set_num_threads(before)
    assert threaded[0] == serial[0]
    if heading_without_yaw:
        assert serial[0] == (-1, 0)
        return
    assert 0 < serial[0][0] < n and serial[0][1] > 0
    assert bits(threaded[1]) == bits(serial[1])
    for a, b in zip(threaded[2:], serial[2:], strict=True):
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
