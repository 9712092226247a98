"""The scripting entry points of the facade: load a scenario (by path or shipped name) and run it.

from skyswarm import run_scenario
summary = run_scenario("flocking_coverage", results_dir="out", seed=3)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skyswarm.core import config
from skyswarm.core.config import ScenarioConfig
from skyswarm.core.resources import named_or_path, shipped
from skyswarm.core.schema import ConfigError


def load_scenario(path_or_name: str | Path, overrides: Iterable[str] = ()) -> ScenarioConfig:
    """A validated scenario from a TOML file or a shipped scenario's name (`"hover"`).

    `overrides` are `key.path=value` strings, as `skyswarm run --set` takes them. A bad file,
    key or value is a one-line `ConfigError` naming the file, the key, the value and what was
    expected.

        from skyswarm import load_scenario

        scenario = load_scenario("hover", ["agents.count=2", "hover.altitude_m=5"])
        print(scenario.agents.count)  # 2
        print(scenario.section("hover").altitude_m)  # 5.0: the mission's own section
        print(scenario.simulation.tick_s)  # 0.0025: the file's value, not overridden
    """
    path = named_or_path(path_or_name, "", Path.cwd())
    if not path.is_file():
        names = ", ".join(shipped())
        raise ConfigError(
            str(path_or_name),
            "(file)",
            str(path_or_name),
            f"an existing TOML file or a shipped scenario ({names})",
        )
    scenario = config.load_scenario(path, overrides)
    load_camera_renderer(scenario)
    return scenario


def load_camera_renderer(scenario: ScenarioConfig) -> None:
    """A scenario whose UAVs carry a camera with the `egl` renderer: import the GUI's renderer
    (gui/sensor_camera.py registers it); without the GUI extra, one line naming it. Runs
    without a camera never import moderngl."""
    from skyswarm.uav.config import UavSection

    uav = scenario.sections.get("uav")
    if not isinstance(uav, UavSection):
        return
    camera = uav.sensors.resolved("camera")
    if not camera.enabled or camera.renderer != "egl":
        return
    try:
        import skyswarm.gui.sensor_camera  # noqa: F401
    except ImportError as exc:
        expected = f"the GUI extra installed: pip install 'skyswarm[gui]' ({exc})"
        raise ConfigError(scenario.file, "uav.sensors.camera.enabled", True, expected) from None


def run_scenario(
    scenario: ScenarioConfig | str | Path,
    results_dir: str | Path | None = None,
    overrides: Iterable[str] = (),
    seed: int | None = None,
) -> dict[str, Any]:
    """Run a scenario headless to its end; returns the summary (also written to `results_dir`
    as summary.json when one is given, with the rest of the results as the run goes).

    `scenario` is a `ScenarioConfig`, a TOML file or a shipped scenario's name; `overrides`
    and `seed` apply to a file or name only. `results_dir` is new, empty, or a folder an
    earlier skyswarm run wrote (its files of the same names are replaced); a folder holding
    other files is refused (ConfigError), nothing written (docs/reliability.md).

    Half a second of two hovering UAVs, recorded in a temporary folder:

        import json
        import tempfile
        from pathlib import Path

        from skyswarm import run_scenario

        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "hover_short"
            overrides = ["simulation.duration_s=0.5", "agents.count=2"]
            summary = run_scenario("hover", out, overrides, seed=3)
            print(summary["outcome"], summary["seed"], summary["alive"])  # target reached 3 2
            print(json.loads((out / "summary.json").read_text())["sim_time_s"])  # 0.5
            print(sorted(p.name for p in out.glob("*.csv")))  # ['events.csv', 'timeseries.csv']
    """
    extra = config.override_list(overrides)
    if seed is not None:
        extra.append(f"simulation.seed={seed}")
    if not isinstance(scenario, ScenarioConfig):
        scenario = load_scenario(scenario, extra)
    elif extra:
        raise ValueError("overrides and seed apply when the scenario is given by path or name")
    else:
        load_camera_renderer(scenario)
    # here, not at the top: the simulator imports numba and the kernels' modules (~0.4 s), which
    # `load_scenario` (`skyswarm validate`, a bad file's one-line error) does not need
    from skyswarm.core.simulator import Simulator

    sim = Simulator.from_scenario(scenario, results_dir)
    try:
        sim.run()
        return sim.finish()
    finally:
        sim.close()


def run_sweep(
    sweep_file: str | Path,
    out: str | Path | None = None,
    workers: int = 1,
    *,
    resume: bool = False,
    plots: bool = False,
) -> Path:
    """Run a sweep file (`skyswarm batch`'s: a base scenario, a grid of key paths, seeds) on
    `workers` local processes; returns its output folder, which holds `sweep.csv` (one row per
    run: parameters, seed, status, outcome, metrics) and `aggregate.csv` (per grid point: mean
    and 95 % interval of each metric). `out` defaults to the sweep's `[sweep] out`.

        import pandas as pd
        from skyswarm import run_sweep

        out = run_sweep("configs/sweeps/drop_test.toml", "sweep_out", workers=2)
        print(pd.read_csv(out / "aggregate.csv"))
    """
    from skyswarm.app.batch import run_batch
    from skyswarm.app.batch_executors import LocalPool
    from skyswarm.app.sweep import load_sweep

    if workers < 1:
        raise ConfigError("", "workers", workers, "an integer >= 1")
    sweep = load_sweep(sweep_file)
    folder = Path(out or sweep.settings.out or Path("results", "sweeps", Path(sweep_file).stem))
    if not resume and ((folder / "sweep.csv").exists() or (folder / "runs").exists()):
        raise ConfigError("", "out", str(folder), "a folder without a sweep (or resume=True)")
    executor = LocalPool(workers)
    try:
        run_batch(sweep, folder, executor, resume, quiet=True, plots=plots)
    finally:
        executor.close()
    return folder
