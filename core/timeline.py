"""The view timeline: what the 3D views showed during a recorded run, for a faithful replay.

A post-tick listener (registered after the mission's) records what the mission shows
(`core.hooks.ViewSource`, implemented by `Mission`): its HUD lines, the ids holding its
`highlight_role`, its `group_leaders()`, its overlays (plain data, `core.hooks.Overlay`), plus
each agent's `Agent.mode_name()` (asked only when a code changed for the agents whose
`Agent.mode_row()` names a `core.hooks.ModeSource`, e.g. a UAV swarm) and, for the agents
whose `Agent.estimate_row()` names a group with an estimate (`core.hooks.EstimateSource`, e.g.
a UAV swarm with sensors on), their state estimate.

When. The view state is looked at on every tick the trajectory samples (the recorder's
`traj_every`: the ticks a replay has poses for; every tick without a recorder) and a sample is
written when any of it differs from the last one written, at that tick: a replay frame shows a
trajectory sample's poses with the HUD, leaders, groups, modes and overlays the live view
showed at that very tick. Looking every tick would catch a change up to one trajectory period
sooner, but a replay has no poses between trajectory samples to show it with, and it costs
~40 us a tick on the reference run (28 % of its wall time; at 10 Hz poses, 1/40 of that). The
first sample is the state the run starts from (tick 0, when the timeline is made: what the live
view's first frame shows). The estimate moves every tick, so it is not diffed but sampled
every `PERIOD_S`. Samples are appended to the results directory as the run goes (nothing is
lost if the run is interrupted):

- `timeline.jsonl`: one JSON object per sample: `tick`, then only what changed since the
  previous sample (all of it in the first): `hud` (list of str), `modes` ({id: name}), `leaders`
  (sorted ids holding the highlighted role), `highlight` (that role's name, or null), `groups`
  ({id: its group's leader id}, `ViewSource.group_leaders`), `overlays`, a list of
  {kind, color, shape, offset, nbytes} into timeline.bin; for `modes` and `groups` either the
  whole map or, when fewer entries changed than the map holds, `mode_changes` /
  `group_changes` ({id: new value, or null: no longer in the map}); and, every `PERIOD_S`,
  `estimates` {count, offset, nbytes} into timeline.bin (null when the estimates stopped).
- `timeline.bin`: zlib-compressed float32 arrays. An estimate block is `count` int32 agent
  ids then (count, 6) float32: the estimated position minus the true one, and the GPS error
  (fix minus truth), m. Offsets from the truth rather than positions: the trajectory holds the
  truth at a higher rate, so a replay between two samples keeps the estimate beside the moving
  UAV instead of lagging up to a period behind it, and float32 offsets of metres keep
  micrometres where float32 positions far out would not.

Older timelines still read (`read_timeline`): written before this change, every sample holds
every field (`overlays` null: unchanged) and they were taken every 0.5 s (after the first tick
too, since tick 0 was sampled; before that from 0.5 s on, the replay showing no mission data
before it).

Generic: it knows nothing of missions, graphics or quadrotors and reads only what the Protocols
above declare (tests/core/test_contracts.py runs it against objects that have nothing else), so
a run's trajectory is the same with or without it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.limits import loads_json
from skyswarm.core.overlays import Lines, as_overlay

if TYPE_CHECKING:
    from skyswarm.core.agent import Agent
    from skyswarm.core.backends import World
    from skyswarm.core.hooks import EstimateSource, ModeSource, ViewSource
    from skyswarm.core.simulator import Simulator

S = TypeVar("S")  # a group of agents: an EstimateSource, a ModeSource

PERIOD_S = 0.5  # s of simulated time between estimate samples (whole ticks at 2.5 ms)
# The fields written whole when changed, and the maps that may be written as their changes.
WHOLE = ("hud", "leaders", "highlight")
MAPS = {"modes": "mode_changes", "groups": "group_changes"}

OverlayKey = list[tuple[str, tuple[float, ...], bytes]]


def _by_source(
    agents: Iterable[Agent], row_of: Callable[[Agent], tuple[S, int] | None]
) -> tuple[list[tuple[S, list[Agent], list[int]]], list[Agent]]:
    """The agents grouped by the source `row_of` names (first seen first): per source its
    members and their rows there; and the agents it names none for."""
    groups: dict[int, tuple[S, list[Agent], list[int]]] = {}
    alone: list[Agent] = []
    for a in agents:
        named = row_of(a)
        if named is None:
            alone.append(a)
        else:
            g = groups.setdefault(id(named[0]), (named[0], [], []))
            g[1].append(a)
            g[2].append(int(named[1]))
    return list(groups.values()), alone


class Timeline:
    """Appends view samples of `sim` to `out_dir`/timeline.jsonl and timeline.bin: one when what
    the views show changed, looked at every `every_ticks` (default: the trajectory's sampling
    ticks, `sim.recorder.traj_every`; every tick without a recorder), and the estimates every
    `period_s` (a whole number of ticks)."""

    def __init__(
        self,
        out_dir: Path,
        sim: Simulator,
        period_s: float = PERIOD_S,
        every_ticks: int | None = None,
    ) -> None:
        from skyswarm.core.schema import ticks_exact

        every = ticks_exact(period_s, sim.world.tick_s)
        if every is None or every < 1:
            raise ValueError(f"timeline period {period_s} s is not a whole number of ticks")
        if every_ticks is None:
            every_ticks = sim.recorder.traj_every if sim.recorder is not None else 1
        if every_ticks < 1:
            raise ValueError(f"timeline every_ticks {every_ticks}: expected a whole number >= 1")
        self.sim = sim
        self.every = every  # ticks between estimate samples
        self.look_every = int(every_ticks)  # ticks between looks at the view state
        out_dir.mkdir(parents=True, exist_ok=True)
        self.index_path, self.blob_path = out_dir / "timeline.jsonl", out_dir / "timeline.bin"
        self.index_path.write_text("", encoding="utf-8")  # files opened per sample: no handle
        self.blob_path.write_bytes(b"")  # is left open when a run ends without a close hook
        self._offset = 0
        self._shown: dict[str, Any] = {}  # the view state last written, by field
        self._overlay_key: OverlayKey | None = None
        self._estimated = False  # the last estimate sample had a block
        self.samples = 0
        self._key: tuple[int, int] = (-1, -1)
        self._sensed: list[tuple[EstimateSource, np.ndarray, np.ndarray]] = []  # group, slots, rows
        self._ids = np.zeros(0, dtype=np.int32)
        self._mode_key: tuple[int, int] = (-1, -1)  # the agent set _mode_groups was built for
        self._mode_groups: list[tuple[ModeSource, np.ndarray]] = []  # source, rows
        self._plain: list[Agent] = []  # agents whose mode only mode_name() tells
        self._mode_look: tuple[list[np.ndarray], list[str]] | None = None  # codes, plain names
        self._modes_shown: dict[str, str] = {}
        # The state recording starts from (tick 0: the mission set up, nothing flown), so a
        # replay has from its first frame the HUD, leaders and overlays the live view had.
        # Reads only: the run is unchanged.
        self._sample(sim.world)

    def post_tick(self, world: World) -> None:
        if world.tick % self.look_every == 0 or world.tick % self.every == 0:
            self._sample(world)

    def _sample(self, world: World) -> None:
        """Append a sample of what changed in the views at `world.tick` (none if nothing did)."""
        row: dict[str, Any] = {"tick": world.tick, **self._changes()}
        if world.tick % self.every == 0:
            estimates = self._estimates(world)
            if estimates is not None or self._estimated:
                row["estimates"] = estimates
            self._estimated = estimates is not None
        if len(row) == 1:
            return
        with self.index_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        self.samples += 1

    def _changes(self) -> dict[str, Any]:
        """The fields of the view state that differ from the last written, as the index
        writes them (module doc); all of them the first time."""
        mission: ViewSource | None = self.sim.mission
        hud = mission.hud() if mission is not None else ()
        now: dict[str, Any] = {
            "hud": [str(line) for line in hud or ()],
            "leaders": highlighted(mission),
            "highlight": mission.highlight_role if mission is not None else None,
            "modes": self._modes(),
            "groups": {str(k): v for k, v in group_leaders(mission).items()},
        }
        out: dict[str, Any] = {}
        for name, value in now.items():
            if name in self._shown and (self._shown[name] is value or self._shown[name] == value):
                continue
            if name in MAPS and name in self._shown:
                changes = map_changes(self._shown[name], value)
                out.update({MAPS[name]: changes} if len(changes) < len(value) else {name: value})
            else:
                out[name] = value
            self._shown[name] = value
        overlays = self._overlays((mission.overlays() if mission is not None else ()) or ())
        if overlays is not None:
            out["overlays"] = overlays
        return out

    def _modes(self) -> dict[str, str]:
        """{agent id: `Agent.mode_name()`} of every agent. The agents whose mode a
        `core.hooks.ModeSource` holds are asked again only when its codes changed since the
        last look (otherwise the last map, the same object, is returned): at 1,000 UAVs the
        question costs ~1.4 ms, the array ~10 us."""
        key = (len(self.sim.agents), len(self.sim.deaths))
        if key != self._mode_key:
            self._mode_key, self._mode_look = key, None
            groups, self._plain = _by_source(self.sim.agents.values(), lambda a: a.mode_row())
            self._mode_groups = [(g, np.array(rows, np.intp)) for g, _, rows in groups]
        codes = [np.asarray(g.mode_codes())[rows] for g, rows in self._mode_groups]
        plain = [a.mode_name() for a in self._plain]
        last = self._mode_look
        if (
            last is not None
            and last[1] == plain
            and all(np.array_equal(a, b) for a, b in zip(last[0], codes, strict=True))
        ):
            return self._modes_shown
        self._mode_look = (codes, plain)
        self._modes_shown = {str(a.id): a.mode_name() for a in self.sim.agents.values()}
        return self._modes_shown

    def _refresh(self) -> None:
        """Group the physical agents with an estimate source by source (first seen first),
        once per change of the agent set."""
        key = (len(self.sim.agents), len(self.sim.deaths))
        if key == self._key:
            return
        self._key = key

        def row(a: Agent) -> tuple[EstimateSource, int] | None:
            return a.estimate_row() if isinstance(a, PhysicalAgent) else None

        groups, _ = _by_source(self.sim.agents.values(), row)
        self._sensed = [
            (g, np.array([int(a.slot) for a in members], np.intp), np.array(rows, np.intp))
            for g, members, rows in groups
        ]
        self._ids = np.array([int(a.id) for _, members, _ in groups for a in members], np.int32)

    def _estimates(self, world: World) -> dict[str, int] | None:
        """Write the estimate block of the agents whose group has an estimate; its index entry,
        or None when no group has (the estimate is the truth: nothing to show)."""
        self._refresh()
        ids, blocks = [], []
        start = 0
        for group, slots, idx in self._sensed:
            n = len(slots)
            position = group.estimated_positions()
            if position is not None:
                truth = world.state.position[slots]
                gps = group.gps_errors()
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
        """The index entries of the overlay list, written to timeline.bin; None when it equals
        the last one written."""
        current = []
        for ov in map(as_overlay, items):  # the declared item types only (core.hooks.Overlay)
            if ov is None:
                continue
            kind, data = (
                ("segments", ov.segments) if isinstance(ov, Lines) else ("corners", ov.corners)
            )
            arr = np.ascontiguousarray(data)
            current.append((kind, tuple(float(c) for c in ov.color), arr.tobytes(), arr.shape))
        key = [(k, c, b) for k, c, b, _ in current]
        if key == self._overlay_key:
            return None
        self._overlay_key = key
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


def map_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """{key: new value} of the keys of `new` whose value differs from `old`'s (or that `old`
    lacks), and {key: None} of the keys `new` no longer has: what turns `old` into `new`
    (`apply_changes`)."""
    out = {k: v for k, v in new.items() if k not in old or old[k] != v}
    out.update({k: None for k in old if k not in new})
    return out


def apply_changes(old: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A new map: `old` with `changes` (`map_changes`) applied."""
    out = dict(old)
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def highlighted(mission: ViewSource | None) -> list[int]:
    """Sorted ids holding the mission's `highlight_role` now ([] without one), which the views
    draw in their highlight colour and the timeline records as `leaders`."""
    role = mission.highlight_role if mission is not None else None
    return sorted(int(i) for i in mission.role_members(role) or ()) if role else []


def group_leaders(mission: ViewSource | None) -> dict[int, int]:
    """{agent id: its group's leader id} of the mission now, sorted by id ({} without groups):
    what the views draw as each member's line to its leader and the timeline records as
    `groups`."""
    groups = mission.group_leaders() if mission is not None else None
    return {int(k): int(v) for k, v in sorted((groups or {}).items())}


def read_timeline(results_dir: Path | str) -> list[dict[str, Any]]:
    """The samples of a results directory, oldest first, each whole: `hud`, `modes`, `leaders`,
    `highlight`, `groups` as they were at its tick (a field a sample did not write holds the
    previous sample's value; absent only from timelines written before it was recorded),
    `overlays` resolved to a list of {kind, color, data (float32 array)} (a sample that did not
    write them holds the previous list, the same object) and, with sensors on, `estimates` of
    the last estimate sample at or before it, resolved by `_estimate_block` (absent in runs
    without sensors and in timelines written before estimates were recorded). [] when the run
    recorded none."""
    d = Path(results_dir)
    if not (d / "timeline.jsonl").is_file():
        return []
    blob = (d / "timeline.bin").read_bytes() if (d / "timeline.bin").is_file() else b""
    samples: list[dict[str, Any]] = []
    state: dict[str, Any] = {"overlays": []}
    for line in (d / "timeline.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            row = loads_json(line, str(d / "timeline.jsonl"))
        except json.JSONDecodeError:  # a run killed mid-write: keep the whole samples
            break
        _resolve(row, state, blob)
        samples.append({"tick": row["tick"], **state})
    return samples


def _resolve(row: dict[str, Any], state: dict[str, Any], blob: bytes) -> None:
    """Update `state` (the whole view state so far) with the fields `row` wrote."""
    state.update({k: row[k] for k in (*WHOLE, *MAPS) if k in row})
    for name, changes in MAPS.items():
        if changes in row:
            state[name] = apply_changes(state.get(name, {}), row[changes])
    if row.get("overlays") is not None:  # null in older timelines: unchanged
        state["overlays"] = []
        for ov in row["overlays"]:
            raw = zlib.decompress(blob[ov["offset"] : ov["offset"] + ov["nbytes"]])
            data = np.frombuffer(raw, dtype=np.float32).reshape(ov["shape"])
            state["overlays"].append(
                {"kind": ov["kind"], "color": tuple(ov["color"]), "data": data}
            )
    if row.get("estimates") is not None:
        state["estimates"] = _estimate_block(blob, row["estimates"])
    elif "estimates" in row:  # null: the estimates stopped
        state.pop("estimates", None)


def _estimate_block(blob: bytes, entry: dict[str, int]) -> dict[str, np.ndarray]:
    """{ids (K,) int64, estimate_offset (K, 3), gps_error (K, 3)} float64 m, of one sample."""
    raw = zlib.decompress(blob[entry["offset"] : entry["offset"] + entry["nbytes"]])
    k = int(entry["count"])
    ids = np.frombuffer(raw[: 4 * k], dtype="<i4").astype(np.int64)
    data = np.frombuffer(raw[4 * k :], dtype="<f4").reshape(k, 6).astype(np.float64)
    return {"ids": ids, "estimate_offset": data[:, :3], "gps_error": data[:, 3:]}
