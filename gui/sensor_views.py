"""A UAV's perception in the live view: its camera as a picture-in-picture (the RGB image and
the depth image side by side, scaled up) and the lidar beams drawn in the scene (issue 32).

Reads the sensors of the UAVs' swarms (`[uav.sensors.camera]`, `[uav.sensors.lidar]`: uav/
sensors/camera.py, lidar.py) as they were last sampled; nothing is rendered or cast for the
view. A recording holds neither, so `replay` shows none.

    views = SensorViews(source.agents)
    lines = views.lidar_lines(None)   # every UAV's beams, Renderer.render(extra=lines)
    image = views.camera_image(3)     # (h, w, 4) uint8 of UAV 3's camera, or None
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from skyswarm.gui.drones import colored
from skyswarm.uav.agents import UavAgent
from skyswarm.uav.sensors.base import Sensor
from skyswarm.uav.sensors.camera import Camera as SensorCamera
from skyswarm.uav.sensors.lidar import Lidar

BEAM_HIT = (1.0, 0.95, 0.20, 0.85)  # RGBA: a beam, from the mount to what it hit
BEAM_MISS = (1.0, 0.95, 0.20, 0.12)  # RGBA: a beam with no return, to its max range, faint
PIP_WIDTH_PX = 200  # px: each of the two camera images in the picture-in-picture
CAPTION_PX = 30  # px: the caption band above the images (a line of gui/text.py with padding)
DEPTH_NEAR, DEPTH_FAR = 230.0, 40.0  # grey levels of depth 0 and of max_depth_m (inf: black)


@dataclass
class Sensed:
    """What a video frame shows of the UAVs' sensors (gui/capture.py `Capture(sensors=...)`):
    lidar beams (line vertices) and a camera picture-in-picture, copied at the frame's tick."""

    lines: list[np.ndarray] = field(default_factory=list)
    pip: np.ndarray | None = None  # (h, w, 4) uint8: SensorViews.camera_image

    @classmethod
    def of(cls, agents: Sequence[Any], target: int | None, lidar: bool, camera: bool) -> Sensed:
        """The beams (of `target`, else of every UAV) with `lidar`, and the camera of
        `target` (else of the first UAV with one) with `camera`."""
        views = SensorViews(agents)
        lines = views.lidar_lines(target) if lidar else []
        pip = None
        if camera:
            who = target if target is not None else views.first_with("camera")
            pip = views.camera_image(who) if who is not None else None
        return cls(lines, pip)


class SensorViews:
    """The sensors of the UAV agents in `agents` (any sequence; other agents are skipped)."""

    def __init__(self, agents: Sequence[Any]) -> None:
        self.uavs = {a.id: a for a in agents if isinstance(a, UavAgent)}

    def sensor(self, agent_id: int, name: str) -> tuple[Sensor, int] | None:
        """(sensor, row) of UAV `agent_id`'s sensor `name`, None when it has none on."""
        a = self.uavs.get(agent_id)
        suite = a.swarm.sensors if a is not None else None
        found = suite.sensor(name) if suite is not None else None
        return (found, a.index) if found is not None else None

    def first_with(self, name: str) -> int | None:
        """The first alive UAV (by id) with sensor `name` on, or None."""
        for agent_id in sorted(self.uavs):
            if self.uavs[agent_id].alive and self.sensor(agent_id, name) is not None:
                return agent_id
        return None

    def lidar_lines(self, agent_id: int | None) -> list[np.ndarray]:
        """Line vertices (position + RGBA, two per beam) of the last lidar scan of UAV
        `agent_id`, or of every UAV with a lidar (None): a beam with a return from its origin
        to the hit (BEAM_HIT), one without to `max_range_m` (BEAM_MISS); dead UAVs none."""
        ids = [agent_id] if agent_id is not None else sorted(self.uavs)
        seen: dict[int, tuple[Lidar, list[int]]] = {}  # one block per lidar, all its rows at once
        for i in ids:
            found = self.sensor(i, "lidar")
            if found is not None and isinstance(found[0], Lidar) and self.uavs[i].alive:
                seen.setdefault(id(found[0]), (found[0], []))[1].append(found[1])
        out: list[np.ndarray] = []
        for lidar, rows in seen.values():
            out += _beams(lidar, np.asarray(rows, dtype=np.intp))
        return out

    def camera_image(self, agent_id: int) -> np.ndarray | None:
        """(h, w, 4) uint8: UAV `agent_id`'s last camera sample, RGB and depth side by side,
        each PIP_WIDTH_PX wide (nearest-neighbour), under a caption; None without a camera."""
        from skyswarm.gui.text import text_image

        found = self.sensor(agent_id, "camera")
        if found is None or not isinstance(found[0], SensorCamera):
            return None
        cam, row = found
        rgb = np.asarray(cam.rgb[row])
        h, w = rgb.shape[:2]
        k = max(1, PIP_WIDTH_PX // max(1, w))
        depth = np.asarray(cam.depth[row], dtype=float)
        grey = depth_grey(depth, float(cam.cfg.max_depth_m))
        pair = np.concatenate([rgb, np.repeat(grey[..., None], 3, axis=2)], axis=1)
        big = np.repeat(np.repeat(pair, k, axis=0), k, axis=1)
        image = np.full((big.shape[0] + CAPTION_PX, big.shape[1], 4), 255, dtype=np.uint8)
        image[:CAPTION_PX] = (20, 24, 32, 230)
        image[CAPTION_PX:, :, :3] = big
        caption = text_image([f"UAV {agent_id} camera: rgb | depth"])[:CAPTION_PX]
        cw = min(caption.shape[1], image.shape[1])
        image[: caption.shape[0], :cw] = caption[:, :cw]
        return image


def depth_grey(depth: np.ndarray, max_depth_m: float) -> np.ndarray:
    """(H, W) uint8 grey of a depth image, m: near bright (DEPTH_NEAR) to far dark
    (DEPTH_FAR at `max_depth_m`), black where nothing is seen (inf) or no image (NaN)."""
    t = np.clip(np.nan_to_num(depth, nan=np.inf) / max(max_depth_m, 1e-6), 0.0, 1.0)
    grey = DEPTH_NEAR + (DEPTH_FAR - DEPTH_NEAR) * t
    return np.where(np.isfinite(depth), grey, 0.0).astype(np.uint8)


def _beams(lidar: Lidar, rows: np.ndarray) -> list[np.ndarray]:
    """The beams of `rows` of one lidar (SensorViews.lidar_lines)."""
    ranges = np.asarray(lidar.ranges)[rows]  # (n, M) m, NaN: no return
    origins = np.asarray(lidar.origins)[rows]  # (n, 3)
    dirs = np.asarray(lidar.directions)[rows]  # (n, M, 3)
    if dirs.size == 0 or not np.abs(dirs).any():
        return []  # not sampled yet
    hit = np.isfinite(ranges)
    length = np.where(hit, ranges, float(lidar.cfg.max_range_m))
    ends = origins[:, None, :] + dirs * length[..., None]
    starts = np.broadcast_to(origins[:, None, :], ends.shape)
    out = []
    for mask, color in ((~hit, BEAM_MISS), (hit, BEAM_HIT)):
        if mask.any():
            seg = np.stack([starts[mask], ends[mask]], axis=1).reshape(-1, 3)
            out.append(colored(seg, color))
    return out
