"""Shared fixtures. Tests run from any working directory; paths are relative to the repo root.

A run that several test files assert on is flown once per session here. The tests that use one
are marked `xdist_group` with the fixture's name, so that under `pytest -n auto --dist
loadgroup` (.ci/run) they land on one worker and the run is flown once in all. The tests of a
module that use one of its module-scoped fixtures (a whole flight, most of them) are grouped
the same way by `pytest_collection_modifyitems` below."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session", autouse=True)
def _scratch_in_pytest_tmp(tmp_path_factory: pytest.TempPathFactory):
    """Leave nothing in the machine's temp folder: stable-baselines3's `learn` makes an empty
    SB3-<time> folder there for its logger unless SB3_LOGDIR names one, and mavsdk_server (a
    child process: the MAVSDK tests and examples) makes a mavsdk-component-metadata-* folder
    in $TMPDIR. Both go under this session's pytest folder, child processes included."""
    scratch = tmp_path_factory.mktemp("scratch")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SB3_LOGDIR", str(scratch / "sb3"))
        mp.setenv("TMPDIR", str(scratch))
        yield scratch


# configs/flocking_split.toml with 30 UAVs and a 60 m radio (seed 1, split_lanes = "shared")
SPLIT_30 = ["agents.count=30", "comms.channels.radio.range_m=60.0"]


@pytest.fixture(scope="session")
def flocking_split_30() -> dict:
    """The summary of the 30-UAV split flock flown to its end (99 % at 158.1 s with
    the safety defaults, seed 1): its own test in
    tests/missions/test_flocking_split.py, and the shared-lanes baseline that the partitioned
    lanes beat in tests/missions/test_flocking_split_lanes.py. Same config and seed, same run."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    sim = Simulator.from_scenario(load_scenario(ROOT / "configs" / "flocking_split.toml", SPLIT_30))
    try:
        sim.run()
        return sim.finish()
    finally:
        sim.close()


SHARED_SCOPES = ("class", "module", "package")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under --dist loadgroup, each test goes to whichever worker is free, so the tests of a
    module that share a module-scoped fixture used to land on both workers and each worker
    flew the fixture's run: every test that uses such a fixture (and has no group of its own)
    joins one `xdist_group` per module, and the run is flown once.

    The tests marked `slow` go first (a stable sort): pytest-xdist hands out the groups,
    largest first, then single tests in this order, and a long test drawn last keeps one
    worker busy while the other has nothing left."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = getattr(info, "name2fixturedefs", {}) if info is not None else {}
        scopes = {getattr(d, "scope", "function") for ds in defs.values() for d in ds}
        if scopes & set(SHARED_SCOPES):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
