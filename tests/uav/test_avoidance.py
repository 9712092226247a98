"""Local collision avoidance (uav/avoidance.py): the time-to-collision term on hand-made tracks,
and 50 UAVs crossing head-on (configs/crossing.toml) with the layer on and off."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ROOT

from skyswarm.core.config import AvoidanceConfig, load_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator
from skyswarm.uav.avoidance import RIGHT_TURN, Avoidance

CROSSING = ROOT / "configs" / "crossing.toml"


def layer(tracks: np.ndarray, velocities: np.ndarray, **cfg) -> Avoidance:
    """An Avoidance with the given (N, M, 2) tracked positions and relative velocities."""
    av = Avoidance.__new__(Avoidance)
    av.cfg = AvoidanceConfig(enabled=True, **cfg)
    av._p, av._v = tracks, velocities
    av._valid = np.ones(tracks.shape[:2], dtype=bool)
    av.min_ttc_s = math.inf
    return av


def test_head_on_slows_down_and_turns_right() -> None:
    # agent at the origin flies +x at 2 m/s, a hovering neighbour 6 m ahead
    av = layer(np.array([[[6.0, 0.0]]]), np.array([[[-2.0, 0.0]]]), separation_m=0.0)
    dv = av._correction(np.array([[2.0, 0.0]]), np.array([[2.0, 0.0]]))[0]
    assert av.min_ttc_s == pytest.approx((6.0 - 1.2) / 2.0)  # tau = (d - r) / closing speed
    assert dv[0] < 0.0  # brakes ...
    assert dv[1] / dv[0] == pytest.approx(math.tan(RIGHT_TURN))  # ... and veers to its
    assert dv[1] < 0.0  # right (-y when flying +x)


def test_receding_or_passing_wide_gets_nothing() -> None:
    tracks = np.array([[[6.0, 0.0], [0.0, 5.0]]])
    rel_v = np.array([[[2.0, 0.0], [-2.0, 0.0]]])  # one moves away, one passes 5 m abeam
    av = layer(tracks, rel_v, separation_m=0.0)
    assert np.all(av._correction(np.zeros((1, 2)), np.zeros((1, 2))) == 0.0)


def test_closer_than_separation_pushes_straight_away_capped() -> None:
    av = layer(np.array([[[0.5, 0.0]]]), np.zeros((1, 1, 2)), max_push_m_s=1.0)
    dv = av._correction(np.zeros((1, 2)), np.zeros((1, 2)))[0]
    assert dv == pytest.approx([-1.0, 0.0])  # 2 (2.5 - 0.5) = 4 m/s, capped at 1


def test_avoidance_needs_the_proximity_sensor() -> None:
    with pytest.raises(ConfigError, match="proximity") as err:  # at load: validate refuses it
        load_scenario(CROSSING, ["uav.sensors.proximity.enabled=false"])
    assert err.value.key == "avoidance.enabled"
    load_scenario(CROSSING, ["uav.sensors.proximity.enabled=false", "avoidance.enabled=false"])


def crossing(enabled: bool) -> tuple[Simulator, dict]:
    sim = Simulator.from_scenario(
        load_scenario(CROSSING, [f"avoidance.enabled={str(enabled).lower()}"])
    )
    sim.run()
    return sim, sim.finish()


def test_fifty_uavs_cross_without_collision_with_avoidance() -> None:
    sim, summary = crossing(True)
    assert summary["deaths_by_cause"] == {} and summary["alive"] == 50
    assert summary["outcome"] == "target reached"  # every UAV reached the far side
    assert summary["metrics"]["agents_finished"] == 50
    assert summary["sim_time_s"] < 20.0  # 40 m at up to 8 m/s, plus take-off and detours
    assert sim.mission.swarm.avoidance.summary()["engaged_agent_s"] > 0.0


def test_the_same_crossing_collides_without_it() -> None:
    sim, summary = crossing(False)
    assert summary["deaths_by_cause"].get("collision", 0) >= 10  # head-on rows meet
    assert summary["outcome"] != "target reached"


def test_separation_push_grows_linearly_from_the_separation_distance() -> None:
    # neighbour 2 m away, nobody moving (no time-to-collision term), separation 2.5 m:
    # repulsion 2 (2.5 - 2) = 1 m/s straight away; at 2.5 m and beyond nothing
    av = layer(np.array([[[2.0, 0.0]]]), np.zeros((1, 1, 2)))
    assert av._correction(np.zeros((1, 2)), np.zeros((1, 2)))[0] == pytest.approx([-1.0, 0.0])
    av = layer(np.array([[[0.0, 2.5]]]), np.zeros((1, 1, 2)))
    assert np.all(av._correction(np.zeros((1, 2)), np.zeros((1, 2))) == 0.0)
