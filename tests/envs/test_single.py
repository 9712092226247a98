"""The single-agent Gymnasium environments (envs/single.py): the checkers of Gymnasium and
stable-baselines3, registration, determinism, the errors, and what a step does physically.
Numbers from the default airframe (quad_x, 1.2 kg, hover at half of 4 x 5.886 N)."""

from __future__ import annotations

import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import skyswarm.envs
from skyswarm.envs import ENV_IDS, ActionError, EpisodeEndedError, FlightEnv

STILL = {"start_radius_m": 0.0, "start_speed_m_s": 0.0, "start_tilt_deg": 0.0}


@pytest.mark.parametrize("env_id", sorted(ENV_IDS.values()))
def test_every_registered_env_passes_gymnasiums_and_sb3s_checkers(env_id: str) -> None:
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")  # the rl extra
    env = gym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    sb3_checker.check_env(FlightEnv(ENV_IDS_TASK[env_id]), warn=False)


ENV_IDS_TASK = {v: k for k, v in ENV_IDS.items()}


@pytest.mark.parametrize("action", ["body_rates", "attitude", "velocity", "motors"])
@pytest.mark.parametrize("rotation", ["6d", "quaternion"])
def test_every_action_level_and_rotation_passes_the_checker(action: str, rotation: str) -> None:
    env = FlightEnv("hover", action=action, rotation=rotation)
    check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (9 + (6 if rotation == "6d" else 4) + 4,)


def test_the_sensor_estimate_passes_the_checker_and_differs_from_the_truth() -> None:
    noisy = FlightEnv("hover", observe="estimate", sensors="qrsim")
    check_env(noisy, skip_render_check=True)
    truth = FlightEnv("hover")
    a, _ = noisy.reset(seed=3)
    b, _ = truth.reset(seed=3)
    for _ in range(50):
        a = noisy.step(np.zeros(4, np.float32))[0]
        b = truth.step(np.zeros(4, np.float32))[0]
    # QRSim's GPS error is metres, not zero, and not tens of metres
    assert 1e-3 < np.abs(a[:3] - b[:3]).max() < 10.0
    with pytest.raises(ValueError, match="observe='estimate' needs sensors"):
        FlightEnv("hover", observe="estimate")


def test_module_prefixed_ids_register_in_a_fresh_interpreter_and_no_gui_is_imported() -> None:
    code = (
        "import sys, gymnasium as gym\n"
        "env = gym.make('skyswarm.envs:skyswarm/Hover-v0')\n"
        "gui = any(m.startswith('skyswarm.gui') for m in sys.modules)\n"
        "print(type(env.unwrapped).__name__, gui)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["FlightEnv", "False"], out.stderr[-2000:]


def _rollout(env: FlightEnv, seed: int, steps: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    rows = [obs]
    for _ in range(steps):
        obs, _, terminated, truncated, _ = env.step(rng.uniform(-0.3, 0.3, 4).astype(np.float32))
        rows.append(obs)
        if terminated or truncated:
            rows.append(env.reset()[0])
    return np.array(rows)


def test_same_seed_same_observations_over_1000_steps_other_seed_other() -> None:
    # Random actions crash the UAV now and then: the 1,000 steps cross several autoresets
    env = FlightEnv("hover")
    a = _rollout(env, 7, 1000)
    b = _rollout(FlightEnv("hover"), 7, 1000)
    assert len(a) > 1001  # at least one episode ended and restarted inside
    np.testing.assert_array_equal(a, b)
    c = _rollout(env, 8, 1000)
    assert not np.array_equal(a[:50], c[:50])


def test_bad_actions_name_the_env_the_agent_and_the_space() -> None:
    env = FlightEnv("hover")
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"skyswarm/hover env: action has shape \(3,\); expected"):
        env.step(np.zeros(3))
    with pytest.raises(ActionError, match=r"agent 'uav_0' has q = nan .*Box\(-1.0, 1.0, \(4,\)"):
        env.step([0.0, np.nan, 0.0, 0.0])
    with pytest.raises(ActionError, match="agent 'uav_0' has thrust = 1.5 \\(body_rates level\\)"):
        env.step([0.0, 0.0, 0.0, 1.5])
    with pytest.raises(ActionError, match="not numeric"):
        env.step("up")
    env.step(np.ones(4, np.float32))  # the bounds themselves are in the space


def test_stepping_after_the_end_without_reset_is_an_error() -> None:
    env = FlightEnv("hover", max_episode_steps=3)
    with pytest.raises(EpisodeEndedError, match="before reset"):
        env.step(np.zeros(4))
    env.reset(seed=0)
    ends = [env.step(np.zeros(4, np.float32))[2:4] for _ in range(3)]
    assert ends == [(False, False), (False, False), (False, True)]  # truncated at step 3
    with pytest.raises(EpisodeEndedError, match="after the episode ended"):
        env.step(np.zeros(4))
    env.reset()
    env.step(np.zeros(4))


def test_the_zero_action_holds_a_level_hover_at_rest() -> None:
    # Level, at rest, on the target: body rates 0 and the hover collective keep it there. After
    # 2 s (100 steps) within 1 cm and the reward within 1e-3 of its maximum 1.
    env = FlightEnv("hover", task_overrides=STILL)
    obs, info = env.reset(seed=0)
    assert info["position_error_m"] == 0.0
    for _ in range(100):
        obs, reward, terminated, truncated, info = env.step(np.zeros(4, np.float32))
    assert info["position_error_m"] < 0.01
    assert 0.999 < reward <= 1.0
    assert not terminated and not truncated


def test_no_thrust_falls_out_of_the_box_and_terminates_with_the_crash_penalty() -> None:
    # Zero collective: free fall; 3 m (max_error_m) after sqrt(2 * 3 / 9.81) = 0.78 s, i.e.
    # step 40 at 50 Hz (the motors' 20 ms lag delays it by about one step).
    env = FlightEnv("hover", task_overrides=STILL)
    env.reset(seed=0)
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(np.array([0, 0, 0, -1.0], np.float32))
        steps += 1
        if terminated:
            break
    assert 39 <= steps <= 42
    assert reward == -10.0 and info["crashed"]
    assert info["position_error_m"] == pytest.approx(3.0, abs=0.15)


def test_goal_reached_terminates_with_the_bonus() -> None:
    # A velocity-level policy flying at its goal: terminated with reached=True, reward > 20
    env = FlightEnv("goal", action="velocity")
    obs, _ = env.reset(seed=2)
    for _ in range(500):
        e = obs[:3]
        a = np.clip(np.append(e * [0.15, 0.15, 0.5], 0.0), -1, 1).astype(np.float32)
        obs, reward, terminated, truncated, info = env.step(a)
        if terminated or truncated:
            break
    assert terminated and not info["crashed"]
    assert reward > 20.0
    assert info["position_error_m"] < 0.2


def test_rgb_array_renders_the_uav_in_the_middle() -> None:
    pytest.importorskip("moderngl")
    env = FlightEnv("hover", render_mode="rgb_array", task_overrides=STILL)
    env.reset(seed=0)
    try:
        image = env.render()
    except Exception as exc:  # no EGL and no display: the offscreen renderer cannot start
        pytest.skip(f"no offscreen OpenGL: {exc}")
    assert image.shape == (480, 640, 3) and image.dtype == np.uint8
    # the orange airframe is drawn around the image centre, where the camera aims
    middle = image[200:280, 270:370].reshape(-1, 3).astype(int)
    orange = (middle[:, 0] > 150) & (middle[:, 0] - middle[:, 2] > 80)
    assert orange.sum() > 20
    env.close()


def test_make_passes_settings_through() -> None:
    env = gym.make("skyswarm/WindHover-v0", action="attitude", control_hz=100.0)
    assert env.unwrapped.batch.ticks == 4
    assert env.unwrapped.task.wind is not None and env.unwrapped.task.wind.speed_m_s == 4.0
    with pytest.raises(ValueError, match="control_hz 30.0"):
        FlightEnv("hover", control_hz=30.0)
    with pytest.raises(ValueError, match="action level 'thrust'"):
        FlightEnv("hover", action="thrust")
    assert math.isclose(skyswarm.envs.FlightSettings().tick_s, 0.0025)
