"""uav/estimation_kernel.py: the compiled wrench from the true state is WrenchModel.compute bit
for bit (what control on the estimate applies: tests/uav/test_estimation.py flies it)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from skyswarm.core.frames import quat_to_matrix
from skyswarm.uav.estimation_kernel import TrueWrench
from skyswarm.uav.model import Airframe, WrenchModel

BASE = {
    "mass_kg": 1.2,
    "arm_length_m": 0.17,
    "inertia_kg_m2": (0.0123, 0.0123, 0.0224),
    "max_thrust_n": 5.886,
    "motor_time_constant_s": 0.02,
    "yaw_torque_coefficient_m": 0.016,
}
ROTOR = {
    "rotor_model": "rotor_speed",
    "thrust_coefficient_n_s2": 4.8645e-6,
    "torque_coefficient_n_m_s2": 7.7832e-8,
}
AIRFRAMES = {  # every branch of WrenchModel.compute
    "linear": {"drag_coefficients": (0.1, 0.1, 0.2)},
    "quad_x": {  # configs/airframes/quad_x.toml: quadratic drag, rotor drag, ground effect
        **ROTOR,
        "rotor_drag_coefficient": 1e-4,
        "rotor_radius_m": 0.127,
        "drag_model": "quadratic",
        "drag_areas_m2": (0.02, 0.02, 0.04),
    },
    "ground_effect": {"rotor_radius_m": 0.127},
    "rotor_drag_linear": {**ROTOR, "rotor_drag_coefficient": 1e-4, "drag_coefficients": (0.1,) * 3},
}


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


@pytest.mark.parametrize("name", list(AIRFRAMES))
@pytest.mark.parametrize("n", [1, 2, 10, 31])
def test_true_wrench_is_wrench_model_compute_bit_for_bit(name: str, n: int) -> None:
    model = WrenchModel(Airframe(**BASE, **AIRFRAMES[name]))
    rng = np.random.default_rng(n)
    for trial in range(60):
        capacity = n + 3  # the agents' rows are some rows of the world's arrays
        slots = rng.permutation(capacity)[:n] if trial % 2 else np.arange(n)
        q = rng.standard_normal((capacity, 4))
        q /= np.linalg.norm(q, axis=1)[:, None]
        state = SimpleNamespace(
            position=rng.uniform(-1.0, 30.0, (capacity, 3)),  # below ground: clamped heights
            orientation=q,
            linear_velocity=5.0 * rng.standard_normal((capacity, 3)),
            angular_velocity=rng.standard_normal((capacity, 3)),
        )
        thrust = rng.uniform(0.0, 5.886, (n, 4))
        wind = rng.standard_normal((n, 3)) if trial % 3 else np.zeros((n, 3))
        if trial % 4 == 0:  # at rest, level, motors off: the signed zeros must agree too
            state.orientation[:] = (0.0, 0.0, 0.0, 1.0)
            state.angular_velocity[rng.random((capacity, 3)) < 0.5] = 0.0
            state.linear_velocity[rng.random((capacity, 3)) < 0.5] = 0.0
            thrust[rng.random((n, 4)) < 0.5] = 0.0
        rot = quat_to_matrix(state.orientation[slots])
        rates = np.einsum("nji,nj->ni", rot, state.angular_velocity[slots])
        velocity, position = state.linear_velocity[slots], state.position[slots]
        want = model.compute(thrust, rot, velocity, wind, position, rates)
        got = TrueWrench(model, slots)(state, thrust, wind)
        for w, g in zip(want, got):
            assert np.array_equal(bits(w), bits(g)), (name, n, trial)
