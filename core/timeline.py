"""The view timeline: what the 3D views showed during a recorded run, for a faithful replay.

A post-tick listener (registered after the mission's) samples, every `PERIOD_S` of simulated
time, the mission's HUD lines (`Mission.hud()`), the ids holding its "leader" role
(`Mission.role_members`), its overlays (an optional `overlays()` method returning plain data:
mappings with `segments` (M, 2, 3) or `corners` (M, 4, 3) and an optional RGBA `color`) and
each agent's control-mode name, and appends them to the results directory as the run goes
(nothing is lost if the run is interrupted):

- `timeline.jsonl`: one JSON object per sample: `tick`, `hud` (list of str), `modes` ({id: name}),
  `leaders` (list of ids) and `overlays`, a list of {kind, color, shape, offset, nbytes} into
- `timeline.bin`: zlib-compressed float32 arrays. An overlay list identical to the previous
  sample's is not written again: the sample's `overlays` is then `null` ("unchanged").

Generic: it knows nothing of missions, graphics or quadrotors, and only reads the simulation,
so a run's trajectory is the same with or without it.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator
    from skyswarm.core.world import World

PERIOD_S = 0.5  # s of simulated time between samples (a whole number of ticks at 2.5 ms)
KINDS = ("segments", "corners")


class Timeline:
    """Appends view samples of `sim` to `out_dir`/timeline.jsonl and timeline.bin."""

    def __init__(self, out_dir: Path, sim: Simulator, period_s: float = PERIOD_S) -> None:
        from skyswarm.core.schema import ticks_exact

        every = ticks_exact(period_s, sim.world.tick_s)
        if every is None or every < 1:
            raise ValueError(f"timeline period {period_s} s is not a whole number of ticks")
        self.sim = sim
        self.every = every
        out_dir.mkdir(parents=True, exist_ok=True)
        self.index_path, self.blob_path = out_dir / "timeline.jsonl", out_dir / "timeline.bin"
        self.index_path.write_text("", encoding="utf-8")  # files opened per sample: no handle
        self.blob_path.write_bytes(b"")  # is left open when a run ends without a close hook
        self._offset = 0
        self._last: list[tuple[str, tuple[float, ...], bytes]] | None = None
        self.samples = 0

    def post_tick(self, world: World) -> None:
        if world.tick % self.every:
            return
        mission = self.sim.mission
        hud = _call(mission, "hud")
        row: dict[str, Any] = {
            "tick": world.tick,
            "hud": [str(line) for line in hud or ()],
            "modes": {str(a.id): _mode(a) for a in self.sim.agents.values()},
            "leaders": _leaders(mission),
            "overlays": self._overlays(_call(mission, "overlays") or ()),
        }
        with self.index_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        self.samples += 1

    def _overlays(self, items: Any) -> list[dict[str, Any]] | None:
        current = []
        for item in items:
            for kind in KINDS:
                data = _get(item, kind)
                if data is not None:
                    arr = np.ascontiguousarray(data, dtype=np.float32)
                    color = tuple(float(c) for c in (_get(item, "color") or ()))
                    current.append((kind, color, arr.tobytes(), arr.shape))
                    break
        key = [(k, c, b) for k, c, b, _ in current]
        if key == self._last:
            return None
        self._last = key
        out = []
        with self.blob_path.open("ab") as blob:
            for kind, color, raw, shape in current:
                packed = zlib.compress(raw, 6)
                blob.write(packed)
                out.append(
                    {"kind": kind, "color": list(color), "shape": list(shape),
                     "offset": self._offset, "nbytes": len(packed)}
                )  # fmt: skip
                self._offset += len(packed)
        return out


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _call(obj: Any, name: str) -> Any:
    fn = getattr(obj, name, None)
    return fn() if callable(fn) else None


def _leaders(mission: Any) -> list[int]:
    """Ids holding the mission's "leader" role (`Mission.role_members`), for the views' colours."""
    members = getattr(mission, "role_members", None)
    return sorted(int(i) for i in members("leader") or ()) if callable(members) else []


def _mode(agent: Any) -> str:
    mode = getattr(agent, "mode", None)
    if mode is None or mode == "":
        return "-"
    return str(getattr(mode, "name", mode))


def read_timeline(results_dir: Path | str) -> list[dict[str, Any]]:
    """The samples of a results directory, oldest first, each with `overlays` resolved to a list
    of {kind, color, data (float32 array)} (an unchanged sample repeats the previous list).
    [] when the run recorded no timeline."""
    d = Path(results_dir)
    if not (d / "timeline.jsonl").is_file():
        return []
    blob = (d / "timeline.bin").read_bytes() if (d / "timeline.bin").is_file() else b""
    samples: list[dict[str, Any]] = []
    previous: list[dict[str, Any]] = []
    for line in (d / "timeline.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a run killed mid-write: keep the whole samples
            break
        if row["overlays"] is not None:
            previous = []
            for ov in row["overlays"]:
                raw = zlib.decompress(blob[ov["offset"] : ov["offset"] + ov["nbytes"]])
                data = np.frombuffer(raw, dtype=np.float32).reshape(ov["shape"])
                previous.append({"kind": ov["kind"], "color": tuple(ov["color"]), "data": data})
        row["overlays"] = previous
        samples.append(row)
    return samples
