"""What each agent of a swarm env knows of its neighbours: the beacons it heard over the radio
(core/comms/beacons.py, with the channel's range, loss and latency), or the truth.

The neighbour block of an observation holds the `k` nearest neighbours heard (by the distance
their record states), nearest first, 8 columns each; empty places are zeros (heard = 0):

| columns | what | unit, frame |
| --- | --- | --- |
| 0:3 | neighbour position as heard - own position | m, world ENU |
| 3:6 | neighbour velocity as heard - own velocity | m/s, world ENU |
| 6 | age of the beacon: now - its send time (0 for the truth) | s |
| 7 | heard: 1, or 0 for an empty place | - |

    hearing = RadioHearing(swarm.beacons(0.1))        # or TruthHearing(swarm, range_m=100.0)
    block = neighbour_block(hearing.heard(), own_pos, own_vel, k=4)    # (n, 32) float32
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy.spatial import cKDTree

from skyswarm.core.comms.beacons import BeaconNet
from skyswarm.uav.swarm import Swarm

FIELDS = ("dx", "dy", "dz", "dvx", "dvy", "dvz", "age_s", "heard")
WIDTH = len(FIELDS)


@dataclass(frozen=True)
class Heard:
    """Beacons heard, one entry per (receiver, neighbour): receiver (E,) swarm index, position
    (E, 3) m and velocity (E, 3) m/s as heard, age (E,) s."""

    receiver: np.ndarray
    position: np.ndarray
    velocity: np.ndarray
    age_s: np.ndarray


class Hearing(Protocol):
    """Where the neighbour block comes from."""

    def heard(self) -> Heard:
        """Every agent's latest news of each neighbour."""
        ...


class RadioHearing:
    """The neighbour table of a beacon net whose members are the swarm's agents in order."""

    def __init__(self, net: BeaconNet) -> None:
        self.net = net

    def heard(self) -> Heard:
        t = self.net.table()
        return Heard(t.receiver, t.record[:, 0:3], t.record[:, 3:6], t.age_s)


class TruthHearing:
    """Every alive agent knows the true state of every other alive one within `range_m`."""

    def __init__(self, swarm: Swarm, range_m: float = np.inf) -> None:
        self.swarm, self.range_m = swarm, range_m

    def heard(self) -> Heard:
        sw = self.swarm
        live = np.flatnonzero(sw.alive)
        st = sw.sim.world.state
        pos = st.position[sw.rows][live]
        vel = st.linear_velocity[sw.rows][live]
        r = self.range_m if np.isfinite(self.range_m) else 1e12
        pairs = cKDTree(pos).query_pairs(r, output_type="ndarray")
        a = np.concatenate([pairs[:, 0], pairs[:, 1]])  # both directions
        b = np.concatenate([pairs[:, 1], pairs[:, 0]])
        return Heard(live[a], pos[b], vel[b], np.zeros(len(a)))


def neighbour_block(heard: Heard, position: np.ndarray, velocity: np.ndarray, k: int) -> np.ndarray:
    """(n, k * 8) float32: for each of the n agents (own `position`, `velocity` (n, 3)), its k
    nearest neighbours heard, nearest first (see the module table)."""
    n = len(position)
    out = np.zeros((n, k, WIDTH), dtype=np.float32)
    if k == 0 or not len(heard.receiver):
        return out.reshape(n, k * WIDTH)
    recv = np.asarray(heard.receiver, dtype=np.intp)
    rel = heard.position - position[recv]
    dist = np.einsum("ij,ij->i", rel, rel)
    order = np.lexsort((dist, recv))
    recv_s = recv[order]
    rank = np.arange(len(order)) - np.searchsorted(recv_s, recv_s, side="left")
    keep = rank < k
    e, r, pl = order[keep], recv_s[keep], rank[keep]
    out[r, pl, 0:3] = rel[e]
    out[r, pl, 3:6] = heard.velocity[e] - velocity[recv[e]]
    out[r, pl, 6] = heard.age_s[e]
    out[r, pl, 7] = 1.0
    return out.reshape(n, k * WIDTH)
