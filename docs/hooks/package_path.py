"""mkdocs hook: let mkdocstrings read the `skyswarm` package from this checkout, whatever the
checkout's folder is called (the repository root IS the package, so its parent folder only
works when the clone is named `skyswarm`). Unless SKYSWARM_DOCS_PATH names a folder already,
a temporary folder holding a `skyswarm` link to the root becomes the handler's search path."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
_KEEP: list[tempfile.TemporaryDirectory] = []  # alive for the whole build


@event_priority(100)  # before mkdocstrings reads its handlers' settings
def on_config(config: Any) -> Any:
    if os.environ.get("SKYSWARM_DOCS_PATH"):
        return config
    tmp = tempfile.TemporaryDirectory(prefix="skyswarm-docs-")
    _KEEP.append(tmp)
    (Path(tmp.name) / "skyswarm").symlink_to(ROOT, target_is_directory=True)
    python = config["plugins"]["mkdocstrings"].config["handlers"]["python"]
    python["paths"] = [tmp.name]
    return config
