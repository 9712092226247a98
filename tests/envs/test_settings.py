"""Environment settings and tasks that no episode could be flown with are refused when the env
is made, by a ValueError naming the field, its value and what was expected (before: a zero
rate divided by zero, an unknown sensor preset flew on silently, slots closer than a UAV's
reach could fly into each other's episodes)."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import skyswarm.envs  # noqa: F401  (registers the envs)
from skyswarm.envs import FlightEnv, FlightVectorEnv, parallel_env
from skyswarm.envs.batch import SLOT_GAP_M, FlightBatch, FlightSettings
from skyswarm.envs.tasks import Goal, Hover


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        ({"control_hz": 0}, "control_hz 0: expected a finite number > 0"),
        ({"control_hz": math.nan}, "control_hz nan"),
        ({"control_hz": 1000}, "whole number of 0.0025 s ticks"),
        ({"tick_s": 0.0}, "tick_s 0.0: expected a finite number > 0"),
        ({"spacing_m": -5.0}, "spacing_m -5.0"),
        ({"spacing_m": math.inf}, "spacing_m inf"),
        ({"sensors": "gps"}, "sensors 'gps': expected 'ideal' or 'qrsim'"),
        # before: "<cwd>/quad_y: (file) = '<cwd>/quad_y': expected an existing TOML file"
        ({"airframe": "quad_y"}, "airframe 'quad_y': expected a shipped airframe (quad_x, "),
        ({"randomize": {"sensors": ("ideal", "px4")}}, "randomize sensors"),
        # before: 0, -1 and True truncated every step, 2.5 at step 3, "100" was numpy's
        # UFuncTypeError at the first step
        ({"max_episode_steps": 0}, "max_episode_steps 0: expected a whole number >= 1"),
        ({"max_episode_steps": -1}, "max_episode_steps -1"),
        ({"max_episode_steps": 2.5}, "max_episode_steps 2.5"),
        ({"max_episode_steps": True}, "max_episode_steps True"),
        ({"max_episode_steps": "100"}, "max_episode_steps '100'"),
        # before: numba's own words at the first build ("The number of threads must be...")
        ({"threads": -1}, "threads -1: expected a whole number >= 0"),
        ({"threads": 1.5}, "threads 1.5"),
        # before: "object of type 'float' has no len()"; numpy's OverflowError at the reset
        ({"randomize": {"mass_scale": 1.0}}, "randomize mass_scale 1.0: expected"),
        ({"randomize": {"wind_speed_m_s": (0.0, math.inf)}}, "randomize wind_speed_m_s"),
    ],
)
def test_bad_settings_are_named(settings, needle) -> None:
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        FlightSettings(**settings)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: Hover(max_error_m=-1.0), "max_error_m -1.0: expected a finite number > 0"),
        (lambda: Hover(altitude_m=math.inf), "altitude_m inf"),
        (lambda: Hover(w_rates=-0.1), "w_rates -0.1: expected a finite number >= 0"),
        # every start would already have crashed
        (lambda: Hover(start_radius_m=3.0), "max_error_m 3.0: expected more than start_radius"),
        (lambda: Goal(goal_max_m=7.8), "max_error_m 8.0: expected more than start_radius"),
        (lambda: Hover(start_tilt_deg=80.0), "start_tilt_deg 80.0: expected less than max_tilt"),
        (lambda: Hover(min_altitude_m=9.0), "min_altitude_m 9.0: expected below altitude_m"),
        (lambda: Goal(goal_min_m=6.0), "goal_max_m 5.0: expected at least goal_min_m"),
    ],
)
def test_bad_tasks_are_named(make, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        make()


def test_the_edges_of_a_task_fly() -> None:
    """Just inside each bound: a start right at the crash limits' near side, the ground switched
    off by a negative min_altitude_m."""
    Hover(start_radius_m=2.999, max_error_m=3.0)
    Hover(start_tilt_deg=79.9)
    Hover(min_altitude_m=-1.0)
    Goal(goal_max_m=7.799)


def test_grid_slots_are_kept_out_of_each_others_reach() -> None:
    """Hover reaches 1 + 0 + 3 = 4 m from its origin, Goal 0.2 + 5 + 8 = 13.2 m: the grid's
    spacing must exceed twice that plus SLOT_GAP_M, exactly at which it is refused."""
    assert Hover().reach_m() == 4.0 and Goal().reach_m() == pytest.approx(13.2)
    edge = 2 * Goal().reach_m() + SLOT_GAP_M
    with pytest.raises(ValueError, match="slots closer than that can fly into each other"):
        FlightBatch(4, Goal(), FlightSettings(spacing_m=edge))
    batch = FlightBatch(4, Goal(), FlightSettings(spacing_m=edge + 0.01))
    gaps = np.linalg.norm(batch.origin[1:] - batch.origin[:1], axis=1)
    assert gaps.min() == pytest.approx(edge + 0.01)
    batch.sim.close()


def test_gym_make_reports_the_setting() -> None:
    with pytest.raises(ValueError, match="sensors 'gps'"):
        gym.make("skyswarm/Hover-v0", sensors="gps")
    with pytest.raises(ValueError, match="spacing_m 20.0: expected more than 27.4 m"):
        gym.make("skyswarm/Goal-v0", spacing_m=20.0)  # one slot: still refused (vector envs)


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        # before: 2.5 UAVs flew as 2, 2.0 and "3" envs as 2 and 3; a zero beacon rate was a
        # ZeroDivisionError, a negative one named only the scheduler's "beacons period"
        (lambda: FlightVectorEnv(2.5), "num_envs 2.5: expected a whole number >= 1"),
        (lambda: FlightVectorEnv("3"), "num_envs '3'"),
        # before: any render_mode was taken and render() returned None for it ("human" too)
        (lambda: FlightVectorEnv(2, render_mode="human"), "render_mode 'human': expected"),
        (lambda: parallel_env("swap", swarm_size=2.5), "swarm_size 2.5: expected a whole number"),
        (lambda: parallel_env("swap", swarm_size=0), "swarm_size 0: expected a whole number >= 1"),
        (
            lambda: parallel_env("swap", neighbours=-1),
            "neighbours -1: expected a whole number >= 0",
        ),
        (lambda: parallel_env("swap", beacon_hz=0), "beacon_hz 0: expected a finite number > 0"),
        (lambda: parallel_env("swap", beacon_hz=-10.0), "beacon_hz -10.0"),
    ],
)
def test_bad_sizes_and_rates_of_the_vector_and_swarm_envs_are_named(make, needle) -> None:
    with pytest.raises(ValueError, match=needle):
        make()


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        # before: Python's TypeError ("Task.__init__() got an unexpected keyword argument
        # 'altitude'"), naming neither the setting nor the field meant
        (
            lambda: gym.make("skyswarm/Hover-v0", task_overrides={"altitude": 5.0}),
            "task_overrides 'altitude': no such key (did you mean 'altitude_m'?); known keys: "
            "name, altitude_m,",
        ),
        (
            lambda: FlightVectorEnv(2, task_overrides={"max_eror_m": 4.0}),
            "task_overrides 'max_eror_m': no such key (did you mean 'max_error_m'?)",
        ),
        (
            lambda: parallel_env("swap", task_overrides={"spacing": 3.0}),
            "task_overrides 'spacing': no such key (did you mean 'spacing_m'?)",
        ),
        (
            lambda: parallel_env("swap", radio={"los": 0.2}),
            "radio 'los': no such key (did you mean 'loss'?); known keys: latency_s,",
        ),
        (
            lambda: gym.make("skyswarm/Hover-v0", randomize={"mass_scal": (0.8, 1.2)}),
            "randomize 'mass_scal': no such key (did you mean 'mass_scale'?)",
        ),
        (
            lambda: parallel_env("swap", randomize={"radio_los": (0.0, 0.2)}),
            "randomize 'radio_los': no such key (did you mean 'radio_loss'?)",
        ),
        # the envs' own keywords are suggested beside FlightSettings'
        (lambda: FlightEnv(acton="velocity"), "keyword 'acton': no such key (did you mean 'act"),
        (
            lambda: parallel_env("swap", swarmsize=3),
            "keyword 'swarmsize': no such key (did you mean 'swarm_size'?)",
        ),
        (lambda: FlightEnv(task_overrides=["altitude_m"]), r"task_overrides \['altitude_m'\]: exp"),
    ],
)
def test_a_misspelt_key_is_named_with_the_closest_one(make, needle) -> None:
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace("?)", r"\?\)")):
        make()


def test_no_overrides_and_empty_ones_alike_build_the_nominal_task() -> None:
    assert FlightEnv(task_overrides=None).task == FlightEnv(task_overrides={}).task == Hover()
