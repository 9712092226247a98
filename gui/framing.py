"""Framing: which points a view should show, initial cameras, and a camera that follows a swarm.

`SwarmFollower` drives the default video camera (and the replay export): the target eases toward
the alive agents' centroid and the zoom grows at once when an agent would leave the frame, then
shrinks back only slowly, so the picture never jumps in and out.
"""

from __future__ import annotations

import math

import numpy as np

from skyswarm.gui.camera import Camera, OrbitCamera, TopCamera, framing
from skyswarm.gui.scene import Frame

FOLLOW_TAU_S = 2.0  # s, time constant of the target easing toward the swarm centroid
SHRINK_TAU_S = 8.0  # s, time constant of zooming back in once the swarm is smaller again
FILL = 0.8  # fraction of the half-frame the farthest agent may use (a 10 % margin each side)
MIN_DISTANCE_M = 8.0  # m, orbit distance never below this (nor a top view below half of it)


def shown_points(frame: Frame) -> np.ndarray:
    """(M, 3) points a view should show: every agent (base stations included) and the corners
    and endpoints of the mission overlays (areas, coverage grid), m."""
    parts = [np.asarray(frame.positions, dtype=float).reshape(-1, 3)]
    for ov in frame.overlays:
        pts = getattr(ov, "segments", getattr(ov, "corners", None))
        if pts is not None:
            parts.append(np.asarray(pts, dtype=float).reshape(-1, 3))
    pts = np.vstack(parts)
    return pts[np.all(np.isfinite(pts), axis=1)]


def default_camera(kind: str, positions: np.ndarray) -> Camera:
    """A camera framing (N, 3) positions and the ground below them: "orbit" (3D, from the
    south-south-west, above) or "top"."""
    grounded = np.asarray(positions, dtype=float).reshape(-1, 3) * [1.0, 1.0, 0.0]
    center, radius = framing(np.vstack([positions, grounded]))
    if kind == "top":
        return TopCamera((center[0], center[1]), half_height=radius * 1.3 + 2)
    return OrbitCamera(tuple(center), distance=radius * 2.6 + 6, azimuth_deg=-60, elevation_deg=28)


def scene_extent(positions: np.ndarray) -> tuple[np.ndarray, float]:
    """Grid centre and half-extent (m) covering (N, 3) positions with a margin."""
    center, radius = framing(positions)
    return center, radius + 20.0


class SwarmFollower:
    """Keeps an OrbitCamera or TopCamera on the alive agents of successive frames.

    Only moves the camera it is given; it reads frames and never touches the simulation.
    """

    def __init__(self, camera: Camera, aspect: float) -> None:
        if not isinstance(camera, OrbitCamera | TopCamera):
            raise TypeError(f"SwarmFollower drives an OrbitCamera or TopCamera, not {camera!r}")
        self.camera = camera
        self.aspect = aspect

    def update(self, frame: Frame, dt_s: float) -> None:
        """Ease toward the alive mobile agents of `frame` (not base stations) after `dt_s`
        simulated seconds."""
        ok = frame.alive & frame.mobile & np.all(np.isfinite(frame.positions), axis=1)
        pts = frame.positions[ok]
        if len(pts) == 0:
            return
        ease = 1.0 - math.exp(-max(dt_s, 0.0) / FOLLOW_TAU_S)
        shrink = math.exp(-max(dt_s, 0.0) / SHRINK_TAU_S)
        cam = self.camera
        cam.aspect = self.aspect
        if isinstance(cam, TopCamera):
            cam.center = cam.center + ease * (pts[:, :2].mean(axis=0) - cam.center)
            need = self.top_half_height(pts)
            cam.half_height = max(need, cam.half_height * shrink + need * (1 - shrink))
            return
        cam.target = cam.target + ease * (pts.mean(axis=0) - cam.target)
        need = self.orbit_distance(pts)
        cam.distance = max(need, cam.distance * shrink + need * (1 - shrink))

    def orbit_distance(self, pts: np.ndarray) -> float:
        """Smallest orbit distance (m) at which all (N, 3) `pts` project within FILL of the
        half-frame, for the camera's current target and direction."""
        cam = self.camera
        assert isinstance(cam, OrbitCamera)
        view = cam.view  # rows: right, up, -forward; unchanged by distance along the same ray
        rel = pts - cam.target
        x, y = rel @ view[0, :3], rel @ view[1, :3]
        ahead = rel @ -view[2, :3]  # + toward the far side of the target
        tan_y = math.tan(math.radians(cam.fov_y_deg) / 2) * FILL
        tan_x = tan_y * self.aspect
        need = np.maximum(np.abs(x) / tan_x, np.abs(y) / tan_y) - ahead
        return max(MIN_DISTANCE_M, float(need.max()))

    def top_half_height(self, pts: np.ndarray) -> float:
        """Smallest top-view half-height (m) showing all (N, 3) `pts` within FILL."""
        cam = self.camera
        assert isinstance(cam, TopCamera)
        d = np.abs(pts[:, :2] - cam.center)
        need = max(float(d[:, 0].max()) / self.aspect, float(d[:, 1].max())) / FILL
        return max(MIN_DISTANCE_M / 2, need)


KeepOut = tuple[float, float, float, float]  # NDC corner (sx, sy, ex, ey): gui/layout.py
MARKER_PAD_PX = 8.0  # px: a drone's centre this far from a kept-out corner keeps its marker out


class SwarmFraming:
    """The default camera: shows the alive mobile agents (or a group of them) as large as the
    frame allows, a pure function of one frame, so a live view, its replay and a snapshot of
    the same moment show the same picture.

    The camera keeps its direction (orbit: azimuth and elevation; the user may turn it) and
    gets the target at the centre of the agents' bounding box and the smallest distance (top:
    half-height) at which every agent projects within FILL of the half-frame and outside the
    `keep_out` corners (the HUD, legend and inset map: gui/layout.py). `zoom` > 1 stands back.

        framing = SwarmFraming(camera, 1280 / 720, Layout.of(frame, (1280, 720)).keep_out())
        framing.update(frame)  # every frame
    """

    def __init__(
        self,
        camera: Camera,
        aspect: float,
        keep_out: list[KeepOut] | None = None,
        size_px: tuple[int, int] = (1280, 720),
    ) -> None:
        if not isinstance(camera, OrbitCamera | TopCamera):
            raise TypeError(f"SwarmFraming drives an OrbitCamera or TopCamera, not {camera!r}")
        self.camera, self.aspect = camera, aspect
        pad_x, pad_y = 2 * MARKER_PAD_PX / size_px[0], 2 * MARKER_PAD_PX / size_px[1]
        self.keep_out = [
            (sx, sy, max(0.05, ex - pad_x), max(0.05, ey - pad_y))
            for sx, sy, ex, ey in keep_out or []
        ]
        self.group: set[int] | None = None  # ids to frame; None: every alive mobile agent
        self.zoom = 1.0

    def points(self, frame: Frame) -> np.ndarray:
        """(M, 3) positions to frame, m: the group's alive agents, else all alive mobile ones."""
        ok = frame.alive & frame.mobile & np.all(np.isfinite(frame.positions), axis=1)
        if self.group:
            chosen = ok & np.isin(frame.ids, list(self.group))
            ok = chosen if chosen.any() else ok
        return frame.positions[ok]

    def update(self, frame: Frame, dt_s: float = 0.0) -> None:
        """Frame the agents of `frame` (`dt_s` is unused: the framing has no memory)."""
        pts = self.points(frame)
        if len(pts) == 0:
            return
        cam = self.camera
        cam.aspect = self.aspect
        centre = (pts.min(axis=0) + pts.max(axis=0)) / 2
        if isinstance(cam, TopCamera):
            cam.center = centre[:2].copy()
            cam.half_height = self.zoom * self._top_need(pts - centre)
        else:
            cam.target = centre
            cam.distance = self.zoom * self._orbit_need(pts - centre)

    def _orbit_need(self, rel: np.ndarray) -> float:
        cam = self.camera
        assert isinstance(cam, OrbitCamera)
        view = cam.view
        x, y = rel @ view[0, :3], rel @ view[1, :3]
        ahead = rel @ -view[2, :3]
        tan_y = math.tan(math.radians(cam.fov_y_deg) / 2)
        # ndc = (x / (tan_y aspect), y / tan_y) / (distance + ahead): each bound is linear
        need = self._need(x / (tan_y * self.aspect), y / tan_y) - ahead
        return max(MIN_DISTANCE_M, float(need.max()))

    def _top_need(self, rel: np.ndarray) -> float:
        need = self._need(rel[:, 0] / self.aspect, rel[:, 1])
        return max(MIN_DISTANCE_M / 2, float(need.max()))

    def _need(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(N,) the scale s at which each point, at NDC (u / s, v / s), lies within FILL and
        outside every keep-out corner (a corner is left by either coordinate)."""
        need = np.maximum(np.abs(u), np.abs(v)) / FILL
        for sx, sy, ex, ey in self.keep_out:
            a, b = sx * u, sy * v  # > 0 on the corner's side
            inside = (a > 0) & (b > 0)
            leave = np.minimum(a / ex, b / ey)
            need = np.where(inside, np.maximum(need, leave), need)
        return need
