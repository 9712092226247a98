"""The plan as a program: legs flattened into instructions, and the sequencer that walks them.

Stages are concatenated; a loop becomes `loop` (entry: checks bound and condition), its body,
and `end` (counts an iteration, jumps back while the bound and condition allow); a branch
jumps to the leg its condition's value selects. The sequencer state (`Cursor`: instruction,
loop counters, hold lap) is a value, so the executor can look ahead (its window) with the
present conditions and throw the prediction away when a condition changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from skyswarm.missions.flight_plan.plan import Leg

FLOW = ("loop", "end", "branch")
MAX_FLOW_STEPS = 10_000  # control instructions followed without a flying leg: a jump cycle


@dataclass(frozen=True)
class Instr:
    kind: str  # a leg kind, or "end" (a loop's end)
    leg: Leg | None  # the leg (None for "end")
    stage: str  # the stage it belongs to
    pair: int = -1  # loop: index of its end; end: index of its loop
    jump: int = -1  # leg.next resolved: index flown after it (-1: the following)
    targets: tuple[int, ...] = ()  # branch: indices of its branches
    default: int = -1  # branch: index of the default (-1: wait)


@dataclass(frozen=True)
class Program:
    instrs: tuple[Instr, ...]
    ids: Mapping[str, int]

    def __len__(self) -> int:
        return len(self.instrs)


def compile_legs(stages: list[tuple[str, tuple[Leg, ...]]]) -> Program:
    """Flatten (stage kind, legs) in order; ids and jumps were checked by plan.check_plan."""
    out: list[Instr] = []
    ids: dict[str, int] = {}

    def emit(legs: tuple[Leg, ...], stage: str) -> None:
        for leg in legs:
            if leg.id:
                ids[leg.id] = len(out)
            if leg.kind == "loop":
                start = len(out)
                out.append(Instr("loop", leg, stage))
                emit(leg.body, stage)
                out.append(Instr("end", None, stage, pair=start))
                out[start] = replace(out[start], pair=len(out) - 1)
            else:
                out.append(Instr(leg.kind, leg, stage))

    for stage, legs in stages:
        emit(legs, stage)
    resolved = []
    for ins in out:
        if ins.leg is not None and ins.leg.next:
            ins = replace(ins, jump=ids[ins.leg.next])
        if ins.kind == "branch" and ins.leg is not None:
            d = ids[ins.leg.default] if ins.leg.default else -1
            ins = replace(ins, targets=tuple(ids[t] for t in ins.leg.branches), default=d)
        resolved.append(ins)
    return Program(tuple(resolved), ids)


@dataclass(frozen=True)
class Cursor:
    """Where the sequencer is: `pc` (an instruction index, len(program) when finished), the
    iteration counters of the loops entered (loop index -> count), the lap of a hold, and
    `waiting` when a branch's condition selects nothing."""

    pc: int = 0
    counters: tuple[tuple[int, int], ...] = ()
    lap: int = 0
    waiting: bool = False

    def count(self, loop: int) -> int:
        return dict(self.counters).get(loop, 0)

    def with_count(self, loop: int, value: int) -> Cursor:
        c = dict(self.counters)
        c[loop] = value
        return replace(self, counters=tuple(sorted(c.items())))


def finished(prog: Program, cur: Cursor) -> bool:
    return cur.pc >= len(prog)


def _loop_continues(ins: Instr, count: int, conds: Mapping[str, int]) -> bool:
    leg = ins.leg
    assert leg is not None
    if leg.bound and count >= leg.bound:
        return False
    return not (leg.condition and conds.get(leg.condition, 0) == 0)


def settle(prog: Program, cur: Cursor, conds: Mapping[str, int]) -> Cursor:
    """Follow control instructions from `cur` to a flying leg, the end, or a waiting branch."""
    for _ in range(MAX_FLOW_STEPS):
        if cur.pc >= len(prog):
            return replace(cur, pc=len(prog), waiting=False)
        ins = prog.instrs[cur.pc]
        if ins.kind == "loop":
            cur = cur.with_count(cur.pc, 0)
            go = _loop_continues(ins, 0, conds)
            cur = replace(cur, pc=cur.pc + 1 if go else ins.pair + 1, lap=0)
        elif ins.kind == "end":
            loop = prog.instrs[ins.pair]
            n = cur.count(ins.pair) + 1
            cur = cur.with_count(ins.pair, n)
            go = _loop_continues(loop, n, conds)
            cur = replace(cur, pc=ins.pair + 1 if go else cur.pc + 1)
        elif ins.kind == "branch":
            assert ins.leg is not None
            value = conds.get(ins.leg.condition, 0)
            if 0 <= value < len(ins.targets):
                cur = replace(cur, pc=ins.targets[value])
            elif ins.default >= 0:
                cur = replace(cur, pc=ins.default)
            else:
                return replace(cur, waiting=True)
        else:
            return replace(cur, waiting=False)
    return replace(cur, waiting=True)  # a jump cycle without a flying leg: wait


def after(
    prog: Program, cur: Cursor, conds: Mapping[str, int], interrupted: bool = False
) -> Cursor:
    """The cursor after the flying leg at `cur` ends (a hold may start another lap)."""
    ins = prog.instrs[cur.pc]
    leg = ins.leg
    assert leg is not None
    if leg.kind == "HC" and not interrupted:
        more = leg.laps == 0 or cur.lap + 1 < leg.laps
        if more and conds.get(leg.condition, 1) != 0 if leg.condition else more:
            return replace(cur, lap=cur.lap + 1)
    nxt = ins.jump if ins.jump >= 0 else cur.pc + 1
    return settle(prog, replace(cur, pc=nxt, lap=0), conds)


def hold_done(leg: Leg, conds: Mapping[str, int]) -> bool:
    """An HC hold ends as soon as its condition is 0."""
    return bool(leg.condition) and conds.get(leg.condition, 1) == 0


def window(prog: Program, cur: Cursor, conds: Mapping[str, int], n: int) -> list[Cursor]:
    """The flying legs from `cur` on, at most n, predicted with the present conditions."""
    out: list[Cursor] = []
    while len(out) < n and not finished(prog, cur) and not cur.waiting:
        out.append(cur)
        cur = after(prog, cur, conds)
    return out


def goto(prog: Program, cur: Cursor, leg_id: str, conds: Mapping[str, int]) -> Cursor:
    """Jump to the leg named `leg_id` (loop counters kept)."""
    return settle(prog, replace(cur, pc=prog.ids[leg_id], lap=0, waiting=False), conds)
