"""The MAVLink service of a run: every selected UAV a vehicle with its own UDP endpoint(s),
polled in the behaviour phase (a pre-tick listener) at `[mavlink] poll_hz`.

One poll, in order: a snapshot of the vehicles' sensed state (snapshot.py); at most
`max_datagrams_poll` datagrams read over all links, each link a fair share first and never more
than `max_datagrams` (non-blocking sockets: the tick never waits on the network; what a flood
leaves unread waits in, or overflows, the socket's buffer: `_read`); each valid
message handled (handlers.py); the mission uploads' retries; each vehicle's logic (vehicle.py);
the targets written to the swarm as arrays (targets.py); the telemetry due (telemetry.py).

The scenario's mission flies a UAV until a ground station takes it (an accepted flight
command, docs/mavlink.md); from then on its targets are written again every tick, after the
mission's own commands of that tick, so the ground station's win. In the `mavlink` scenario
(vehicles.py) every UAV is the ground station's from the start.

    service = MavlinkService(sim, config)   # binds the sockets; raises ConfigError if busy
    sim.run()
    print(service.report())
    service.close()
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.schema import ConfigError
from skyswarm.mavlink.channel import LinkChannel, link_rng
from skyswarm.mavlink.config import MavlinkConfig
from skyswarm.mavlink.link import Link
from skyswarm.mavlink.snapshot import take_snapshot
from skyswarm.mavlink.targets import Targets
from skyswarm.mavlink.telemetry import Telemetry
from skyswarm.mavlink.vehicle import GROUND_HEIGHT_M, GROUND_SPEED_M_S, Vehicle
from skyswarm.uav.agents import UavAgent

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator


class MavlinkService:
    """The vehicles of one simulation and their links; see the module docstring."""

    def __init__(self, sim: Simulator, config: MavlinkConfig, *, ground_owns: bool = False):
        """`ground_owns`: every vehicle is the ground station's from the start (no mission)."""
        self.sim, self.config = sim, config
        self.tick_s = sim.world.tick_s
        file = sim.scenario.file if sim.scenario is not None else ""
        self.file = file
        try:
            self.poll_ticks = max(1, sim.world.ticks_for(1.0 / config.poll_hz, "poll period"))
        except ValueError as exc:
            raise ConfigError(file, "mavlink.poll_hz", config.poll_hz, str(exc)) from None
        self.poll_s = self.poll_ticks * self.tick_s
        geo = sim.scenario.geo.origin if sim.scenario is not None else ()
        self.origin = tuple(geo) if geo else tuple(config.home_origin)
        agents = self._select(sim, config)
        _check_ports(config, len(agents), file)
        _check_system_ids(config, len(agents), file)
        key = _signing_key(config, file)
        self.vehicles: list[Vehicle] = []
        self.links: list[Link] = []
        self.groups: list[tuple[Any, np.ndarray, np.ndarray, Targets]] = []
        try:
            self._build(agents, key)
        except BaseException:
            self.close()
            raise
        self.homes = np.array([v.home for v in self.vehicles]).reshape(-1, 3)
        self.link_rows = [(row, link) for row, v in enumerate(self.vehicles) for link in v.links]
        self.channel = self._channel(sim, config)
        for v in self.vehicles:
            v.taken = ground_owns
            if ground_owns:
                v.fly_off()
        self.ground_owns = ground_owns
        self.telemetry = Telemetry(self.vehicles, self.tick_s, self.poll_ticks, time.time())
        self.work_s = 0.0  # wall time spent in polls
        self.polls = 0
        sim.add_pre_tick(self.pre_tick)

    def _select(self, sim: Simulator, config: MavlinkConfig) -> list[UavAgent]:
        uavs = sorted(
            (a for a in sim.agents.values() if isinstance(a, UavAgent)), key=lambda a: a.id
        )
        if not config.agents:
            return uavs
        by_id = {a.id: a for a in uavs}
        for i in config.agents:
            if i not in by_id:
                raise ConfigError(
                    self.file,
                    "mavlink.agents",
                    list(config.agents),
                    f"ids of UAV agents of the scenario ({sorted(by_id)})",
                )
        return [by_id[i] for i in config.agents]

    def _build(self, agents: list[UavAgent], key: bytes | None) -> None:
        c = self.config
        by_swarm: dict[int, list[tuple[int, UavAgent]]] = {}
        for i, a in enumerate(agents):
            by_swarm.setdefault(id(a.swarm), []).append((i, a))
        slots: list[Vehicle | None] = [None] * len(agents)
        for members in by_swarm.values():
            swarm = members[0][1].swarm
            index = np.array([a.index for _, a in members], dtype=np.intp)
            targets = Targets(swarm, index)
            for row, (i, _) in enumerate(members):
                links = [self._link(c.system_id + i, c.vehicle_port + i, c.client_port + i, key)]
                if c.gcs:
                    links.append(
                        self._link(
                            c.system_id + i, c.gcs_vehicle_port + i, c.gcs_port, key, gcs=True
                        )
                    )
                slots[i] = Vehicle(self, targets, row, c.system_id + i, links)
            rows = np.array([i for i, _ in members], dtype=np.intp)
            self.groups.append((swarm, index, rows, targets))
        self.vehicles = [v for v in slots if v is not None]

    def _channel(self, sim: Simulator, c: MavlinkConfig) -> LinkChannel | None:
        """The radio channel `[mavlink] channel` every link crosses (mavlink/channel.py)."""
        if not c.channel:
            return None
        disp = sim.dispatcher
        names = [] if disp is None else [ch.name for ch in disp.channels]
        if c.channel not in names:
            self.close()
            known = ", ".join(map(repr, names)) or "none: the run has no comms"
            expected = f"'' (no channel) or a [comms.channels] channel of the run ({known})"
            raise ConfigError(self.file, "mavlink.channel", c.channel, expected)
        channel = disp.channels[disp.channel_index(c.channel)]
        ground = np.array(c.ground_station_m, dtype=float) if c.ground_station_m else None
        model = LinkChannel(channel, link_rng(sim.rng.seed), ground, self.homes)
        for row, v in enumerate(self.vehicles):
            for link in v.links:
                link.route_through(model, row)
        return model

    def _link(self, sysid: int, port: int, remote_port: int, key, gcs: bool = False) -> Link:
        c = self.config
        name = "mavlink.gcs_vehicle_port" if gcs else "mavlink.vehicle_port"
        if port > 65535 or remote_port > 65535:
            raise ConfigError(self.file, name, port, "ports + vehicle count <= 65535")
        try:
            link = Link(sysid, (c.bind_address, port), (c.client_address, remote_port), key)
        except OSError as exc:
            raise ConfigError(
                self.file, name, port, f"a free UDP port on {c.bind_address} ({exc.strerror})"
            ) from None
        self.links.append(link)
        return link

    # -- the tick ---------------------------------------------------------------------------
    def pre_tick(self, world: World) -> None:
        tick = world.tick
        if tick % self.poll_ticks == 0:
            self.poll(tick)
        if self.channel is not None:  # the delayed packets due this tick
            self.channel.flush(tick)
        if not self.ground_owns:  # the mission wrote this tick's commands: ours win
            for _, _, _, targets in self.groups:
                targets.apply(every=True)

    def poll(self, tick: int) -> None:
        t0 = time.perf_counter()
        time_s = tick * self.tick_s
        groups = [(s, idx, rows) for s, idx, rows, _ in self.groups]
        snap = take_snapshot(groups, self.homes, self.origin, time_s)
        alive = np.zeros(len(self.vehicles), dtype=bool)
        for swarm, idx, rows in groups:
            alive[rows] = swarm.alive[idx]
        height = snap.pos[:, 2] - self.homes[:, 2]
        speed = np.linalg.norm(snap.vel, axis=1)
        still = (height < GROUND_HEIGHT_M) & (speed < GROUND_SPEED_M_S)
        for i, v in enumerate(self.vehicles):
            v.sense(snap.pos[i], snap.vel[i], float(snap.yaw_enu[i]), bool(still[i]), tick, time_s)
        self.telemetry.snap = snap
        channel = self.channel
        if channel is not None:
            channel.update(tick, snap.pos)
        inbox = self._read()
        for i, v in enumerate(self.vehicles):
            if channel is not None:  # lost, or handled at the first poll at or after it is due
                channel.arrive(i, inbox[i])
                inbox[i] = channel.due(i, tick)
            if alive[i]:  # a killed UAV's messages are read (bounded) and dropped
                for link, m in inbox[i]:
                    v.handlers.handle(link, m)
            v.mission.poll(time_s)
            if alive[i]:
                v.update()
        for _, _, _, targets in self.groups:
            targets.apply(every=False)
        self.telemetry.send_due(tick, snap, alive)
        self.polls += 1
        self.work_s += time.perf_counter() - t0

    def _read(self) -> list[list[tuple[Link, Any]]]:
        """(link, message) pairs of every vehicle, at most `max_datagrams_poll` datagrams in
        all: the links in an order rotating every poll, each first its fair share (the budget
        over the links, at least one datagram, at most `max_datagrams`) while the budget lasts;
        what is left goes, in the same order, to the links that had more, up to
        `max_datagrams` each. Unread datagrams wait in the socket buffers."""
        c, links = self.config, self.link_rows
        if not links:
            return []
        k = self.polls % len(links)
        order = links[k:] + links[:k]
        share = min(c.max_datagrams, max(1, c.max_datagrams_poll // len(links)))
        inbox: list[list[tuple[Link, Any]]] = [[] for _ in self.vehicles]
        budget, more = c.max_datagrams_poll, []
        for limit in (share, c.max_datagrams - share):
            for row, link in order:
                if budget <= 0:
                    return inbox
                before = link.counters.datagrams
                inbox[row] += [(link, m) for m in link.receive(min(limit, budget))]
                read = link.counters.datagrams - before
                budget -= read
                if read >= limit:
                    more.append((row, link))
            order, more = more, []
            if limit <= 0:
                break
        return inbox

    # -- end --------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """Counters of every link summed, per-poll cost, messages sent."""
        totals: dict[str, int] = {}
        for link in self.links:
            for k, n in link.counters.as_dict().items():
                totals[k] = totals.get(k, 0) + n
        return {
            "vehicles": len(self.vehicles),
            "polls": self.polls,
            "poll_ms_mean": 1000 * self.work_s / self.polls if self.polls else 0.0,
            "sent": self.telemetry.sent,
            "received": totals,
            "offboard_unsupported": sum(v.offboard.unsupported for v in self.vehicles),
            "channel": self.channel.counters.as_dict() if self.channel is not None else {},
        }

    def close(self) -> None:
        for link in self.links:
            link.close()
        if self.pre_tick in self.sim.pre_tick_listeners:
            self.sim.remove_pre_tick(self.pre_tick)

    # -- geometry -----------------------------------------------------------------------------
    def amsl(self, enu: np.ndarray) -> float:
        """m AMSL of world point `enu`: the origin's altitude + z, as `enu_to_wgs84` gives it
        (the world is flat: core/geo.py)."""
        return float(self.origin[2] + enu[2])

    def to_enu(self, lat: float, lon: float, amsl: float) -> np.ndarray:
        """(3,) world ENU m of a WGS84 place; NaN 90 deg or more from the origin."""
        from skyswarm.core.geo import wgs84_to_enu

        return wgs84_to_enu(np.array([[lat, lon, amsl]]), self.origin)[0]


def _signing_key(config: MavlinkConfig, file: str) -> bytes | None:
    """The 32-byte key of `signing_key_file` (raw bytes or 64 hex digits), or None."""
    if not config.signing_key_file:
        return None
    path = Path(config.signing_key_file)
    if file and not path.is_absolute():
        path = Path(file).resolve().parent / path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            file, "mavlink.signing_key_file", str(path), f"a readable file ({exc.strerror})"
        ) from None
    text = data.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            pass
    if len(data) == 32:
        return data
    raise ConfigError(file, "mavlink.signing_key_file", str(path), "32 raw bytes or 64 hex digits")


def _check_system_ids(c: MavlinkConfig, n: int, file: str) -> None:
    """The system ids of `n` vehicles, system_id .. system_id + n - 1, fit MAVLink's byte."""
    if c.system_id + n - 1 > 255:
        raise ConfigError(
            file,
            "mavlink.system_id",
            c.system_id,
            f"an id <= {256 - n} for {n} vehicles (ids: 1..255)",
        )


def _check_ports(c: MavlinkConfig, n: int, file: str) -> None:
    """The port ranges of `n` vehicles stay apart (a vehicle must never send to another's
    socket: PX4's 14540+i and 14580+i meet at the 41st vehicle) and below 65536."""
    ranges = {"vehicle_port": (c.vehicle_port, n), "client_port": (c.client_port, n)}
    if c.gcs:
        ranges["gcs_vehicle_port"] = (c.gcs_vehicle_port, n)
        ranges["gcs_port"] = (c.gcs_port, 1)
    for key, (lo, k) in ranges.items():
        if lo + k - 1 > 65535:
            raise ConfigError(file, f"mavlink.{key}", lo, f"a port <= {65536 - k} for {n} vehicles")
        for other, (lo2, k2) in ranges.items():
            if other != key and lo < lo2 + k2 and lo2 < lo + k:
                raise ConfigError(
                    file,
                    f"mavlink.{key}",
                    lo,
                    f"a range {lo}..{lo + k - 1} apart from {other}'s {lo2}..{lo2 + k2 - 1} "
                    f"({n} vehicles)",
                )
