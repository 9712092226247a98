"""The flight kernel's block path (uav/kernel_block.py: a block of agents of one mode, stage by
stage on SIMD lanes) gives the agent-by-agent path's bits (uav/kernel.py `_fly_agents`) in
every mode, for both kernel models, over ticks whose memory carries over; its branch-free hypot
and wrap are kernel_math's where they claim to be, and the agents they cannot answer for are
flown again agent by agent. A swarm of one mode is held to the plain reference (uav/reference.py)
as well: the reference tests mix the modes, which sends every block down the agent path."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from test_uav_reference import AF, ROTOR, FakeState, Flight, randomise

from skyswarm.core.jit import njit
from skyswarm.uav import kernel, kernel_block
from skyswarm.uav.control import MODES
from skyswarm.uav.kernel_block import BLOCK, NROW, REDO
from skyswarm.uav.kernel_math import hypot, wrap

N = 2 * BLOCK + 22  # two full blocks and a short one


def _args(flight: Flight) -> list:
    """What FlightKernel.step hands the kernel, for `flight` as it stands."""
    state = FakeState(flight.s, flight.slots, 3 * flight.n)
    return [
        flight.kernel.slots, state.position, state.orientation, state.linear_velocity,
        state.angular_velocity, flight.kernel.constants, flight.sp.records, flight.cas.memory,
        flight.motors.thrust, flight.alive, flight.motor_ok, flight.motors.params, flight.wind,
        flight.force, flight.torque,
    ]  # fmt: skip


OUT = (7, 8, 13, 14)  # memory, thrust, force, torque: what the kernel writes


def _both(flight: Flight, ticks: int = 3) -> tuple[list, list]:
    """`ticks` ticks of the block path (kernel.fly) and of the agent path on copies of the
    same arguments; both argument lists after."""
    blocks, agents = _args(flight), copy.deepcopy(_args(flight))
    for _ in range(ticks):
        kernel.fly(*blocks)
        kernel._fly_agents(np.int64(0), N, *agents)
    return blocks, agents


def _same_bits(a: list, b: list) -> None:
    for k in OUT:
        assert a[k].tobytes() == b[k].tobytes(), f"argument {k} differs"


def _edges(flight: Flight) -> None:
    """Agents at the block path's edges: at rest at the setpoint with empty integrals (outer
    outputs of exactly zero: hypot of zero operands), a yaw setpoint turns away (wrap's
    remainder), a NaN state, an infinite velocity."""
    s, sp = flight.s, flight.sp
    s["pos"][5, :2] = sp.position[5]
    s["vel"][5] = 0.0
    sp.altitude[5] = s["pos"][5, 2]
    flight.cas.outer.integral[5] = 0.0
    sp.yaw[9] = 50.0  # 8 turns out
    sp.yaw[70] = -1e6
    s["pos"][12] = np.nan
    s["vel"][80, 0] = np.inf


@pytest.mark.parametrize("af", [AF, ROTOR], ids=["thrust_lag", "rotor"])
@pytest.mark.parametrize("mode", range(len(MODES)), ids=[m.name for m in MODES])
def test_a_block_of_one_mode_flies_the_agent_path_to_the_bit(mode: int, af) -> None:
    flight = Flight(N, seed=mode, af=af)
    randomise(flight, np.random.default_rng(mode))
    flight.sp.mode[:] = mode
    _edges(flight)
    blocks, agents = _both(flight)
    _same_bits(blocks, agents)
    assert kernel_block.same_mode(flight.sp.records, 0, N)  # every block took the lanes


def test_blocks_of_different_modes_and_mixed_blocks_together() -> None:
    """A block of one mode, a block of another, a block of mixed modes: each by its path."""
    flight = Flight(N, seed=11, af=ROTOR)
    randomise(flight, np.random.default_rng(11))
    flight.sp.mode[:BLOCK] = 5  # Position
    flight.sp.mode[BLOCK : 2 * BLOCK] = 8  # BodyRates
    _edges(flight)
    blocks, agents = _both(flight, ticks=4)
    _same_bits(blocks, agents)


def test_the_threaded_kernel_flies_the_blocks_to_the_same_bits() -> None:
    flight = Flight(N, seed=12, af=ROTOR)
    randomise(flight, np.random.default_rng(12))
    flight.sp.mode[:] = 5
    serial, threaded = _args(flight), copy.deepcopy(_args(flight))
    kernel.fly(*serial)
    kernel.fly_parallel(*threaded)
    _same_bits(serial, threaded)


@pytest.mark.parametrize("mode", range(len(MODES)), ids=[m.name for m in MODES])
def test_a_swarm_of_one_mode_matches_the_reference(mode: int) -> None:
    """The reference tests' check (uav/reference.py within 1e-9), every block on SIMD lanes."""
    flight = Flight(N, seed=20 + mode, af=ROTOR)
    randomise(flight, np.random.default_rng(20 + mode))
    flight.sp.mode[:] = mode
    for _ in range(2):
        flight.tick()


def _block_once(flight: Flight, lo: int, nb: int) -> tuple[int, np.ndarray]:
    a = _args(flight)
    t = np.zeros(NROW)
    redo = kernel_block.fly_block(lo, nb, t, *a[:5], a[5][0], *a[6:])
    return redo, t[REDO : REDO + nb].copy()


def test_the_flagged_agents_are_exactly_those_the_lanes_cannot_answer_for() -> None:
    flight = Flight(N, seed=3, af=ROTOR)
    randomise(flight, np.random.default_rng(3))
    flight.sp.mode[:] = 5
    redo, flags = _block_once(flight, 0, BLOCK)
    assert redo == 0 and not flags.any()  # random flight: none
    before = [x.copy() for x in _args(flight)[7:9]]
    _edges(flight)
    redo, flags = _block_once(flight, 0, BLOCK)
    assert set(np.flatnonzero(flags)) == {9, 12}  # wrap's remainder, the NaN state
    assert redo == 2
    for k, x in zip((7, 8), before, strict=True):  # the flagged agents' rows untouched
        got = _args(flight)[k]
        assert got[[9, 12]].tobytes() == x[[9, 12]].tobytes()


@njit(error_model="numpy")
def _hypot_lanes(x, y, out, ok):
    for i in range(len(x)):
        out[i], ok[i] = kernel_block._hypot(x[i], y[i])


@njit(error_model="numpy")
def _wrap_lanes(a, out, ok):
    for i in range(len(a)):
        out[i], ok[i] = kernel_block._wrap(a[i])


@njit(error_model="numpy")
def _hypot_scalar(x, y, out):
    for i in range(len(x)):
        out[i] = hypot(x[i], y[i])


def test_the_branch_free_hypot_is_the_scalar_one_where_it_answers() -> None:
    edges = [0.0, -0.0, 1.0, -3.0, 4.0, 5e-324, 2.0**-459, 2.0**-460, 2.0**-405, 2.0**511,
             2.0**512, 1e308, 2.0**-54, 1.0 + 2.0**-52, math.inf, -math.inf, math.nan]  # fmt: skip
    rng = np.random.default_rng(7)
    spread = 10.0 ** rng.integers(-200, 200, (2, 20000))  # every scale, glibc's bounds around
    x = np.concatenate([np.repeat(edges, len(edges)), rng.normal(size=20000) * spread[0]])
    y = np.concatenate([np.tile(edges, len(edges)), rng.normal(size=20000) * spread[1]])
    lanes, ok = np.empty(len(x)), np.empty(len(x), dtype=bool)
    _hypot_lanes(x, y, lanes, ok)
    scalar = np.empty(len(x))
    _hypot_scalar(x, y, scalar)
    assert lanes[ok].tobytes() == scalar[ok].tobytes()
    ax, ay = np.maximum(abs(x), abs(y)), np.minimum(abs(x), abs(y))
    finite = np.isfinite(x) & np.isfinite(y)
    negligible = ay <= ax * 2.0**-54
    # it answers for finite operands but where glibc scales them (a huge one with a second
    # not negligible, two tiny ones)
    scales = ((ax > 2.0**511) & ~negligible) | ((ay < 2.0**-459) & ~(ax >= ay / 2.0**-54))
    assert (ok == (finite & ~scales)).all()
    assert ok[: len(edges) ** 2].sum() > 100 and (~ok).sum() > 50  # both sides exercised
    zero = (x == 0.0) | (y == 0.0)
    assert (ok[zero & finite]).all()  # a zero operand: answered (hovering agents' case)


@njit(error_model="numpy")
def _wrap_scalar(a, out):
    for i in range(len(a)):
        out[i] = wrap(a[i])


def test_the_branch_free_wrap_is_wrap_where_it_answers() -> None:
    """Every difference of two angles in [-pi, pi] answered, the remainder's bits included."""
    turn = 2 * math.pi
    edges = [math.pi, -math.pi, 3 * math.pi, np.nextafter(3 * math.pi, 0.0), -3 * math.pi,
             np.nextafter(-3 * math.pi, 0.0), turn, -turn, math.nan, math.inf,
             -math.inf]  # fmt: skip
    rng = np.random.default_rng(5)
    differences = rng.uniform(-np.pi, np.pi, 20000) - rng.uniform(-np.pi, np.pi, 20000)
    a = np.concatenate([np.linspace(-20.0, 20.0, 40001), edges, differences])
    out, ok = np.empty(len(a)), np.empty(len(a), dtype=bool)
    _wrap_lanes(a, out, ok)
    compiled = np.empty(len(a))
    _wrap_scalar(a, compiled)
    assert out[ok].tobytes() == compiled[ok].tobytes()
    x = a + math.pi
    assert (ok == ((-turn < x) & (x < 2 * turn))).all()
    assert ok[-20000:].all()  # any difference of two angles
