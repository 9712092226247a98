"""Hopeless requests are refused before work starts (issue 28): a sweep states its run count
and refuses more than --max-runs without enumerating its grid; nested inputs (TOML files and
--set values) have depth and size limits with one-line errors, never a RecursionError."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from skyswarm.app import sweep as sweep_module
from skyswarm.app.cli import main
from skyswarm.app.sweep import MAX_RUNS, load_sweep
from skyswarm.core.config import parse_override
from skyswarm.core.limits import MAX_DEPTH, MAX_SET_CHARS, MAX_VALUES, check_nesting
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.schema import ConfigError

ROOT = Path(__file__).resolve().parents[1]
DEEP = "[" * 50_000 + "]" * 50_000  # the issue's case: 50,000 brackets


def _sweep(tmp_path: Path, grid: str, seeds: str = "1") -> Path:
    path = tmp_path / "big.toml"
    path.write_text(
        f'[sweep]\nscenario = "{CONFIGS_DIR / "drop_test.toml"}"\nseeds = {seeds}\n[grid]\n{grid}'
    )
    return path


def _never_enumerate(monkeypatch) -> None:
    def refuse(*axes):
        raise AssertionError("the grid was enumerated")

    monkeypatch.setattr(sweep_module.itertools, "product", refuse)


def test_a_million_run_sweep_is_counted_and_refused_at_once(tmp_path, monkeypatch, capsys):
    values = "[" + ", ".join(str(0.5 + i * 1e-3) for i in range(1000)) + "]"
    path = _sweep(tmp_path, f"drop_test.height_m = {values}\ndrop_test.mass_kg = {values}\n")
    _never_enumerate(monkeypatch)
    start = time.perf_counter()
    assert main(["batch", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert time.perf_counter() - start < 10.0  # parsing 2,000 numbers, not 10^6 runs
    out, err = capsys.readouterr()
    assert "sweep: 1000000 runs (1000000 points x 1 replicates)" in out
    assert err.count("\n") == 1 and f"at most --max-runs {MAX_RUNS}" in err, err
    assert ": grid = '1000000 runs'" in err, err
    assert not (tmp_path / "out").exists()  # refused before the output folder


def test_replicates_count_too_and_the_cap_is_exact(tmp_path, monkeypatch):
    path = _sweep(tmp_path, "drop_test.height_m = [2.0, 5.0]\n", seeds="1_000_000_000_000")
    _never_enumerate(monkeypatch)
    with pytest.raises(ConfigError, match="2000000000000 runs") as err:
        load_sweep(path)
    assert err.value.key == "sweep.seeds"  # two points: the replicates make it hopeless
    monkeypatch.undo()
    six = _sweep(tmp_path, "drop_test.height_m = [2.0, 5.0]\n", seeds="3")  # 2 x 3 = 6 runs
    with pytest.raises(ConfigError, match="at most --max-runs 5 runs"):
        load_sweep(six, max_runs=5)
    said = []
    assert len(load_sweep(six, max_runs=6, announce=said.append).runs(tmp_path)) == 6
    assert said == ["sweep: 6 runs (2 points x 3 replicates)"]


def test_max_runs_must_be_positive(tmp_path, capsys):
    path = _sweep(tmp_path, "drop_test.height_m = [2.0]\n")
    assert main(["batch", str(path), "--max-runs", "0", "--out", str(tmp_path / "o")]) == 2
    assert "--max-runs = 0: expected an integer >= 1" in capsys.readouterr().err


def test_50000_brackets_in_set_and_in_a_file_are_one_line_through_the_cli(tmp_path):
    scn = tmp_path / "deep.toml"
    scn.write_text(f'[mission]\ntype = "hover"\n[simulation]\nseed = {DEEP}\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    for argv in (["validate", "hover", "--set", f"simulation.seed={DEEP}"], ["validate", str(scn)]):
        r = subprocess.run(
            [sys.executable, "-m", "skyswarm.app.cli", *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr[-500:]
        assert r.stderr.count("\n") == 1, r.stderr[-500:]
        assert f"nested at most {MAX_DEPTH} deep" in r.stderr


@pytest.mark.parametrize("opening", ["[", "{a = "])
def test_nesting_past_the_limit_in_a_file_names_the_key(tmp_path, opening, capsys):
    closing = "]" if opening == "[" else "}"
    # the top table is depth 0, [simulation] 1, seed's value 2: n brackets put the leaf at n + 2
    for n in (MAX_DEPTH - 2, MAX_DEPTH - 1):
        scn = tmp_path / "s.toml"
        scn.write_text(
            f'[mission]\ntype = "hover"\n[simulation]\nseed = {opening * n}1{closing * n}\n'
        )
        assert main(["validate", str(scn)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "simulation.seed" in err, err
        if n + 2 > MAX_DEPTH:
            assert f"nested {MAX_DEPTH + 1} deep" in err, err
        else:  # within the limit: the ordinary type error of seed
            assert "nested" not in err and "an integer" in err, err


def test_check_nesting_edges():
    value: list = [1]
    for _ in range(MAX_DEPTH - 1):
        value = [value]
    check_nesting(value, "f")  # the outer list at depth 0, the leaf at MAX_DEPTH
    with pytest.raises(ConfigError, match=f"nested {MAX_DEPTH + 1} deep"):
        check_nesting([value], "f")
    check_nesting(list(range(MAX_VALUES - 1)), "f")  # the list itself counts: MAX_VALUES
    with pytest.raises(ConfigError, match=f"more than {MAX_VALUES} values"):
        check_nesting(list(range(MAX_VALUES)), "f")


def test_a_set_value_longer_than_the_limit_is_refused_unparsed():
    assert parse_override("a.b=" + "1" * 10)[1] == 1111111111
    with pytest.raises(ConfigError, match=f"at most {MAX_SET_CHARS} characters"):
        parse_override("a.b=" + "1" * (MAX_SET_CHARS + 1))


LONG = "x" * 300  # longer than a file name may be (255 bytes): Path.is_file raises, not False


@pytest.mark.parametrize(
    ("scenario", "key"),
    [
        ("hover", "uav.airframe"),
        ("hover", "world.terrain"),
        ("hover", "world.heightfield"),
        ("survey", "flight_plan.plan"),
    ],
)
def test_a_file_name_too_long_for_the_filesystem_is_one_line(scenario, key, capsys):
    # found by tools/fuzz_inputs.py: an OSError (ENAMETOOLONG) traceback from is_file()
    assert main(["validate", scenario, "--set", f'{key}="{LONG}.toml"']) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and key in err, err


@pytest.mark.parametrize(
    ("scenario", "setting", "key"),
    [
        ("survey", 'flight_plan.plan="a\\u0000b.toml"', "flight_plan.plan"),  # NUL: resolve()
        ("wildfire_flat", "fire.cell_m=1e-300", "fire.cell_m"),  # OverflowError: cell count
        ("wildfire_hill", 'world.terrain="nope.obj"', "world.terrain"),  # trimesh ValueError
        # not a mesh at all: trimesh's NotImplementedError (fuzz seed 2811, #40648)
        ("wildfire_hill", 'world.terrain="../README.md"', "world.terrain"),
    ],
)
def test_more_fuzz_findings_are_one_line(scenario, setting, key, capsys):
    # each raised something other than ConfigError in tools/fuzz_inputs.py's 50,000 configs
    assert main(["validate", scenario, "--set", setting]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and key in err, err


def test_a_results_file_nested_50000_deep_is_one_line(tmp_path, capsys):
    from skyswarm.core.limits import loads_json

    assert loads_json('{"a": [[1, 2]]}', "f.json") == {"a": [[1, 2]]}
    with pytest.raises(ConfigError, match=f"nested at most {MAX_DEPTH} deep"):
        loads_json(DEEP, "run/summary.json")  # was a RecursionError from json's decoder
    with pytest.raises(ValueError, match="Expecting"):
        loads_json("{", "f.json")  # malformed is the caller's to name
    # the KML export reads a flight-plan run's flight_plan.json (a run someone sent you)
    run = tmp_path / "run"
    assert main(["run", "survey", "--quiet", "--duration", "0.5", "--out", str(run)]) == 5
    (run / "flight_plan.json").write_text(DEEP)
    capsys.readouterr()
    assert main(["export", str(run), "--kml", str(tmp_path / "x.kml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "flight_plan.json" in err and "nested at most" in err, err
    assert not (tmp_path / "x.kml").exists()


def test_a_fall_through_cycle_is_named_at_the_jump_that_closes_it(tmp_path, capsys):
    # a falls through to b, b jumps back: the key named is b's `next` (was legs[0].kind = 'TF')
    (tmp_path / "p.toml").write_text(
        '[[stages]]\nkind = "takeoff"\nlegs = [{kind = "takeoff", altitude_m = 10.0}]\n'
        '[[stages]]\nkind = "mission"\nlegs = [{kind = "TF", id = "a", to = [5.0, 0.0]}, '
        '{kind = "TF", id = "b", to = [5.0, 0.0], next = "a"}]\n'
    )
    scn = tmp_path / "s.toml"
    scn.write_text(
        '[mission]\ntype = "missions.flight_plan"\n[agents]\ncount = 1\n'
        '[uav]\nairframe = "quad_x"\n[flight_plan]\nplan = "p.toml"\n'
    )
    assert main(["validate", str(scn)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "p.toml: stages[1].legs[1].next = 'a': expected no cycle of zero-length legs" in err
    assert "(a -> b -> a all to the fix [5.0, 0.0, 10.0]" in err


@pytest.fixture(scope="module")
def hover_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("deep") / "run"
    assert main(["run", "hover", "--quiet", "--duration", "0.5", "--out", str(run)]) in (0, 5)
    return run


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("trajectory.json", ["export", "{run}", "--csv", "{tmp}/x.csv"]),
        ("trajectory.json", ["plot", "{run}"]),
        ("trajectory.json", ["replay", "{run}", "--video", "{tmp}/x.mp4"]),
    ],
)
def test_a_run_header_nested_50000_deep_is_one_line(hover_run, tmp_path, capsys, name, command):
    # a run someone sent you: export, plot and replay read trajectory.json first (each was a
    # RecursionError traceback from json's decoder)
    import shutil

    run = tmp_path / "run"
    shutil.copytree(hover_run, run)
    (run / name).write_text(DEEP)
    capsys.readouterr()
    args = [a.format(run=run, tmp=tmp_path) for a in command]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err and "nested at most" in err, err


def test_load_results_and_read_array_log_refuse_deep_files_by_name(hover_run, tmp_path):
    import shutil

    from skyswarm.core.array_log import read_array_log
    from skyswarm.core.results import load_results

    run = tmp_path / "run"
    shutil.copytree(hover_run, run)
    (run / "summary.json").write_text(DEEP)
    with pytest.raises(ConfigError, match="summary.json.*nested at most"):
        load_results(run)
    (run / "arrays").mkdir()
    (run / "arrays" / "lidar.json").write_text(DEEP)
    with pytest.raises(ConfigError, match="lidar.json.*nested at most"):
        read_array_log(run, "lidar")
