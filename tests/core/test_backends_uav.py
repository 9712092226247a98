"""Cross-validation of the two physics backends with quadrotors: the same flights on Bullet and
on the fast engine agree (step responses, positions, landings, crashes, collisions), and the
fast engine is deterministic and completes the shipped swarm missions with the same outcome."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.config import SimulationConfig, WorldConfig, load_scenario
from skyswarm.core.faults import FaultsConfig
from skyswarm.core.simulator import Simulator
from skyswarm.uav.config import load_uav_config
from skyswarm.uav.swarm import Swarm

DT = 0.0025
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
BACKENDS = ("bullet", "fast")


def fly(
    physics: str,
    positions,
    yaws,
    command: Callable[[Swarm], None],
    seconds: float,
) -> tuple[Swarm, np.ndarray]:
    """Hovering UAVs given `command` at t = 0; returns the swarm and (ticks, N, 3) positions."""
    sim = Simulator(SimulationConfig(physics=physics), WorldConfig())
    swarm = Swarm(
        sim,
        load_uav_config(),
        range(1, len(positions) + 1),
        np.array(positions, dtype=float),
        np.array(yaws, dtype=float),
        hovering=True,
    )
    sim.install_faults(FaultsConfig())
    command(swarm)
    track = np.empty((round(seconds / DT), len(positions), 3))
    for i in range(len(track)):
        sim.step()
        track[i] = sim.world.state.position[swarm.rows]
    return swarm, track


def rise_and_overshoot(y: np.ndarray, start: float, target: float) -> tuple[float, float]:
    """10-90 % rise time (s) and overshoot (fraction of the step) of a step response."""
    frac = (y - start) / (target - start)
    rise = (np.argmax(frac >= 0.9) - np.argmax(frac >= 0.1)) * DT
    return rise, max(0.0, float(frac.max()) - 1.0)


def both(*args) -> dict[str, tuple[Swarm, np.ndarray]]:
    return {p: fly(p, *args) for p in BACKENDS}


def test_hover_agrees_within_5_cm_over_20_s() -> None:
    runs = both([(0, 0, 2), (3, 0, 5), (0, 3, 10), (3, 3, 1)], [0, 1, 2, 3], lambda s: None, 20.0)
    gap = np.linalg.norm(runs["bullet"][1] - runs["fast"][1], axis=2).max()
    assert gap < 0.05
    for _, track in runs.values():  # and both really hover
        assert np.abs(track[-1] - track[0]).max() < 0.01


def test_altitude_step_of_1_m_has_the_same_rise_and_overshoot() -> None:
    runs = both([(0, 0, 2)], [0], lambda s: s.agents[0].goto(0, 0, 3, 0), 8.0)
    (rb, ob), (rf, of) = (rise_and_overshoot(t[:, 0, 2], 2, 3) for _, t in runs.values())
    assert 0.3 < rb < 3.0  # a real step response, not an instant jump
    assert rf == pytest.approx(rb, rel=0.02)
    assert abs(of - ob) <= 0.02
    assert np.linalg.norm(runs["bullet"][1] - runs["fast"][1], axis=2).max() < 0.05


def test_speed_step_of_2_m_s_has_the_same_rise_and_overshoot() -> None:
    runs = both([(0, 0, 2)], [0], lambda s: s.agents[0].fly(2.0, 0.0, 2.0, 90.0), 8.0)
    speeds = {p: np.diff(t[:, 0, 0]) / DT for p, (_, t) in runs.items()}
    (rb, ob), (rf, of) = (rise_and_overshoot(v, 0.0, 2.0) for v in speeds.values())
    assert 0.2 < rb < 3.0
    assert rf == pytest.approx(rb, rel=0.02)
    assert abs(of - ob) <= 0.02
    assert speeds["fast"][-1] == pytest.approx(2.0, abs=0.02)
    assert np.linalg.norm(runs["bullet"][1] - runs["fast"][1], axis=2).max() < 0.05


def test_waypoints_mission_agrees_within_5_cm_over_20_s() -> None:
    tracks = {}
    for physics in BACKENDS:
        scenario = load_scenario(CONFIGS / "waypoints.toml", [f"simulation.physics={physics}"])
        sim = Simulator.from_scenario(scenario)
        slots = [a.slot for a in sim.physical_agents]
        track = np.empty((8000, len(slots), 3))
        for i in range(len(track)):
            sim.step()
            track[i] = sim.world.state.position[slots]
        tracks[physics] = track
        sim.close()
    path = np.linalg.norm(np.diff(tracks["bullet"], axis=0), axis=2).sum(axis=0)
    assert path.min() > 10.0  # m: the agents really fly their legs
    assert np.linalg.norm(tracks["bullet"] - tracks["fast"], axis=2).max() < 0.05


@pytest.mark.parametrize("physics", BACKENDS)
def test_landing_at_half_a_metre_per_second_is_survived(physics: str) -> None:
    swarm, track = fly(physics, [(0, 0, 1)], [0], lambda s: s.agents[0].fly_velocity(0, 0, -0.5), 4)
    agent = swarm.agents[0]
    assert agent.alive and agent.death_cause is None
    # standing on its landing gear (tips 0.09 m below the centre of mass), squeezed by the
    # weight less the thrust the wound-down descent loop still gives: 0.0873 m measured
    # (0.08 m on the mesh's feet with quad_x_simple)
    assert track[-1, 0, 2] == pytest.approx(0.087, abs=0.002)
    assert agent.tilt_deg < 1.0


@pytest.mark.parametrize("physics", BACKENDS)
def test_a_touchdown_tilted_beyond_the_landing_limit_is_a_crash(physics: str) -> None:
    # The 0.5 m/s landing above (survived at the default 30 deg limit, tilt under 1 deg) with
    # landing_tilt_deg = 0: a touchdown at any tilt >= the limit is a crash into the ground,
    # however slow; the speed alone does not make a landing (kills a tilt-blind landing rule).
    # quad_x_rotor: no legs, so the airframe itself touches the ground on both backends (the
    # fast engine's spring legs hold quad_x off it with no rigid contact to judge).
    from skyswarm.core.collisions import CollisionConfig
    from skyswarm.core.resources import CONFIGS_DIR

    rotor = load_uav_config(CONFIGS_DIR / "airframes" / "quad_x_rotor.toml")

    def touch_down(limit_deg: float):
        sim = Simulator(SimulationConfig(physics=physics), WorldConfig())
        swarm = Swarm(sim, rotor, [1], np.array([(0.0, 0.0, 1.0)]), [0.0], hovering=True)
        sim.install_faults(FaultsConfig(collisions=CollisionConfig(landing_tilt_deg=limit_deg)))
        swarm.agents[0].fly_velocity(0, 0, -0.5)
        for _ in range(round(4.0 / DT)):
            sim.step()
        return swarm.agents[0]

    assert touch_down(30.0).alive  # the same touchdown, at the default limit: a landing
    agent = touch_down(0.0)
    assert not agent.alive and agent.death_cause.startswith("crash: into ground at")
    speed = float(agent.death_cause.split(" at ")[1].split(" m/s")[0])
    assert speed < 1.0  # slow enough to be a landing by speed


@pytest.mark.parametrize("physics", BACKENDS)
def test_impact_at_5_m_s_kills(physics: str) -> None:
    swarm, _ = fly(physics, [(0, 0, 3)], [0], lambda s: s.agents[0].fly_velocity(0, 0, -5.0), 3)
    agent = swarm.agents[0]
    assert not agent.alive and agent.death_cause.startswith("crash: into ground at")
    speed = float(agent.death_cause.split(" at ")[1].split(" m/s")[0])
    assert speed > 4.0  # well above the 1 m/s landing limit


def test_head_on_uavs_collide_within_two_ticks_of_each_other_on_both_backends() -> None:
    def head_on(s: Swarm) -> None:  # 4 m apart, 1 m/s each, noses together
        s.agents[0].fly_velocity(1.0, 0, 0)
        s.agents[1].fly_velocity(1.0, 0, 0)

    ticks = {}
    for physics in BACKENDS:
        swarm, _ = fly(physics, [(-2, 0, 2), (2, 0, 2)], [0, np.pi], head_on, 4.0)
        a, b = swarm.agents
        assert a.death_cause == "collision: with agent 2"
        assert b.death_cause == "collision: with agent 1"
        ticks[physics] = round(a.death_time_s / DT)
    assert 700 < ticks["bullet"] < 900  # ~2 s: the airframes touch ~0.46 m apart
    assert abs(ticks["fast"] - ticks["bullet"]) <= 2


def trajectory_md5(tmp_path, name: str, overrides: list[str]) -> tuple[str, dict]:
    from skyswarm.app.api import run_scenario

    out = tmp_path / f"{name}-{len(list(tmp_path.iterdir()))}"
    summary = run_scenario(name, results_dir=out, overrides=overrides)
    return hashlib.md5((out / "trajectory.bin").read_bytes()).hexdigest(), summary


def test_fast_backend_is_bit_identical_run_to_run_and_in_a_fresh_process(tmp_path) -> None:
    import subprocess
    import sys

    over = ["simulation.physics=fast", "simulation.duration_s=5"]
    first, _ = trajectory_md5(tmp_path, "boids", over)
    second, _ = trajectory_md5(tmp_path, "boids", over)
    assert first == second
    out = tmp_path / "subprocess"
    code = (
        "from skyswarm.app.api import run_scenario; import sys;"
        f"run_scenario('boids', results_dir=sys.argv[1], overrides={over!r})"
    )
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, capture_output=True)
    assert hashlib.md5((out / "trajectory.bin").read_bytes()).hexdigest() == first
    other, _ = trajectory_md5(tmp_path, "boids", [*over, "simulation.seed=9"])
    assert other != first  # the seed matters


@pytest.mark.slow
def test_boids_and_the_reference_flock_complete_on_the_fast_backend(tmp_path) -> None:
    _, boids = trajectory_md5(tmp_path, "boids", ["simulation.physics=fast"])
    assert boids["metrics"]["collisions"] == 0
    assert boids["alive"] == boids["agents"]
    _, flock = trajectory_md5(tmp_path, "flocking_coverage", ["simulation.physics=fast"])
    m = flock["metrics"]
    assert m["coverage"] >= 0.99 and m["agents_lost"] == 0
    assert flock["deaths_by_cause"] == {}


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_runs_on_the_fast_backend(path: Path) -> None:
    # Nothing is killed in the first 3 s on either backend: not by the fast engine's contacts.
    scenario = load_scenario(path, ["simulation.physics=fast", "simulation.duration_s=3"])
    sim = Simulator.from_scenario(scenario)
    assert sim.world.name == "fast"
    sim.run()
    assert sim.tick == 1200 or sim.stop_reason == "mission done"
    assert sim.deaths == []
    sim.close()


@pytest.mark.slow
def test_fast_backend_batch_runs_are_bit_identical_with_one_or_two_workers(tmp_path) -> None:
    from skyswarm.app.cli import main

    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        f'[sweep]\nscenario = "{(CONFIGS / "hover_wind.toml").as_posix()}"\nseed = 5\nseeds = 2\n'
        '[fixed]\nsimulation.physics = "fast"\nsimulation.duration_s = 2.0\n'
        "[grid]\nagents.count = [2, 4]\n"
    )
    digests = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        assert main(["batch", str(sweep), "--workers", workers, "--out", str(out)]) == 0
        runs = sorted((out / "runs").glob("*/trajectory.bin"))
        assert len(runs) == 4
        digests.append({p.parent.name: hashlib.md5(p.read_bytes()).hexdigest() for p in runs})
    assert digests[0] == digests[1]
    assert len(set(digests[0].values())) == 4  # four runs (seeded turbulence), not one copied


def test_faults_recorder_gui_session_and_replay_work_unchanged_on_the_fast_backend(tmp_path):
    # Nine boids on the fast engine with physical propeller failures (2,000 per flight hour: a
    # few fail in the first second and fall 10 m): the fault plays out and the collision
    # monitor ends it on impact, as on Bullet; a run stepped by the GUI's paced session records
    # the headless run's bytes; the live view shows the world's poses; the replay of the
    # recording ends at the final state and renders offscreen.
    from skyswarm.gui.replay import ReplaySource, export_video
    from skyswarm.gui.scene import LiveSource
    from skyswarm.gui.session import SimSession

    over = [
        "simulation.physics=fast",
        "simulation.duration_s=4.0",
        "agents.count=9",
        "faults.mode=physical",
        "uav.fault_rates.propeller_failure=2000",
    ]
    scenario = load_scenario(CONFIGS / "boids.toml", over)
    head = Simulator.from_scenario(scenario, tmp_path / "headless")
    head.run()
    head.finish()
    head.close()
    causes = [d.cause for d in head.deaths]
    assert 1 <= len(causes) < 9  # some fail (seed 1: 5), not all
    assert all(
        c.startswith("crash: into ground at") and "(after propeller failure" in c for c in causes
    )

    sim = Simulator.from_scenario(scenario, tmp_path / "viewed")
    session, live = SimSession(sim, speed=4.0), LiveSource(sim)
    rng = np.random.default_rng(0)
    while not session.finished:
        session.advance(float(rng.uniform(0.001, 0.05)), budget_s=10.0)
        frame = live.frame()
        slots = [a.slot for a in live.agents]
        np.testing.assert_array_equal(frame.positions, sim.world.state.position[slots])
    assert session.reason == "duration" and sim.world.tick == 1600
    assert [a.alive for a in live.agents] == frame.alive.tolist()
    final = sim.world.state.position[[a.slot for a in sim.physical_agents if a.alive]]
    sim.finish()
    sim.close()
    a = (tmp_path / "headless" / "trajectory.bin").read_bytes()
    assert len(a) > 0 and a == (tmp_path / "viewed" / "trajectory.bin").read_bytes()

    replay = ReplaySource(tmp_path / "headless")
    assert replay.duration_s == pytest.approx(4.0)
    last = replay.frame_at(4.0)
    np.testing.assert_array_equal(last.positions[last.alive], final)  # the dead are not shown
    n = export_video(tmp_path / "headless", None, tmp_path / "frames", fps=2, size=(160, 120))
    assert n == 8 and len(list((tmp_path / "frames").glob("*.png"))) == 8
