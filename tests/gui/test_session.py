"""Viewed runs: pacing, commands, and identical results to headless runs; cameras and picking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.gui.conftest import ROOT
from tests.viewer_driver import drive_like_a_viewer

DROP = ROOT / "configs" / "drop_test.toml"


def test_paced_session_records_same_trajectory_as_headless(tmp_path: Path) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.recorder import TRAJECTORY_DTYPE
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.session import SimSession

    scenario = load_scenario(DROP, ["simulation.duration_s=1.0"])
    head = Simulator.from_scenario(scenario, tmp_path / "headless")
    head.run()
    head.finish()
    head.close()
    sim = Simulator.from_scenario(scenario, tmp_path / "viewed")
    session = SimSession(sim, speed=3.0)
    drive_like_a_viewer(session)  # random frame times, pausing and resuming at random
    assert session.reason == "duration" and sim.world.tick == 400
    sim.finish()
    sim.close()
    a = (tmp_path / "headless" / "trajectory.bin").read_bytes()
    b = (tmp_path / "viewed" / "trajectory.bin").read_bytes()
    assert len(a) == 41 * 9 * TRAJECTORY_DTYPE.itemsize and a == b  # 40 Hz, 1 s, t = 0; 9 boxes


def test_session_pacing_speed_and_start() -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.session import SimSession

    sim = Simulator.from_scenario(load_scenario(DROP, ["mission.auto_start=false"]))
    s = SimSession(sim, clock=lambda: 0.0)  # frozen wall clock: the stepping budget never runs
    # out, however loaded the machine (the budget: test_viewer_features.py, with a fake clock)
    assert s.state == "waiting for Start" and s.advance(1.0) == 0
    s.step_once()
    assert sim.world.tick == 1
    s.start_or_pause()
    assert s.advance(0.1) == 40  # 0.1 s x speed 1 / 2.5 ms
    s.faster()
    assert s.advance(0.1) == 80  # x2
    s.slower()
    s.slower()
    assert s.advance(0.1) == 20  # x0.5
    assert sim.world.tick == 141
    assert s.kill(3) and not s.kill(3) and not sim.agents[3].alive
    sim.close()


def test_orbit_camera_projects_target_to_centre_and_ray_inverts_project() -> None:
    from skyswarm.gui.camera import OrbitCamera, TopCamera

    cam = OrbitCamera(target=(1.0, 2.0, 3.0), distance=10.0)
    cam.aspect = 4 / 3
    assert cam.project(np.array([[1.0, 2.0, 3.0]]), 800, 600)[0] == pytest.approx([400, 300])
    p = np.array([2.0, 1.0, 4.0])
    px = cam.project(p[None], 800, 600)[0]
    origin, d = cam.ray(px[0], px[1], 800, 600)
    closest = origin + d * ((p - origin) @ d)
    assert np.linalg.norm(closest - p) < 1e-6
    top = TopCamera((5.0, 5.0), half_height=10.0)
    top.aspect = 1.0
    # North (+y) is up: 10 m north of the centre is the top edge.
    assert top.project(np.array([[5.0, 15.0, 0.0]]), 100, 100)[0] == pytest.approx([50, 0])


def test_pick_returns_nearest_alive_agent_on_ray() -> None:
    from skyswarm.gui.scene import Frame, pick

    frame = Frame(
        0.0, np.array([1, 2, 3]), ["uav"], np.zeros(3, int),
        np.array([[5.0, 0, 0], [10.0, 0, 0], [5.0, 3.0, 0]]), np.tile([0, 0, 0, 1.0], (3, 1)),
        np.array([True, True, True]),
    )  # fmt: skip
    origin, d = np.zeros(3), np.array([1.0, 0, 0])
    assert pick(frame, origin, d, np.full(3, 0.3)) == 1
    frame.alive[0] = False
    assert pick(frame, origin, d, np.full(3, 0.3)) == 2
    assert pick(frame, origin, np.array([0, 0, 1.0]), np.full(3, 0.3)) is None
