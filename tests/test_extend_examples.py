"""The worked examples in the docstrings of the public API (`skyswarm` and `skyswarm.extend`)
are run, not only found: each indented Python block of a public name's docstring executes
against a live simulation (six hovering UAVs with the lidar on, so `swarm`, `sim`, `state`,
`command` exist as the examples name them), in a fresh directory holding the runs they read,
then the simulation ticks 0.1 s so the hooks and controllers the example installed run.

Blocks that are outlines (an `...` statement) or method bodies taken out of their class (a
`def f(self, ...)` at the top) cannot run alone: they are compiled (syntax), and the names
whose only example is such a block are listed in SKETCH with the reason. A block that raises
on purpose (`raise ...` with a `# -> "message"` comment) must raise that message. Every public
name has a block that runs, or is in SKETCH with the reason: a name without an example fails."""

from __future__ import annotations
import __future__

import ast
import inspect
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import skyswarm
from skyswarm import extend
from skyswarm.core.backends import _registered
from skyswarm.core.comms import channels
from skyswarm.uav.commands import sensed_swarm_state
from skyswarm.uav.sensors import base as sensor_base

# Names whose docstring holds only an outline or a method body (compiled, not run), and why.
SKETCH = {
    "Setting": "the body of a Sensor's __init__ (uses super())",
    "Truth": "the body of a Sensor's sample method",
}
COMPILED_ONLY = {  # runnable, but run elsewhere, and why
    "run_sweep": "a 2-worker process pool; examples/sweep_to_pandas.py runs a sweep "
    "(tests/test_examples.py::test_sweep_to_pandas)",
}
PUBLIC = {  # every public name, once (the facade re-exports some of extend's)
    **{name: f"skyswarm.{name}" for name in skyswarm.__all__},
    **{name: f"skyswarm.extend.{name}" for name in extend.__all__},
}
TICKS_AFTER = 41  # ticks (0.1 s) stepped after each example: what it installed runs


def blocks(doc: str) -> list[str]:
    """The indented blocks of a docstring, dedented, that parse as Python (a TOML block,
    e.g. an entry point, does not)."""
    found, current = [], []
    for line in [*doc.splitlines(), "end"]:
        if line.startswith("    ") or (not line.strip() and current):
            current.append(line)
            continue
        if current:
            code = textwrap.dedent("\n".join(current)).strip() + "\n"
            try:
                ast.parse(code)
            except SyntaxError:
                pass
            else:
                found.append(code)
        current = []
    return found


def is_sketch(code: str) -> bool:
    tree = ast.parse(code)
    outline = any(
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and n.value.value is ...
        for n in ast.walk(tree)
    )
    method = any(
        isinstance(n, ast.FunctionDef) and n.args.args and n.args.args[0].arg == "self"
        for n in tree.body
    )
    return outline or method


def test_the_block_reader_and_sketch_rule() -> None:
    toml = '    [project.entry-points."g"]\n    a = 1\n'  # not Python
    doc = "Words.\n\n    x = 1\n\n    y = x + 1\n\nMore.\n\n" + toml
    assert blocks(doc) == ["x = 1\n\ny = x + 1\n"]
    assert is_sketch("class A:\n    ...\n") and is_sketch("def f(self):\n    return 1\n")
    assert not is_sketch("def f(state, command):\n    return 1\n")


def test_the_exception_lists_name_public_names() -> None:
    """SKETCH and COMPILED_ONLY excuse names from running: a name no longer public (renamed,
    dropped) must leave them, or it would excuse nothing and hide the list's growth."""
    assert set(SKETCH) <= set(PUBLIC) and set(COMPILED_ONLY) <= set(PUBLIC)
    assert not set(SKETCH) & set(COMPILED_ONLY)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs the examples read: results/hover_seed0, results/hover, and lidar_out (a run
    that recorded every lidar scan, for load_arrays)."""
    work = tmp_path_factory.mktemp("runs")
    for name in ("hover_seed0", "hover"):
        skyswarm.run_scenario("hover", work / "results" / name, ["simulation.duration_s=0.2"])
    lidar = ["uav.sensors.lidar.enabled=true", "uav.sensors.lidar.record_every=1"]
    skyswarm.run_scenario("hover", work / "lidar_out", ["simulation.duration_s=0.1", *lidar])
    return work


def namespace(tmp: Path) -> dict:
    """What the examples assume is in scope."""
    scenario = skyswarm.load_scenario("hover", ["agents.count=6", "uav.sensors.lidar.enabled=true"])
    sim = skyswarm.Simulator.from_scenario(scenario)
    (swarm,) = extend.swarms_of(sim)
    sim.step()
    ns = {name: getattr(extend, name) for name in extend.__all__}
    ns.update({name: getattr(skyswarm, name) for name in skyswarm.__all__})
    ns.update(
        np=np,
        dataclass=dataclass,
        Mapping=Mapping,
        sim=sim,
        swarm=swarm,
        state=sensed_swarm_state(swarm, np.arange(swarm.n)),
        command=swarm.command,
        box=SimpleNamespace(slot=int(swarm.slots[0])),  # a body to push
        scenario=scenario,
        cfg=SimpleNamespace(lanes=1),
        # inside a mission's setup: a simulation of its own, with no agents yet
        self=SimpleNamespace(
            sim=skyswarm.Simulator(scenario.simulation, scenario.world, scenario.base_dir),
            config=scenario,
        ),
        my_controller=lambda state, command: None,
    )

    @dataclass(frozen=True)
    class SurveyConfig:  # what UavSection's example declares beside it
        lanes: int = extend.param(4, "number of lanes", ge=1)

    ns["SurveyConfig"] = SurveyConfig
    return ns


def run_block(code: str, ns: dict, where: str, compiled_only: bool = False) -> None:
    flags = __future__.annotations.compiler_flag  # annotations name types not in scope
    compiled = compile(code, where, "exec", flags=flags, dont_inherit=True)
    if is_sketch(code) or compiled_only:
        return
    tree = ast.parse(code)
    if isinstance(tree.body[-1], ast.Raise):
        expected = re.search(r'# -> "(?:[^:"]*: )?([^"]+)"', code)
        with pytest.raises(Exception) as err:
            exec(compiled, ns)
        if expected:
            assert expected.group(1) in str(err.value), (where, str(err.value))
        return
    exec(compiled, ns)


def public(name: str):
    return getattr(extend, name) if name in extend.__all__ else getattr(skyswarm, name)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_the_worked_example_runs(
    name: str, runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code_blocks = blocks(inspect.getdoc(public(name)) or "")
    assert code_blocks, f"{PUBLIC[name]}: no Python block in its docstring"
    (tmp_path / "results").symlink_to(runs / "results", target_is_directory=True)
    if name == "load_arrays":  # its example reads the array log of a run in "out"
        (tmp_path / "out").symlink_to(runs / "lidar_out", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    # the registries are restored after each example: examples may reuse a name
    registries = (sensor_base._REGISTRY, channels.LOSS_MODELS, _registered)
    saved = [dict(r) for r in registries]
    ns = namespace(tmp_path)
    sims = (ns["sim"], ns["self"].sim)
    compiled_only = name in COMPILED_ONLY
    try:
        for i, code in enumerate(code_blocks):
            run_block(code, ns, f"{PUBLIC[name]} block {i}", compiled_only)
        for sim in sims:
            for _ in range(TICKS_AFTER):
                sim.step()
    finally:
        for sim in sims:
            sim.close()
        for registry, before in zip(registries, saved, strict=True):
            registry.clear()
            registry.update(before)
    ran = [c for c in code_blocks if not is_sketch(c)]
    assert bool(ran) == (name not in SKETCH), f"{name}: ran {len(ran)} blocks"
