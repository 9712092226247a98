"""`skyswarm migrate FILE [--out NEW] [--overwrite]`: an old scenario rewritten to the current
schema (core/migrations.py: moved tables go to their new place, removed keys are dropped with a
note, `schema = N` is added).

The file's text is kept — comments, order, layout — when the changes are table headers and
single-line keys (the usual case: `[faults.rates]` becomes `[uav.fault_rates]`, a removed key's
line becomes a comment); the rewritten text is parsed back and must equal the migrated data,
otherwise the migrated data is written by tomli_w (comments are then lost, and it says so).
Nothing is overwritten without --overwrite: not FILE itself, not an existing NEW.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from typing import Any

from skyswarm.app.results_dir import atomic_path, check_new_file
from skyswarm.core.config import read_toml, tomllib
from skyswarm.core.migrations import MOVES, SCHEMA, migrate_data, schema_of

# A table header `[a.b]  # note`: the name is any run of non-bracket characters, checked
# afterwards (`_NAME`); no two parts of the pattern can match the same characters, so a line of
# thousands of spaces is matched in linear time (the lazy `[... ]+?\s*` form took 37 s at 2,000).
_HEADER = re.compile(r"^(\s*)\[([^\[\]#]*)\](\s*(?:#.*)?)$")
_NAME = re.compile(r"[A-Za-z0-9_\-]+(?:\s*\.\s*[A-Za-z0-9_\-]+)*")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*=")


def add_migrate_parser(sub: Any) -> None:
    """Register `skyswarm migrate` on the CLI's subparsers."""
    p = sub.add_parser("migrate", help="rewrite an old scenario file to the current schema")
    p.add_argument("file", type=Path, help="scenario TOML file")
    p.add_argument("--out", type=Path, help="write here (default: FILE itself, with --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace FILE or an existing --out")
    p.set_defaults(func=cmd_migrate)


def cmd_migrate(args: argparse.Namespace) -> int:
    data = read_toml(args.file)
    schema_of(data, str(args.file))
    new, notes = migrate_data(data, str(args.file))
    if not notes and data.get("schema", SCHEMA) == SCHEMA:
        print(f"{args.file}: already schema {SCHEMA}; nothing to change")
        return 0
    out = args.out or args.file
    same = os.path.realpath(out) == os.path.realpath(args.file)
    hint = "--out NEW, or --overwrite to rewrite it" if same else "--overwrite"
    check_new_file(out, args.overwrite, "--out", hint)
    text = args.file.read_text(encoding="utf-8")
    rewritten = rewrite_text(text)
    if _plain(_loads(rewritten)) != _plain(new):
        import tomli_w

        rewritten = tomli_w.dumps(new)
        notes.append("written by tomli_w: the comments of the old file are not kept")
    with atomic_path(out) as tmp:
        tmp.write_text(rewritten, encoding="utf-8")
    for note in notes:
        print(f"  {note}")
    print(f"wrote {out} (schema {SCHEMA}); check it with: skyswarm validate {out}")
    return 0


def rewrite_text(text: str) -> str:
    """`text` with every moved table's header renamed, every removed key's line commented out
    and `schema = SCHEMA` as its first key (after the leading comments)."""
    moved = {m.old: m.new for m in MOVES if m.new is not None}
    removed = {m.old: m for m in MOVES if m.new is None}
    table, lines = "", []
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line.rstrip("\n"))
        name = header.group(2).strip() if header else ""
        if header and _NAME.fullmatch(name):
            table = re.sub(r"\s*\.\s*", ".", name)
            for old, new in moved.items():
                if table == old or table.startswith(old + "."):
                    renamed = new + table[len(old) :]
                    line = f"{header.group(1)}[{renamed}]{header.group(3)}\n"
        elif line.lstrip().startswith("[["):
            table = "[[]]"  # an array of tables: its keys are never a moved table's
        elif key := _KEY.match(line):
            if not table and key.group(1) == "schema":
                continue  # replaced by the current version below
            if f"{table}.{key.group(1)}" in removed:
                move = removed[f"{table}.{key.group(1)}"]
                line = f"# {line.rstrip()}  # removed in {move.version}: {move.note}\n"
        lines.append(line)
    code = [i for i, x in enumerate(lines) if x.strip() and not x.lstrip().startswith("#")]
    at = code[0] if code else len(lines)
    lines.insert(at, f"schema = {SCHEMA}  # scenario schema version (skyswarm migrate)\n\n")
    return "".join(lines)


def _loads(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _plain(data: Any) -> Any:
    """`data` without empty tables (a header left with nothing under it is no difference)."""
    if isinstance(data, dict):
        kept = {k: _plain(v) for k, v in data.items()}
        return {k: v for k, v in kept.items() if v != {}}
    return data
