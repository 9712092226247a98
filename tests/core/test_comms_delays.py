"""Channel delays without jitter skip the comms stream's zero-width draw (issue 28: a numpy
call per tick's batch of a small swarm): the same delays and the same stream as the draw."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.comms.channels import Channel, ChannelConfig

TICK = 0.0025


def _drawn(latency: int, jitter: int, rng: np.random.Generator, count: int) -> np.ndarray:
    """The delays as drawn before the skip: one `rng.integers` call of `count`."""
    return np.maximum(1, latency + rng.integers(0, jitter + 1, size=count))


@pytest.mark.parametrize("count", [0, 1, 3, 200])
def test_numpy_draws_nothing_for_a_zero_width_range(count: int) -> None:
    """What the skip rests on: numpy fills integers(0, 1) without touching the stream."""
    rng = np.random.default_rng(7)
    before = rng.bit_generator.state
    assert rng.integers(0, 1, size=count).tolist() == [0] * count
    assert rng.bit_generator.state == before


@pytest.mark.parametrize(("latency_s", "jitter_s"), [(0.0, 0.0), (0.005, 0.0), (0.05, 0.01)])
@pytest.mark.parametrize("count", [0, 1, 5])
def test_delays_and_stream_equal_the_draw(latency_s: float, jitter_s: float, count: int) -> None:
    chan = Channel("radio", 0, ChannelConfig(latency_s=latency_s, jitter_s=jitter_s), TICK)
    for delays in (chan.delays, chan.delay_ticks):
        ours, theirs = np.random.default_rng(3), np.random.default_rng(3)
        got = delays(ours, count)
        want = _drawn(chan.latency_ticks, chan.jitter_ticks, theirs, count)
        assert np.asarray(got, dtype=np.int64).tolist() == want.tolist()
        assert min(np.asarray(got).tolist(), default=1) >= 1
        assert ours.random(4).tolist() == theirs.random(4).tolist()  # the stream, in step
    assert chan.delays(np.random.default_rng(0), count).dtype == np.int64
