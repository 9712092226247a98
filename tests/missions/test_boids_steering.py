"""The compiled steering (missions/_boids_steering.py) at the edges of its radii: it judges
"within perception" and "within separation" from squared distances and takes the hypot of the
per-agent rule only within a relative 1e-9 of a radius, so neighbours placed a hair inside and
outside each radius must be judged exactly as the per-agent rule (missions/_boids_reference.py)
judges them."""

from __future__ import annotations

import numpy as np
import pytest

from skyswarm.missions.boids import BoidsConfig, steering, steering_all

# Relative offsets from a radius: beyond the kernel's 1e-9 margin (decided without hypot) and
# inside it (decided by hypot), on both sides, and the radius itself.
EDGES = (-1e-6, -1e-9, -3e-10, -1e-12, -1e-15, 0.0, 1e-15, 1e-12, 3e-10, 1e-9, 1e-6)


def per_agent(p, v, agent, nb_p, nb_v, cfg):
    return np.array(
        [
            steering(p[i], v[i], nb_p[agent == i], nb_v[agent == i], cfg, None, v[i])
            for i in range(len(p))
        ]
    )


@pytest.mark.parametrize("bearing_deg", [0.0, 37.0, 90.0, 221.0])
def test_perception_edge_is_judged_as_the_per_agent_rule(bearing_deg: float) -> None:
    # Separation off (gain 0) and the neighbour at rest with the boid: only alignment and
    # cohesion see it, so a neighbour wrongly counted in or out moves the command by
    # k_coh * 25 m / 2 ~ 1 m/s^2 (two neighbours: the edge one and a sure one at 10 m),
    # far above the 1e-9 agreement.
    cfg = BoidsConfig(separation_gain=0.0)
    r = cfg.perception_radius_m
    u = np.array([np.cos(np.radians(bearing_deg)), np.sin(np.radians(bearing_deg))])
    n = len(EDGES)
    p = np.tile([3.7, -1.3], (n, 1))
    v = np.tile([2.0, 0.5], (n, 1))
    agent = np.repeat(np.arange(n), 2)
    nb_p = np.empty((2 * n, 2))
    nb_p[0::2] = p + np.outer([r * (1 + e) for e in EDGES], u)  # the edge neighbour
    nb_p[1::2] = p + 10.0 * u[::-1]  # a sure neighbour, so the means differ with the edge one
    nb_v = np.repeat(v, 2, axis=0)
    a = steering_all(p, v, v, agent, nb_p, nb_v, cfg)
    ref = per_agent(p, v, agent, nb_p, nb_v, cfg)
    np.testing.assert_allclose(a, ref, rtol=0, atol=1e-9)
    # both judgements occur: the far edge neighbours are out, the near ones in
    counted = np.abs(a - a[-1]).max(axis=1) > 1e-3
    assert counted[0] and not counted[-1]


def test_separation_edge_is_judged_as_the_per_agent_rule() -> None:
    # A neighbour crossing behind the boid: relative velocity (0, 2) m/s, closest approach in
    # 0.5 s (within the 1 s lookahead) at a gap of r (1 + e) along x. The push (r/d - 1)/d is
    # continuous at d = r, so a wrong inside/outside call shows as k_sep |e|: with k_sep = 20,
    # 6e-9 already at e = 3e-10, above the 1e-9 agreement (and 2e-5 at e = 1e-6).
    cfg = BoidsConfig(separation_gain=20.0)
    r = cfg.separation_radius_m
    n = len(EDGES)
    p = np.zeros((n, 2))
    v = np.tile([1.0, 0.0], (n, 1))
    nb_v = np.tile([1.0, -2.0], (n, 1))
    nb_p = np.array([[-r * (1 + e), 1.0] for e in EDGES])  # offset p - p_j = (r (1 + e), -1)
    agent = np.arange(n)
    a = steering_all(p, v, v, agent, nb_p, nb_v, cfg)
    ref = per_agent(p, v, agent, nb_p, nb_v, cfg)
    np.testing.assert_allclose(a, ref, rtol=0, atol=1e-9)
    # the far-inside neighbour is pushed away (+x), the far-outside one is not pushed at all
    outside = BoidsConfig(separation_gain=0.0)
    no_push = steering_all(p, v, v, agent, nb_p, nb_v, outside)
    assert a[0, 0] - no_push[0, 0] > 1e-5
    assert a[-1, 0] == no_push[-1, 0]
