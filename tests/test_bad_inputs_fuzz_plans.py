"""The input fuzz of tools/fuzz_inputs.py at a CI size (the full one is 50,000 configs and
2,000 flight plans: `python tools/fuzz_inputs.py`): mutated scenarios through the dict, TOML
text and --set paths, random flight plans validated and a few flown; only one-line
ConfigErrors, no other exception, no hang."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_inputs", ROOT / "tools" / "fuzz_inputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_small_fuzz_of_configs_and_flight_plans(tmp_path):
    fuzz = _fuzz_module()
    with fuzz.alarms():  # the per-example hang alarms (CPU and wall time)
        configs = fuzz.fuzz_configs(300, seed=1, tmp=tmp_path)
        plans = fuzz.fuzz_plans(300, fly=5, seed=1)
    assert configs["failures"] == 0 and plans["failures"] == 0, (configs, plans)
    assert configs["examples"] >= 250  # a few TOML dumps of unwritable values are skipped
    assert configs["config_errors"] > configs["examples"] // 2  # mutations mostly break one
    assert plans["examples"] == 300 and plans["accepted"] >= 5  # some plans are valid ...
    assert plans["flown"] == 5 and plans["flight_failures"] == 0  # ... and fly
