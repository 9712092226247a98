"""The plain-Python path of small batches (core/comms/small.py, `_hand_over_small`) decides
exactly what the vectorised path decides: the same counters, copies, queues, callbacks, links,
delivery log and random draws, tick after tick, on randomised traffic with every edge the fate
decision has (dead, cut-off and unplaced agents, exact range boundaries, unicasts, base-station
links, unlimited range, bandwidth caps, rayleigh loss, full queues, a channel switched off,
replies sent from inside a callback)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pybullet as pb
import pytest

import skyswarm.core.comms.dispatcher as dispatcher_module
from skyswarm.core.agent import Agent, PhysicalAgent
from skyswarm.core.comms.channels import CommsConfig
from skyswarm.core.comms.dispatcher import MessageDispatcher, attach_comms
from skyswarm.core.comms.fates import neighbours_within
from skyswarm.core.comms.small import SMALL_PAIRS, is_small
from skyswarm.core.config import SimulationConfig
from skyswarm.core.simulator import Simulator

TICK = 0.0025  # s
N = 14  # UAV-like agents; with a base station and a logical agent, 16 members


def channels(seed: int) -> dict[str, dict[str, Any]]:
    radio = {"range_m": 40.0, "loss": 0.2, "jitter_s": 0.005, "queue_capacity": 3}
    mesh = {"latency_s": 0.0, "loss": 0.3, "bandwidth_bytes_per_s": 600.0}
    rayleigh = {"loss_model": "rayleigh", "half_loss_distance_m": 25.0, "loss": 0.05}
    if seed % 2:
        radio |= rayleigh
    if seed % 4 >= 2:
        mesh |= rayleigh  # unlimited range: an agent without a position is at distance 0
    return {
        "radio": radio,  # finite range, jitter, small queues: overflow
        "long_range": {"loss": 0.1, "queue_capacity": 5},  # base-station link, unlimited range
        "mesh": mesh,  # unlimited range, bandwidth cap
        "short": {"range_m": 15.0, "link": "base_station", "latency_s": 0.0025},
    }


class Logical(Agent):
    """An agent without a position: reachable on unlimited-range channels only."""


def world(seed: int) -> tuple[Simulator, MessageDispatcher, list[Agent]]:
    sim = Simulator(SimulationConfig(tick_s=TICK, seed=seed))
    base = [{"id": 100, "position": [20.0, 20.0, 2.0]}]
    cfg = {"channels": channels(seed), "base_stations": base, "log_deliveries": True}
    d = attach_comms(sim, CommsConfig.from_dict(cfg))
    d.watch_links(4)
    shape = pb.createCollisionShape(pb.GEOM_SPHERE, radius=0.05, physicsClientId=sim.world.client)
    bodies = sim.world.create_bodies(0.0, shape, [(3.0 * i, 0.0, 5.0) for i in range(N)])
    agents: list[Agent] = [
        PhysicalAgent(sim, i + 1, s) for i, s in enumerate(sim.world.track(bodies))
    ]
    agents.append(Logical(sim, 50))
    return sim, d, agents + d.base_stations


def run(seed: int, small: bool, ticks: int = 160) -> list[Any]:
    """Scripted traffic (the script's own stream), one snapshot of everything per tick."""
    saved = dispatcher_module.is_small, dispatcher_module.SMALL_HAND_OVER
    dispatcher_module.is_small = lambda sends, members: small
    dispatcher_module.SMALL_HAND_OVER = 10**9 if small else -1
    try:
        return _run(seed, ticks)
    finally:
        dispatcher_module.is_small, dispatcher_module.SMALL_HAND_OVER = saved


def _run(seed: int, ticks: int) -> list[Any]:
    sim, d, agents = world(seed)
    script = np.random.default_rng(1000 + seed)
    uavs = [a for a in agents if isinstance(a, PhysicalAgent)]
    slots = np.array([a.slot for a in uavs])
    heard: list[tuple] = []

    def listener(agent: Agent) -> Any:
        def on_message(m: Any) -> None:
            heard.append((agent.id, sim.world.tick, *fields(m)))
            if m.seq % 5 == 0 and agent.alive:  # a reply sent while delivering: goes next tick
                agent.transceiver.send(m.sender, ("re", m.seq), channel=m.channel)

        return on_message

    for a in (agents[1], agents[4], agents[-1]):
        a.transceiver.on_message = listener(a)
    trace = []
    names = [c.name for c in d.channels]
    ids = [a.id for a in agents]
    for tick in range(ticks):
        sim.world.tick = tick
        pos = script.uniform(0.0, 50.0, (N, 3))
        if tick % 3 == 0:  # on a 5 m grid: many pairs exactly at 15 m or 40 m
            pos = np.round(pos / 5.0) * 5.0
        pos[script.random(N) < 0.05] = np.nan  # now and then a UAV without a position
        sim.world.state.position[slots] = pos
        if script.random() < 0.02:
            alive = [a for a in uavs if a.alive]
            if len(alive) > 4:
                sim.kill(alive[script.integers(len(alive))], "crash: test")
        if script.random() < 0.05:
            d.set_down(ids[script.integers(len(ids))], bool(script.random() < 0.6))
        if script.random() < 0.03:
            d.set_channel_enabled("radio", bool(script.random() < 0.7))
        for a in agents:
            for _ in range(int(script.integers(0, 3)) if script.random() < 0.3 else 0):
                ch = names[script.integers(len(names))]
                size = int(script.integers(1, 400))
                if script.random() < 0.6:
                    a.transceiver.broadcast((a.id, tick), channel=ch, size_bytes=size)
                else:
                    to = ids[script.integers(len(ids))]
                    a.transceiver.send(to, (a.id, tick), channel=ch, size_bytes=size)
        d.deliver(tick)
        queues = [
            [fields(m) for q in d.transceivers[i].queues for m in q] for i in range(len(agents))
        ]
        for a in agents:
            if script.random() < 0.3:
                a.transceiver.receive()
        due = sorted(
            (t, [(c.seq.tolist(), c.sender.tolist(), c.receiver.tolist(), c.channel.tolist())
                 for c in cs], [[fields(m) for m in c.messages] for c in cs])
            for t, cs in d._due.items()
        )  # fmt: skip
        links = d.recent_links()
        trace.append(
            (
                d._tx.tolist(),
                d._rx.tolist(),
                d._in_flight.tolist(),
                str(d.rng.bit_generator.state),
                queues,
                due,
                [getattr(links, k).tolist() for k in ("sender", "receiver", "channel", "fate")],
                list(heard),
                d.delivery_log().tolist(),
                [c.tokens.tolist() for c in d.channels],
            )
        )
    return trace


def fields(m: Any) -> tuple:
    return (m.seq, m.sender, m.receiver, m.channel, m.payload, m.send_tick)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_small_path_decides_exactly_what_the_vectorised_path_decides(seed: int):
    small, vector = run(seed, small=True), run(seed, small=False)
    assert len(small) == len(vector)
    for tick, (a, b) in enumerate(zip(small, vector)):
        assert a == b, f"seed {seed}: first difference at tick {tick}"
    tx = np.array(small[-1][0])  # the traffic did reach every fate the small path decides
    for fate in ("over_bandwidth", "out_of_range", "lost_on_air", "receiver_dead"):
        assert tx[:, :, dispatcher_module.FATES.index(fate)].sum() > 0, fate
    rx = np.array(small[-1][1])
    for fate in ("queue_overflow", "delivered"):
        assert rx[:, :, dispatcher_module.FATES.index(fate)].sum() > 0, fate


def test_small_range_test_is_the_brute_force_one_bit_for_bit():
    """The plain range test (dx*dx + dy*dy + dz*dz <= r*r) and the distance (its square root)
    agree with numpy's `neighbours_within` and `np.linalg.norm` on every pair, boundaries
    included (positions on a grid whose pairs sit exactly at the range)."""
    rng = np.random.default_rng(7)
    for trial in range(200):
        pts = rng.uniform(-80.0, 80.0, (12, 3))
        if trial % 2:
            pts = np.round(pts / 3.0) * 3.0 + rng.choice([0.0, 0.1, 1e-9], (12, 3))
        r = float(rng.choice([3.0, 5.0, 15.0, 40.0, 41.7]))
        po, pa = neighbours_within(pts, np.arange(12), pts[:4], r)
        plain = [
            (o, a)
            for o in range(4)
            for a in range(12)
            if sum_sq(pts[o].tolist(), pts[a].tolist()) <= r * r
        ]
        assert list(zip(po.tolist(), pa.tolist())) == plain
        s, a = np.repeat(np.arange(12), 12), np.tile(np.arange(12), 12)  # as `resolve` does
        norm = np.linalg.norm(pts[s] - pts[a], axis=1)
        xyz = pts.tolist()
        assert norm.tolist() == [math.sqrt(sum_sq(xyz[i], xyz[j])) for i, j in zip(s, a)]


def sum_sq(p: list[float], q: list[float]) -> float:
    dx, dy, dz = p[0] - q[0], p[1] - q[1], p[2] - q[2]
    return dx * dx + dy * dy + dz * dz


def test_small_swarms_take_the_plain_path_and_large_batches_the_vectorised_one():
    assert is_small(2, 31)  # the 30-UAV split flock's tick: one or two broadcasts
    assert is_small(SMALL_PAIRS // 31, 31)
    assert not is_small(25, 1000)  # a 1,000-UAV swarm's tick (bench/comms_dispatch.py)
    assert SMALL_PAIRS <= 4096  # small batches never reach the KD-tree of neighbours_within
