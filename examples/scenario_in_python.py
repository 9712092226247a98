"""A scenario built in Python: the same keys as a TOML file, the same validation and one-line
errors, saved as TOML that loads back equal, then run.

    python examples/scenario_in_python.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import dataclasses
import os
import sys

import skyswarm

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 5))


def main() -> None:
    data = {
        "simulation": {"duration_s": SECONDS, "seed": 11},
        "mission": {"type": "missions.waypoints"},
        "agents": {"count": 4, "layout": "grid", "spacing_m": 4.0},
        "waypoints": {"points": [[0.0, 0.0, 4.0], [6.0, 0.0, 4.0], [6.0, 6.0, 6.0]]},
        "wind": {"enabled": True, "speed_m_s": 2.0, "from_deg": 270.0},
    }
    try:  # a bad value is one line naming the key, as from a file
        skyswarm.scenario_from_dict({**data, "agents": {"count": -1}})
    except skyswarm.ConfigError as exc:
        print(f"refused: {exc}")
    scenario = skyswarm.scenario_from_dict(data)
    path = scenario.to_toml("four_in_wind.toml")
    again = skyswarm.load_scenario(path)
    print(f"wrote {path}; loads back equal: {dataclasses.replace(again, file='') == scenario}")
    summary = skyswarm.run_scenario(scenario)
    print(f"outcome: {summary['outcome']}; metrics: {summary['metrics']}")


if __name__ == "__main__":
    main()
