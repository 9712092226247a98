"""The scalar number keys of config sections, for tests that try each key's range."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, get_type_hints


def number_keys(sections: Mapping[str, Any]) -> list[tuple[str, type, dict]]:
    """(dotted key, int or float, field metadata) of every scalar number key of `sections`
    (name -> section dataclass), nested tables included; tables inside lists are left out."""
    out = []
    todo = [(name, cls) for name, cls in sections.items() if dataclasses.is_dataclass(cls)]
    while todo:
        prefix, cls = todo.pop(0)
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            if dataclasses.is_dataclass(tp):
                todo.append((f"{prefix}.{f.name}", tp))
            elif tp in (int, float):
                out.append((f"{prefix}.{f.name}", tp, dict(f.metadata)))
    return out
