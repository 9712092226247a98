"""A live skyswarm MAVLink run on 127.0.0.1 driven in lockstep by real pymavlink clients.

`Run.pump(seconds, until)` steps the simulation one poll at a time and reads every client's
datagrams in between, so a test is as fast as the simulation and deterministic in simulated
time. Ports are drawn at random and checked free (xdist-safe); a taken one is retried.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from pymavlink import mavutil

from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.mavlink import attach

ROOT_CONFIG = "configs/mavlink.toml"


def free_base(span: int, rng: random.Random) -> int:
    """A port p with p .. p + span - 1 free on 127.0.0.1 (UDP) right now."""
    for _ in range(200):
        base = rng.randrange(20000, 60000 - span)
        socks = []
        try:
            for p in range(base, base + span):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free UDP port range")


class Run:
    """Simulation + MAVLink service + one pymavlink client per vehicle."""

    def __init__(self, root, n: int = 1, config: str = ROOT_CONFIG, overrides: Sequence[str] = ()):
        rng = random.Random()
        for attempt in range(5):
            base = free_base(2 * n + 8, rng)
            self.client_port, vehicle_port = base, base + n + 4
            ov = [
                f"mavlink.vehicle_port={vehicle_port}",
                f"mavlink.client_port={self.client_port}",
                *overrides,
            ]
            if config == ROOT_CONFIG:
                ov.insert(0, f"agents.count={n}")
            scenario = load_scenario(root / config, ov)
            self.sim = Simulator.from_scenario(scenario)
            try:
                self.service = attach(self.sim)
                break
            except ConfigError:
                self.sim.close()
                if attempt == 4:
                    raise
        self.vehicle_port = vehicle_port
        self.clients = [
            mavutil.mavlink_connection(
                f"udpin:127.0.0.1:{self.client_port + i}", source_system=255, source_component=190
            )
            for i in range(n)
        ]
        self.log: list[tuple[float, int, object]] = []  # (sim s, vehicle, message)
        self.cursor = 0  # log entries before it were examined by `pump`

    def pump(self, seconds: float, until: Callable[[int, object], bool] | None = None, every=None):
        """Step up to `seconds` of simulated time, one poll at a time, logging every datagram
        with the simulated time it was read at; return the first (vehicle, message) not yet
        examined that `until` accepts (None at the end). `every()` runs before each poll."""
        sim, poll = self.sim, self.service.poll_ticks
        end = sim.tick + round(seconds / sim.world.tick_s)
        while True:
            while self.cursor < len(self.log):
                _, i, m = self.log[self.cursor]
                self.cursor += 1
                if until is not None and until(i, m):
                    return i, m
            if sim.tick >= end:
                return None
            if every is not None:
                every()
            for _ in range(poll):
                sim.step()
            for i, c in enumerate(self.clients):
                while (m := c.recv_match(blocking=False)) is not None:
                    self.log.append((sim.time_s, i, m))

    def wait(self, kind: str, seconds: float = 2.0, vehicle: int = 0, test=None, every=None):
        got = self.pump(
            seconds,
            lambda i, m: i == vehicle and m.get_type() == kind and (test is None or test(m)),
            every,
        )
        assert got is not None, f"no {kind} from vehicle {vehicle} within {seconds} s"
        return got[1]

    def last(self, kind: str, vehicle: int = 0):
        for _, i, m in reversed(self.log):
            if i == vehicle and m.get_type() == kind:
                return m
        return None

    def command(self, cmd: int, *params: float, vehicle: int = 0, every=None) -> int:
        """COMMAND_LONG to vehicle `vehicle`; its COMMAND_ACK result."""
        p = list(params) + [0.0] * (7 - len(params))
        self.clients[vehicle].mav.command_long_send(vehicle + 1, 1, cmd, 0, *p)
        ack = self.wait("COMMAND_ACK", 1.0, vehicle, lambda m: m.command == cmd, every)
        return ack.result

    def connect(self) -> None:
        for i in range(len(self.clients)):
            self.wait("HEARTBEAT", 2.0, i)

    def truth(self, vehicle: int = 0) -> np.ndarray:
        v = self.service.vehicles[vehicle]
        return self.sim.world.state.position[v.swarm.slots[v.index]].copy()

    def close(self) -> None:
        self.service.close()
        for c in self.clients:
            c.close()
        self.sim.close()


@pytest.fixture(name="mav_run")
def mav_run_fixture(repo_root):
    """`mav_run(n=1, config=..., overrides=[...])` -> a connected Run, closed afterwards."""
    runs = []

    def make(n: int = 1, **kw) -> Run:
        run = Run(repo_root, n, **kw)
        runs.append(run)
        run.connect()
        return run

    yield make
    for run in runs:
        run.close()
