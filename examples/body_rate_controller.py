"""Your own controller at body-rate level: the shipped hover scenario's four UAVs climb from
10 m to 12 m and stay level, commanded by body rates (rad/s) and collective thrust (N) from a
100 Hz Python function that sees only the state arrays.

    python examples/body_rate_controller.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import os
import sys

import numpy as np

from skyswarm import Simulator, load_scenario
from skyswarm.extend import CommandInterface, SwarmState, swarms_of

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 8))
TARGET_Z_M = 12.0


def main() -> None:
    sim = Simulator.from_scenario(load_scenario("hover", [f"simulation.duration_s={SECONDS}"]))
    (swarm,) = swarms_of(sim)
    hover_n = swarm.config.airframe.mass_kg * sim.settings.gravity  # N, collective at hover

    def controller(state: SwarmState, command: CommandInterface) -> None:
        rates = -4.0 * state.euler * [1.0, 1.0, 0.0]  # rad/s: roll and pitch back to level
        dz = TARGET_Z_M - state.position[:, 2]  # m
        tilt = np.cos(state.euler[:, 0]) * np.cos(state.euler[:, 1])
        thrust = hover_n * (1.0 + 0.3 * dz - 0.5 * state.velocity[:, 2]) / tilt  # N
        command.body_rates(state.index, rates, thrust)

    swarm.control(0.01, controller)  # 100 Hz: every 4th tick of 2.5 ms
    sim.run()
    summary = sim.finish()
    z = sim.world.state.position[swarm.slots, 2]
    print(f"outcome: {summary['outcome']}; altitude after {sim.time_s:.1f} s: {np.round(z, 2)} m")
    sim.close()


if __name__ == "__main__":
    main()
