"""State beacons (core/comms/beacons.py): delivery vs distance, latency histogram, fates, edges."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.comms.beacons import FIELDS, BeaconNet
from skyswarm.core.comms.channels import LOSS_MODELS, ChannelConfig
from tests.core.test_comms import make_sim, static_agents, steps

TICK = 0.0025


def net_of(sim, d, positions, period_s=TICK, **kw) -> tuple[list, BeaconNet]:
    agents = static_agents(sim, positions)
    pos = np.asarray(positions, dtype=float)

    def source(rows: np.ndarray) -> np.ndarray:  # position, zero velocity, yaw = row / 10
        out = np.zeros((len(rows), len(FIELDS) + len(kw.get("extra_fields", ()))))
        out[:, :3] = pos[rows]
        out[:, 6] = rows / 10
        if out.shape[1] > 7:
            out[:, 7] = sim.tick  # extra field: the send tick
        return out

    return agents, BeaconNet(d, agents, source, period_s, log=True, **kw)


def fates_add_up(t: dict[str, int]) -> bool:
    parts = ("delivered", "lost_on_air", "out_of_range", "receiver_dead", "queue_overflow")
    return t["addressed"] == sum(t[k] for k in parts) + t["in_flight"]


# -- delivered fraction vs distance --------------------------------------------------------------
DIST = (0.0, 10.0, 25.0, 40.0, 55.0, 70.0, 85.0, 100.0)  # m from the sender; 100 m = the range


@pytest.mark.parametrize("loss_model", ["rayleigh", "constant"])
def test_delivered_fraction_vs_distance_within_the_binomial_99_interval(loss_model: str) -> None:
    # Rayleigh loss, 10 % at 0 m, half of the rest lost at 40 m, n = 2, range 100 m (constant:
    # 10 % at every distance in range): receivers at each distance (one just beyond range),
    # 4,000 beacon rounds of 1 tick. The receivers are spread around the sender (not in line)
    # and 1 km apart from each other.
    from scipy.stats import binom

    radio = {
        "loss": 0.1,
        "loss_model": loss_model,
        "half_loss_distance_m": 40.0,
        "range_m": 100.0,
        "latency_s": 0.0,
        "jitter_s": 0.0,
    }
    sim, d = make_sim({"radio": radio}, seed=3)
    angles = np.arange(len(DIST) + 1) * (2 * np.pi / (len(DIST) + 1))
    dist = np.array([*DIST, 100.001])
    dist[0] = 1e-3  # not on top of the sender
    pos = np.column_stack([dist * np.cos(angles), dist * np.sin(angles), np.full(len(dist), 5)])
    pos = np.vstack([[0.0, 0.0, 5.0], pos])
    _, net = net_of(sim, d, pos)
    rounds = 4000
    steps(sim, rounds + 2)
    log = net.delivery_log()
    frames = rounds + 1  # sent at ticks 0 .. rounds + 1, each due 1 tick later
    model = LOSS_MODELS[loss_model](ChannelConfig(**radio))
    # at 40 m: 1 - 0.9 * 0.5 lost with Rayleigh, the 10 % with constant loss
    assert model.probability_one(40.0) == pytest.approx(0.55 if loss_model == "rayleigh" else 0.1)
    got = np.bincount(log[log[:, 2] == 0, 3], minlength=len(pos))
    for k, dk in enumerate(dist, start=1):
        if dk > 100.0:
            assert got[k] == 0  # beyond range: never, and counted out of range
            far = np.linalg.norm(pos - pos[k], axis=1) > 100.0  # the sender and some others
            rx = d.agent_counts(net.members[k])["radio"]["rx"]
            assert rx["out_of_range"] == (rounds + 2) * far.sum() >= rounds + 2
            continue
        p = 1.0 - model.probability_one(float(dk))
        lo, hi = binom.interval(0.99, frames, p)
        assert lo <= got[k] <= hi, (dk, got[k], frames * p)
    assert fates_add_up(d.totals()["radio"])


def test_exactly_at_range_is_in_range_and_just_beyond_is_not() -> None:
    sim, d = make_sim({"radio": {"loss": 0.0, "range_m": 50.0, "latency_s": 0.0}})
    _, net = net_of(sim, d, [(0, 0, 1), (30, 40, 1), (30, 40.000001, 1)])  # 50 m and beyond
    steps(sim, 11)  # 10 rounds delivered (the 11th is in flight)
    t = net.table()
    assert {(int(r), int(s)) for r, s in zip(t.receiver, t.sender)} == {
        (0, 1),
        (1, 0),
        (1, 2),
        (2, 1),
    }
    c = net.counts()
    assert c["sent"] == 3 * 11 and c["addressed"] == 6 * 11
    assert c["out_of_range"] == 2 * 11  # 0 <-> 2 both ways, every round
    assert c["delivered"] == 4 * 10 and c["in_flight"] == 4 and fates_add_up(c)


# -- latency --------------------------------------------------------------------------------
def test_latency_histogram_matches_latency_plus_uniform_jitter() -> None:
    # latency 10 ms = 4 ticks, jitter 7.5 ms = 0..3 ticks: each frame's delay is 4, 5, 6 or 7
    # ticks with probability 1/4, shared by all the frame's copies.
    from scipy.stats import binom

    radio = {"loss": 0.0, "latency_s": 0.01, "jitter_s": 0.0075, "range_m": 1000.0}
    sim, d = make_sim({"radio": radio}, seed=5)
    _, net = net_of(sim, d, [(0, 0, 1), (10, 0, 1), (0, 10, 1)], period_s=2 * TICK)
    steps(sim, 6000)
    log = net.delivery_log()
    delay = log[:, 1] - log[:, 0]
    assert set(np.unique(delay).tolist()) == {4, 5, 6, 7}
    log = log[log[:, 0] <= 5992]  # frames sent by then have all arrived (delay <= 7 ticks)
    delay = log[:, 1] - log[:, 0]
    frame = log[:, 0] * 10 + log[:, 2]  # (send tick, sender)
    keys, first = np.unique(frame, return_index=True)
    for k in keys[:200]:  # one delay per frame
        assert len(set(delay[frame == k].tolist())) == 1
    hist = np.bincount(delay[first], minlength=8)[4:]
    n = len(keys)
    assert n == 3 * 2997  # 3 senders, ticks 0, 2, ..., 5992
    lo, hi = binom.interval(0.99, n, 0.25)
    assert all(lo <= h <= hi for h in hist), hist
    mean = delay[first].mean()
    sd = np.sqrt(1.25 / n)  # var of U{0..3} = 1.25
    assert abs(mean - 5.5) < 3 * sd  # L + J / 2 ticks


# -- fates and deaths -----------------------------------------------------------------------
def test_dead_receivers_dead_senders_and_the_fates_add_up() -> None:
    radio = {"loss": 0.2, "latency_s": 0.01, "jitter_s": 0.0, "range_m": 30.0}
    sim, d = make_sim({"radio": radio}, seed=7)
    pos = [(0, 0, 1), (10, 0, 1), (20, 0, 1), (60, 0, 1)]
    agents, net = net_of(sim, d, pos, period_s=4 * TICK)
    steps(sim, 2)  # round at tick 0 in flight (due at tick 4)
    sim.kill(agents[1], "test")  # in flight to agent 1: receiver_dead at delivery
    steps(sim, 100)
    c, tot = net.counts(), d.totals()["radio"]
    rounds = 26  # ticks 0, 4, ..., 100
    # round 0: 4 senders; later rounds: 3 (agent 1 is dead and sends nothing)
    assert c["sent"] == 4 + 3 * (rounds - 1)
    rx1 = d.agent_counts(agents[1])["radio"]["rx"]
    # the copies of round 0 that reached agent 1 on air (from 0 and 2; lost ones are lost)
    assert rx1["receiver_dead"] == rx1["addressed"] - rx1["lost_on_air"] - rx1["out_of_range"]
    assert rx1["addressed"] == 3 and rx1["delivered"] == 0  # only round 0 addressed it
    assert rx1["receiver_dead"] >= 1
    # agent 3 at 60 m hears nobody: every frame of the others is out of range for it
    rx3 = d.agent_counts(agents[3])["radio"]["rx"]
    assert rx3["delivered"] == 0 and rx3["out_of_range"] == rx3["addressed"] == 3 + 2 * 25
    assert fates_add_up(c) and fates_add_up(tot) and c["addressed"] == tot["addressed"]
    # no entry of the table is a dead receiver's that a live behaviour would read
    t = net.table()
    assert 3 not in t.receiver.tolist() and 3 not in t.sender.tolist()
    assert set(t.sender.tolist()) <= {0, 1, 2}  # agent 1's last beacon ages out (below)
    steps(sim, 3 * 4 + 4)
    assert 1 not in net.table().sender.tolist()  # not heard for > 3 periods: forgotten


def test_table_keeps_the_latest_beacon_with_its_age() -> None:
    # jitter longer than the period: frames may arrive out of order; the table keeps the one
    # sent last, and an extra field carries the send tick.
    radio = {"loss": 0.0, "latency_s": 0.0, "jitter_s": 0.02, "range_m": 100.0}
    sim, d = make_sim({"radio": radio}, seed=11)
    _, net = net_of(sim, d, [(0, 0, 1), (5, 0, 1)], extra_fields=("sent_at",), timeout_s=1.0)
    for _ in range(200):
        sim.step()
        t = net.table()
        for e in range(len(t.sender)):
            sent_at = t.record[e, 7]
            assert t.age_s[e] == pytest.approx((sim.tick - sent_at) * TICK)
            arrived = net.delivery_log()
            mine = arrived[(arrived[:, 2] == t.sender[e]) & (arrived[:, 3] == t.receiver[e])]
            assert sent_at == mine[:, 0].max()  # the latest sent among those arrived
        assert np.array_equal(t.record[:, 6], t.sender / 10)  # the sender's own record
    log = net.delivery_log()
    assert (np.diff(log[log[:, 2] == 0, 0]) < 0).any()  # out-of-order arrivals did happen


def test_same_seed_same_fates() -> None:
    radio = {"loss": 0.3, "latency_s": 0.005, "jitter_s": 0.01, "range_m": 40.0}
    logs = []
    for _ in range(2):
        sim, d = make_sim({"radio": radio}, seed=9)
        rng = np.random.default_rng(0)
        net_of(sim, d, np.column_stack([rng.uniform(0, 80, (30, 2)), np.ones(30)]))
        steps(sim, 50)
        logs.append(d.beacon_nets[0].delivery_log())
    assert len(logs[0]) > 1000 and np.array_equal(logs[0], logs[1])


def test_a_beacon_is_kept_up_to_its_timeout_tick_and_dropped_the_tick_after() -> None:
    # Two agents 5 m apart, no loss, no latency, a beacon every 40 ticks, timeout 10 ticks.
    # The round sent at tick 0 is in the table with age 2 .. 10 ticks (exactly the timeout)
    # and gone at age 11, until the next round arrives at tick 42. Reading the table only now
    # and then changes nothing: an entry older than the timeout is never returned.
    radio = {"loss": 0.0, "latency_s": 0.0, "jitter_s": 0.0, "range_m": 100.0}
    sim, d = make_sim({"radio": radio}, seed=1)
    _, net = net_of(sim, d, [(0, 0, 1), (5, 0, 1)], period_s=40 * TICK, timeout_s=10 * TICK)
    assert net.timeout_ticks == 10 and net.period_ticks == 40
    ages: dict[int, list[float]] = {}
    for _ in range(43):
        sim.step()
        t = net.table()
        assert np.array_equal(t.receiver, t.sender[::-1]) or len(t.sender) == 0
        ages[sim.tick] = (t.age_s / TICK).round(9).tolist()
    assert ages[2] == [2.0, 2.0] and ages[9] == [9.0, 9.0]
    assert ages[10] == [10.0, 10.0]  # age == timeout: still heard
    assert ages[11] == [] and all(ages[k] == [] for k in range(11, 42))  # one tick past: gone
    assert ages[42] == [2.0, 2.0]  # the next round
    # a table read first at the timeout tick, and one read first a tick past it
    for last, expect in ((10, [10.0, 10.0]), (11, [])):
        sim, d = make_sim({"radio": radio}, seed=1)
        _, net = net_of(sim, d, [(0, 0, 1), (5, 0, 1)], period_s=40 * TICK, timeout_s=10 * TICK)
        steps(sim, last)
        assert (net.table().age_s / TICK).round(9).tolist() == expect, last


def test_compiled_fates_count_as_the_numpy_path_does() -> None:
    # the compiled loss and delivery passes run unless links are watched (then numpy's masks
    # and bincounts): the same fates per agent, the same table, the same stream, with losses,
    # out-of-range copies and a receiver dying while copies to it are in flight
    radio = {"loss": 0.3, "latency_s": 0.01, "jitter_s": 0.0, "range_m": 30.0}
    runs = []
    for watch in (False, True):
        sim, d = make_sim({"radio": radio}, seed=11)
        pos = [(0, 0, 1), (10, 0, 1), (20, 0, 1), (25, 5, 1), (60, 0, 1)]
        agents, net = net_of(sim, d, pos, period_s=4 * TICK)
        if watch:
            d.watch_links(1000)
        steps(sim, 2)
        sim.kill(agents[1], "test")
        steps(sim, 60)
        t = net.table()
        per_agent = [d.agent_counts(a)["radio"] for a in agents]
        runs.append((net.counts(), per_agent, t, net.delivery_log(), sim.rng.comms.random()))
    (c0, a0, t0, log0, r0), (c1, a1, t1, log1, r1) = runs
    assert c0 == c1 and a0 == a1 and r0 == r1
    assert c0["lost_on_air"] > 0 and c0["receiver_dead"] > 0 and c0["out_of_range"] > 0
    assert np.array_equal(log0, log1)
    for name in ("indptr", "receiver", "sender", "sender_id", "age_s", "record"):
        assert np.array_equal(getattr(t0, name), getattr(t1, name)), name
