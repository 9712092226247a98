"""Colours and on-screen sizes shared by the renderer's passes, the panel and the legend.

Role colours are chosen to stay apart from each other and from the greenish-grey ground under
fog: orange followers, cyan leader, blue bodies, green bases, purple base-station masts.
"""

from __future__ import annotations

SKY = (0.62, 0.74, 0.86)
GROUND = (0.40, 0.45, 0.38)
GRID_MINOR = (0.52, 0.57, 0.50, 1.0)
GRID_MAJOR = (0.80, 0.82, 0.76, 1.0)
OBSTACLE = (0.55, 0.52, 0.48, 1.0)
SELECTED = (1.0, 0.9, 0.1, 1.0)
DEAD = (0.25, 0.25, 0.25, 1.0)
DEAD_CROSS = (0.85, 0.1, 0.1, 1.0)
DEAD_CROSS_M = 1.5  # m, half-size of the red X on the ground where an agent died
TRAIL = (0.95, 0.30, 0.75, 0.85)  # trails: magenta, unlike the grey grid and the role colours
ROLE_COLORS = {
    "uav": (0.95, 0.42, 0.08),
    "body": (0.15, 0.40, 0.95),
    "base": (0.10, 0.75, 0.25),
    "base_station": (0.62, 0.18, 0.86),  # mast drawn from assets/base_station.obj
}
LOD_PX = 10.0  # px: agents with a smaller projected radius are drawn as their bounding box
MARKER_PX = 4.0  # px: agents with a smaller projected radius also get a square role-colour dot
MARKER_SIZE_PX = 5.0  # px, edge of that dot: every alive agent covers >= 25 px of its colour
# Markers on (the default): an agent whose mesh would be smaller on screen than MARKER_UNTIL_PX
# (projected bounding radius) is drawn as a round marker of MARKER_DIAM_PX instead: a disc of
# 11 px covers ~95 px, so a drone at any zoom covers >= 60 px (issue 30), and the mesh takes
# over where it covers more than the marker would (measured: tests/gui/test_swarm_view.py).
MARKER_DIAM_PX = 11.0
MARKER_UNTIL_PX = 14.0
SHADOW_ALPHA = 0.45  # darkening of the ground right under an agent on the ground
SHADOW_FADE_M = 40.0  # m of height over which a shadow fades to a third of SHADOW_ALPHA
FOG_M = 600.0  # m: the ground fades into the horizon colour over this distance
GROUND_HALF_M = 20000.0  # m: the ground plane is this big, enough to look infinite
GROUND_OVERLAY_M = 0.1  # m: overlays no higher (coverage cells, area outlines) lie on the ground
HORIZON = (0.80, 0.86, 0.92)  # sky colour at the horizon (SKY at the top of the view)
LEADER = (0.0, 0.78, 0.92)  # cyan: the mission's "leader" (Mission.role_members), any role
GHOST = (1.0, 1.0, 1.0, 0.45)  # the selected agent's estimated pose (sensors on): white, faint
GPS_FIX = (1.0, 0.25, 0.55, 1.0)  # its GPS fix (truth + GPS error): a small pink cross
# Group lines (gui/groups.py): member -> its group's leader, one opaque colour per group (by the
# leader's rank in the frame), apart from the role colours, the trails and the radio links.
GROUP_COLORS = (
    (1.00, 1.00, 1.00, 1.0),  # white
    (0.10, 0.20, 0.80, 1.0),  # deep blue
    (0.65, 1.00, 0.15, 1.0),  # lime
    (0.55, 0.30, 0.10, 1.0),  # brown
    (1.00, 0.55, 0.80, 1.0),  # pink
    (0.00, 0.45, 0.40, 1.0),  # teal
)
PALETTE = [(0.8, 0.2, 0.8), (0.55, 0.85, 0.2), (0.6, 0.4, 0.2), (0.9, 0.2, 0.3)]


def role_color(role: str, index: int = 0) -> tuple[float, float, float]:
    """RGB (0..1) of a role: its own colour if it has one, else the `index`-th of PALETTE."""
    return ROLE_COLORS.get(role, PALETTE[index % len(PALETTE)])
