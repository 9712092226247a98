"""Hostile input: garbage, truncated, wrong-CRC and wrong-system packets are counted and
ignored, a flood is read at a bounded rate, signing refuses unsigned commands, bad [mavlink]
settings are one-line errors."""

from __future__ import annotations

import random
import socket

import numpy as np
import pytest
from pymavlink.dialects.v20 import common as mavlink2

from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.mavlink import MavlinkConfig, attach
from tests.mavlink.harness import (  # noqa: F401  (the mav_run fixture)
    Run,
    free_base,
    mav_run_fixture,
)

WAYPOINTS = "configs/waypoints.toml"  # three UAVs the mission flies: a moving trajectory


class _Buf:
    def __init__(self) -> None:
        self.data = b""

    def write(self, b: bytes) -> None:
        self.data = bytes(b)


def _packet(msg, sysid: int = 255) -> bytes:
    buf = _Buf()
    mavlink2.MAVLink(buf, srcSystem=sysid, srcComponent=190).send(msg)
    return buf.data


def garbage(rng: random.Random, n: int) -> list[bytes]:
    """`n` datagrams no vehicle may act on, of six kinds in turn (seeded: reproducible)."""
    arm_1 = _packet(mavlink2.MAVLink_command_long_message(1, 1, 400, 0, 1, 0, 0, 0, 0, 0, 0))
    arm_7 = _packet(mavlink2.MAVLink_command_long_message(7, 1, 400, 0, 1, 0, 0, 0, 0, 0, 0))
    out = []
    for k in range(n):
        kind = k % 6
        if kind == 0:  # random bytes
            out.append(rng.randbytes(rng.randint(1, 300)))
        elif kind == 1:  # a valid arm command cut short
            out.append(arm_1[: rng.randint(1, len(arm_1) - 1)])
        elif kind == 2:  # a valid arm command with a flipped CRC bit
            b = bytearray(arm_1)
            b[-1 - rng.randint(0, 1)] ^= 1 << rng.randint(0, 7)
            out.append(bytes(b))
        elif kind == 3:  # a valid arm command for system 7
            out.append(arm_7)
        elif kind == 4:  # a MAVLink 2 start byte and a random header and body
            out.append(b"\xfd" + rng.randbytes(rng.randint(0, 60)))
        else:  # a payload byte flipped (CRC no longer matches), or an oversized datagram
            b = bytearray(arm_1)
            b[12] ^= 0xFF
            out.append(bytes(b) if k % 12 else rng.randbytes(4000))
    return out


def _trajectory(run: Run, seconds: float, datagrams: list[bytes] | None, per_poll: int):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    todo = list(datagrams or [])
    target = ("127.0.0.1", run.vehicle_port)
    samples = []

    def throw() -> None:
        for _ in range(min(per_poll, len(todo))):
            sock.sendto(todo.pop(), target)

    ticks = round(seconds / run.sim.world.tick_s)
    end = run.sim.tick + ticks
    while run.sim.tick < end:
        run.pump(run.service.poll_s, every=throw)
        samples.append(run.sim.world.state.position.copy())
    sock.close()
    return np.array(samples)


def test_ten_thousand_garbage_datagrams_change_nothing(repo_root):
    ov = ["mavlink.enabled=true"]
    clean = Run(repo_root, 3, config=WAYPOINTS, overrides=ov)
    dirty = Run(repo_root, 3, config=WAYPOINTS, overrides=ov)
    try:
        junk = garbage(random.Random(35), 10_000)
        a = _trajectory(clean, 4.0, None, 0)
        b = _trajectory(dirty, 4.0, junk, 60)  # 60 a poll: <= max_datagrams, none dropped
        assert np.array_equal(a, b, equal_nan=True)  # bit-identical (NaN: free slots)
        assert np.nanmax(np.ptp(a[:, :, 2], axis=0)) > 2.0  # and they do fly (the take-off)
        c = dirty.service.vehicles[0].links[0].counters
        assert c.datagrams == 10_000 and c.accepted == 0
        assert c.wrong_target == 10_000 // 6 + (3 < 10_000 % 6)
        assert c.bad_crc >= 2 * (10_000 // 6) - 10  # flipped CRC or payload bit
        assert c.garbage >= 3 * (10_000 // 6)  # random, truncated, random-header datagrams
        assert not any(v.taken for v in dirty.service.vehicles)
    finally:
        clean.close()
        dirty.close()


def test_mavlink_service_alone_leaves_the_missions_trajectory_unchanged(repo_root):
    run = Run(repo_root, 3, config=WAYPOINTS, overrides=["mavlink.enabled=true"])
    try:
        with_service = _trajectory(run, 2.0, None, 0)
    finally:
        run.close()
    sim = Simulator.from_scenario(load_scenario(repo_root / WAYPOINTS))
    alone = []
    for _ in range(len(with_service)):
        for _ in range(run.service.poll_ticks):
            sim.step()
        alone.append(sim.world.state.position.copy())
    sim.close()
    assert np.array_equal(with_service, np.array(alone), equal_nan=True)


def test_a_flood_is_read_at_most_max_datagrams_per_poll(mav_run):
    run = mav_run(1, overrides=["mavlink.max_datagrams=16"])
    link = run.service.vehicles[0].links[0]
    before = link.counters.datagrams
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(100):
        sock.sendto(b"\x00" * 8, ("127.0.0.1", run.vehicle_port))
    sock.close()
    run.pump(run.service.poll_s)
    assert link.counters.datagrams - before == 16
    run.pump(run.service.poll_s)
    assert link.counters.datagrams - before == 32  # the rest wait for later polls


def test_signing_refuses_unsigned_commands_and_accepts_signed_ones(mav_run, tmp_path):
    key = bytes(range(32))
    path = tmp_path / "key.hex"
    path.write_text(key.hex())
    run = mav_run(1, overrides=[f"mavlink.signing_key_file={path}"])
    hb = run.last("HEARTBEAT")
    assert hb.get_header().incompat_flags & 1  # the vehicle signs its messages
    c = run.clients[0]
    c.mav.command_long_send(1, 1, 400, 0, 1, 0, 0, 0, 0, 0, 0)
    assert run.pump(1.0, lambda i, m: m.get_type() == "COMMAND_ACK") is None
    assert run.service.vehicles[0].links[0].counters.unsigned == 1
    assert not run.service.vehicles[0].armed
    c.setup_signing(key, sign_outgoing=True)
    assert run.command(400, 1) == 0


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("mavlink.bind_address='localhost'", "mavlink.bind_address"),
        ("mavlink.client_port=14578", "mavlink.vehicle_port"),  # 14578..14581 meets 14580..
        ("mavlink.agents=[9]", "mavlink.agents"),
        ("mavlink.vehicle_port=65535", "mavlink.vehicle_port"),
    ],
)
def test_bad_settings_are_one_line_config_errors(repo_root, override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as err:
        scenario = load_scenario(repo_root / "configs/mavlink.toml", [override])
        sim = Simulator.from_scenario(scenario)
        try:
            attach(sim).close()
        finally:
            sim.close()
    assert "\n" not in str(err.value)


def test_a_taken_port_is_a_config_error_naming_it(repo_root):
    base = free_base(8, random.Random())
    blocker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    blocker.bind(("127.0.0.1", base + 5))
    scenario = load_scenario(repo_root / "configs/mavlink.toml", [])
    sim = Simulator.from_scenario(scenario)
    listeners = sim.pre_tick_listeners
    try:
        config = MavlinkConfig(vehicle_port=base + 4, client_port=base)  # vehicle 1 = base + 5
        with pytest.raises(ConfigError, match=f"mavlink.vehicle_port = {base + 5}.*free UDP"):
            attach(sim, config)
        assert sim.pre_tick_listeners == listeners  # nothing left behind
    finally:
        blocker.close()
        sim.close()
