"""`skyswarm replay RESULTDIR`: play a recorded run (trajectory.bin) in the 3D views, or export it.

The replay shows, at time t, the last trajectory sample at or before t. An agent of a
`[[results.groups]]` table recorded at a lower rate shows its own last sample between its samples
(held, not interpolated: every pose drawn is one the run had). Agents missing from the samples
due after some time are dead: they stay drawn (dark) where they were last recorded. Base
stations are not in the trajectory (it holds physical agents only): they are read from the run's
config.toml `[[comms.base_stations]]` and drawn at their fixed positions, after the recorded agents.
What the mission showed (HUD lines, leaders, groups, modes, overlays) is the timeline's
(core/timeline.py), which holds it at every trajectory sample tick: a frame shows with its
recorded poses the view state the live view had at that tick. With sensors on, the timeline's
estimate offsets (estimate minus truth, GPS error) of its last estimate sample (every 0.5 s) at
or before t are added to the replayed truth: the estimate ghost and the inspector's estimate
lines show what the live view showed at each estimate sample, and follow the UAV in between.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from skyswarm.core.comms.channels import CommsConfig
from skyswarm.core.config import AvoidanceConfig, WorldConfig, read_toml
from skyswarm.core.recorder import read_header, read_trajectory
from skyswarm.core.schema import build
from skyswarm.core.timeline import read_timeline
from skyswarm.gui.director import CameraSpec
from skyswarm.gui.framing import scene_extent, shown_points
from skyswarm.gui.groups import group_lines
from skyswarm.gui.multiview import LayoutSpec
from skyswarm.gui.overlays import Overlay, as_overlays
from skyswarm.gui.proximity import ProximityLimits, proximity_lines
from skyswarm.gui.scene import Frame, Scenery, group_column, upright

STATION_ROLE = "base_station"


class ReplaySource:
    """Frames of a results directory: T samples x N agents."""

    def __init__(self, results_dir: Path | str) -> None:
        self.dir = Path(results_dir)
        header = read_header(self.dir)  # a missing, torn or too-deep header: one line
        records = read_trajectory(self.dir)
        agents = header["agents"]
        self.ids = np.array([a["id"] for a in agents], dtype=np.int64)  # (N,) recorded agents
        self.agent_roles = [str(a["role"]) for a in agents]
        ticks = np.unique(records["tick"])
        self.times = ticks * float(header["tick_s"])  # (T,) s
        t_idx = np.searchsorted(ticks, records["tick"])
        a_idx = np.searchsorted(self.ids, records["agent_id"], sorter=np.argsort(self.ids))
        a_idx = np.argsort(self.ids)[a_idx]
        shape = (len(ticks), len(self.ids))
        sampled = np.zeros(shape, dtype=bool)
        sampled[t_idx, a_idx] = True
        self.positions = np.full((*shape, 3), np.nan)
        self.orientations = np.tile([0.0, 0.0, 0.0, 1.0], (*shape, 1))
        self.velocities = np.zeros((*shape, 3))  # m/s, world
        last = np.full(shape, -(2**62), dtype=np.int64)  # tick of each agent's last sample
        self.positions[t_idx, a_idx] = records["position"]
        self.orientations[t_idx, a_idx] = records["orientation"]
        self.velocities[t_idx, a_idx] = records["velocity"]
        last[t_idx, a_idx] = records["tick"]
        for values in (self.positions, self.orientations, self.velocities, last):
            _fill_forward(values, sampled)
        every = np.array(
            [a.get("every_ticks", header["sample_every_ticks"]) for a in agents], dtype=np.int64
        )
        # alive: recorded at its own last due tick (every sample, for agents of no group)
        self.present = last > ticks[:, None] - every[None, :]
        self.scenery, stations = self._config()
        self.station_ids = np.array([s.id for s in stations], dtype=np.int64)  # (M,)
        self.station_positions = np.array(
            [[*s.position, 0.0][:3] for s in stations], dtype=float
        ).reshape(-1, 3)  # (M, 3) m
        roles = self.agent_roles + [STATION_ROLE] * len(stations)
        self.roles = sorted(set(roles))
        self.role_index = np.array([self.roles.index(r) for r in roles], dtype=np.intp)
        self._timeline = read_timeline(self.dir)  # HUD lines, overlays, modes (core/timeline.py)
        self._timeline_times = np.array(
            [row["tick"] * float(header["tick_s"]) for row in self._timeline], dtype=float
        )
        self._overlay_cache: tuple[list[Any] | None, list[Overlay]] = (None, [])

    def _config(self) -> tuple[Scenery, tuple[Any, ...]]:
        """Scenery and base-station specs from the run's config.toml (none if it is missing)."""
        cfg_path = self.dir / "config.toml"
        if not cfg_path.is_file():
            return Scenery(), ()
        data = read_toml(cfg_path)
        world = build(WorldConfig, data.get("world", {}), "world", str(cfg_path))
        comms = build(CommsConfig, data.get("comms", {}), "comms", str(cfg_path))
        avoid = build(AvoidanceConfig, data.get("avoidance", {}), "avoidance", str(cfg_path))
        return Scenery.from_config(world, self.dir, avoid), comms.base_stations

    @property
    def all_ids(self) -> np.ndarray:
        """(N + M,) ids in frame order: recorded agents, then base stations."""
        return np.r_[self.ids, self.station_ids]

    @property
    def duration_s(self) -> float:
        return float(self.times[-1]) if len(self.times) else 0.0

    def index_at(self, time_s: float) -> int:
        """Sample index shown at `time_s`: the last one at or before it (the first if before)."""
        return max(0, int(np.searchsorted(self.times, time_s + 1e-9, side="right")) - 1)

    def sample_at(self, time_s: float) -> int | None:
        """Index of the timeline sample shown at `time_s` (the last at or before it), or None."""
        k = int(np.searchsorted(self._timeline_times, time_s + 1e-9, side="right")) - 1
        return k if k >= 0 else None

    def view_data(self, time_s: float) -> tuple[list[Overlay], list[str], dict[str, str]]:
        """(overlays, HUD lines, {agent id: mode}) the live view showed at `time_s`."""
        k = self.sample_at(time_s)
        if k is None:
            return [], [], {}
        row = self._timeline[k]
        if self._overlay_cache[0] is not row["overlays"]:  # samples share an unchanged list
            plain = [{ov["kind"]: ov["data"], "color": ov["color"]} for ov in row["overlays"]]
            self._overlay_cache = (row["overlays"], as_overlays(plain))
        return self._overlay_cache[1], list(row["hud"]), dict(row["modes"])

    def frame_at(self, time_s: float) -> Frame:
        k = self.index_at(time_s)
        m = len(self.station_ids)
        overlays, hud, _ = self.view_data(float(self.times[k]))
        estimates, gps = self._estimates_at(k)
        return Frame(
            time_s=float(self.times[k]),
            ids=self.all_ids,
            roles=list(self.roles),
            role_index=self.role_index.copy(),
            positions=np.vstack([self.positions[k], self.station_positions]),
            orientations=np.vstack([self.orientations[k], upright(m)]),
            alive=np.r_[self.present[k], np.ones(m, dtype=bool)],
            overlays=overlays,
            hud=hud,
            leader=self._leaders_at(float(self.times[k])),
            estimates=estimates,
            gps_fixes=gps,
            group=self._groups_at(float(self.times[k])),
            highlight=self._highlight_at(float(self.times[k])),
        )

    def _estimates_at(self, k: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(N + M, 3) estimated positions and GPS fixes at trajectory sample `k`, NaN for the
        agents without sensors and the base stations; (None, None) when the timeline sample has
        no estimates (sensors off, or a timeline written before they were recorded)."""
        s = self.sample_at(float(self.times[k]))
        block = None if s is None else self._timeline[s].get("estimates")
        if block is None or not len(self.ids):
            return None, None
        n = len(self.all_ids)
        est, gps = np.full((n, 3), np.nan), np.full((n, 3), np.nan)
        order = np.argsort(self.ids)
        rows = np.searchsorted(self.ids, block["ids"], sorter=order)
        known = rows < len(self.ids)
        rows = order[np.minimum(rows, len(self.ids) - 1)]
        known &= self.ids[rows] == block["ids"]
        rows = rows[known]
        truth = self.positions[k, rows]
        est[rows] = truth + block["estimate_offset"][known]
        gps[rows] = truth + block["gps_error"][known]
        return est, gps

    def _leaders_at(self, time_s: float) -> np.ndarray | None:
        """(N + M,) bool: the agents the mission named "leader" at `time_s` (None: not recorded)."""
        k = self.sample_at(time_s)
        if k is None or "leaders" not in self._timeline[k]:
            return None
        return np.isin(self.all_ids, np.asarray(self._timeline[k]["leaders"], dtype=np.int64))

    def _groups_at(self, time_s: float) -> np.ndarray | None:
        """(N + M,) int64: each agent's group leader id at `time_s` (-1: in no group), as the
        mission's `group_leaders()` gave it at the timeline sample; None without groups."""
        k = self.sample_at(time_s)
        groups = self._timeline[k].get("groups") if k is not None else None
        if not groups:
            return None
        return group_column(self.all_ids, {int(a): int(b) for a, b in groups.items()})

    def _highlight_at(self, time_s: float) -> str | None:
        """The name of the highlighted role at `time_s` (None: not recorded)."""
        k = self.sample_at(time_s)
        return self._timeline[k].get("highlight") if k is not None else None

    def velocities_at(self, time_s: float) -> np.ndarray:
        """(N + M, 3) m/s at `time_s` in frame order; zero for dead agents and base stations."""
        k = self.index_at(time_s)
        v = np.where(self.present[k][:, None], self.velocities[k], 0.0)
        return np.vstack([v, np.zeros((len(self.station_ids), 3))])


def _fill_forward(values: np.ndarray, present: np.ndarray) -> None:
    """Carry each agent's last recorded value forward over the samples where it is missing."""
    for t in range(1, len(values)):
        gap = ~present[t]
        values[t, gap] = values[t - 1, gap]


def export_video(
    results_dir: Path,
    video: Path | None,
    frames: Path | None,
    fps: float = 30.0,
    size: tuple[int, int] = (1280, 720),
    camera: str | CameraSpec = "swarm",
    hud: bool = True,
    inset: bool = True,
    markers: bool = True,
    layout: LayoutSpec | None = None,
    proximity: bool = False,
    groups: bool = False,
) -> int:
    """Render the whole recording offscreen at `fps`; returns the number of frames written.

    Frame k (k = 1, 2, ...) shows time k / fps, like a `run --video` of the same run, with the
    same camera, HUD, inset map, `layout`, `proximity` rings and `groups` lines (the cameras are
    functions of the frame: gui/director.py). The video is fed as `run --video` feeds it:
    planar yuv420p converted from the framebuffer here (gui/yuv.py, `VIDEO_FMT`), straight
    into the writer's next buffer, so ffmpeg encodes the same samples, tagged the same.
    """
    from skyswarm.gui import yuv
    from skyswarm.gui.offscreen import FrameWriter, VideoWriter
    from skyswarm.gui.video import VIDEO_FMT

    source = ReplaySource(results_dir)
    view = ReplayStill(source, size, camera, hud, inset, markers, layout, proximity, groups)
    writer = png = None
    try:
        if video is not None:
            yuv.prepare()
            writer = VideoWriter(Path(video), size, fps, VIDEO_FMT)
        png = FrameWriter(Path(frames)) if frames is not None else None
        n = int(np.floor(source.duration_s * fps + 1e-6))
        for k in range(1, n + 1):
            view.draw(k / fps)
            if writer is not None:
                writer.write_into(view.canvas.read_yuv420p_into)
            if png is not None:
                png.write(view.canvas.read())
        for sink in (writer, png):
            if sink is not None:
                sink.close()
    finally:
        view.release()
    return n


class ReplayStill:
    """Offscreen pictures of a recording at any time, as the live view drew them: the same
    camera (`CameraSpec`), HUD, inset map, markers, layout (gui/multiview.py), proximity
    rings (gui/proximity.py) and group lines (gui/groups.py).

        still = ReplayStill(ReplaySource("results/run"), (1280, 720))
        image = still.render(40.0)  # (720, 1280, 3) uint8
    """

    def __init__(
        self,
        source: ReplaySource,
        size: tuple[int, int] = (1280, 720),
        camera: str | CameraSpec = "swarm",
        hud: bool = True,
        inset: bool = True,
        markers: bool = True,
        layout: LayoutSpec | None = None,
        proximity: bool = False,
        groups: bool = False,
    ) -> None:
        from skyswarm.gui.multiview import MultiView
        from skyswarm.gui.offscreen import OffscreenCanvas

        self.source, self.hud, self.inset = source, hud, inset
        first = source.frame_at(0.0)
        center, half = scene_extent(shown_points(first))
        self.canvas = OffscreenCanvas(source.scenery, size, tuple(center), half)
        self.canvas.renderer.markers = markers
        spec = camera if isinstance(camera, CameraSpec) else CameraSpec(camera)
        self.layout = layout or LayoutSpec()
        self.views = MultiView(self.layout, spec, size, first, hud, inset)
        self.director = self.views.main
        self.proximity = ProximityLimits.of(source.scenery) if proximity else None
        self.groups = groups

    def render(self, time_s: float, selected: int | None = None) -> np.ndarray:
        """(H, W, 3) uint8 picture at `time_s` (valid until the next render)."""
        self.draw(time_s, selected)
        return self.canvas.read()

    def draw(self, time_s: float, selected: int | None = None) -> None:
        """The picture at `time_s` into the canvas's framebuffer (read it with the canvas's
        read() or read_yuv420p_into())."""
        frame = self.source.frame_at(time_s)
        cam, second = self.views.update(frame)
        extra = group_lines(frame) if self.groups else []
        extra += proximity_lines(frame, self.proximity) if self.proximity is not None else []
        self.canvas.compose(
            frame, cam, self.hud, self.inset, selected, second, self.layout.name, extra
        )

    def release(self) -> None:
        self.canvas.release()
