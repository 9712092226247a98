"""Issue 30: the proximity / avoidance layer (gui/proximity.py): a ring around each flying UAV
coloured by its nearest neighbour's distance against the [avoidance] distances; key X, flag
--proximity, in the window, the offscreen pictures and the replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.gui.conftest import ROOT

DROP = ROOT / "configs" / "drop_test.toml"  # 9 boxes in a 3 x 3 grid, 2 m apart, from 10 m


def _frame() -> Any:
    """UAVs 1, 2 at 1.0 m (a hit: < 1.2), 3, 4 at 2.0 m (< 2.5: repulsion), 5 alone (9 m from
    4); a dead UAV 6 between 1 and 2 and a base station 7 next to 5, neither counted."""
    from skyswarm.gui.scene import Frame

    pos = np.array(
        [[0, 0, 10], [1, 0, 10], [20, 0, 10], [22, 0, 10], [31, 0, 10], [0.5, 0, 10], [31, 0.3, 0]],
        dtype=float,
    )
    roles = ["base_station", "uav"]
    role_index = np.array([1, 1, 1, 1, 1, 1, 0])
    alive = np.array([True, True, True, True, True, False, True])
    q = np.tile([0.0, 0.0, 0.0, 1.0], (7, 1))
    return Frame(1.0, np.arange(1, 8), roles, role_index, pos, q, alive)


def test_nearest_distances_and_colours_against_the_avoidance_distances() -> None:
    from skyswarm.gui.proximity import (
        PROX_CLEAR,
        PROX_HIT,
        PROX_NEAR,
        ProximityLimits,
        nearest_distances,
        ring_colors,
    )

    frame = _frame()
    d = nearest_distances(frame)
    np.testing.assert_allclose(d[:5], [1.0, 1.0, 2.0, 2.0, 9.0])
    assert np.isnan(d[5]) and np.isnan(d[6])  # dead and base station: no ring
    limits = ProximityLimits(hit_m=1.2, near_m=2.5)
    c = ring_colors(d[:5], limits)
    np.testing.assert_allclose(c, np.float32([PROX_HIT] * 2 + [PROX_NEAR] * 2 + [PROX_CLEAR]))
    # At the edges: exactly at a limit is not under it.
    edge = ring_colors(np.array([1.2, 2.5, 1.1999, 2.4999]), limits)
    np.testing.assert_allclose(edge, np.float32([PROX_NEAR, PROX_CLEAR, PROX_HIT, PROX_NEAR]))
    # One UAV alone has no neighbour: infinitely far, clear.
    alone = _frame()
    alone.alive[:] = [False, False, False, False, True, False, True]
    d1 = nearest_distances(alone)
    assert d1[4] == np.inf and np.isnan(d1[:4]).all()


def test_rings_are_drawn_around_each_uav_in_its_colour() -> None:
    from skyswarm.gui.camera import TopCamera
    from skyswarm.gui.offscreen import OffscreenCanvas
    from skyswarm.gui.proximity import RING_SEGMENTS, ProximityLimits, proximity_lines
    from skyswarm.gui.scene import Scenery

    frame = _frame()
    limits = ProximityLimits(1.2, 2.5)
    lines = proximity_lines(frame, limits)
    assert len(lines) == 1 and lines[0].shape == (5 * RING_SEGMENTS * 2, 7)  # 5 rings
    size = (640, 360)
    canvas = OffscreenCanvas(Scenery(), size)
    cam = TopCamera((15.0, 0.0), 10.0)
    cam.aspect = size[0] / size[1]
    canvas.draw(frame, cam)
    plain = canvas.read().astype(int).copy()
    canvas.fbo.use()
    canvas.renderer.render(frame, cam, (0, 0, *size), extra=lines, ground_later=True)
    ringed = canvas.read().astype(int).copy()
    canvas.release()
    # The ring's leftmost point (radius 1.25 m = near_m / 2) of UAVs 1 (red), 3 (amber), 5 (green)
    r = limits.near_m / 2
    pts = frame.positions[[0, 2, 4]] - [r, 0.0, 0.0]
    px = cam.project(pts, *size)
    got = []
    for x, y in px:
        patch = ringed[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2].reshape(-1, 3)
        before = plain[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2].reshape(-1, 3)
        k = int(np.abs(patch - before).sum(axis=1).argmax())  # the pixel the ring changed most
        got.append(patch[k])
    red, amber, green = got
    assert red[0] > 200 and red[1] < 80 and red[2] < 80, red
    assert amber[0] > 200 and 130 < amber[1] < 210 and amber[2] < 80, amber
    assert green[1] > green[0] + 40 and green[1] > green[2] + 40, green
    # Nothing of the dead UAV 6 or the base station: the pixels 1 m below the station are the
    # same with and without the layer.
    sx, sy = cam.project(np.array([[31.0, -2.0, 0.0]]), *size)[0]
    assert np.array_equal(ringed[int(sy), int(sx)], plain[int(sy), int(sx)])


def test_proximity_key_and_flag_in_the_window(xvfb: str) -> None:
    from pyglet.window import key

    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.proximity import PROX_NEAR
    from skyswarm.gui.views import ViewOptions

    sim = Simulator.from_scenario(load_scenario(DROP))
    app = ViewerApp(sim)
    try:
        win = app.main
        assert any(line.lstrip().startswith("X ") for line in app.help_lines())
        assert app.extra_lines() == []  # off by default
        win.dispatch_event("on_key_press", key.X, 0)
        win.dispatch_pending_events()
        (lines,) = app.extra_lines()
        assert len(lines) == 9 * 40  # nine boxes, 2 m apart: every ring amber (< 2.5 m)
        np.testing.assert_allclose(lines[:, 3:], np.float32([PROX_NEAR] * len(lines)))
        on = win.screenshot().astype(int)
        win.dispatch_event("on_key_press", key.X, 0)
        win.dispatch_pending_events()
        off = win.screenshot().astype(int)
        amber = (on[..., 0] > 200) & (on[..., 1] > 120) & (on[..., 2] < 90)
        amber_off = (off[..., 0] > 200) & (off[..., 1] > 120) & (off[..., 2] < 90)
        assert amber.sum() > 200 and amber_off.sum() < amber.sum() / 10, (
            amber.sum(),
            amber_off.sum(),
        )
    finally:
        app.shutdown()
        sim.close()
    from skyswarm.app.cli import _parser
    from skyswarm.app.gui_commands import view_options

    opts = view_options(_parser().parse_args(["view", str(DROP), "--proximity"]))
    assert opts.proximity and opts == ViewOptions(proximity=True)


def test_replay_snapshot_draws_the_rings_from_the_recording(tmp_path: Path) -> None:
    from PIL import Image

    from skyswarm.app.cli import main

    run = tmp_path / "run"
    assert main(["run", str(DROP), "--duration", "0.5", "--out", str(run), "--quiet"]) == 5
    shots = {}
    for flag in ((), ("--proximity",)):
        out = tmp_path / f"s{len(flag)}.png"
        args = ["snapshot", str(run), "--time", "0.5", "--out", str(out), "--camera", "top"]
        assert main([*args, *flag]) == 0
        shots[bool(flag)] = np.asarray(Image.open(out).convert("RGB")).astype(int)
    on, off = shots[True], shots[False]
    amber = (on[..., 0] > 200) & (on[..., 1] > 120) & (on[..., 2] < 90)
    assert amber.sum() > 9 * 20, amber.sum()  # nine rings in the top view
    assert ((off[..., 0] > 200) & (off[..., 1] > 120) & (off[..., 2] < 90)).sum() < 20


@pytest.mark.parametrize("n", [1000])
def test_rings_for_1000_uavs_are_one_array(n: int) -> None:
    from skyswarm.gui.proximity import RING_SEGMENTS, ProximityLimits, proximity_lines
    from skyswarm.gui.scene import Frame

    rng = np.random.default_rng(0)
    pos = rng.uniform(0, 100, (n, 3))
    q = np.tile([0.0, 0.0, 0.0, 1.0], (n, 1))
    frame = Frame(0.0, np.arange(n), ["uav"], np.zeros(n, int), pos, q, np.ones(n, bool))
    (lines,) = proximity_lines(frame, ProximityLimits())
    assert lines.shape == (n * RING_SEGMENTS * 2, 7) and lines.dtype == np.float32


def test_uavs_the_avoidance_steers_get_an_inner_ring() -> None:
    """crossing.toml (avoidance on): the UAVs whose `Avoidance.active` is set get a white ring
    of 0.7 the radius; a frame with avoidance off (None) gets the distance rings only."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.proximity import (
        AVOIDING_RING,
        PROX_AVOIDING,
        RING_SEGMENTS,
        ProximityLimits,
        avoiding_flags,
        proximity_lines,
    )
    from skyswarm.gui.scene import LiveSource

    sim = Simulator.from_scenario(load_scenario(ROOT / "configs" / "crossing.toml"))
    try:
        swarm = sim.agents[1].swarm
        while not swarm.avoidance.active.any() and sim.time_s < 5.0:
            sim.step()
        source = LiveSource(sim)
        frame = source.frame()
        flags = avoiding_flags(frame, source.agents)
        active = {a.id for a in source.agents if swarm.avoidance.active[a.index]}
        # the barrier constrains every UAV with a neighbour in the sensor's range, and the
        # crossing's 50 fly in range of each other from the start: all are active here
        assert 0 < len(active) <= 50
        assert set(frame.ids[flags].tolist()) == active
        limits = ProximityLimits.of(source.scenery)
        assert limits == ProximityLimits(1.2, 2.5)  # crossing.toml's [avoidance] distances
        outer, inner = proximity_lines(frame, limits, flags)
        assert len(outer) == 50 * RING_SEGMENTS * 2
        assert len(inner) == len(active) * RING_SEGMENTS * 2
        np.testing.assert_allclose(inner[:, 3:], np.float32([PROX_AVOIDING] * len(inner)))
        centre = frame.positions[np.flatnonzero(flags)[0]]
        r = np.linalg.norm(inner[: 2 * RING_SEGMENTS, :3] - centre, axis=1)
        np.testing.assert_allclose(r, AVOIDING_RING * 2.5 / 2, rtol=1e-5)
        assert len(proximity_lines(frame, limits)) == 1
    finally:
        sim.close()
