"""A parameter sweep from Python, its aggregate read into pandas: the drop test (boxes falling,
no quadrotor) over two drop heights x two seeds, on two local worker processes.

    python examples/sweep_to_pandas.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import os
import sys
from pathlib import Path

import pandas as pd

import skyswarm

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 3))

SWEEP = f"""
[sweep]
scenario = "drop_test.toml"   # relative to this file
seed = 2024
seeds = 2                     # replicates per point

[fixed]
"simulation.duration_s" = {SECONDS}
"agents.count" = 4

[grid]
"drop_test.height_m" = [2.0, 5.0]
"""


def main() -> None:
    skyswarm.load_scenario("drop_test").to_toml("drop_test.toml")  # the base scenario, here
    Path("drop_sweep.toml").write_text(SWEEP, encoding="utf-8")
    out = skyswarm.run_sweep("drop_sweep.toml", "drop_sweep_out", workers=2)
    runs = pd.read_csv(out / "sweep.csv")
    aggregate = pd.read_csv(out / "aggregate.csv")
    print(runs[["drop_test.height_m", "seed", "status", "outcome"]])
    print(aggregate.T)


if __name__ == "__main__":
    main()
