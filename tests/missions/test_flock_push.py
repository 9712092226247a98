"""The separation push of a flocking-coverage follower (FlockUav._push) against its formula
summed peer by peer, at the edges: exactly at the separation, at the 1e-6 m floor, no peers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from skyswarm.missions.flocking_coverage.flock import FlockUav, _ahead

SEP = 2.0


def by_formula(here: np.ndarray, peers: dict[int, np.ndarray]) -> np.ndarray:
    push = np.zeros(2)
    for p in peers.values():
        d = here - p
        dist = float(np.hypot(*d))
        if 1e-6 < dist < SEP:
            push += 1.5 * (SEP - dist) * d / dist
    return push


def push(here: np.ndarray, peers: dict[int, np.ndarray]) -> np.ndarray:
    me = SimpleNamespace(ctx=SimpleNamespace(flock=SimpleNamespace(separation_m=SEP)))
    return FlockUav._push(me, here, peers)  # type: ignore[arg-type]


def test_push_equals_the_formula_bit_for_bit_on_random_flocks() -> None:
    rng = np.random.default_rng(4)
    pushed = 0
    for _ in range(300):
        here = rng.uniform(-3, 3, 2)
        peers = {int(i): rng.uniform(-3, 3, 2) for i in rng.choice(50, rng.integers(0, 9), False)}
        got, want = push(here, peers), by_formula(here, peers)
        assert got.tobytes() == want.tobytes()
        pushed += bool(want.any())
    assert pushed > 150  # most flocks have someone within 2 m (176 of 300 here)


def test_push_edges() -> None:
    here = np.array([1.0, 1.0])
    assert push(here, {}).tolist() == [0.0, 0.0]
    at_sep = {2: here + [SEP, 0.0], 3: here + [0.0, -SEP]}  # exactly at the separation: none
    assert push(here, at_sep).tolist() == [0.0, 0.0]
    on_top = {4: here + [5e-7, 0.0]}  # under the 1e-6 m floor: no direction, no push
    assert push(here, on_top).tolist() == [0.0, 0.0]
    close = {5: here + [1.0, 0.0], 6: here + [0.0, 0.5]}  # 1.5 (2 - 1) and 1.5 (2 - 0.5) away
    assert push(here, close).tolist() == [-1.5, -2.25]


def test_ahead_is_the_array_formula() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        p, v, dt = tuple(rng.normal(0, 50, 3)), tuple(rng.normal(0, 5, 3)), float(rng.uniform(0, 2))
        want = np.array(p[:2]) + dt * np.array(v[:2])
        assert _ahead(p, v, dt).tobytes() == want.tobytes()
