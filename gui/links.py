"""Radio links drawn over the scene: a line from sender to receiver for each copy the dispatcher
decided in the last LINK_WINDOW_S (core/comms/links.py), coloured by channel; lost copies (on
air, out of range, receiver dead, queue full) in LINK_LOST.

    sim.dispatcher.watch_links(round(LINK_WINDOW_S / sim.world.tick_s))
    lines = link_lines(frame, sim.dispatcher.recent_links())  # Renderer.render(extra=lines)
"""

from __future__ import annotations

import numpy as np

from skyswarm.core.comms.fates import DELIVERED
from skyswarm.core.comms.links import RadioLinks
from skyswarm.gui.scene import Frame

LINK_WINDOW_S = 0.5  # s of simulated time: the copies drawn
CHANNEL_COLORS = (  # RGBA per channel index, in the dispatcher's channel order, cycled
    (0.20, 0.85, 0.95, 0.55),  # cyan
    (0.95, 0.80, 0.20, 0.55),  # amber
    (0.55, 0.95, 0.35, 0.55),  # green
    (0.80, 0.55, 0.95, 0.55),  # violet
)
LINK_LOST = (1.0, 0.15, 0.10, 0.95)  # a lost copy: red, nearly opaque, so losses stand out


def link_lines(frame: Frame, links: RadioLinks) -> list[np.ndarray]:
    """Line vertices (position + RGBA rows, two per link) between the positions in `frame` of
    each link's sender and receiver; links with an end not in `frame` are left out. Delivered
    copies first, the lost ones drawn over them.

    Built straight into float32 rows (positions cast once, gathered by agent row, colours from
    one table): ~4x less numpy than stacking float64 ends and casting them (4,000 links:
    docs/performance.md, Window)."""
    if len(links.sender) == 0 or len(frame.ids) == 0:
        return []
    s, s_ok = agent_rows(frame.ids, links.sender)
    r, r_ok = agent_rows(frame.ids, links.receiver)
    ok = s_ok & r_ok
    delivered = links.fate == DELIVERED
    positions = frame.positions.astype(np.float32)
    looks = np.asarray(CHANNEL_COLORS, dtype=np.float32)
    out = []
    for k, colors in (
        (np.flatnonzero(ok & delivered), lambda k: looks[links.channel[k] % len(looks)]),
        (np.flatnonzero(ok & ~delivered), lambda k: np.asarray([LINK_LOST], np.float32)),
    ):
        if len(k):
            v = np.empty((len(k), 2, 7), dtype=np.float32)
            v[:, 0, :3], v[:, 1, :3] = positions[s[k]], positions[r[k]]
            v[:, :, 3:] = colors(k)[:, None, :]
            out.append(v.reshape(-1, 7))
    return out


def agent_rows(ids: np.ndarray, agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, found): the row of each of `agent_ids` in `ids` (N,) (any row where not found)
    and whether it was. Ids numbered consecutively (a swarm's 1..N) are found by subtraction."""
    n = len(ids)
    first = int(ids[0])
    if ids[-1] - first == n - 1 and np.array_equal(ids, np.arange(first, first + n)):
        rows = np.asarray(agent_ids) - first
        found = (rows >= 0) & (rows < n)
        return np.where(found, rows, 0), found
    order = np.argsort(ids)
    k = np.minimum(np.searchsorted(ids[order], agent_ids), n - 1)
    return order[k], ids[order[k]] == agent_ids
