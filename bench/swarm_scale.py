"""Benchmark: swarm-scale behaviour (issue 14) — the boids full stack against the hover stack,
side by side in one process, and the fast backend's boids curve with a per-phase profile.

Every variant is a scenario run as `skyswarm run` builds it (`Simulator.from_scenario` with a
results directory: mission, collision monitor, fault injector, recorder, timeline):
- hover:  configs/hover.toml with N agents (5 m grid): 400 Hz control, the hover metrics;
- boids:  configs/boids.toml with N agents: 10 Hz state beacons (core/comms/beacons.py), the 10 Hz
          swarm-level steering (uav/group.py), 20 Hz flock metrics.
Ratios compare boids and hover at the same N and backend, measured in interleaved rounds (one
chunk of each in turn, median per variant), so both see the same machine load. For N >= 1,000
the radio range is 30 m (boids perceive 25 m): with the shipped 100 m over a 5 m grid every
UAV would hear ~1,000 others, 1 M beacon copies per beacon tick.

The profile splits the wall time of a fast-backend run by phase (docs/architecture.md, The
tick) and, inside phase 2, by task name. `--rows 1000:bullet` measures only those side-by-side
rows (no fast curve, no profile; repeat it to see the noise); `--phases` adds, for each of those
rows, the per-phase profile of both stacks in interleaved rounds, so the boids stack's extra
time can be told apart (its own phases vs the physics step and state read).

`--dense [K ...]` measures only the dense-radio table of issue 31: fast hover against fast boids
at 1,000 UAVs with the shipped 100 m radio, exact and with each neighbour table size K, in
interleaved rounds, each boids variant's ratio to hover with its spread over the rounds
(bench/results/swarm_scale_dense.json).

    python bench/swarm_scale.py [--quick] [--rows N:PHYSICS ...] [--phases] [--rounds R]
    python bench/swarm_scale.py --dense 16 32 [--rounds R]
    python bench/swarm_scale.py --bar 1000 [--rounds R] [--by-run]

`--bar N` measures only the hover stack (what `skyswarm run`'s progress bar times) at N UAVs on
the fast engine against Bullet (bench/results/swarm_scale_bar.json). Both `--dense` and `--bar`
give each ratio per round by wall clock and by the process's CPU time (a loaded machine
disturbs the latter less), median, min and max.

`--by-run` advances every simulator by `Simulator.run` instead of stepping it by hand, as
`skyswarm run` does: its default `[simulation] threads = "auto"` then chooses the thread count
on both sides (core/thread_tuner.py); by hand they run on one thread. Each chunk's wall time is
the run's own clock (`Simulator.wall_s`, without run()'s kernel check before it), in rounds of
2 s simulated instead of 0.25 s; read the wall-clock ratios: the CPU ones add up both threads.

Prints tables and writes bench/results/swarm_scale.json. Not a test: numbers depend on the host.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "swarm_scale.json"


def build(
    kind: str,
    n: int,
    physics: str,
    tmp: Path,
    radio: tuple[float, int] | None = None,
    extra: tuple[str, ...] = (),
) -> Simulator:
    """A scenario run of configs/KIND.toml with n agents; `radio` = (range m, neighbour_table K)
    for boids (default: 30 m from 1,000 agents, else the shipped 100 m; K = 0, exact, which
    the rows measured before the scenario shipped K = 16 and still measure: the slower
    mode); `extra`: more overrides (bench/threads.py: `simulation.threads`)."""
    over = [
        f"agents.count={n}",
        "agents.spacing_m=5.0",
        f'simulation.physics="{physics}"',
        "simulation.duration_s=3600.0",
    ]
    if kind == "boids":
        range_m, k = radio or ((30.0, 0) if n >= 1000 else (100.0, 0))
        over += [
            f"comms.channels.radio.range_m={range_m}",
            f"comms.channels.radio.neighbour_table={k}",
        ]
    over += extra
    tag = f"{kind}-{physics}-{n}-{radio}-{'-'.join(extra)}".replace(" ", "").replace('"', "")
    sc = load_scenario(ROOT / "configs" / f"{kind}.toml", over)
    return Simulator.from_scenario(sc, results_dir=tmp / tag)


def dense_radio(n: int, ks: list[int], seconds: float, rounds: int, tmp: Path) -> dict:
    """Fast hover against fast boids with the shipped 100 m radio, exact and with each
    neighbour table size K, in interleaved rounds: per variant the median real-time factor,
    per boids variant the ratio to hover in each round (median, min, max)."""
    sims = {"hover": build("hover", n, "fast", tmp)}
    for k in ks:
        sims["exact" if k == 0 else f"K={k}"] = build("boids", n, "fast", tmp, (100.0, k))
    ticks = max(40, round(seconds / 0.0025))
    row: dict = {"n": n, "range_m": 100.0, "ticks_per_round": ticks, "rounds": rounds}
    row.update(interleaved(sims, "hover", ticks, rounds, "ratio_to_hover"))
    for sim in sims.values():
        sim.close()
    return row


def interleaved(sims: dict[str, Simulator], base: str, ticks: int, rounds: int, key: str) -> dict:
    """Each sim `ticks` ticks in turn, `rounds` times (after an 80-tick warm-up; not closed):
    per variant the median real-time factor and, per round, base's time per tick / the
    variant's by wall clock (`key`: median, min, max) and by the process's CPU time
    (`key` + "_cpu"), which a loaded machine disturbs less (one thread: the default)."""
    for sim in sims.values():
        chunk(sim, 80)
    wall: dict[str, list[float]] = {k: [] for k in sims}
    cpu: dict[str, list[float]] = {k: [] for k in sims}
    for _ in range(rounds):
        for name, sim in sims.items():
            c0 = time.process_time()
            wall[name].append(chunk(sim, ticks))
            cpu[name].append((time.process_time() - c0) / ticks)
    out = {}
    for name in sims:
        by_wall = [b / t for b, t in zip(wall[base], wall[name], strict=True)]
        by_cpu = [b / t for b, t in zip(cpu[base], cpu[name], strict=True)]
        out[name] = {
            "real_time_factor": 0.0025 / float(np.median(wall[name])),
            "cpu_real_time_factor": 0.0025 / float(np.median(cpu[name])),
            key: [float(np.median(by_wall)), min(by_wall), max(by_wall)],
            f"{key}_cpu": [float(np.median(by_cpu)), min(by_cpu), max(by_cpu)],
            "s_per_tick": float(np.median(wall[name])),
            "deaths": len(sims[name].deaths),
        }
    return out


def fast_over_bullet(n: int, seconds: float, rounds: int, tmp: Path) -> dict:
    """The hover scenario stack as `skyswarm run` builds it (the progress bar's real-time
    factor), fast engine against Bullet at n UAVs, in interleaved rounds: per round Bullet's
    time per tick / the fast engine's (above 1: fast is faster)."""
    sims = {"bullet": build("hover", n, "bullet", tmp), "fast": build("hover", n, "fast", tmp)}
    ticks = max(40, round(seconds / 0.0025))
    row: dict = {"n": n, "ticks_per_round": ticks, "rounds": rounds}
    row.update(interleaved(sims, "bullet", ticks, rounds, "speed_up_over_bullet"))
    for sim in sims.values():
        sim.close()
    return row


def print_versus(row: dict, key: str, title: str) -> None:
    print(f"\n{title} ({row['rounds']} interleaved rounds of {row['ticks_per_round']} ticks)")
    print(
        f"{'variant':<10} {'RTF':>7} {'CPU RTF':>8} {'ratio: median':>14} {'min':>6} {'max':>6} "
        f"{'by CPU: median':>15} {'min':>6} {'max':>6}"
    )
    for name, v in row.items():
        if isinstance(v, dict):
            med, lo, hi = v[key]
            cmed, clo, chi = v[f"{key}_cpu"]
            print(
                f"{name:<10} {v['real_time_factor']:>7.2f} {v['cpu_real_time_factor']:>8.2f} "
                f"{med:>14.2f} {lo:>6.2f} {hi:>6.2f} {cmed:>15.2f} {clo:>6.2f} {chi:>6.2f}"
            )


def print_dense(row: dict) -> None:
    title = f"fast engine, N = {row['n']:,}, boids with a 100 m radio against hover"
    print_versus(row, "ratio_to_hover", title)


BY_RUN = False  # --by-run: chunks by Simulator.run, as `skyswarm run` flies


def chunk(sim: Simulator, ticks: int) -> float:
    """Wall seconds per tick of `ticks` more ticks."""
    if BY_RUN:
        before = sim.wall_s
        sim.run(until_s=(sim.world.tick + ticks) * sim.world.tick_s)
        return (sim.wall_s - before) / ticks
    step = sim.step
    t0 = time.perf_counter()
    for _ in range(ticks):
        step()
    return (time.perf_counter() - t0) / ticks


def side_by_side(n: int, physics: str, seconds: float, rounds: int, tmp: Path) -> dict:
    sims = {k: build(k, n, physics, tmp) for k in ("hover", "boids")}
    ticks = max(20, round(seconds / 0.0025))
    row: dict = {"n": n, "physics": physics, "ticks_per_round": ticks, "rounds": rounds}
    row.update(interleaved(sims, "hover", ticks, rounds, "ratio_to_hover"))
    for k in sims:
        row[k]["agent_steps_per_s"] = n / row[k]["s_per_tick"]
    row["ratio"] = row["boids"]["agent_steps_per_s"] / row["hover"]["agent_steps_per_s"]
    row["boids_polarisation"] = float(sims["boids"].mission.polarisation)
    for sim in sims.values():
        sim.close()
    return row


def profiled(sim: Simulator, ticks: int) -> dict[str, float]:
    """Run `ticks` ticks phase by phase (Simulator.step's order) with a clock on each phase;
    seconds per tick by phase, the behaviour phase split by task name."""
    acc: dict[str, float] = defaultdict(float)
    clock = time.perf_counter
    world = sim.world
    names = {}
    for hook in sim.post_tick_listeners:
        owner = getattr(hook, "__self__", hook)
        names[id(hook)] = f"6 monitors: {type(owner).__name__}"
    before = {name: st["runs"] * st["mean_ms"] for name, st in sim.tasks.summary().items()}
    for _ in range(ticks):
        t0 = clock()
        sim.dispatcher.deliver(world.tick)
        t1 = clock()
        sim.tasks.run_due(world.tick)
        for hook in sim.pre_tick_listeners:
            hook(world)
        t2 = clock()
        for hook in sim.controllers:
            hook(sim)
        t3 = clock()
        for hook in sim.environment_forces:
            hook(sim)
        world.step_physics()
        t4 = clock()
        world.read_state()
        t5 = clock()
        acc["1 comms: beacon and message delivery"] += t1 - t0
        acc["2 behaviour (tasks, pre-tick)"] += t2 - t1
        acc["3 control: compiled flight kernel"] += t3 - t2
        acc["4 environment + physics step"] += t4 - t3
        acc["5 state read"] += t5 - t4
        for hook in sim.post_tick_listeners:
            t = clock()
            hook(world)
            acc[names.get(id(hook), "6 monitors: other")] += clock() - t
    after = sim.tasks.summary()
    for name, st in after.items():
        spent = (st["runs"] * st["mean_ms"] - before.get(name, 0.0)) / 1e3
        acc[f"  2 task {name}"] += spent
    return {k: v / ticks for k, v in acc.items()}


def phases_side_by_side(n: int, physics: str, rounds: int, tmp: Path) -> dict:
    """Per-phase seconds per tick of both stacks (`profiled`), in interleaved rounds of 40
    ticks (one behaviour period) after the same warm-up as `side_by_side`; medians by phase."""
    sims = {k: build(k, n, physics, tmp) for k in ("hover", "boids")}
    for sim in sims.values():
        chunk(sim, 80)
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in sims}
    for _ in range(rounds):
        for k, sim in sims.items():
            runs[k].append(profiled(sim, 40))
    out = {}
    for k, rs in runs.items():
        names = sorted({name for r in rs for name in r})
        out[k] = {name: float(np.median([r.get(name, 0.0) for r in rs])) for name in names}
    for sim in sims.values():
        sim.close()
    return out


def print_phases(n: int, physics: str, ph: dict) -> None:
    print(f"\nphases, N = {n:,} on {physics}: ms per tick (medians of interleaved rounds)")
    print(f"{'phase':<46} {'hover':>8} {'boids':>8} {'extra':>8}")
    names = sorted(set(ph["hover"]) | set(ph["boids"]), key=lambda k: k.lstrip())
    for name in names:
        h, b = ph["hover"].get(name, 0.0), ph["boids"].get(name, 0.0)
        print(f"{name:<46} {h * 1e3:>8.3f} {b * 1e3:>8.3f} {(b - h) * 1e3:>+8.3f}")
    tot = {k: sum(v for name, v in ph[k].items() if not name.startswith("  ")) for k in ph}
    print(
        f"{'total':<46} {tot['hover'] * 1e3:>8.3f} {tot['boids'] * 1e3:>8.3f} "
        f"{(tot['boids'] - tot['hover']) * 1e3:>+8.3f}  (ratio {tot['hover'] / tot['boids']:.2f})"
    )


def print_row(n: int, physics: str, row: dict) -> None:
    _, lo, hi = row["boids"]["ratio_to_hover"]
    by_cpu = row["boids"]["ratio_to_hover_cpu"][0]
    print(
        f"{n:>6} {physics:>7} {row['hover']['agent_steps_per_s']:>10.0f} "
        f"{row['boids']['agent_steps_per_s']:>10.0f} {row['ratio']:>6.2f} "
        f"{row['boids_polarisation']:>6.2f}  (rounds {lo:.2f}-{hi:.2f}; by CPU {by_cpu:.2f}; "
        f"RTF hover {row['hover']['real_time_factor']:.2f}, boids "
        f"{row['boids']['real_time_factor']:.2f}; CPU RTF hover "
        f"{row['hover']['cpu_real_time_factor']:.2f}, boids "
        f"{row['boids']['cpu_real_time_factor']:.2f})"
    )


def rows_only(args: argparse.Namespace, rounds: int, out: dict, tmp: Path) -> None:
    """Only the side-by-side rows named by --rows (and their phase tables with --phases)."""
    for spec in args.rows:
        n_text, _, physics = spec.partition(":")
        n, physics = int(n_text), physics or "bullet"
        secs = 0.5 if n < 1000 else 0.25
        row = side_by_side(n, physics, secs, rounds, tmp)
        out["side_by_side"].append(row)
        print_row(n, physics, row)
        if args.phases:
            ph = phases_side_by_side(n, physics, 2 * rounds, tmp)
            out.setdefault("phases", []).append({"n": n, "physics": physics, "s_per_tick": ph})
            print_phases(n, physics, ph)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds, no N = 10,000")
    ap.add_argument("--rows", nargs="+", metavar="N:PHYSICS", help="only these side-by-side rows")
    ap.add_argument("--phases", action="store_true", help="with --rows: per-phase tables")
    ap.add_argument("--rounds", type=int, help="interleaved rounds per row (default 5, 3 quick)")
    ap.add_argument(
        "--dense",
        type=int,
        nargs="*",
        metavar="K",
        help="only the dense-radio table: fast hover vs boids at 1,000 UAVs, 100 m radio, "
        "exact and with each neighbour table size K (default 16 32)",
    )
    ap.add_argument(
        "--bar",
        type=int,
        metavar="N",
        help="only the hover stack (what `skyswarm run`'s progress bar times) at N UAVs, "
        "fast engine against Bullet",
    )
    ap.add_argument(
        "--by-run",
        action="store_true",
        help="advance by Simulator.run as `skyswarm run` does (threads 'auto'), not by hand",
    )
    args = ap.parse_args()
    global BY_RUN
    BY_RUN = args.by_run
    rounds = args.rounds or (3 if args.quick else 5)
    load0 = os.getloadavg()
    out: dict = {
        "meta": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_average_start": load0,
            "by_run": BY_RUN,
        },
        "side_by_side": [],
        "fast_curve": [],
    }
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("boids full stack vs hover stack, same N and backend (agent-steps/s, ratio)")
        print(f"{'N':>6} {'physics':>7} {'hover':>10} {'boids':>10} {'ratio':>6} {'polar.':>6}")
        if args.dense is not None:
            row = dense_radio(1000, [0, *(args.dense or [16, 32])], 0.5, rounds, tmp)
            out["dense_radio"] = row
            print_dense(row)
            OUT.with_name("swarm_scale_dense.json").write_text(json.dumps(out, indent=2))
            print(f"load average: start {load0[0]:.2f}, end {os.getloadavg()[0]:.2f}")
            return
        if args.bar:
            # by run(): rounds of 2 s, so "auto"'s probes (4 windows of 80 ticks, then a hold
            # of 1,600 ticks and more) are a small part of each, as in a run of minutes
            row = fast_over_bullet(args.bar, 2.0 if BY_RUN else 0.25, rounds, tmp)
            out["fast_over_bullet"] = row
            how = ", by Simulator.run" if BY_RUN else ""
            print_versus(
                row, "speed_up_over_bullet", f"hover stack, N = {args.bar:,}: fast / Bullet{how}"
            )
            OUT.with_name("swarm_scale_bar.json").write_text(json.dumps(out, indent=2))
            print(f"load average: start {load0[0]:.2f}, end {os.getloadavg()[0]:.2f}")
            return
        if args.rows:
            rows_only(args, rounds, out, tmp)
            print(f"load average: start {load0[0]:.2f}, end {os.getloadavg()[0]:.2f}")
            return  # a partial run: the JSON of the full run is kept
        for n, physics, secs in ((100, "bullet", 0.5), (1000, "bullet", 0.25)):
            row = side_by_side(n, physics, secs, rounds, tmp)
            out["side_by_side"].append(row)
            print_row(n, physics, row)
        print("\nfast backend, boids full stack: real-time factor (x real time)")
        print(f"{'N':>6} {'boids RTF':>10} {'hover RTF':>10} {'ratio':>6}")
        sizes = (100, 1000, 3000) if args.quick else (100, 1000, 3000, 10000)
        for n in sizes:
            secs = 0.5 if n <= 1000 else 0.25
            row = side_by_side(n, "fast", secs, 3 if n >= 3000 else rounds, tmp)
            out["fast_curve"].append(row)
            print(
                f"{n:>6} {row['boids']['real_time_factor']:>10.2f} "
                f"{row['hover']['real_time_factor']:>10.2f} {row['ratio']:>6.2f}"
            )
        n_prof = 3000 if args.quick else 10000
        sim = build("boids", n_prof, "fast", tmp)
        chunk(sim, 80)
        prof = profiled(sim, 200)
        sim.close()
        total = sum(v for k, v in prof.items() if not k.startswith("  "))
        out["profile"] = {"n": n_prof, "physics": "fast", "s_per_tick": prof, "total": total}
        print(f"\nwhere the time goes: boids N = {n_prof:,}, fast backend, ms per tick")
        for k, v in sorted(prof.items(), key=lambda kv: kv[0].lstrip()):
            print(f"{k:<46} {v * 1e3:>8.3f} {100 * v / total:>5.1f} %")
        print(f"{'total':<46} {total * 1e3:>8.3f}  ({0.0025 / total:.2f}x real time)")
    out["meta"]["load_average_end"] = os.getloadavg()
    print(f"\nload average: start {load0[0]:.2f}, end {out['meta']['load_average_end'][0]:.2f}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
