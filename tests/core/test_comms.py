"""Message delivery: latency, jitter, loss, range, deaths, queues, bandwidth, reproducibility."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pybullet as pb
import pytest

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.comms.channels import CommsConfig
from skyswarm.core.comms.dispatcher import BaseStation, Message, MessageDispatcher, attach_comms
from skyswarm.core.config import SimulationConfig
from skyswarm.core.simulator import Simulator

TICK = 0.0025  # s


def make_sim(channels: dict[str, dict[str, Any]], seed: int = 0, **comms: Any):
    sim = Simulator(SimulationConfig(tick_s=TICK, seed=seed))
    d = attach_comms(sim, CommsConfig.from_dict({"channels": channels, **comms}))
    return sim, d


def static_agents(
    sim: Simulator, positions: Sequence[Sequence[float]], first_id: int = 1
) -> list[PhysicalAgent]:
    """Real Bullet bodies of mass 0 (they never move), tracked like any physical agent."""
    world = sim.world
    shape = pb.createCollisionShape(pb.GEOM_SPHERE, radius=0.05, physicsClientId=world.client)
    bodies = world.create_bodies(0.0, shape, positions)
    slots = world.track(bodies)
    return [PhysicalAgent(sim, first_id + i, s) for i, s in enumerate(slots)]


def collect(agent: PhysicalAgent | BaseStation, sim: Simulator) -> list[tuple[int, Message]]:
    """Record (tick seen, message) through the on-message callback."""
    got: list[tuple[int, Message]] = []
    agent.transceiver.on_message = lambda m: got.append((sim.tick, m))
    return got


def steps(sim: Simulator, n: int) -> None:
    for _ in range(n):
        sim.step()


def test_10ms_latency_on_25ms_tick_is_exactly_4_ticks():
    sim, d = make_sim({"radio": {"latency_s": 0.010, "jitter_s": 0.0, "loss": 0.0}})
    a, b = static_agents(sim, [(0, 0, 1), (10, 0, 1)])
    got = collect(b, sim)
    a.every(0.025, lambda: a.transceiver.send(b, "ping"), phase_s=0.005)  # sends at tick 2, 12, ..
    steps(sim, 100)
    assert len(got) == 10  # sends at ticks 2..92, all due by tick 96 < 100
    for seen, m in got:
        assert m.delivery_tick - m.send_tick == 4
        assert seen == m.delivery_tick  # handed over at phase 1 of that very tick
    assert [m.send_tick for _, m in got] == list(range(2, 100, 10))


def test_jitter_stays_in_bounds_and_mean_matches():
    # latency 4 ticks + uniform {0, 1, 2} ticks: delays 4..6, mean 5, variance 2/3 tick^2.
    from scipy.stats import binom

    n = 20_000
    delays, on_time = jitter_delays(n)
    assert len(delays) == n and on_time
    assert delays.min() == 4 and delays.max() == 6
    sd_mean = math.sqrt((2 / 3) / n)
    assert abs(delays.mean() - 5.0) < 4 * sd_mean  # 4 sigma: about 1 failure in 16,000 runs
    lo, hi = binom.interval(0.999, n, 1 / 3)
    for k in (4, 5, 6):
        assert lo <= np.count_nonzero(delays == k) <= hi


def jitter_delays(n: int) -> tuple[np.ndarray, bool]:
    """`n` messages on a radio of 10 ms latency and 5 ms jitter at 2.5 ms ticks: (n,) delays in
    ticks, and whether each was handed over at its delivery tick (bench/fidelity.py)."""
    sim, d = make_sim({"radio": {"latency_s": 0.010, "jitter_s": 0.005, "loss": 0.0}})
    a, b = static_agents(sim, [(0, 0, 1), (10, 0, 1)])
    got = collect(b, sim)
    for i in range(n):
        a.transceiver.send(b, i)
    steps(sim, 8)
    delays = np.array([m.delivery_tick - m.send_tick for _, m in got])
    return delays, all(seen == m.delivery_tick for seen, m in got)


def delivered(channel: dict[str, Any], distance_m: float, n: int) -> tuple[int, dict[str, int]]:
    """`n` messages sent 0 -> `distance_m` m on a radio of `channel` keys: how many arrived,
    and the channel's totals (bench/fidelity.py)."""
    sim, d = make_sim({"radio": {**channel, "queue_capacity": n}})
    a, b = static_agents(sim, [(0, 0, 1), (distance_m, 0, 1)])
    for i in range(n):
        a.transceiver.send(b, i)
    steps(sim, 10)
    return len(b.transceiver.receive()), d.totals()["radio"]


@pytest.mark.parametrize("loss", [0.0, 0.2, 1.0])
def test_constant_loss_fraction(loss: float):
    from scipy.stats import binom

    n = 20_000
    got, t = delivered({"loss": loss}, 50.0, n)
    assert t["sent"] == t["addressed"] == n
    assert t["delivered"] + t["lost_on_air"] == n and t["delivered"] == got
    if loss == 0.0:
        assert got == n
    elif loss == 1.0:
        assert got == 0
    else:
        lo, hi = binom.interval(0.999, n, 1 - loss)  # 99.9% interval of 0.8 * 20,000
        assert lo <= got <= hi


def test_rayleigh_loss_at_half_distance_delivers_half_of_the_survivors():
    # p_loss(d50) = 1 - (1 - 0.1) * exp(-ln 2) = 0.55: 45% of 20,000 arrive.
    from scipy.stats import binom

    n = 20_000
    cfg = {"loss": 0.1, "loss_model": "rayleigh", "half_loss_distance_m": 40.0}
    got, _ = delivered({**cfg, "range_m": 100.0}, 40.0, n)
    lo, hi = binom.interval(0.999, n, 0.45)
    assert lo <= got <= hi


@pytest.mark.parametrize(("layout_seed", "range_m"), [(7, 60.0), (8, 25.0), (9, 120.0)])
def test_broadcast_reaches_exactly_the_alive_agents_in_range(layout_seed: int, range_m: float):
    rng = np.random.default_rng(layout_seed)
    n = 300
    pos = np.column_stack([rng.uniform(0, 300, (n, 2)), rng.uniform(1, 40, n)])
    sim, d = make_sim({"radio": {"range_m": range_m, "loss": 0.0, "queue_capacity": 1000}})
    agents = static_agents(sim, pos)
    dead = set(rng.choice(n, 30, replace=False).tolist())
    for i in dead:
        sim.kill(agents[i], "test")
    seqs = {}
    for i, a in enumerate(agents):
        seq = a.transceiver.broadcast(i)
        assert (seq is None) == (i in dead)  # a killed agent sends nothing
        if seq is not None:
            seqs[seq] = i
    steps(sim, 10)
    got = {(seqs[m.seq], j) for j, a in enumerate(agents) for m in a.transceiver.receive()}
    expected = {
        (i, j)
        for i in range(n)
        for j in range(n)
        if i != j and i not in dead and j not in dead and math.dist(pos[i], pos[j]) <= range_m
    }
    assert len(expected) > 500  # the layout is dense enough to be a real check
    assert got == expected
    t = d.totals()["radio"]
    # every other alive agent is addressed; those beyond range are counted out of range
    live = n - len(dead)
    assert t["addressed"] == live * (live - 1)
    assert t["delivered"] == len(expected)
    assert t["out_of_range"] == live * (live - 1) - len(expected)
    assert t["sender_dead"] == len(dead) and t["sent"] == n - len(dead)
    # and by receiver: agent j missed every live broadcaster beyond range
    for j in range(0, n, 37):
        if j in dead:
            continue
        far = sum(1 for i in range(n) if i != j and i not in dead and (i, j) not in expected)
        assert d.agent_counts(agents[j])["radio"]["rx"]["out_of_range"] == far


def test_messages_to_a_killed_agent_are_receiver_dead():
    sim, d = make_sim({"radio": {"latency_s": 0.01, "loss": 0.0}})
    a, b, c = static_agents(sim, [(0, 0, 1), (10, 0, 1), (20, 0, 1)])
    a.transceiver.send(b, "in flight when b dies")
    sim.step()  # resolved: due at tick 4
    sim.kill(b, "test")
    a.transceiver.send(b, "to an already dead agent")
    a.transceiver.broadcast("reaches c only")
    assert b.transceiver.send(c, "from the dead") is None
    steps(sim, 10)
    t = d.totals()["radio"]
    assert t["receiver_dead"] == 2 and t["delivered"] == 1 and t["sender_dead"] == 1
    assert d.agent_counts(b)["radio"]["rx"]["receiver_dead"] == 2
    assert d.agent_counts(a)["radio"]["tx"]["receiver_dead"] == 2
    assert [m.payload for m in c.transceiver.receive()] == ["reaches c only"]
    assert b.transceiver.receive() == []


def test_full_queue_drops_and_counts_overflow():
    sim, d = make_sim({"radio": {"queue_capacity": 5, "loss": 0.0, "jitter_s": 0.0}})
    a, b = static_agents(sim, [(0, 0, 1), (10, 0, 1)])
    for i in range(8):
        a.transceiver.send(b, i)
    steps(sim, 5)
    t = d.totals()["radio"]
    assert (t["delivered"], t["queue_overflow"]) == (5, 3)
    assert [m.payload for m in b.transceiver.receive()] == [0, 1, 2, 3, 4]  # first come first
    for i in range(3):  # the drained queue accepts again
        a.transceiver.send(b, i)
    steps(sim, 5)
    assert len(b.transceiver.receive()) == 3 and d.totals()["radio"]["delivered"] == 8


def test_every_copy_is_accounted_for():
    """Mixed traffic with loss, range, deaths, overflow and a bandwidth cap: nothing vanishes."""
    rng = np.random.default_rng(3)
    chans = {
        "radio": {"loss": 0.3, "range_m": 40.0, "queue_capacity": 4, "jitter_s": 0.005},
        "slow": {"latency_s": 0.02, "bandwidth_bytes_per_s": 2000.0, "queue_capacity": 3},
    }
    sim, d = make_sim(chans)
    agents = static_agents(sim, np.column_stack([rng.uniform(0, 100, (40, 2)), np.ones(40)]))
    seen = 0
    for tick in range(60):
        for a in agents:
            if rng.random() < 0.3:
                a.transceiver.broadcast(tick)
            if rng.random() < 0.3:
                a.transceiver.send(agents[rng.integers(40)], tick, channel="slow", size_bytes=100)
        if tick == 30:
            for a in agents[:5]:
                sim.kill(a, "test")
        sim.step()
        if tick % 7 == 0:
            seen += sum(len(a.transceiver.receive()) for a in agents)
    steps(sim, 20)
    seen += sum(len(a.transceiver.receive()) for a in agents)
    totals = d.totals()
    copy_fates = ("delivered", "lost_on_air", "out_of_range", "receiver_dead", "queue_overflow")
    for t in totals.values():
        assert t["in_flight"] == 0
        assert t["addressed"] == sum(t[f] for f in copy_fates)
    assert sum(t["delivered"] for t in totals.values()) == seen
    slow = totals["slow"]  # unicast only: every send is dropped by the cap or addressed once
    assert slow["sent"] == slow["over_bandwidth"] + slow["addressed"] and slow["over_bandwidth"]
    for f in ("lost_on_air", "queue_overflow", "receiver_dead"):
        assert totals["radio"][f] > 0  # the scenario exercised each fate
    per_agent = sum(d.agent_counts(a)["radio"]["rx"]["delivered"] for a in agents)
    assert per_agent == totals["radio"]["delivered"]


def test_bandwidth_cap_is_a_one_second_token_bucket():
    # 640 B/s and 64 B messages: a full bucket holds 10; it refills 5 in 0.5 s.
    chan = {"bandwidth_bytes_per_s": 640.0, "queue_capacity": 100, "loss": 0.0, "jitter_s": 0.0}
    sim, d = make_sim({"radio": chan})
    a, b = static_agents(sim, [(0, 0, 1), (10, 0, 1)])
    for i in range(20):
        a.transceiver.send(b, i)
    steps(sim, 200)  # 0.5 s
    for i in range(10):
        a.transceiver.send(b, 100 + i)
    steps(sim, 10)
    t = d.totals()["radio"]
    assert (t["sent"], t["over_bandwidth"], t["delivered"]) == (30, 15, 15)
    assert [m.payload for m in b.transceiver.receive()] == [*range(10), *range(100, 105)]


def test_base_station_long_range_link():
    sim, d = make_sim(
        {"radio": {"range_m": 100.0}, "long_range": {"jitter_s": 0.0}},
        base_stations=[{"id": 0, "position": [0.0, 0.0]}],
    )
    (bs,) = d.base_stations
    u1, u2 = static_agents(sim, [(5000, 0, 50), (0, 5000, 50)])
    assert isinstance(bs, BaseStation) and bs.transceiver.default_channel == "long_range"
    got_bs = collect(bs, sim)
    u1.transceiver.send(bs, "telemetry", channel="long_range")  # 5 km: unlimited range
    u1.transceiver.send(u2, "uav to uav", channel="long_range")  # no base station end
    u1.transceiver.broadcast("hello", channel="long_range")  # reaches base stations only
    u1.transceiver.send(bs, "too far for the radio")  # radio, 100 m
    bs.transceiver.broadcast("mission update")  # to every alive agent
    steps(sim, 30)
    assert [(t, m.payload) for t, m in got_bs] == [(20, "telemetry"), (20, "hello")]  # 50 ms
    assert [m.payload for m in u2.transceiver.receive()] == ["mission update"]
    assert [m.payload for m in u1.transceiver.receive()] == ["mission update"]
    assert d.totals()["long_range"]["out_of_range"] == 1
    assert d.totals()["radio"]["out_of_range"] == 1


def test_payload_is_the_same_object_and_broadcasts_share_one_message():
    sim, d = make_sim({"radio": {"loss": 0.0}})
    a, b, c = static_agents(sim, [(0, 0, 1), (5, 0, 1), (0, 5, 1)])
    payload = {"map": [1, 2, 3]}
    a.transceiver.broadcast(payload)
    steps(sim, 5)
    (mb,), (mc,) = b.transceiver.receive(), c.transceiver.receive()
    assert mb.payload is payload and mb is mc and mb.receiver is None and mb.sender == a.id


def test_callback_exception_is_a_software_fault_of_the_receiver():
    sim, d = make_sim({"radio": {"loss": 0.0}})
    a, b = static_agents(sim, [(0, 0, 1), (5, 0, 1)])

    def bad(m: Message) -> None:
        raise RuntimeError("parser bug")

    b.transceiver.on_message = bad
    a.transceiver.send(b, "x")
    steps(sim, 5)
    assert not b.alive and b.death_cause == "software fault: RuntimeError: parser bug"


def _run_traffic(seed: int) -> tuple[np.ndarray, dict]:
    chans = {"radio": {"loss": 0.25, "jitter_s": 0.0075, "range_m": 30.0}}
    sim, d = make_sim(chans, seed=seed, log_deliveries=True)
    layout = np.random.default_rng(11).uniform(0, 60, (25, 3))
    agents = static_agents(sim, layout)
    for i, a in enumerate(agents):
        a.every(0.05, lambda a=a: a.transceiver.broadcast(a.id), phase_s=0.0025 * (i % 20))
        a.every(0.1, lambda a=a, i=i: a.transceiver.send(agents[(i + 1) % 25], i))
    steps(sim, 200)
    return d.delivery_log(), d.totals()


def test_same_seed_same_delivery_log():
    log1, totals1 = _run_traffic(seed=5)
    log2, totals2 = _run_traffic(seed=5)
    log3, _ = _run_traffic(seed=6)
    assert len(log1) > 1000
    assert np.array_equal(log1, log2) and totals1 == totals2
    assert not np.array_equal(log1, log3)  # the seed does matter


def test_dispatchers_are_per_simulation():
    sim1, d1 = make_sim({"radio": {}})
    sim2, d2 = make_sim({"radio": {}})
    assert isinstance(d1, MessageDispatcher) and d1 is not d2
    (a,) = static_agents(sim1, [(0, 0, 1)])
    (b,) = static_agents(sim2, [(0, 0, 1)])
    a.transceiver.broadcast("x")
    assert d1.totals()["radio"]["sent"] == 1 and d2.totals()["radio"]["sent"] == 0
    assert b.transceiver.dispatcher is d2


def test_no_latency_still_delivers_on_the_next_tick():
    # latency 0, jitter 0: a message sent in tick t is handed over in tick t + 1, never in the
    # tick it was sent (a behaviour must not hear a reply within its own tick)
    sim, d = make_sim({"radio": {"latency_s": 0.0, "jitter_s": 0.0, "loss": 0.0}})
    a, b = static_agents(sim, [(0, 0, 1), (10, 0, 1)])
    got = collect(b, sim)
    a.every(0.025, lambda: a.transceiver.send(b, "ping"), phase_s=0.005)
    steps(sim, 40)
    assert len(got) == 4 and all(m.delivery_tick - m.send_tick == 1 for _, m in got)
    assert all(seen == m.delivery_tick for seen, m in got)


def test_each_sender_has_its_own_bucket_and_an_idle_one_holds_one_second_at_most():
    # 640 B/s, 64 B messages: each sender's full bucket holds 10. Two senders, 8 each in one
    # tick: all 16 fit (a sender is not charged another's bytes). Then 3 s idle and 30 more
    # from one sender: the bucket refilled to its one-second cap, 10 fit, 20 are dropped.
    chan = {"bandwidth_bytes_per_s": 640.0, "queue_capacity": 100, "loss": 0.0, "jitter_s": 0.0}
    sim, d = make_sim({"radio": chan})
    a, b, c = static_agents(sim, [(0, 0, 1), (10, 0, 1), (0, 10, 1)])
    for i in range(8):
        a.transceiver.send(b, i)
        c.transceiver.send(b, 50 + i)
    steps(sim, 10)
    assert d.totals()["radio"]["over_bandwidth"] == 0
    assert len(b.transceiver.receive()) == 16
    steps(sim, 1200)  # 3 s
    for i in range(30):
        a.transceiver.send(b, 100 + i)
    steps(sim, 10)
    t = d.totals()["radio"]
    assert (t["sent"], t["over_bandwidth"]) == (46, 20)
    assert [m.payload for m in b.transceiver.receive()] == list(range(100, 110))
