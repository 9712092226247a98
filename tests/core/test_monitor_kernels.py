"""The compiled monitor passes (core/monitor_kernels.py) against numpy, bit for bit, and the
monitors that call them (the collision guard, the hover metric)."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.monitor_kernels import add_reduce, guard_and_keep, squared_errors

# numpy's pairwise sum changes shape at 8 (eight partial sums), 128 (halves) and beyond
SIZES = [1, 2, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 136, 255, 256, 1000, 8192, 8193, 10001]


@pytest.mark.parametrize("n", SIZES)
def test_add_reduce_is_numpys_sum_to_the_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(5):  # magnitudes over eight decades: the order of the additions shows
        a = rng.random(n) * 10.0 ** rng.uniform(-3, 5, n)
        assert add_reduce(a) == np.add.reduce(a)
    assert add_reduce(np.full(n, -0.0)) == 0.0 and not np.signbit(add_reduce(np.full(n, -0.0)))


@pytest.mark.parametrize("n", [1, 9, 130, 1000])
def test_squared_errors_are_the_hover_metric_s_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    position = rng.normal(size=(n + 5, 3)) * 50.0  # the agents at rows 3 .. n + 2
    start = rng.normal(size=(n, 3)) * 50.0
    sq = np.empty(n)
    total, peak = squared_errors(position, 3, start, sq)
    d = (position[3 : n + 3] - start) ** 2
    want = np.sum(d, axis=1)
    assert np.array_equal(sq, want)
    assert total == np.add.reduce(want) and peak == np.maximum.reduce(want)
    position[3 + n // 2, 1] = np.nan  # a NaN: the maximum is NaN, as numpy's
    total, peak = squared_errors(position, 3, start, sq)
    assert np.isnan(total) and np.isnan(peak)


def test_guard_and_keep_copies_every_row_and_passes_only_certain_rows() -> None:
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(6, 3)) * 10.0
    vel = rng.normal(size=(6, 3))
    prev = np.zeros((6, 3))
    assert guard_and_keep(pos, vel, 1, 5, prev, 99.0**2, 1e6**2)
    assert np.array_equal(prev, vel)
    cases = [  # (row, what): each makes the pass doubtful, so the exact check must run
        (2, ("vel", np.nan)),
        (3, ("pos", np.inf)),
        (1, ("vel", 99.0)),  # exactly at the limit: the exact check decides (it passes)
        (4, ("vel", 99.0 * (1 + 1e-14))),
        (4, ("pos", 1e6)),
    ]
    for row, (what, value) in cases:
        p, v = pos.copy(), vel.copy()
        (p if what == "pos" else v)[row] = [value, 0.0, 0.0]
        assert not guard_and_keep(p, v, 1, 5, prev, 99.0**2, 1e6**2), (row, what, value)
        assert np.array_equal(prev, v, equal_nan=True)  # copied all the same
    v = vel.copy()
    v[0] = v[5] = [np.nan, 1e9, 0.0]  # rows outside lo .. hi are not judged (only copied)
    assert guard_and_keep(pos, v, 1, 5, prev, 99.0**2, 1e6**2)


def test_the_guard_still_kills_a_blown_up_uav_and_spares_the_rest() -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.jit import PACKAGE_ROOT
    from skyswarm.core.simulator import Simulator

    sc = load_scenario(
        PACKAGE_ROOT / "configs" / "hover.toml",
        ["agents.count=4", 'simulation.physics="fast"', "simulation.duration_s=1.0"],
    )
    sim = Simulator.from_scenario(sc)
    for _ in range(3):
        sim.step()
    owners = [getattr(h, "__self__", None) for h in sim.post_tick_listeners]
    monitor = next(o for o in owners if type(o).__name__ == "CollisionMonitor")
    state = sim.world.state
    slot = sim.mission.swarm.slots[2]
    state.linear_velocity[slot] = [150.0, 0.0, 0.0]  # beyond max_speed_mps (99)
    monitor.post_tick(sim.world)
    assert [a.alive for a in sim.mission.swarm.agents] == [True, True, False, True]
    assert len(sim.deaths) == 1 and "numerical" in sim.deaths[0].cause
    assert np.array_equal(monitor._prev_velocity, state.linear_velocity)
    sim.close()
