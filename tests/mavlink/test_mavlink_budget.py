"""Bounded per-poll work (`[mavlink] max_datagrams_poll`): a flood of every endpoint is read at
the budget's rate, each link getting its fair share, and a quiet vehicle's command still gets
through at once while another vehicle is flooded."""

from __future__ import annotations

import time

from tests.mavlink.harness import mav_run_fixture  # noqa: F401  (the mav_run fixture)

USER_1 = 31000  # MAV_CMD_USER_1: ACK UNSUPPORTED, changes nothing
ARM = 400


def flood(run, vehicle: int, count: int) -> None:
    for _ in range(count):
        run.clients[vehicle].mav.command_long_send(vehicle + 1, 1, USER_1, 0, 0, 0, 0, 0, 0, 0, 0)
    time.sleep(0.05)  # loopback delivery into the vehicle's socket buffer


def read_per_link(run) -> list[int]:
    return [link.counters.datagrams for link in run.service.links]


def test_a_flood_of_every_link_is_read_at_the_budget_each_link_its_share(mav_run):
    run = mav_run(4, overrides=["mavlink.max_datagrams_poll=10", "mavlink.max_datagrams=64"])
    for v in range(4):
        flood(run, v, 50)
    before = read_per_link(run)
    run.pump(run.service.poll_s)  # one poll
    read = [a - b for a, b in zip(read_per_link(run), before)]
    assert sum(read) == 10  # the budget, not 4 x 64
    assert min(read) >= 10 // 4  # the fair share of each link first
    # Nothing is lost, only spread over polls: 200 datagrams at 10 a poll (plus the clients'
    # own heartbeats, none here) take 20 polls; every command is answered.
    run.pump(25 * run.service.poll_s)
    assert sum(read_per_link(run)) - sum(before) == 200
    acks = [m for _, _, m in run.log if m.get_type() == "COMMAND_ACK" and m.command == USER_1]
    assert len(acks) == 200


def test_a_quiet_vehicles_command_is_handled_at_the_next_poll_during_a_flood(mav_run):
    run = mav_run(3, overrides=["mavlink.max_datagrams_poll=8"])
    flood(run, 2, 200)  # vehicle 2's endpoint flooded: 25 polls' worth of the whole budget
    run.clients[0].mav.command_long_send(1, 1, ARM, 0, 1, 0, 0, 0, 0, 0, 0)
    time.sleep(0.05)
    t0 = run.sim.time_s
    ack = run.wait("COMMAND_ACK", 1.0, 0, lambda m: m.command == ARM)
    assert ack.result == 0
    t_ack = next(t for t, i, m in run.log if i == 0 and m is ack)
    assert t_ack - t0 <= run.service.poll_s + 1e-9  # handled at the first poll
    assert run.service.vehicles[0].armed
