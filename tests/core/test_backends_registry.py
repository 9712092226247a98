"""The backend registry: backends by name, declared capabilities read by scenario validation,
a backend added by one class, and a fast run that never imports pybullet."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from skyswarm.core.backends import (
    GROUND,
    SHIPPED_BACKENDS,
    BodyShape,
    Capabilities,
    World,
    backend_class,
    backend_names,
    make_world,
    register_backend,
)
from skyswarm.core.backends.fast import FastWorld
from skyswarm.core.backends.terrain import Heightfield
from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError


@register_backend
class CountingWorld(FastWorld):
    """A test-only backend, added by this class alone: the fast engine, counting its steps, with
    no box obstacles (declared, and refused by add_box)."""

    name = "counting_fast"
    capabilities = replace(FastWorld.capabilities, boxes=False)
    steps: list[int] = []  # per world made, in order: the steps it took

    def __init__(self, tick_s: float = 0.0025, gravity: float = 9.81) -> None:
        super().__init__(tick_s, gravity)
        CountingWorld.steps.append(0)

    def step_physics(self) -> None:
        super().step_physics()
        CountingWorld.steps[-1] += 1

    def add_box(self, center: Sequence[float], size: Sequence[float], yaw_rad: float = 0.0) -> int:
        raise ValueError("counting_fast has no box obstacles")


def test_names_come_from_the_registry_and_classes_declare_them() -> None:
    names = backend_names()
    assert names[:2] == ("bullet", "fast")  # shipped first, in SHIPPED_BACKENDS' order
    assert "counting_fast" in names  # registered by the decorator above
    for name in SHIPPED_BACKENDS:
        assert backend_class(name).name == name
    assert backend_class("counting_fast") is CountingWorld
    fast = backend_class("fast").capabilities
    assert (fast.mesh_obstacles, fast.max_terrains, fast.threads) == (False, 1, True)
    assert backend_class("bullet").capabilities == Capabilities()  # the whole seam
    assert fast.scenery() == "ground, boxes, terrain"
    assert Capabilities().scenery() == "ground, boxes, terrain, mesh obstacles"


def test_register_backend_refuses_what_it_cannot_name() -> None:
    class Fast2(FastWorld):
        name = "fast"  # a shipped name

    class NoName(FastWorld):
        pass  # inherits "fast": a backend declares its own name

    class Spaced(FastWorld):
        name = "my fast"

    class Other(FastWorld):
        name = "counting_fast"  # registered above by another class

    for cls, needle in [
        (Fast2, "already registered"),
        (NoName, "declare a lower-case identifier"),
        (Spaced, "declare a lower-case identifier"),
        (Other, "already registered"),
        (World, "concrete subclass"),
        (int, "concrete subclass"),
    ]:
        with pytest.raises(ValueError, match=needle):
            register_backend(cls)
    assert register_backend(CountingWorld) is CountingWorld  # the same class again: a no-op
    with pytest.raises(ValueError, match="expected one of bullet, fast, .*counting_fast"):
        make_world("nope")


def _scenario(tmp_path, body: str = ""):
    path = tmp_path / "s.toml"
    path.write_text('[mission]\ntype = "missions.drop_test"\n[agents]\ncount = 1\n' + body)
    return path


def test_config_accepts_registered_names_and_suggests_close_ones(tmp_path) -> None:
    scen = _scenario(tmp_path)
    assert load_scenario(scen, ["simulation.physics=counting_fast"]).simulation.physics == (
        "counting_fast"
    )
    with pytest.raises(
        ConfigError, match=r"simulation\.physics = 'counting_fats'.*did you mean 'counting_fast'"
    ):
        load_scenario(scen, ["simulation.physics=counting_fats"])
    with pytest.raises(ConfigError, match=r"expected one of 'bullet', 'fast', .*'counting_fast'"):
        load_scenario(scen, ["simulation.physics=warp"])


def test_checks_read_the_declarations_not_the_name(tmp_path) -> None:
    # counting_fast is a name core/checks.py has never heard of: what it refuses comes from
    # its Capabilities (no boxes; no mesh obstacles and one terrain, inherited from fast).
    (tmp_path / "hill.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 1\nf 1 2 3\n")
    scen = _scenario(tmp_path)
    physics = "simulation.physics=counting_fast"
    box = "world.obstacles=[{type='box', center=[5, 5, 1], size=[1, 1, 2]}]"
    expected = (
        r"world\.obstacles\[0\]\.type = 'box': expected no box obstacle with "
        r"simulation\.physics = 'counting_fast' \(ground, terrain; use 'bullet' or 'fast'\)"
    )
    with pytest.raises(ConfigError, match=expected):
        load_scenario(scen, [physics, box])
    assert load_scenario(scen, ["simulation.physics=fast", box]).world.obstacles[0].type == "box"
    mesh = "world.obstacles=[{type='mesh', mesh='hill.obj'}]"
    with pytest.raises(ConfigError, match=r"no mesh obstacle .*'counting_fast'.*use 'bullet'\)"):
        load_scenario(scen, [physics, mesh])
    (tmp_path / "grid.csv").write_text("0,0\n0,0\n")
    two = ["world.terrain=hill.obj", "world.heightfield=grid.csv"]
    with pytest.raises(ConfigError, match=r"world\.heightfield = 'grid\.csv'.*no second terrain"):
        load_scenario(scen, [physics, *two])
    assert load_scenario(scen, two).world.heightfield == "grid.csv"  # Bullet: any number


def test_a_test_only_backend_flies_a_scenario_as_its_parent_does(tmp_path) -> None:
    from skyswarm.app.api import run_scenario

    md5 = {}
    for physics in ("fast", "counting_fast"):
        out = tmp_path / physics
        over = [f"simulation.physics={physics}", "simulation.duration_s=1"]
        run_scenario("hover", results_dir=out, overrides=over)
        md5[physics] = hashlib.md5((out / "trajectory.bin").read_bytes()).hexdigest()
    assert CountingWorld.steps[-1] == 400  # 1 s of 2.5 ms ticks, all through the new class
    assert md5["counting_fast"] == md5["fast"]  # only counted, the same physics


@pytest.mark.parametrize("name", list(SHIPPED_BACKENDS))
def test_shipped_capabilities_are_what_the_backend_does(name: str, tmp_path) -> None:
    caps = backend_class(name).capabilities
    obj = tmp_path / "hill.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 1\nf 1 2 3\n")
    world = make_world(name, 0.0025, 9.81)
    try:
        if caps.mesh_obstacles:
            assert world.add_mesh(obj) == -2  # the first scenery item after the ground
        else:
            with pytest.raises(ValueError):
                world.add_mesh(obj)
        if caps.boxes:
            assert world.add_box((5.0, 5.0, 1.0), (1.0, 1.0, 2.0)) < GROUND
        grid = Heightfield(np.zeros((2, 2)), 1.0, (20.0, 20.0))
        kept = [world.add_heightfield(grid) for _ in range(caps.max_terrains or 1)]
        assert all(sid < GROUND for sid in kept)
        if caps.max_terrains is not None:  # one more than declared is refused
            with pytest.raises(ValueError, match="one terrain"):
                world.add_heightfield(grid)
        else:
            assert world.add_heightfield(grid) < GROUND
        # two 0.2 m boxes whose centres are 0.1 m apart overlap: a pair, if it has contacts
        box = BodyShape(half_extents=(0.1, 0.1, 0.1))
        a, b = world.add_bodies(box, 1.0, [(-10.0, -10.0, 5.0), (-10.0, -10.0, 5.1)])
        world.step_physics()
        world.read_state()
        assert ((int(a), int(b)) in world.contacts.pairs()) == caps.body_contacts
    finally:
        world.close()


NO_PYBULLET = """
import sys
from skyswarm.app.api import run_scenario
for name, over in {runs!r}:
    run_scenario(name, results_dir=sys.argv[1] + "/" + name, overrides=over)
print("pybullet" in sys.modules, "skyswarm.core.backends.bullet" in sys.modules)
"""


def _imports_pybullet(tmp_path, runs: list[tuple[str, list[str]]]) -> str:
    code = textwrap.dedent(NO_PYBULLET.format(runs=runs))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_a_fast_run_never_imports_pybullet(tmp_path) -> None:
    # wildfire_hill is fast physics with a terrain mesh: validation parses the mesh, the fast
    # backend samples it, the fire grid reads its elevation; none of it may load pybullet.
    second = ["simulation.duration_s=1"]
    runs = [("hover", ["simulation.physics=fast", *second]), ("wildfire_hill", second)]
    assert _imports_pybullet(tmp_path / "fast", runs) == "False False"
    # the check can fail: the same probe sees a Bullet run import it
    assert _imports_pybullet(tmp_path / "bullet", [("hover", second)]) == "True True"


PLUGIN = """
from skyswarm.core.backends.fast import FastWorld

class PlugWorld(FastWorld):
    name = "plug"

class Misnamed(FastWorld):
    name = "something_else"
"""


@pytest.fixture
def backend_package(tmp_path, monkeypatch):
    """A third-party package on sys.path with `skyswarm.backends` entry points (one good, one
    naming a class of another name, one naming a module that does not import)."""
    (tmp_path / "thirdparty_backend.py").write_text(textwrap.dedent(PLUGIN))
    dist = tmp_path / "thirdparty_backend-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-backend\nVersion: 1\n")
    (dist / "entry_points.txt").write_text(
        "[skyswarm.backends]\nplug = thirdparty_backend:PlugWorld\n"
        "misnamed = thirdparty_backend:Misnamed\nbroken = no_such_module_xyz:World\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("thirdparty_backend", None)


def test_an_installed_backend_is_named_before_it_is_imported(backend_package, tmp_path) -> None:
    assert {"plug", "misnamed", "broken"} <= set(backend_names())
    assert "thirdparty_backend" not in sys.modules  # listing names imports nothing
    assert backend_class("plug").__name__ == "PlugWorld"
    with pytest.raises(ValueError, match="not a World subclass named 'misnamed'"):
        backend_class("misnamed")
    scen = _scenario(tmp_path)
    with pytest.raises(ConfigError, match=r"simulation\.physics = 'broken'.*ModuleNotFoundError"):
        load_scenario(scen, ["simulation.physics=broken"])
    assert load_scenario(scen, ["simulation.physics=plug"]).simulation.physics == "plug"
