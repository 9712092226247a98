"""The fast backend's integration block by block (core/backends/fast_block.py, SIMD lanes) gives
the body-by-body path's bits (core/backends/fast_kernel.py `_step_each`): bodies tumbling, at
rest (no turn), under a held wrench, with NaN state, against the Verlet list's reference;
blocks near the ground, over a terrain or in a world with boxes go body by body, and their
contacts are the same."""

from __future__ import annotations

import numpy as np
import pytest

import skyswarm.core.backends.fast_kernel as fk
from skyswarm.core.backends import BodyShape, make_world
from skyswarm.core.backends.fast_block import BLOCK, NROW, step_block
from skyswarm.core.backends.terrain import Heightfield

N = 3 * BLOCK + 17


def world(scenery: str, seed: int) -> tuple:
    """N bodies over the ground, tumbling and at rest; `scenery` "air" (all high), "ground"
    (a block's worth low), "terrain" or "boxes"."""
    rng = np.random.default_rng(seed)
    w = make_world("fast")
    w.add_ground()
    if scenery == "terrain":
        x, y = np.arange(-10.0, 10.01, 0.5), np.arange(-10.0, 10.01, 0.5)
        gx, gy = np.meshgrid(x, y)
        w.add_heightfield(Heightfield(0.5 + 0.4 * np.sin(gx) * np.cos(gy), 0.5, (-10.0, -10.0)))
    if scenery == "boxes":
        w.add_box((0.0, 0.0, 0.5), (2.0, 2.0, 1.0), 0.3)
    pos = rng.uniform(-8.0, 8.0, (N, 3))
    pos[:, 2] = rng.uniform(3.0, 20.0, N)
    if scenery != "air":
        pos[BLOCK : 2 * BLOCK, 2] = rng.uniform(0.0, 1.2, BLOCK)  # one block near the ground
    q = rng.normal(size=(N, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    slots = w.add_bodies(BodyShape(half_extents=(0.15, 0.1, 0.05)), 0.5, pos, q)
    st = w.state
    st.linear_velocity[slots] = rng.normal(0, 2, (N, 3))
    st.angular_velocity[slots] = rng.normal(0, 3, (N, 3))
    st.angular_velocity[slots[::5]] = 0.0  # at rest: no turn (the integrator's |w| = 0 case)
    st.position[slots[7]] = np.nan  # a NaN body is stepped (NaN stays NaN)
    return w, slots, rng


def run(scenery: str, step) -> tuple[list, list]:
    """20 ticks of `step` (fast_kernel's step_bodies-shaped range function) with forces,
    torques and a held wrench; the state bytes and every tick's returns and contacts."""
    w, slots, rng = world(scenery, 3)
    st = w.state
    per_body = fk.BOX_ROW + len(w._boxes[0])
    bufs = w._contact_buffers(len(slots), per_body)
    ref = st.position[w._live].copy()
    held = rng.normal(0.0, 0.5, (2, N, 3))
    out = []
    for k in range(20):
        w.apply_forces(slots, rng.normal(0.0, 3.0, (N, 3)) + [0.0, 0.0, 4.9])
        torque = rng.normal(0.0, 0.01, (N, 3))
        torque[::5] = 0.0  # the bodies at rest stay at rest
        w._tw[slots] += torque
        touching, far = step(
            np.int64(0), len(w._live), w._live, st.position, st.orientation, st.linear_velocity,
            st.angular_velocity, w._inv_m, w._inertia, w._half, w._offset, w._radius, w._fb,
            w._tw, w._fw, w._constants(), *w._boxes, w._hf, *bufs, ref, 0.05,
            *(held if k % 2 else np.zeros((2, 0, 3))), int(slots[0]),
        )  # fmt: skip
        contacts = fk.compact_contacts(w._live, per_body, *bufs)
        out.append((touching, far, [a.tobytes() for a in contacts]))
    state = [a[: st.size].tobytes() for a in (st.position, st.orientation)]
    state += [a[: st.size].tobytes() for a in (st.linear_velocity, st.angular_velocity)]
    return state, out


def _each(lo, hi, *args):
    return fk._step_each(lo, hi, *args, 0)


@pytest.mark.parametrize("scenery", ["air", "ground", "terrain", "boxes"])
def test_blocks_step_the_bodies_as_body_by_body(scenery: str) -> None:
    blocks, each = run(scenery, fk._step_range), run(scenery, _each)
    assert blocks == each
    touched = sum(t for t, _, _ in each[1])
    assert (touched == 0) == (scenery == "air")  # the near block did touch the scenery
    assert 0 < sum(f for _, f, _ in each[1])  # bodies passed their reference


def _block_once(scenery: str) -> list[bool]:
    w, slots, _ = world(scenery, 4)
    st = w.state
    per_body = fk.BOX_ROW + len(w._boxes[0])
    c_count = w._contact_buffers(len(slots), per_body)[0]
    par = w._constants()[0]
    none = np.zeros((0, 3))
    done = []
    for b in range(0, N, BLOCK):
        nb = min(N, b + BLOCK) - b
        before = st.position[: st.size].tobytes()
        ok, _ = step_block(
            b, nb, np.empty(NROW), w._live, st.position, st.orientation, st.linear_velocity,
            st.angular_velocity, w._inv_m, w._inertia, w._radius, w._fb, w._tw, w._fw, par,
            len(w._boxes[0]) > 0, w._hf.shape[0] >= 2, c_count, none, 0.1, none, none, 0,
        )  # fmt: skip
        if not ok:
            assert st.position[: st.size].tobytes() == before  # nothing written
        done.append(bool(ok))
    return done


def test_only_blocks_clear_of_the_scenery_take_the_lanes() -> None:
    assert _block_once("air") == [True] * 4
    assert _block_once("ground") == [True, False, True, True]  # the low block: body by body
    assert _block_once("boxes") == [False] * 4  # boxes: every body checks them
