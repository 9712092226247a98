"""The public extension API (skyswarm/extend.py): every exported name has a docstring with a
worked example, and the facade says once that everything else is internal."""

from __future__ import annotations

import ast
import inspect

import pytest

import skyswarm
from skyswarm import extend


def example_lines(doc: str) -> list[str]:
    """The indented lines of a docstring that parse as Python code with a call or an
    assignment: the worked example."""
    found = []
    for line in doc.splitlines():
        if not line.startswith("    "):
            continue
        code = line.strip()
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        if any(isinstance(n, ast.Call | ast.Assign | ast.FunctionDef) for n in ast.walk(tree)):
            found.append(code)
    return found


@pytest.mark.parametrize("name", extend.__all__)
def test_every_public_name_has_a_docstring_with_a_worked_example(name: str) -> None:
    doc = inspect.getdoc(getattr(extend, name)) or ""
    assert example_lines(doc), f"skyswarm.extend.{name}: no example code line in its docstring"


def test_the_example_check_can_fail() -> None:
    assert example_lines("Just words.\n\n    more words here") == []
    assert example_lines("Call it:\n\n    swarm.control(0.02, fn)") == ["swarm.control(0.02, fn)"]


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        n for n, v in vars(extend).items() if not n.startswith("_") and not inspect.ismodule(v)
    }
    public -= {"annotations", "TYPE_CHECKING", "Simulator"}
    assert sorted(extend.__all__) == sorted(public)


def test_the_internal_rule_is_stated_in_both_public_modules() -> None:
    rule = "not exported from `skyswarm` or `skyswarm.extend` is internal and may change"
    for module in (skyswarm, extend):
        assert rule in " ".join((module.__doc__ or "").split()), module.__name__
