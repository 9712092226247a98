"""Swarm-level behaviours: one call per behaviour tick for every alive UAV of a swarm, with
arrays in and arrays out (docs/architecture.md, State in arrays).

The per-agent kind (`agent.every(period, fn)`) runs Python once per agent; most swarm
algorithms are "every agent reads its neighbours' broadcast state and computes a command",
which this kind does in numpy for all agents at once:

    def steer(g: GroupInputs) -> Commands:
        nb = g.neighbours()                      # beacons heard, one entry per (agent, neighbour)
        centre = g.mean_over(nb, nb.position)    # (n, 3) mean neighbour position, per agent
        return Commands(velocity=0.5 * (centre - g.position)[:, :2], altitude=g.position[:, 2])

    swarm.behave(0.1, steer, beacons=swarm.beacons(0.1))

`GroupInputs` carries what each UAV knows: its own sensed state (the estimate with
`[uav.sensors]`, the truth with `ideal` sensors), the beacons it heard (`core.beacons`), and
`memory`, arrays over the whole swarm that persist between calls. `Commands` holds arrays of
setpoints; the agents whose control mode differs switch bumplessly, in one call. Both kinds
coexist: a mission may give some agents per-agent tasks and run a group behaviour for others
(`rows`), or both on the same agents (later writes win, as with two per-agent tasks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.comms.beacons import BeaconNet, NeighbourTable
from skyswarm.core.geo import heading_to_yaw, yaw_of
from skyswarm.uav import control as ctl
from skyswarm.uav.commands import first_repeat

if TYPE_CHECKING:
    from skyswarm.core.tasks import Task
    from skyswarm.uav.swarm import Swarm


@dataclass(frozen=True)
class Neighbours:
    """Beacons heard by the group's agents: one entry per (agent, neighbour), by agent then
    neighbour id. `agent` indexes the group's rows (0..n-1); fields are as sent."""

    agent: np.ndarray  # (E,) int, row in the group
    sender: np.ndarray  # (E,) int, swarm index of the neighbour
    sender_id: np.ndarray  # (E,) int64 agent id
    age_s: np.ndarray  # (E,) s since it was sent
    position: np.ndarray  # (E, 3) m, as sent
    velocity: np.ndarray  # (E, 3) m/s, as sent
    yaw: np.ndarray  # (E,) rad ENU, as sent
    extra: np.ndarray  # (E, k) the net's extra fields
    counts: np.ndarray  # (n,) entries per agent
    indptr: np.ndarray  # (n + 1,) CSR: agent i's entries are indptr[i]:indptr[i + 1]


@dataclass
class GroupInputs:
    """What a group behaviour sees at one call; arrays over the n alive agents of the group."""

    swarm: Swarm
    index: np.ndarray  # (n,) swarm indices (agent k of the swarm is swarm.agents[k])
    ids: np.ndarray  # (n,) int64 agent ids
    position: np.ndarray  # (n, 3) m, sensed
    velocity: np.ndarray  # (n, 3) m/s, sensed, world frame
    yaw: np.ndarray  # (n,) rad ENU, sensed
    memory: dict[str, np.ndarray]  # arrays over the whole swarm (rows = swarm indices)
    tick: int
    time_s: float
    dt: float  # s, the behaviour period
    table: NeighbourTable | None = None

    @property
    def n(self) -> int:
        return len(self.index)

    def neighbours(self) -> Neighbours:
        """The beacons heard by these agents (empty without a beacon net); views of the net's
        table, valid during this call."""
        n = self.n
        t = self.table
        if t is None:
            z = np.zeros(0, dtype=np.intp)
            e = np.zeros((0, 3))
            zn = np.zeros(n, dtype=np.intp)
            return Neighbours(
                z,
                z,
                z.astype(np.int64),
                np.zeros(0),
                e,
                e,
                np.zeros(0),
                np.zeros((0, 0)),
                zn,
                np.zeros(n + 1, dtype=np.intp),
            )
        if n == len(t.indptr) - 1:  # every member alive and in the group: the table as is
            agent, rec, indptr = t.receiver, t.record, t.indptr
            sender, sender_id, age = t.sender, t.sender_id, t.age_s
        else:
            row_of = np.full(len(t.indptr) - 1, -1, dtype=np.intp)
            row_of[self._table_rows()] = np.arange(n)
            agent = row_of[t.receiver]
            sel = agent >= 0  # receivers of this group that are alive
            agent, rec = agent[sel], t.record[sel]
            sender, sender_id, age = t.sender[sel], t.sender_id[sel], t.age_s[sel]
            indptr = np.searchsorted(agent, np.arange(n + 1))  # agent rows stay sorted
        return Neighbours(
            agent,
            sender,
            sender_id,
            age,
            rec[:, 0:3],
            rec[:, 3:6],
            rec[:, 6],
            rec[:, 7:],
            np.diff(indptr),
            indptr,
        )

    def _table_rows(self) -> np.ndarray:
        """The rows of the beacon table (net members = swarm agents in order) of this call."""
        return self.index

    def sum_over(self, agent: np.ndarray, values: np.ndarray) -> np.ndarray:
        """(n, ...) per-agent sums of per-entry `values` (E, ...) by `agent` row (E,)."""
        v = np.asarray(values, dtype=float)
        if v.ndim == 1:
            return np.bincount(agent, weights=v, minlength=self.n)
        cols = [np.bincount(agent, weights=v[:, j], minlength=self.n) for j in range(v.shape[1])]
        return np.stack(cols, axis=1) if cols else np.zeros((self.n, 0))

    def mean_over(self, nb: Neighbours, values: np.ndarray) -> np.ndarray:
        """(n, ...) per-agent means of per-entry `values` over the neighbours heard (0 if none)."""
        s = self.sum_over(nb.agent, values)
        k = np.maximum(nb.counts, 1)
        return s / (k[:, None] if s.ndim == 2 else k)


@dataclass
class Commands:
    """Setpoints for the n agents of a call (rows as in `GroupInputs`); None = not commanded.

    - `velocity` (n, 2) m/s world-frame horizontal + `altitude` (n,) m [+ `heading_deg` (n,)
      compass]: GroundSpeedAltitudeAndHeading, like `AutonomousUavAgent.fly` (without a heading
      the current heading target is kept);
    - `velocity` + `vertical_speed` (n,) m/s: GroundSpeedAndVertSpeed (`fly_velocity`);
    - `position` (n, 2) m + `altitude` [+ `heading_deg`]: Position (`goto`).
    `rows` (m,) restricts the command to those rows of the call (the arrays then have m rows;
    a row given twice is a ValueError).
    The world-frame velocity is turned into each agent's heading frame with its sensed yaw.
    """

    velocity: np.ndarray | None = None
    altitude: np.ndarray | None = None
    heading_deg: np.ndarray | None = None
    vertical_speed: np.ndarray | None = None
    position: np.ndarray | None = None
    rows: np.ndarray | None = None


def apply_commands(swarm: Swarm, g: GroupInputs, cmd: Commands) -> None:
    """Write `cmd` into the swarm's setpoints; agents in another mode switch first."""
    sel = np.arange(g.n) if cmd.rows is None else np.asarray(cmd.rows, dtype=np.intp)
    if not len(sel):
        return
    repeated = first_repeat(sel)
    if repeated is not None:  # its last row would silently win
        raise ValueError(
            f"Commands.rows: row {repeated} is given more than once: expected each row of the "
            "call at most once"
        )
    idx = g.index[sel]
    sp = swarm.setpoints
    if cmd.position is not None:
        mode = ctl.POSITION
    elif cmd.velocity is not None and cmd.vertical_speed is not None:
        mode = ctl.GROUND_SPEED_AND_VERT_SPEED
    elif cmd.velocity is not None and cmd.altitude is not None:
        mode = ctl.GROUND_SPEED_ALTITUDE_AND_HEADING
    else:
        raise ValueError(
            "Commands need position + altitude, velocity + altitude, or velocity + vertical_speed"
        )
    switch = idx[sp.mode[idx] != ctl.mode_index(mode)]
    if len(switch):
        swarm.set_mode(switch, mode)
    if mode is ctl.POSITION:
        sp.position[idx] = cmd.position
        sp.altitude[idx] = cmd.altitude
    else:
        w = np.asarray(cmd.velocity, dtype=float)
        yaw = g.yaw[sel]
        c, s = np.cos(yaw), np.sin(yaw)
        sp.velocity[idx, 0] = c * w[:, 0] + s * w[:, 1]  # heading frame
        sp.velocity[idx, 1] = c * w[:, 1] - s * w[:, 0]
        if mode is ctl.GROUND_SPEED_AND_VERT_SPEED:
            sp.velocity[idx, 2] = cmd.vertical_speed
            sp.attitude[idx, 2] = 0.0
        else:
            sp.altitude[idx] = cmd.altitude
    if cmd.heading_deg is not None and mode is not ctl.GROUND_SPEED_AND_VERT_SPEED:
        sp.yaw[idx] = heading_to_yaw(np.asarray(cmd.heading_deg, dtype=float))


@dataclass(eq=False)
class GroupBehaviour:
    """A group behaviour installed on a swarm (`Swarm.behave`): calls `fn` every period."""

    swarm: Swarm
    fn: Callable[[GroupInputs], Commands | None]
    period_s: float
    beacons: BeaconNet | None = None
    members: np.ndarray | None = None  # swarm indices of the group (None: the whole swarm)
    memory: dict[str, np.ndarray] = field(default_factory=dict)
    task: Task | None = None

    def inputs(self) -> GroupInputs:
        """The current inputs for the alive members."""
        sw = self.swarm
        alive = sw.alive if self.members is None else sw.alive[self.members]
        index = np.flatnonzero(alive) if self.members is None else self.members[alive]
        pos, vel, yaw = sensed_state(sw, index)
        sim = sw.sim
        return GroupInputs(
            sw,
            index,
            sw.ids[index],
            pos,
            vel,
            yaw,
            self.memory,
            sim.tick,
            sim.time_s,
            self.period_s,
            self.beacons.table() if self.beacons is not None else None,
        )

    def __call__(self) -> None:
        g = self.inputs()
        if not g.n:
            return
        cmd = self.fn(g)
        if cmd is not None:
            apply_commands(self.swarm, g, cmd)


def sensed_state(swarm: Swarm, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position (n, 3) m, velocity (n, 3) m/s and ENU yaw (n,) rad that agents `index` sense of
    themselves: the estimate with `[uav.sensors]` driving control, else the truth."""
    s = swarm.sensors
    if s is not None and s.drives_control:
        return s.position[index], s.velocity[index], s.euler[index, 2].astype(float)
    state, rows = swarm.sim.world.state, swarm.slots[index]
    yaw = np.asarray(yaw_of(state.orientation[rows]), dtype=float).reshape(len(index))
    return state.position[rows], state.linear_velocity[rows], yaw


def beacon_source(swarm: Swarm, extra: Callable[[np.ndarray], np.ndarray] | None = None) -> Any:
    """A `BeaconNet` source: the sensed state of swarm indices `rows` (plus `extra(rows)`)."""

    def source(rows: np.ndarray) -> np.ndarray:
        pos, vel, yaw = sensed_state(swarm, rows)
        cols = [pos, vel, yaw[:, None]]
        if extra is not None:
            cols.append(np.asarray(extra(rows), dtype=float).reshape(len(rows), -1))
        return np.concatenate(cols, axis=1)

    return source
