"""Comms configuration, channel-model conformance, the range-query kernel, run integration."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.comms.channels import (
    DEFAULT_CHANNELS,
    LOSS_MODELS,
    ChannelConfig,
    CommsConfig,
    LossModel,
)
from skyswarm.core.comms.dispatcher import FATES, BaseStation, attach_comms
from skyswarm.core.comms.fates import neighbours_within, neighbours_within_reference
from skyswarm.core.config import load_scenario, validate_scenario
from skyswarm.core.schema import ConfigError
from skyswarm.core.simulator import Simulator

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_shipped_defaults_are_radio_and_long_range():
    cfg = CommsConfig()
    assert list(cfg.channels) == ["radio", "long_range"]
    assert cfg.channels["radio"].range_m == 100.0
    assert math.isinf(cfg.channels["long_range"].range_m)
    assert cfg.channels["long_range"].link == "base_station"


def test_channel_tables_are_laid_over_the_defaults():
    cfg = CommsConfig.from_dict({"channels": {"radio": {"latency_s": 0.01}, "optical": {}}})
    radio = cfg.channels["radio"]
    assert radio.latency_s == 0.01 and radio.range_m == DEFAULT_CHANNELS["radio"].range_m
    assert cfg.channels["optical"] == ChannelConfig()  # a new channel starts from the defaults
    assert list(cfg.channels) == ["radio", "long_range", "optical"]


def test_demo_scenario_loads_with_both_channels_and_a_base_station():
    sc = load_scenario(CONFIGS / "comms_demo.toml")
    radio, long_range = sc.comms.channels["radio"], sc.comms.channels["long_range"]
    assert (radio.loss_model, radio.range_m, radio.half_loss_distance_m) == (
        "rayleigh",
        100.0,
        80.0,
    )
    assert math.isinf(long_range.range_m) and long_range.latency_s == 0.05
    assert [(b.id, b.position) for b in sc.comms.base_stations] == [(0, (0.0, -50.0, 2.0))]


@pytest.mark.parametrize(
    ("table", "key", "expected"),
    [
        ({"radio": {"latency_s": 0.004}}, "comms.channels.radio.latency_s", "whole number"),
        ({"radio": {"jitter_s": 0.001}}, "comms.channels.radio.jitter_s", "whole number"),
        ({"radio": {"los": 0.1}}, "comms.channels.radio.los", "did you mean 'loss'"),
        ({"radio": {"loss": 1.5}}, "comms.channels.radio.loss", "<= 1.0"),
        ({"radio": {"loss_model": "raileigh"}}, "comms.channels.radio.loss_model", "rayleigh"),
        ({"radio": 3}, "comms.channels.radio", "a channel table"),
    ],
)
def test_bad_channel_values_name_file_key_and_expectation(table, key, expected):
    data = {"mission": {"type": "missions.drop_test"}, "comms": {"channels": table}}
    with pytest.raises(ConfigError) as err:
        sc = validate_scenario(data, "s.toml")
        Simulator.from_scenario(sc)  # tick multiples are checked when the dispatcher is built
    assert err.value.file == "s.toml" and err.value.key == key
    assert expected in str(err.value)


def test_base_station_id_must_not_clash_with_an_agent():
    data = {
        "mission": {"type": "missions.drop_test"},
        "agents": {"count": 2},
        "comms": {"base_stations": [{"id": 2, "position": [0, 0]}]},
    }
    with pytest.raises(ConfigError, match=r"comms.base_stations\[0\].id = 2"):
        Simulator.from_scenario(validate_scenario(data, "s.toml"))


@pytest.mark.parametrize("name", sorted(LOSS_MODELS))
def test_every_loss_model_matches_its_one_frame_reference(name: str):
    cfg = ChannelConfig(loss=0.05, loss_model=name, half_loss_distance_m=30.0)
    model = LOSS_MODELS[name](cfg)
    assert isinstance(model, LossModel) and model.name == name
    d = np.linspace(0.0, 300.0, 61)
    p = model.probability(d)
    assert p.shape == d.shape and np.all((p >= 0) & (p <= 1))
    ref = np.array([model.probability_one(float(x)) for x in d])
    np.testing.assert_allclose(p, ref, rtol=0, atol=1e-15)
    assert p[0] == pytest.approx(0.05)  # the base loss at 0 m, whatever the model


def test_rayleigh_formula_values():
    # p(d) = 1 - 0.9 exp(-ln 2 (d / 30)^2): 0.1 at 0 m, 0.55 at 30 m, 1 - 0.9 / 16 at 60 m.
    cfg = ChannelConfig(loss=0.1, loss_model="rayleigh", half_loss_distance_m=30.0)
    p = LOSS_MODELS["rayleigh"](cfg).probability(np.array([0.0, 30.0, 60.0]))
    np.testing.assert_allclose(p, [0.1, 0.55, 1 - 0.9 / 16], atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("agents", "broadcasts", "pairs"), [(400, 50, 100), (60, 12, 10)])
def test_range_query_kernel_matches_brute_force(seed: int, agents: int, broadcasts: int, pairs):
    # 400 agents: the KD-tree; 60 (under BRUTE_FORCE_PAIRS pairs): every pair's distance
    rng = np.random.default_rng(seed)
    side = 200.0 * np.sqrt(agents / 400)
    pos = rng.uniform(0, side, (agents, 3))
    pos[::37] = np.nan  # agents without a position are never candidates
    candidates = np.flatnonzero(np.isfinite(pos).all(axis=1))[::2]
    origins = rng.uniform(0, side, (broadcasts, 3))
    got = neighbours_within(pos, candidates, origins, 35.0)
    ref = neighbours_within_reference(pos, candidates, origins, 35.0)
    assert len(ref[0]) > pairs
    for g, r in zip(got, ref):
        np.testing.assert_array_equal(g, r)


def test_range_query_tree_and_pairs_agree_exactly_at_the_range(monkeypatch):
    # receivers exactly 35 m away (on an axis, and a 21-28-35 triangle) are within range, one a
    # hair beyond is not, whichever search runs
    from skyswarm.core.comms import fates

    pos = np.array(
        [[0.0, 0.0, 0.0], [35.0, 0.0, 0.0], [21.0, 28.0, 0.0], [0.0, 0.0, -35.0],
         [0.0, np.nextafter(35.0, 99.0), 0.0], [10.0, 10.0, 10.0]]
    )  # fmt: skip
    candidates, origins = np.arange(len(pos)), pos[[0, 5]]
    monkeypatch.setattr(fates, "BRUTE_FORCE_PAIRS", 0)
    tree = neighbours_within(pos, candidates, origins, 35.0)
    monkeypatch.setattr(fates, "BRUTE_FORCE_PAIRS", 10**9)
    pairs = neighbours_within(pos, candidates, origins, 35.0)
    for t, p in zip(tree, pairs):
        np.testing.assert_array_equal(t, p)
    assert pairs[1][pairs[0] == 0].tolist() == [0, 1, 2, 3, 5]


def test_run_writes_comms_counts_to_summary_and_time_series(tmp_path: Path):
    far = "comms.base_stations=[{id = 0, position = [0.0, -500.0]}]"  # out of radio range
    quiet = ["drop_test.beacon_hz=0.0", "drop_test.telemetry_hz=0.0"]  # the test's own traffic
    sc = load_scenario(CONFIGS / "comms_demo.toml", ["simulation.duration_s=1.0", far, *quiet])
    sim = Simulator.from_scenario(sc, results_dir=tmp_path)
    (bs,) = sim.dispatcher.base_stations
    assert isinstance(bs, BaseStation) and sim.agents[0] is bs
    boxes = sim.mission.boxes
    for box in boxes:  # 10 Hz beacons, and 1 Hz telemetry to the base station
        box.every(0.1, lambda b=box: b.transceiver.broadcast(b.id))
        box.every(1.0, lambda b=box: b.transceiver.send(bs, "telemetry", channel="long_range"))
    sim.run(1.0)
    summary = sim.finish()
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    radio = on_disk["comms"]["channels"]["radio"]
    assert radio == summary["comms"]["channels"]["radio"]
    assert radio["sent"] == 9 * 10  # 9 boxes x 10 beacons in 1 s (ticks 0, 40, ..., 360)
    # 3 x 3 grid at 40 m, pairs within 100 m: 12 at 40 m, 8 at 56.6 m, 6 at 80 m, 8 at 89.4 m
    # (the 2 at 113 m are out of range): 2 x 34 = 68 copies a round, 10 rounds. Every
    # broadcast addresses the 9 other alive agents (8 boxes and the base station 500 m
    # away): the 81 - 68 = 13 copies a round not reached are out of range.
    assert radio["addressed"] == 10 * 81
    assert radio["out_of_range"] == 10 * 13
    assert radio["lost_on_air"] > 0 and radio["delivered"] > 0
    assert on_disk["comms"]["channels"]["long_range"]["sent"] == 9
    assert on_disk["comms"]["per_agent"]["0"]["long_range"]["rx"]["addressed"] == 9
    with open(tmp_path / "timeseries.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    for ch in ("radio", "long_range"):
        for fate in (*FATES, "in_flight"):
            assert f"comms.{ch}.{fate}" in rows[0]
    assert int(rows[-1]["comms.radio.sent"]) == 90
    sim.close()


def test_attach_to_a_simulator_built_by_hand():
    sim = Simulator()
    d = attach_comms(sim)
    assert sim.dispatcher is d and [c.name for c in d.channels] == ["radio", "long_range"]
    assert d.channels[0].latency_ticks == 2 and d.channels[1].latency_ticks == 20
    assert "comms" in sim.summary()
