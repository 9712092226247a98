"""Which camera a view uses and how it moves: one `Director` per view, driven by frames only.

The same `CameraSpec` (from `--camera NAME --distance M --elevation DEG --target ID`) gives the
same picture in `view`, `run --video/--frames`, `replay` and `snapshot`: every camera is a pure
function of the frame shown (no easing history), so the replay at time T draws what the live
view drew at T.

- swarm (default): orbit camera keeping the alive UAVs (or `target`'s) large in the frame.
- orbit: about `target` (else the swarm's centre) at `distance` (else the swarm framing's).
- top: orthographic from above, framing the swarm (or `target`); `distance` is its half-height.
- chase: behind `target` (else the first alive UAV), `distance` m back (4).
- fpv: from `target`'s camera mount, along its heading.
- free: fixed at the start on the whole scene (the user moves it).

    director = Director(CameraSpec("chase", target=3), (1280, 720), layout.keep_out())
    director.update(frame)
    canvas.render(frame, director.camera)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skyswarm.gui.camera import (
    Camera,
    ChaseCamera,
    FirstPersonCamera,
    OrbitCamera,
    Pose,
    TopCamera,
)
from skyswarm.gui.framing import KeepOut, SwarmFraming, default_camera, shown_points
from skyswarm.gui.scene import Frame

CAMERAS = ("swarm", "orbit", "top", "chase", "fpv", "free")
DEFAULT_AZIMUTH_DEG = -60.0  # from the south-south-west
DEFAULT_ELEVATION_DEG = 28.0
CHASE_DISTANCE_M = 4.0
FPV_AHEAD_M = 0.12  # m: the camera mount, ahead of the body's centre along its heading


@dataclass(frozen=True)
class CameraSpec:
    """A view's camera as the command line names it (module docstring)."""

    name: str = "swarm"
    distance_m: float | None = None
    elevation_deg: float | None = None
    azimuth_deg: float | None = None
    target: int | None = None

    def __post_init__(self) -> None:
        if self.name not in CAMERAS:
            raise ValueError(f"camera must be one of {', '.join(CAMERAS)}, got {self.name!r}")


class Director:
    """Moves the camera of one view of `size` (width, height) pixels for each frame."""

    def __init__(
        self,
        spec: CameraSpec,
        size: tuple[int, int],
        keep_out: list[KeepOut] | None = None,
        first: Frame | None = None,
    ) -> None:
        self.spec, self.size = spec, size
        self._frame: Frame | None = first
        self.keep_out = keep_out
        self.held = False  # the user moved the camera: `update` leaves the framing alone
        self.framing: SwarmFraming | None = None
        aspect = size[0] / max(1, size[1])
        elevation = DEFAULT_ELEVATION_DEG if spec.elevation_deg is None else spec.elevation_deg
        azimuth = DEFAULT_AZIMUTH_DEG if spec.azimuth_deg is None else spec.azimuth_deg
        if spec.name in ("swarm", "orbit"):
            cam: Camera = OrbitCamera(azimuth_deg=azimuth, elevation_deg=elevation)
        elif spec.name == "top":
            cam = TopCamera()
        elif spec.name == "chase":
            cam = ChaseCamera(self._pose, spec.distance_m or CHASE_DISTANCE_M)
            cam.pitch_deg = -(spec.elevation_deg if spec.elevation_deg is not None else 15.0)
        elif spec.name == "fpv":
            cam = FirstPersonCamera(self._pose, ahead_m=FPV_AHEAD_M)
            if spec.elevation_deg is not None:
                cam.pitch_deg = -spec.elevation_deg
        else:
            pts = shown_points(first) if first is not None else np.zeros((1, 3))
            cam = default_camera("orbit", pts)
        cam.aspect = aspect
        self.camera = cam
        if isinstance(cam, OrbitCamera | TopCamera) and spec.name != "free":
            self.framing = SwarmFraming(cam, aspect, keep_out, size)
            if spec.target is not None:
                self.framing.group = {spec.target}

    def target_id(self, frame: Frame) -> int | None:
        """The agent a chase / FPV camera rides: `spec.target`, else the first alive mobile."""
        if self.spec.target is not None:
            return self.spec.target
        alive = frame.ids[frame.alive & frame.mobile]
        return int(alive[0]) if len(alive) else None

    def _pose(self) -> Pose | None:
        frame = self._frame
        if frame is None:
            return None
        return frame.pose_of(self.target_id(frame))

    def hold(self) -> None:
        """The user moved the camera (mouse): it stays where they put it; a chase or FPV
        camera still rides its UAV (with the user's look offset)."""
        self.held = True

    def resume(self) -> None:
        """Back to the spec's camera: the framing moves the camera again from the next frame."""
        self.held = False

    def resize(self, size: tuple[int, int], keep_out: list[KeepOut] | None = None) -> None:
        """The view is now `size` (width, height) pixels with these kept-out corners (gui/
        layout.py); nothing changes when both are as before."""
        if size == self.size and keep_out == self.keep_out:
            return
        self.size, self.keep_out = size, keep_out
        self.camera.aspect = size[0] / max(1, size[1])
        if self.framing is not None:
            group, zoom = self.framing.group, self.framing.zoom
            self.framing = SwarmFraming(self.camera, self.camera.aspect, keep_out, size)
            self.framing.group, self.framing.zoom = group, zoom

    def update(self, frame: Frame) -> Camera:
        """Move the camera for `frame` (unless `held`); returns it."""
        self._frame = frame
        if self.framing is not None and not self.held:
            self.framing.update(frame)
            cam = self.camera
            if self.spec.distance_m is not None and isinstance(cam, OrbitCamera):
                cam.distance = float(self.spec.distance_m)
            elif self.spec.distance_m is not None and isinstance(cam, TopCamera):
                cam.half_height = float(self.spec.distance_m)
        return self.camera


def inset_camera(frame: Frame) -> TopCamera:
    """The inset map's camera: top view of everything in `frame` (agents, base stations, the
    mission's areas and coverage), square."""
    cam = default_camera("top", shown_points(frame))
    cam.aspect = 1.0
    assert isinstance(cam, TopCamera)
    return cam
