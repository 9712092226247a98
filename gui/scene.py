"""What the views draw: a `Frame` snapshot of the agents, and the static `Scenery`.

The GUI only reads the simulation: `LiveSource` copies poses out of `world.state` (views into the
kernel's arrays are never handed to the renderer), so drawing can never change a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.timeline import group_leaders, highlighted
from skyswarm.gui.overlays import Overlay, overlays_of

if TYPE_CHECKING:
    from skyswarm.core.config import AvoidanceConfig, WorldConfig
    from skyswarm.core.hooks import EstimateSource, ViewSource
    from skyswarm.core.simulator import Simulator


STATION_ROLES = frozenset({"base_station"})  # logical agents drawn at a fixed position


def highlighted_ids(mission: ViewSource | None) -> list[int]:
    """Ids holding the mission's `highlight_role` (drawn in the LEADER colour); [] when it names
    none or its `role_members` fails (a view must not stop a run)."""
    try:
        return highlighted(mission)
    except Exception:  # noqa: BLE001 - a mission bug must not take the viewer down
        return []


def group_map(mission: ViewSource | None) -> dict[int, int]:
    """{agent id: its group's leader id} of the mission (`ViewSource.group_leaders`); {} when it
    has no groups or the call fails (a view must not stop a run)."""
    try:
        return group_leaders(mission)
    except Exception:  # noqa: BLE001 - a mission bug must not take the viewer down
        return {}


def group_column(ids: np.ndarray, groups: dict[int, int]) -> np.ndarray | None:
    """(N,) int64: the leader id of each of `ids`' group, -1 for an agent in none; None when
    `groups` is empty."""
    if not groups:
        return None
    return np.array([groups.get(int(i), -1) for i in ids], dtype=np.int64)


@dataclass
class Frame:
    """The agents at one instant. N agents; arrays are copies, safe to keep."""

    time_s: float
    ids: np.ndarray  # (N,) int64 agent ids
    roles: list[str]  # role names; role_index indexes this list
    role_index: np.ndarray  # (N,) int
    positions: np.ndarray  # (N, 3) m, world ENU
    orientations: np.ndarray  # (N, 4) quaternion x, y, z, w
    alive: np.ndarray  # (N,) bool; dead agents keep the pose where they died
    overlays: list[Overlay] = field(default_factory=list)
    hud: list[str] = field(default_factory=list)  # the mission's HUD lines (Mission.hud())
    leader: np.ndarray | None = None  # (N,) bool: holders of Mission.highlight_role, or None
    estimates: np.ndarray | None = None  # (N, 3) m: each agent's estimated position (NaN: none)
    gps_fixes: np.ndarray | None = None  # (N, 3) m: truth + GPS error (NaN: no GPS)
    group: np.ndarray | None = None  # (N,) int64: its group's leader id (-1: none), or None
    highlight: str | None = None  # the name of the role `leader` marks (Mission.highlight_role)

    @property
    def leaders(self) -> np.ndarray:
        """(N,) bool: agents holding the mission's `highlight_role` (none when it names none)."""
        if self.leader is None:
            return np.zeros(len(self.ids), dtype=bool)
        return self.leader

    @property
    def mobile(self) -> np.ndarray:
        """(N,) bool: agents that fly or move (every role but the fixed STATION_ROLES)."""
        fixed = np.array([r in STATION_ROLES for r in self.roles], dtype=bool)
        return ~fixed[self.role_index] if len(self.roles) else np.zeros(len(self.ids), bool)

    def shown(self, dead: bool = True, leader: bool = True) -> Frame:
        """This frame as the layers show it: without the dead agents (`dead` False) and with
        no agent highlighted as the leader (`leader` False: its role colour); itself when
        both are shown."""
        if dead and leader:
            return self
        keep = np.ones(len(self.ids), dtype=bool) if dead else self.alive.astype(bool)

        def rows(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[keep]

        return replace(
            self, ids=self.ids[keep], role_index=self.role_index[keep],
            positions=self.positions[keep], orientations=self.orientations[keep],
            alive=self.alive[keep], leader=rows(self.leader) if leader else None,
            estimates=rows(self.estimates), gps_fixes=rows(self.gps_fixes),
            group=rows(self.group),
        )  # fmt: skip

    def index_of(self, agent_id: int | None) -> int | None:
        if agent_id is None:
            return None
        hit = np.flatnonzero(self.ids == agent_id)
        return int(hit[0]) if len(hit) else None

    def pose_of(self, agent_id: int | None) -> tuple[np.ndarray, np.ndarray] | None:
        i = self.index_of(agent_id)
        return None if i is None else (self.positions[i], self.orientations[i])


@dataclass(frozen=True)
class Scenery:
    """Static world: ground, obstacle boxes (centre, size, yaw rad), OBJ meshes, and the
    scenario's avoidance distances the proximity layer is coloured by (gui/proximity.py)."""

    ground: bool = True
    boxes: tuple[tuple[tuple[float, ...], tuple[float, ...], float], ...] = ()
    meshes: tuple[tuple[Path, tuple[float, ...], float], ...] = ()  # path, origin m, scale
    proximity_m: tuple[float, float] = (1.2, 2.5)  # [avoidance] radius_m, separation_m

    @classmethod
    def from_config(
        cls, world: WorldConfig, base_dir: Path, avoidance: AvoidanceConfig | None = None
    ) -> Scenery:
        boxes = tuple(
            (tuple(o.center), tuple(o.size), float(np.radians(o.yaw_deg)))
            for o in world.obstacles
            if o.type == "box"
        )
        meshes = [
            (base_dir / o.mesh, tuple(o.center), float(o.scale))
            for o in world.obstacles
            if o.type == "mesh"
        ]
        if world.terrain:
            meshes.insert(0, (base_dir / world.terrain, (0.0, 0.0, 0.0), 1.0))
        near = (
            (float(avoidance.radius_m), float(avoidance.separation_m))
            if avoidance is not None
            else cls.proximity_m
        )
        return cls(world.ground, boxes, tuple(meshes), near)


class LiveSource:
    """Frames of a running Simulator: every agent with a pose, its role, alive or dead; then the
    logical agents with a fixed `position` (base stations), drawn upright where they stand."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        scenario = sim.scenario
        self.scenery = (
            Scenery.from_config(scenario.world, scenario.base_dir, scenario.avoidance)
            if scenario
            else Scenery()
        )
        self._key: tuple[int, int] = (-1, -1)
        self._agents: list[Any] = []
        self._slots = np.zeros(0, dtype=np.intp)
        self._roles: list[str] = []
        self._role_index = np.zeros(0, dtype=np.intp)
        self._ids = np.zeros(0, dtype=np.int64)
        self._fixed: list[Any] = []
        self._fixed_pos = np.zeros((0, 3))
        self._sensed: list[tuple[EstimateSource, np.ndarray, np.ndarray]] = []  # source, rows, idx

    def _refresh(self) -> None:
        key = (len(self.sim.agents), len(self.sim.deaths))
        if key == self._key:
            return
        self._key = key
        bodies = [a for a in self.sim.agents.values() if hasattr(a, "slot")]
        self._fixed = [
            a for a in self.sim.agents.values() if not hasattr(a, "slot") and hasattr(a, "position")
        ]
        self._fixed_pos = np.array([a.position for a in self._fixed], float).reshape(-1, 3)
        self._agents = bodies + self._fixed
        self._slots = np.array([a.slot for a in bodies], dtype=np.intp)
        self._roles = sorted({a.role for a in self._agents})
        lookup = {r: i for i, r in enumerate(self._roles)}
        self._role_index = np.array([lookup[a.role] for a in self._agents], dtype=np.intp)
        self._ids = np.array([a.id for a in self._agents], dtype=np.int64)
        groups: dict[int, tuple[EstimateSource, list[int], list[int]]] = {}
        for row, a in enumerate(bodies):
            source = a.estimate_row()
            if source is not None:
                g = groups.setdefault(id(source[0]), (source[0], [], []))
                g[1].append(row)
                g[2].append(int(source[1]))
        self._sensed = [
            (sw, np.array(r, np.intp), np.array(i, np.intp)) for sw, r, i in groups.values()
        ]

    def _estimates(self, truth: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(N, 3) estimated positions and GPS fixes (truth + GPS error) of the agents whose
        group has an estimate (`core.hooks.EstimateSource`, e.g. a UAV swarm with sensors on),
        NaN elsewhere; (None, None) when no group has one."""
        est = gps = None
        for source, rows, idx in self._sensed:
            position = source.estimated_positions()
            if position is None:
                continue
            if est is None:
                est, gps = np.full_like(truth, np.nan), np.full_like(truth, np.nan)
            est[rows] = np.asarray(position)[idx]
            error = source.gps_errors()
            if error is not None:
                gps[rows] = truth[rows] + np.asarray(error)[idx]
        return est, gps

    @property
    def agents(self) -> list[Any]:
        """The drawn agents, in frame order: physical agents, then base stations."""
        self._refresh()
        return self._agents

    def frame(self) -> Frame:
        self._refresh()
        st = self.sim.world.state
        alive = np.array([a.alive for a in self._agents], dtype=bool)
        mission = self.sim.mission
        overlays = overlays_of(mission) if mission is not None else []
        hud = [str(line) for line in (mission.hud() if mission is not None else ()) or ()]
        leaders = highlighted_ids(mission)
        groups = group_map(mission)
        positions = np.vstack([st.position[self._slots], self._fixed_pos])
        estimates, gps = self._estimates(positions)
        return Frame(
            time_s=self.sim.time_s,
            ids=self._ids.copy(),
            roles=list(self._roles),
            role_index=self._role_index.copy(),
            positions=positions,
            orientations=np.vstack([st.orientation[self._slots], upright(len(self._fixed))]),
            alive=alive,
            overlays=overlays,
            hud=hud,
            leader=np.isin(self._ids, leaders) if leaders else None,
            estimates=estimates,
            gps_fixes=gps,
            group=group_column(self._ids, groups),
            highlight=mission.highlight_role if mission is not None else None,
        )


def upright(n: int) -> np.ndarray:
    """(n, 4) identity quaternions (x, y, z, w)."""
    return np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))


def pick(frame: Frame, origin: np.ndarray, direction: np.ndarray, radii: np.ndarray) -> int | None:
    """Id of the nearest agent whose bounding sphere the ray hits, or None.

    `radii` is (N,) m per agent; `direction` a unit vector. Dead agents cannot be picked.
    """
    rel = frame.positions - origin  # (N, 3)
    t = rel @ direction  # distance along the ray to the closest approach
    miss2 = np.einsum("ij,ij->i", rel, rel) - t * t
    hit = (t > 0) & (miss2 <= radii**2) & frame.alive & np.all(np.isfinite(rel), axis=1)
    if not hit.any():
        return None
    idx = np.flatnonzero(hit)
    return int(frame.ids[idx[np.argmin(t[idx])]])
