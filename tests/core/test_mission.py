"""Mission plug-ins: the three ways to name one, the do-nothing hooks, software faults."""

from __future__ import annotations

import sys
import textwrap

import pytest

from skyswarm.app.cli import main
from skyswarm.core.config import validate_scenario
from skyswarm.core.mission import Mission, available_missions, resolve_mission
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.missions.drop_test import DropTest

PLUGIN = """
from skyswarm.core.agent import Agent
from skyswarm.core.mission import Mission

class Ticker(Mission):
    description = "third-party test mission"

    def setup(self):
        self.pre = self.post = 0
        self.agent = Agent(self.sim, 1)
        self.agent.every(0.01, self.behave)
        self.bad = Agent(self.sim, 2)
        self.bad.every(0.5, self.explode, phase_s=0.25)

    def behave(self):
        pass

    def explode(self):
        return 1 / 0

    def pre_tick(self, world):
        self.pre += 1

    def post_tick(self, world):
        self.post += 1

    def is_done(self):
        return self.sim.time_s >= 1.0

    def metrics(self):
        return {"pre": self.pre, "post": self.post}
"""


@pytest.fixture
def plugin_package(tmp_path, monkeypatch):
    """A third-party package installed on sys.path with a `skyswarm.missions` entry point."""
    (tmp_path / "thirdparty_missions.py").write_text(textwrap.dedent(PLUGIN))
    dist = tmp_path / "thirdparty_missions-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: thirdparty-missions\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[skyswarm.missions]\nticker = thirdparty_missions:Ticker\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("thirdparty_missions", None)


def test_four_ways_to_name_a_mission(plugin_package):
    assert resolve_mission("missions.drop_test") is DropTest  # shipped, as scenarios name it
    assert resolve_mission("skyswarm.missions.drop_test") is DropTest  # module path
    assert resolve_mission("skyswarm.missions.drop_test:DropTest") is DropTest
    assert resolve_mission("drop_test") is DropTest
    ticker = resolve_mission("ticker")
    assert ticker.__name__ == "Ticker" and issubclass(ticker, Mission)
    assert "ticker" in available_missions() and "drop_test" in available_missions()


def test_bad_mission_names_are_config_errors():
    for spec, needle in [
        ("skyswarm.missions.drop_test:Nope", "Mission subclass named Nope"),
        ("nosuchmission", "an installed mission"),
        ("skyswarm.core.backends", "an installed mission"),  # a module path is not imported
        ("skyswarm.core.backends:World", "Mission subclass named World"),
        ("missions.nosuchmission", "an installed mission"),
    ]:
        with pytest.raises(ConfigError, match=needle):
            resolve_mission(spec, "x.toml")


def test_hooks_run_and_a_raising_behaviour_kills_only_its_agent(plugin_package):
    sc = validate_scenario({"mission": {"type": "ticker"}, "simulation": {"duration_s": 5.0}}, "t")
    sim = Simulator.from_scenario(sc)
    reason = sim.run()
    assert reason == "mission done" and sim.time_s == 1.0
    m = sim.mission.metrics()
    assert m["pre"] == m["post"] == 400  # hooks installed as listeners, called every tick
    good, bad = sim.agents[1], sim.agents[2]
    assert good.alive and not bad.alive
    assert bad.death_time_s == 0.25
    assert bad.death_cause == "software fault: ZeroDivisionError: division by zero"
    assert "ZeroDivisionError" in sim.deaths[0].detail and "explode" in sim.deaths[0].detail
    assert sim.summary()["deaths_by_cause"] == {"software fault": 1}
    sim.close()


def test_strict_mode_reraises(plugin_package):
    sc = validate_scenario({"mission": {"type": "ticker"}, "simulation": {"strict": True}}, "t")
    sim = Simulator.from_scenario(sc)
    with pytest.raises(ZeroDivisionError):
        sim.run()
    sim.close()


def test_default_hooks_are_not_installed_as_listeners():
    sc = validate_scenario({"mission": {"type": "missions.drop_test"}}, "t")
    sim = Simulator.from_scenario(sc)
    assert sim.pre_tick_listeners == ()  # DropTest only overrides post_tick
    # Post-tick order: collision monitor, fault injector, then the mission's post_tick.
    assert [type(f.__self__).__name__ for f in sim.post_tick_listeners] == [
        "CollisionMonitor",
        "FaultInjector",
        "DropTest",
    ]
    sim.close()


def test_missions_command_lists_installed(plugin_package, capsys):
    assert main(["missions"]) == 0
    out = capsys.readouterr().out
    assert "drop_test" in out and "ticker" in out and "third-party test mission" in out
