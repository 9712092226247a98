"""The flight kernel's one-sided clamps (uav/kernel_math.py `max_of`, `min_of`) give the bits
of the NaN-propagating `nan_max` and `nan_min` they replace wherever the bound is never NaN: every
pair of a grid of operands with signed zeros, infinities, subnormals, ties and NaN, compiled
as the kernel compiles them (inlined into a loop), compared as raw bits."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.jit import njit
from skyswarm.uav.kernel_math import max_of, min_of, nan_max, nan_min

_SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e-12, -1e-12, 5e-324, -5e-324, 1e300, -1e300]
X = np.array([*_SPECIAL, np.inf, -np.inf, np.nan, -np.nan, 0.1 + 0.2, 0.3], dtype=float)
BOUNDS = np.array([*_SPECIAL, np.inf, -np.inf, 0.3, 0.1 + 0.2], dtype=float)  # never NaN


@njit
def _grid(xs, ks, out):  # pragma: no cover - compiled
    """out[i, j] = (nan_max, max_of, nan_min, min_of) of (xs[i], ks[j])."""
    for i in range(xs.shape[0]):
        for j in range(ks.shape[0]):
            x, k = xs[i], ks[j]
            out[i, j, 0] = nan_max(x, k)
            out[i, j, 1] = max_of(x, k)
            out[i, j, 2] = nan_min(x, k)
            out[i, j, 3] = min_of(x, k)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint64)


def test_one_sided_clamps_are_the_two_sided_ones_to_the_bit() -> None:
    out = np.empty((len(X), len(BOUNDS), 4))
    _grid(X, BOUNDS, out)
    assert np.array_equal(_bits(out[..., 0]), _bits(out[..., 1]))
    assert np.array_equal(_bits(out[..., 2]), _bits(out[..., 3]))
    # the cases that make the grid worth having: a NaN in, a NaN out; ties of signed zeros
    # give the bound (the second operand), as the two-sided clamps do
    i_nan = int(np.flatnonzero(np.isnan(X))[0])
    assert np.isnan(out[i_nan, :, 1]).all() and np.isnan(out[i_nan, :, 3]).all()
    assert not np.signbit(out[1, 0, 1])  # max of x = -0.0 and k = +0.0: the bound's +0.0
    assert np.signbit(out[0, 1, 3])  # min of x = +0.0 and k = -0.0: the bound's -0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_random_operands_clamp_alike(seed: int) -> None:
    rng = np.random.default_rng(seed)
    xs = rng.normal(0.0, 3.0, 4000)
    xs[::97] = np.nan
    ks = rng.normal(0.0, 3.0, 64)
    xs[1::50] = ks[seed]  # ties
    out = np.empty((len(xs), len(ks), 4))
    _grid(xs, ks, out)
    assert np.array_equal(_bits(out[..., 0]), _bits(out[..., 1]))
    assert np.array_equal(_bits(out[..., 2]), _bits(out[..., 3]))
