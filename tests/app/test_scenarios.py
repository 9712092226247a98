"""Shipped scenarios and airframes by name or by path: `skyswarm scenarios` lists what travels in
the package, and a scenario's `uav.airframe` names a shipped airframe or a file relative to the
scenario (not to the working directory)."""

from __future__ import annotations

import pytest

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


FULL_MODEL = [
    "# model: rotor rotor_speed (tau 0.02 s)",
    "# model: drag quadratic (C_d A 0.02, 0.02, 0.04 m^2)",
    "# model: rotor drag k_d 0.0001",
    "# model: ground effect R 0.127 m",
    "# model: landing gear 4 legs, k 600 N/m",
]


@pytest.mark.parametrize("path", sorted(CONFIGS_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_validate_shows_the_full_models_of_every_shipped_scenario(path, capsys) -> None:
    """`skyswarm validate` names the models a scenario runs with (issue 33): every shipped
    scenario flying UAVs uses quad_x with the full flight model (none pins the simpler
    quad_x_simple any more), and its wind line says second-order Dryden."""
    assert main(["validate", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    models = [line for line in lines if line.startswith("# model: ")]
    wind = [line for line in models if line.startswith("# model: wind ")]
    assert len(wind) == 1 and "Dryden order 2" in wind[0]
    text = path.read_text(encoding="utf-8")
    if "[uav]" not in text:  # drop_test, comms_demo: boxes and radios, no airframe
        assert models[0] == "# model: airframe none (this mission flies no UAVs)"
        return
    assert models[0] == "# model: airframe quad_x"
    assert models[1:6] == FULL_MODEL


def test_validate_shows_a_pinned_simpler_model(tmp_path, capsys) -> None:
    """A scenario that pins quad_x_simple and first-order Dryden shows both."""
    pinned = HOVER.replace('airframe = "quad_x"', 'airframe = "quad_x_simple"')
    pinned += "\n[wind]\nenabled = true\nspeed_m_s = 3.0\nturbulence = true\nturbulence_order = 1\n"
    (tmp_path / "pinned.toml").write_text(pinned, encoding="utf-8")
    assert main(["validate", str(tmp_path / "pinned.toml")]) == 0
    models = [x for x in capsys.readouterr().out.splitlines() if x.startswith("# model: ")]
    assert models == [
        "# model: airframe quad_x_simple",
        "# model: rotor thrust_lag (tau 0.02 s)",
        "# model: drag linear (0.25, 0.25, 0.35 N s/m)",
        "# model: rotor drag off",
        "# model: ground effect off",
        "# model: landing gear off",
        "# model: wind 3 m/s from 0 deg, log shear, turbulence Dryden order 1",
    ]
