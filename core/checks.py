"""Checks of a whole scenario that span sections, run by `validate_scenario` before anything is
built or written: the physics backend can model the scenery, the run fits in memory, and the
start geometry is possible (agents above ground, apart, outside obstacles; meshes that parse).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyswarm.core.resources import is_file
from skyswarm.core.schema import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from skyswarm.core.backends import Capabilities
    from skyswarm.core.config import AgentsConfig, ScenarioConfig


def check_physics(scenario: ScenarioConfig) -> None:
    """The backend can model the scenery: what its class declares (`World.capabilities`, read
    here, never decided by its name). Asking a backend for scenery it lacks (the fast backend:
    mesh obstacles, a second terrain) is an error naming the key, never a silent approximation.
    """
    from skyswarm.core.backends import backend_class

    name, world, file = scenario.simulation.physics, scenario.world, scenario.file
    try:
        caps = backend_class(name).capabilities
    except ValueError as exc:  # an installed backend that fails to load: one line
        raise ConfigError(file, "simulation.physics", name, f"a loadable backend ({exc})") from None
    using = f"with simulation.physics = '{name}'"
    given = (("terrain", world.terrain), ("heightfield", world.heightfield))
    terrains = [(key, value) for key, value in given if value]
    if caps.max_terrains is not None and len(terrains) > caps.max_terrains:
        k = caps.max_terrains
        what = "no second terrain" if k == 1 else f"at most {k} terrains"
        why = f"{what} {using}" + (f" (world.{terrains[0][0]} is set)" if k else "")
        raise ConfigError(file, f"world.{terrains[k][0]}", terrains[k][1], why)
    if world.terrain and not caps.terrain_meshes:
        why = f"no terrain mesh {using} ({caps.scenery()}{_use(lambda c: c.terrain_meshes)})"
        raise ConfigError(file, "world.terrain", world.terrain, why)
    if world.heightfield and not caps.heightfields:
        why = f"no height grid {using} ({caps.scenery()}{_use(lambda c: c.heightfields)})"
        raise ConfigError(file, "world.heightfield", world.heightfield, why)
    for i, ob in enumerate(world.obstacles):
        if ob.type == "mesh" and not caps.mesh_obstacles:
            use = _use(lambda c: c.mesh_obstacles)
            why = f"no mesh obstacle {using} ({caps.scenery()}{use})"
        elif ob.type == "box" and not caps.boxes:
            why = f"no box obstacle {using} ({caps.scenery()}{_use(lambda c: c.boxes)})"
        else:
            continue
        raise ConfigError(file, f"world.obstacles[{i}].type", ob.type, why)


def _use(has: Callable[[Capabilities], bool]) -> str:
    """'; use 'bullet'': the shipped backends that declare what `has` asks (error path only:
    it imports them)."""
    from skyswarm.core.backends import SHIPPED_BACKENDS, backend_class

    names = [n for n in SHIPPED_BACKENDS if has(backend_class(n).capabilities)]
    return "; use " + " or ".join(f"'{n}'" for n in names) if names else ""


# -- whole-scenario checks: geometry, referenced files, memory ---------------------------------
MIN_AGENT_SPACING_M = 0.5  # two airframes' centres closer than this overlap at start
AGENT_BYTES = 256 * 2**10  # measured ~190 kB per UAV agent (boids, 1000-3000 agents) + margin
BASE_BYTES = 256 * 2**20  # interpreter, pybullet, numba kernels


def agent_count(agents: AgentsConfig) -> int:
    return len(agents.list) if agents.list else agents.count


def estimated_bytes(scenario: ScenarioConfig) -> int:
    """Memory the run will need: the swarm plus what the mission declares (grids ...)."""
    grids = int(scenario.mission_class.memory_bytes(scenario))  # Mission's default: 0
    return BASE_BYTES + AGENT_BYTES * agent_count(scenario.agents) + grids


def check_memory(scenario: ScenarioConfig) -> None:
    """Past `simulation.memory_limit_mb` the scenario is refused before anything is built."""
    need_mb = estimated_bytes(scenario) / 2**20
    limit = scenario.simulation.memory_limit_mb
    if need_mb > limit:
        n = agent_count(scenario.agents)
        raise ConfigError(
            scenario.file,
            "simulation.memory_limit_mb",
            limit,
            f">= the estimated {need_mb:.0f} MB of this scenario ({n} agents at "
            f"{AGENT_BYTES / 2**20:.2f} MB, plus grids): raise the limit or shrink the scenario",
        )


BRUTE_FORCE_AGENTS = 512  # up to this many agents the spacing check compares every pair


def too_close(pos: np.ndarray, min_m: float) -> tuple[int, int] | None:
    """The first pair (i < j, by i then j) of the (n, 3) positions closer than `min_m` (a
    pair exactly `min_m` apart is allowed), or None. Every pair up to BRUTE_FORCE_AGENTS
    agents (no scipy import: validation runs before every run); a KD-tree's candidates within
    `min_m`, then the same strict test, above."""
    import numpy as np

    n = len(pos)
    if n < 2:
        return None
    if n <= BRUTE_FORCE_AGENTS:
        i, j = np.triu_indices(n, 1)
    else:
        from scipy.spatial import cKDTree

        pairs = cKDTree(pos).query_pairs(min_m, output_type="ndarray")
        if not len(pairs):
            return None
        i, j = np.sort(pairs, axis=1).T
    d = np.sqrt(((pos[j] - pos[i]) ** 2).sum(axis=1))
    hit = np.flatnonzero(d < min_m)
    if not len(hit):
        return None
    first = hit[np.lexsort((j[hit], i[hit]))[0]]
    return int(i[first]), int(j[first])


def check_geometry(scenario: ScenarioConfig) -> None:
    """Agents start above the ground, apart from each other and outside box obstacles; every
    referenced mesh file opens and parses."""
    import numpy as np

    file, world = scenario.file, scenario.world
    base = scenario.base_dir
    if world.terrain:
        check_mesh(base / world.terrain, file, "world.terrain", world.terrain)
    if world.heightfield:
        _check_height_grid(scenario)
    for i, ob in enumerate(world.obstacles):
        if ob.type == "mesh":
            if not ob.mesh:
                raise ConfigError(file, f"world.obstacles[{i}].mesh", ob.mesh, "an OBJ file")
            check_mesh(base / ob.mesh, file, f"world.obstacles[{i}].mesh", ob.mesh)
    ids, pos = _layout(scenario.agents)
    taken = set(ids.tolist())
    for i, bs in enumerate(scenario.comms.base_stations):  # else Simulator set-up rejects it
        if bs.id in taken:
            raise ConfigError(file, f"comms.base_stations[{i}].id", bs.id, "an id no agent uses")
    if not len(ids):
        return
    key = "agents.list" if scenario.agents.list else "agents"
    if not np.isfinite(pos).all() or np.abs(pos).max() > 1e6:
        raise ConfigError(file, key, "(positions)", "agent positions within 1e6 m of the origin")
    if world.ground:
        low = int(np.argmin(pos[:, 2]))
        if pos[low, 2] < 0.0:
            raise ConfigError(
                file, _agent_key(scenario, low), tuple(pos[low]), "an agent above the ground z >= 0"
            )
    close = too_close(pos, MIN_AGENT_SPACING_M)
    if close is not None:
        i, j = close
        raise ConfigError(
            file,
            _agent_key(scenario, j),
            tuple(float(v) for v in pos[j]),
            f"an agent at least {MIN_AGENT_SPACING_M} m from agent {int(ids[i])} "
            f"at {tuple(float(v) for v in pos[i])}",
        )
    for k, ob in enumerate(world.obstacles):
        if ob.type != "box":
            continue
        yaw = np.radians(ob.yaw_deg)
        rel = pos - np.asarray(ob.center)
        c, s_ = np.cos(yaw), np.sin(yaw)
        local = np.c_[c * rel[:, 0] + s_ * rel[:, 1], -s_ * rel[:, 0] + c * rel[:, 1], rel[:, 2]]
        inside = (np.abs(local) < np.asarray(ob.size) / 2).all(axis=1)
        if inside.any():
            a = int(np.argmax(inside))
            raise ConfigError(
                file,
                _agent_key(scenario, a),
                tuple(float(v) for v in pos[a]),
                f"an agent outside the box of world.obstacles[{k}]",
            )


def _layout(agents: AgentsConfig) -> tuple[Any, Any]:
    """(ids (N,), positions (N, 3)) of `agents.resolved()`, vectorised for large swarms."""
    import numpy as np

    if agents.list:
        specs = agents.resolved()
        ids = np.array([s.id for s in specs], dtype=np.int64)
        return ids, np.array([s.position for s in specs], dtype=float).reshape(-1, 3)
    n = agents.count
    i = np.arange(n)
    side = max(1, int(round(n**0.5 + 0.4999)))
    s = agents.spacing_m
    if agents.layout == "diagonal":
        x, y = i * s, i * s
    elif agents.layout == "line":
        x, y = i * s, np.zeros(n)
    else:
        x, y = (i % side) * s, (i // side) * s
    pos = np.c_[x, y, np.zeros(n)] + np.asarray(agents.origin, dtype=float)
    return agents.first_id + i, pos


def _agent_key(scenario: ScenarioConfig, index: int) -> str:
    if scenario.agents.list:
        return f"agents.list[{index}].position"
    return f"agents (generated agent {scenario.agents.first_id + index})"


def check_mesh(path: Path, file: str, key: str, value: str) -> None:
    """The mesh opens and parses as a non-empty triangle mesh; the error never quotes its text."""
    if not is_file(path):
        raise ConfigError(file, key, value, f"an existing OBJ file ({path})")
    try:
        from skyswarm.core.backends.meshes import load_mesh

        vertices, faces = load_mesh(path)
    except Exception as exc:  # trimesh raises many kinds; name the kind, not the file's text
        raise ConfigError(file, key, value, f"a readable OBJ mesh ({type(exc).__name__})") from None
    import numpy as np

    if len(faces) == 0 or not np.isfinite(vertices).all():
        raise ConfigError(file, key, value, "an OBJ mesh with finite vertices and >= 1 face")


def _check_height_grid(scenario: ScenarioConfig) -> None:
    """world.heightfield opens and parses as a grid of at least 2 x 2 heights (NaN: a hole)."""
    world = scenario.world
    path = scenario.base_dir / world.heightfield
    if not is_file(path):
        raise ConfigError(
            scenario.file, "world.heightfield", world.heightfield, f"an existing file ({path})"
        )
    from skyswarm.core.backends.terrain import load_height_grid

    try:
        load_height_grid(path, world.heightfield_cell_m, world.heightfield_origin)
    except Exception as exc:  # numpy's parse errors quote the text: name the kind only
        why = str(exc) if isinstance(exc, ValueError) and "height grid" in str(exc) else ""
        raise ConfigError(
            scenario.file,
            "world.heightfield",
            world.heightfield,
            f"a CSV or .npy grid of heights, m ({why or type(exc).__name__})",
        ) from None
