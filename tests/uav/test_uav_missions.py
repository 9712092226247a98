"""The shipped hover and waypoints scenarios load and fly."""

from __future__ import annotations

from pathlib import Path

import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_hover_scenario_keeps_spot_within_a_centimetre() -> None:
    sim = Simulator.from_scenario(
        load_scenario(CONFIGS / "hover.toml", ["simulation.duration_s=3"])
    )
    sim.run()
    m = sim.finish()["metrics"]
    assert m["alive"] == 4
    assert m["rms_error_m"] < 0.01
    assert m["mean_reward_m2"] <= 0.0 and m["mean_reward_m2"] > -1e-4


def test_waypoints_scenario_visits_every_waypoint() -> None:
    sim = Simulator.from_scenario(load_scenario(CONFIGS / "waypoints.toml"))
    reason = sim.run()
    m = sim.finish()["metrics"]
    assert reason == "mission done"
    assert m["agents_finished"] == 3 and m["reached"] == 15
    assert m["last_finish_s"] < 40.0


def test_a_bad_waypoint_names_the_key() -> None:
    with pytest.raises(ConfigError) as err:
        load_scenario(CONFIGS / "waypoints.toml", ["waypoints.points=[[1.0, 2.0]]"])
    assert err.value.key.startswith("waypoints.points[0]")


def test_a_hovering_start_in_the_ground_is_refused() -> None:
    # Agents at z = 0 (the default layout) hovering without altitude_m: the bodies would be
    # made in the ground plane and crash at once; refused, naming the agent and the height.
    from skyswarm.uav.swarm import Swarm

    scenario = load_scenario(CONFIGS / "hover.toml", ["agents.origin=[0.0, 0.0, 0.0]"])
    sim = Simulator(scenario.simulation, world=scenario.world)
    assert sim.world.has_ground
    try:
        with pytest.raises(ValueError, match="agent 1 would hover at z = 0 m, in the ground"):
            Swarm.from_scenario(sim, scenario, hovering=True)
        swarm = Swarm.from_scenario(sim, scenario, hovering=True, altitude_m=3.0)
        assert sim.world.state.position[swarm.slots, 2].tolist() == [3.0] * swarm.n
    finally:
        sim.close()
