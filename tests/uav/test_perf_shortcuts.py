"""The per-tick shortcuts of issue 28/31 give what the long way gives, to the bit, at their edges:
the proximity search on numba's threads and its distances (uav/sensors/nearest.py), the
estimate of a truth-only sensor suite on the ticks a sensor samples (uav/estimation.py), the
sensor schedule's cached next due tick, the landing gear's lowest-agent test
(uav/flight_kernel.py `lowest`) and the collision guard's fast path (core/collisions.py)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.frames import euler_from_matrix, quat_to_matrix
from skyswarm.core.simulator import Simulator
from skyswarm.uav.flight_kernel import lowest
from skyswarm.uav.sensors.nearest import nearest_targets, nearest_targets_parallel
from skyswarm.uav.sensors.proximity import Proximity, scan
from skyswarm.uav.swarm import Swarm

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def _crowd(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """n UAVs on a 4 m grid jittered by 0.8 m (many within 10 m of each other, exact ties
    impossible), 5 % dead, random headings, and three boxes among them."""
    side = math.ceil(math.sqrt(n))
    grid = np.stack(np.meshgrid(np.arange(side), np.arange(side)), -1).reshape(-1, 2)[:n] * 4.0
    rng = np.random.default_rng(seed)
    pos = np.column_stack([grid, np.full(n, 10.0)]) + rng.normal(0.0, 0.8, (n, 3))
    yaw = rng.uniform(-np.pi, np.pi, n)
    alive = rng.uniform(size=n) > 0.05
    centres = np.column_stack([rng.uniform(0, 4 * side, (3, 2)), np.full(3, 10.0)])
    boxes = np.column_stack([centres, rng.uniform(0.5, 3.0, (3, 3))])
    return pos, yaw, alive, boxes


@pytest.mark.parametrize("half_fov", [math.pi, math.radians(60.0)])
def test_the_threaded_search_is_the_serial_one_and_its_distances_are_numpys_norm(half_fov):
    pos, yaw, alive, boxes = _crowd(3000, 1)
    out = []
    before = numba.get_num_threads()
    try:
        for kernel, threads in ((nearest_targets, 1), (nearest_targets_parallel, 2)):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            bufs = (np.empty((3000, 16), np.int64), np.empty((3000, 16, 3)), np.empty((3000, 16)))
            kernel(pos, yaw, alive, boxes, 10.0, half_fov, *bufs)
            out.append(bufs)
    finally:
        numba.set_num_threads(before)
    for a, b in zip(*out, strict=True):
        assert a.tobytes() == b.tobytes()
    target, rel, dist = out[0]
    ok = target >= 0
    assert ok.sum() > 10 * 3000 * (half_fov / math.pi)  # a crowded search: most slots filled
    assert (target[~alive] == -1).all() and (target >= 3000).any()  # the dead see nothing
    # the scan's ranges come from these distances: numpy's norm of the offsets to the bit
    assert np.linalg.norm(rel, axis=2)[ok].tobytes() == dist[ok].tobytes()
    assert np.isinf(dist[~ok]).all()


def test_a_scan_masks_the_empty_slots_whatever_their_distance():
    pos, yaw, alive, boxes = _crowd(40, 2)
    s = scan(pos, yaw, alive, boxes, Proximity.defaults, np.random.default_rng(3))
    empty = ~s.detected
    assert empty.any() and s.detected.any()
    for a in (s.range_m, s.bearing_rad, s.elevation_rad):
        assert np.isnan(a[empty]).all() and np.isfinite(a[s.detected]).all()
    uav = s.detected & (s.target < len(pos))  # UAV targets (boxes: index n + b)
    ref = np.linalg.norm(pos[s.target[uav]] - pos[np.nonzero(uav)[0]], axis=1)
    assert np.abs(s.range_m[uav] - ref).max() < 0.5  # range noise sigma 0.05 m


def test_lowest_is_numpys_min_of_the_rows_nan_included():
    pos = np.array([[0.0, 0.0, 3.0], [1.0, 1.0, -0.5], [2.0, 2.0, 7.0], [0.0, 0.0, -9.0]])
    rows = np.array([0, 1, 2], dtype=np.int64)
    assert lowest(pos, rows) == pos[rows, 2].min() == -0.5
    pos[2, 2] = np.nan
    assert math.isnan(lowest(pos, rows)) and math.isnan(pos[rows, 2].min())
    assert lowest(pos, np.zeros(0, dtype=np.int64)) == math.inf


def _split(count: int = 6, *extra: str) -> Simulator:
    sc = load_scenario(
        CONFIGS / "flocking_split.toml",
        [f"agents.count={count}", "simulation.duration_s=3.0", *extra],
    )
    return Simulator.from_scenario(sc)


def test_a_truth_only_suite_on_a_sampling_tick_holds_the_truth_to_the_bit():
    """Proximity only: the estimate is the truth after every tick, the ticks it samples on
    included (those skip the filter's arithmetic, which gave the truth back)."""
    sim = _split()
    try:
        swarm = next(c for c in sim.controllers if isinstance(c, Swarm))
        suite = swarm.sensors
        assert suite is not None and suite._truth_only and list(suite.sensors) == ["proximity"]
        every = suite.sensors["proximity"].every
        seen = 0
        while sim.world.tick < 3 * every + 2:
            sim.step()
            tick = sim.world.tick - 1  # the tick the post-tick listeners ran at
            state, rows = sim.world.state, swarm.rows
            rot = quat_to_matrix(state.orientation[rows])
            assert suite.position.tobytes() == state.position[rows].tobytes()
            assert suite.velocity.tobytes() == state.linear_velocity[rows].tobytes()
            assert suite.euler.tobytes() == euler_from_matrix(rot).tobytes()
            rate = np.einsum("nji,nj->ni", rot, state.angular_velocity[rows])
            assert suite.body_rate.tobytes() == rate.tobytes()
            seen += tick % every == 0
        assert seen == 4 and suite.samples == sim.world.tick and suite.rms_error_m() == 0.0
    finally:
        sim.close()


def test_the_cached_due_tick_is_the_schedule_forwards_and_after_a_jump_back():
    sim = _split(4, "uav.sensors.record_hz=8.0")  # record every 50 ticks, scans every 20
    try:
        suite = next(c for c in sim.controllers if isinstance(c, Swarm)).sensors
        periods = [s.every for s in suite.sensors.values()] + [suite._record_every]
        assert sorted(periods) == [20, 50]
        ticks = [*range(0, 230), *range(95, 130), 1000, 999, 0]
        for tick in ticks:
            assert suite._due(tick) == any(tick % p == 0 for p in periods), tick
    finally:
        sim.close()


def test_the_guard_fast_path_passes_only_what_the_exact_test_passes():
    sim = _split(3)
    try:
        monitor = sim.collision_monitor
        speed = monitor.config.max_speed_mps
        vel = np.zeros((3, 3))
        pos = np.zeros((3, 3))
        assert monitor._all_within_limits(pos, vel)
        vel[1] = [speed, 0.0, 0.0]  # at the limit: within
        assert monitor._all_within_limits(pos, vel)
        vel[1, 0] = math.nextafter(speed, math.inf)
        assert not monitor._all_within_limits(pos, vel)
        vel[1, 0] = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning from a body blown far away
            pos[2] = [1e200, 0.0, 0.0]
            assert not monitor._all_within_limits(pos, vel)
            pos[2] = [np.nan, 0.0, 0.0]
            assert not monitor._all_within_limits(pos, vel)
    finally:
        sim.close()


def test_the_threaded_scan_of_a_large_swarm_is_the_serial_scan():
    pos, yaw, alive, boxes = _crowd(2500, 4)  # above core.backends.PARALLEL_MIN (2048)
    cfg = dataclasses.replace(Proximity.defaults, fov_deg=270.0)
    before = numba.get_num_threads()
    scans = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            scans.append(scan(pos, yaw, alive, boxes, cfg, np.random.default_rng(5)))
    finally:
        numba.set_num_threads(before)
    for f in dataclasses.fields(scans[0]):
        assert getattr(scans[0], f.name).tobytes() == getattr(scans[1], f.name).tobytes()
