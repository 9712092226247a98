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


@pytest.mark.parametrize("high", [2, 3, 11, 2**32, 2**40])
def test_scalar_draws_are_the_array_draw(high: int) -> None:
    """What `delay_ticks`' one-by-one draws rest on: numpy fills an array of bounded integers
    value after value, as scalar calls draw them; the same values, the stream left in step."""
    for count in range(8):
        for seed in range(10):
            ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
            ours.random(3), theirs.random(3)  # a stream in mid-use
            one_by_one = [int(ours.integers(0, high)) for _ in range(count)]
            assert one_by_one == theirs.integers(0, high, size=count).tolist()
            assert ours.bit_generator.state == theirs.bit_generator.state


@pytest.mark.parametrize("count", [1, 2, 3, 4, 9])
def test_jittered_delays_by_either_draw(count: int) -> None:
    chan = Channel("radio", 0, ChannelConfig(latency_s=0.0025, jitter_s=0.0075), TICK)
    ours, theirs = np.random.default_rng(11), np.random.default_rng(11)
    want = _drawn(chan.latency_ticks, chan.jitter_ticks, theirs, count).tolist()
    got = chan.delay_ticks(ours, count)
    assert got == want and all(type(d) is int for d in got)
    assert ours.bit_generator.state == theirs.bit_generator.state
