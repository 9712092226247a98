"""Where the package data lives: shipped scenarios, airframes, joystick profiles and meshes.

They travel in the wheel beside the code (`skyswarm/configs`, `skyswarm/assets`), so a plain
`pip install` finds them from any working directory. Lookups by bare name go through here; a
name that is not shipped is a ConfigError naming what is.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
CONFIGS_DIR = PACKAGE_ROOT / "configs"
ASSETS_DIR = PACKAGE_ROOT / "assets"


def shipped(kind: str = "") -> dict[str, Path]:
    """Shipped TOML files of one kind, name -> path: "" (scenarios), "airframes", "joysticks",
    "sweeps"."""
    folder = CONFIGS_DIR / kind if kind else CONFIGS_DIR
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}


def is_file(path: Path) -> bool:
    """`path.is_file()`, False too for a path that cannot name a file at all (a name longer
    than the filesystem allows, a NUL byte: `Path.is_file` raises for those)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def named_or_path(value: str | Path, kind: str, base_dir: Path) -> Path:
    """A TOML file given either as a path (relative to `base_dir`) or as the bare name of a
    shipped file of `kind` ("quad_x" for configs/airframes/quad_x.toml). A path that exists
    wins; otherwise a bare name (no separator, no suffix) is looked up among the shipped files.
    Returns the candidate path even when it does not exist: callers report that themselves."""
    path = Path(value)
    where = path if path.is_absolute() else base_dir / path
    if is_file(where):
        return where
    if path.suffix == "" and len(path.parts) == 1:
        found = shipped(kind).get(path.name)
        if found is not None:
            return found
    return where
