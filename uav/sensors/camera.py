"""Depth, RGB and segmentation cameras, `[uav.sensors.camera]`: a pinhole camera fixed in each
UAV's body frame; every camera of the swarm is rendered in one pass per sample.

This module holds the camera's model: its config, its pose and projection (numpy over the
swarm), and the arrays it exposes. The pixels come from a `CameraRenderer` (a Protocol declared
here) found by name in a small registry: the shipped one, `egl`, is gui/sensor_camera.py
(moderngl on an EGL context, no window, Mesa llvmpipe on a server). uav/ never imports gui/:
`skyswarm run` and `run_scenario` load gui/sensor_camera.py when a scenario switches a camera
on (app/api.py), so a run without one never imports moderngl; a script that builds its swarm by
hand imports `skyswarm.gui.sensor_camera` first.

The sensor frame is the body frame turned by `mount_rpy_deg` (roll, pitch, yaw; as the lidar's:
pitch +90 looks straight down); the camera looks along the sensor frame's +x with +z up in the
image, from the body centre plus `mount_m`. The camera's own UAV is never drawn in its image.

What a sample holds (N cameras, H x W pixels, row 0 at the top of the image):
- `depth` (N, H, W) float32 m: the distance along the optical axis (z-depth, as a depth camera
  reports it) written by the shader from the view-space position, not read back from a
  non-linear depth buffer; `inf` where nothing lies within `max_depth_m` (the sky); white noise
  `depth_sigma_m` on finite pixels; NaN for a dead UAV's camera;
- `rgb` (N, H, W, 3) uint8: flat colours under one light (the GUI's palette), the sky colour
  where nothing is seen;
- `segmentation` (N, H, W) int32: the agent id (>= 0) of the UAV seen, else a class:
  GROUND (-1), OBSTACLE (-2, box and mesh obstacles), TERRAIN (-3, the scenario's height grid
  or terrain mesh), NOTHING (the int32 minimum: the sky, or a dead UAV's camera).
The renderer sees the ground, the scenario's obstacles (boxes, and OBJ meshes as placed and
scaled), its terrain (`[world] terrain` as the OBJ's own triangles, `heightfield` as the
grid's) and the UAVs (drawn with the GUI's mesh). Noise draws (N, H, W) normals from the `sensors`
stream at every sample when `depth_sigma_m` > 0, so one seed gives one image sequence.

Usage, in a scenario (64 x 64 at 10 Hz, looking ahead) and in a behaviour:

    [uav.sensors.camera]
    enabled = true
    width = 64
    height = 64
    period_s = 0.1

    cam = swarm.sensors.sensor("camera")  # None while it is off
    cam.depth[:, 32, 32]                   # (N,) m straight ahead of every UAV
    np.unique(cam.segmentation[0])         # agent ids (and classes) UAV 0 sees
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

import numpy as np

from skyswarm.core.schema import ConfigError, param
from skyswarm.uav.sensors.base import Sensor, Setting, Truth, register_sensor
from skyswarm.uav.sensors.lidar import mount_rotation

if TYPE_CHECKING:
    from skyswarm.core.config import WorldConfig

GROUND = -1  # segmentation class of the ground plane (the World's GROUND id)
OBSTACLE = -2  # segmentation class of the box and mesh obstacles
TERRAIN = -3  # segmentation class of the terrain (height grid or terrain mesh)
NOTHING = int(np.iinfo(np.int32).min)  # segmentation of the sky (nothing within max_depth_m)
MAX_ID = 1 << 24  # agent ids below this are exact in the renderer's float32 channel
# sensor frame (x ahead, y left, z up) -> OpenGL eye frame (x right, y up, looking down -z)
_GL_FROM_SENSOR = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, 1.0], [-1.0, 0.0, 0.0]])


@dataclass(frozen=True)
class CameraConfig:
    """camera: depth, RGB and segmentation images from a pinhole camera on every UAV"""

    enabled: bool | None = param(None, "render the cameras")
    period_s: float | None = param(None, "frame period, s (whole ticks)", gt=0.0)
    width: int | None = param(None, "image width, px", ge=1, le=4096)
    height: int | None = param(None, "image height, px", ge=1, le=4096)
    fov_deg: float | None = param(None, "horizontal field of view, deg", gt=0.0, lt=180.0)
    near_m: float | None = param(None, "nearest depth drawn, m", gt=0.0)
    max_depth_m: float | None = param(None, "farthest depth drawn, m (beyond: inf)", gt=0.0)
    depth_sigma_m: float | None = param(None, "depth noise (white), m", ge=0.0)
    mount_m: tuple[float, float, float] | None = param(None, "camera centre, body frame, m")
    mount_rpy_deg: tuple[float, float, float] | None = param(
        None, "camera frame: roll, pitch, yaw from the body frame, deg (pitch 90: down)"
    )
    renderer: str | None = param(None, "camera renderer by name (egl: gui/sensor_camera.py)")
    record_every: int | None = param(
        None,
        "write every k-th frame to the results' array log (arrays/camera.bin), 0: never",
        ge=0,
    )


@dataclass(frozen=True)
class ImageReading:
    """A controller's view of the last frames (`SwarmState.camera`) for its n agents: `tick`
    of the frame (-1: none yet), `depth` (n, H, W) float32 m, `rgb` (n, H, W, 3) uint8,
    `segmentation` (n, H, W) int32 (as on `Camera`) and `K` (3, 3) px."""

    tick: int
    depth: np.ndarray
    rgb: np.ndarray
    segmentation: np.ndarray
    K: np.ndarray


@dataclass(frozen=True)
class CameraScene:
    """The static scene and the agents a renderer draws: `ground` (the plane z = 0), box
    obstacles as `box_centers` (B, 3) m, `box_sizes` (B, 3) m (full) and `box_yaw_rad` (B,),
    the (N,) `ids` of the swarm's agents (their segmentation values), and static triangle
    `meshes`: (vertices (V, 3) m world, faces (F, 3) int, class) each, the terrain (TERRAIN)
    and mesh obstacles (OBSTACLE)."""

    ground: bool
    box_centers: np.ndarray
    box_sizes: np.ndarray
    box_yaw_rad: np.ndarray
    ids: np.ndarray
    meshes: tuple[tuple[np.ndarray, np.ndarray, int], ...] = ()


@dataclass(frozen=True)
class CameraViews:
    """One sample of the swarm's N cameras: `view` (N, 4, 4) world -> OpenGL eye frame,
    `projection` (4, 4) OpenGL clip matrix (near_m .. max_depth_m), the agents' `position`
    (N, 3) m, `rotation` (N, 3, 3) body -> world and `alive` (N,) bool (dead UAVs are not
    drawn; their cameras render nothing)."""

    view: np.ndarray
    projection: np.ndarray
    position: np.ndarray
    rotation: np.ndarray
    alive: np.ndarray


class CameraImages(NamedTuple):
    """One sample's images, row 0 at the top: depth (N, H, W) float32 m (inf: nothing),
    rgb (N, H, W, 3) uint8, segmentation (N, H, W) int32 (see the module docstring)."""

    depth: np.ndarray
    rgb: np.ndarray
    segmentation: np.ndarray


class CameraRenderer(Protocol):
    """Renders every camera of a sample: `render(views)` -> CameraImages of (width, height)
    images, all of them in one pass. Built by a `RendererFactory(width, height, scene)`.

    Rules (tests/gui/test_camera_sensor.py holds the shipped one to them): depth is the
    view-space z-depth within 1 %; a camera never draws its own agent (instance i of
    `views` in image i); dead agents are not drawn; the same views give the same images."""

    def render(self, views: CameraViews) -> CameraImages: ...


RendererFactory = Callable[[int, int, CameraScene], CameraRenderer]
_RENDERERS: dict[str, RendererFactory] = {}


def register_camera_renderer(name: str, factory: RendererFactory) -> None:
    """Make `factory` the camera renderer `name` (`[uav.sensors.camera] renderer = NAME`);
    registering a name again replaces it (a module reloaded, a test's fake)."""
    _RENDERERS[name] = factory


def camera_renderers() -> dict[str, RendererFactory]:
    """name -> factory of the registered camera renderers."""
    return dict(_RENDERERS)


def projection_matrix(cfg: CameraConfig) -> np.ndarray:
    """(4, 4) OpenGL perspective of the pinhole: horizontal `fov_deg`, square pixels,
    depth near_m .. max_depth_m."""
    aspect = cfg.width / cfg.height
    t = np.tan(np.radians(cfg.fov_deg) / 2) / aspect  # tan of half the vertical FOV
    n, f = cfg.near_m, cfg.max_depth_m
    return np.array(
        [[1 / (t * aspect), 0, 0, 0], [0, 1 / t, 0, 0],
         [0, 0, (f + n) / (n - f), 2 * f * n / (n - f)], [0, 0, -1, 0]]
    )  # fmt: skip


def intrinsics(cfg: CameraConfig) -> np.ndarray:
    """(3, 3) pinhole matrix K in pixels (fx = fy, principal point at the image centre): a
    point (x right, y down, z ahead) of the camera frame lands at column u, row v with
    (u, v, 1) ~ K (x, y, z), pixel centres at half-integers."""
    f = cfg.width / 2 / np.tan(np.radians(cfg.fov_deg) / 2)
    return np.array([[f, 0.0, cfg.width / 2], [0.0, f, cfg.height / 2], [0.0, 0.0, 1.0]])


def camera_poses(
    cfg: CameraConfig, position: np.ndarray, rotation: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Eyes (N, 3) m and sensor-to-world rotations (N, 3, 3) from the agents' (N, 3) positions
    and (N, 3, 3) body-to-world rotations."""
    mount = mount_rotation(cfg.mount_rpy_deg)
    eye = position + rotation @ np.asarray(cfg.mount_m, dtype=float)
    return eye, rotation @ mount


def view_matrices(eye: np.ndarray, sensor_to_world: np.ndarray) -> np.ndarray:
    """(N, 4, 4) world -> OpenGL eye frame matrices of cameras at (N, 3) `eye` m."""
    rot = _GL_FROM_SENSOR @ np.transpose(sensor_to_world, (0, 2, 1))
    view = np.zeros((len(eye), 4, 4))
    view[:, :3, :3] = rot
    view[:, :3, 3] = -np.einsum("nij,nj->ni", rot, eye)
    view[:, 3, 3] = 1.0
    return view


def _scene(setting: Setting) -> CameraScene:
    boxes = np.asarray(setting.boxes, dtype=float).reshape(-1, 6)
    yaw = setting.box_yaw_rad if setting.box_yaw_rad is not None else np.zeros(len(boxes))
    ids = setting.ids if setting.ids is not None else np.arange(setting.n)
    ground = bool(setting.world.has_ground) if setting.world is not None else True
    meshes = scenery_meshes(setting.scenery, setting.base_dir)
    return CameraScene(ground, boxes[:, :3], 2 * boxes[:, 3:], np.asarray(yaw, float), ids, meshes)


def scenery_meshes(
    world: WorldConfig | None, base_dir: Path | None
) -> tuple[tuple[np.ndarray, np.ndarray, int], ...]:
    """The scenario's static triangles as the physics builds them (core/simulator.py): the
    terrain OBJ and the height grid (TERRAIN), each mesh obstacle scaled and moved to its
    centre (OBSTACLE); paths relative to `base_dir` (the working directory without one)."""
    if world is None:
        return ()
    from skyswarm.core.backends.meshes import load_mesh
    from skyswarm.core.backends.terrain import load_height_grid

    base = Path(base_dir) if base_dir is not None else Path()
    out = []
    if world.terrain:
        out.append((*load_mesh(base / world.terrain), TERRAIN))
    if world.heightfield:
        grid = load_height_grid(
            base / world.heightfield, world.heightfield_cell_m, world.heightfield_origin
        )
        out.append((*grid.triangles(), TERRAIN))
    for ob in world.obstacles:
        if ob.type == "mesh":
            v, f = load_mesh(base / ob.mesh, ob.scale)
            out.append((v + np.asarray(ob.center, dtype=float), f, OBSTACLE))
    return tuple(out)


@register_sensor
class Camera(Sensor):
    """The last images of the swarm's cameras: `depth`, `rgb`, `segmentation` (see the module
    docstring), `K` (3, 3) the pinhole matrix; inf / sky / NOTHING before the first sample."""

    name = "camera"
    Config = CameraConfig
    defaults = CameraConfig(
        enabled=False,  # off unless a scenario turns it on (it renders)
        period_s=0.1,  # s, 10 Hz
        width=64,  # px
        height=64,  # px
        fov_deg=90.0,  # deg, horizontal
        near_m=0.05,  # m
        max_depth_m=100.0,  # m
        depth_sigma_m=0.0,  # m
        mount_m=(0.0, 0.0, 0.0),  # m
        mount_rpy_deg=(0.0, 0.0, 0.0),  # deg: looking ahead
        renderer="egl",
        record_every=0,  # frames: no array log
    )
    columns = ("camera_min_depth_m",)

    def __init__(self, cfg: CameraConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        factory = _RENDERERS.get(cfg.renderer)
        if factory is None:
            raise ConfigError(
                "", f"uav.sensors.{self.name}.renderer", cfg.renderer,
                "a registered camera renderer (egl: gui/sensor_camera.py, loaded by "
                "`skyswarm run`; needs pip install 'skyswarm[gui]')",
            )  # fmt: skip
        if cfg.near_m >= cfg.max_depth_m:
            raise ConfigError(
                "", f"uav.sensors.{self.name}.near_m", cfg.near_m,
                f"less than max_depth_m ({cfg.max_depth_m})",
            )  # fmt: skip
        scene = _scene(setting)
        if len(scene.ids) and (scene.ids.min() < 0 or scene.ids.max() >= MAX_ID):
            raise ValueError(f"camera: agent ids must lie in 0 .. {MAX_ID - 1}")
        self.renderer = factory(cfg.width, cfg.height, scene)
        self.projection = projection_matrix(cfg)
        self.K = intrinsics(cfg)
        shape = (self.n, cfg.height, cfg.width)
        self.depth = np.full(shape, np.inf, dtype=np.float32)
        self.rgb = np.zeros((*shape, 3), dtype=np.uint8)
        self.segmentation = np.full(shape, NOTHING, dtype=np.int32)
        self.frames = 0  # samples taken

    def sample(self, tick: int, truth: Truth) -> None:
        eye, rot = camera_poses(self.cfg, truth.position, truth.rotation)
        views = CameraViews(
            view_matrices(eye, rot), self.projection, truth.position, truth.rotation,
            np.asarray(truth.alive, dtype=bool),
        )  # fmt: skip
        depth, rgb, seg = self.renderer.render(views)
        if self.cfg.depth_sigma_m > 0:
            noise = self.rng.standard_normal(depth.shape).astype(np.float32)
            depth = np.maximum(depth + np.float32(self.cfg.depth_sigma_m) * noise, 0)  # inf: inf
        dead = ~views.alive
        if dead.any():
            depth[dead], rgb[dead], seg[dead] = np.nan, 0, NOTHING
        self.depth, self.rgb, self.segmentation = depth, rgb, seg
        self.frames += 1

    def reading(self, rows: np.ndarray) -> ImageReading:
        """The last frames of the swarm indices `rows` (copies)."""
        return ImageReading(
            self.sampled_tick, self.depth[rows], self.rgb[rows], self.segmentation[rows], self.K
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The array log's record: the last `depth` (N, H, W) float32 m, `rgb` (N, H, W, 3)
        uint8 and `segmentation` (N, H, W) int32."""
        return {"depth": self.depth, "rgb": self.rgb, "segmentation": self.segmentation}

    def array_constants(self) -> dict[str, np.ndarray]:
        """`K` (3, 3) the pinhole matrix, px."""
        return {"K": self.K}

    def record(self) -> np.ndarray:
        """(N, 1): the nearest depth of the last image, m (inf: nothing; NaN: dead)."""
        return self.depth.reshape(self.n, -1).min(axis=1, initial=np.inf)[:, None].astype(float)
