"""The floor plan, checked by reading every module's imports with `ast`.

Layers (docs/architecture.md): app -> (gui, missions, uav, core), gui -> (uav, core),
missions -> (uav, core), uav -> core, core -> nothing of skyswarm above it. Imports are the
`import`/`from` statements anywhere in a module (including function bodies and TYPE_CHECKING
blocks) and the string arguments of `importlib.import_module`. Plug-in discovery by entry point
is the one sanctioned way for a lower layer to reach a higher one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("core", "uav", "missions", "gui", "envs", "mavlink", "app")
ALLOWED = {
    "core": {"core"},
    "uav": {"core", "uav"},
    "missions": {"core", "uav", "missions"},
    "gui": {"core", "uav", "gui"},
    "mavlink": {"core", "uav", "mavlink"},
    "app": {"core", "uav", "missions", "gui", "envs", "mavlink", "app"},
    # RL environments; gui only for rendering, imported lazily (tests/envs checks that
    # `import skyswarm.envs` loads no gui module)
    "envs": {"core", "uav", "missions", "gui", "envs"},
    # skyswarm.extend (extend.py beside the facade): the public extension API re-exports core
    # and uav names only; missions, gui and app are users of it, never parts of it, and no
    # module inside the package imports it (no layer lists "extend").
    "extend": {"core", "uav"},
}
# Computed import_module names: the facade (its names are checked below), the mission loader,
# which imports the plug-in module a scenario names (`package.module:Class`), and the backend
# registry, which imports a backend's module when its name is first asked for (its shipped
# `module:Class` strings are checked below like imports: core/backends modules only).
COMPUTED_ALLOWED = {"skyswarm", "skyswarm.core.mission", "skyswarm.core.backends"}
# Cycles between modules of different files that docs/architecture.md justifies ("Import
# cycles"): none. (The backend factory once imported bullet and fast from the package that
# defines their base class; the registry names them by string and loads them on demand.)
JUSTIFIED_CYCLES: set[frozenset[str]] = set()


def modules() -> dict[str, Path]:
    """Every module of the package, subpackages included (core/backends, missions/wildfire…)."""
    found = {"skyswarm": ROOT / "__init__.py", "skyswarm.extend": ROOT / "extend.py"}
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found["skyswarm." + ".".join(parts)] = path
    return found


def _walk(tree: ast.AST, typing_too: bool) -> Iterator[ast.AST]:
    """ast.walk, leaving out `if TYPE_CHECKING:` bodies unless `typing_too`."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if (
            not typing_too
            and isinstance(node, ast.If)
            and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
        ):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def imports_of(path: Path, name: str, typing_too: bool = True) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import statement and import_module("...") call;
    imports only for type checking (`if TYPE_CHECKING:`) count unless `typing_too` is False."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    for node in _walk(tree, typing_too):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            yield node.lineno, base
            for alias in node.names:  # `from skyswarm.core import faults` imports a module
                yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Call):
            func = node.func
            called = getattr(func, "attr", None) or getattr(func, "id", None)
            if called == "import_module" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield node.lineno, arg.value
                else:  # a computed name cannot be checked: not allowed in the package
                    yield node.lineno, "<computed>"


def internal_edges() -> dict[str, set[str]]:
    """Module -> the package modules it imports when it runs (annotations-only imports under
    TYPE_CHECKING are not edges: they never execute, and the layer test still checks them)."""
    mods = modules()
    edges: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        for _, target in imports_of(path, name, typing_too=False):
            if target in mods and target != name:
                edges[name].add(target)
        # Python initialises a module's parent packages before the module itself, so
        # `from skyswarm.missions.flight_plan import geometry` inside flight_plan/ adds nothing
        # to that order: an edge to an ancestor package counts only when a name defined in its
        # __init__.py is imported (core/backends/bullet.py takes World from the package).
        for target in [t for t in edges[name] if name.startswith(t + ".")]:
            if not _takes_names_from(path, name, target, mods):
                edges[name].discard(target)
    return edges


def _takes_names_from(path: Path, name: str, package: str, mods: dict[str, Path]) -> bool:
    """Whether `name` imports something other than submodules from `package` (runtime only)."""
    for node in _walk(ast.parse(path.read_text(encoding="utf-8")), typing_too=False):
        if isinstance(node, ast.Import) and any(a.name == package for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                own = name if path.stem == "__init__" else name.rpartition(".")[0]
                parts = own.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base == package and any(f"{base}.{a.name}" not in mods for a in node.names):
                return True
    return False


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "facade"


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_imports_respect_the_layers(name: str) -> None:
    path = modules()[name]
    own = layer(name)
    bad = []
    for line, target in imports_of(path, name):
        top = target.split(".")[0]
        if (
            top in LAYERS or top == "extend"
        ):  # the old top-level names: only skyswarm.* is installed
            bad.append(f"{path.name}:{line} imports {target!r} (not under skyswarm.)")
        elif target == "<computed>" and name not in COMPUTED_ALLOWED:
            bad.append(f"{path.name}:{line} imports a computed module name")
        elif top == "skyswarm" and own != "facade":
            if target == "skyswarm":
                bad.append(f"{path.name}:{line} imports the facade")
                continue
            target_layer = target.split(".")[1]
            if target_layer not in ALLOWED[own]:
                bad.append(f"{path.name}:{line} ({own}) imports {target} ({target_layer})")
    assert not bad, "\n".join(bad)


def test_shipped_backends_are_core_modules_that_import_no_higher_floor() -> None:
    # The registry's strings are imports the ast walk cannot see: each names a class of a
    # module under core/backends, which the layer test above then checks like any other.
    from skyswarm.core.backends import SHIPPED_BACKENDS

    mods = modules()
    for target in SHIPPED_BACKENDS.values():
        module, _, attr = target.partition(":")
        assert module.startswith("skyswarm.core.backends.") and module in mods, target
        assert attr.isidentifier() and f"class {attr}(" in mods[module].read_text(), target


def test_every_facade_name_exists_and_needs_no_gui() -> None:
    import subprocess
    import sys

    code = (
        "import sys, skyswarm\n"
        "missing = [n for n in skyswarm.__all__ if getattr(skyswarm, n, None) is None]\n"
        "gui = sorted(m for m in sys.modules if m.split('.')[0] in ('pyglet', 'moderngl'))\n"
        "print(missing, gui)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] []"


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_no_import_cycles_between_modules() -> None:
    cycles = [
        c for c in strongly_connected(internal_edges()) if frozenset(c) not in JUSTIFIED_CYCLES
    ]
    assert not cycles, "import cycles:\n" + "\n".join(", ".join(sorted(c)) for c in cycles)


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    # The rules can fail: an upward import, a string import_module and a cycle are all caught.
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import importlib\nfrom skyswarm.gui import app\n"
        "importlib.import_module('skyswarm.app.cli')\n"
    )
    found = [t for _, t in imports_of(bad, "skyswarm.core.bad")]
    assert "skyswarm.gui" in found and "skyswarm.app.cli" in found
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


# `getattr(obj, "name", ...)` / `hasattr(obj, "name")` in core on anything but `self`: hook
# discovery by name, which the import rules cannot see (docs/architecture.md, Contracts between
# floors). Dunder names (type names, qualnames) are not hooks. Allowed, with the reason:
NAME_READS_ALLOWED = {
    ("core/mission.py", "MISSION"): "a plug-in module's optional export, by the documented spec",
    ("core/config.py", "lineno"): "an optional field of the TOML parser's exception",
    ("core/backends/__init__.py", "_is_initialized"): "numba's threading layer, a library's "
    "private state (no public way to skip its launch locks); the public call when absent",
    ("core/backends/__init__.py", "_get_num_threads"): "(the same: its compiled getter)",
    ("core/files.py", "O_NOFOLLOW"): "an open flag of the os module, which Windows lacks",
}


def name_reads(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of every getattr/hasattr with a literal, non-dunder name on a non-self."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
        ):
            continue
        obj, name = node.args[0], node.args[1]
        if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
            continue
        if name.value.startswith("__") or (isinstance(obj, ast.Name) and obj.id == "self"):
            continue
        yield node.lineno, name.value


def test_core_discovers_no_hook_by_name() -> None:
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        found += [f"{rel}:{n} {name!r}" for n, name in name_reads(path)]
    allowed = {f"{f}:{n}" for f, n in NAME_READS_ALLOWED}
    bad = [f for f in found if f.split(":")[0] + ":" + f.split("'")[1] not in allowed]
    assert not bad, "hooks read by name in core (declare a Protocol or a base method):\n" + (
        "\n".join(bad)
    )
    used = {f.split(":")[0] + ":" + f.split("'")[1] for f in found}
    assert allowed <= used, f"stale allow-list entries: {sorted(allowed - used)}"


def test_the_name_read_check_sees_getattr_discovery(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def f(swarm, self):\n"
        "    s = getattr(swarm, 'sensors', None)\n"
        "    ok = hasattr(s, 'position') and getattr(self, '_cache', None)\n"
        "    return getattr(type(s), '__name__', '')\n"
    )
    assert sorted(name_reads(bad)) == [(2, "sensors"), (3, "position")]


# `getattr(obj, <expression>)` in core on anything but `self`: a computed name is invisible to
# the literal check above (core/timeline.py once read overlay items as `getattr(item, key)`).
# Allowed, by (file, object expression, name expression), with the reason:
COMPUTED_READS_ALLOWED = {
    ("core/backends/__init__.py", "importlib.import_module(module_name)", "attr"): "the "
    "backend loader takes the class a `module:Class` registry entry names",
    ("core/mission.py", "module", "attr"): "the mission loader takes the class a scenario's "
    "`package.module:Class` names",
    ("core/mission.py", "type(self)", "hook"): "whether a Mission subclass overrides a base "
    "method (its own class against the base)",
    ("core/mission.py", "Mission", "hook"): "the base method that override check compares with",
    ("core/schema.py", "obj", "f.name"): "the fields of a config dataclass, by `fields()`",
    ("core/config.py", "scenario", "name"): "ScenarioConfig's own tick-period fields",
    ("core/comms/fates.py", "p", "f"): "the fields of its own Copies, by its annotations",
    ("core/jit.py", "value", "n"): "a kernel's callees through a module (frames.to_body), by "
    "the names in its bytecode: warmup's groups of kernels sharing compiled code",
    ("core/kernel_loads.py", "numba_caching.Cache", "name"): "whether numba's cache still has "
    "the private methods the refresh-free load replaces (else numba is left alone)",
}


def computed_reads(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, object, name) source of every getattr/hasattr whose name is not a literal, on an
    object other than `self`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and not isinstance(node.args[1], ast.Constant)
            and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self")
        ):
            yield node.lineno, ast.unparse(node.args[0]), ast.unparse(node.args[1])


def test_core_reads_no_computed_attribute_name_but_the_named_ones(tmp_path: Path) -> None:
    found = {}
    for path in sorted((ROOT / "core").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for line, obj, name in computed_reads(path):
            found.setdefault((rel, obj, name), f"{rel}:{line} getattr({obj}, {name})")
    bad = [where for key, where in found.items() if key not in COMPUTED_READS_ALLOWED]
    assert not bad, "attributes read by a computed name in core:\n" + "\n".join(bad)
    stale = set(COMPUTED_READS_ALLOWED) - set(found)
    assert not stale, f"stale allow-list entries: {sorted(stale)}"
    # the check can fail: the timeline's old overlay read is seen, a read of self is not
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(self, item, key):\n    return getattr(item, key, None) or getattr(self, key)\n"
    )
    assert list(computed_reads(probe)) == [(2, "item", "key")]


# A private (`_`-prefixed) module or name is imported only from within its own package
# (missions/wildfire once took flocking's private `_coverage`; what two packages share is a
# public module, missions/coverage.py). Allowed across packages, with the reason:
PRIVATE_IMPORTS_ALLOWED = {
    ("skyswarm.app.warmup", "skyswarm.missions._boids_steering"): "warmup imports every module "
    "of compiled code to compile its kernels (tests/core/test_compile_ahead.py: the list is whole)",
    ("skyswarm.core.backends.bullet", "skyswarm.core._quiet"): "core's own helper that silences "
    "pybullet's start-up banner; no other floor has a use for it",
    ("skyswarm.core.backends.bullet", "skyswarm.core._quiet.import_pybullet"): "(the same)",
}


def private_imports(name: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, target) of every import of a `_`-named module or name of skyswarm that does not
    live in `name`'s own package (a sibling module's, or its own package's __init__)."""
    own = name if path.stem == "__init__" else name.rpartition(".")[0]
    for line, target in imports_of(path, name):
        parts = target.split(".")
        if parts[0] != "skyswarm":
            continue
        for i, part in enumerate(parts):
            if part.startswith("_") and not part.startswith("__"):
                holder = ".".join(parts[:i])  # the module (or package) the private name is in
                package = (
                    holder
                    if (ROOT / "/".join(parts[1:i]) / "__init__.py").is_file()
                    else (holder.rpartition(".")[0])
                )
                if own != package:
                    yield line, target
                break


def test_private_names_are_imported_only_within_their_package() -> None:
    found = {
        (name, target): f"{path.relative_to(ROOT)}:{line} imports {target}"
        for name, path in modules().items()
        for line, target in private_imports(name, path)
    }
    bad = [where for key, where in found.items() if key not in PRIVATE_IMPORTS_ALLOWED]
    assert not bad, "private names imported from another package:\n" + "\n".join(bad)
    assert set(PRIVATE_IMPORTS_ALLOWED) <= set(found), "stale PRIVATE_IMPORTS_ALLOWED entries"


def test_the_private_import_check_sees_a_cross_package_import(tmp_path: Path) -> None:
    probe = tmp_path / "views.py"
    probe.write_text(
        "from skyswarm.missions._boids_steering import steering_all\n"
        "from skyswarm.missions.wildfire.fire import _slices\n"
    )  # the first crosses from missions.wildfire up to missions; the second is its own package
    found = list(private_imports("skyswarm.missions.wildfire.views", probe))
    assert found == [
        (1, "skyswarm.missions._boids_steering"),
        (1, "skyswarm.missions._boids_steering.steering_all"),
    ]


def test_every_subpackage_is_installed() -> None:
    # pyproject lists the packages by hand (the repository root is the package): a folder with
    # an __init__.py missing from that list would be left out of the wheel.
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {n for n, p in modules().items() if p.name == "__init__.py"}
    assert found <= listed, f"not in pyproject's packages: {sorted(found - listed)}"


# Imports under `if TYPE_CHECKING:` that close a cycle, each named with its reason. An
# annotation-only import never runs, so these are not runtime cycles; the test below fails on
# any other. Owners: a part annotates the object that owns it and imports it at run time.
OWNER_ANNOTATIONS = {
    "skyswarm.core.simulator": "the Simulator builds and is handed to every part it owns "
    "(agents, comms, collisions, events, faults, hooks, mission, recorder, timeline)",
    "skyswarm.uav.swarm": "the Swarm builds its parts (agents, avoidance, battery, bumpless "
    "switching, commands, estimation, group behaviours), which annotate the swarm they serve",
    "skyswarm.mavlink.vehicle": "a MAVLink vehicle owns its handlers, modes, offboard and "
    "mission protocol state and telemetry, which annotate the vehicle they serve",
    "skyswarm.mavlink.service": "the service builds the vehicles and is handed to them",
    "skyswarm.core.config": "ScenarioConfig is built from the sections of the modules that "
    "read it (checks, comms, events, mission, recorder)",
}
TYPING_EDGES = {
    ("skyswarm.core.agent", "skyswarm.core.hooks"): "agents are FaultCapable (a hooks Protocol)",
    ("skyswarm.core.simulator", "skyswarm.core.mission"): "the Simulator holds the Mission the "
    "loader in mission.py builds for it",
    ("skyswarm.core.hooks", "skyswarm.core.faults"): "DeathListener receives a faults.Death",
    ("skyswarm.core.mission", "skyswarm.core.hooks"): "a mission's hooks are typed by Protocols",
    ("skyswarm.core.timeline", "skyswarm.core.hooks"): "the timeline reads ViewSource data",
    ("skyswarm.core.recorder", "skyswarm.core.faults"): "the recorder writes faults.Death rows",
    ("skyswarm.core.comms.transceiver", "skyswarm.core.comms.dispatcher"): "a transceiver "
    "annotates the dispatcher that owns the queues",
    ("skyswarm.missions._boids_reference", "skyswarm.missions.boids"): "annotates the mission",
    ("skyswarm.missions._boids_steering", "skyswarm.missions.boids"): "annotates the mission",
    ("skyswarm.missions.flight_plan.paths", "skyswarm.missions.flight_plan.route"): "a path "
    "annotates the route that owns it",
    ("skyswarm.missions.flight_plan.records", "skyswarm.missions.flight_plan.executor"): "the "
    "records annotate the executor that writes them",
    (
        "skyswarm.missions.flocking_coverage.partition",
        "skyswarm.missions.flocking_coverage.leader",
    ): ("partition annotates the leader's settings and plan snapshot"),
}


def test_no_cycle_through_type_checking_imports_but_the_named_ones() -> None:
    mods = modules()
    runtime = internal_edges()
    typing: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets = {t for _, t in imports_of(path, name) if t in mods and t != name}
        ancestors = {t for t in targets if name.startswith(t + ".")}
        targets -= {t for t in ancestors if not _takes_names_from(path, name, t, mods)}
        typing[name] = targets - runtime[name]
    both = {n: runtime[n] | typing[n] for n in mods}
    component = {m: i for i, c in enumerate(strongly_connected(both)) for m in c}
    unnamed = [
        f"{a} -> {b}"
        for a in sorted(mods)
        for b in sorted(typing[a])
        if a in component
        and component.get(b) == component[a]
        and b not in OWNER_ANNOTATIONS
        and (a, b) not in TYPING_EDGES
    ]
    assert not unnamed, "annotation-only imports closing a cycle, unnamed:\n" + "\n".join(unnamed)
