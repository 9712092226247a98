"""Schema evolution (issue 28): a scenario key that an earlier schema had says where it went,
a file may declare its `schema`, and `skyswarm migrate` rewrites an old file to the current
schema — keeping its comments, never overwriting without --overwrite."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest

from skyswarm.app.cli import main
from skyswarm.core.config import load_scenario
from skyswarm.core.migrations import MOVES, SCHEMA, migrate_data
from skyswarm.core.resources import CONFIGS_DIR
from skyswarm.core.schema import ConfigError

HOVER = (CONFIGS_DIR / "hover.toml").read_text()
OLD_TABLES = (
    "\n# random faults, per flight hour\n[faults.rates]\npropeller_failure = 2.0  # per hour\n"
    "\n[faults.battery]\nenabled = true\ncapacity_wh = 30.0\n"
)
NEW_TABLES = (
    "\n[uav.fault_rates]\npropeller_failure = 2.0\n\n[uav.battery]\nenabled = true\n"
    "capacity_wh = 30.0\n"
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_the_issues_faults_rates_says_where_it_went(tmp_path, capsys):
    old = _write(tmp_path, "old.toml", HOVER + OLD_TABLES)
    assert main(["validate", str(old)]) == 2
    err = _one_line(capsys)
    assert "faults.rates" in err and "moved to [uav.fault_rates] in 0.2" in err, err
    # the command the message gives works as written and leaves the old file as it was
    command = err.split("`")[1]
    assert command == f"skyswarm migrate {old} --out {tmp_path / 'old_schema2.toml'}", err
    before = _digest(old)
    assert main(command.split()[1:]) == 0
    migrated = load_scenario(tmp_path / "old_schema2.toml").as_dict()
    assert migrated["uav"]["fault_rates"]["propeller_failure"] == 2.0
    assert _digest(old) == before
    capsys.readouterr()
    # the same through --set, and a removed key names its replacement
    assert main(["validate", "hover", "--set", "faults.battery.enabled=true"]) == 2
    assert "moved to [uav.battery] in 0.2" in _one_line(capsys)
    assert main(["validate", "hover", "--set", "simulation.speed=2.0"]) == 2
    assert "removed in 0.2 (give `skyswarm view --speed` instead)" in _one_line(capsys)


def test_every_move_of_the_table_is_reported():
    for move in MOVES:
        data = {"mission": {"type": "hover"}}
        table, _, key = move.old.rpartition(".")
        data.setdefault(table, {})[key] = 1.0
        with pytest.raises(ConfigError, match="moved to|removed in") as err:
            from skyswarm.core.config import validate_scenario

            validate_scenario(data, "s.toml")
        assert err.value.key == move.old


@pytest.mark.parametrize("value", ["3", "0", '"2"', "true", "2.0"])
def test_an_unknown_schema_version_is_refused(tmp_path, value, capsys):
    path = _write(tmp_path, "s.toml", f"schema = {value}\n" + HOVER)
    assert main(["validate", str(path)]) == 2
    err = _one_line(capsys)
    assert ": schema = " in err and f"a schema version from 1 to {SCHEMA}" in err, err


def test_schema_current_equals_absent_and_an_old_schema_loads_migrated(tmp_path):
    absent = load_scenario(_write(tmp_path, "a.toml", HOVER + NEW_TABLES))
    current = load_scenario(_write(tmp_path, "b.toml", f"schema = {SCHEMA}\n" + HOVER + NEW_TABLES))
    old = load_scenario(_write(tmp_path, "c.toml", "schema = 1\n" + HOVER + OLD_TABLES))
    assert absent.as_dict() == current.as_dict() == old.as_dict()
    assert old.as_dict()["uav"]["fault_rates"]["propeller_failure"] == 2.0


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_migrate_rewrites_keeping_comments_and_never_overwrites_unasked(tmp_path, capsys):
    old = _write(tmp_path, "old.toml", HOVER + OLD_TABLES)
    before = _digest(old)
    assert main(["migrate", str(old)]) == 2  # in place needs --overwrite
    assert "--overwrite" in _one_line(capsys)
    taken = _write(tmp_path, "taken.toml", "# the user's\n")
    assert main(["migrate", str(old), "--out", str(taken)]) == 2
    _one_line(capsys)
    assert _digest(old) == before and taken.read_text() == "# the user's\n"

    new = tmp_path / "new.toml"
    assert main(["migrate", str(old), "--out", str(new)]) == 0
    out = capsys.readouterr().out
    assert "moved [faults.rates] to [uav.fault_rates]" in out
    assert "moved [faults.battery] to [uav.battery]" in out
    text = new.read_text()
    assert text.startswith(HOVER.splitlines()[0])  # the leading comment stays first
    assert "# random faults, per flight hour" in text and "# per hour" in text
    assert "[uav.fault_rates]" in text and "[faults." not in text
    expected = load_scenario(_write(tmp_path, "by_hand.toml", HOVER + NEW_TABLES))
    assert load_scenario(new).as_dict() == expected.as_dict()
    assert main(["migrate", str(new)]) == 0  # idempotent
    assert "already schema 2; nothing to change" in capsys.readouterr().out
    assert main(["migrate", str(old), "--overwrite"]) == 0  # in place, asked for
    assert old.read_text() == text


def test_migrate_comments_out_a_removed_key_and_falls_back_to_tomli_w(tmp_path, capsys):
    removed = _write(
        tmp_path, "r.toml", HOVER.replace("[simulation]\n", "[simulation]\nspeed = 2\n")
    )
    assert main(["migrate", str(removed), "--overwrite"]) == 0
    assert "dropped simulation.speed" in capsys.readouterr().out
    assert "# speed = 2  # removed in 0.2" in removed.read_text()
    load_scenario(removed)
    inline = _write(tmp_path, "i.toml", HOVER + "\n[faults]\nrates = { propeller_failure = 2.0 }\n")
    assert main(["migrate", str(inline), "--overwrite"]) == 0
    assert "comments of the old file are not kept" in capsys.readouterr().out
    assert load_scenario(inline).as_dict()["uav"]["fault_rates"]["propeller_failure"] == 2.0


def test_migrate_reads_a_header_line_of_thousands_of_spaces_in_linear_time(tmp_path, capsys):
    # a valid file (the line is in a multi-line string) that took the old header pattern 37 s
    # at 2,000 spaces and ~4 min at 4,000 (cubic backtracking); 100,000 now take milliseconds
    text = 'x = """\n[' + " " * 100_000 + 'y\n"""\n' + HOVER + OLD_TABLES
    path = _write(tmp_path, "spaces.toml", text)
    start = time.perf_counter()
    assert main(["migrate", str(path), "--out", str(tmp_path / "new.toml")]) == 0
    assert time.perf_counter() - start < 10.0
    assert "[uav.fault_rates]" in (tmp_path / "new.toml").read_text()


def test_keys_of_an_array_of_tables_are_not_taken_for_the_table_above(tmp_path, capsys):
    # `speed` under [[events]] is no simulation.speed: it stays, and the text is kept
    text = HOVER.replace("[simulation]\n", "[simulation]\nspeed = 2\n") + OLD_TABLES
    text += '\n[[events]]\nat_s = 1.0\naction = "set_condition"\nspeed = 3\n'
    path = _write(tmp_path, "e.toml", text)
    assert main(["migrate", str(path), "--out", str(tmp_path / "n.toml")]) == 0
    out = capsys.readouterr().out
    assert "comments of the old file are not kept" not in out
    new = (tmp_path / "n.toml").read_text()
    assert "# speed = 2  # removed in 0.2" in new and "\nspeed = 3\n" in new


def test_migrate_refuses_a_key_set_in_both_places(tmp_path, capsys):
    both = HOVER + OLD_TABLES + "\n[uav.fault_rates]\npropeller_failure = 1.0\n"
    path = _write(tmp_path, "both.toml", both)
    with pytest.raises(ConfigError, match="one of faults.rates.propeller_failure"):
        migrate_data(
            {
                "faults": {"rates": {"propeller_failure": 2}},
                "uav": {"fault_rates": {"propeller_failure": 1}},
            },
            "both.toml",
        )
    before = _digest(path)
    assert main(["migrate", str(path), "--overwrite"]) == 2
    _one_line(capsys)
    assert _digest(path) == before
