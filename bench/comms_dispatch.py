"""Benchmark: cost of the message dispatcher per tick as the swarm grows.

N agents in a 1 km x 1 km area (z 10..60 m), moving at 10 m/s, each broadcasting on a 100 m
radio at 10 Hz (phases staggered over the 40 ticks of a 0.1 s period, so every tick carries
N / 40 broadcasts). Measured: the wall-clock time of `send` calls plus `deliver(tick)` (fate
decision with the KD-tree range queries, then hand-over into the receive queues), averaged over
whole broadcast periods (median period), in CPU time of this process (`time.process_time`), so
that other processes sharing the machine disturb the figures less. Receivers drain their queues
outside the timed section.

At a fixed area the number of neighbours grows with N, so the work that must be done (copies to
hand over) grows as N x neighbours ~ N^2 / area; the dispatcher's cost should track that work
(constant cost per copy) rather than the N^2 pairs a scan of all agents per message examines. A
second series keeps the density of N = 1,000 in 1 km^2 (area grows with N, ~31 neighbours), where
the cost should grow about as N log N (fitted exponent near 1).

Run:  python bench/comms_dispatch.py  (about a minute); writes bench/results/comms_dispatch.json.

Small swarms (`--small`, about 30 s): 10 and 30 agents in a 40 m flock with a base station, a
60 m radio and the long-range link, every agent broadcasting its heartbeat at 5 Hz on the radio
and a report at 1 Hz to the base station (the reference flocking scenario's traffic: one or two
frames per tick). The same traffic is dispatched by the plain-Python small-batch path
(core/comms/small.py) and by the vectorised path, alternated over rounds; printed: CPU per
tick of each (median of the rounds) and their ratio. Writes bench/results/comms_dispatch_small.json.

Where the small-batch path stops paying (`--crossover`, about 5 minutes): M members, k
broadcasts per tick on a 60 m radio, in a 40 m square (every pair in range: the worst case of
the plain path, whose cost grows with the copies) or a 1 km one (few neighbours); CPU per tick
of both paths (best of 3 runs of 150 ticks) and their ratio, for sends x members up to 4,800.
This sets `SMALL_PAIRS` (core/comms/small.py).

A whole scenario (`--scenario FILE [--seconds S] [key=value ...]`): the run's CPU time and the
CPU time spent in `MessageDispatcher.deliver` (thread CPU around each call), e.g.
`python bench/comms_dispatch.py --scenario configs/flocking_coverage.toml --seconds 60`.
"""

from __future__ import annotations

import json
import math
import platform
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

import skyswarm.core.comms.dispatcher as dispatcher_module
from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.comms.channels import CommsConfig
from skyswarm.core.comms.dispatcher import MessageDispatcher, attach_comms
from skyswarm.core.comms.fates import neighbours_within
from skyswarm.core.config import SimulationConfig
from skyswarm.core.simulator import Simulator

RANGE_M = 100.0  # m
PERIOD_TICKS = 40  # 10 Hz at 2.5 ms
SPEED_MPS = 10.0  # m/s
RESULTS = Path(__file__).resolve().parent / "results" / "comms_dispatch.json"


def build(n: int, side_m: float, seed: int = 0) -> tuple[Simulator, MessageDispatcher, list]:
    """A simulator with n agents whose state rows are set by hand (no Bullet bodies: only the
    dispatcher is measured, positions are gathered exactly as for any physical agent)."""
    sim = Simulator(SimulationConfig(seed=seed))
    chan = {"range_m": RANGE_M, "loss": 0.01, "jitter_s": 0.0025, "queue_capacity": 4096}
    d = attach_comms(sim, CommsConfig.from_dict({"channels": {"radio": chan}}))
    rng = np.random.default_rng(seed)
    slots = sim.world.state.add(n)
    pos = np.column_stack([rng.uniform(0, side_m, (n, 2)), rng.uniform(10, 60, n)])
    sim.world.state.position[slots] = pos
    agents = [PhysicalAgent(sim, i + 1, int(s)) for i, s in enumerate(slots)]
    return sim, d, agents


def measure(n: int, side_m: float, periods: int) -> dict[str, float]:
    sim, d, agents = build(n, side_m)
    rng = np.random.default_rng(1)
    slots = np.array([a.slot for a in agents])
    heading = rng.uniform(0, 2 * math.pi, n)
    step = SPEED_MPS * sim.world.tick_s * np.column_stack([np.cos(heading), np.sin(heading)])
    groups = [agents[k::PERIOD_TICKS] for k in range(PERIOD_TICKS)]
    warmup, ticks = PERIOD_TICKS, periods * PERIOD_TICKS
    period_s: list[float] = []  # time spent in each broadcast period (40 ticks)
    copies0 = 0
    clock = time.process_time
    for tick in range(warmup + ticks):
        if tick == warmup:
            copies0 = in_range(d)
        if tick >= warmup and tick % PERIOD_TICKS == 0:
            period_s.append(0.0)
        st = sim.world.state.position
        st[slots, :2] = (st[slots, :2] + step) % side_m  # move, wrapping round the area
        group = groups[tick % PERIOD_TICKS]
        t0 = clock()
        for a in group:
            a.transceiver.broadcast(tick)
        d.deliver(tick)
        if tick >= warmup:
            period_s[-1] += clock() - t0
        for a in groups[(tick + 1) % PERIOD_TICKS]:
            a.transceiver.receive()
        sim.world.tick += 1  # no physics here: the world only counts ticks
    copies = in_range(d) - copies0
    brute = min(brute_force_ms(sim, d, len(groups[0])) for _ in range(3))
    index = min(index_ms(d, len(groups[0])) for _ in range(3))
    sim.close()
    # the median period, not the mean: robust to other processes sharing the machine
    per_tick_ms = 1e3 * float(np.median(period_s)) / PERIOD_TICKS
    return {
        "n": n,
        "side_m": side_m,
        "neighbours": copies / (ticks / PERIOD_TICKS * n),
        "copies_per_tick": copies / ticks,
        "ms_per_tick": per_tick_ms,
        "us_per_copy": 1e3 * per_tick_ms / max(1.0, copies / ticks),
        "index_range_ms_per_tick": index,
        "brute_force_ms_per_tick": brute,
    }


def in_range(d: MessageDispatcher) -> int:
    """Copies handed to a receiver in range so far: a broadcast addresses every other agent,
    and those beyond the range are counted out_of_range (core/comms/fates.py)."""
    t = d.totals()["radio"]
    return t["addressed"] - t["out_of_range"]


def brute_force_ms(sim: Simulator, d: MessageDispatcher, senders: int) -> float:
    """Time of the range part alone done without an index: one tick's broadcasters against
    every agent (a vectorised numpy scan, O(senders x N) = O(N^2 / 40) per tick)."""
    pos = d.positions()
    origins = pos[:senders]
    t0 = time.process_time()
    for chunk in np.array_split(np.arange(senders), max(1, senders // 25)):
        dist = np.linalg.norm(pos[None, :, :] - origins[chunk, None, :], axis=2)
        np.nonzero(dist <= RANGE_M)
    return 1e3 * (time.process_time() - t0)


def index_ms(d: MessageDispatcher, senders: int) -> float:
    """Time of the range part alone through the KD-tree (build + queries), for comparison."""
    pos = d.positions()
    t0 = time.process_time()
    neighbours_within(pos, np.arange(len(pos)), pos[:senders], RANGE_M)
    return 1e3 * (time.process_time() - t0)


def slope(x: list[float], y: list[float]) -> float:
    """Least-squares exponent b of y ~ a x^b."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def series(name: str, sizes: tuple[int, ...], side_of, periods_of) -> dict:
    rows = [measure(n, side_of(n), periods_of(n)) for n in sizes]
    for prev, row in zip([None, *rows], rows):
        row["exponent_vs_prev"] = (
            None
            if prev is None
            else math.log(row["ms_per_tick"] / prev["ms_per_tick"]) / math.log(row["n"] / prev["n"])
        )
    ns = [r["n"] for r in rows]
    cost = [r["ms_per_tick"] for r in rows]
    work = [r["n"] * r["neighbours"] for r in rows]
    nlogn = [n * math.log(n) for n in ns]
    return {
        "series": name,
        "rows": rows,
        "fit_exponent_cost_vs_n": slope(ns, cost),
        "fit_exponent_cost_vs_n_x_neighbours": slope(work, cost),
        "fit_exponent_cost_vs_n_log_n": slope(nlogn, cost),
        "fit_exponent_index_range_vs_n": slope(ns, [r["index_range_ms_per_tick"] for r in rows]),
        "fit_exponent_brute_force_vs_n": slope(ns, [r["brute_force_ms_per_tick"] for r in rows]),
    }


def print_series(s: dict) -> None:
    print(f"\n{s['series']}")
    head = ("N", "side m", "neighb.", "copies/tick", "ms/tick", "us/copy", "exp vs prev")
    head += ("range: KD-tree ms", "range: N^2 scan ms")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in s["rows"]:
        exp = "-" if r["exponent_vs_prev"] is None else f"{r['exponent_vs_prev']:.2f}"
        print(
            f"| {r['n']} | {r['side_m']:.0f} | {r['neighbours']:.1f} | {r['copies_per_tick']:.0f}"
            f" | {r['ms_per_tick']:.3f} | {r['us_per_copy']:.2f} | {exp}"
            f" | {r['index_range_ms_per_tick']:.2f} | {r['brute_force_ms_per_tick']:.2f} |"
        )
    print(
        f"fitted exponent of cost vs N: {s['fit_exponent_cost_vs_n']:.2f}; "
        f"vs N x neighbours: {s['fit_exponent_cost_vs_n_x_neighbours']:.2f}; "
        f"vs N log N: {s['fit_exponent_cost_vs_n_log_n']:.2f}; "
        f"range part vs N: KD-tree {s['fit_exponent_index_range_vs_n']:.2f}, "
        f"N^2 scan {s['fit_exponent_brute_force_vs_n']:.2f}"
    )


@contextmanager
def decided_by(is_small, hand_over: int):
    """The dispatcher's path choice (`is_small`, SMALL_HAND_OVER) set for a measurement, then
    put back."""
    saved = dispatcher_module.is_small, dispatcher_module.SMALL_HAND_OVER
    dispatcher_module.is_small, dispatcher_module.SMALL_HAND_OVER = is_small, hand_over
    try:
        yield
    finally:
        dispatcher_module.is_small, dispatcher_module.SMALL_HAND_OVER = saved


def small_swarm(n: int, small: bool, ticks: int = 4000, seed: int = 0) -> float:
    """CPU seconds per tick of sending and dispatching a small flock's traffic (module
    docstring), on the small-batch path or (`small=False`) the vectorised one."""
    default = dispatcher_module.is_small, dispatcher_module.SMALL_HAND_OVER
    with decided_by(*(default if small else (lambda sends, members: False, -1))):
        sim = Simulator(SimulationConfig(seed=seed))
        chan = {"range_m": 60.0, "loss": 0.01, "jitter_s": 0.0025}
        cfg = {"channels": {"radio": chan}, "base_stations": [{"id": 0, "position": [0, -10, 2]}]}
        d = attach_comms(sim, CommsConfig.from_dict(cfg))
        rng = np.random.default_rng(seed)
        slots = sim.world.state.add(n)
        centre = np.array([0.0, 0.0, 6.0])
        offsets = np.column_stack([rng.uniform(-20, 20, (n, 2)), rng.uniform(-1, 1, n)])
        agents = [PhysicalAgent(sim, i + 1, int(s)) for i, s in enumerate(slots)]
        for a in agents + d.base_stations:
            a.transceiver.on_message = lambda m: None  # drained at once, as missions do
        velocity = np.array([3.0, 1.0, 0.0]) * sim.world.tick_s
        cpu = 0.0
        for tick in range(ticks):
            centre += velocity
            sim.world.state.position[slots] = centre + offsets
            beat = [a for i, a in enumerate(agents) if (tick + 2 * i) % 80 == 0]  # 5 Hz
            report = [a for i, a in enumerate(agents) if (tick + 13 * i) % 400 == 0]  # 1 Hz
            t0 = time.process_time()
            for a in beat:
                a.transceiver.broadcast(("hb", tick))
            for a in report:
                a.transceiver.broadcast(("report", tick), channel="long_range")
            d.deliver(tick)
            cpu += time.process_time() - t0
            sim.world.tick += 1
        sim.close()
        return cpu / ticks


def batch_cost(members: int, sends: int, small: bool, side_m: float, ticks: int = 150) -> float:
    """CPU seconds per tick of `sends` broadcasts among `members` agents in a side_m square
    (z 5..7 m), decided by the small-batch path or (`small=False`) the vectorised one."""
    with decided_by(lambda s, m: small, 10**9 if small else -1):
        sim = Simulator(SimulationConfig(seed=0))
        chan = {"range_m": 60.0, "loss": 0.01, "jitter_s": 0.0025, "queue_capacity": 4096}
        d = attach_comms(sim, CommsConfig.from_dict({"channels": {"radio": chan}}))
        rng = np.random.default_rng(0)
        slots = sim.world.state.add(members)
        xy = rng.uniform(0, side_m, (members, 2))
        sim.world.state.position[slots] = np.column_stack([xy, rng.uniform(5, 7, members)])
        agents = [PhysicalAgent(sim, i + 1, int(s)) for i, s in enumerate(slots)]
        for a in agents:
            a.transceiver.on_message = lambda m: None
        cpu = 0.0
        for tick in range(ticks):
            t0 = time.process_time()
            for j in range(sends):
                agents[(tick * sends + j) % members].transceiver.broadcast(tick)
            d.deliver(tick)
            cpu += time.process_time() - t0
            sim.world.tick += 1
        sim.close()
        return cpu / ticks


def main_crossover() -> None:
    for members, side in ((32, 40.0), (100, 40.0), (100, 1000.0), (300, 1000.0)):
        for sends in (1, 2, 4, 8, 16, 32):
            if sends * members > 4800:
                continue
            p = min(batch_cost(members, sends, True, side) for _ in range(3))
            v = min(batch_cost(members, sends, False, side) for _ in range(3))
            print(
                f"members {members}, {side:.0f} m square, {sends} sends ({sends * members} pairs):"
                f" small-batch {1e6 * p:.0f} us/tick, vectorised {1e6 * v:.0f}, ratio {p / v:.2f}",
                flush=True,
            )


def scenario_cost(file: str, seconds: float, overrides: list[str]) -> dict[str, float]:
    """CPU seconds of a scenario's run and of its dispatcher's `deliver` calls."""
    from skyswarm.core.config import load_scenario

    scenario = load_scenario(file, [*overrides, f"simulation.duration_s={seconds}"])
    sim = Simulator.from_scenario(scenario)
    spent = [0.0]
    deliver = MessageDispatcher.deliver

    def timed(self: MessageDispatcher, tick: int) -> None:
        t0 = time.thread_time()
        deliver(self, tick)
        spent[0] += time.thread_time() - t0

    MessageDispatcher.deliver = timed  # type: ignore[method-assign]
    try:
        t0 = time.process_time()
        sim.run()
        total = time.process_time() - t0
    finally:
        MessageDispatcher.deliver = deliver  # type: ignore[method-assign]
        sim.close()
    return {"run_cpu_s": total, "deliver_cpu_s": spent[0]}


def main_scenario(args: list[str]) -> None:
    file = args[args.index("--scenario") + 1]
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 60.0
    overrides = [a for a in args if "=" in a and not a.startswith("--")]
    r = scenario_cost(file, seconds, overrides)
    share = 100 * r["deliver_cpu_s"] / r["run_cpu_s"]
    print(f"run CPU {r['run_cpu_s']:.2f} s, deliver CPU {r['deliver_cpu_s']:.2f} s ({share:.1f} %)")


def main_small(rounds: int = 5) -> None:
    rows = []
    small_swarm(10, True, 400)  # warm-up
    for n in (10, 30):
        plain: list[float] = []
        vector: list[float] = []
        for _ in range(rounds):  # alternated: the machine's load hits both alike
            plain.append(small_swarm(n, True))
            vector.append(small_swarm(n, False))
        p, v = float(np.median(plain)), float(np.median(vector))
        rows.append({"n": n, "plain_us_per_tick": 1e6 * p, "vector_us_per_tick": 1e6 * v})
        print(
            f"N={n}: small-batch path {1e6 * p:.1f} us/tick, vectorised {1e6 * v:.1f} us/tick,"
            f" ratio {p / v:.2f} (rounds: plain {[round(1e6 * x, 1) for x in plain]},"
            f" vectorised {[round(1e6 * x, 1) for x in vector]})"
        )
    out = RESULTS.with_name("comms_dispatch_small.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "comms_dispatch_small", "rows": rows}, indent=2))
    print(f"wrote {out}")


def main() -> None:
    sizes = (100, 1000, 5000)
    periods = {100: 40, 1000: 20, 5000: 6}
    measure(300, 1000.0, 2)  # warm-up: first-use imports and caches are not part of the figures
    fixed = series("fixed area 1 km^2, 100 m range, 10 Hz", sizes, lambda n: 1000.0, periods.get)
    print_series(fixed)
    dense = series(
        "fixed density (1,000 per km^2), 100 m range, 10 Hz",
        sizes,
        lambda n: 1000.0 * math.sqrt(n / 1000),
        periods.get,
    )
    print_series(dense)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = {
        "benchmark": "comms_dispatch",
        "tick_s": 0.0025,
        "broadcast_hz": 10,
        "range_m": RANGE_M,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "series": [fixed, dense],
    }
    RESULTS.write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    if "--scenario" in sys.argv[1:]:
        main_scenario(sys.argv[1:])
    elif "--small" in sys.argv[1:]:
        main_small()
    elif "--crossover" in sys.argv[1:]:
        main_crossover()
    else:
        main()
