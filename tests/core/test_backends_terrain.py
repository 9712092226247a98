"""Heightfield terrain on both backends: the surface is its triangulation, a terrain mesh sampled
to a grid, boxes resting on a slope and on hills at Bullet's heights, UAV landings survived and
impacts killed on a slope, and the config errors that remain on the fast backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.backends import BodyShape
from skyswarm.core.backends.terrain import Heightfield, load_height_grid, sample_mesh
from skyswarm.core.config import SimulationConfig, WorldConfig, load_scenario
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.swarm import Swarm

G = 9.81
DT = 0.0025
BACKENDS = ("bullet", "fast")
SLOPE = np.radians(10.0)  # tan = 0.176: below the friction coefficient 0.5, bodies stay put
BOX = BodyShape(half_extents=(0.1, 0.1, 0.1))


def write_grid(path: Path, heights: np.ndarray) -> Path:
    np.savetxt(path, heights, delimiter=",")
    return path


def slope_heights() -> np.ndarray:
    """11 x 11 samples 1 m apart from (-5, -5): z = tan(10 deg) x."""
    x = np.arange(-5.0, 5.01, 1.0)
    gx, _ = np.meshgrid(x, x)
    return np.tan(SLOPE) * gx


def hill_heights() -> np.ndarray:
    x = np.arange(-5.0, 5.01, 0.5)
    gx, gy = np.meshgrid(x, x)
    return 0.6 * np.sin(gx / 1.5) * np.cos(gy / 2.0)


def terrain_sim(physics: str, tmp_path: Path, name: str, heights: np.ndarray, cell: float):
    write_grid(tmp_path / f"{name}.csv", heights)
    world = WorldConfig(
        ground=False,
        heightfield=f"{name}.csv",
        heightfield_cell_m=cell,
        heightfield_origin=(-5.0, -5.0),
    )
    sim = Simulator(SimulationConfig(physics=physics), world, base_dir=tmp_path)
    return sim, load_height_grid(tmp_path / f"{name}.csv", cell, (-5.0, -5.0))


def test_the_surface_is_the_grids_triangulation_and_nan_is_a_hole() -> None:
    rng = np.random.default_rng(4)
    heights = rng.uniform(-1, 2, (4, 5))
    heights[3, 4] = np.nan  # a hole at the last sample
    hf = Heightfield(heights, 0.7, (-1.0, 2.0))
    vertices, faces = hf.triangles()
    assert len(faces) == 2 * 3 * 4 - 2  # the hole is on its cell's diagonal: both triangles go
    x = rng.uniform(-1.0, -1.0 + 4 * 0.7, 400)
    y = rng.uniform(2.0, 2.0 + 3 * 0.7, 400)
    h = hf.height_at(x, y)
    # Brute force: the triangle containing each point, its plane's height there.
    expected = np.full(len(x), np.nan)
    for a, b, c in faces:
        (ax, ay, az), (bx, by, bz), (cx, cy, cz) = vertices[a], vertices[b], vertices[c]
        det = (by - cy) * (ax - cx) + (cx - bx) * (ay - cy)
        la = ((by - cy) * (x - cx) + (cx - bx) * (y - cy)) / det
        lb = ((cy - ay) * (x - cx) + (ax - cx) * (y - cy)) / det
        inside = (la >= -1e-12) & (lb >= -1e-12) & (1 - la - lb >= -1e-12)
        expected[inside] = (la * az + lb * bz + (1 - la - lb) * cz)[inside]
    covered = np.isfinite(expected)
    assert 330 < covered.sum() < 400  # 1 of 12 cells is the hole's
    np.testing.assert_allclose(h[covered], expected[covered], rtol=0, atol=1e-12)
    assert np.isnan(h[~covered]).all()  # in the hole: no terrain, no contact
    off = hf.height_at(np.array([-1.01, 0.0, 5.0]), np.array([2.5, 1.99, 3.0]))
    assert np.isnan(off).all()  # off the grid


def test_a_terrain_mesh_sampled_to_a_grid_is_exact_on_its_vertices_and_planes() -> None:
    # A hilly mesh that is itself a 1 m grid with the same diagonals: sampled at 1 m it is the
    # very same surface; sampled at 0.5 m every sample lies on it.
    hf = Heightfield(hill_heights()[::2, ::2], 1.0, (-5.0, -5.0))
    vertices, faces = hf.triangles()
    same = sample_mesh(vertices, faces, 1.0)
    assert same.origin == (-5.0, -5.0) and same.heights.shape == (11, 11)
    np.testing.assert_allclose(same.heights, hf.heights, rtol=0, atol=1e-12)
    fine = sample_mesh(vertices, faces, 0.5)
    assert fine.heights.shape == (21, 21)
    gx, gy = np.meshgrid(np.arange(21) * 0.5 - 5, np.arange(21) * 0.5 - 5)
    on = hf.height_at(gx.ravel(), gy.ravel()).reshape(21, 21)
    np.testing.assert_allclose(fine.heights, on, rtol=0, atol=1e-12)
    # The top surface: of two stacked triangles the sample takes the higher.
    v = np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [0, 0, 1], [2, 0, 1], [0, 2, 1.0]])
    top = sample_mesh(v, np.array([[0, 1, 2], [3, 4, 5]]), 1.0)
    assert top.heights[0, 0] == 1.0 and np.isnan(top.heights[1, 1]) is np.False_
    assert np.isnan(top.heights[2, 2])  # (2, 2) is outside both triangles


@pytest.mark.parametrize("bad", [np.ones((1, 4)), np.full((3, 3), np.nan)])
def test_a_height_grid_needs_two_by_two_samples_and_one_height(bad) -> None:
    with pytest.raises(ValueError, match="height grid"):
        Heightfield(bad, 1.0, (0.0, 0.0))


def test_a_box_rests_on_a_10_degree_slope_at_bullets_height_without_creeping(tmp_path) -> None:
    rest = {}
    for physics in BACKENDS:
        sim, hf = terrain_sim(physics, tmp_path, "slope", slope_heights(), 1.0)
        start = (0.5, 0.0, np.tan(SLOPE) * 0.5 + 0.12)  # 2 cm above the slope
        (slot,) = sim.world.add_bodies(BOX, 1.0, [start])
        for _ in range(400):  # 1 s: lands, settles
            sim.step()
        settled = sim.world.state.position[slot].copy()
        for _ in range(400):  # 1 s more at rest
            sim.step()
        p = sim.world.state.position[slot]
        rest[physics] = p[2] - hf.height_at(p[:1], p[1:2])[0]  # centre above the surface
        assert np.linalg.norm(p - settled) < 0.001  # no creep: < 1 mm/s
        c = sim.world.contacts
        assert c.pairs() in ([(-2, slot)], [(slot, -2)])
        assert c.normal_force[0] == pytest.approx(G * np.cos(SLOPE), rel=0.02)  # m g cos
        assert sim.world.scenery_name(-2) == "terrain 0"
        sim.close()
    flush = 0.1 / np.cos(SLOPE)  # 0.1015 m: the box's face flat on the slope
    for physics in BACKENDS:  # both sit within a collision margin (1 mm) of flush
        assert flush - 0.0002 < rest[physics] < flush + 0.0015, (physics, rest[physics])
    assert abs(rest["fast"] - rest["bullet"]) < 0.001  # measured: 0.5 mm


def test_boxes_rest_on_hills_at_bullets_heights(tmp_path) -> None:
    # Three spots: a valley floor, a hill top and a gentle flank (sloped 7 deg).
    spots = [(-2.4, 0.0), (2.4, 0.0), (0.0, 2.5)]
    rest = {}
    for physics in BACKENDS:
        sim, hf = terrain_sim(physics, tmp_path, "hills", hill_heights(), 0.5)
        xy = np.array(spots)
        z0 = hf.height_at(xy[:, 0], xy[:, 1]) + 0.15
        slots = sim.world.add_bodies(BOX, 1.0, np.c_[xy, z0])
        for _ in range(800):
            sim.step()
        p = sim.world.state.position[slots]
        rest[physics] = p[:, 2] - hf.height_at(p[:, 0], p[:, 1])
        assert np.linalg.norm(p[:, :2] - xy, axis=1).max() < 0.1  # landed where dropped
        assert len(sim.world.contacts) == 3  # each on the terrain
        sim.close()
    assert (rest["bullet"] > 0.1).all() and (rest["bullet"] < 0.12).all()
    # The valley and the flank within 1 mm of Bullet (measured 0.5 and 0.1 mm). On the hill top
    # the fast engine is 4.3 mm lower: it contacts the terrain at the box's corners, so a crest
    # narrower than the box pokes into its bottom face (Bullet tests the faces too).
    np.testing.assert_allclose(rest["fast"][[0, 2]], rest["bullet"][[0, 2]], atol=0.001)
    assert 0.0 < rest["bullet"][1] - rest["fast"][1] < 0.006


def uav_on_terrain(physics: str, tmp_path: Path, start, command) -> tuple[Swarm, np.ndarray]:
    sim, hf = terrain_sim(physics, tmp_path, "slope", slope_heights(), 1.0)
    swarm = Swarm(sim, load_uav_config(), [1], np.array([start]), np.zeros(1), hovering=True)
    sim.install_faults(FaultsConfig())
    command(swarm.agents[0])
    track = []
    for _ in range(1200):  # 3 s
        sim.step()
        track.append(sim.world.state.position[swarm.rows][0].copy())
    return swarm, np.array(track)


def test_a_landing_on_the_slope_at_half_a_metre_per_second_is_survived(tmp_path) -> None:
    ends = {}
    for physics in BACKENDS:
        start = (1.0, 0.0, np.tan(SLOPE) + 0.6)
        swarm, track = uav_on_terrain(
            physics, tmp_path, start, lambda a: a.fly_velocity(0, 0, -0.5)
        )
        agent = swarm.agents[0]
        assert agent.alive and agent.death_cause is None, (physics, agent.death_cause)
        assert 8.0 < agent.tilt_deg < 12.0  # standing on the 10 deg slope (measured 9.6, 9.8)
        ends[physics] = track[-1]
        swarm.sim.close()
    for end in ends.values():  # on its legs (0.08 m on flat ground), not in the ground
        assert 0.07 < end[2] - np.tan(SLOPE) * end[0] < 0.095
    # Same spot within 10 cm (measured 7 cm: the fast engine collides the airframe's bounding
    # box, Bullet its mesh hull, so the touchdown slides differently).
    assert np.linalg.norm(ends["fast"] - ends["bullet"]) < 0.1


def test_an_impact_on_the_slope_at_5_m_s_kills_on_both_backends(tmp_path) -> None:
    for physics in BACKENDS:
        start = (1.0, 0.0, np.tan(SLOPE) + 3.0)
        swarm, _ = uav_on_terrain(physics, tmp_path, start, lambda a: a.fly_velocity(0, 0, -5))
        agent = swarm.agents[0]
        assert not agent.alive and agent.death_cause.startswith("crash: into terrain 0 at")
        speed = float(agent.death_cause.split(" at ")[1].split(" m/s")[0])
        assert speed > 4.0, physics  # well above the 1 m/s landing limit
        swarm.sim.close()


def test_a_terrain_mesh_runs_on_the_fast_backend_sampled_at_terrain_cell_m(tmp_path) -> None:
    # A 4 m ramp rising 0.5 m along y (7 deg), as an OBJ; the sampled grid is exact for a plane.
    obj = "v 0 0 0\nv 4 0 0\nv 4 4 0.5\nv 0 4 0.5\nf 1 2 3\nf 1 3 4\n"
    (tmp_path / "ramp.obj").write_text(obj)
    rest = {}
    for physics in BACKENDS:
        world = WorldConfig(ground=True, terrain="ramp.obj", terrain_cell_m=0.25)
        sim = Simulator(SimulationConfig(physics=physics), world, base_dir=tmp_path)
        assert sim.world.scenery_name(-2) == "mesh 0"  # named as on Bullet
        (slot,) = sim.world.add_bodies(BOX, 1.0, [(2.0, 2.0, 0.25 + 0.12)])
        for _ in range(600):
            sim.step()
        rest[physics] = sim.world.state.position[slot].copy()
        sim.close()
    flush = 0.1 / np.cos(np.arctan(0.125))  # centre above the ramp z = y / 8, face flat on it
    assert rest["fast"][2] - rest["fast"][1] / 8 == pytest.approx(flush, abs=0.0015)
    assert np.linalg.norm(rest["fast"] - rest["bullet"]) < 0.01


def test_fast_backend_config_errors_that_remain(tmp_path) -> None:
    (tmp_path / "hill.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 1\nf 1 2 3\n")
    write_grid(tmp_path / "grid.csv", slope_heights())
    (tmp_path / "row.csv").write_text("1,2,3\n")
    (tmp_path / "junk.csv").write_text("a,b\nc,d\n")
    scen = tmp_path / "s.toml"
    scen.write_text('[mission]\ntype = "missions.drop_test"\n[agents]\ncount = 1\n')
    fast = "simulation.physics=fast"
    assert load_scenario(scen, [fast, "world.terrain=hill.obj"]).world.terrain == "hill.obj"
    assert load_scenario(scen, [fast, "world.heightfield=grid.csv"]).world.heightfield
    with pytest.raises(ConfigError, match=r"world\.heightfield = 'grid\.csv'.*no second terrain"):
        load_scenario(scen, [fast, "world.terrain=hill.obj", "world.heightfield=grid.csv"])
    both = load_scenario(scen, ["world.terrain=hill.obj", "world.heightfield=grid.csv"])
    assert both.simulation.physics == "bullet"  # Bullet takes any number of meshes
    with pytest.raises(ConfigError, match=r"world\.heightfield = 'row\.csv'.*2 x 2 samples"):
        load_scenario(scen, ["world.heightfield=row.csv"])
    with pytest.raises(ConfigError, match=r"world\.heightfield = 'junk\.csv'.*ValueError"):
        load_scenario(scen, ["world.heightfield=junk.csv"])
    with pytest.raises(ConfigError, match=r"world\.heightfield = 'nope\.csv'.*existing file"):
        load_scenario(scen, ["world.heightfield=nope.csv"])
    with pytest.raises(ConfigError, match=r"world\.heightfield_cell_m = 0"):
        load_scenario(scen, ["world.heightfield=grid.csv", "world.heightfield_cell_m=0"])


def test_a_box_slides_down_a_35_degree_slope_at_g_sin_minus_mu_g_cos(tmp_path) -> None:
    # tan 35 deg = 0.70 > mu = 0.5: the box slides, at g (sin - mu cos) = 1.609 m/s^2 down the
    # slope (measured 1.6088 between 0.5 s and 1 s). Twice the friction (mu 1 > tan 35 deg)
    # would hold it. The fast engine only: a box on Bullet's heightfield tumbles down instead.
    angle = np.radians(35.0)
    x = np.arange(-5.0, 5.01, 1.0)
    sim, _ = terrain_sim("fast", tmp_path, "steep", np.tan(angle) * np.meshgrid(x, x)[0], 1.0)
    start = (2.0, 0.0, np.tan(angle) * 2.0 + 0.1 / np.cos(angle) + 0.005)  # 5 mm above it
    (slot,) = sim.world.add_bodies(BOX, 1.0, [start])
    down = np.array([-np.cos(angle), 0.0, -np.sin(angle)])
    for _ in range(200):  # lands, starts sliding
        sim.step()
    v0 = sim.world.state.linear_velocity[slot] @ down
    for _ in range(200):
        sim.step()
    v1 = sim.world.state.linear_velocity[slot] @ down
    accel = (v1 - v0) / (200 * DT)
    assert accel == pytest.approx(G * (np.sin(angle) - 0.5 * np.cos(angle)), rel=0.01)
    assert np.abs(sim.world.state.angular_velocity[slot]).max() < 0.05  # sliding, not rolling
    sim.close()


@pytest.mark.parametrize("physics", BACKENDS)
def test_a_box_lifted_off_the_slope_leaves_it_freely(physics: str, tmp_path) -> None:
    # Settled on the 10 degree slope, then 3 m g up for 0.2 s: the net 2 g up lifts it
    # 2 g t^2 / 2 = 0.39 m (semi-implicit Euler: within 2 %) and the terrain never holds it
    # back (a contact impulse pushes, never pulls).
    sim, hf = terrain_sim(physics, tmp_path, "slope", slope_heights(), 1.0)
    (slot,) = sim.world.add_bodies(BOX, 1.0, [(0.5, 0.0, np.tan(SLOPE) * 0.5 + 0.12)])
    for _ in range(400):  # lands, settles
        sim.step()
    z0 = sim.world.state.position[slot, 2]
    n = 80
    for _ in range(n):
        sim.world.apply_forces(np.array([slot]), np.array([[0.0, 0.0, 3.0 * G]]))
        sim.step()
    rise = sim.world.state.position[slot, 2] - z0
    assert rise == pytest.approx(2 * G * (n * DT) ** 2 / 2, rel=0.02)
    assert len(sim.world.contacts) == 0  # clear of the terrain
    sim.close()
