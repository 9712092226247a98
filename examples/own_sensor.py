"""Your own sensor model: a downward sonar (height above z = 0 with white noise) registered as
`[uav.sensors.sonar]`, switched on in a scenario built in Python, its readings recorded in
sensors.csv beside the truth and read back with pandas.

    python examples/own_sensor.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

import skyswarm
from skyswarm.extend import Sensor, Setting, Truth, param, register_sensor

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 3))


@dataclass(frozen=True)
class SonarConfig:
    """[uav.sensors.sonar]: height above ground = truth + white noise."""

    enabled: bool | None = param(None, "measure height by sonar")
    period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
    sigma_m: float | None = param(None, "white noise, m", ge=0.0)


@register_sensor
class Sonar(Sensor):
    name = "sonar"
    Config = SonarConfig
    defaults = SonarConfig(enabled=False, period_s=0.05, sigma_m=0.02)
    columns = ("sonar_m",)

    def __init__(self, cfg: SonarConfig, setting: Setting, truth: Truth) -> None:
        super().__init__(cfg, setting, truth)
        self.height = truth.position[:, 2].copy()  # (N,) m

    def sample(self, tick: int, truth: Truth) -> None:
        self.height = truth.position[:, 2] + self.cfg.sigma_m * self.rng.standard_normal(self.n)

    def record(self) -> np.ndarray:
        return self.height[:, None]


def main() -> None:
    scenario = skyswarm.scenario_from_dict(
        {
            "simulation": {"duration_s": SECONDS, "seed": 7},
            "mission": {"type": "missions.hover"},
            "agents": {"count": 2, "layout": "line", "spacing_m": 3.0},
            "uav": {"sensors": {"sonar": {"enabled": True, "sigma_m": 0.05}, "record_hz": 10.0}},
        }
    )
    out = Path("sonar_run")
    skyswarm.run_scenario(scenario, results_dir=out)
    rows = pd.read_csv(out / "sensors.csv")
    error = rows["sonar_m"] - rows["z"]
    print(f"{len(rows)} sonar readings, error mean {error.mean():+.3f} m, std {error.std():.3f} m")


if __name__ == "__main__":
    main()
