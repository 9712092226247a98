"""Data mule: the base station beyond the long-range link's reach (configs/flocking_mule.toml).

The base station sits at (-70, -70), the long-range link reaches 60 m, and no point of the area
or of the take-off line is within 60 m of it: while the flock works, only the few reports sent
when an outer slot swings outside the area near the base arrive (0.8 % of the cells, seed 1).
The mission detects it (a corner of the area beyond the link) and switches the data mule on:
the leader flies the flock towards the base station once the sweep is done, until the base
station's acknowledgement covers what the flock knows. Switched off, the run ends "base station
not informed" once the flock is done, instead of idling to the time limit.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.missions.coverage import Area

pytestmark = pytest.mark.slow  # four coverage runs (the far area: 237 s simulated)

CONFIG = ROOT / "configs" / "flocking_mule.toml"


def run(overrides: list[str]) -> dict:
    sim = Simulator.from_scenario(load_scenario(CONFIG, overrides))
    sim.run()
    return sim.finish()


def test_the_base_station_is_out_of_reach_of_the_area_and_the_start() -> None:
    sc = load_scenario(CONFIG)
    base = np.array(sc.comms.base_stations[0].position[:2])
    reach = sc.comms.channels["long_range"].range_m
    a = sc.section("areas")[0]
    corners = Area(a.id, a.center, a.size, a.heading_deg, 1.0).corners()
    starts = np.array([s.position[:2] for s in sc.agents.resolved()])
    assert np.linalg.norm(np.r_[corners, starts] - base, axis=1).min() > reach


def test_mule_flights_bring_the_coverage_home() -> None:
    summary = run([])
    m = summary["metrics"]
    assert m["mule"] is True  # detected: the file does not set flocking.mule
    assert summary["outcome"] == "target reached" and summary["stop_reason"] == "mission done"
    assert m["coverage"] >= 0.99 and summary["deaths_by_cause"] == {}
    assert 150.0 < m["time_to_99_s"] < 250.0  # the sweep (~150 s) plus the flight back


def test_without_the_mule_the_base_station_learns_nothing() -> None:
    summary = run(["flocking.mule=false", "simulation.duration_s=200.0"])
    m = summary["metrics"]
    assert m["true_coverage"] >= 0.99  # the cameras saw the area ...
    assert m["coverage"] < 0.02  # ... the base station knows next to none of it (1.14 %)
    # every leader done, the base station short of the target: the run says so and ends
    # (UNDELIVERED_S = 30 s later) instead of idling to the 200 s limit
    assert summary["outcome"] == "base station not informed"
    assert summary["stop_reason"] == "mission done" and summary["sim_time_s"] < 200.0


def test_the_mule_is_off_when_the_base_station_is_in_reach() -> None:
    # the reference: an unlimited long-range link; and a 60 m link from a base station at the
    # area's centre (the farthest corner, 64 m away at 6 m altitude, is out of reach: mule on)
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs" / "flocking_coverage.toml"))
    assert sim.mission.flock.mule is False and not sim.mission.base_out_of_reach()
    near = "comms.base_stations=[{id = 0, position = [50.0, 50.0, 2.0]}]"
    sim = Simulator.from_scenario(load_scenario(CONFIG, [near]))
    assert sim.mission.base_out_of_reach()  # sqrt(40^2 + 50^2 + 4^2) = 64.2 m > 60 m
    far_link = "comms.channels.long_range.range_m=65.0"
    sim = Simulator.from_scenario(load_scenario(CONFIG, [near, far_link]))
    assert sim.mission.flock.mule is False


FAR_AREA = [
    "areas=[{id = 1, center = [300.0, 300.0], size = [40.0, 50.0], heading_deg = 60.0}]",
    "comms.channels.long_range.range_m=100.0",
]


def test_an_area_far_from_home_is_delivered_by_the_mule() -> None:
    # the reference flock, its area 300 m out and the base station at home with a 100 m link:
    # the cameras see it all, the mule flies it home (measured 238.1 s; the run ended "base
    # station not informed" at 210.2 s, the base knowing 0 %, while the mule's wait was
    # counted from the ENU origin)
    sim = Simulator.from_scenario(
        load_scenario(ROOT / "configs" / "flocking_coverage.toml", [*FAR_AREA])
    )
    try:
        sim.run()
        summary = sim.finish()
    finally:
        sim.close()
    m = summary["metrics"]
    assert m["mule"] is True and summary["deaths_by_cause"] == {}
    assert summary["outcome"] == "target reached" and m["coverage"] >= 0.99
    assert m["time_to_99_s"] < 300.0


def test_the_undelivered_wait_covers_the_flight_from_the_area() -> None:
    # an area 300 m out (40 m x 50 m at (300, 300)), the base station at (0, -10) with a 100 m
    # link: the mule's flight home starts at the area, 402-461 m from the base station. The
    # wait once the plan is done bounds that flight (farthest corner to the station), not the
    # area's diagonal plus the station's distance from the ENU origin (64 + 10 m: 18 s at
    # 4 m/s, while the flight takes up to 90 s and the run ended "not informed" on the way home)
    far = FAR_AREA
    sim = Simulator.from_scenario(load_scenario(ROOT / "configs" / "flocking_coverage.toml", far))
    try:
        mission = sim.mission
        assert mission.flock.mule is True  # detected
        corners = mission.areas[0].corners()
        gaps = np.hypot(*(corners - [0.0, -10.0]).T)
        assert mission.mule_flight_m() == pytest.approx(gaps.max())
        assert 455.0 < mission.mule_flight_m() < 465.0  # 461.1 m
        # two stations: the bound is the nearer one's farthest corner (the mule flies to the
        # station nearest to it, never farther than that one)
        two = "comms.base_stations=[{id = 0, position = [0.0, -10.0, 2.0]}, " + (
            "{id = 11, position = [300.0, 200.0, 2.0]}]"
        )
        sim2 = Simulator.from_scenario(
            load_scenario(ROOT / "configs" / "flocking_coverage.toml", [*far, two])
        )
        try:
            gaps2 = np.hypot(*(sim2.mission.areas[0].corners() - [300.0, 200.0]).T)
            assert sim2.mission.mule_flight_m() == pytest.approx(gaps2.max())
        finally:
            sim2.close()
    finally:
        sim.close()


def test_the_mule_delivers_by_radio_when_the_long_range_link_is_dead() -> None:
    # the long-range link loses every frame: the mule (detected) still brings the coverage
    # home, because it flies the flock to the base station, inside the radio's 100 m, and the
    # base station hears the members' coverage shares there. Not a case of "cannot deliver":
    # everything the base station learnt came by radio
    summary = run(["comms.channels.long_range.loss=1.0"])
    m = summary["metrics"]
    assert m["mule"] is True and summary["outcome"] == "target reached"
    assert m["coverage"] >= 0.99 and summary["deaths_by_cause"] == {}
    link = summary["comms"]["channels"]["long_range"]
    assert link["sent"] > 0 and link["delivered"] == 0
