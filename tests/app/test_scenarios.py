"""Shipped scenarios and airframes by name or by path: `skyswarm scenarios` lists what travels in
the package, and a scenario's `uav.airframe` names a shipped airframe or a file relative to the
scenario (not to the working directory)."""

from __future__ import annotations

from skyswarm.app.api import load_scenario
from skyswarm.app.cli import main
from skyswarm.core.resources import ASSETS_DIR, CONFIGS_DIR

HOVER = (CONFIGS_DIR / "hover.toml").read_text(encoding="utf-8")
QUAD_X = (CONFIGS_DIR / "airframes" / "quad_x.toml").read_text(encoding="utf-8")


def test_scenarios_lists_every_shipped_scenario_with_its_title(capsys) -> None:
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == sorted(p.stem for p in CONFIGS_DIR.glob("*.toml"))
    # the title is the file's first comment line; hover.toml's is printed beside its name
    title = HOVER.splitlines()[0].lstrip("# ").strip()
    assert f"{'hover':20s} {title}" in lines


def test_airframe_by_shipped_name_and_by_path_relative_to_the_scenario(
    tmp_path, monkeypatch
) -> None:
    mine = tmp_path / "mine"
    (mine / "frames").mkdir(parents=True)
    # a copy of quad_x 0.3 kg heavier (1.5 kg against 1.2), so the test tells the files apart
    heavy = QUAD_X.replace("mass_kg = 1.2 ", "mass_kg = 1.5 ", 1).replace(
        '"../../assets/quadrotor.obj"', f'"{(ASSETS_DIR / "quadrotor.obj").as_posix()}"', 1
    )
    assert heavy.count("1.5 ") == 1 and str(ASSETS_DIR) in heavy
    (mine / "frames" / "heavy.toml").write_text(heavy, encoding="utf-8")
    assert 'airframe = "quad_x"' in HOVER  # the shipped hover names the built-in airframe
    (mine / "by_path.toml").write_text(
        HOVER.replace('airframe = "quad_x"', 'airframe = "frames/heavy.toml"'), encoding="utf-8"
    )
    (mine / "by_name.toml").write_text(HOVER, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative to the scenario file, not the working directory
    by_path = load_scenario(mine / "by_path.toml")
    by_name = load_scenario(mine / "by_name.toml")
    assert by_path.section("uav").load(by_path.base_dir).airframe.mass_kg == 1.5
    assert by_name.section("uav").load(by_name.base_dir).airframe.mass_kg == 1.2
