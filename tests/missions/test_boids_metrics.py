"""The flock metrics' minimum separation, compiled (missions/_boids_steering.py `closest_pair`),
against the KD-tree query it replaced, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from skyswarm.missions._boids_steering import closest_pair
from skyswarm.missions.boids import flock_metrics


def kd_tree(pos: np.ndarray) -> float:
    """What flock_metrics computed before: each point's nearest other by a KD-tree, the least."""
    d, _ = cKDTree(pos).query(pos, k=2)
    return float(d[:, 1].min())


def clouds(rng: np.random.Generator):
    """Point sets of many shapes: uniform boxes from centimetres to kilometres, flat flocks
    on a jittered grid, lines, clusters, far from the origin, duplicates and two points."""
    for n in (2, 3, 10, 100, 1000):
        for scale in (0.01, 1.0, 50.0, 3000.0):
            yield rng.uniform(-scale, scale, (n, 3))
    g = np.stack(np.meshgrid(np.arange(40) * 5.0, np.arange(40) * 5.0), -1).reshape(-1, 2)
    for jitter in (0.0, 1e-9, 0.3, 2.0):
        yield np.column_stack([g + rng.normal(0, jitter, g.shape), np.full(len(g), 10.0)])
    yield np.column_stack([np.arange(500) * 0.7, np.zeros(500), np.zeros(500)])  # a line
    c = rng.normal(0, 0.05, (300, 3)) + rng.integers(0, 4, (300, 1)) * 1000.0  # far clusters
    yield c
    yield rng.uniform(-1, 1, (200, 3)) + 1e6  # far from the origin
    d = rng.uniform(0, 10, (50, 3))
    yield np.vstack([d, d[:3]])  # duplicates: 0.0
    yield np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    yield np.array([[1.0, 2.0, 3.0], [-4.0, 5.5, 1e-3]])


def test_closest_pair_is_the_kd_trees_number_to_the_bit() -> None:
    rng = np.random.default_rng(31)
    cases = 0
    for pos in clouds(rng):
        got, want = closest_pair(pos), kd_tree(pos)
        assert got is not None
        assert np.float64(got).tobytes() == np.float64(want).tobytes(), (len(pos), got, want)
        cases += 1
    for seed in range(200):  # many small random sets: near ties, every rounding
        pos = np.random.default_rng(seed).normal(0.0, 10.0 ** (seed % 7 - 3), (64, 3))
        assert np.float64(closest_pair(pos)).tobytes() == np.float64(kd_tree(pos)).tobytes()
        cases += 1
    assert cases > 220


@pytest.mark.parametrize(
    "pos",
    [
        np.array([[0.0, 0.0, 0.0], [np.nan, 1.0, 1.0], [2.0, 2.0, 2.0]]),
        np.array([[0.0, 0.0, 0.0], [np.inf, 1.0, 1.0]]),
        np.array([[0.0, 0.0, 0.0], [2e9, 1.0, 1.0], [2e9, 2.0, 1.0]]),
        np.zeros((1, 3)),
    ],
)
def test_closest_pair_leaves_what_a_grid_cannot_hold_to_the_kd_tree(pos: np.ndarray) -> None:
    assert closest_pair(pos) is None


def test_flock_metrics_minimum_separation_unchanged() -> None:
    """flock_metrics' fourth number is the KD-tree's on a 10,000-UAV flat flock (the grid); a
    NaN position still goes to the KD-tree, which refuses it as before."""
    rng = np.random.default_rng(7)
    g = np.stack(np.meshgrid(np.arange(100) * 5.0, np.arange(100) * 5.0), -1).reshape(-1, 2)
    pos = np.column_stack([g + rng.normal(0, 1.0, g.shape), 10.0 + rng.normal(0, 0.1, len(g))])
    vel = rng.normal(0, 1, pos.shape)
    assert flock_metrics(pos, vel)[3] == kd_tree(pos)
    pos[17] = np.nan
    with pytest.raises(ValueError, match="finite"):
        flock_metrics(pos, vel)
