"""The tasks of the multi-agent (PettingZoo) swarm environments: layouts, targets, proximity.

A swarm task is a group layout (each agent's origin), where each agent must go, and the
pairwise terms; the per-agent terms (starts around the origin, reward, crash tests) are its
`flight` task's (envs/tasks.py). Per control step, for agent i (docs/rl.md):

    r_i = r_flight,i - w_p * sum_{j alive, j != i} max(0, 1 - d_ij / d_safe)     (alive)
    r_i = -C                                                   (the step it crashes or collides)

d_ij the true distance m between agents i and j, d_safe `safe_distance_m`, w_p `w_proximity`,
C the flight task's `crash_penalty`. Two agents closer than `collision_radius_m` collide: both
die (terminated, and leave the env as PettingZoo specifies).

    task = Formation()               # hold a grid 2.5 m apart, from starts within 0.5 m
    origin = task.origins(6)         # (6, 3) m
    target = task.targets(origin)    # (6, 3) m
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from skyswarm.envs.tasks import Task


@dataclass(frozen=True)
class SwarmTask:
    """A group task (see the module docstring). `layout`: "grid" (`spacing_m` apart, centred
    on the origin) or "circle" (radius `radius_m`); `swap`: each target is the point opposite
    the agent's own origin through the centre (they all cross the middle), else its origin."""

    name: str = "formation"
    flight: Task = field(default_factory=Task)
    layout: str = "grid"
    spacing_m: float = 2.5  # m, grid
    radius_m: float = 4.0  # m, circle
    swap: bool = False
    collision_radius_m: float = 0.4  # m, centre to centre (two 0.2 m frames touching)
    safe_distance_m: float = 1.5  # m, d_safe
    w_proximity: float = 0.5  # w_p
    arrival_m: float = 0.3  # m, an agent within this of its target is `at_target` (info)

    def __post_init__(self) -> None:
        if self.layout not in ("grid", "circle"):
            raise ValueError(f"swarm task layout {self.layout!r}: expected 'grid' or 'circle'")

    def origins(self, n: int) -> np.ndarray:
        """(n, 3) m, the agents' origins on the ground (z = 0) around (0, 0)."""
        if self.layout == "circle":
            angle = 2.0 * math.pi * np.arange(n) / n
            xy = self.radius_m * np.column_stack([np.cos(angle), np.sin(angle)])
        else:
            side = math.ceil(math.sqrt(n))
            xy = np.indices((side, side)).reshape(2, -1).T[:n] * self.spacing_m
            xy = xy - xy.mean(axis=0)
        return np.column_stack([xy, np.zeros(n)])

    def targets(self, origin: np.ndarray) -> np.ndarray:
        """(n, 3) m: the target of each agent of `origin` (n, 3), `flight.altitude_m` up."""
        xy = -origin[:, :2] if self.swap else origin[:, :2]
        return np.column_stack([xy, np.full(len(origin), self.flight.altitude_m)])

    def proximity(self, position: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(penalty (n,), collided (n,) bool) of the `live` (k,) agents of `position` (n, 3) m:
        the w_p sum of the module formula, and who is within `collision_radius_m` of another."""
        n = len(position)
        penalty, collided = np.zeros(n), np.zeros(n, dtype=bool)
        if len(live) < 2:
            return penalty, collided
        pos = position[live]
        pairs = cKDTree(pos).query_pairs(self.safe_distance_m, output_type="ndarray")
        if len(pairs):
            d = np.linalg.norm(pos[pairs[:, 0]] - pos[pairs[:, 1]], axis=1)
            term = self.w_proximity * np.maximum(0.0, 1.0 - d / self.safe_distance_m)
            for col in (0, 1):
                np.add.at(penalty, live[pairs[:, col]], term)
            hit = pairs[d < self.collision_radius_m]
            collided[live[hit.ravel()]] = True
        return penalty, collided


def Formation(**overrides: object) -> SwarmTask:  # noqa: N802 (a task factory reads as a class)
    """Hold a grid `spacing_m` = 2.5 m apart, 10 m up, each from a start within 0.5 m of its
    place (≤ 0.3 m/s, ≤ 5° tilt)."""
    flight = Task(name="formation", start_radius_m=0.5, start_speed_m_s=0.3, start_tilt_deg=5.0)
    return SwarmTask(**{"name": "formation", "flight": flight, **overrides})  # type: ignore[arg-type]


def Swap(**overrides: object) -> SwarmTask:  # noqa: N802
    """Agents on a circle of 4 m radius fly to the opposite point, all through the middle:
    they must avoid each other (proximity penalty; a collision kills both)."""
    flight = Task(
        name="swap",
        start_radius_m=0.2,
        start_speed_m_s=0.1,
        start_tilt_deg=2.0,
        max_error_m=10.0,  # R: the 8 m crossing plus a margin
    )
    base = {"name": "swap", "flight": flight, "layout": "circle", "swap": True}
    return SwarmTask(**{**base, **overrides})  # type: ignore[arg-type]


SWARM_TASKS = {"formation": Formation, "swap": Swap}
