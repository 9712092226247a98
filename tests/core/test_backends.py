"""The World seam with both backends: free fall against the integrator's exact solution, the
contact report's form, the fast engine's contact, spatial hash and conservation, config errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.backends import GROUND, BodyShape, make_world, spatial_hash
from skyswarm.core.config import (
    ObstacleConfig,
    SimulationConfig,
    WorldConfig,
    load_scenario,
)
from skyswarm.core.frames import rotation_matrix
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator

G = 9.81
DT = 0.0025
BOX = BodyShape(half_extents=(0.1, 0.1, 0.1))
BACKENDS = ("bullet", "fast")


def world_with(physics: str, ground: bool = True, gravity: float = G, boxes=()):
    sim = Simulator(
        SimulationConfig(tick_s=DT, gravity=gravity, physics=physics),
        WorldConfig(ground=ground, obstacles=tuple(boxes)),
    )
    return sim, sim.world


@pytest.mark.parametrize("physics", BACKENDS)
def test_free_fall_two_seconds_is_the_semi_implicit_solution(physics: str) -> None:
    sim, w = world_with(physics, ground=False)
    (slot,) = w.add_bodies(BOX, 1.0, [(0.0, 0.0, 100.0)])
    n = 800  # 2 s
    for _ in range(n):
        sim.step()
    z, t = w.state.position[slot, 2], n * DT
    # v += g dt, then x += v dt: after n ticks z = z0 - g dt^2 n (n + 1) / 2, exactly.
    assert z == pytest.approx(100.0 - G * DT * DT * n * (n + 1) / 2, abs=1e-9)
    # That scheme leads the parabola by g dt t / 2 = 2.45 cm at 2 s: the integrator's O(dt).
    lead = (100.0 - G * t * t / 2) - z
    assert lead == pytest.approx(G * DT * t / 2, abs=1e-9)
    assert G * DT * t / 2 == pytest.approx(0.0245, abs=1e-4)


@pytest.mark.parametrize("physics", BACKENDS)
def test_a_resting_box_is_one_slot_ground_pair_carrying_its_weight(physics: str) -> None:
    sim, w = world_with(physics)
    (slot,) = w.add_bodies(BOX, 2.0, [(0.0, 0.0, 0.15)])
    for _ in range(400):  # drops 5 cm, then rests
        sim.step()
    c = w.contacts
    assert c.pairs() == [(slot, GROUND)] or c.pairs() == [(GROUND, slot)]
    assert c.normal_force[0] == pytest.approx(2.0 * G, rel=0.05)  # m g, settled
    assert c.position.shape == (1, 3) and abs(c.position[0, 2]) < 0.01  # on the ground
    assert w.state.position[slot, 2] == pytest.approx(0.1, abs=2e-3)  # centre a half size up
    assert np.abs(w.state.linear_velocity[slot]).max() < 1e-3  # at rest


@pytest.mark.parametrize("physics", BACKENDS)
def test_a_box_dropped_on_an_obstacle_rests_on_its_top_face(physics: str) -> None:
    top = ObstacleConfig(type="box", center=(5, 5, 1), size=(2, 2, 2), yaw_deg=30.0)
    sim, w = world_with(physics, boxes=[top])
    (slot,) = w.add_bodies(BOX, 1.0, [(5.0, 5.0, 3.0)])
    for _ in range(800):
        sim.step()
    assert w.state.position[slot, 2] == pytest.approx(2.1, abs=0.01)  # 2 m + half size
    assert w.contacts.pairs() == [(slot, -2)] or w.contacts.pairs() == [(-2, slot)]
    assert w.scenery_name(-2) == "obstacle 0"


def test_removed_bodies_keep_their_last_state_and_leave_the_report() -> None:
    sim, w = world_with("fast")
    a, b = w.add_bodies(BOX, 1.0, [(0.0, 0.0, 0.1), (3.0, 0.0, 5.0)])
    sim.step()
    w.remove(int(b))
    before = w.state.position[b].copy()
    for _ in range(10):
        sim.step()
    assert np.array_equal(w.state.position[b], before)
    assert w.tracked_slots.tolist() == [a]
    assert {p for pair in w.contacts.pairs() for p in pair} == {int(a), GROUND}


def brute_force_pairs(w, margin: float) -> set[tuple[int, int]]:
    st, live = w.state, w.tracked_slots
    ra, rb, sat = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    out = set()
    for i, sa in enumerate(live):
        for sb in live[i + 1 :]:
            args = (st.position, st.orientation, w._half, w._offset, w._radius, margin, ra, rb, sat)
            if spatial_hash._boxes_touch(sa, sb, *args):
                out.add((int(sa), int(sb)))
    return out


def test_spatial_hash_finds_exactly_the_brute_force_pairs() -> None:
    # 400 tumbling boxes of mixed sizes crowded in a 4 m cube: about a hundred touching pairs.
    rng = np.random.default_rng(7)
    w = make_world("fast", DT, 0.0)
    for size in (0.1, 0.25):
        pos = rng.uniform(-2, 2, (200, 3))
        q = rng.normal(size=(200, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        w.add_bodies(BodyShape(half_extents=(size, size / 2, size / 3)), 1.0, pos, q)
    expected = brute_force_pairs(w, 0.001)  # at rest, no gravity: the poses the step tests
    w.step_physics()  # (then resolves the pairs, pushing the boxes apart)
    found = set(w.contacts.pairs())
    assert len(expected) > 60
    assert found == expected


def test_separating_axis_test_on_two_boxes_by_hand() -> None:
    w = make_world("fast", DT, 0.0)
    # Two 0.2 m cubes 0.205 m apart along x: 5 mm gap, no touch; 0.5 mm gap: touch.
    w.add_bodies(BOX, 1.0, [(0, 0, 0), (0.205, 0, 0), (5, 0, 0), (5.2005, 0, 0)])
    # Rotated 45 degrees about z, a cube reaches 0.1 sqrt(2) = 0.1414 m along x: two such
    # cubes touch below 0.2828 m (+ the 1 mm margin), corner to corner.
    yaw45 = np.array([[0, 0, np.sin(np.pi / 8), np.cos(np.pi / 8)]] * 2)
    w.add_bodies(BOX, 1.0, [(10, 0, 0), (10.2860, 0, 0)], yaw45)  # 2.2 mm beyond the corners
    w.add_bodies(BOX, 1.0, [(20, 0, 0), (20.2835, 0, 0)], yaw45)  # 0.7 mm: touch
    w.step_physics()
    assert w.contacts.pairs() == [(2, 3), (6, 7)]


def test_torque_free_tumbling_keeps_angular_momentum() -> None:
    # The quadrotor's inertia spun about a general axis: |L| is an invariant; the fast
    # integrator rotates L in the body frame exactly, so |L| holds to rounding over 10 s.
    # Rotational energy is not exactly conserved by the scheme: measured at 2.5 ms, its drift
    # is 1.7e-6 (relative) over these 10 s, asserted below 1e-5 (stated in README, Physics
    # backends).
    w = make_world("fast", DT, 0.0)
    inertia = np.array([0.0123, 0.0150, 0.0224])
    (s,) = w.add_bodies(BOX, 1.2, [(0, 0, 0)], inertia=inertia)
    w.state.angular_velocity[s] = (2.0, 0.5, 4.0)  # rad/s, world frame

    def momentum_and_energy():
        r = np.empty((3, 3))
        rotation_matrix(w.state.orientation[s], r)
        wb = r.T @ w.state.angular_velocity[s]
        return r @ (inertia * wb), 0.5 * wb @ (inertia * wb)

    l0, e0 = momentum_and_energy()
    worst_l, worst_e = 0.0, 0.0
    for _ in range(4000):  # 10 s
        w.step_physics()
        mom, e = momentum_and_energy()
        worst_l = max(worst_l, abs(np.linalg.norm(mom) / np.linalg.norm(l0) - 1))
        worst_e = max(worst_e, abs(e / e0 - 1))
    assert worst_l < 1e-12  # far inside the 0.5 % asked for
    assert worst_e < 1e-5
    # the direction of L in the world drifts by O(dt) only: within 1 degree over 10 s
    cos = mom @ l0 / (np.linalg.norm(mom) * np.linalg.norm(l0))
    assert np.degrees(np.arccos(min(1.0, cos))) < 1.0


def test_quaternions_stay_unit_length() -> None:
    w = make_world("fast", DT, 0.0)
    slots = w.add_bodies(BOX, 1.0, np.zeros((5, 3)))
    w.state.angular_velocity[slots] = np.random.default_rng(1).uniform(-20, 20, (5, 3))
    for _ in range(4000):
        w.step_physics()
    norms = np.linalg.norm(w.state.orientation[slots], axis=1)
    assert np.abs(norms - 1).max() < 1e-14


def test_wrench_is_body_frame_force_and_world_torque() -> None:
    # A body yawed 90 degrees: body-x force pushes along world +y; a world-z torque spins it
    # about world z: one tick gives F/m dt and tau/I dt (the same check as Bullet's).
    w = make_world("fast", DT, 0.0)
    q = [[0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)]]
    (s,) = w.add_bodies(BOX, 2.0, [(0, 0, 0)], q, inertia=(0.01, 0.02, 0.04))
    w.apply_wrenches(np.array([s]), np.array([[4.0, 0, 0]]), np.array([[0, 0, 0.08]]))
    w.step_physics()
    assert w.state.linear_velocity[s] == pytest.approx([0, 4.0 / 2.0 * DT, 0], abs=1e-15)
    assert w.state.angular_velocity[s] == pytest.approx([0, 0, 0.08 / 0.04 * DT], abs=1e-15)
    w.step_physics()  # forces are cleared after a step
    assert w.state.linear_velocity[s, 1] == pytest.approx(4.0 / 2.0 * DT, abs=1e-15)


def test_mesh_obstacles_with_the_fast_backend_are_a_config_error_naming_the_key(tmp_path) -> None:
    (tmp_path / "hill.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 1\nf 1 2 3\n")
    scen = tmp_path / "s.toml"
    scen.write_text('[mission]\ntype = "missions.drop_test"\n[agents]\ncount = 1\n')
    fast = "simulation.physics=fast"
    mesh = "world.obstacles=[{type='mesh', mesh='hill.obj'}]"
    with pytest.raises(ConfigError, match=r"world\.obstacles\[0\]\.type = 'mesh'"):
        load_scenario(scen, [fast, mesh])
    assert load_scenario(scen, [mesh]).simulation.physics == "bullet"  # Bullet takes meshes
    with pytest.raises(ConfigError, match=r"simulation\.physics = 'fats'.*did you mean 'fast'"):
        load_scenario(scen, ["simulation.physics=fats"])
    with pytest.raises(ValueError, match="no triangle-mesh obstacles"):
        make_world("fast").add_mesh(tmp_path / "hill.obj")


def test_no_pybullet_call_outside_the_bullet_backend() -> None:
    import ast
    from pathlib import Path

    import skyswarm

    root = Path(skyswarm.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if "backends/bullet.py" in str(path) or "/build/" in str(path) or "/tests/" in str(path):
            continue
        if "/bench/" in str(path):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "pb" and node.attr[0].islower() and node.attr != "pb":
                    offenders.append(f"{path.relative_to(root)}:{node.lineno} pb.{node.attr}")
    assert not offenders, offenders


def test_a_stack_of_three_boxes_rests_at_bullets_heights_carrying_their_weights() -> None:
    rest, forces = {}, {}
    for physics in BACKENDS:
        sim, w = world_with(physics)
        slots = w.add_bodies(BOX, 1.0, [(0, 0, 0.1), (0.02, 0.01, 0.35), (0.0, 0.0, 0.6)])
        for _ in range(1200):  # 3 s: drops, settles
            sim.step()
        rest[physics] = w.state.position[slots, 2].copy()
        c = w.contacts
        forces[physics] = {tuple(sorted(p)): f for p, f in zip(c.pairs(), c.normal_force)}
        sim.close()
    # Ground-box 3 m g, box-box 2 m g and m g, within 2 % on both (measured: to 0.01 N).
    s0, s1, s2 = 0, 1, 2
    for physics in BACKENDS:
        f = forces[physics]
        assert f[(GROUND, s0)] == pytest.approx(3 * G, rel=0.02)
        assert f[(s0, s1)] == pytest.approx(2 * G, rel=0.02)
        assert f[(s1, s2)] == pytest.approx(G, rel=0.02)
    np.testing.assert_allclose(rest["bullet"], [0.1, 0.3, 0.5], atol=0.001)
    np.testing.assert_allclose(rest["fast"], rest["bullet"], atol=0.001)  # measured 0.7 mm


def test_boxes_meeting_head_on_do_not_pass_through_and_keep_their_momentum() -> None:
    for physics in BACKENDS:
        sim, w = world_with(physics, ground=False, gravity=0.0)
        slots = w.add_bodies(BOX, 1.0, [(-1, 0, 1), (1, 0.05, 1)])  # 5 cm off centre
        w.apply_forces(slots, np.array([[800.0, 0, 0], [-400.0, 0, 0]]))  # 2 m/s, -1 m/s
        for _ in range(800):
            sim.step()
        x = w.state.position[slots, 0]
        v = w.state.linear_velocity[slots]
        assert x[1] - x[0] > 0.19, physics  # they met (1 s) and stayed apart
        np.testing.assert_allclose(v.sum(axis=0), [1.0, 0.0, 0.0], atol=1e-6)  # m v conserved
        if physics == "fast":  # a central inelastic impulse: they move on together
            np.testing.assert_allclose(v, [[0.5, 0, 0], [0.5, 0, 0]], atol=1e-12)
        sim.close()


FLAT = BodyShape(half_extents=(0.2, 0.2, 0.05))  # low and wide: a push at its centre never tips it
MASS = 2.0  # kg
MU = 0.5  # the ground's Coulomb coefficient on both engines (fast_kernel.FRICTION; Bullet 1 x 0.5)


@pytest.mark.parametrize("physics", BACKENDS)
def test_a_box_pushed_along_the_ground_slides_against_coulomb_friction(physics: str) -> None:
    # A 2 kg box settled on the ground, pushed at twice its friction limit (2 mu m g) for 1 s:
    # it accelerates at F / m - mu g = 4.905 m/s^2; let go, it slides v0^2 / (2 mu g) and stops
    # after v0 / (mu g). Measured: fast 0.1 % and 0.2 %, Bullet 0.1 % and 0.1 %. Without the
    # friction cap (jt = min(slip impulse, mu jn)) the slip is removed each tick: no slide.
    sim, w, s = settled_flat_box(physics, MASS)
    push = np.array([s])
    n = 400  # 1 s at twice the limit
    for _ in range(n):
        w.apply_forces(push, np.array([[2.0 * MU * MASS * G, 0.0, 0.0]]))
        sim.step()
    v0 = w.state.linear_velocity[s, 0]
    assert v0 == pytest.approx((2.0 * MU * G - MU * G) * n * DT, rel=0.01)
    assert abs(w.state.linear_velocity[s, 1]) < 0.01 * v0  # straight along the push
    start, ticks = w.state.position[s, 0], 0
    while w.state.linear_velocity[s, 0] > 1e-6 and ticks < 2000:  # coasting
        sim.step()
        ticks += 1
    assert w.state.position[s, 0] - start == pytest.approx(v0**2 / (2 * MU * G), rel=0.01)
    assert ticks * DT == pytest.approx(v0 / (MU * G), abs=3 * DT)
    sim.close()


def settled_flat_box(physics: str, mass: float):
    sim, w = world_with(physics)
    (s,) = w.add_bodies(FLAT, mass, [(0.0, 0.0, 0.06)])
    for _ in range(200):  # drops 1 cm, settles
        sim.step()
    return sim, w, s


CREEPS = "the fast engine's one ground impulse per body rocks a pushed box: it creeps ~1 cm/s"


@pytest.mark.parametrize(
    "physics",
    ["bullet", pytest.param("fast", marks=pytest.mark.xfail(strict=True, reason=CREEPS))],
)
def test_a_push_below_the_friction_limit_does_not_move_a_box(physics: str) -> None:
    # Half the limit (mu m g / 2) for 1 s: static friction holds it (Bullet: 5 um). The fast
    # engine slides 9 mm (at a quarter of the limit 4 mm): a known bug, reported in issue 33.
    sim, w, s = settled_flat_box(physics, MASS)
    x0 = w.state.position[s].copy()
    for _ in range(400):
        w.apply_forces(np.array([s]), np.array([[0.5 * MU * MASS * G, 0.0, 0.0]]))
        sim.step()
    assert np.abs(w.state.position[s, :2] - x0[:2]).max() < 1e-3
    sim.close()
