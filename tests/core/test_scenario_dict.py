"""Scenarios from Python (`skyswarm.scenario_from_dict`) and back to TOML
(`ScenarioConfig.to_toml`): the same validation and errors as a file, and a lossless round trip
of every shipped scenario."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import skyswarm
from skyswarm.core.config import load_scenario, read_toml
from skyswarm.core.resources import shipped
from skyswarm.core.schema import ConfigError


@pytest.mark.parametrize("name", sorted(shipped()))
def test_every_shipped_scenario_saves_as_toml_and_loads_back_equal(
    name: str, tmp_path: Path
) -> None:
    original = load_scenario(shipped()[name])
    # written beside the original so that its relative paths (terrain, plans) still resolve
    out = original.to_toml(shipped()[name].parent / f"_roundtrip_{tmp_path.name}_{name}.toml")
    try:
        loaded = load_scenario(out)
    finally:
        out.unlink()
    assert dataclasses.replace(loaded, file=original.file) == original
    # and the dict of a file validates to the same scenario as the file
    from_dict = skyswarm.scenario_from_dict(read_toml(shipped()[name]), original.file)
    assert from_dict == original


def test_a_scenario_built_in_python_flies(tmp_path: Path) -> None:
    scenario = skyswarm.scenario_from_dict(
        {
            "mission": {"type": "missions.hover"},
            "simulation": {"duration_s": 0.1, "seed": 3},
            "agents": {"count": 4, "layout": "grid", "spacing_m": 2.0},
        }
    )
    assert scenario.agents.count == 4 and scenario.simulation.seed == 3
    summary = skyswarm.run_scenario(scenario)
    assert (summary["agents"], summary["ticks"], summary["outcome"]) == (4, 40, "target reached")
    path = scenario.to_toml(tmp_path / "hover4.toml")
    back = skyswarm.load_scenario(path)
    assert dataclasses.replace(back, file="") == scenario


def test_numpy_numbers_in_a_dict_are_numbers(tmp_path: Path) -> None:
    # A sweep written with numpy (np.arange, np.linspace) hands np.int64 and np.float32 over:
    # before, "agents.count = np.int64(4): expected an integer". They become plain Python
    # numbers, so the TOML written back holds plain numbers and loads back equal.
    import numpy as np

    scenario = skyswarm.scenario_from_dict(
        {
            "mission": {"type": "missions.hover"},
            "simulation": {"duration_s": np.float32(0.5), "seed": np.uint8(3)},
            "agents": {"count": np.int64(4), "spacing_m": np.float64(2.0)},
        }
    )
    assert (scenario.agents.count, scenario.simulation.seed) == (4, 3)
    assert type(scenario.agents.count) is int and type(scenario.simulation.duration_s) is float
    back = skyswarm.load_scenario(scenario.to_toml(tmp_path / "np.toml"))
    assert dataclasses.replace(back, file="") == scenario
    with pytest.raises(ConfigError, match="agents.count = np.True_: expected an integer"):
        skyswarm.scenario_from_dict(
            {"mission": {"type": "missions.hover"}, "agents": {"count": np.True_}}
        )


def test_the_wrong_kind_of_argument_is_one_line_naming_it(tmp_path: Path) -> None:
    # Before: a list as the scenario was "'list' object has no attribute 'get'"; one string of
    # overrides was read a character at a time ("--set: a = 'a': expected key.path=value").
    with pytest.raises(ConfigError, match=r"\(scenario\) = \[1, 2\]: expected a dict of sections"):
        skyswarm.scenario_from_dict([1, 2])
    needle = "overrides = 'agents.count=2': expected a list of key.path=value strings"
    with pytest.raises(ConfigError, match=needle):
        skyswarm.load_scenario("hover", "agents.count=2")
    with pytest.raises(ConfigError, match=needle):
        skyswarm.run_scenario("hover", tmp_path / "out", "agents.count=2")
    assert not (tmp_path / "out").exists()


BAD = [
    # (section, key, value, the expected text of the one-line error)
    ("simulation", "tick_s", -1.0, "simulation.tick_s"),
    ("agents", "count", "four", "agents.count"),
    ("simulation", "duraton_s", 5.0, "did you mean 'duration_s'"),
]


@pytest.mark.parametrize(("section", "key", "value", "named"), BAD)
def test_a_bad_dict_gets_the_same_one_line_error_as_the_same_toml_file(
    section: str, key: str, value: object, named: str, tmp_path: Path
) -> None:
    import tomli_w

    data = {"mission": {"type": "missions.hover"}, section: {key: value}}
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(data))
    with pytest.raises(ConfigError) as from_file:
        load_scenario(path)
    with pytest.raises(ConfigError) as from_dict:
        skyswarm.scenario_from_dict(data, str(path))
    assert str(from_dict.value) == str(from_file.value)
    assert named in str(from_dict.value) and "\n" not in str(from_dict.value)


def test_a_mission_that_needs_more_agents_refuses_a_dict_with_fewer() -> None:
    with pytest.raises(ConfigError, match="agents.count"):
        skyswarm.scenario_from_dict({"mission": {"type": "missions.hover"}, "agents": {"count": 0}})
