"""A wrench held for the step (`World.hold_wrenches`) moves the bodies exactly as the same
wrench applied at once (`apply_wrenches`): on the fast backend the kernel adds it while it
integrates each body, with numpy's sums, in the order the wrenches came; anything it cannot
take as rows (scattered slots, other dtypes) is applied at once."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.backends import BodyShape, make_world

N = 40


def world_of(physics: str):
    w = make_world(physics)
    w.add_ground()
    rng = np.random.default_rng(4)
    pos = rng.uniform(-20.0, 20.0, (N, 3))
    pos[:, 2] = np.abs(pos[:, 2]) * 0.2 + 0.05  # some on the ground, some in the air
    slots = w.add_bodies(BodyShape(half_extents=(0.2, 0.2, 0.05)), 1.2, pos)
    return w, slots


def fly(physics: str, held: bool, ticks: int = 60) -> list[bytes]:
    """`ticks` of random wrenches: every body's (held or applied), then a second one on a
    few bodies (after a held one: the held sums first), and scattered slots every third
    tick (not rows: applied at once either way)."""
    w, slots = world_of(physics)
    rng = np.random.default_rng(9)
    for t in range(ticks):
        force = rng.normal(0.0, 6.0, (N, 3)) + [0.0, 0.0, 11.0]
        torque = rng.normal(0.0, 0.01, (N, 3))
        (w.hold_wrenches if held else w.apply_wrenches)(slots, force, torque)
        if t % 2:
            w.apply_wrenches(slots[3:9], rng.normal(0.0, 1.0, (6, 3)), np.zeros((6, 3)))
        if t % 3 == 0:
            few = slots[::7]
            extra = rng.normal(0.0, 1.0, (len(few), 3))
            (w.hold_wrenches if held else w.apply_wrenches)(few, extra, 0.001 * extra)
        w.step_physics()
        w.read_state()
    st = w.state
    out = [a[slots].tobytes() for a in (st.position, st.orientation)]
    out += [a[slots].tobytes() for a in (st.linear_velocity, st.angular_velocity)]
    w.close()
    return out


@pytest.mark.parametrize("physics", ["fast", "bullet"])
def test_a_held_wrench_moves_the_bodies_as_an_applied_one_bit_for_bit(physics) -> None:
    held, applied = fly(physics, True), fly(physics, False)
    assert held == applied
    w, slots = world_of(physics)
    before = w.state.position[slots].copy()
    w.close()
    assert np.frombuffer(held[0]).reshape(N, 3).tolist() != before.tolist()  # they flew


def test_the_fast_world_holds_only_one_wrench_of_consecutive_float_rows() -> None:
    w, slots = world_of("fast")
    force, torque = np.ones((N, 3)), np.zeros((N, 3))
    w.hold_wrenches(slots, force, torque)
    assert w._held is not None and w._held[1] is force  # read at the step, not copied
    assert not w._fb[slots].any()
    w.hold_wrenches(slots, force, torque)  # a second one: the first is added, this one too
    assert w._held is None and (w._fb[slots] == 2.0).all()
    w.hold_wrenches(slots, force.astype(np.float32), torque)  # not float64 rows: at once
    assert w._held is None and (w._fb[slots] == 3.0).all()
    w.hold_wrenches(slots[::-1], force, torque)  # not ascending rows: at once
    assert w._held is None and (w._fb[slots] == 4.0).all()
    w.hold_wrenches(slots, force, torque)
    w.step_physics()  # the kernel added it, then cleared every force of the tick
    assert w._held is None and not w._fb[slots].any()
    w.close()
