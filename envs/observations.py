"""Observations of the RL environments: one float32 row per agent, in a documented layout.

| columns | what | unit, frame |
| --- | --- | --- |
| 0:3 | position error: target - position | m, world ENU |
| 3:6 | velocity | m/s, world ENU |
| 6:12 or 6:10 | rotation: R's first two columns ("6d") or quaternion x, y, z, w >= 0 | - |
| next 3 | body rates p, q, r | rad/s, body FLU |
| last k | the previous normalised action (if `last_action`) | - |

`source = "truth"` reads the simulator's true state; `source = "estimate"` reads the swarm's
sensor estimate (`[uav.sensors]`: it needs a sensor preset such as "qrsim"), what a real
vehicle would know (sim-to-real work needs the noisy one).

    spec = ObservationSpec(rotation="6d", source="truth", last_action=True)
    spec.size(action_k=4)   # 19
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.frames import quat_to_matrix
from skyswarm.uav.estimation import euler_to_quat

if TYPE_CHECKING:
    from skyswarm.uav.swarm import Swarm

ROTATIONS = {"6d": 6, "quaternion": 4}
SOURCES = ("truth", "estimate")


@dataclass(frozen=True)
class ObservationSpec:
    """What an observation row holds (see the module table)."""

    rotation: str = "6d"
    source: str = "truth"
    last_action: bool = True

    def __post_init__(self) -> None:
        if self.rotation not in ROTATIONS:
            raise ValueError(
                f"observation rotation {self.rotation!r}: expected '6d' or 'quaternion'"
            )
        if self.source not in SOURCES:
            raise ValueError(f"observation source {self.source!r}: expected 'truth' or 'estimate'")

    def size(self, action_k: int) -> int:
        return 9 + ROTATIONS[self.rotation] + (action_k if self.last_action else 0)

    def columns(self, action_fields: tuple[str, ...]) -> list[str]:
        """The name of every column, in order (docs and debugging)."""
        rot = ["r00", "r10", "r20", "r01", "r11", "r21"] if self.rotation == "6d" else list("xyzw")
        names = ["ex", "ey", "ez", "vx", "vy", "vz", *rot, "p", "q", "r"]
        return names + ([f"last_{f}" for f in action_fields] if self.last_action else [])


@dataclass(frozen=True)
class Kinematics:
    """The state an observation is made from, (n, ...) arrays: position m, velocity m/s (world),
    quaternion (x, y, z, w) body-to-world, body rates rad/s."""

    position: np.ndarray
    velocity: np.ndarray
    quaternion: np.ndarray
    body_rates: np.ndarray


def read_kinematics(swarm: Swarm, source: str) -> Kinematics:
    """The truth, or the sensor estimate (ValueError if the swarm has no sensors)."""
    if source == "estimate":
        s = swarm.sensors
        if s is None:
            raise ValueError(
                "observation source 'estimate' needs sensors: set sensors='qrsim' "
                "(the 'ideal' preset has no estimate)"
            )
        return Kinematics(s.position, s.velocity, euler_to_quat(s.euler), s.body_rate)
    st, rows = swarm.sim.world.state, swarm.rows
    q = st.orientation[rows]
    rot = quat_to_matrix(q)
    rates = np.einsum("nji,nj->ni", rot, st.angular_velocity[rows])
    return Kinematics(st.position[rows], st.linear_velocity[rows], q, rates)


def observe(
    spec: ObservationSpec, kin: Kinematics, target: np.ndarray, last_action: np.ndarray
) -> np.ndarray:
    """(n, size) float32 rows from the kinematics, the targets (n, 3) m and the last actions."""
    n = len(target)
    parts = [target - kin.position, kin.velocity]
    if spec.rotation == "6d":
        rot = quat_to_matrix(kin.quaternion)
        parts.append(rot[:, :, :2].transpose(0, 2, 1).reshape(n, 6))
    else:
        q = kin.quaternion
        parts.append(np.where(q[:, 3:4] < 0.0, -q, q))  # one sign per rotation
    parts.append(kin.body_rates)
    if spec.last_action:
        parts.append(last_action)
    return np.concatenate(parts, axis=1).astype(np.float32)
