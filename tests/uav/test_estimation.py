"""The sensor layer in flight (uav/estimation.py): the estimate, what acts on it, determinism."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from uav_helpers import CONFIG, run

from skyswarm.core.config import SimulationConfig, WorldConfig, load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.uav.estimation import CSV_HEADER, euler_to_quat
from skyswarm.uav.frames import euler_from_matrix, quat_to_matrix
from skyswarm.uav.sensors import SensorsConfig
from skyswarm.uav.swarm import Swarm

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
START = ((0.0, 0.0, 10.0), (4.0, 0.0, 10.0))


def flight(sensors: SensorsConfig, seconds: float = 4.0, seed: int = 1):
    """Two UAVs holding their start spots; (T, 2, 3) true positions and the swarm."""
    sim = Simulator(SimulationConfig(seed=seed), world=WorldConfig())
    config = dataclasses.replace(CONFIG, sensors=sensors)
    swarm = Swarm(sim, config, [1, 2], np.array(START), np.zeros(2), hovering=True)
    pos = run(sim, seconds, lambda: sim.world.state.position[swarm.rows].copy())
    swarm.final = sim.world.state.position[swarm.rows].copy()  # (N, 3) m, true, at the end
    sim.close()  # the Bullet world's memory back now; the arrays stay readable
    return pos, swarm, sim


QRSIM = SensorsConfig(preset="qrsim")


def test_euler_to_quat_inverts_euler_from_matrix() -> None:
    e = np.array([[0.1, -0.2, 3.0], [-0.5, 0.4, -1.2], [0.0, 0.0, 0.0]])
    back = euler_from_matrix(quat_to_matrix(euler_to_quat(e)))
    assert np.allclose(back, e, atol=1e-12)


def test_ideal_builds_no_sensor_layer() -> None:
    _, swarm, _ = flight(SensorsConfig(), 0.01)
    assert swarm.sensors is None and swarm._estimate_kernel is None
    agent = swarm.agents[0]
    assert np.array_equal(agent.sensed_position, agent.position)


def test_sensors_observing_only_leave_the_flight_untouched() -> None:
    # control_on = "truth": the sensors run and draw from rng.sensors only, the controller
    # reads the world, so the trajectory is bit-identical to the ideal flight.
    ideal, _, sim_a = flight(SensorsConfig())
    watched, swarm, sim_b = flight(SensorsConfig(preset="qrsim", control_on="truth"))
    assert np.array_equal(ideal, watched)
    assert swarm.sensors is not None and swarm.sensors.rms_error_m() > 0.01
    for stream in ("mission", "comms", "faults", "environment"):  # untouched streams
        a, b = getattr(sim_a.rng, stream), getattr(sim_b.rng, stream)
        assert a.bit_generator.state == b.bit_generator.state


def test_acting_on_the_estimate_is_deterministic_and_noisy() -> None:
    a, swarm, _ = flight(QRSIM, seed=3)
    b, _, _ = flight(QRSIM, seed=3)
    c, _, _ = flight(QRSIM, seed=4)
    assert np.array_equal(a, b)  # same seed: bit-identical
    assert not np.array_equal(a, c)  # the sensors stream follows the seed
    # the UAVs hold their spots to within the GPS error (~0.2 m), not to rounding
    err = np.linalg.norm(a[-400:] - np.array(START), axis=2)
    assert 0.01 < float(np.sqrt(np.mean(err**2))) < 0.6
    s = swarm.sensors
    true = swarm.final
    assert np.all(np.linalg.norm(s.position - true, axis=1) < 0.8)
    # co-located receivers: the two UAVs' GPS errors (4 m apart) differ by receiver noise
    # only, sqrt(2) 0.02 m x HDOP 1.30 / sqrt(2) = 0.026 m per axis: beyond 0.15 m, odds < 1e-7
    d = s.gps_error[0] - s.gps_error[1]
    assert np.linalg.norm(d[:2]) < 0.15


def test_the_gps_error_moves_the_uav() -> None:
    # A 3 m pseudorange sigma (override) shifts the held spot by metres: the controller
    # acts on the estimate, not on the truth.
    big = SensorsConfig(preset="qrsim", gps=dataclasses.replace(QRSIM.gps, pr_sigma_m=3.0))
    pos, swarm, _ = flight(big, 6.0, seed=2)
    offset = np.linalg.norm(pos[-1, :, :2] - np.array(START)[:, :2], axis=1)
    expected = np.linalg.norm(swarm.sensors.gps_error[:, :2], axis=1)
    assert np.all(offset > 0.5)
    assert offset == pytest.approx(expected, abs=0.5)


def test_bad_sensor_period_is_rejected() -> None:
    from skyswarm.core.schema import ConfigError

    odd = SensorsConfig(preset="qrsim", baro=dataclasses.replace(QRSIM.baro, period_s=0.003))
    with pytest.raises(ConfigError, match="uav.sensors.baro.period_s"):
        flight(odd, 0.01)


def test_hover_qrsim_scenario_reports_errors_and_writes_sensors_csv(tmp_path: Path) -> None:
    scenario = load_scenario(CONFIGS / "hover_qrsim.toml", ["simulation.duration_s=6"])
    sim = Simulator.from_scenario(scenario, tmp_path)
    sim.run()
    metrics = sim.finish()["metrics"]
    sim.close()
    assert 0.01 < metrics["rms_error_m"] < 0.6  # true error from the start spots
    assert 0.01 < metrics["est_rms_error_m"] < 0.6  # estimate vs truth
    lines = (tmp_path / "sensors.csv").read_text().splitlines()
    assert lines[0] == CSV_HEADER
    assert len(lines) == 1 + 4 * 60  # 4 UAVs at 10 Hz for 6 s


@pytest.mark.slow
def test_reference_flocking_coverage_on_qrsim_sensors() -> None:
    # The reference case study with every UAV acting on its estimate: the base station still
    # learns >= 99 % of the cells (seed 1: 99.7 % at 133.1 s, as on the truth), nobody
    # collides, and the members keep more than 1.5 m apart (separation_m is 2 m; GPS errors
    # of co-located receivers are nearly equal, so relative positions stay accurate).
    scenario = load_scenario(CONFIGS / "flocking_coverage.toml", ["uav.sensors.preset='qrsim'"])
    sim = Simulator.from_scenario(scenario)
    sim.run()
    m = sim.finish()["metrics"]
    sim.close()
    assert m["coverage"] >= 0.99
    assert m["true_coverage"] >= 0.99
    assert m["agents_lost"] == 0 and not sim.deaths
    assert m["min_separation_m"] > 1.5


def test_late_gps_fixes_are_applied_against_the_estimate_of_their_time() -> None:
    # Fixes 0.2 s old on arrival (80 ticks) are compared with the estimate of their epoch
    # (81 ticks of history kept), so hovering on them is as good as on fresh fixes (0.1 m).
    late = SensorsConfig(preset="qrsim", gps=dataclasses.replace(QRSIM.gps, latency_s=0.2))
    _, fresh, _ = flight(QRSIM, 4.0, seed=5)
    _, slow, _ = flight(late, 4.0, seed=5)
    assert len(slow.sensors._history) == 81
    assert slow.sensors.rms_error_m() == pytest.approx(fresh.sensors.rms_error_m(), abs=0.1)
    assert slow.sensors.rms_error_m() < 0.6
