"""The sensor registry (uav/sensors/base.py): a sensor defined here, outside uav/, becomes a
`[uav.sensors.sonar]` table of a scenario, is validated like the built-ins, feeds the estimator
and writes its column to sensors.csv; the built-ins sample in the estimator's input order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.schema import ConfigError, param
from skyswarm.core.simulator import Simulator
from skyswarm.uav.sensors import (
    Sensor,
    Setting,
    Truth,
    register_sensor,
    registered_sensors,
    sampling_order,
    unregister_sensor,
)


@dataclass(frozen=True)
class SonarConfig:
    """downward sonar: height above z = 0 = truth + white noise"""

    enabled: bool | None = param(None, "measure height by sonar")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    sigma_m: float | None = param(None, "white noise, m", ge=0.0)


class Sonar(Sensor):
    """Height (N,) m, fed to the estimator as its altitude input (the barometer's place)."""

    name = "sonar"
    Config = SonarConfig
    defaults = SonarConfig(enabled=False, period_s=0.05, sigma_m=0.01)  # off unless asked
    feeds = "altitude"
    columns = ("sonar_m",)

    def __init__(self, cfg: SonarConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.altitude = truth.position[:, 2].copy()
        self.samples = 0

    def sample(self, tick: int, truth: Truth) -> None:
        noise = self.cfg.sigma_m * self.rng.standard_normal(self.n)
        self.altitude = truth.position[:, 2] + noise
        self.samples += 1

    def record(self) -> np.ndarray:
        return self.altitude[:, None]


@pytest.fixture
def sonar() -> Iterator[type[Sonar]]:
    register_sensor(Sonar)
    yield Sonar
    unregister_sensor("sonar")


HOVER = """
[simulation]
tick_s = 0.0025
duration_s = 3.0
seed = 3

[mission]
type = "missions.hover"

[agents]
count = 2
spacing_m = 4.0

[uav.sensors]
preset = "qrsim"
record_hz = 10.0
"""


def scenario_file(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "sonar.toml"
    path.write_text(HOVER + extra, encoding="utf-8")
    return path


def test_a_sensor_defined_outside_uav_is_configured_by_a_scenario_and_flies(
    sonar: type[Sonar], tmp_path: Path
) -> None:
    # Barometer off, a noiseless sonar at 20 Hz on: the sonar samples 3 s x 20 = 60 times, the
    # estimator takes its altitude from it (the z error is only the IMU propagation between
    # samples, measured 0.8 mm; on the barometer, 0.3 m bias sigma, 0.38 m), and
    # sensors.csv gets its column after the GPS's, equal to the true z (noiseless).
    path = scenario_file(
        tmp_path, "[uav.sensors.baro]\nenabled = false\n[uav.sensors.sonar]\nenabled = true\n"
        "sigma_m = 0.0\nperiod_s = 0.05\n"
    )  # fmt: skip
    scenario = load_scenario(path)
    assert scenario.sections["uav"].sensors.resolved("sonar") == SonarConfig(True, 0.05, 0.0)
    out = tmp_path / "run"
    sim = Simulator.from_scenario(scenario, out)
    sim.run()
    sim.finish()
    sim.close()
    lines = (out / "sensors.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert header[-4:] == ["gps_ex", "gps_ey", "gps_ez", "sonar_m"]
    rows = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    assert len(rows) == 2 * 30  # 2 UAVs at 10 Hz for 3 s
    z, est_z, sonar_m = (rows[:, header.index(k)] for k in ("z", "est_z", "sonar_m"))
    assert np.array_equal(sonar_m, z)  # noiseless, sampled at every recorded tick
    assert np.abs(est_z - z).max() < 0.01


def test_the_sonar_counts_its_samples_and_the_barometer_is_absent(
    sonar: type[Sonar], tmp_path: Path
) -> None:
    path = scenario_file(
        tmp_path, "[uav.sensors.baro]\nenabled = false\n[uav.sensors.sonar]\nenabled = true\n"
    )
    sim = Simulator.from_scenario(load_scenario(path))
    suite = sim.mission.swarm.sensors  # missions.hover flies one swarm
    sim.run()
    sim.close()
    assert suite.sensor("baro") is None
    assert suite.sensor("sonar").samples == 3.0 / 0.05  # one per 20 ticks, 1200 ticks
    assert list(suite.sensors)[-2:] == ["sonar", "proximity"]  # altitude input, then observers


def test_a_registered_sensors_bad_values_are_one_line_config_errors(
    sonar: type[Sonar], tmp_path: Path
) -> None:
    path = scenario_file(tmp_path, "[uav.sensors.sonar]\nsigma_m = -1.0\n")
    with pytest.raises(ConfigError) as err:
        load_scenario(path)
    assert str(err.value) == f"{path}: uav.sensors.sonar.sigma_m = -1.0: expected a value >= 0.0"
    path = scenario_file(tmp_path, "[uav.sensors.sonar]\nsigma = 0.1\n")
    with pytest.raises(ConfigError, match=r"uav.sensors.sonar.sigma = 0.1: expected no such key"):
        load_scenario(path)
    # baro and sonar both on: the estimator fuses one altitude source
    path = scenario_file(tmp_path, "[uav.sensors.sonar]\nenabled = true\n")
    with pytest.raises(ConfigError, match=r"uav.sensors.sonar.enabled = True: .*'baro' already"):
        load_scenario(path)


def test_an_unregistered_sensor_table_is_an_unknown_key(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, "[uav.sensors.sonar]\nenabled = true\n")
    with pytest.raises(ConfigError, match=r"uav.sensors.sonar = .*no such key.*known keys: .*gps"):
        load_scenario(path)


def test_builtins_sample_in_the_estimators_input_order() -> None:
    # Registration order (config tables, start-state draws) vs sampling order (inertial,
    # attitude, heading, position, altitude, then observers): both fixed, so every run draws
    # from the sensors stream in the same order as before the registry.
    names = list(registered_sensors())
    observers = ["proximity", "lidar", "rangefinder", "camera"]
    assert names == ["gps", "baro", "imu", "attitude", "compass", *observers]
    assert sampling_order(names) == ["imu", "attitude", "compass", "gps", "baro", *observers]


def test_a_malformed_sensor_is_refused_at_registration() -> None:
    class NoDefaults(Sonar):
        name = "broken"
        defaults = SonarConfig(enabled=True)  # period_s and sigma_m unset

    with pytest.raises(TypeError, match="defaults leave period_s, sigma_m unset"):
        register_sensor(NoDefaults)

    class Twice(Sonar):
        name = "gps"

    with pytest.raises(ValueError, match="'gps' is registered already"):
        register_sensor(Twice)
    assert "broken" not in registered_sensors()
