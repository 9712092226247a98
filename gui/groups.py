"""The group layer: a line from each member of a group to its group's leader, one colour per
group, so a flock split into parts shows its parts (`Mission.group_leaders`, declared by
`core.hooks.ViewSource`: {agent id: its group's leader id}, carried by `Frame.group`).

The lines come from the frame alone, so a replay draws what the live view drew at each timeline
sample (core/timeline.py records `groups` beside `leaders`).

    lines = group_lines(frame)  # Renderer.render(extra=lines)
"""

from __future__ import annotations

import numpy as np

from skyswarm.gui.palette import GROUP_COLORS
from skyswarm.gui.scene import Frame


def group_color(rank: int) -> tuple[float, float, float, float]:
    """RGBA of the group whose leader has `rank` among the frame's leaders (ascending ids)."""
    return GROUP_COLORS[rank % len(GROUP_COLORS)]


def group_lines(frame: Frame) -> list[np.ndarray]:
    """Line vertices (position + RGBA rows, two per line) from each alive member of a group to
    its leader, in the group's colour (`group_color` of the leader's rank among the frame's
    group leaders); a member whose leader is not in the frame, dead, or not at a finite
    position gets no line. [] without groups."""
    if frame.group is None or not len(frame.ids):
        return []
    group = frame.group
    order = np.argsort(frame.ids)
    ids = frame.ids[order]
    k = order[np.minimum(np.searchsorted(ids, group), len(ids) - 1)]  # the leader's row
    finite = np.all(np.isfinite(frame.positions), axis=1)
    ok = (group >= 0) & (frame.ids[k] == group) & (frame.ids != group) & frame.alive
    ok &= frame.alive[k] & finite & finite[k]
    if not ok.any():
        return []
    leaders = np.unique(group[group >= 0])
    rank = np.searchsorted(leaders, group[ok])
    palette = np.asarray(GROUP_COLORS, dtype=np.float32)
    out = np.empty((int(ok.sum()), 2, 7), dtype=np.float32)
    out[:, 0, :3] = frame.positions[ok]
    out[:, 1, :3] = frame.positions[k[ok]]
    out[:, :, 3:] = palette[rank % len(palette)][:, None, :]
    return [out.reshape(-1, 7)]
