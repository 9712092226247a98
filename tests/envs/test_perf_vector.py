"""The vector env's compiled step glue (envs/actions.py `check_clip` and `set_body_rates`,
FlightBatch.observe through envs/judge.py `judge`) against the numpy paths they
replace: the same bits at the edges (signed zeros, the bounds and the float32 tolerance, NaN and
inf, agents in another mode), the same errors, and the fast paths taken in an ordinary step."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from skyswarm.core import jit
from skyswarm.envs import FlightEnv, FlightVectorEnv
from skyswarm.envs.actions import TOLERANCE, ActionCheck, ActionError, action_level, check_clip
from skyswarm.envs.batch import FlightBatch, FlightSettings
from skyswarm.envs.judge import OBS_6D, OBS_QUATERNION
from skyswarm.envs.observations import observe, read_kinematics
from skyswarm.envs.tasks import Hover
from skyswarm.uav.commands import CommandError


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _edge_actions(n: int, dtype: type) -> np.ndarray:
    rng = np.random.default_rng(1)
    a = rng.uniform(-1.0, 1.0, (n, 4))
    a[0] = [-0.0, 0.0, -0.0, -0.0]  # signed zeros: the thrust's a <= 0 branch at -0.0
    a[1] = [1.0, -1.0, 1.0, -1.0]  # the bounds: no thrust at all
    a[2] = [-1.0, 1.0, -1.0, 1.0]  # all four motors at full thrust
    a[3] = [1.0 + 0.9 * TOLERANCE, -1.0 - 0.9 * TOLERANCE, 0.5, 1.0 + 0.5 * TOLERANCE]
    a[4] = [np.nextafter(0.0, 1.0), -np.nextafter(0.0, 1.0), 1e-300, -1e-300]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_clip_is_numpys_check_and_clip_bit_for_bit(dtype) -> None:
    a = _edge_actions(37, dtype)
    out = np.empty(a.shape)
    assert check_clip(a, TOLERANCE, out) == -1
    assert _bits(out) == _bits(np.clip(np.asarray(a, dtype=np.float64), -1.0, 1.0))
    assert np.signbit(out[0]).tolist() == [True, False, True, True]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1.0 + 2 * TOLERANCE, -1.5])
def test_check_clip_finds_the_first_bad_entry(bad) -> None:
    a = _edge_actions(9, np.float64)
    a[6, 2] = bad
    a[7, 0] = np.nan  # a later one is not the one reported
    assert check_clip(a, TOLERANCE, np.empty(a.shape)) == 6 * 4 + 2


def test_the_vector_check_takes_float32_float64_and_lists_and_names_the_bad_agent() -> None:
    level = action_level("body_rates")
    names = [f"env {i}" for i in range(5)]
    check = ActionCheck("skyswarm/hover vector env", names, level, batched=True)
    a = _edge_actions(5, np.float32)
    ref = np.clip(a.astype(np.float64), -1.0, 1.0)
    for given in (a, a.astype(np.float64), a.tolist(), np.asfortranarray(a)):
        assert _bits(check(given)) == _bits(ref)
    a[3, 1] = np.nan
    with pytest.raises(ActionError, match=r"agent 'env 3' has q = nan \(body_rates level\)"):
        check(a)
    with pytest.raises(ActionError, match=r"shape \(5, 3\)"):
        check(a[:, :3])
    single = ActionCheck("skyswarm/hover env", ["uav_0"], level)
    assert single(np.float32([0.5, -0.0, 1.0, -1.0])).shape == (1, 4)
    with pytest.raises(ActionError, match=r"agent 'uav_0' has thrust = 1.1"):
        single([0.0, 0.0, 0.0, 1.1])


def _batch(n: int = 6) -> FlightBatch:
    batch = FlightBatch(n, Hover(), FlightSettings(), seed=0)
    batch.restart(np.arange(n), np.random.default_rng(0))
    return batch


def test_body_rates_for_every_agent_write_the_commands_numbers() -> None:
    """The compiled pass against CommandInterface.body_rates on one agent at a time (a
    swarm-index path the fast one never takes): the setpoint records equal byte for byte."""
    fast, slow = _batch(), _batch()
    level = fast.level
    a = np.clip(_edge_actions(6, np.float64), -1.0, 1.0)
    level.apply(fast.swarm.command, None, a)
    for i in range(6):
        level.apply(slow.swarm.command, np.array([i]), a[i : i + 1])
    assert _bits(fast.swarm.setpoints.records) == _bits(slow.swarm.setpoints.records)
    rates = fast.swarm.setpoints.rates
    assert np.signbit(rates[0]).tolist() == [True, False, True]  # -0.0 x a rate stays -0.0
    assert fast.swarm.setpoints.thrust[1] == 0.0
    assert fast.swarm.setpoints.thrust[2] == 4.0 * fast.swarm.command.f_max


def test_an_agent_in_another_mode_is_switched_by_the_commands_own_path() -> None:
    """Agent 3 flies attitude: the compiled pass stops there and the command's path (mode
    switch, then every agent's setpoints) takes over, as on an index of every agent."""
    fast, slow = _batch(), _batch()
    for b in (fast, slow):
        b.swarm.command.attitude([3], roll=[0.1], pitch=[0.0], thrust=[5.0])
        assert b.swarm.setpoints.mode[3] != b.swarm.setpoints.mode[0]
    a = np.clip(_edge_actions(6, np.float64), -1.0, 1.0)
    fast.level.apply(fast.swarm.command, None, a)
    slow.level.apply(slow.swarm.command, np.arange(6), a)  # never the compiled pass
    assert (fast.swarm.setpoints.mode == fast.swarm.setpoints.mode[0]).all()
    assert _bits(fast.swarm.setpoints.records) == _bits(slow.swarm.setpoints.records)
    assert _bits(fast.swarm.cascade.memory) == _bits(slow.swarm.cascade.memory)


def test_a_non_finite_command_still_raises_the_commands_error() -> None:
    batch = _batch()
    a = np.zeros((6, 4))
    a[2, 3] = np.nan
    before = _bits(batch.swarm.setpoints.records)
    with pytest.raises(CommandError, match="thrust of agent 2"):
        batch.level.apply(batch.swarm.command, None, a)
    assert _bits(batch.swarm.setpoints.records) == before


def test_an_ordinary_vector_step_takes_the_compiled_command() -> None:
    envs = FlightVectorEnv(8)
    envs.reset(seed=0)

    def refuse(*args, **kwargs):  # CommandInterface.body_rates: the numpy path
        raise AssertionError("the vector env's step went through CommandInterface.body_rates")

    envs.batch.swarm.command.body_rates = refuse
    for _ in range(3):
        envs.step(envs.action_space.sample())
    envs.close()


@pytest.mark.parametrize("rotation", ["6d", "quaternion"])
def test_restart_observations_are_the_numpy_observations(rotation) -> None:
    """FlightBatch.observe (a restart's observations) through `judge` against
    read_kinematics + observe, after flying so every column is non-trivial."""
    batch = FlightBatch(9, Hover(), FlightSettings(rotation=rotation), seed=2)
    rng = np.random.default_rng(2)
    batch.restart(np.arange(9), rng)
    for _ in range(5):
        batch.step(rng.uniform(-0.5, 0.5, (9, 4)))
    assert batch._obs_layout == (OBS_6D if rotation == "6d" else OBS_QUATERNION)
    for index in (None, np.array([7, 0, 3]), np.array([], dtype=np.intp)):
        pick = np.arange(9) if index is None else index
        kin = read_kinematics(batch.swarm, "truth", index)
        ref = observe(batch.obs_spec, kin, batch.target[pick], batch.action[pick])
        assert _bits(batch.observe(index)) == _bits(ref)
    batch.sim.close()


def _arrays(batch: FlightBatch, skip: frozenset[str] = frozenset()) -> dict[str, bytes]:
    """Every numpy array the world, the swarm, its controller and motors and the batch hold
    (but the attributes named in `skip`)."""
    out = {}
    for name, owner in (
        ("world", batch.sim.world),
        ("state", batch.sim.world.state),
        ("swarm", batch.swarm),
        ("cascade", batch.swarm.cascade),
        ("motors", batch.swarm.motors),
        ("batch", batch),
    ):
        for key, value in vars(owner).items():
            if isinstance(value, np.ndarray) and key not in skip:
                out[f"{name}.{key}"] = _bits(value.view(np.uint8) if value.dtype.names else value)
    return out


@pytest.mark.parametrize(
    "settings",
    [
        FlightSettings(),
        FlightSettings(action="motors", rotation="quaternion", last_action=False),
        FlightSettings(randomize={"mass_scale": (0.8, 1.2), "motor_lag_scale": (0.5, 2.0)}),
    ],
)
def test_teleport_writes_what_the_numpy_restart_writes(settings) -> None:
    """An autoreset through envs/judge.py `teleport` against Swarm.restart and the numpy
    writes: twin batches flown alike, then restarted (some slots, all, in a scrambled order)
    from equal generators: every array of the world, the swarm and the batch, the
    observations and what is drawn next are the same bits."""
    twins, gens = [], []
    for fast in (True, False):
        batch = FlightBatch(7, Hover(), settings, seed=4)
        assert batch._teleports
        batch._teleports = fast  # the twin takes the numpy path
        rng = np.random.default_rng(4)
        batch.restart(np.arange(7), rng)
        twins.append(batch)
        gens.append(rng)
    actions = np.random.default_rng(5).uniform(-0.7, 0.7, (4, 7, batch.level.k))
    for index in (np.array([5, 1]), np.arange(7), np.array([6, 0, 3, 2])):
        for a in actions:
            for batch in twins:
                batch.step(a)
        obs = [batch.restart(index, rng) for batch, rng in zip(twins, gens, strict=True)]
        assert _bits(obs[0]) == _bits(obs[1])
        assert _arrays(twins[0]) == _arrays(twins[1])
        assert gens[0].random() == gens[1].random()
    for batch in twins:
        batch.sim.close()


def test_bullet_and_sensors_restart_on_the_numpy_path() -> None:
    """`teleport` writes the state arrays only: a backend with its own body store (Bullet)
    and the sensors' estimate restart through Swarm.restart."""
    for settings in (FlightSettings(physics="bullet"), FlightSettings(sensors="qrsim")):
        batch = FlightBatch(2, Hover(), settings, seed=0)
        assert not batch._teleports
        assert batch.restart(np.arange(2), np.random.default_rng(0)).shape == (2, 19)
        batch.sim.close()


def test_no_env_kernel_compiles_inside_the_steps() -> None:
    """Every signature the envs' steps call was declared with `ahead` (a single env's setpoint
    fields are contiguous, a vector env's strided; float32 and float64 actions; threaded)."""
    threads = numba.get_num_threads()
    try:
        jit.compile_ahead()
        before = jit.compiled_signatures()
        envs = [FlightEnv("hover"), FlightVectorEnv(1), FlightVectorEnv(8), FlightVectorEnv(2048)]
        for env in envs:
            env.reset(seed=0)
            for dtype in (np.float32, np.float64):
                env.step(env.action_space.sample().astype(dtype))
            env.close()
        after = jit.compiled_signatures()
    finally:
        numba.set_num_threads(threads)
    assert {k: (before.get(k), n) for k, n in after.items() if n != before.get(k)} == {}
