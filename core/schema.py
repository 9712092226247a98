"""Turning TOML tables into frozen dataclasses, with errors that name file, key, value, expectation.

A config section is a frozen dataclass whose fields are declared with `param()`: a default, a
one-line doc with the unit, and optional bounds or choices. `build()` checks every key (unknown
keys get a "did you mean"), type and bound, and returns the dataclass.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import types
import typing
from collections.abc import Mapping
from typing import (
    Any,
    Literal,
    Protocol,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    runtime_checkable,
)

T = TypeVar("T")
_MISSING = dataclasses.MISSING
# A float key without an explicit upper bound is still physical: |value| <= 1e6 (1000 km, 11.6
# days, 1e6 m/s^2 ...). A key whose default is infinite (e.g. an unlimited range) may be inf.
MAX_MAGNITUDE = 1e6


class ConfigError(ValueError):
    """A bad input: one line naming the file, the key path, the value and what was expected.
    Raise it from a config dataclass's `validate(path, file)` or `Mission.check_config`; the
    CLI prints it and exits 2.

        raise ConfigError(scenario.file, "survey.lanes", cfg.lanes, "at least 2 lanes")
        # -> "scenario.toml: survey.lanes = 1: expected at least 2 lanes"
    """

    def __init__(self, file: str, key: str, value: Any, expected: str) -> None:
        self.file, self.key, self.value, self.expected = str(file), key, value, expected
        shown = "(missing)" if value is _MISSING else _short(value)
        where = f"{_printable(self.file)}: " if self.file else ""
        super().__init__(f"{where}{_printable(str(key))} = {shown}: expected {_flat(expected)}")


def _printable(text: str) -> str:
    """A name as it can be shown on one line (control characters escaped)."""
    return text if text.isprintable() else repr(text)[1:-1]


def _flat(text: str) -> str:
    """A message on one line: runs of line breaks and tabs become one space."""
    return " ".join(text.splitlines()).replace("\t", " ") if not text.isprintable() else text


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def param(
    default: Any = _MISSING,
    doc: str = "",
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    length: int | tuple[int, int] | None = None,
    period: bool = False,
    rate: bool = False,
) -> Any:
    """A config field: default, doc (with unit), numeric bounds, expected sequence length.

    `period=True` (seconds) or `rate=True` (Hz, period 1 / value) marks a timing that must be a
    whole number of simulation ticks; `check_ticks` enforces it once the tick is known. A field
    without a default is required. Fields of a frozen dataclass, which a mission declares as a
    section (`Mission.sections`); its `validate(path, file)` method, if any, runs after them:

        @dataclass(frozen=True)
        class SurveyConfig:
            altitude_m: float = param(20.0, "flight height, m", gt=0.0)
            lanes: int = param(4, "number of parallel lanes", ge=1)
            check_period_s: float = param(0.1, "progress check, s", gt=0.0, period=True)
            corner: tuple[float, float] = param((0.0, 0.0), "area corner (x, y), m", length=2)
    """
    meta = {
        "doc": doc,
        "gt": gt,
        "ge": ge,
        "lt": lt,
        "le": le,
        "length": length,
        "period": period,
        "rate": rate,
        "inf_ok": isinstance(default, float) and math.isinf(default),
    }
    if isinstance(default, list | dict):  # never a shared mutable default
        raise TypeError("use a tuple default")
    if default is _MISSING:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def did_you_mean(key: str, known: typing.Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class Tables(Mapping[str, Any]):
    """An immutable, hashable name -> config dataclass mapping: the value of a `tables()` field.

    Tables(gps=GpsConfig(pr_sigma_m=3.0))["gps"].pr_sigma_m  # 3.0
    """

    def __init__(self, items: Mapping[str, Any] | None = None, **more: Any) -> None:
        self._items = dict(items or {}, **more)

    def __getitem__(self, name: str) -> Any:
        return self._items[name]

    def __iter__(self) -> typing.Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __repr__(self) -> str:
        return f"Tables({self._items!r})"


def tables(registry: typing.Callable[[], Mapping[str, type]], doc: str = "") -> Any:
    """A field for sub-tables declared by a registry instead of by the dataclass.

    In the file each name of `registry()` (name -> config dataclass) is a table beside the
    parent's own keys (`[uav.sensors.gps]` next to `[uav.sensors] preset`); `build` checks it like
    a field (unknown names get the same "no such key" error, bad values the same one-line
    ConfigError) and the field holds a `Tables` of the ones the file sets. `to_plain`,
    `check_ticks` and `reference_markdown` flatten it the same way.

        @dataclass(frozen=True)
        class SensorsConfig:
            preset: str = param("ideal", "...")
            tables: Tables = tables(lambda: {"gps": GpsConfig}, "one table per sensor")
    """
    return dataclasses.field(default=Tables(), metadata={"doc": doc, "tables": registry})


def _registry_of(f: dataclasses.Field) -> Mapping[str, type]:
    """The sub-tables a `tables()` field declares (empty for any other field)."""
    registry = f.metadata.get("tables")
    return registry() if registry is not None else {}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """get_type_hints of a config class, evaluated once (it compiles every annotation)."""
    return get_type_hints(cls)


@runtime_checkable
class SelfChecking(Protocol):
    """A config dataclass with checks across its own fields, run by `build` once the fields
    are converted (raise ConfigError naming `path` + the key).

    Example::

        @dataclass(frozen=True)
        class Band:
            low_m: float = param(0.0, "lower edge, m")
            high_m: float = param(10.0, "upper edge, m")

            def validate(self, path: str, file: str) -> None:
                if not self.low_m < self.high_m:
                    raise ConfigError(file, f"{path}.high_m", self.high_m, "more than low_m")
    """

    def validate(self, path: str, file: str) -> None: ...


def build(cls: type[T], data: Any, path: str, file: str) -> T:
    """Validate `data` (a TOML table) against dataclass `cls`; `path` is its key path."""
    if not isinstance(data, Mapping):
        raise ConfigError(file, path or "(top level)", data, "a table")
    every = [f for f in dataclasses.fields(cls) if f.init]
    fields = {f.name: f for f in every if "tables" not in f.metadata}
    registered = {f.name: _registry_of(f) for f in every if "tables" in f.metadata}
    keys = {**fields, **{k: None for reg in registered.values() for k in reg}}
    hints = _hints(cls)
    for key in data:
        if key not in keys:
            known = ", ".join(sorted(keys))
            raise ConfigError(
                file,
                _join(path, key),
                data[key],
                f"no such key{did_you_mean(key, keys)}; known keys: {known}",
            )
    kwargs = {}
    for name, f in fields.items():
        key = _join(path, name)
        if name in data:
            kwargs[name] = convert(hints[name], data[name], key, file, f.metadata)
        elif f.default is _MISSING and f.default_factory is _MISSING:
            raise ConfigError(file, key, _MISSING, f"a value ({describe(hints[name])})")
    for name, reg in registered.items():
        given = {k: build(c, data[k], _join(path, k), file) for k, c in reg.items() if k in data}
        kwargs[name] = Tables(given)
    obj = cls(**kwargs)
    if isinstance(obj, SelfChecking):
        obj.validate(path, file)
    return obj


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def describe(tp: Any) -> str:
    origin, args = get_origin(tp), get_args(tp)
    if tp is float:
        return "a number"
    if tp is int:
        return "an integer"
    if tp is bool:
        return "true or false"
    if tp is str:
        return "a string"
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (Union, types.UnionType):
        inner = [describe(a) for a in args if a is not type(None)]
        return " or ".join(inner)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {describe(args[0]).removeprefix('a ').removeprefix('an ')}s"
        return f"a list of {len(args)} values"
    if dataclasses.is_dataclass(tp):
        return "a table"
    return getattr(tp, "__name__", str(tp))


def convert(tp: Any, value: Any, key: str, file: str, meta: Mapping[str, Any]) -> Any:
    """Convert one TOML value to type `tp`, checking bounds from `meta`."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for alt in (a for a in args if a is not type(None)):
            try:
                return convert(alt, value, key, file, meta)
            except ConfigError as exc:
                errors.append(exc)
        if len(errors) == 1:  # `X | None`: X's own error ("a value >= 0.0", not "a number")
            raise errors[0]
        raise ConfigError(file, key, value, describe(tp))
    if origin is Literal:
        if value not in args:
            close = difflib.get_close_matches(str(value), [str(a) for a in args], n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(file, key, value, describe(tp) + hint)
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(file, key, value, "true or false")
        return value
    if tp is int:  # numpy's integers too (a scenario built in Python), as a plain int
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(file, key, value, "an integer")
        return _bounded(int(value), key, file, meta)
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(file, key, value, "a number")
        if isinstance(value, numbers.Integral) and abs(value) > 2**53:
            raise ConfigError(file, key, value, f"a number of magnitude <= {MAX_MAGNITUDE:g}")
        value = float(value)
        if not math.isfinite(value):
            if not (meta.get("inf_ok") and value == math.inf):
                raise ConfigError(file, key, value, "a finite number")
            return _bounded(value, key, file, meta)
        if meta.get("le") is None and meta.get("lt") is None and abs(value) > MAX_MAGNITUDE:
            raise ConfigError(file, key, value, f"a number of magnitude <= {MAX_MAGNITUDE:g}")
        return _bounded(value, key, file, meta)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(file, key, value, "a string")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(file, key, value, describe(tp))
        if len(args) == 2 and args[1] is Ellipsis:
            length = meta.get("length")
            lo, hi = (length, length) if isinstance(length, int) else (length or (0, None))
            if len(value) < lo or (hi is not None and len(value) > hi):
                want = f"{lo}" if lo == hi else f"{lo} to {hi if hi is not None else 'any'}"
                raise ConfigError(file, key, value, f"a list of {want} values")
            return tuple(
                convert(args[0], v, _join(key, i), file, meta) for i, v in enumerate(value)
            )
        if len(value) != len(args):
            raise ConfigError(file, key, value, f"a list of {len(args)} values")
        return tuple(
            convert(a, v, _join(key, i), file, meta) for i, (a, v) in enumerate(zip(args, value))
        )
    if dataclasses.is_dataclass(tp):
        return build(tp, value, key, file)
    if tp is Any:
        return value
    raise TypeError(f"unsupported config type {tp!r} at {key}")


def _bounded(value: float, key: str, file: str, meta: Mapping[str, Any]) -> Any:
    gt, ge, lt, le = meta.get("gt"), meta.get("ge"), meta.get("lt"), meta.get("le")
    if gt is not None and not value > gt:
        raise ConfigError(file, key, value, f"a value > {gt}")
    if ge is not None and not value >= ge:
        raise ConfigError(file, key, value, f"a value >= {ge}")
    if lt is not None and not value < lt:
        raise ConfigError(file, key, value, f"a value < {lt}")
    if le is not None and not value <= le:
        raise ConfigError(file, key, value, f"a value <= {le}")
    return value


def to_plain(obj: Any) -> Any:
    """A dataclass tree as plain TOML-writable data (None values dropped)."""
    if dataclasses.is_dataclass(obj):
        out = {}
        for f in dataclasses.fields(obj):
            v = to_plain(getattr(obj, f.name))
            if "tables" in f.metadata:
                out.update(v)  # registered sub-tables sit beside the parent's keys
            elif v is not None:
                out[f.name] = v
        return out
    if isinstance(obj, tuple | list):
        return [to_plain(v) for v in obj]
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items() if v is not None}
    return obj


def field_docs(cls: type) -> list[tuple[str, str, Any, str]]:
    """(name, type description, default, doc) of each field, for the README's config reference."""
    hints = get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not _MISSING else "(required)"
        rows.append((f.name, describe(hints[f.name]), default, f.metadata.get("doc", "")))
    return rows


def reference_markdown(sections: Mapping[str, Any]) -> str:
    """Markdown tables of every key of `sections` (name -> dataclass), nested tables included."""
    out: list[str] = []
    todo = list(sections.items())
    while todo:
        prefix, cls = todo.pop(0)
        out += [f"**[{prefix}]**", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if "tables" in f.metadata:
                for name, table in _registry_of(f).items():
                    todo.append((f"{prefix}.{name}", table))
                    doc = (table.__doc__ or "").strip().partition("\n")[0].replace("|", "\\|")
                    out.append(f"| `{name}` | a table | `(table)` | {doc} |")
                continue
            inner = _table_type(hints[f.name])
            if inner is not None:
                todo.append((f"{prefix}.{f.name}", inner))
            default = f.default
            if default is _MISSING:
                shown = "(required)"
            elif dataclasses.is_dataclass(default):
                shown = "(table)"
            elif isinstance(default, tuple):
                shown = "[" + ", ".join(repr(v) for v in default) + "]"
            else:
                shown = repr(default).replace("inf", "inf")
            doc = f.metadata.get("doc", "").replace("|", "\\|")
            kind = describe(hints[f.name]) + range_text(hints[f.name], f.metadata)
            out.append(f"| `{f.name}` | {kind} | `{shown}` | {doc} |")
        out.append("")
    return "\n".join(out)


def range_text(tp: Any, meta: Mapping[str, Any]) -> str:
    """The range `convert` enforces on a number key (or each number of a list), as the config
    reference states it: " in (0, 1e+06]", " >= 1", ", or inf"; "" for other keys. Intervals
    use ( ) for an open end and [ ] for a closed one; a float key with no upper bound is held to
    magnitude MAX_MAGNITUDE unless its default is inf."""
    numbers = {a for a in (tp, *get_args(tp)) if a in (int, float)}
    if not numbers:
        return ""
    lo = f"({meta['gt']:g}" if meta.get("gt") is not None else None
    lo = f"[{meta['ge']:g}" if meta.get("ge") is not None else lo
    hi = f"{meta['lt']:g})" if meta.get("lt") is not None else None
    hi = f"{meta['le']:g}]" if meta.get("le") is not None else hi
    if float in numbers and hi is None and not meta.get("inf_ok"):
        hi, lo = f"{MAX_MAGNITUDE:g}]", lo or f"[{-MAX_MAGNITUDE:g}"
    text = ""
    if lo and hi:
        text = f" in {lo}, {hi}"
    elif lo:
        text = (" > " if lo[0] == "(" else " >= ") + lo[1:]
    elif hi:
        text = (" < " if hi[-1] == ")" else " <= ") + hi[:-1]
    if meta.get("inf_ok"):
        text += ", or inf"
    if meta.get("period") or meta.get("rate"):
        text += "; 1/value a whole number of ticks" if meta.get("rate") else "; whole ticks"
    return text


def _table_type(tp: Any) -> type | None:
    if dataclasses.is_dataclass(tp):
        return tp
    args = get_args(tp)
    if get_origin(tp) is tuple and len(args) == 2 and dataclasses.is_dataclass(args[0]):
        return args[0]
    return None


def ticks_exact(seconds: float, tick_s: float) -> int | None:
    """`seconds` as a whole number of `tick_s` ticks, or None if it is not one.

    The one test of "a whole number of ticks" (docs/architecture.md, Time): the quotient may
    miss an integer by float rounding only (relative 1e-9). Callers check the sign and range.
    """
    ticks = seconds / tick_s
    if not math.isfinite(ticks):
        return None
    n = round(ticks)
    return int(n) if abs(ticks - n) <= 1e-9 * max(1.0, abs(ticks)) else None


def check_ticks(obj: Any, path: str, file: str, tick_s: float) -> None:
    """Every `period`/`rate` field in the dataclass tree `obj` is a whole number of ticks."""
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            check_ticks(value, _join(path, str(key)), file, tick_s)
        return
    if isinstance(obj, tuple):
        for i, value in enumerate(obj):
            check_ticks(value, _join(path, i), file, tick_s)
        return
    if not dataclasses.is_dataclass(obj):
        return
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        key = _join(path, f.name)
        if "tables" in f.metadata:
            check_ticks(value, path, file, tick_s)  # its tables sit beside the parent's keys
        elif f.metadata.get("period") or f.metadata.get("rate"):
            seconds = 1.0 / value if f.metadata.get("rate") else value
            ticks = ticks_exact(seconds, tick_s)
            if ticks is None or ticks < 1:
                unit = "Hz" if f.metadata.get("rate") else "s"
                raise ConfigError(
                    file,
                    key,
                    value,
                    f"a {'rate whose period is' if unit == 'Hz' else 'period that is'} a whole "
                    f"number (>= 1) of {tick_s} s ticks",
                )
        else:
            check_ticks(value, key, file, tick_s)
