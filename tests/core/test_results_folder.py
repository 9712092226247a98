"""A results folder from Python (`run_scenario(..., results_dir=)`, `Simulator.from_scenario`):
new, empty or one a skyswarm run wrote; never a folder of the user's own files, whose
config.toml or summary.json the run's files would replace (core/files.py
`open_results_folder`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import skyswarm
from skyswarm.app.cli import main
from skyswarm.core.files import MARKER
from skyswarm.core.schema import ConfigError
from tests.app.test_results_safety import tree_hash

SHORT = ["simulation.duration_s=0.1", "agents.count=2"]


def test_a_folder_of_the_users_files_is_refused_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / "config.toml").write_text("# the user's own scenario\n")
    (folder / "summary.json").write_text('{"mine": true}\n')
    before = tree_hash(folder)
    with pytest.raises(ConfigError, match="results_dir = .*holds other files") as caught:
        skyswarm.run_scenario("hover", folder, SHORT)
    assert caught.value.value == str(folder)
    assert tree_hash(folder) == before  # no marker, no run file, nothing replaced


def test_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("x")
    with pytest.raises(ConfigError, match="a folder \\(this is a file\\)"):
        skyswarm.run_scenario("hover", path, SHORT)
    assert path.read_text() == "x"


def test_a_new_or_empty_folder_is_marked_and_a_rerun_replaces_its_run(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "new" / "run", tmp_path / "empty"):  # made, then an empty one
        first = skyswarm.run_scenario("hover", folder, SHORT, seed=1)
        marker = json.loads((folder / MARKER).read_text())
        assert marker["run"] == folder.name and marker["scenario"].endswith("hover.toml")
        again = skyswarm.run_scenario("hover", folder, SHORT, seed=2)  # skyswarm's own folder
        assert (first["seed"], again["seed"]) == (1, 2)
        assert json.loads((folder / "summary.json").read_text())["seed"] == 2


def test_the_cli_knows_a_folder_python_wrote(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "run"
    skyswarm.run_scenario("hover", folder, SHORT)
    (folder / "stale.png").write_bytes(b"an old plot")  # skyswarm's folder, an old file in it
    cli = ["run", "hover", "--quiet", "--no-plots", "--duration", "0.1", "--out", str(folder)]
    assert main(cli) == 2  # not empty: as any run folder, only with --overwrite
    assert "--overwrite" in capsys.readouterr().err
    assert main([*cli, "--overwrite"]) == 0  # emptied (its marker says skyswarm wrote it)
    assert not (folder / "stale.png").exists() and (folder / "summary.json").is_file()


def test_a_symlink_in_the_markers_place_is_never_written_through(tmp_path: Path) -> None:
    from skyswarm.core.files import mark_results_folder

    target = tmp_path / "thesis.tex"
    target.write_text("\\section{Intro}\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / MARKER).symlink_to(target)
    mark_results_folder(run, "")  # a sweep's run folder: leaves the symlink alone
    with pytest.raises(ConfigError, match="holds other files"):  # not skyswarm's marker
        skyswarm.run_scenario("hover", run, SHORT)
    assert target.read_text() == "\\section{Intro}\n"
