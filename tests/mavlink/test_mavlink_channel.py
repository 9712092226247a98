"""A MAVLink link degraded by the scenario's radio channel (`[mavlink] channel`): measured loss
within a binomial interval both ways, delays from the messages' own timestamps, the same frames
lost for the same seed, range and bad settings (mavlink/channel.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skyswarm.core.schema import ConfigError
from tests.mavlink.harness import Run

UNSUPPORTED_CMD = 31000  # MAV_CMD_USER_1: answered by COMMAND_ACK UNSUPPORTED, changes nothing


def lossy(loss: float, latency_s: float = 0.0, jitter_s: float = 0.0, *extra: str) -> list[str]:
    return [
        "mavlink.channel='radio'",
        f"comms.channels.radio.loss={loss}",
        f"comms.channels.radio.latency_s={latency_s}",
        f"comms.channels.radio.jitter_s={jitter_s}",
        *extra,
    ]


def within_binomial(k: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    """k successes of n within `sigmas` standard deviations of n p."""
    return abs(k - n * p) <= sigmas * math.sqrt(n * p * (1 - p))


def test_loss_rate_both_ways_is_the_channels_within_a_binomial_interval(repo_root):
    run = Run(repo_root, 1, overrides=lossy(0.3))
    try:
        run.pump(30.0)  # telemetry only: ~47 messages/s at PX4's rates
        c = run.service.channel.counters
        n, lost = c.sent, c.lost_sent
        assert n > 1200
        assert within_binomial(lost, n, 0.3), (lost, n)
        # Latency 0 is one tick: what was not lost reached the client, but the last tick's
        heard = len(run.log)
        assert n - lost - 2 <= heard <= n - lost
        # Uplink: 400 commands, each lost with p = 0.3; the ACK of one that arrived, again.
        for _ in range(400):
            run.clients[0].mav.command_long_send(1, 1, UNSUPPORTED_CMD, 0, 0, 0, 0, 0, 0, 0, 0)
            run.pump(0.02)
        run.pump(0.5)
        assert c.received == 400
        assert within_binomial(c.lost_received, 400, 0.3), c.lost_received
        acks = [m for _, _, m in run.log if m.get_type() == "COMMAND_ACK"]
        assert within_binomial(len(acks), 400, 0.7**2), len(acks)
        assert {a.result for a in acks} == {3}  # MAV_RESULT_UNSUPPORTED
        assert run.service.report()["channel"]["lost_received"] == c.lost_received
    finally:
        run.close()


def test_latency_and_jitter_measured_from_the_messages_timestamps(repo_root):
    run = Run(repo_root, 1, overrides=lossy(0.0, 0.1, 0.04))
    try:
        run.pump(10.0)
        poll_s, tick_s = run.service.poll_s, run.sim.world.tick_s
        stamped = [(t, m) for t, _, m in run.log if m.get_type() == "ATTITUDE"]
        assert len(stamped) > 150
        # Delay = read time - time_boot_ms. The channel delays 40 .. 56 ticks (0.1 + 0 .. 0.04
        # s); the lockstep client reads after each poll's ticks (up to one poll + a tick later)
        # and time_boot_ms is truncated to the ms.
        delay = np.array([t - m.time_boot_ms / 1000.0 for t, m in stamped])
        assert delay.min() >= 0.1 - 1e-9
        assert delay.max() <= 0.14 + poll_s + tick_s + 1e-3 + 1e-9
        assert delay.max() - delay.min() >= 0.02  # the jitter shows
        assert abs(delay.mean() - (0.12 + poll_s / 2)) < 0.015
        # A command's round trip crosses the channel twice: >= 0.2 s of simulated time.
        t_sent = run.sim.time_s
        run.clients[0].mav.command_long_send(1, 1, UNSUPPORTED_CMD, 0, 0, 0, 0, 0, 0, 0, 0)
        run.wait("COMMAND_ACK", 1.0, test=lambda m: m.command == UNSUPPORTED_CMD)
        t_ack = run.log[run.cursor - 1][0]
        assert 0.2 <= t_ack - t_sent <= 0.28 + 3 * poll_s
    finally:
        run.close()


def trace(repo_root, seed: int) -> list[tuple[str, int, float]]:
    run = Run(repo_root, 1, overrides=lossy(0.3, 0.01, 0.02, f"simulation.seed={seed}"))
    try:
        for _ in range(50):
            run.clients[0].mav.command_long_send(1, 1, UNSUPPORTED_CMD, 0, 0, 0, 0, 0, 0, 0, 0)
            run.pump(0.1)
        return [(m.get_type(), getattr(m, "time_boot_ms", -1), t) for t, _, m in run.log]
    finally:
        run.close()


def test_the_same_seed_loses_and_delays_the_same_frames(repo_root):
    a, b, other = trace(repo_root, 1), trace(repo_root, 1), trace(repo_root, 2)
    assert len(a) > 100
    assert a == b
    assert a != other


def test_out_of_range_of_the_ground_station_nothing_crosses(repo_root):
    # radio's range is 100 m; the ground station 1 km away: every frame lost
    run = Run(repo_root, 1, overrides=lossy(0.0, 0.0, 0.0, "mavlink.ground_station_m=[1000, 0, 0]"))
    try:
        run.pump(3.0)
        c = run.service.channel.counters
        assert c.sent > 100 and c.lost_sent == c.sent
        assert run.log == []
    finally:
        run.close()


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        # before: "mavlink.channel = 'nope': expected no channel 'nope'; configured channels: .."
        (
            "mavlink.channel='nope'",
            "mavlink.channel = 'nope': expected '' (no channel) or a [comms.channels] channel "
            "of the run ('radio', 'long_range')",
        ),
        ("mavlink.ground_station_m=[1, 2]", "mavlink.ground_station_m"),
    ],
)
def test_bad_channel_settings_are_one_line_errors(repo_root, override, needle):
    with pytest.raises(ConfigError) as err:
        Run(repo_root, 1, overrides=["mavlink.channel='radio'", override])
    assert needle in str(err.value)
