"""The vector env's control period in one compiled call (envs/batch.py `_fly_ticks`, uav/kernel.py
`fly_ticks`) against the same ticks one by one (`sim.step()`): twin batches from one seed, flown
on the same actions and restarted alike when their episodes end, hold the same bits in every
step's output and in every array of the world, the swarm and the batch, at the edges: one
agent, a count that is no multiple of the kernel's chunk, threads, crashes and autoresets,
contacts with the ground inside the window, bodies within reach of each other (then it ticks
one by one), and a body that goes far inside the window (then the ticks are redone)."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from skyswarm.core.backends import PARALLEL_MIN, threaded
from skyswarm.envs.batch import FlightBatch, FlightSettings, StepOut
from skyswarm.envs.tasks import Hover, Task, WindHover
from skyswarm.uav import kernel
from tests.envs.test_perf_vector import _arrays as owned_arrays
from tests.envs.test_perf_vector import _bits

_BOOKKEEPING = frozenset({"_cand_ref", "_cand_key", "_rows_key"})


def _arrays(batch: FlightBatch) -> dict[str, bytes]:
    """Every numpy array of the world, its state, the swarm, its controller and motors, and
    the batch (test_perf_vector's), and the contact report and the clock; but the world's
    bookkeeping: the Verlet list's reference positions, on which no contact depends (a window
    rebuilds the list at its start, ticks one by one after their first tick), and the slots
    its row lookup was last asked for (a tick's held wrench)."""
    out = owned_arrays(batch, _BOOKKEEPING)
    report = batch.sim.world.contacts
    for key in ("a", "b", "normal_force", "position"):
        out[f"contacts.{key}"] = _bits(getattr(report, key))
    out["tick"] = str(batch.sim.world.tick).encode()
    return out


class Twins:
    """Two batches of one seed, `multi_tick` on in the first, off in the second; each step
    counts the first's windows (control periods flown in one call)."""

    def __init__(self, n: int, task: Task, settings: FlightSettings, **kw) -> None:
        self.batches, self.gens = [], []
        for multi in (True, False):
            batch = FlightBatch(n, task, settings, seed=3, **kw)
            batch.multi_tick = multi
            rng = np.random.default_rng(3)
            batch.restart(np.arange(n), rng)
            self.batches.append(batch)
            self.gens.append(rng)
        self.windows, self.resets, self.crashes = 0, 0, 0
        fly = self.batches[0]._fly_ticks

        def counted() -> bool:
            done = fly()
            self.windows += done
            return done

        self.batches[0]._fly_ticks = counted

    def step(self, action: np.ndarray) -> StepOut:
        outs = [batch.step(action) for batch in self.batches]
        for key in ("obs", "reward", "crashed", "reached", "truncated", "error"):
            assert _bits(getattr(outs[0], key)) == _bits(getattr(outs[1], key)), key
        out = outs[0]
        done = np.flatnonzero(out.crashed | out.reached | out.truncated)
        self.resets += len(done)
        self.crashes += int(out.crashed.sum())
        if len(done):  # the vector env's autoreset
            obs = [b.restart(done, g) for b, g in zip(self.batches, self.gens, strict=True)]
            assert _bits(obs[0]) == _bits(obs[1])
        return out

    def same(self) -> None:
        assert _arrays(self.batches[0]) == _arrays(self.batches[1])
        assert self.gens[0].random() == self.gens[1].random()

    def close(self) -> None:
        for batch in self.batches:
            batch.sim.close()


@pytest.mark.parametrize(
    ("n", "steps", "threads"),
    [(1, 600, 1), (64, 250, 1), (300, 120, 1), (PARALLEL_MIN + 52, 60, 2)],
)
def test_one_call_per_step_is_the_ticks_one_by_one(n: int, steps: int, threads: int) -> None:
    """Random body-rate actions strong enough to crash (every slot restarted as the vector
    env does) flown both ways: the same bits every step and at the end; every step a window.
    300 and 2,100 agents end in a part chunk (kernel.CHUNK 256); 2,100 run threaded."""
    before = numba.get_num_threads()
    twins = Twins(n, Hover(), FlightSettings(threads=threads))
    try:
        assert threaded(n) == (threads > 1 and numba.get_num_threads() > 1)
        assert n % kernel.CHUNK or n < kernel.CHUNK
        rng = np.random.default_rng(11)
        for _ in range(steps):
            twins.step(rng.uniform(-1.0, 1.0, (n, 4)))
        twins.same()
        assert twins.windows == steps
        assert twins.crashes > 0 and twins.resets > 0
    finally:
        twins.close()
        numba.set_num_threads(before)


def test_contacts_with_the_ground_inside_the_window() -> None:
    """Motors off from 0.4 m up, never judged crashed: the bodies fall, bounce and rest on the
    ground, touching it inside the windows; each step's contact report is the last tick's."""
    task = Hover(altitude_m=0.4, min_altitude_m=-1.0, max_tilt_deg=180.0, max_error_m=20.0)
    twins = Twins(5, task, FlightSettings(action="motors"))
    try:
        touched = 0
        rng = np.random.default_rng(2)
        for k in range(60):
            action = np.full((5, 4), -1.0)  # no thrust
            if k > 40:  # then some thrust, unevenly: tipping and sliding on the ground
                action = rng.uniform(-1.0, -0.2, (5, 4))
            twins.step(action)
            twins.same()
            touched += len(twins.batches[0].sim.world.contacts) > 0
        assert touched > 30
        assert twins.windows >= 50  # (a bounce may leave the young list's 0.225 m reach)
    finally:
        twins.close()


def test_bodies_within_reach_tick_one_by_one() -> None:
    """Slots 0.8 m apart: the Verlet list holds their pair, so every step ticks one by one
    (no window), and the twins agree."""
    origin = np.array([[0.0, 0.0, 0.0], [0.8, 0.0, 0.0], [50.0, 0.0, 0.0]])
    twins = Twins(3, Hover(start_radius_m=0.0), FlightSettings(), origin=origin)
    try:
        rng = np.random.default_rng(4)
        for _ in range(20):
            twins.step(rng.uniform(-0.3, 0.3, (3, 4)))
        twins.same()
        assert twins.windows == 0
    finally:
        twins.close()


def test_a_body_gone_far_inside_the_window_redoes_the_ticks() -> None:
    """A body thrown at 2 km/s leaves the Verlet list's reach inside the window: every row is
    put back and the period ticks one by one, to the same bits as the twin's."""
    # max_error_m 10 km: nothing ends the thrown body's episode (slots 21 km apart, so none can
    # reach another: FlightSettings refuses closer ones)
    twins = Twins(6, Hover(max_error_m=1e4), FlightSettings(spacing_m=2.1e4))
    try:
        rng = np.random.default_rng(6)
        for _ in range(5):
            twins.step(rng.uniform(-0.3, 0.3, (6, 4)))
        assert twins.windows == 5
        for batch in twins.batches:
            batch.sim.world.state.linear_velocity[batch.swarm.slots[4]] = (2000.0, 0.0, 0.0)
        twins.step(np.zeros((6, 4)))
        assert twins.windows == 5  # this step was redone tick by tick
        twins.same()
        for batch in twins.batches:  # stopped where it went (40 m on): windows again
            batch.sim.world.state.linear_velocity[batch.swarm.slots[4]] = 0.0
        for _ in range(5):
            twins.step(rng.uniform(-0.3, 0.3, (6, 4)))
        twins.same()
        assert twins.windows == 10
    finally:
        twins.close()


def test_anything_else_in_the_tick_keeps_the_ticks_one_by_one() -> None:
    """A post-tick listener, a task, a wind field, or a dead agent: no window."""
    calls = []
    batch = FlightBatch(4, Hover(), FlightSettings(), seed=0)
    batch.restart(np.arange(4), np.random.default_rng(0))
    assert batch._alone()
    batch.sim.add_post_tick(lambda world: calls.append(world.tick))
    assert not batch._alone()
    batch.step(np.zeros((4, 4)))
    assert calls == list(range(1, 9))  # each of the 8 ticks seen
    batch.sim.close()
    windy = FlightBatch(2, WindHover(), FlightSettings(), seed=0)
    assert not windy._alone()
    windy.sim.close()
    dying = FlightBatch(3, Hover(), FlightSettings(), seed=0)
    dying.restart(np.arange(3), np.random.default_rng(0))
    dying.retire(np.array([1]), "test")
    assert not dying._alone()
    dying.step(np.zeros((3, 4)))
    dying.sim.close()
