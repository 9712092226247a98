"""The fire-tracking mission flown (configs/wildfire_flat.toml): the swarm of 5 finds the fire,
keeps its front in view, keeps the base station's map fresh, and recovers from losing 2 UAVs by
re-balancing its segments, while without re-balancing the survivors still keep their own arcs.
About two minutes of wall time in all (four runs of 240-300 s)."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.simulator import Simulator
from skyswarm.missions.wildfire.thermal import in_view
from skyswarm.missions.wildfire.tracking import IgniteAction

FLAT = CONFIGS_DIR / "wildfire_flat.toml"
MAP_AGE_BOUND_S = 2.0  # frame report 0.5 s + base poll 0.5 s + latency 0.06 s + one lost report


@pytest.fixture(scope="module")
def flat(tmp_path_factory):
    out = tmp_path_factory.mktemp("wildfire_flat")
    sim = Simulator.from_scenario(load_scenario(FLAT), out)
    sim.run()
    summary = sim.finish()
    sim.close()
    return sim, summary, out


def test_flat_case_keeps_the_front_in_view(flat):
    sim, summary, out = flat
    m = sim.mission.metrics()
    # the strip search finds the fire (a 60 m patch at (250, 240)) within 90 s: measured 58 s
    assert m["first_detection_s"] is not None and m["first_detection_s"] < 90.0
    assert m["detection_delays_s"] == [m["first_detection_s"]]
    # from 30 s after detection to the end (300 s): measured mean 0.999, lowest sample 0.905
    assert m["front_in_view_mean"] >= 0.8
    assert m["front_in_view_min"] >= 0.6
    assert m["uavs_lost"] == 0 and summary["outcome"] == "target reached"
    assert m["burnt_cells"] > 400  # the fire grew: 36 cells lit, over 600 burnt at the end


def test_flat_case_keeps_the_map_fresh(flat):
    # the oldest piece of the known perimeter: measured 0.995 s at most (seeds 2, 3: 1.0 s;
    # avoidance off or quad_x_simple: 0.995 s; wildfire_hill seeds 1-3: 0.5, 1.0, 0.5 s).
    # Before arcs of equal length and the transit back from past an arc's end it was 14.0 s
    # (seed 1), 5.0 s (seed 3), 23.5 s (hill, seed 2): the side of the fire the search saw
    # least (one known cell in the 85-degree piece) fell to one UAV with a 131-degree arc,
    # wider than its footprint, sweeping at its other end. Avoidance played no part after the
    # take-off (never engaged after 15 s, closest pair 3.96 m), it only shifted the run there
    m = flat[0].mission.metrics()
    assert m["map_age_max_s"] <= MAP_AGE_BOUND_S


def test_segments_are_rebalanced_as_the_front_grows(flat):
    # the first assignment when the fire is seen, then one each time the known perimeter grew
    # by `growth` (10 %) and at least every `refresh_s` (10 s, + one 0.5 s poll); measured:
    # 12 "front grew" re-balances between 60 s and 151 s, all onto the 5 UAVs
    sim, _, _ = flat
    m = sim.mission.metrics()
    times = [t for t, _, _ in m["rebalances"]]
    reasons = [why for _, why, _ in m["rebalances"]]
    assert reasons[0] == "fire detected" and times[0] == m["first_detection_s"]
    assert reasons.count("front grew") >= 5
    assert {n for _, _, n in m["rebalances"]} == {5}
    assert max(np.diff(times)) <= sim.mission.cfg.refresh_s + 0.5 + 1e-9


def test_hill_case_spotter_finds_the_spot_fire():
    # configs/wildfire_hill.toml (300 s, about 13 s of wall time): UAV 5 is the spotter (never
    # given a segment) and finds the spot fire lit at 150 s on the hill's far side; measured:
    # first detection 40.5 s, spot found after 132.5 s, front in view 0.93 on average
    sim = Simulator.from_scenario(load_scenario(CONFIGS_DIR / "wildfire_hill.toml"))
    sim.run()
    m = sim.mission.metrics()
    first, spot = m["detection_delays_s"]
    assert first == m["first_detection_s"] and first < 90.0
    assert spot is not None and spot < 150.0  # within the 150 s left of the run
    assert {n for _, _, n in m["rebalances"]} == {4}  # 4 trackers, 1 spotter
    assert sim.mission.uavs[4].spotter and sim.mission.assignment.arc_of(5) is None
    assert m["front_in_view_mean"] >= 0.8


def test_flat_case_records_the_fire_for_plots_and_replay(flat):
    sim, _, out = flat
    rec = np.load(out / "fire.npz")
    grid = sim.mission.grid
    assert rec["ignited_s"].shape == grid.shape == (80, 80)
    assert np.array_equal(np.isfinite(rec["ignited_s"]), grid.state != 0)
    known = np.isfinite(rec["known_s"])
    # the base saw most of what burnt: measured 522 of 703 cells (the 36 first burnt out
    # before the search found the fire; the rest burnt outside every footprint)
    assert known.sum() > 0.7 * (grid.state != 0).sum()
    assert not (known & (grid.state == 0)).any()  # and nothing that did not
    overlays = sim.mission.overlays()
    kinds = [next(k for k in ("segments", "corners") if k in o) for o in overlays]
    assert kinds == ["segments", "corners", "corners", "segments"]
    assert overlays[1]["corners"].shape[1:] == (4, 3) and len(overlays[2]["corners"]) > 0
    assert len(overlays[3]["segments"]) > 20  # the known perimeter
    assert (out / "timeline.jsonl").stat().st_size > 0
    from skyswarm.app.plot import plot_results

    assert out / "fire.png" in plot_results(out)


def _front_in_live_arcs(mission) -> float:
    """The fraction of the true front inside the live UAVs' arcs (by angle around the
    assignment's centroid) that lies in some live UAV's footprint."""
    a, grid = mission.assignment, mission.grid
    jj, ii = np.nonzero(grid.front())
    rel = grid.centres(jj, ii) - np.asarray(a.centroid)
    ang = np.arctan2(rel[:, 1], rel[:, 0])
    alive = [u for u in mission.uavs if u.alive]
    mine = np.zeros(len(ang), dtype=bool)
    for arc in a.arcs:
        if any(u.id == arc.uav for u in alive):
            off = np.array([arc.offset(t) for t in ang])
            mine |= (off >= 0.0) & (off <= arc.width)
    seen = in_view(grid, np.array([u.position for u in alive]), mission.thermal)[jj, ii]
    return float(seen[mine].mean())


def _lose_two(rebalance: bool):
    """UAVs 1 and 2 killed at 120 s of 240; the series from 150 s on, and the front in the
    live UAVs' arcs every 5 s from 150 s."""
    sc = load_scenario(
        FLAT, ["simulation.duration_s=240", f"tracking.rebalance={str(rebalance).lower()}"]
    )
    sim = Simulator.from_scenario(sc)
    sim.run(until_s=120.0)
    for uav in sim.mission.uavs[:2]:
        sim.kill(uav, "test")
    own = []
    for t in np.arange(150.0, 241.0, 5.0):
        sim.run(until_s=float(t))
        own.append(_front_in_live_arcs(sim.mission))
    series = np.array(sim.mission.series)  # (t, front fraction, map age)
    return sim.mission, series[series[:, 0] >= 150.0], np.array(own)


def test_losing_two_uavs_is_recovered_by_rebalancing():
    mission, after, _ = _lose_two(True)
    # the base notices the silence (timeout 3 s) and re-balances onto the 3 survivors
    changes = [(t, n) for t, why, n in mission.rebalances if why == "members changed"]
    assert changes and 120.0 < changes[0][0] <= 124.5 and changes[0][1] == 3
    assert mission.metrics()["uavs_lost"] == 2
    # from 30 s after the loss: measured front mean 0.949, map age at most 14.0 s (3 UAVs on
    # arcs of ~150 m sweep ~50 m each way at 3 m/s: a piece is seen again within ~35 s)
    assert np.nanmean(after[:, 1]) >= 0.8
    assert np.nanmax(after[:, 2]) <= 35.0


def test_without_rebalancing_the_survivors_keep_their_own_arcs():
    # `tracking.rebalance = false`: the first assignment (at 58.5 s, 5 arcs of 63-84 degrees)
    # stays, so the dead UAVs' two arcs (129 degrees) go unwatched; the 3 survivors keep their
    # own arcs' front in view (measured: all of it at every sample) and the whole front at
    # 0.786 on average (their footprints reach past their arcs' ends). The map's oldest piece
    # is one of the dead arcs, last seen as they died: measured 119.5 s at 240 s.
    # The regression this guards: a survivor back from past its arc's end flew to the arc's
    # middle point of 58.5 s, by then deep inside the burnt area, and followed cells burning
    # late in there: front 0.495 (0.54-0.84 of its own arcs), map age 146.5 s (a piece last
    # seen before the loss). (Before arcs of equal length, 0.894 and 43 s: the first, equal-
    # count cut gave UAVs 1 and 2 arcs of zero width, so the loss cost nothing.)
    mission, stuck, own = _lose_two(False)
    assert [n for _, _, n in mission.rebalances] == [5]
    assert own.min() >= 0.95
    assert np.nanmean(stuck[:, 1]) >= 0.7
    loss_s, end_s = 120.0, stuck[-1, 0]
    assert 100.0 <= np.nanmax(stuck[:, 2]) <= end_s - loss_s + MAP_AGE_BOUND_S


def test_ignite_event_starts_a_spot_fire_whose_detection_is_timed():
    sim = Simulator.from_scenario(load_scenario(FLAT, ["simulation.duration_s=2"]))
    sim.run()
    mission = sim.mission
    assert "ignite" in mission.event_actions
    before = int((mission.grid.state == 1).sum())
    mission.on_event("ignite", IgniteAction(center=(50.0, 350.0), size=(10.0, 10.0)), [])
    assert int((mission.grid.state == 1).sum()) == before + 4  # 2 x 2 cells of 5 m
    spot = mission.spots[-1]
    assert spot.at_s == 2.0 and spot.source == 1 and spot.detected_s is None
    assert mission.outcome() is None  # nothing found yet: the search is still on


def test_fire_follows_the_live_wind_of_the_swarm():
    # configs/wildfire_hill.toml: 5 m/s from the west; a `wind` event calls set_mean on the
    # swarm's field, and the next grid step takes it up (a north wind of 8 m/s blows south)
    sc = load_scenario(CONFIGS_DIR / "wildfire_hill.toml", ["simulation.duration_s=0.1"])
    sim = Simulator.from_scenario(sc)
    sim.run()
    mission = sim.mission
    mission.fire.step()
    assert np.allclose(mission.grid.wind, [5.0, 0.0])
    mission.swarm.wind_field.set_mean(8.0, 0.0)
    mission.fire.step()
    assert np.allclose(mission.grid.wind, [0.0, -8.0])


def test_same_seed_same_fire_and_flight():
    def run():
        sim = Simulator.from_scenario(load_scenario(FLAT, ["simulation.duration_s=70"]))
        sim.run()
        return sim.mission.grid.ignited_s.copy(), sim.world.state.position.copy(), sim.mission

    a_fire, a_pos, a = run()
    b_fire, b_pos, b = run()
    assert a.detected_s is not None  # past the first detection and assignment
    assert np.array_equal(a_fire, b_fire, equal_nan=True) and np.array_equal(
        a_pos, b_pos, equal_nan=True
    )
    assert a.rebalances == b.rebalances
