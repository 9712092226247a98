"""Cost of one fire-grid step (missions/wildfire/fire.py) on 1 km x 1 km at 5 m cells (200 x 200).

Cases, each the best mean over 3 repeats of 20 steps: a young fire (a 50 m patch, p = 0.45), a
grown fire (p = 0.8, 60 steps on: its burning box covers most of the grid; p = 1 with wind and
the hill, whose upwind and downhill factors would otherwise let a 4-neighbour fire die out), and
a grid burning from edge to edge (the bounding box is the whole grid: the worst case), for 4 and
8 neighbours, calm and flat or with wind and a hill. Prints a table and writes
bench/results/fire_grid.json.
The issue's target: < 5 ms per step.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from skyswarm.missions.wildfire.fire import FireConfig, FireGrid

RESULTS = Path(__file__).parent / "results" / "fire_grid.json"


def _grid(nb: int, p: float, windy: bool) -> FireGrid:
    cfg = FireConfig(size=(1000.0, 1000.0), cell_m=5.0, p_spread=p, neighbourhood=nb)
    x = np.linspace(0.0, 1.0, 200)
    hill = 60.0 * np.exp(-((x[None, :] - 0.6) ** 2 + (x[:, None] - 0.5) ** 2) / 0.05)
    g = FireGrid(cfg, np.random.default_rng(1), hill if windy else None)
    if windy:
        g.set_wind(np.array([5.0, 2.0]))
    return g


def step_ms(nb: int, case: str, windy: bool) -> tuple[float, int]:
    """Best mean ms per step, and the cells burning at the end of the timed steps."""
    best = float("inf")
    for _ in range(3):
        p = {"young": 0.45, "grown": 1.0 if windy else 0.8, "edge to edge": 1.0}[case]
        g = _grid(nb, p, windy)
        g.ignite_at(g.rect_mask((500.0, 500.0), (50.0, 50.0)), 0.0)
        if case == "grown":
            for k in range(60):
                g.step(float(k))
        if case == "edge to edge":
            g.state[:] = 1  # every cell burning: the box is the whole grid
            g.left[:] = 1000
        t = time.perf_counter()
        for k in range(20):
            g.step(float(k))
        best = min(best, (time.perf_counter() - t) / 20)
    return 1e3 * best, g.counts()[0]


def main() -> None:
    rows = []
    for nb in (4, 8):
        for windy in (False, True):
            for case in ("young", "grown", "edge to edge"):
                ms, burning = step_ms(nb, case, windy)
                rows.append(
                    {
                        "neighbours": nb,
                        "wind_slope": windy,
                        "case": case,
                        "burning_cells": burning,
                        "step_ms": round(ms, 3),
                    }
                )
    head = f"{'neighbours':>10} {'wind+slope':>10} {'case':>14} {'burning':>8} {'ms/step':>8}"
    print(head + f" {'vs 5 ms':>8}")
    for r in rows:
        print(
            f"{r['neighbours']:>10} {str(r['wind_slope']):>10} {r['case']:>14} "
            f"{r['burning_cells']:>8} {r['step_ms']:>8.3f} {r['step_ms'] / 5.0:>8.2f}"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"grid": "200 x 200 cells of 5 m", "rows": rows}, indent=1))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
