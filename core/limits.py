"""Size and depth limits of nested inputs (TOML files, `--set` values), checked before any
recursive code (the validators, `repr` in an error message) walks them.

A scenario nests tables and arrays a few levels deep (`[uav.sensors.gps]`, a polygon's
`[[x, y], ...]`); 50,000 brackets deep is an attack or an accident, and Python's recursion
limit would turn it into a 3,000-line traceback. `check_nesting` walks a parsed value without
recursion and raises a one-line ConfigError past `MAX_DEPTH` levels or `MAX_VALUES` values;
`parse_limited` runs a recursive parser (tomllib) and turns its RecursionError into the same;
`loads_json` is `json.loads` under both.

    check_nesting({"a": [[1, 2], [3, 4]]}, "s.toml")  # depth 3, 7 values: fine
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from skyswarm.core.schema import ConfigError

MAX_DEPTH = 24  # tables and arrays inside one another (a scenario uses at most ~5)
MAX_VALUES = 1_000_000  # tables, arrays and leaves in one file or value
MAX_SET_CHARS = 2**20  # one --set value (a shell passes at most 128 KiB per argument anyway)

T = TypeVar("T")


def too_deep() -> str:
    return f"tables and arrays nested at most {MAX_DEPTH} deep"


def check_nesting(
    data: Any, file: str, key: str = "(top level)", max_values: float = MAX_VALUES
) -> None:
    """Raise ConfigError if `data` (parsed TOML: dicts, lists, leaves) nests deeper than
    `MAX_DEPTH` or holds more than `MAX_VALUES` values; the error names the deepest key path
    known (the first three levels) and never shows the value itself."""
    stack: list[tuple[Any, int, str]] = [(data, 0, key)] if _nests(data) else []
    count = 1
    while stack:
        node, depth, path = stack.pop()
        count += len(node)
        if count > max_values:
            raise ConfigError(file, key, f"more than {max_values} values", "a smaller input")
        if node and depth + 1 > MAX_DEPTH:
            raise ConfigError(file, path, f"(nested {depth + 1} deep)", too_deep())
        named = depth < 3  # deeper paths are named by their first levels only
        items = node.items() if isinstance(node, Mapping) else enumerate(node)
        for k, v in items:
            if _nests(v):
                name = (_join(path, k) if isinstance(k, str) else f"{path}[{k}]") if named else path
                stack.append((v, depth + 1, name))


def _nests(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple)


def parse_limited(parse: Callable[[], T], file: str, key: str, max_values: float = MAX_VALUES) -> T:
    """`parse()` (a recursive parser), its result checked by `check_nesting`; a nesting deep
    enough to exhaust Python's recursion is the same one-line error."""
    try:
        data = parse()
    except RecursionError:
        raise ConfigError(file, key, "(nested too deep to parse)", too_deep()) from None
    check_nesting(data, file, key, max_values)
    return data


def loads_json(text: str | bytes, file: str, key: str = "(top level)") -> Any:
    """`json.loads(text)` within the depth limit: a results file (trajectory.json, summary.json,
    flight_plan.json of a run someone sent you) nested 50,000 deep is a one-line ConfigError,
    not a RecursionError; malformed JSON stays a ValueError for the caller to name. No count
    limit: skyswarm writes these files itself, and their size on disk bounds them.

        loads_json('{"a": [1, 2]}', "run/summary.json")  # {'a': [1, 2]}
    """
    import json

    return parse_limited(lambda: json.loads(text), file, key, max_values=math.inf)


def _join(path: str, key: str) -> str:
    return key if path in ("", "(top level)") else f"{path}.{key}"
