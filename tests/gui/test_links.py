"""Radio links (issue 30): the dispatcher's window of recent copies (core/comms/links.py) and
the live view drawing them (gui/links.py), on configs/comms_demo.toml: 9 boxes 40 m apart, a
radio of 100 m range with Rayleigh losses."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gui.conftest import ROOT

DEMO = ROOT / "configs" / "comms_demo.toml"


def _sim(quiet: bool = False):
    """comms_demo; `quiet`: its boxes' own traffic off (the test sends what it counts)."""
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator

    off = ["drop_test.beacon_hz=0.0", "drop_test.telemetry_hz=0.0"] if quiet else []
    return Simulator.from_scenario(load_scenario(DEMO, off))


def test_link_window_keeps_the_last_ticks_only() -> None:
    from skyswarm.core.comms.links import LinkWindow

    w = LinkWindow(3)
    w.add(10, np.array([1, 1]), np.array([2, 3]), 0, 7)
    w.add(12, np.array([4]), np.array([5]), np.array([1]), np.array([4]))
    got = w.recent(12)
    assert got.sender.tolist() == [1, 1, 4] and got.tick.tolist() == [10, 10, 12]
    assert got.channel.tolist() == [0, 0, 1] and got.fate.tolist() == [7, 7, 4]
    assert w.recent(13).sender.tolist() == [4]  # tick 10 is 3 ticks old at 13: dropped
    assert len(w.recent(15).sender) == 0
    with pytest.raises(ValueError, match="at least 1 tick"):
        LinkWindow(0)


def test_recent_links_account_for_every_copy_addressed() -> None:
    from skyswarm.core.comms.fates import DELIVERED, FATES

    sim = _sim(quiet=True)
    try:
        disp = sim.dispatcher
        assert len(disp.recent_links().sender) == 0  # off until watched
        disp.watch_links(1000)
        for _ in range(3):
            sim.agents[1].transceiver.broadcast("hello", channel="radio")
            sim.step()
        for _ in range(6):  # latency 2 ticks + jitter 1: every copy has landed
            sim.step()
        links = disp.recent_links()
        radio = disp.totals()["radio"]
        assert radio["in_flight"] == 0 and radio["addressed"] > 0
        # Each copy with a receiver once, with its fate; a broadcast's copies beyond the
        # spatial query's reach are counted out of range without a receiver (no line).
        assert len(links.sender) <= radio["addressed"]
        assert set(links.sender.tolist()) == {1}
        assert 1 not in set(links.receiver.tolist())
        for fate in ("delivered", "lost_on_air"):
            assert int((links.fate == FATES.index(fate)).sum()) == radio[fate], fate
        oor = int((links.fate == FATES.index("out_of_range")).sum())
        assert len(links.sender) == radio["addressed"] - (radio["out_of_range"] - oor)
        assert (links.fate == DELIVERED).sum() > 0
    finally:
        sim.close()


def test_live_view_draws_links_in_the_channel_colour(xvfb: str) -> None:
    from pyglet.window import key

    from skyswarm.core.comms.fates import DELIVERED
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.links import CHANNEL_COLORS, LINK_LOST, link_lines
    from skyswarm.gui.views import ViewOptions

    sim = _sim()
    app = ViewerApp(sim, options=ViewOptions(links=False))
    try:
        app.on_key(key.O, 0)  # links on: the dispatcher starts keeping them
        assert app.show_links
        for _ in range(4):
            sim.agents[5].transceiver.broadcast("hi", channel="radio")  # the centre box
            sim.step()
        links = sim.dispatcher.recent_links()
        frame = app.frame()
        lines = link_lines(frame, links)
        delivered = links.fate == DELIVERED
        n_ok, n_lost = int(delivered.sum()), int((~delivered).sum())
        assert n_ok > 0
        assert sum(len(v) for v in lines) == 2 * (n_ok + n_lost)
        assert np.allclose(lines[0][:, 3:], CHANNEL_COLORS[0])  # radio: channel 0, cyan
        if n_lost:
            assert np.allclose(lines[1][:, 3:], LINK_LOST)
        on = app.main.screenshot()
        app.on_key(key.O, 0)
        off = app.main.screenshot()
        win = app.main
        _, _, w, h = win.scene_viewport
        i5 = frame.index_of(5)
        changed = 0
        for r in links.receiver[delivered]:
            mid = (frame.positions[i5] + frame.positions[frame.index_of(int(r))]) / 2
            x, y = win.camera.project(mid[None], w, h)[0]
            if 2 <= x < w - 2 and 2 <= y < h - 2:
                a = on[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2].astype(int)
                b = off[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2].astype(int)
                changed += bool((a[..., 2] - b[..., 2] > 20).any())  # bluer: cyan on grey
        assert changed >= max(1, n_ok // 2)
    finally:
        app.shutdown()
        sim.close()
