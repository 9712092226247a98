"""Scenario schema versions: what moved or went between them, and the migration of old data.

A scenario file may say which schema it is written for with a top-level `schema = N`; a file
without one is read as the current schema (`SCHEMA`). Keys that an earlier schema had and the
current one moved or removed are listed in `MOVES`: in a current-schema file they are one-line
errors saying where the key went ("moved to [uav.fault_rates] in 0.2"); a file that declares an
older schema is migrated in memory first (`migrate_data`, also behind `skyswarm migrate`).

    data = {"schema": 1, "faults": {"rates": {"propeller_failure": 2.0}}}
    new, notes = migrate_data(data, "old.toml")
    new["uav"]["fault_rates"]  # {"propeller_failure": 2.0}; new["schema"] == SCHEMA

Schema history: 1 = skyswarm 0.1; 2 = skyswarm 0.2 (quadrotor faults and battery moved from
[faults] to [uav], Bullet damping and the view speed left the [simulation] table).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skyswarm.core.schema import ConfigError

SCHEMA = 2  # the schema this skyswarm reads and writes


@dataclass(frozen=True)
class Move:
    """`old` (a dotted key path: a table or a key) went to `new` (None: removed) in skyswarm
    `version`, schema `schema`; `note` says what replaces a removed key."""

    old: str
    new: str | None
    version: str
    schema: int
    note: str = ""

    def message(self, file: str) -> str:
        """The `expected` of the error; the command it gives works as written (an in-place
        migrate needs --overwrite, so it names a new file)."""
        new_file = str(Path(file).with_name(f"{Path(file).stem}_schema{SCHEMA}.toml"))
        fix = (
            f"`skyswarm migrate {file} --out {new_file}` writes the file in the current schema"
            if file
            else "see docs/reliability.md"
        )
        if self.new is None:
            return f"no {self.old}: removed in {self.version} ({self.note})"
        return f"no {self.old}: moved to [{self.new}] in {self.version} ({fix})"


MOVES: tuple[Move, ...] = (
    Move("faults.rates", "uav.fault_rates", "0.2", 2),
    Move("faults.battery", "uav.battery", "0.2", 2),
    Move("simulation.linear_damping", None, "0.2", 2, "drag is modelled by the airframe"),
    Move("simulation.angular_damping", None, "0.2", 2, "drag is modelled by the airframe"),
    Move("simulation.speed", None, "0.2", 2, "give `skyswarm view --speed` instead"),
)


def schema_of(data: Mapping[str, Any], file: str) -> int:
    """The file's declared schema (SCHEMA when absent); ConfigError for an unknown one."""
    value = data.get("schema", SCHEMA)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= SCHEMA:
        raise ConfigError(
            file, "schema", value, f"a schema version from 1 to {SCHEMA} (newer: a newer skyswarm)"
        )
    return value


def check_schema(data: Mapping[str, Any], file: str) -> dict[str, Any]:
    """The scenario data to validate, without its `schema` key: a current-schema file as it is
    (any key of `MOVES` is a ConfigError saying where it went), an older one migrated."""
    version = schema_of(data, file)
    if version < SCHEMA:
        data, _ = migrate_data(data, file)
    for move in MOVES:
        found = _get(data, move.old)
        if found is not _ABSENT:
            raise ConfigError(file, move.old, found, move.message(file))
    return {k: v for k, v in data.items() if k != "schema"}


def migrate_data(data: Mapping[str, Any], file: str) -> tuple[dict[str, Any], list[str]]:
    """A copy of `data` in the current schema, with a note per change. Moved tables merge into
    their new place (a key set in both is a ConfigError); removed keys are dropped (the note
    says what replaces them)."""
    out = copy.deepcopy(dict(data))
    notes = []
    for move in MOVES:
        value = _pop(out, move.old)
        if value is _ABSENT:
            continue
        if move.new is None:
            notes.append(f"dropped {move.old}: removed in {move.version} ({move.note})")
            continue
        _merge(out, move.new, value, move.old, file)
        notes.append(f"moved [{move.old}] to [{move.new}]")
    out.pop("schema", None)
    return {"schema": SCHEMA, **out}, notes


_ABSENT = object()


def _get(data: Mapping[str, Any], path: str) -> Any:
    node: Any = data
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node


def _pop(data: dict[str, Any], path: str) -> Any:
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    if not isinstance(node, dict) or last not in node:
        return _ABSENT
    value = node.pop(last)
    if parents and not node:  # an emptied table goes with it: [faults] with only rates
        _pop(data, ".".join(parents))
    return value


def _merge(data: dict[str, Any], path: str, value: Any, old: str, file: str) -> None:
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(file, path, node, f"a table to move [{old}] into")
    if last not in node:
        node[last] = value
        return
    if not isinstance(node[last], dict) or not isinstance(value, dict):
        raise ConfigError(file, path, node[last], f"one of {old} and {path}, not both")
    for key, v in value.items():
        if key in node[last]:
            raise ConfigError(file, f"{path}.{key}", v, f"one of {old}.{key} and {path}.{key}")
        node[last][key] = v
