"""A controller written against the public API only (skyswarm, skyswarm.extend, numpy) that
flies the shipped waypoint course (configs/waypoints.toml: a 10 m square at 5 m, then back
overhead at 3 m) and ends the run with an honest verdict.

The scenario is the shipped one with its mission swapped for `hover` (which only builds the
swarm and holds it): the course and the acceptance radius are read from its [waypoints] table,
and this controller, not the mission, flies them.

    python examples/waypoint_controller.py [SECONDS]   # time limit (default: the scenario's)
"""

import os
import sys

import numpy as np

import skyswarm
from skyswarm.extend import CommandInterface, SwarmState, swarms_of

LIMIT = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS")


class WaypointPilot:
    """Flies each agent through `points` (K, 3) m (x, y relative to its start, z absolute) in
    Position mode; a point counts within `radius_m`. Vectorised over the agents."""

    def __init__(self, start_xy: np.ndarray, points: np.ndarray, radius_m: float) -> None:
        self.start_xy = start_xy  # (N, 2) m
        self.points = points  # (K, 3) m
        self.radius_m = radius_m
        self.next = np.zeros(len(start_xy), dtype=int)  # (N,) index of each agent's next point
        self.reached_s: list[tuple[int, int, float]] = []  # (swarm index, point, time s)

    def targets(self, index: np.ndarray) -> np.ndarray:
        k = np.minimum(self.next[index], len(self.points) - 1)
        out = self.points[k].copy()
        out[:, :2] += self.start_xy[index]
        return out

    @property
    def finished(self) -> bool:
        return bool((self.next >= len(self.points)).all())

    def __call__(self, state: SwarmState, command: CommandInterface) -> None:
        flying = state.index[self.next[state.index] < len(self.points)]
        rows = np.flatnonzero(self.next[state.index] < len(self.points))
        distance = np.linalg.norm(state.position[rows] - self.targets(flying), axis=1)
        for i in flying[distance <= self.radius_m]:
            self.reached_s.append((int(i), int(self.next[i]), state.time_s))
        self.next[flying[distance <= self.radius_m]] += 1
        command.position(state.index, self.targets(state.index))


def main() -> dict:
    shipped = skyswarm.load_scenario("waypoints")
    data = shipped.as_dict()
    course = data.pop("waypoints")
    data["mission"] = {"type": "missions.hover"}
    data["hover"] = {"altitude_m": course["points"][0][2], "settle_s": 0.0}
    if LIMIT is not None:
        data["simulation"]["duration_s"] = float(LIMIT)
    sim = skyswarm.Simulator.from_scenario(skyswarm.scenario_from_dict(data, shipped.file))
    (swarm,) = swarms_of(sim)
    pilot = WaypointPilot(
        swarm.start_positions[:, :2], np.array(course["points"]), course["acceptance_radius_m"]
    )

    def fly(state: SwarmState, command: CommandInterface) -> None:
        pilot(state, command)
        if pilot.finished:
            sim.request_stop(outcome="target reached")

    swarm.control(0.1, fly)  # 10 Hz, as the shipped mission checks its progress
    sim.run()
    summary = sim.finish()
    sim.close()
    print(f"outcome: {summary['outcome']} at t = {summary['sim_time_s']:.1f} s")
    for i, k, t in pilot.reached_s:
        print(f"  agent {int(swarm.ids[i])} reached waypoint {k} at {t:.1f} s")
    return {"summary": summary, "reached": pilot.reached_s, "points": len(course["points"])}


if __name__ == "__main__":
    main()
