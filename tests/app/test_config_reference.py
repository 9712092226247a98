"""The config reference states each number key's range, and the range it states is the one
validation enforces: for every number key of the core sections and of every shipped mission,
a value just inside each stated end is accepted and one just outside is refused."""

from __future__ import annotations

import math
import re

import pytest

from skyswarm.core.config import CORE_SECTIONS
from skyswarm.core.mission import available_missions, resolve_mission
from skyswarm.core.schema import ConfigError, convert, range_text
from tests.config_keys import number_keys


def _number_keys() -> list[tuple[str, type, dict]]:
    sections = dict(CORE_SECTIONS)
    for name in sorted(available_missions()):
        sections.update(resolve_mission(name).sections)
    return number_keys(sections)


KEYS = _number_keys()


def test_stated_ranges_read_as_expected():
    # hand-written: the tick (0 < tick_s <= 0.1 in SimulationConfig), a count, an unbounded float
    float_meta = {"gt": 0.0, "le": 0.1}
    assert range_text(float, float_meta) == " in (0, 0.1]"
    assert range_text(int, {"ge": 1}) == " >= 1"
    assert range_text(float, {}) == " in [-1e+06, 1e+06]"
    assert range_text(float, {"gt": 0.0, "inf_ok": True}) == " > 0, or inf"
    assert range_text(str, {"gt": 0.0}) == ""


@pytest.mark.parametrize("key,tp,meta", KEYS, ids=[k for k, _, _ in KEYS])
def test_each_stated_end_is_the_enforced_end(key, tp, meta):
    text = range_text(tp, meta)
    ends = []  # (value, inclusive, side)
    if m := re.match(r" in ([(\[])([^,]+), ([^)\]]+)([)\]])", text):
        ends = [(float(m[2]), m[1] == "[", -1), (float(m[3]), m[4] == "]", +1)]
    elif m := re.match(r" (>=|>|<=|<) ([^,;]+)", text):
        side = -1 if m[1].startswith(">") else +1
        ends = [(float(m[2]), m[1].endswith("="), side)]
    if tp is int and not ends:
        pytest.skip("an integer key without bounds")
    assert ends, f"{key}: no range stated ({text!r})"
    for value, inclusive, side in ends:
        step = 1 if tp is int else max(abs(value), 1.0) * 1e-9
        inside = value if inclusive else value - side * step
        outside = value + side * step if inclusive else value
        cast = int if tp is int else float
        convert(tp, cast(inside), key, "x.toml", meta)  # accepted
        with pytest.raises(ConfigError):
            convert(tp, cast(outside), key, "x.toml", meta)
    if meta.get("inf_ok"):
        assert convert(tp, math.inf, key, "x.toml", meta) == math.inf
