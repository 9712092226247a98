"""The compiled passes of core/comms/beacon_kernels.py against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import cKDTree

from skyswarm.core.comms.beacon_kernels import ordered_pairs


def by_numpy(pairs: np.ndarray, n: int, pos: np.ndarray):
    """Both orders of each pair, sorted by (receiver, sender) with lexsort; distances."""
    recv = np.concatenate([pairs[:, 0], pairs[:, 1]])
    send = np.concatenate([pairs[:, 1], pairs[:, 0]])
    order = np.lexsort((send, recv))
    recv, send = recv[order], send[order]
    return recv, send, np.sqrt(((pos[recv] - pos[send]) ** 2).sum(axis=1))


@pytest.mark.parametrize("n", [0, 1, 2, 9, 400])
def test_ordered_pairs_sorts_both_orders_by_receiver_then_sender(n: int) -> None:
    rng = np.random.default_rng(n)
    pos = rng.uniform(0.0, 60.0, (n, 3))
    if n >= 2:
        pairs = cKDTree(pos).query_pairs(15.0, output_type="ndarray").astype(np.int64)
    else:
        pairs = np.zeros((0, 2), dtype=np.int64)
    pairs = pairs[rng.permutation(len(pairs))]  # the KD-tree's order is not promised
    pairs[::2] = pairs[::2, ::-1]  # nor which end comes first
    recv, send, dist = ordered_pairs(pairs, n, pos)
    want_recv, want_send, want_dist = by_numpy(pairs, n, pos)
    assert len(recv) == 2 * len(pairs)
    np.testing.assert_array_equal(recv, want_recv)
    np.testing.assert_array_equal(send, want_send)
    # same formula, same order of operations: sqrt(dx^2 + dy^2 + dz^2), bit for bit
    np.testing.assert_array_equal(dist, want_dist)
    if n == 400:  # a grid of real neighbourhoods, not a degenerate case
        assert len(pairs) > 1000
        assert (np.diff(recv) >= 0).all() and (np.bincount(recv, minlength=n) > 0).sum() > 300
