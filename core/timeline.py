"""The view timeline: what the 3D views showed during a recorded run, for a faithful replay.

A post-tick listener (registered after the mission's) samples, every `PERIOD_S` of simulated
time, the mission's HUD lines (`Mission.hud()`), the ids holding its "leader" role
(`Mission.role_members`), its overlays (an optional `overlays()` method returning plain data:
mappings with `segments` (M, 2, 3) or `corners` (M, 4, 3) and an optional RGBA `color`) and
each agent's control-mode name, and, when a swarm has sensors on (`uav.sensors`), its agents'
state estimate, and appends them to the results directory as the run goes (nothing is lost if
the run is interrupted):

- `timeline.jsonl`: one JSON object per sample: `tick`, `hud` (list of str), `modes` ({id: name}),
  `leaders` (list of ids), `overlays`, a list of {kind, color, shape, offset, nbytes} into
  timeline.bin, and, only with sensors on, `estimates` {count, offset, nbytes} into
- `timeline.bin`: zlib-compressed float32 arrays. An overlay list identical to the previous
  sample's is not written again: the sample's `overlays` is then `null` ("unchanged"). An
  estimate block is `count` int32 agent ids then (count, 6) float32: the estimated position
  minus the true one, and the GPS error (fix minus truth), m. Offsets from the truth rather than
  positions: the trajectory holds the truth at a higher rate, so a replay between two samples
  keeps the estimate beside the moving UAV instead of lagging up to a period behind it, and
  float32 offsets of metres keep micrometres where float32 positions far out would not.

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
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator

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
        self._key: tuple[int, int] = (-1, -1)
        self._sensed: list[tuple[Any, np.ndarray, np.ndarray]] = []  # (swarm, slots, indexes)
        self._ids = np.zeros(0, dtype=np.int32)

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
        estimates = self._estimates(world)
        if estimates is not None:
            row["estimates"] = estimates
        with self.index_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        self.samples += 1

    def _refresh(self) -> None:
        """Group the agents with a swarm by swarm, once per change of the agent set."""
        key = (len(self.sim.agents), len(self.sim.deaths))
        if key == self._key:
            return
        self._key = key
        groups: dict[int, tuple[Any, list[int], list[int], list[int]]] = {}
        for a in self.sim.agents.values():
            swarm, index = getattr(a, "swarm", None), getattr(a, "index", None)
            if swarm is not None and index is not None and hasattr(a, "slot"):
                g = groups.setdefault(id(swarm), (swarm, [], [], []))
                g[1].append(int(a.slot))
                g[2].append(int(index))
                g[3].append(int(a.id))
        self._sensed = [
            (g[0], np.array(g[1], np.intp), np.array(g[2], np.intp)) for g in groups.values()
        ]
        self._ids = np.array([i for g in groups.values() for i in g[3]], dtype=np.int32)

    def _estimates(self, world: World) -> dict[str, int] | None:
        """Write the estimate block of the agents whose swarm has sensors on; its index entry,
        or None when no swarm has (the estimate is the truth: nothing to show)."""
        self._refresh()
        ids, blocks = [], []
        start = 0
        for swarm, slots, idx in self._sensed:
            n = len(slots)
            sensors = getattr(swarm, "sensors", None)
            position = getattr(sensors, "position", None)
            if position is not None:
                truth = world.state.position[slots]
                gps = getattr(sensors, "gps_error", None)
                gps = np.full((n, 3), np.nan) if gps is None else np.asarray(gps)[idx]
                ids.append(self._ids[start : start + n])
                blocks.append(np.hstack([np.asarray(position)[idx] - truth, gps]))
            start += n
        if not blocks:
            return None
        raw = np.concatenate(ids).astype("<i4").tobytes()
        raw += np.vstack(blocks).astype("<f4").tobytes()
        packed = zlib.compress(raw, 6)
        with self.blob_path.open("ab") as blob:
            blob.write(packed)
        entry = {"count": sum(len(i) for i in ids), "offset": self._offset, "nbytes": len(packed)}
        self._offset += len(packed)
        return entry

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
    of {kind, color, data (float32 array)} (an unchanged sample repeats the previous list) and,
    with sensors on, `estimates` resolved by `_estimate_block` (absent in runs without sensors
    and in timelines written before estimates were recorded). [] when the run recorded none."""
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
        if row.get("estimates") is not None:
            row["estimates"] = _estimate_block(blob, row["estimates"])
        samples.append(row)
    return samples


def _estimate_block(blob: bytes, entry: dict[str, int]) -> dict[str, np.ndarray]:
    """{ids (K,) int64, estimate_offset (K, 3), gps_error (K, 3)} float64 m, of one sample."""
    raw = zlib.decompress(blob[entry["offset"] : entry["offset"] + entry["nbytes"]])
    k = int(entry["count"])
    ids = np.frombuffer(raw[: 4 * k], dtype="<i4").astype(np.int64)
    data = np.frombuffer(raw[4 * k :], dtype="<f4").reshape(k, 6).astype(np.float64)
    return {"ids": ids, "estimate_offset": data[:, :3], "gps_error": data[:, 3:]}
