"""Cameras: each is an object with `.matrix` (projection @ view, float64 (4, 4), column vectors).

- OrbitCamera: the overall 3D view; orbit, pan and zoom about a target point.
- TopCamera: the 2D top view; orthographic, north up, pan and zoom.
- ChaseCamera / FirstPersonCamera: subjective views attached to one agent's pose.

World frame is ENU (z up). Pixel coordinates used by `project` and `ray` are image coordinates:
x to the right, y down from the top row, in a viewport of `width` x `height` pixels.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from skyswarm.core.geo import yaw_of

ROTATE_DEG_PER_PX = 0.25  # orbit: degrees of azimuth / elevation per pixel dragged
ZOOM_PER_NOTCH = 0.9  # distance (or half-height) factor per scroll notch
GLIDE_TAU_S = 0.25  # s of wall time: time constant of a camera gliding to a new framing
FOLLOW_TAU_S = 0.12  # s of wall time: how closely a following camera trails its agent
ZOOM_AT_MAX = 20.0  # zoom to the cursor only where its ground point is nearer than this many
# camera distances (beyond, toward the horizon, zoom about the target)
Pose = tuple[np.ndarray, np.ndarray]  # position (3,) m, quaternion (4,) x, y, z, w


def perspective(fov_y_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    f = 1.0 / math.tan(math.radians(fov_y_deg) / 2)
    m = np.zeros((4, 4))
    m[0, 0], m[1, 1] = f / aspect, f
    m[2, 2], m[2, 3] = (far + near) / (near - far), 2 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def orthographic(half_w: float, half_h: float, near: float, far: float) -> np.ndarray:
    m = np.eye(4)
    m[0, 0], m[1, 1] = 1.0 / half_w, 1.0 / half_h
    m[2, 2], m[2, 3] = -2.0 / (far - near), -(far + near) / (far - near)
    return m


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray) -> np.ndarray:
    eye, target, up = (np.asarray(v, dtype=float) for v in (eye, target, up))
    f = target - eye
    f /= math.sqrt(f @ f)
    s = _cross(f, up)
    if math.sqrt(s @ s) < 1e-9:  # looking along `up`: pick any perpendicular side vector
        s = _cross(f, np.array([0.0, 1.0, 0.0]))
    s /= math.sqrt(s @ s)
    u = _cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b of two (3,) vectors (np.cross costs ~30 us of argument handling per call)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


class Camera:
    """Base: aspect ratio, the matrices, projection of points and picking rays."""

    def __init__(self) -> None:
        self.aspect = 16 / 9

    @property
    def view(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def projection(self) -> np.ndarray:
        raise NotImplementedError

    @property
    def matrix(self) -> np.ndarray:
        return self.projection @ self.view

    def fixed(self) -> FixedCamera:
        """This camera's matrices now, computed once: what one frame's drawing reads (several
        parts of a frame need them, and a look-at costs ~0.2 ms of numpy each time)."""
        return FixedCamera(self.view, self.projection, self.aspect)

    def project(self, points: np.ndarray, width: int, height: int) -> np.ndarray:
        """(N, 3) world points (m) -> (N, 2) image pixel coordinates (x right, y down) in a
        `width` x `height` viewport (which also sets the camera's aspect ratio)."""
        self.aspect = width / max(1, height)
        p = np.c_[np.asarray(points, dtype=float).reshape(-1, 3), np.ones(len(points))]
        clip = p @ self.matrix.T
        ndc = clip[:, :3] / clip[:, 3:4]
        return np.c_[(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height]

    def ray(self, px: float, py: float, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """World-space ray (origin (3,), unit direction (3,)) through image pixel (px, py)."""
        self.aspect = width / max(1, height)
        inv = np.linalg.inv(self.matrix)
        x, y = 2 * px / width - 1, 1 - 2 * py / height
        near = inv @ np.array([x, y, -1.0, 1.0])
        far = inv @ np.array([x, y, 1.0, 1.0])
        a, b = near[:3] / near[3], far[:3] / far[3]
        d = b - a
        return a, d / np.linalg.norm(d)

    # input: subclasses override what they support
    def drag(self, dx: float, dy: float, pan: bool = False) -> None:
        """Mouse drag by (dx, dy) pixels, pyglet convention (dy > 0 is up)."""

    def scroll(self, notches: float) -> None:
        """Mouse wheel: positive notches zoom in."""

    def zoom_at(self, notches: float, px: float, py: float, width: int, height: int) -> None:
        """Mouse wheel over image pixel (px, py): zoom keeping that point under the cursor where
        the camera supports it (orbit, top), else as `scroll`."""
        self.scroll(notches)

    def animate(self, dt_s: float) -> None:
        """Advance glides and following by `dt_s` wall seconds (cameras that have them)."""

    def _hit_ground(self, px: float, py: float, w: int, h: int, z: float) -> np.ndarray | None:
        """Where the ray through pixel (px, py) meets the plane at height `z`, or None."""
        origin, d = self.ray(px, py, w, h)
        if abs(d[2]) < 1e-9:
            return None
        t = (z - origin[2]) / d[2]
        return origin + t * d if t > 0 else None


class FixedCamera(Camera):
    """Given view and projection matrices (a snapshot of another camera)."""

    def __init__(self, view: np.ndarray, projection: np.ndarray, aspect: float) -> None:
        super().__init__()
        self.aspect = aspect
        self._view, self._projection = view, projection

    @property
    def view(self) -> np.ndarray:
        return self._view

    @property
    def projection(self) -> np.ndarray:
        return self._projection


class Glide:
    """Eases named float attributes of a camera toward goal values (exponential, GLIDE_TAU_S);
    the angle `azimuth_deg` the short way round. Finished when every value is within 0.1 %."""

    def __init__(self, camera: Camera, goal: dict[str, object]) -> None:
        self.camera, self.goal = camera, goal

    def step(self, dt_s: float) -> bool:
        """Move by `dt_s` wall seconds; True when the goal is reached (values set exactly)."""
        k = 1.0 - math.exp(-max(dt_s, 0.0) / GLIDE_TAU_S)
        done = True
        for name, goal in self.goal.items():
            now = np.asarray(getattr(self.camera, name), dtype=float)
            want = np.asarray(goal, dtype=float)
            delta = want - now
            if name == "azimuth_deg":
                delta = (delta + 180.0) % 360.0 - 180.0
            scale = max(1.0, float(np.max(np.abs(want))))
            if float(np.max(np.abs(delta))) <= 1e-3 * scale:
                new = want
            else:
                new, done = now + k * delta, False
            setattr(self.camera, name, float(new) if np.ndim(new) == 0 else np.array(new))
        return done


class _GuidedCamera(Camera):
    """A camera that glides to goals (`Glide`) and can keep a point centred (`follow`: a
    callable giving the point, eased in with FOLLOW_TAU_S); `_pull` says how it moves there."""

    def __init__(self) -> None:
        super().__init__()
        self.glide: Glide | None = None
        self.follow: Callable[[], np.ndarray | None] | None = None  # point to keep centred

    def _glide(self, **goal: object) -> None:
        """Start a glide to the given attribute values (None: leave that one); input cancels."""
        wanted = {name: value for name, value in goal.items() if value is not None}
        self.glide = Glide(self, wanted) if wanted else None

    def animate(self, dt_s: float) -> None:
        if self.glide is not None and self.glide.step(dt_s):
            self.glide = None
        point = self.follow() if self.follow is not None else None
        if point is not None and np.all(np.isfinite(point)):
            k = 1.0 - math.exp(-max(dt_s, 0.0) / FOLLOW_TAU_S)
            self._pull(np.asarray(point, dtype=float), k)

    def _pull(self, point: np.ndarray, k: float) -> None:
        """Move the fraction `k` of the way toward centring `point` (m, world)."""
        raise NotImplementedError


class OrbitCamera(_GuidedCamera):
    """Perspective camera orbiting `target` at `distance` m, `azimuth_deg` from +x counter-
    clockwise and `elevation_deg` above the horizon."""

    def __init__(
        self,
        target: tuple[float, float, float] = (0.0, 0.0, 0.0),
        distance: float = 30.0,
        azimuth_deg: float = -60.0,
        elevation_deg: float = 30.0,
        fov_y_deg: float = 50.0,
    ) -> None:
        super().__init__()
        self.target = np.asarray(target, dtype=float)
        self.distance = float(distance)
        self.azimuth_deg = float(azimuth_deg)
        self.elevation_deg = float(elevation_deg)
        self.fov_y_deg = fov_y_deg

    def glide_to(self, target: np.ndarray | None = None, distance: float | None = None) -> None:
        """Move smoothly (GLIDE_TAU_S) to a new target and/or distance; input cancels it."""
        self._glide(
            target=None if target is None else np.asarray(target, dtype=float),
            distance=None if distance is None else float(distance),
        )

    def _pull(self, point: np.ndarray, k: float) -> None:
        self.target = self.target + k * (point - self.target)

    def zoom_at(self, notches: float, px: float, py: float, width: int, height: int) -> None:
        """Zoom toward the ground point under the cursor (the plane through the target): the
        target and the eye move toward it by the zoom factor, so it stays under the cursor.
        While following an agent, zoom about the agent."""
        p = (
            None
            if self.follow is not None
            else self._hit_ground(px, py, width, height, float(self.target[2]))
        )
        before = self.distance
        self.scroll(notches)
        if p is None or np.linalg.norm(p - self.target) > ZOOM_AT_MAX * before:
            return
        f = self.distance / before
        self.target = p + f * (self.target - p)
        if self.glide is not None:
            self.glide.goal.pop("target", None)

    @property
    def eye(self) -> np.ndarray:
        az, el = math.radians(self.azimuth_deg), math.radians(self.elevation_deg)
        offset = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
        return self.target + self.distance * offset

    @property
    def view(self) -> np.ndarray:
        return look_at(self.eye, self.target, np.array([0.0, 0.0, 1.0]))

    @property
    def projection(self) -> np.ndarray:
        near = max(0.01, self.distance * 0.01)
        return perspective(self.fov_y_deg, self.aspect, near, self.distance * 20 + 1000)

    def drag(self, dx: float, dy: float, pan: bool = False) -> None:
        if pan:
            v = self.view
            right, up = v[0, :3], v[1, :3]
            scale = self.distance * 0.0015
            self.target = self.target - (dx * right + dy * up) * scale
            self.follow = self.glide = None  # panning takes the camera off the agent
            return
        self.azimuth_deg = (self.azimuth_deg - dx * ROTATE_DEG_PER_PX + 180) % 360 - 180
        self.elevation_deg = float(np.clip(self.elevation_deg - dy * ROTATE_DEG_PER_PX, -89, 89))

    def scroll(self, notches: float) -> None:
        self.distance = float(np.clip(self.distance * ZOOM_PER_NOTCH**notches, 0.2, 1e5))


class TopCamera(_GuidedCamera):
    """Orthographic view straight down, north (+y) up; `half_height` m visible above centre."""

    def __init__(self, center: tuple[float, float] = (0.0, 0.0), half_height: float = 20.0) -> None:
        super().__init__()
        self.center = np.asarray(center, dtype=float)
        self.half_height = float(half_height)
        self.viewport_height = 720  # px, for converting drags to metres

    def glide_to(self, center: np.ndarray | None = None, half_height: float | None = None) -> None:
        """Move smoothly (GLIDE_TAU_S) to a new centre and/or half-height."""
        self._glide(
            center=None if center is None else np.asarray(center, dtype=float)[:2],
            half_height=None if half_height is None else float(half_height),
        )

    def _pull(self, point: np.ndarray, k: float) -> None:
        self.center = self.center + k * (point[:2] - self.center)

    def zoom_at(self, notches: float, px: float, py: float, width: int, height: int) -> None:
        """Zoom keeping the ground point under the cursor fixed (about the centre if following)."""
        self.aspect = width / max(1, height)
        p = None if self.follow is not None else self._hit_ground(px, py, width, height, 0.0)
        before = self.half_height
        self.scroll(notches)
        if p is not None:
            f = self.half_height / before
            self.center = p[:2] + f * (self.center - p[:2])

    @property
    def view(self) -> np.ndarray:
        eye = np.array([self.center[0], self.center[1], 1000.0])
        return look_at(eye, eye - [0, 0, 1], np.array([0.0, 1.0, 0.0]))

    @property
    def projection(self) -> np.ndarray:
        return orthographic(self.half_height * self.aspect, self.half_height, 1.0, 3000.0)

    def drag(self, dx: float, dy: float, pan: bool = True) -> None:
        m_per_px = 2 * self.half_height / max(1, self.viewport_height)
        self.center = self.center - np.array([dx, dy]) * m_per_px
        self.follow = self.glide = None

    def scroll(self, notches: float) -> None:
        self.half_height = float(np.clip(self.half_height * ZOOM_PER_NOTCH**notches, 0.5, 1e5))


class _AgentCamera(Camera):
    """Follows `pose()` (position, quaternion) of one agent; drags turn the look offset."""

    def __init__(self, pose: Callable[[], Pose | None], fov_y_deg: float = 70.0) -> None:
        super().__init__()
        self.pose = pose
        self.fov_y_deg = fov_y_deg
        self.yaw_offset_deg = 0.0
        self.pitch_deg = -15.0
        self._last: Pose = (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))

    def _pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Agent position and the unit look direction (heading + offsets)."""
        pose = self.pose()
        if pose is not None and np.all(np.isfinite(pose[0])):
            self._last = pose
        pos, q = self._last
        yaw = yaw_of(q) + math.radians(self.yaw_offset_deg)
        pitch = math.radians(self.pitch_deg)
        d = np.array([math.cos(pitch) * math.cos(yaw), math.cos(pitch) * math.sin(yaw)])
        return np.asarray(pos, dtype=float), np.r_[d, math.sin(pitch)]

    @property
    def projection(self) -> np.ndarray:
        return perspective(self.fov_y_deg, self.aspect, 0.05, 2000.0)

    def drag(self, dx: float, dy: float, pan: bool = False) -> None:
        self.yaw_offset_deg -= dx * ROTATE_DEG_PER_PX
        self.pitch_deg = float(np.clip(self.pitch_deg + dy * ROTATE_DEG_PER_PX, -89, 89))


class ChaseCamera(_AgentCamera):
    """Behind and above the agent, looking at it along its heading."""

    def __init__(self, pose: Callable[[], Pose | None], distance: float = 4.0) -> None:
        super().__init__(pose)
        self.distance = distance

    @property
    def view(self) -> np.ndarray:
        pos, d = self._pose()
        return look_at(pos - d * self.distance, pos, np.array([0.0, 0.0, 1.0]))

    def scroll(self, notches: float) -> None:
        self.distance = float(np.clip(self.distance * ZOOM_PER_NOTCH**notches, 0.3, 500.0))


class FirstPersonCamera(_AgentCamera):
    """From the agent's position (just ahead of its body) along its heading."""

    def __init__(self, pose: Callable[[], Pose | None], ahead_m: float = 0.3) -> None:
        super().__init__(pose)
        self.pitch_deg = -10.0
        self.ahead_m = ahead_m

    @property
    def view(self) -> np.ndarray:
        pos, d = self._pose()
        eye = pos + d * self.ahead_m
        return look_at(eye, eye + d, np.array([0.0, 0.0, 1.0]))


def framing(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Centre (3,) and radius (m) of the bounding box of (N, 3) points, for initial cameras."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if len(pts) == 0:
        return np.zeros(3), 10.0
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    return (lo + hi) / 2, max(2.0, float(np.linalg.norm(hi - lo)) / 2)
