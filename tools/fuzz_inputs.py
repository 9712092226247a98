"""Fuzz of every input path a user types (issue 28): mutated scenarios, random flight plans,
nested and oversized values — no traceback, no hang.

- configs: a shipped scenario mutated 1-4 times (keys deleted, values replaced by junk of any
  type, extreme and non-finite numbers, tables nested up to 60 deep, keys of old schemas),
  then validated; one in ten goes through the TOML text path (tomli_w, then `read_toml`) and
  one in ten through `--set` overrides (`load_scenario`);
- flight plans: random stages and legs (kinds, fixes from a small set so that legs share
  fixes, `next` jumps, branches, loops, holds, junk values) inline in a flight-plan scenario,
  validated by the mission's own checks; a sample of the accepted ones flies 3 s (fast physics).

Only ConfigError is an answer; any other exception is a failure (its traceback printed), and so
is an example that spends more than `HANG_CPU_S` of CPU time (SIGPROF stops it: a loaded or
`nice`d machine does not make a slow example a hang) or `HANG_WALL_S` of wall time (SIGALRM: a
wait that never ends). Deterministic (seeded). `--budget-s` stops each part at a wall-clock
budget and reports the count reached; a progress line (count, rate) goes to stderr every
`--every` examples. Prints the counts and writes bench/results/fuzz_inputs.json (untracked,
beside the benchmarks).

    python tools/fuzz_inputs.py                  # 50,000 configs, 2,000 plans, 100 flights
    python tools/fuzz_inputs.py --configs 500 --plans 200 --fly 5
    nice -n 15 python tools/fuzz_inputs.py --plans 0 --budget-s 3600 --seed 2801
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import random
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parents[1] / "bench" / "results" / "fuzz_inputs.json"  # untracked
HANG_CPU_S = 60.0  # CPU seconds: one validation (or a 3 s flight) past this is a hang (a 410 km
# fire grid sampled on a terrain mesh validates in ~30 s on a loaded machine: slow, not hung)
HANG_WALL_S = 900.0  # wall seconds: a blocked wait (a niced process on a loaded machine gets
# ~10 % of a core, so a 60 s CPU bound can take ~10 min of wall time)

EXTREME = [
    math.inf,
    -math.inf,
    math.nan,
    1e308,
    -1e308,
    1e-308,
    0.0,
    -0.0,
    -1.0,
    0,
    -1,
    2**62,
    -(2**63),
    10**7,
    "",
    "x" * 300,
    ":",
    "..",
    "../../../../etc/passwd",
    True,
    False,
]
OLD_KEYS = [("faults", "rates"), ("faults", "battery"), ("simulation", "speed")]


class HangError(Exception):
    pass


@contextlib.contextmanager
def alarms() -> Iterator[None]:
    """The hang alarms (SIGPROF, SIGALRM) raise HangError inside the block; the handlers
    before it are restored after (a test process may have its own)."""
    before = {sig: signal.signal(sig, _alarm) for sig in (signal.SIGPROF, signal.SIGALRM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _alarm(signum: int, frame: Any) -> None:
    bound = f"{HANG_CPU_S} s CPU" if signum == signal.SIGPROF else f"{HANG_WALL_S} s wall"
    raise HangError(bound)


def junk(rng: random.Random, depth: int = 0) -> Any:
    """A random value: a scalar, or (rarely deeper) lists and tables of them."""
    roll = rng.random()
    if roll < 0.02:  # deep nesting: past the depth limit as often as not
        value: Any = rng.choice(EXTREME)
        for _ in range(rng.randint(10, 60)):
            value = [value] if rng.random() < 0.5 else {"k": value}
        return value
    if roll < 0.15 and depth < 3:
        n = rng.randint(0, 4)
        if rng.random() < 0.5:
            return [junk(rng, depth + 1) for _ in range(n)]
        return {rng.choice("abcxyz") * rng.randint(1, 3): junk(rng, depth + 1) for _ in range(n)}
    if roll < 0.55:
        return rng.choice(EXTREME)
    if roll < 0.75:
        return rng.uniform(-1e6, 1e6) * rng.choice([1.0, 1e-9, 1e9])
    if roll < 0.9:
        return rng.randint(-(2**40), 2**40)
    return "".join(rng.choice("ab:._/ \t\x00é") for _ in range(rng.randint(0, 12)))


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        out.append((*prefix, key))
        if isinstance(value, dict | list):
            out += _paths(value, (*prefix, key))
    return out


def mutate(rng: random.Random, data: dict) -> dict:
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 4)):
        paths = _paths(data)
        if not paths:
            break
        path = rng.choice(paths)
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        op = rng.choice(["delete", "replace", "replace", "add", "scale", "old"])
        last = path[-1]
        if op == "delete":
            del parent[last]
        elif op == "replace":
            parent[last] = junk(rng)
        elif op == "add" and isinstance(parent, dict):
            parent[rng.choice(["x", "schema", "events", "ñ", "a.b"])] = junk(rng)
        elif op == "scale" and isinstance(parent[last], int | float):
            factor = rng.choice([-1.0, 0.0, 1e-9, 1e9, 1e300, math.inf, math.nan])
            parent[last] = factor if isinstance(parent[last], bool) else parent[last] * factor
        elif op == "old":
            table, key = rng.choice(OLD_KEYS)
            data.setdefault(table, {}) if isinstance(data.get(table), dict) else None
            if isinstance(data.get(table), dict):
                data[table][key] = {"propeller_failure": 1.0} if key != "speed" else 2.0
    return data


class Tally:
    """Counts of one part (configs, plans or flights), its wall-clock budget and progress."""

    def __init__(self, part: str, budget_s: float = math.inf, every: int = 0) -> None:
        self.part, self.every = part, every
        self.counts = {"examples": 0, "accepted": 0, "config_errors": 0, "failures": 0}
        self.slowest_s = 0.0
        self.slowest_cpu_s = 0.0
        self.start = time.perf_counter()
        self.deadline = self.start + budget_s

    @property
    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    def result(self) -> dict[str, Any]:
        wall = time.perf_counter() - self.start
        return {
            **self.counts,
            "slowest_s": round(self.slowest_s, 3),
            "slowest_cpu_s": round(self.slowest_cpu_s, 3),
            "wall_s": round(wall, 1),
            "per_s": round(self.counts["examples"] / max(wall, 1e-9), 2),
        }

    def run(self, what: str, fn: Any) -> bool:
        """fn() under the CPU and wall alarms: True if it was accepted (no exception)."""
        self.counts["examples"] += 1
        start, cpu = time.perf_counter(), time.process_time()
        signal.setitimer(signal.ITIMER_PROF, HANG_CPU_S)
        signal.setitimer(signal.ITIMER_REAL, HANG_WALL_S)
        ok = False
        try:
            fn()
            self.counts["accepted"] += 1
            ok = True
        except HangError as exc:
            self.counts["failures"] += 1
            print(f"HANG ({exc}): {what}", file=sys.stderr, flush=True)
        except Exception as exc:
            from skyswarm.core.schema import ConfigError

            if isinstance(exc, ConfigError) and "\n" not in str(exc):
                self.counts["config_errors"] += 1
            else:
                self.counts["failures"] += 1
                print(f"FAILURE: {what}\n{traceback.format_exc()[-3000:]}", file=sys.stderr)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.setitimer(signal.ITIMER_REAL, 0)
        self.slowest_s = max(self.slowest_s, time.perf_counter() - start)
        self.slowest_cpu_s = max(self.slowest_cpu_s, time.process_time() - cpu)
        n = self.counts["examples"]
        if self.every and n % self.every == 0:
            r = self.result()
            print(
                f"{self.part}: {n} examples, {r['failures']} failures, {r['per_s']}/s, "
                f"slowest {r['slowest_s']} s wall / {r['slowest_cpu_s']} s CPU",
                file=sys.stderr,
                flush=True,
            )
        return ok


def fuzz_configs(
    n: int, seed: int, tmp: Path, budget_s: float = math.inf, every: int = 0
) -> dict[str, Any]:
    import tomli_w

    from skyswarm.core.config import load_scenario, read_toml, validate_scenario
    from skyswarm.core.resources import shipped

    scenarios = {name: (read_toml(path), str(path)) for name, path in shipped().items()}
    names = sorted(scenarios)
    rng, tally = random.Random(seed), Tally("configs", budget_s, every)
    for i in range(n):
        if tally.out_of_time:
            break
        name = rng.choice(names)
        data, file = scenarios[name]
        bad = mutate(rng, data)
        route = rng.random()
        if route < 0.1:  # the TOML text path: dump (when TOML can hold it), read back
            path = tmp / f"fuzz{i % 7}.toml"
            try:
                path.write_text(tomli_w.dumps(bad), encoding="utf-8")
            except (TypeError, ValueError):  # nan keys, None ... : not writable as TOML
                continue
            tally.run(
                f"{name} as TOML #{i}", lambda p=path, f=file: validate_scenario(read_toml(p), f)
            )
        elif route < 0.2:  # --set overrides on the shipped file
            sets = [f"{'.'.join(map(str, p))}={_toml_value(v)}" for p, v in _leaves(bad, rng)]
            tally.run(f"{name} --set {sets[:3]} #{i}", lambda f=file, s=sets: load_scenario(f, s))
        else:
            tally.run(f"{name} mutated #{i}", lambda b=bad, f=file: validate_scenario(b, f))
    return tally.result()


def _leaves(data: dict, rng: random.Random) -> list[tuple[tuple, Any]]:
    paths = [p for p in _paths(data) if all(isinstance(k, str) for k in p)]
    chosen = rng.sample(paths, min(3, len(paths)))
    out = []
    for p in chosen:
        node: Any = data
        for k in p:
            node = node[k]
        out.append((p, node))
    return out


def _toml_value(value: Any) -> str:
    import tomli_w

    try:
        return tomli_w.dumps({"v": value}).partition("=")[2].strip()
    except (TypeError, ValueError):
        return repr(value)


PLAN_KINDS = ["IF", "DF", "TF", "RF", "HF", "HA", "HC", "loop", "branch", "lawnmower", "figure8"]
FIXES = [[0.0, 0.0], [5.0, 0.0], [5.0, 0.0, 12.0], [0.0, 8.0], [-3.0, 4.0]]
SCENARIO = """
[simulation]
tick_s = 0.0025
duration_s = 3.0
physics = "fast"
[mission]
type = "missions.flight_plan"
[agents]
count = 1
[uav]
airframe = "quad_x"
"""


def random_leg(rng: random.Random, ids: list[str], depth: int = 0) -> dict[str, Any]:
    """A leg of a random kind; it takes the next unique id (most of the time) from `ids`.
    References (next, branches, default) are filled in by `link` once every id exists."""
    kind = rng.choice(PLAN_KINDS if depth < 2 else PLAN_KINDS[:7])
    leg: dict[str, Any] = {"kind": kind}
    if rng.random() < 0.85:
        leg["id"] = f"l{len(ids)}"
        ids.append(leg["id"])
    if kind not in ("loop", "branch"):
        leg["to"] = list(rng.choice(FIXES))
    if kind == "RF":
        leg["center"] = list(rng.choice(FIXES)[:2])
    if kind in ("HF", "HA", "HC"):
        leg.update(d1_m=rng.choice([20.0, 10.0, 5.0]), d2_m=rng.choice([10.0, 0.0, 20.0]))
        leg["altitude_m"] = rng.choice([8.0, 12.0])
        if kind == "HC":
            leg["laps" if rng.random() < 0.5 else "condition"] = rng.choice([1, 2, "c"])
    if kind == "loop":
        leg["body"] = [random_leg(rng, ids, depth + 1) for _ in range(rng.randint(1, 3))]
        leg["bound" if rng.random() < 0.5 else "condition"] = rng.choice([2, "c"])
    if kind == "lawnmower":
        leg.update(width_m=20.0, length_m=30.0, separation_m=rng.choice([5.0, 10.0, 30.0]))
    if kind == "figure8":
        leg["radius_m"] = rng.choice([5.0, 0.0, 10.0])
    if rng.random() < 0.03:
        leg[rng.choice(list(leg))] = junk(rng)
    return leg


def _pick(rng: random.Random, pool: list[str]) -> str:
    return rng.choice(pool) if pool and rng.random() > 0.05 else "nowhere"


def link(rng: random.Random, legs: list[dict[str, Any]], ids: list[str], top: set[str]) -> None:
    """Random `next` jumps and branch targets among the plan's ids (`top`: ids outside loop
    bodies, which branches may target), one in twenty of them to no leg at all."""
    for leg in legs:
        if not isinstance(leg, dict):
            continue
        if leg.get("kind") == "branch":
            pool = sorted(top) or ids
            leg["condition"] = "c"
            leg["branches"] = [_pick(rng, pool) for _ in range(rng.randint(1, 3))]
            if rng.random() < 0.5:
                leg["default"] = _pick(rng, pool)
        elif ids and rng.random() < 0.4:
            leg["next"] = _pick(rng, ids)
        body = leg.get("body")
        if isinstance(body, list):
            link(rng, body, ids, top)


def random_plan(rng: random.Random) -> dict[str, Any]:
    ids: list[str] = []
    legs = [random_leg(rng, ids) for _ in range(rng.randint(1, 8))]
    top = {leg["id"] for leg in legs if isinstance(leg, dict) and isinstance(leg.get("id"), str)}
    link(rng, legs, ids, top)
    stages = [{"kind": "takeoff", "legs": [{"kind": "takeoff", "altitude_m": 8.0}]}]
    stages.append({"kind": rng.choice(["en-route", "mission"]), "legs": legs})
    if rng.random() < 0.3:
        stages.append({"kind": "land", "legs": [{"kind": "land", "to": [0.0, 0.0]}]})
    plan: dict[str, Any] = {"conditions": {"c": rng.choice([0, 1, 2])}, "stages": stages}
    if rng.random() < 0.2:
        em_ids: list[str] = []
        em_legs = [random_leg(rng, em_ids, 2) for _ in range(rng.randint(1, 3))]
        link(rng, em_legs, em_ids, set(em_ids))
        plan["emergency"] = [{"name": "e", "below_endurance_s": 60.0, "legs": em_legs}]
    return plan


def fuzz_plans(
    n: int, fly: int, seed: int, budget_s: float = math.inf, every: int = 0
) -> dict[str, Any]:
    import tomllib

    from skyswarm.core.config import validate_scenario
    from skyswarm.core.simulator import Simulator

    base = tomllib.loads(SCENARIO)
    rng, tally, flights = random.Random(seed), Tally("plans", budget_s, every), Tally("flights")
    accepted = []
    for i in range(n):
        if tally.out_of_time:
            break
        data = {**copy.deepcopy(base), "flight_plan": {"inline": random_plan(rng)}}
        holder: list = []
        ok = tally.run(
            f"plan #{i}: {json.dumps(data['flight_plan'])[:2000]}",
            lambda d=data, h=holder: h.append(validate_scenario(d, "fuzz_plan.toml")),
        )
        if ok:
            accepted.append((i, holder[0]))
    for i, scenario in accepted[:fly]:

        def flight(scenario=scenario) -> None:
            sim = Simulator.from_scenario(scenario)
            try:
                sim.run()
                sim.finish()
            finally:
                sim.close()

        flights.run(f"flying plan #{i}", flight)
    return {
        **tally.result(),
        "flown": flights.counts["examples"],
        "flight_failures": flights.counts["failures"] + flights.counts["config_errors"],
        "slowest_flight_s": round(flights.slowest_s, 3),
        "slowest_flight_cpu_s": round(flights.slowest_cpu_s, 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", type=int, default=50_000)
    p.add_argument("--plans", type=int, default=2_000)
    p.add_argument("--fly", type=int, default=100, help="accepted plans flown for 3 s")
    p.add_argument("--seed", type=int, default=28)
    p.add_argument(
        "--budget-s", type=float, default=math.inf, help="wall-clock budget of each part, s"
    )
    p.add_argument("--every", type=int, default=1000, help="a progress line every N examples")
    p.add_argument("--results", type=Path, default=RESULTS, help="where the counts go (JSON)")
    args = p.parse_args(argv)
    import tempfile

    start = time.perf_counter()
    with alarms(), tempfile.TemporaryDirectory() as tmp:
        configs = fuzz_configs(args.configs, args.seed, Path(tmp), args.budget_s, args.every)
        plans = fuzz_plans(args.plans, args.fly, args.seed, args.budget_s, args.every)
    result = {
        "seed": args.seed,
        "configs": configs,
        "plans": plans,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    print(json.dumps(result, indent=1))
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1), encoding="utf-8")
    failures = configs["failures"] + plans["failures"] + plans["flight_failures"]
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
