"""Fuzzing validation: the shipped scenarios, mutated by hypothesis (keys deleted, values of the
wrong type, extreme and non-finite numbers, nested junk), through `validate_scenario` — the code
path `validate` and `run` share. The only exception allowed is ConfigError; no example may take
more than 2 s, and the process may not grow by more than 500 MB over all of them.
"""

from __future__ import annotations

import copy
import math
import resource
import time
from typing import Any

import pytest

from skyswarm.core.config import read_toml, validate_scenario
from skyswarm.core.resources import shipped
from skyswarm.core.schema import ConfigError

SCENARIOS = {name: read_toml(path) for name, path in shipped().items()}
FILES = {name: str(path) for name, path in shipped().items()}
EXAMPLES = 2000
MAX_EXAMPLE_S = 2.0
MAX_GROWTH_MB = 500.0


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into a TOML tree (tables and lists), the root excluded."""
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        out.append((*prefix, key))
        if isinstance(value, dict | list):
            out += _paths(value, (*prefix, key))
    return out


def _mutations():
    """hypothesis's strategy of mutated shipped scenarios: (name, data). hypothesis is imported
    here, by the fuzz (~0.8 s), not at every worker's collection."""
    from hypothesis import strategies as st

    EXTREME = st.sampled_from(
        [
            math.inf,
            -math.inf,
            math.nan,
            1e308,
            -1e308,
            1e-308,
            0.0,
            -0.0,
            -1.0,
            0,
            -1,
            2**62,
            -(2**63),
            2**63 - 1,
            10**7,
            "",
            "x" * 300,
            ":",
            "..",
            "../../../../etc/passwd",
            True,
            False,
        ]
    )
    SCALAR = st.one_of(
        EXTREME,
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.text(max_size=12),
        st.booleans(),
    )
    JUNK = st.recursive(
        SCALAR,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    )

    @st.composite
    def mutated(draw) -> tuple[str, dict]:
        name = draw(st.sampled_from(sorted(SCENARIOS)))
        data = copy.deepcopy(SCENARIOS[name])
        for _ in range(draw(st.integers(1, 4))):
            paths = _paths(data)
            if not paths:
                break
            path = draw(st.sampled_from(paths))
            parent = data
            for key in path[:-1]:
                parent = parent[key]
            op = draw(st.sampled_from(["delete", "replace", "replace", "add", "scale"]))
            last = path[-1]
            if op == "delete":
                del parent[last]
            elif op == "replace":
                parent[last] = draw(JUNK)
            elif op == "add" and isinstance(parent, dict):
                parent[draw(st.text(min_size=1, max_size=10))] = draw(JUNK)
            elif op == "scale" and isinstance(parent[last], int | float):
                factor = draw(st.sampled_from([-1.0, 0.0, 1e-9, 1e9, 1e300, math.inf, math.nan]))
                parent[last] = factor if isinstance(parent[last], bool) else parent[last] * factor
        return name, data

    return mutated()


_seen = {"examples": 0, "errors": 0, "slowest_s": 0.0, "rss_start_mb": 0.0}


def _rss_mb() -> float:
    """Resident memory now (not the peak: earlier tests of a full run may have set that)."""
    pages = int(open("/proc/self/statm").read().split()[1])
    return pages * resource.getpagesize() / 2**20


@pytest.fixture(scope="module")
def warmed() -> None:
    """Every shipped scenario validated once: lazy imports (scipy.spatial, meshes, airframes) are
    not the fuzz's examples' time (here, not at the module's import: collection stays cheap)."""
    for name in SCENARIOS:
        validate_scenario(copy.deepcopy(SCENARIOS[name]), FILES[name])


def test_validation_of_mutated_scenarios_raises_only_config_errors(warmed):
    from hypothesis import HealthCheck, given, settings

    @settings(
        max_examples=EXAMPLES,
        deadline=None,  # timed below, with the 2 s bound of the issue
        database=None,
        derandomize=True,  # the same 2,000 examples on every run
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(_mutations())
    def fuzz(case):
        name, data = case
        if _seen["examples"] == 0:
            _seen["rss_start_mb"] = _rss_mb()
        start = time.perf_counter()
        try:
            validate_scenario(data, FILES[name])
        except ConfigError as exc:
            _seen["errors"] += 1
            assert "\n" not in str(exc)  # one line
        took = time.perf_counter() - start
        _seen["examples"] += 1
        _seen["slowest_s"] = max(_seen["slowest_s"], took)
        assert took < MAX_EXAMPLE_S, f"{took:.2f} s"
        grown = _rss_mb() - _seen["rss_start_mb"]
        assert grown < MAX_GROWTH_MB, f"{grown:.0f} MB"

    fuzz()


def test_the_fuzz_ran_its_examples_and_most_were_rejected():
    """Runs after the fuzz (file order): 2,000 examples (hypothesis may stop at fewer only
    when it has exhausted the space, which a mutation space this large never is)."""
    if _seen["examples"] == 0:
        pytest.skip("the fuzz test was deselected")
    assert _seen["examples"] >= EXAMPLES
    assert _seen["errors"] > EXAMPLES // 4  # mutations mostly break a scenario
