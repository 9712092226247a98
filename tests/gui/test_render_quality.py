"""What makes the 3D view watchable, in pixels (offscreen EGL): every drone visible at the default
camera in its role colour, quadrotor meshes up close from any side, a shadow under a hovering
drone."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.gui.conftest import ROOT, shade_match

FLOCK = ROOT / "configs" / "flocking_coverage.toml"
SIZE = (640, 360)


def _frame(positions: list[list[float]], role: str = "uav") -> object:
    from skyswarm.gui.scene import Frame, upright

    n = len(positions)
    return Frame(
        time_s=0.0, ids=np.arange(1, n + 1), roles=[role], role_index=np.zeros(n, int),
        positions=np.array(positions, float), orientations=upright(n), alive=np.ones(n, bool),
    )  # fmt: skip


@pytest.fixture(scope="module")
def canvas() -> Iterator[object]:
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.scene import Scenery

    c = OffscreenCanvas(Scenery(), SIZE, (0.0, 0.0), 30.0)
    yield c
    c.release()


def _role_pixels(img: np.ndarray, x: float, y: float, rgb: tuple[float, ...], r: int = 6) -> int:
    xi, yi = int(round(x)), int(round(y))
    patch = img[max(0, yi - r) : yi + r + 1, max(0, xi - r) : xi + r + 1].reshape(-1, 3)
    return sum(shade_match(p, rgb) for p in patch)


def test_every_alive_drone_covers_9_pixels_of_its_role_colour_at_the_default_camera() -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.framing import default_camera, scene_extent, shown_points
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.renderer import LEADER, legend_entries, role_color
    from skyswarm.gui.scene import LiveSource

    sim = Simulator.from_scenario(load_scenario(FLOCK))
    for _ in range(800):  # 2 s: the swarm has taken off and spread
        sim.step()
    src = LiveSource(sim)
    frame = src.frame()
    shown = shown_points(frame)
    center, half = scene_extent(shown)
    canvas = OffscreenCanvas(src.scenery, (1280, 720), tuple(center), half)
    cam = default_camera("orbit", shown)
    img = canvas.render(frame, cam)
    canvas.release()
    sim.close()
    px = cam.project(frame.positions, 1280, 720)
    drones = np.flatnonzero(frame.alive & frame.mobile)
    assert len(drones) >= 10  # the reference swarm
    # The mission names its leader (Mission.role_members): exactly one at 2 s, drawn in LEADER.
    assert frame.leaders.sum() == 1
    counts, other = [], []
    for i in drones:
        role = frame.roles[frame.role_index[i]]
        rgb = LEADER if frame.leaders[i] else role_color(role, int(frame.role_index[i]))
        counts.append(_role_pixels(img, *px[i], rgb))
        wrong = role_color(role) if frame.leaders[i] else LEADER
        other.append(_role_pixels(img, *px[i], wrong, r=0))  # the drone's own centre pixel
    # At this camera a drone's mesh is ~1-2 px: the role-colour dot gives each one >= 9 px,
    # and no drone's centre shows the other class's colour (leader vs followers).
    assert min(counts) >= 9, counts
    assert max(other) == 0, other
    labels = [label for label, _ in legend_entries(frame)]
    assert labels[:2] == ["base_station", "uav (follower)"] and "leader" in labels


@pytest.mark.parametrize("azimuth", [0.0, 90.0, 180.0, 270.0])
def test_drone_3_m_from_the_camera_is_a_quadrotor_mesh_from_every_side(canvas, azimuth) -> None:
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.renderer import ROLE_COLORS

    frame = _frame([[0.0, 0.0, 2.0]])
    cam = OrbitCamera((0.0, 0.0, 2.0), distance=3.0, azimuth_deg=azimuth, elevation_deg=25.0)
    img = canvas.render(frame, cam)
    r = canvas.renderer
    assert r.agents["uav"].count == 1 and r.agents["uav#lod"].count == 0  # the mesh, not the box
    mask = np.array([[shade_match(p, ROLE_COLORS["uav"]) for p in row] for row in img[::2, ::2]])
    ys, xs = np.nonzero(mask)
    assert len(ys) > 50  # big on screen: ~100 px across at 3 m
    # A quadrotor (a hub, four arms, rotor discs) fills well under the 95 % of its
    # bounding rectangle that its bounding box (the far LOD) fills from any side.
    fill = len(ys) / ((np.ptp(ys) + 1) * (np.ptp(xs) + 1))
    assert fill < 0.85, fill  # measured: mesh 0.70-0.71, box 0.96


def test_far_drone_is_drawn_as_its_box_and_a_dot(canvas) -> None:
    from skyswarm.gui.camera import OrbitCamera

    cam = OrbitCamera((0.0, 0.0, 2.0), distance=150.0, azimuth_deg=0.0, elevation_deg=25.0)
    r = canvas.renderer
    r.markers = False  # meshes only: the far box (and a small dot)
    try:
        canvas.render(_frame([[0.0, 0.0, 2.0]]), cam)
        assert r.agents["uav"].count == 0 and r.agents["uav#lod"].count == 1
    finally:
        r.markers = True
    canvas.render(_frame([[0.0, 0.0, 2.0]]), cam)  # markers (the default): the marker alone
    assert r.agents["uav"].count == 0 and r.agents["uav#lod"].count == 0


def test_shadow_darkens_the_ground_under_a_hovering_drone(canvas) -> None:
    from skyswarm.gui.camera import OrbitCamera

    cam = OrbitCamera((0.0, 0.0, 1.0), distance=8.0, azimuth_deg=-60.0, elevation_deg=40.0)
    empty = canvas.render(_frame([[50.0, 50.0, -100.0]]), cam).astype(float).copy()
    hover = canvas.render(_frame([[0.0, 0.0, 2.0]]), cam).astype(float)
    x, y = cam.project(np.array([[0.0, 0.0, 0.0]]), *SIZE)[0]
    xi, yi = int(round(x)), int(round(y))
    below = hover[yi - 1 : yi + 2, xi - 1 : xi + 2].mean()
    bare = empty[yi - 1 : yi + 2, xi - 1 : xi + 2].mean()
    # SHADOW_ALPHA 0.45 at the centre, faded to 0.45 / (1 + 2 * 2 / 40) = 0.41 at 2 m height.
    assert below < 0.7 * bare, (below, bare)
    # ... and only there: 3 m to the side the ground is unchanged.
    x2, y2 = cam.project(np.array([[3.0, 0.0, 0.0]]), *SIZE)[0]
    xs, ys = int(round(x2)), int(round(y2))
    side = (hover - empty)[ys - 1 : ys + 2, xs - 1 : xs + 2]
    assert np.abs(side).max() < 3


def test_replay_shows_the_same_overlays_and_hud_as_live(tmp_path) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.camera import OrbitCamera
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.replay import ReplaySource
    from skyswarm.gui.scene import Frame, LiveSource

    sim = Simulator.from_scenario(load_scenario(FLOCK), tmp_path / "run")
    for _ in range(4000):  # 10 s: the base station has coverage reports (a timeline sample)
        sim.step()
    live = LiveSource(sim).frame()
    sim.finish()
    sim.close()
    replay = ReplaySource(tmp_path / "run").frame_at(10.0)
    assert replay.time_s == pytest.approx(10.0) and live.time_s == pytest.approx(10.0)
    assert replay.hud == live.hud and any("coverage" in line for line in live.hud)

    def overlays_only(f: Frame, overlays: list | None = None) -> Frame:
        shown = f.overlays if overlays is None else overlays
        return Frame(f.time_s, f.ids[:0], [], f.role_index[:0], f.positions[:0],
                     f.orientations[:0], f.alive[:0], shown)  # fmt: skip

    canvas = OffscreenCanvas(LiveSource(sim).scenery, SIZE, (0.0, 0.0), 60.0)
    cam = OrbitCamera((0.0, 0.0, 0.0), distance=150.0, azimuth_deg=-60.0, elevation_deg=60.0)
    a = canvas.render(overlays_only(live), cam).copy()
    b = canvas.render(overlays_only(replay), cam).copy()
    bare = canvas.render(overlays_only(live, []), cam)
    canvas.release()
    changed = np.any(a != bare, axis=-1)  # outline + covered cells drawn by the overlays
    assert changed.sum() > 500, changed.sum()
    assert np.array_equal(a, b)  # the same pixels, region by region
