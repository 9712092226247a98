"""Flocking area coverage (the reference case study): full runs of the shipped scenario.

Each long scenario runs once (module-scoped fixtures) and several tests read its results. Seeds
are the config's (seed 1). Kills are scripted through `Simulator.kill` at 30, 60 and 90 s: the
leader (agent 1) first, then agents 5 and 8.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from skyswarm.app.cli import main
from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "flocking_coverage.toml"
KILLS = ((30.0, 1), (60.0, 5), (90.0, 8))
TIMEOUT_S = 2.0  # flocking.timeout_s of the shipped config
REFERENCE_T99_S = 133.1  # s, time to 99 % before the safety defaults (avoidance off, quad_x_simple)


def run(overrides: list[str], kills: tuple[tuple[float, int], ...] = ()) -> tuple[Simulator, Any]:
    sim = Simulator.from_scenario(load_scenario(CONFIG, overrides))
    for t, agent_id in kills:
        sim.run(until_s=t)
        assert sim.stop_reason == "duration", f"mission ended before the kill at {t} s"
        assert sim.kill(sim.agents[agent_id], "test: scripted kill")
    sim.run()
    return sim, sim.finish()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, dict[str, Any]]:
    """`skyswarm run configs/flocking_coverage.toml` as a user runs it."""
    out = tmp_path_factory.mktemp("flocking") / "run"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(["run", str(CONFIG), "--quiet", "--out", str(out)])
    assert code == 0
    return out, text.getvalue(), json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def killed() -> tuple[Simulator, Any]:
    return run([], KILLS)


@pytest.fixture(scope="module")
def killed_no_rescout() -> tuple[Simulator, Any]:
    return run(["flocking.rescout=false"], KILLS)


def test_reference_reaches_99_percent_without_collision(reference) -> None:
    _, _, summary = reference
    m = summary["metrics"]
    assert summary["stop_reason"] == "mission done"
    assert m["coverage"] >= 0.99
    assert summary["deaths_by_cause"] == {} and m["agents_lost"] == 0
    # long enough that kills at 30, 60 and 90 s hit the sweep; and, with the safety defaults
    # on, within 10 % of the 133.1 s published before them (issue 29): 145.1 s measured
    # (143.1 s before the barrier's credit for a neighbour drawing away lost what the scan
    # shows it shed; 144.1 s before the barrier took a neighbour where the scan measures it
    # when nearer than its track; 142.1 s before the barrier's own-velocity fix, docs/safety.md
    # "The 0.95 m pass")
    assert 110.0 <= m["time_to_99_s"] <= 1.10 * REFERENCE_T99_S
    assert m["time_to_95_s"] < m["time_to_99_s"]
    # slots are 3.28 m apart; forming, members pass closer. Seed 1: 2.19 m with the safety
    # defaults (docs/safety.md: the barrier lets pairs close to its 2 m safe distance), 2.36 m
    # with avoidance off (the flock's own 2 m push alone); the safety bar, 1 m, is asserted
    assert m["min_separation_m"] >= 1.0
    assert m["avoidance"]["min_separation_m"] >= 1.0  # the truth at every scan, 10 Hz
    assert m["formation_error_mean_m"] < 0.1 and m["formation_error_max_m"] < 1.0
    assert m["messages_delivered"] > 0 and m["messages_lost"] > 0  # 1 % radio loss


def test_run_prints_coverage_and_writes_plots(reference) -> None:
    out, printed, summary = reference
    m = summary["metrics"]
    assert f"coverage: {m['coverage']:.6g}" in printed
    assert f"time_to_99_s: {m['time_to_99_s']:.6g}" in printed
    for name in ("map.png", "timeseries.png", "mission.png"):
        assert (out / name).stat().st_size > 10_000, name
        assert f"plot: {out / name}" in printed
    layer = np.load(out / "coverage.npz")
    assert layer["cell_values"].shape == (8000,)  # 80 x 100 cells of 1 m
    assert layer["cell_values"].mean() == pytest.approx(m["coverage"])


def test_plot_command_rewrites_the_plots(reference) -> None:
    out, _, _ = reference
    (out / "map.png").unlink()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["plot", str(out)]) == 0
    assert (out / "map.png").stat().st_size > 10_000
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["plot", str(out / "nothing")]) == 2


def test_no_plots_leaves_the_plots_to_the_plot_command(tmp_path: Path) -> None:
    out = tmp_path / "run"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(
            ["run", str(CONFIG), "--quiet", "--no-plots", "--duration", "1", "--out", str(out)]
        )
    assert code == 5  # the time limit, before the target
    assert not list(out.glob("*.png")) and "plot:" not in text.getvalue()
    assert (out / "summary.json").is_file() and (out / "coverage.npz").is_file()
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["plot", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.png")) == ["map.png", "mission.png", "timeseries.png"]


def test_three_kills_still_reach_99_percent(killed) -> None:
    sim, summary = killed
    m = summary["metrics"]
    assert summary["stop_reason"] == "mission done"
    assert m["coverage"] >= 0.99
    assert m["lost_ids"] == [1, 5, 8] and summary["deaths_by_cause"] == {"test": 3}
    assert m["min_separation_m"] >= 1.0  # the safety bar (see above)
    assert m["time_to_99_s"] < sim.scenario.simulation.duration_s
    from skyswarm.gui.overlays import Lines, Quads, overlays_of  # plain numpy containers, no GL

    lines, quads = overlays_of(sim.mission)
    assert isinstance(lines, Lines) and lines.segments.shape == (4, 2, 3)  # the area outline
    # the seen cells (1 m x 1 m, 8000 of them), one quad per run of cells along the sweep
    assert isinstance(quads, Quads) and len(quads.corners) < 200
    x, y = quads.corners[..., 0].astype(float), quads.corners[..., 1].astype(float)
    area = 0.5 * np.abs(np.sum(x * np.roll(y, -1, 1) - np.roll(x, -1, 1) * y, axis=1)).sum()
    assert area == pytest.approx(round(m["coverage"] * 8000), abs=0.5)  # to half a cell


def test_new_leader_within_two_seconds_of_the_timeout(killed) -> None:
    sim, summary = killed
    changes = summary["metrics"]["leader_changes"]
    assert changes[0] == [0.0, 1]
    t_new, new_leader = changes[1]
    assert new_leader == 2  # lowest id among the survivors
    assert 30.0 + TIMEOUT_S <= t_new <= 30.0 + TIMEOUT_S + 2.0
    events = sim.mission.events
    followers = {i for _, kind, i, d in events if kind == "leader" and d == "follows 2"}
    assert followers == {3, 4, 5, 6, 7, 8, 9, 10}  # every survivor switched to agent 2 ...
    last = max(t for t, kind, _, d in events if kind == "leader" and d == "follows 2")
    assert last <= 30.0 + TIMEOUT_S + 2.0  # ... within 2 s of the timeout


def test_without_rescouting_the_dead_members_cells_stay_unseen(killed_no_rescout) -> None:
    sim, summary = killed_no_rescout
    m = summary["metrics"]
    assert summary["stop_reason"] == "mission done"  # the plan ran out: the leader said so
    assert m["sweep_done_s"] is not None
    assert 0.80 < m["coverage"] < 0.99
    assert m["uncovered_cells"] > 300
    assert m["uncovered_owned_by_dead"] >= 0.95  # holes are the dead members' strips
    assert m["lost_ids"] == [1, 5, 8]


def test_twenty_percent_radio_loss_still_reaches_99_percent() -> None:
    sim, summary = run(["comms.channels.radio.loss=0.2"])
    m = summary["metrics"]
    assert summary["stop_reason"] == "mission done" and m["coverage"] >= 0.99
    assert summary["deaths_by_cause"] == {}
    radio = summary["comms"]["channels"]["radio"]
    assert 0.17 < radio["lost_on_air"] / radio["addressed"] < 0.23
    assert m["leader_changes"] == [[0.0, 1]]  # no member falsely presumed dead: one leader


def test_radio_cut_followers_do_not_follow() -> None:
    """With every radio frame lost, followers hear no beacon: they climb and hover at their
    take-off point (lost link) while the leader sweeps on alone. Reading the leader's true state
    from the simulator would make them follow anyway."""
    sim, summary = run(["comms.channels.radio.loss=1.0", "simulation.duration_s=40"])
    mission = sim.mission
    starts = {s.id: np.array(s.position[:2]) for s in sim.scenario.agents.resolved()}
    moved = {u.id: float(np.hypot(*(u.position[:2] - starts[u.id]))) for u in mission.uavs}
    assert moved[1] > 40.0  # the leader flew off to the area and along its lane
    assert max(v for i, v in moved.items() if i != 1) < 1.0
    assert all(u.formation is None for u in mission.uavs)
    assert summary["metrics"]["formation_error_mean_m"] is None
    assert summary["comms"]["channels"]["radio"]["delivered"] == 0


def test_footprint_matches_a_one_cell_reference() -> None:
    """The windowed, vectorised footprint test agrees with a plain loop over every cell."""
    from skyswarm.missions.coverage import Area

    area = Area(1, (50.0, 50.0), (80.0, 100.0), 60.0, 1.0)
    rng = np.random.default_rng(3)
    for _ in range(20):
        xy = area.center + rng.uniform(-60, 60, 2)
        yaw, half = rng.uniform(-np.pi, np.pi), rng.uniform(0.5, 4.0)
        fast = area.grid()
        hit = area.footprint(xy, yaw, half)
        if hit is not None:
            fast[hit[0], hit[1]] = hit[2]
        slow = area.grid()
        for i in range(area.n_u):
            for j in range(area.n_v):
                dx, dy = area.cell_xy[i, j] - xy
                fwd = np.cos(yaw) * dx + np.sin(yaw) * dy
                left = np.cos(yaw) * dy - np.sin(yaw) * dx
                slow[i, j] = abs(fwd) <= half and abs(left) <= half
        assert np.array_equal(fast, slow)


def test_run_polygons_cover_exactly_the_seen_cells() -> None:
    """The coverage overlay's quads (one per run of seen cells along v, on a turned area) cover
    each seen cell once and nothing else: every seen cell's centre lies in exactly one quad, no
    unseen centre in any, the quads' areas add up to the seen cells', and there is one quad per
    run (counted by a plain loop)."""
    from skyswarm.missions.coverage import Area

    area = Area(1, (50.0, 50.0), (12.0, 9.0), 60.0, 1.5)  # 8 x 6 cells of 1.5 m, turned 60 deg
    rng = np.random.default_rng(5)
    mask = rng.random(area.shape) < 0.5
    mask[0] = True  # a full row
    mask[1] = False  # an empty one
    mask[2, [0, -1]] = True  # runs touching both ends
    mask[2, 1:-1] = False
    quads = area.run_polygons(mask)
    runs = sum(
        int(mask[i, j] and (j == 0 or not mask[i, j - 1]))
        for i in range(area.n_u)
        for j in range(area.n_v)
    )
    assert len(quads) == runs
    centres = area.cell_xy.reshape(-1, 2)
    inside = np.zeros(len(centres), dtype=int)
    for q in quads:
        edges = np.roll(q, -1, axis=0) - q  # counter-clockwise: a centre is left of every edge
        rel = centres[:, None, :] - q[None]
        cross = edges[None, :, 0] * rel[..., 1] - edges[None, :, 1] * rel[..., 0]
        inside += np.all(cross > 1e-9, axis=1)
    assert np.array_equal(inside, mask.ravel().astype(int))
    x, y = quads[..., 0], quads[..., 1]
    areas = 0.5 * np.abs(np.sum(x * np.roll(y, -1, 1) - np.roll(x, -1, 1) * y, axis=1))
    assert areas.sum() == pytest.approx(mask.sum() * 1.5 * 1.5, rel=1e-9)


def test_lanes_tile_the_band_in_alternate_directions() -> None:
    from skyswarm.missions.coverage import plan_lanes

    lanes = plan_lanes(0, (-40.0, 40.0), 32.8, (-49.0, 49.0), True, True)
    assert len(lanes) == 3  # ceil(80 / 32.8)
    assert lanes[0].u == pytest.approx(40.0 - 16.4) and lanes[-1].u == pytest.approx(-40 + 16.4)
    assert [ln.v0 < ln.v1 for ln in lanes] == [True, False, True]
    gaps = [abs(a.u - b.u) for a, b in zip(lanes, lanes[1:])]
    assert max(gaps) <= 32.8  # neighbouring swaths overlap: no strip left out
