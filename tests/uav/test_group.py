"""Swarm-level behaviours (uav/group.py): inputs, commands, modes, members, coexistence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skyswarm.core.comms.dispatcher import attach_comms
from skyswarm.uav import control as ctl
from skyswarm.uav.group import Commands, GroupInputs
from tests.uav.uav_helpers import make_swarm, run

POS = [(0.0, 0.0, 10.0), (10.0, 0.0, 10.0), (0.0, 10.0, 10.0), (40.0, 0.0, 10.0)]


def test_world_velocity_becomes_heading_frame_setpoints_with_a_mode_switch() -> None:
    yaws = np.array([0.0, math.pi / 2, math.pi, -math.pi / 2])  # ENU yaw of each UAV
    sim, swarm = make_swarm(POS, yaws)  # hovering: Position mode
    seen: list[GroupInputs] = []

    def fn(g: GroupInputs) -> Commands:
        seen.append(g)
        w = np.tile([1.0, 2.0], (g.n, 1))  # 1 m/s east, 2 m/s north for all
        return Commands(velocity=w, altitude=np.full(g.n, 12.0), heading_deg=np.full(g.n, 45.0))

    swarm.behave(0.1, fn)
    sim.step()  # the task's first run: tick 0
    assert len(seen) == 1 and seen[0].n == 4 and seen[0].dt == pytest.approx(0.1)
    np.testing.assert_allclose(seen[0].position, POS, atol=1e-9)
    np.testing.assert_allclose(seen[0].yaw, yaws, atol=1e-9)
    sp = swarm.setpoints
    assert all(swarm.mode_of(i) is ctl.GROUND_SPEED_ALTITUDE_AND_HEADING for i in range(4))
    # heading frame: vx = cos(yaw) wx + sin(yaw) wy, vy = cos(yaw) wy - sin(yaw) wx
    expected = [(1, 2), (2, -1), (-1, -2), (-2, 1)]
    np.testing.assert_allclose(sp.velocity[:, :2], expected, atol=1e-9)
    np.testing.assert_allclose(sp.altitude, 12.0)
    np.testing.assert_allclose(sp.yaw, math.radians(45.0))  # compass 45 deg = ENU 45 deg


def test_members_rows_position_mode_memory_and_coexistence_with_per_agent_tasks() -> None:
    sim, swarm = make_swarm(POS)
    calls: list[np.ndarray] = []

    def fn(g: GroupInputs) -> Commands:
        calls.append(g.index.copy())
        k = g.memory.setdefault("k", np.zeros(swarm.n))
        k[g.index] += 1
        # only the first row of the call is commanded
        return Commands(position=np.array([[5.0, 5.0]]), altitude=np.array([8.0]), rows=[0])

    swarm.behave(0.05, fn, members=[1, 2])
    ticks: list[int] = []
    agent0 = swarm.agents[0]
    agent0.every(0.05, lambda: (ticks.append(sim.tick), agent0.fly(1.0, 0.0, 10.0)))
    run(sim, 0.2)  # ticks 0, 20, 40, 60
    assert len(calls) == 4 and all(c.tolist() == [1, 2] for c in calls)
    assert ticks == [0, 20, 40, 60]  # the per-agent task runs beside it
    assert swarm.mode_of(0) is ctl.GROUND_SPEED_ALTITUDE_AND_HEADING  # its own command
    np.testing.assert_allclose(swarm.setpoints.position[1], [5.0, 5.0])
    assert swarm.setpoints.altitude[1] == 8.0 and swarm.setpoints.altitude[2] == 10.0
    sim.kill(swarm.agents[2], "test")
    run(sim, 0.05)
    assert calls[-1].tolist() == [1]  # the dead member is left out
    mem = swarm.sim.tasks.tasks[0].fn.memory["k"]
    assert mem.tolist() == [0, 5, 4, 0]


def test_neighbours_come_from_beacons_and_skip_dead_receivers() -> None:
    sim, swarm = make_swarm(POS)
    attach_comms(sim)  # radio: 100 m range, 5 ms + 0..2.5 ms, 1 % loss
    net = swarm.beacons(0.1, extra_fields=("battery",), extra=lambda rows: rows * 0.5)
    got: list = []

    def fn(g: GroupInputs) -> None:
        nb = g.neighbours()
        got.append((g.index.copy(), nb, g.mean_over(nb, nb.position)))

    swarm.behave(0.1, fn, beacons=net, phase_s=0.05)
    run(sim, 0.06)  # beacons at tick 0 arrive by tick 3; the behaviour runs at tick 20
    index, nb, mean = got[-1]
    assert index.tolist() == [0, 1, 2, 3]
    pairs = set(zip(nb.agent.tolist(), nb.sender.tolist()))
    everyone = {(i, j) for i in range(4) for j in range(4) if i != j}
    assert pairs <= everyone and len(pairs) >= 10  # 12 copies, 1 % loss each
    assert nb.counts.sum() == len(nb.agent)
    np.testing.assert_allclose(nb.extra[:, 0], nb.sender * 0.5)
    np.testing.assert_allclose(nb.position, np.array(POS)[nb.sender], atol=1e-6)
    np.testing.assert_allclose(nb.age_s, 0.05)  # sent at tick 0, read at tick 20
    for i in range(4):  # the mean of the neighbours heard, per UAV
        heard = np.array(POS)[nb.sender[nb.agent == i]]
        np.testing.assert_allclose(mean[i], heard.mean(axis=0), atol=1e-6)
    sim.kill(swarm.agents[0], "test")
    run(sim, 0.1)
    index, nb, mean = got[-1]
    assert index.tolist() == [1, 2, 3] and len(nb.counts) == 3 and mean.shape == (3, 3)
    assert nb.agent.max() <= 2  # rows of the call: the dead receiver's entries are left out


def test_commands_need_a_complete_set() -> None:
    sim, swarm = make_swarm(POS)
    swarm.behave(0.1, lambda g: Commands(velocity=np.zeros((g.n, 2))))
    with pytest.raises(ValueError, match="velocity \\+ altitude"):
        sim.step()


def test_a_row_given_twice_in_one_call_s_commands_is_refused() -> None:
    # before: the row's last position won and the first was dropped without a word
    sim, swarm = make_swarm(POS)
    swarm.behave(
        0.1, lambda g: Commands(position=np.array([[5.0, 5.0], [9.0, 9.0]]),
                                altitude=np.array([8.0, 8.0]), rows=[1, 1])
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"Commands.rows: row 1 is given more than once"):
        sim.step()
    assert swarm.setpoints.altitude[1] == 10.0  # nothing written
