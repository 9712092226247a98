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
from skyswarm.gui.drones import colored
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
    copies first, the lost ones drawn over them."""
    if len(links.sender) == 0 or len(frame.ids) == 0:
        return []
    order = np.argsort(frame.ids)
    ids = frame.ids[order]

    def rows(agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.minimum(np.searchsorted(ids, agent_ids), len(ids) - 1)
        return order[k], ids[k] == agent_ids

    s, s_ok = rows(links.sender)
    r, r_ok = rows(links.receiver)
    ok = s_ok & r_ok
    ends = np.stack([frame.positions[s[ok]], frame.positions[r[ok]]], axis=1)  # (K, 2, 3)
    delivered = links.fate[ok] == DELIVERED
    out = []
    if delivered.any():
        v = colored(ends[delivered].reshape(-1, 3), CHANNEL_COLORS[0])
        palette = np.asarray(CHANNEL_COLORS, dtype=np.float32)
        v[:, 3:] = np.repeat(palette[links.channel[ok][delivered] % len(palette)], 2, axis=0)
        out.append(v)
    if (~delivered).any():
        out.append(colored(ends[~delivered].reshape(-1, 3), LINK_LOST))
    return out
