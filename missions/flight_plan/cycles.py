"""Cycles a plan could fly forever without moving: refused when the plan is validated.

A leg that ends where it starts takes no time (a TF/DF/IF to the fix the UAV is at; a loop,
loop end or branch is control only). A cycle of such legs — `a -> b -> a` by `next`, both to
the same fix, or branches whose defaults point at each other — repeats every executor period
until the time limit, growing the run's logs. `check_cycles` finds them on the compiled program
(missions/flight_plan/program.py): the edges are `next` jumps, fall-through, branch targets and
defaults, and the back edge of a loop without a bound (a bounded loop ends). A cycle counts as
zero-length when every flying leg on it is a point leg (IF, DF, TF) to one and the same fix;
any other leg (takeoff, holds, arcs, patterns) has a length of its own. A patrol between two
different fixes is a real (if endless) flight and is accepted.

    check_cycles(plan, "", "plan.toml")  # ConfigError: ...legs[0].next = 'b': expected ...
"""

from __future__ import annotations

from skyswarm.core.schema import ConfigError
from skyswarm.missions.flight_plan import program as pg
from skyswarm.missions.flight_plan.plan import Leg, Plan, walk

POINT_LEGS = ("IF", "DF", "TF")
CONTROL = ("loop", "end", "branch")


def check_cycles(plan: Plan, path: str, file: str) -> None:
    """ConfigError naming the first zero-length cycle of the main plan or an emergency plan."""
    key = f"{path}." if path else ""
    main = [(s.kind, s.legs) for s in plan.stages]
    keys = [
        k for i, s in enumerate(plan.stages) for k, _, _ in walk(s.legs, f"{key}stages[{i}].legs")
    ]
    _check(pg.compile_legs(main), keys, plan, file)
    for e, em in enumerate(plan.emergency):
        keys = [k for k, _, _ in walk(em.legs, f"{key}emergency[{e}].legs")]
        _check(pg.compile_legs([("emergency", em.legs)]), keys, plan, file)


def _check(prog: pg.Program, keys: list[str], plan: Plan, file: str) -> None:
    labels = _labels(prog, keys)
    fixes = {i: _fix(ins.leg, plan) for i, ins in enumerate(prog.instrs) if ins.kind in POINT_LEGS}
    zero = [i for i, ins in enumerate(prog.instrs) if ins.kind in CONTROL or i in fixes]
    for component in _cyclic_components(prog, set(zero)):
        for fix in dict.fromkeys(fixes[i] for i in component if i in fixes) or [None]:
            nodes = {i for i in component if i not in fixes or fixes[i] == fix}
            for sub in _cyclic_components(prog, nodes):
                cycle = _a_cycle(prog, sub)
                names = " -> ".join(labels[i] for i in (*cycle, cycle[0]))
                where = f" all to the fix {list(fix)}" if fix is not None else ""
                at, field = _closing(prog, cycle)
                leg = prog.instrs[at].leg
                value = getattr(leg, field) if leg is not None else "end"
                raise ConfigError(
                    file,
                    f"{keys_of(prog, keys)[at]}.{field}",
                    value,
                    f"no cycle of zero-length legs ({names}{where}: it would repeat without "
                    "moving until the time limit)",
                )


def _closing(prog: pg.Program, cycle: list[int]) -> tuple[int, str]:
    """The instruction and key to name for a cycle: the first leg on it that jumps (`next`,
    then a branch's `branches`), which the user wrote to close it; else its first leg's kind
    (a fall-through or an unbounded loop)."""
    for field in ("next", "branches"):
        for i in cycle:
            leg = prog.instrs[i].leg
            if leg is not None and getattr(leg, field):
                return i, field
    return cycle[0], "kind"


def keys_of(prog: pg.Program, keys: list[str]) -> list[str]:
    """The key path of every instruction (a loop's end: its loop's)."""
    out, it = [], iter(keys)
    for ins in prog.instrs:
        out.append(out[ins.pair] if ins.kind == "end" else next(it))
    return out


def _labels(prog: pg.Program, keys: list[str]) -> list[str]:
    paths = keys_of(prog, keys)
    return [
        f"end of {paths[i]}" if ins.leg is None else (ins.leg.id or paths[i])
        for i, ins in enumerate(prog.instrs)
    ]


def _fix(leg: Leg | None, plan: Plan) -> tuple[float, ...]:
    """A point leg's fix with its altitude resolved (to's third value, altitude_m, the plan's)."""
    assert leg is not None
    if len(leg.to) == 3:
        return tuple(leg.to)
    alt = leg.altitude_m if leg.altitude_m is not None else plan.altitude_m
    return (*leg.to[:2], alt)


def _successors(prog: pg.Program, i: int) -> list[int]:
    ins = prog.instrs[i]
    if ins.kind == "loop":
        return [i + 1, ins.pair + 1]
    if ins.kind == "end":
        loop = prog.instrs[ins.pair].leg
        unbounded = loop is not None and loop.bound == 0
        return [ins.pair + 1, i + 1] if unbounded else [i + 1]
    if ins.kind == "branch":
        return [*ins.targets, *([ins.default] if ins.default >= 0 else [])]
    return [ins.jump if ins.jump >= 0 else i + 1]


def _cyclic_components(prog: pg.Program, nodes: set[int]) -> list[list[int]]:
    """Strongly connected components of the subgraph on `nodes` that hold a cycle (Tarjan's
    algorithm, iterative: a plan may have thousands of legs)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    found: list[list[int]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(_succ_in(prog, root, nodes)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, succ = work[-1]
            w = next(succ, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(_succ_in(prog, w, nodes))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1 or v in _succ_in(prog, v, nodes):
                    found.append(sorted(comp))
    return found


def _succ_in(prog: pg.Program, i: int, nodes: set[int]) -> list[int]:
    return [j for j in _successors(prog, i) if j in nodes]


def _a_cycle(prog: pg.Program, component: list[int]) -> list[int]:
    """One cycle through the component's first node (breadth first: the shortest)."""
    nodes, start = set(component), component[0]
    parent: dict[int, int] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in _succ_in(prog, v, nodes):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    return path[::-1]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]
