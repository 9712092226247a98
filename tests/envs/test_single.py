"""The single-agent Gymnasium environments (envs/single.py): the checkers of Gymnasium and
stable-baselines3, registration, determinism, the errors, and what a step does physically.
Numbers from the default airframe (quad_x, 1.2 kg, hover at half of 4 x 5.886 N)."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import skyswarm.envs
from skyswarm.envs import (
    ENV_IDS,
    ActionError,
    EpisodeEndedError,
    FlightEnv,
    FlightVectorEnv,
    parallel_env,
)

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


@pytest.mark.parametrize("task", sorted(ENV_IDS))
@pytest.mark.parametrize("action", ["body_rates", "attitude", "velocity", "motors"])
def test_sb3s_checker_passes_every_env_at_every_action_level(task: str, action: str) -> None:
    # SB3's own check_env (the `rl` extra) on every task x action level, and on the noisy
    # sensor estimate with quaternions: SB3 trains on any of them without a wrapper
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(FlightEnv(task, action=action), warn=True)
    if action == "body_rates":
        noisy = FlightEnv(task, observe="estimate", sensors="qrsim", rotation="quaternion")
        sb3_checker.check_env(noisy, warn=True)


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


@pytest.mark.parametrize("limit", [None, 20, 600])
def test_make_truncates_at_its_max_episode_steps(limit) -> None:
    # gym.make takes max_episode_steps for its TimeLimit and never passes it on: the env's own
    # 500-step truncation used to end every episode at 500 whatever make was given (600 here).
    # Registered: 500. A velocity action of 0 holds the hover, so only the limit ends it.
    kw = {} if limit is None else {"max_episode_steps": limit}
    env = gym.make("skyswarm/Hover-v0", action="velocity", **kw)
    env.reset(seed=0)
    ends = [env.step(np.zeros(4, np.float32))[2:4] for _ in range(limit or 500)]
    assert ends[-1] == (False, True) and set(ends[:-1]) == {(False, False)}
    assert env.spec.max_episode_steps == (limit or 500)


def test_complex_or_text_actions_are_not_numbers() -> None:
    # Before: numpy dropped the imaginary part (a ComplexWarning, then the real part flew)
    # and read strings of digits as numbers; now one ActionError for both, changing nothing.
    env = FlightEnv("hover")
    env.reset(seed=0)
    for action in (np.array([0.5 + 1j, 0, 0, 0]), np.array(["0", "0", "0", "0"])):
        with pytest.raises(ActionError, match=r"is not numeric \(real numbers\)"):
            env.step(action)
    assert env.batch.steps.tolist() == [0]


@pytest.mark.parametrize("physics", ["bullet", "fast"])
def test_after_close_a_step_is_refused_and_a_reset_starts_afresh(physics: str) -> None:
    # Before: on Bullet every step or unseeded reset after close() was pybullet's "Not
    # connected to physics server."; on the fast engine the closed env flew on.
    env, vec = FlightEnv("hover", physics=physics), FlightVectorEnv(2, physics=physics)
    swarm = parallel_env("formation", swarm_size=2, physics=physics)
    for e in (env, vec, swarm):
        e.reset(seed=0)
        e.close()
        e.close()  # twice is fine
    with pytest.raises(
        EpisodeEndedError, match=r"step\(\) before reset\(\) \(or after close\(\)\)"
    ):
        env.step(np.zeros(4))
    with pytest.raises(EpisodeEndedError, match=r"after close"):
        vec.step(np.zeros((2, 4)))
    with pytest.raises(EpisodeEndedError, match="no agent left"):
        swarm.step({})
    env.reset()  # a new simulator: steps again
    assert not env.batch.sim.closed and np.isfinite(env.step(np.zeros(4))[1])
    vec.reset()
    assert np.isfinite(vec.step(np.zeros((2, 4)))[1]).all()
    swarm.reset()
    assert len(swarm.step({a: np.zeros(4) for a in swarm.agents})[1]) == 2
    # a seeded reset after close gives the seed's episode, as on a fresh env
    fresh = FlightEnv("hover", physics=physics)
    assert (env.reset(seed=3)[0] == fresh.reset(seed=3)[0]).all()


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


def test_gymnasiums_checker_passes_with_its_render_check() -> None:
    # check_env renders an rgb_array env and checks the frame: (H, W, 3) uint8
    pytest.importorskip("moderngl")
    # without a spec: check_env would also open a "human" window (tested under Xvfb below)
    env = FlightEnv("hover", render_mode="rgb_array")
    env.reset(seed=0)
    try:
        env.render()
    except Exception as exc:  # no EGL and no display: the offscreen renderer cannot start
        pytest.skip(f"no offscreen OpenGL: {exc}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a render-mode problem is a warning in check_env
        warnings.filterwarnings("ignore", message=".*Box observation space m")  # unbounded obs
        warnings.filterwarnings("ignore", message=".*alternative render modes")
        check_env(env)  # skip_render_check=False: renders and checks the frame
    env.close()


HUMAN_SCRIPT = """
import sys
import numpy as np
import pyglet
from skyswarm.envs import FlightEnv

still = {"start_radius_m": 0.0, "start_speed_m_s": 0.0, "start_tilt_deg": 0.0}
human = FlightEnv("hover", render_mode="human", task_overrides=still)
frames = []
obs, _ = human.reset(seed=4)  # opens the window and shows the first frame
win = human._view.window.win
flip = win.flip

def read_then_flip():  # what the window is about to show: its back buffer before the swap
    img = pyglet.image.get_buffer_manager().get_color_buffer().get_image_data()
    data = np.frombuffer(img.get_data("RGB", img.width * 3), dtype=np.uint8)
    frames.append(data.reshape(img.height, img.width, 3)[::-1].copy())  # rows top down
    flip()

win.flip = read_then_flip
action = np.array([0.0, 0.0, 0.3, 0.0], np.float32)  # a slow yaw: the frames change
out = [human.step(action) for _ in range(10)]
returned = human.render()
ref = FlightEnv("hover", render_mode="rgb_array", task_overrides=still)
ref.reset(seed=4)
ref_frames = []
for _ in range(10):
    ref.step(action)
    ref_frames.append(ref.render())
shown = np.array(frames[:10]).astype(int)
diff = np.abs(shown - np.array(ref_frames).astype(int))
print(win.width, win.height, len(frames), returned is None, int(diff.max()),
      float((diff > 8).mean()), int(np.abs(shown[0] - shown[9]).max() > 0))
human.close()
ref.close()
"""


def test_human_mode_shows_the_rgb_array_frames_in_a_window(tmp_path) -> None:
    # "human": every reset and step draws into a real pyglet window (under Xvfb), render()
    # returns None, and the window shows what "rgb_array" returns for the same episode
    import shutil

    pytest.importorskip("moderngl")
    pytest.importorskip("pyglet")
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (apt-get install -y xvfb)")
    script = tmp_path / "human.py"
    script.write_text(HUMAN_SCRIPT)
    out = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x1024x24", sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    width, height, n, returned_none, max_diff, share, changed = out.stdout.split()[-7:]
    assert (int(width), int(height)) == (640, 480) and returned_none == "True"
    assert int(n) == 11  # ten steps and render() after the reset: one frame shown each
    # the same pixels (the window's GL context and the offscreen canvas may round a colour
    # differently: at most a few levels on a few pixels)
    assert int(max_diff) <= 8 or float(share) < 0.001, (max_diff, share)
    assert changed == "1"  # the frames move: the window is not showing a frozen image


def test_make_passes_settings_through() -> None:
    env = gym.make("skyswarm/WindHover-v0", action="attitude", control_hz=100.0)
    assert env.unwrapped.batch.ticks == 4
    assert env.unwrapped.task.wind is not None and env.unwrapped.task.wind.speed_m_s == 4.0
    with pytest.raises(ValueError, match="control_hz 30.0"):
        FlightEnv("hover", control_hz=30.0)
    with pytest.raises(ValueError, match="action level 'thrust'"):
        FlightEnv("hover", action="thrust")
    assert math.isclose(skyswarm.envs.FlightSettings().tick_s, 0.0025)


@pytest.mark.parametrize(("airframe", "rotor_model"), [("quad_x_simple", "thrust_lag"),
                                                       ("quad_x", "rotor_speed")])  # fmt: skip
def test_the_flight_model_is_named_in_the_settings_and_the_full_one_hovers(
    airframe: str, rotor_model: str
) -> None:
    """The envs pin quad_x_simple explicitly (the RL numbers were measured on it); airframe =
    "quad_x" trains on the full model, whose zero action also holds the hover within 1 cm."""
    default = skyswarm.envs.FlightSettings().airframe
    assert default == "quad_x_simple"
    env = FlightEnv("hover", task_overrides=STILL, airframe=airframe)
    assert env.batch.swarm.config.airframe.rotor_model == rotor_model
    env.reset(seed=0)
    for _ in range(100):
        _, reward, terminated, _, info = env.step(np.zeros(4, np.float32))
    assert info["position_error_m"] < 0.01 and not terminated


@pytest.mark.parametrize("make", [lambda: FlightEnv("hover"), lambda: gym.make("skyswarm/Goal-v0")])
def test_reset_options_none_or_empty_are_taken_any_other_is_refused(make) -> None:
    # before: options={"start": ...} (or a typo of any option) was silently ignored
    env = make()
    first, _ = env.reset(seed=4, options=None)
    again, _ = env.reset(seed=4, options={})
    np.testing.assert_array_equal(first, again)
    with pytest.raises(ValueError, match=r"reset option 'start' is not one this env takes; it "):
        env.reset(seed=4, options={"start": [0.0, 0.0, 10.0]})
    env.close()
