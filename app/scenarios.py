"""Scenario arguments shared by the commands, and the shipped-scenario commands.

`skyswarm run hover` runs the shipped scenario `hover` from any directory: a CONFIG argument that
is not an existing file and has no suffix or separator is looked up among the scenarios that
travel in the package (`skyswarm scenarios` lists them, `skyswarm init NAME` copies one into the
working directory for editing).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from skyswarm.app.api import load_scenario
from skyswarm.core.config import ScenarioConfig
from skyswarm.core.resources import shipped
from skyswarm.core.schema import ConfigError


def scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", type=Path, help="scenario TOML file, or a shipped scenario's name")
    p.add_argument("--seed", type=int, help="override simulation.seed")
    p.add_argument("--duration", type=float, help="override simulation.duration_s (s)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override any key, e.g. --set agents.count=20 (repeatable; value read as TOML)",
    )


def load_args(args: argparse.Namespace) -> ScenarioConfig:
    """The scenario of a command's arguments, with --seed, --duration and --set applied."""
    overrides = list(args.overrides)
    if args.seed is not None:
        overrides.append(f"simulation.seed={args.seed}")
    if args.duration is not None:
        overrides.append(f"simulation.duration_s={args.duration!r}")
    return load_scenario(args.config, overrides)


def add_scenario_parsers(sub: Any) -> None:
    """`skyswarm scenarios` and `skyswarm init NAME`."""
    lst = sub.add_parser("scenarios", help="list the shipped scenarios")
    lst.set_defaults(func=cmd_scenarios)
    init = sub.add_parser("init", help="copy a shipped scenario into the working directory")
    init.add_argument("name", help="shipped scenario (see `skyswarm scenarios`)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=cmd_init)


def cmd_scenarios(args: argparse.Namespace) -> int:
    for name, path in shipped().items():
        print(f"{name:20s} {_description(path)}")
    return 0


def _description(path: Path) -> str:
    """The scenario file's first comment line (its title), without the '#'."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


def cmd_init(args: argparse.Namespace) -> int:
    found = shipped()
    if args.name not in found:
        raise ConfigError("", "init", args.name, f"a shipped scenario ({', '.join(found)})")
    target = Path.cwd() / f"{args.name}.toml"
    if target.exists() and not args.force:
        raise ConfigError(
            str(target), "(file)", str(target), "a file that does not exist yet (or --force)"
        )
    shutil.copyfile(found[args.name], target)
    print(f"wrote {target.name}: edit it, then `skyswarm run {target.name}`")
    return 0
