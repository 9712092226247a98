"""Sweep files and sweep tables, in-process: validation errors, seeds, run plan, statistics."""

from __future__ import annotations

import csv
import math
import textwrap
from pathlib import Path

import pytest

from skyswarm.app.cli import main
from skyswarm.app.sweep import derive_seed, flatten, load_sweep
from skyswarm.app.sweep_report import SweepTable, aggregate, stats, summary_columns
from skyswarm.core.config import read_toml
from skyswarm.core.schema import ConfigError

ROOT = Path(__file__).resolve().parents[2]
DROP = ROOT / "configs" / "drop_test.toml"


def write_sweep(folder: Path, body: str, head: str = "seeds = 2") -> Path:
    path = folder / "sweep.toml"
    text = f'[sweep]\nscenario = "{DROP.as_posix()}"\nseed = 7\n{head}\n' + textwrap.dedent(body)
    path.write_text(text, encoding="utf-8")
    return path


GRID = """
[grid]
drop_test.height_m = [2.0, 5.0]
"drop_test.mass_kg" = [0.5, 1.0]
"""


def test_grid_times_seeds_gives_one_run_each_in_file_order(tmp_path: Path) -> None:
    sweep = load_sweep(write_sweep(tmp_path, GRID + '[[points]]\n"drop_test.height_m" = 9.0\n'))
    assert sweep.param_keys == ("drop_test.height_m", "drop_test.mass_kg")
    runs = sweep.runs(tmp_path / "out")
    # 2 x 2 grid + 1 explicit point, 2 replicates each; the last grid key varies fastest
    assert [(r.point, r.replicate) for r in runs] == [(p, s) for p in range(5) for s in (0, 1)]
    assert [dict(r.params) for r in runs[::2]] == [
        {"drop_test.height_m": 2.0, "drop_test.mass_kg": 0.5},
        {"drop_test.height_m": 2.0, "drop_test.mass_kg": 1.0},
        {"drop_test.height_m": 5.0, "drop_test.mass_kg": 0.5},
        {"drop_test.height_m": 5.0, "drop_test.mass_kg": 1.0},
        {"drop_test.height_m": 9.0},
    ]
    assert len({r.run for r in runs}) == len({r.seed for r in runs}) == 10
    assert len({r.run_dir for r in runs}) == 10
    assert runs[0].overrides[-1] == f"simulation.seed={runs[0].seed}"


def test_run_seed_depends_on_sweep_seed_point_and_replicate_only() -> None:
    params = {"drop_test.height_m": 2.0, "drop_test.mass_kg": 0.5}
    # A fixed number: catches any change to the derivation (e.g. Python's salted hash())
    assert derive_seed(7, params, 0) == derive_seed(7, dict(reversed(params.items())), 0)
    assert derive_seed(7, params, 0) == 1679454407432029577
    assert derive_seed(7, params, 1) != derive_seed(7, params, 0)
    assert derive_seed(8, params, 0) != derive_seed(7, params, 0)
    assert 0 <= derive_seed(2**32, params, 99) < 2**63


def test_seeds_do_not_depend_on_the_order_of_the_grid(tmp_path: Path) -> None:
    a = load_sweep(write_sweep(tmp_path, GRID)).runs(tmp_path)
    swapped = '[grid]\n"drop_test.mass_kg" = [1.0, 0.5]\ndrop_test.height_m = [5.0, 2.0]\n'
    b = load_sweep(write_sweep(tmp_path, swapped)).runs(tmp_path)
    by_params = {(tuple(sorted(r.params.items())), r.replicate): (r.seed, r.run) for r in a}
    assert {(tuple(sorted(r.params.items())), r.replicate): (r.seed, r.run) for r in b} == (
        by_params
    )


def test_seed_list_gives_those_replicates(tmp_path: Path) -> None:
    sweep = load_sweep(write_sweep(tmp_path, GRID, head="seeds = [3, 10]"))
    assert {r.replicate for r in sweep.runs(tmp_path)} == {3, 10}


def test_config_hash_changes_with_fixed_settings_not_with_output_folder(tmp_path: Path) -> None:
    base = load_sweep(write_sweep(tmp_path, GRID))
    assert [r.config_hash for r in base.runs(tmp_path / "a")] == [
        r.config_hash for r in base.runs(tmp_path / "b")
    ]
    changed = load_sweep(write_sweep(tmp_path, "[fixed]\nagents.count = 3\n" + GRID))
    assert all(
        a.config_hash != b.config_hash for a, b in zip(base.runs(tmp_path), changed.runs(tmp_path))
    )


BAD = [
    # (sweep file body, sweep head, the key the one-line error must name)
    ('[grid]\n"drop_test.heigth_m" = [1.0]\n', "", "grid.drop_test.heigth_m"),
    ("[grid]\ndrop_tset.height_m = [1.0]\n", "", "grid.drop_tset.height_m"),
    ('[grid]\n"drop_test.mass_kg" = [1.0, -2.0]\n', "", "grid.drop_test.mass_kg"),
    ('[fixed]\n"agents.cuont" = 3\n' + GRID, "", "fixed.agents.cuont"),
    ('[[points]]\n"drop_test.size_m" = 0.0\n', "", "points[0].drop_test.size_m"),
    ('[grid]\n"drop_test.height_m" = []\n', "", "grid.drop_test.height_m"),
    ('[grid]\n"drop_test.height_m" = 2.0\n', "", "grid.drop_test.height_m"),
    ("[grid]\n", "", "grid"),
    ("", "", "grid"),
    (GRID, "seeds = []", "sweep.seeds"),
    (GRID, "seeds = [1, 1]", "sweep.seeds"),
    (GRID, "seeds = [-1]", "sweep.seeds"),
    (GRID, "seeds = 0", "sweep.seeds"),
    (GRID, 'seeds = "three"', "sweep.seeds"),
    (GRID, "retries = -1", "sweep.retries"),
    (GRID, "sedes = 3", "sweep.sedes"),
    ('[grid]\n"simulation.seed" = [1, 2]\n', "", "grid.simulation.seed"),
    ("[gird]\na = [1]\n", "", "gird"),
]


@pytest.mark.parametrize(("body", "head", "key"), BAD)
def test_bad_sweep_is_a_one_line_error_naming_the_key_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, head: str, key: str
) -> None:
    path = write_sweep(tmp_path, body, head=head or "seeds = 2")
    with pytest.raises(ConfigError) as info:
        load_sweep(path)
    assert info.value.key == key
    assert info.value.file == str(path)
    assert main(["batch", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{path}: {key} = " in err[0], err
    assert not (tmp_path / "out").exists()  # nothing ran


def test_unknown_key_error_suggests_the_right_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="did you mean 'height_m'"):
        load_sweep(write_sweep(tmp_path, '[grid]\n"drop_test.heigth_m" = [1.0]\n'))


def test_missing_base_scenario_names_the_scenario_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[sweep]\nscenario = "nope.toml"\n[grid]\n"a.b" = [1]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="nope.toml") as info:
        load_sweep(path)
    assert info.value.key == "sweep.scenario"


def test_shipped_sweeps() -> None:
    drop = load_sweep(ROOT / "configs" / "sweeps" / "drop_test.toml")
    assert drop.param_keys == ("drop_test.height_m", "drop_test.mass_kg")
    assert len(drop.runs(ROOT / "results")) == 3 * 2 * 3
    # the flocking sweep only runs once the flocking-coverage mission exists: check its shape
    flocking = read_toml(ROOT / "configs" / "sweeps" / "flocking_loss.toml")
    assert flocking["sweep"]["seeds"] == 5
    assert flatten(flocking["grid"])["comms.channels.radio.loss"] == [0.0, 0.1, 0.3, 0.5]
    # the neighbour-table flights (docs/performance.md): every grid point a valid scenario
    for name, runs in (
        ("neighbour_table_boids", 3 * 2 * 4 * 3),
        ("neighbour_table_vasarhelyi", 64),
    ):
        sweep = load_sweep(ROOT / "configs" / "sweeps" / f"{name}.toml")
        assert sweep.param_keys[-1] == "comms.channels.radio.neighbour_table"
        assert len(sweep.runs(ROOT / "results")) == runs


def test_stats_mean_std_and_student_t_interval() -> None:
    s = stats([1.0, 2.0, 3.0, 4.0])
    std = math.sqrt(5.0 / 3.0)  # sample std (n - 1)
    half = 3.182446305284263 * std / 2.0  # t(0.975, 3 dof) * std / sqrt(4)
    assert s["n"] == 4 and s["mean"] == 2.5
    assert s["std"] == pytest.approx(std, rel=1e-12)
    assert (s["ci95_low"], s["ci95_high"]) == pytest.approx((2.5 - half, 2.5 + half), rel=1e-9)
    assert stats([3.0])["std"] is None and stats([])["mean"] is None


def test_aggregate_groups_by_point_and_skips_failed_runs() -> None:
    rows = [
        {"point": 0, "replicate": 0, "h": 1.0, "status": "ok", "metrics.x": 1.0},
        {"point": 0, "replicate": 1, "h": 1.0, "status": "ok", "metrics.x": 3.0},
        {"point": 1, "replicate": 0, "h": 2.0, "status": "failed", "metrics.x": None},
        {"point": 1, "replicate": 1, "h": 2.0, "status": "ok", "metrics.x": 5.0},
    ]
    agg = aggregate(rows, ["h"])
    assert [(a["point"], a["h"], a["runs"], a["ok"], a["failed"]) for a in agg] == [
        (0, 1.0, 2, 2, 0),
        (1, 2.0, 2, 1, 1),
    ]
    assert agg[0]["metrics.x.mean"] == 2.0 and agg[1]["metrics.x.n"] == 1


def test_summary_columns_put_wall_clock_values_under_timing() -> None:
    summary = {
        "seed": 5,
        "wall_time_s": 0.2,
        "compile_s": 1.5,  # set-up compiling kernels: wall clock too
        "real_time_factor": 10.0,
        "tasks": {"behave": {"mean_ms": 0.1}},
        "metrics": {"coverage": 0.5},
        "deaths_by_cause": {"collision": 2},
        "versions": {"numpy": "2"},
    }
    assert summary_columns(summary) == {
        "timing.wall_time_s": 0.2,
        "timing.compile_s": 1.5,
        "timing.real_time_factor": 10.0,
        "timing.tasks.behave.mean_ms": 0.1,
        "metrics.coverage": 0.5,
        "deaths_by_cause.collision": 2,
    }


def test_sweep_table_grows_columns_and_sorts_at_the_end(tmp_path: Path) -> None:
    table = SweepTable(tmp_path / "sweep.csv", ["point", "replicate"])
    table.add({"point": 1, "replicate": 0, "metrics.a": 0.1})
    table.add({"point": 0, "replicate": 1, "metrics.a": 0.2, "timing.wall_time_s": 1.5})
    table.add({"point": 0, "replicate": 0, "metrics.b": 3})
    with open(tmp_path / "sweep.csv", newline="") as f:
        assert len(list(csv.reader(f))) == 4  # written as the runs come, before finish()
    table.finish()
    with open(tmp_path / "sweep.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [
        ["point", "replicate", "metrics.a", "metrics.b", "timing.wall_time_s"],
        ["0", "0", "", "3", ""],
        ["0", "1", "0.2", "", "1.5"],
        ["1", "0", "0.1", "", ""],
    ]
