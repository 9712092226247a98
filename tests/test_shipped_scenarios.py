"""Conformance: every shipped scenario loads, runs a short while headless, and writes a complete,
consistent results directory; every shipped mission plug-in honours the Mission interface."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from conftest import ROOT

from skyswarm.core.config import load_scenario
from skyswarm.core.mission import Mission, available_missions, resolve_mission
from skyswarm.core.recorder import read_trajectory
from skyswarm.core.simulator import Simulator

SCENARIOS = sorted(p.name for p in (ROOT / "configs").glob("*.toml"))


@pytest.mark.parametrize("name", SCENARIOS)
def test_shipped_scenario_runs_and_records(name, tmp_path):
    scenario = load_scenario(ROOT / "configs" / name, ["simulation.duration_s=1.0"])
    sim = Simulator.from_scenario(scenario, tmp_path)
    sim.run()
    summary = sim.finish()
    sim.close()
    assert summary["ticks"] == round(summary["sim_time_s"] / scenario.simulation.tick_s)
    assert summary["sim_time_s"] <= 1.0
    assert json.loads((tmp_path / "summary.json").read_text())["seed"] == scenario.simulation.seed
    with open(tmp_path / "timeseries.csv") as f:
        rows = list(csv.reader(f))
    assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows)  # constant columns
    traj = read_trajectory(tmp_path)
    if len(sim.physical_agents):
        assert np.isfinite(traj["position"]).all()
        assert set(np.unique(traj["agent_id"])) <= {int(a.id) for a in sim.physical_agents}


@pytest.mark.parametrize("name", sorted(available_missions()))
def test_shipped_missions_follow_the_interface(name):
    cls = resolve_mission(name)
    assert issubclass(cls, Mission) and cls.description, f"{name} needs a description"
    from skyswarm.core.config import CORE_SECTIONS

    for section, tp in cls.sections.items():
        assert section not in CORE_SECTIONS, f"{name} redefines core section [{section}]"
        assert tp is not None
