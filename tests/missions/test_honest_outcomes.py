"""Outcomes and summaries that read plainly (issue 29, a newcomer's tour): a flock whose order
parameters were never sampled is "not measured", comms_demo carries traffic on both channels,
and the waypoint count of a run is every UAV's."""

from __future__ import annotations

from conftest import ROOT

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

CONFIGS = ROOT / "configs"


def run(name: str, overrides: list[str]) -> dict:
    sim = Simulator.from_scenario(load_scenario(CONFIGS / name, overrides))
    try:
        sim.run()
        return sim.finish()
    finally:
        sim.close()


def test_vasarhelyi_ended_before_settling_is_not_measured() -> None:
    # settle_s = 30 s: a 20 s run samples no order parameter, so it reached no target
    summary = run("vasarhelyi.toml", ["simulation.duration_s=20.0", "agents.count=10"])
    assert summary["metrics"]["samples"] == 0 and summary["metrics"]["settled"] is None
    assert summary["outcome"] == "not measured"


def test_vasarhelyi_after_settling_keeps_the_base_verdict() -> None:
    # samples after settle_s: the verdict is the simulator's again
    settled = ["simulation.duration_s=2.0", "vasarhelyi.settle_s=0.5", "agents.count=10"]
    summary = run("vasarhelyi.toml", settled)
    assert summary["metrics"]["samples"] >= 1
    assert summary["outcome"] in ("target reached", "time limit")


def test_comms_demo_demonstrates_both_channels() -> None:
    summary = run("comms_demo.toml", [])
    radio, link = summary["comms"]["channels"]["radio"], summary["comms"]["channels"]["long_range"]
    # the boxes land after sqrt(2 x 10 m / g) = 1.43 s and the run ends 0.5 s later (1.93 s):
    # 9 boxes broadcast at 10 Hz (t = 0, 0.1, ..., 1.9 s), each frame heard by several boxes
    assert summary["sim_time_s"] < 2.0
    assert radio["sent"] == 9 * 20 and radio["delivered"] > radio["sent"]
    # ... and report at 1 Hz (t = 0, 1 s) to the base station, 0.5 % loss: 1 lost at most
    assert link["sent"] == 9 * 2 and link["delivered"] >= 9 * 2 - 1
    assert summary["comms"]["per_agent"]["0"]["long_range"]["rx"]["delivered"] == link["delivered"]


def test_crossing_counts_every_uavs_waypoints() -> None:
    # 50 UAVs x 2 points (up, then across) = 100 waypoints; 0.5 s reaches none of them
    summary = run("crossing.toml", ["simulation.duration_s=0.5"])
    assert summary["metrics"]["waypoints"] == 100
    assert summary["metrics"]["reached"] == 0


def test_skyswarm_run_comms_demo_prints_each_channels_traffic(tmp_path, capsys) -> None:
    # what a newcomer sees: one line per channel, with the numbers summary.json holds
    from skyswarm.app.cli import main

    main(["run", str(CONFIGS / "comms_demo.toml"), "--out", str(tmp_path / "r"), "--quiet"])
    lines = capsys.readouterr().out.splitlines()
    radio = next(line for line in lines if line.startswith("comms radio: "))
    link = next(line for line in lines if line.startswith("comms long_range: "))
    assert radio.startswith("comms radio: sent 180, ") and "delivered 0" not in radio
    assert link.startswith("comms long_range: sent 18, ") and "delivered 0" not in link
