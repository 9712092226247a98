"""The start-spacing check of scenario validation (core/checks.py `too_close`): agents closer
than MIN_AGENT_SPACING_M are refused naming the pair; exactly that far apart is allowed, as the
message ("an agent at least 0.5 m from ...") says. The all-pairs path (small swarms) and the
KD-tree path (large ones) find the same first pair."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from skyswarm import load_scenario
from skyswarm.core.checks import BRUTE_FORCE_AGENTS, MIN_AGENT_SPACING_M, too_close
from skyswarm.core.schema import ConfigError


def test_exactly_the_minimum_spacing_is_allowed_a_hair_less_is_refused() -> None:
    assert MIN_AGENT_SPACING_M == 0.5
    load_scenario("hover", ["agents.spacing_m=0.5"])  # 0.5 m apart: "at least 0.5 m" holds
    with pytest.raises(ConfigError) as err:
        load_scenario("hover", ["agents.spacing_m=0.49999"])
    text = str(err.value)
    assert "generated agent 2" in text and "at least 0.5 m from agent 1" in text


def test_first_pair_by_index_whatever_the_order_found() -> None:
    pos = np.array([[0, 0, 0], [10, 0, 0], [20, 0, 0], [10.3, 0, 0], [0, 0.2, 0]], float)
    assert too_close(pos, 0.5) == (0, 4)  # (0, 4) before (1, 3)
    assert too_close(pos[:4], 0.5) == (1, 3)
    assert too_close(pos[:3], 0.5) is None
    assert too_close(pos[:1], 0.5) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kd_tree_path_agrees_with_all_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = BRUTE_FORCE_AGENTS + 88
    pos = rng.uniform(0.0, 40.0, (n, 3))
    pos[:, 2] = 0.0
    # a few exact-distance pairs (0.5 m along x: not close) and one close pair deep in the list
    pos[100] = pos[99] + [0.5, 0.0, 0.0]
    pos[n - 1] = pos[n - 7] + [0.0, 0.3, 0.0]
    found = too_close(pos, 0.5)
    d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
    i, j = np.nonzero(np.triu(d < 0.5, 1))
    assert found == (int(i[0]), int(j[0]))  # the KD-tree path, the all-pairs answer
    assert too_close(pos[:BRUTE_FORCE_AGENTS], 0.5) == next(
        ((int(a), int(b)) for a, b in zip(i, j) if b < BRUTE_FORCE_AGENTS), None
    )


def test_validating_a_small_scenario_does_not_import_scipy() -> None:
    """Validation runs before every command: importing scipy.spatial there cost ~0.3 s each."""
    code = (
        "import sys\n"
        "from skyswarm import load_scenario\n"
        "load_scenario('flocking_coverage')\n"
        "print('scipy.spatial' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
