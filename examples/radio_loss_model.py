"""A radio loss model of your own: everything arrives up to `half_loss_distance_m`, nothing
beyond ("cliff"), registered with `register_loss_model` and chosen by a scenario with
`loss_model = "cliff"`. The boids flock (30 UAVs broadcasting their state on the radio) is run
with the shipped Rayleigh model and with the cliff, both at a 6 m half-loss distance; the
delivered and lost counts come from the results' `messages` frame.

    python examples/radio_loss_model.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import os
import sys

import numpy as np

import skyswarm
from skyswarm.extend import LossModel, register_loss_model

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 2))


@register_loss_model
class Cliff(LossModel):
    name = "cliff"

    def probability(self, distance_m: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(distance_m) <= self.cfg.half_loss_distance_m, 0.0, 1.0)

    def probability_one(self, distance_m: float) -> float:
        return 0.0 if distance_m <= self.cfg.half_loss_distance_m else 1.0


def main() -> None:
    for model in ("rayleigh", "cliff"):
        out = f"radio_{model}"
        overrides = [
            f"simulation.duration_s={SECONDS}",
            f'comms.channels.radio.loss_model="{model}"',
            "comms.channels.radio.half_loss_distance_m=6.0",
        ]
        skyswarm.run_scenario("boids", results_dir=out, overrides=overrides)
        messages = skyswarm.load_results(out).messages
        radio = messages[
            (messages["channel"] == "radio") & (messages["tick"] == messages["tick"].max())
        ]
        counts = dict(zip(radio["fate"], radio["count"]))
        print(f"{model:8s}: {counts['delivered']} delivered, {counts['lost_on_air']} lost on air")


if __name__ == "__main__":
    main()
