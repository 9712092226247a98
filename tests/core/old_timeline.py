"""A results directory's timeline rewritten as the writer before the change-driven samples wrote
it, for the tests that older results still read and replay (core/timeline.py, module doc)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skyswarm.core.timeline import MAPS, WHOLE, apply_changes


def rewrite_as_old(results_dir: Path, ticks: Iterable[int]) -> None:
    """Rewrite `results_dir`/timeline.jsonl as the old writer's samples at `ticks` (each a tick
    the new timeline looked at: a multiple of the trajectory's sampling): every field in every
    row, `overlays` null when the list is the previous row's, `estimates` in every row once
    recorded. The entries still point into timeline.bin, which is kept as it is."""
    index = results_dir / "timeline.jsonl"
    rows = [json.loads(line) for line in index.read_text().splitlines()]
    state: dict[str, Any] = {}
    written: list[Any] | None = None
    out, i = [], 0
    for tick in ticks:
        while i < len(rows) and rows[i]["tick"] <= tick:
            row = rows[i]
            state.update({k: row[k] for k in (*WHOLE, *MAPS, "overlays", "estimates") if k in row})
            for name, changes in MAPS.items():
                if changes in row:
                    state[name] = apply_changes(state[name], row[changes])
            i += 1
        old = {"tick": tick, **{k: state[k] for k in ("hud", "modes")}}
        old.update({k: state[k] for k in ("leaders", "highlight", "groups")})
        old["overlays"] = None if state["overlays"] is written else state["overlays"]
        written = state["overlays"]
        if state.get("estimates") is not None:
            old["estimates"] = state["estimates"]
        out.append(old)
    index.write_text("".join(json.dumps(r) + "\n" for r in out))
