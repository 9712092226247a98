"""Window frame rate with 1,000 drones at 1280x720 (pyglet + moderngl under Xvfb, llvmpipe).

The viewer's main window exactly as `skyswarm view` draws it (3D scene with ground, shadows and
the instanced drones, plus the side panel with the HUD and the agent list), hosted by a
`ViewerBase` whose frame is a synthetic swarm that moves every frame; the simulation is left out
(it runs in its own budget, see gui/session.py), this measures what a frame of the view costs.
The drones fly level arcs (`Arcs`), and their trails are recorded as the live viewer records
them (gui/trails.py TrailBuffer: a point every 0.2 s of simulated time, the frames 1/30 s
apart). At 1,000 drones also with the layers of issue 30 on, side by side with them off: 12 s
trails (60 segments per drone, drawn as at most 20,000: trails.MAX_TRAIL_SEGMENTS) and radio
links (4 per drone to neighbours within 6 m: 4,000 lines, gui/links.py), and then also with the
proximity rings (gui/proximity.py: 20 segments per drone, one KD-tree query per frame).
Starts its own Xvfb on DISPLAY :97 when no DISPLAY is set. The same script times the code
before a change: run it with PYTHONPATH at an older tree (its TrailBuffer has no `view`, so
the trails are handed over as (N, T, 3) points, as that viewer did).

Then the view of a simulation slower than real time: 1,000 UAVs hovering on Bullet, stepped by
the viewer's own loop (gui/app.py: each frame gives the simulation what is left of a 30 fps
frame), against the fixed 50 ms stepping budget per frame used before, in the same run.

    python bench/gui_window.py            # tables on stdout, JSON in bench/results/
    python bench/gui_window.py --window   # the window rows only (not the Bullet pacing)
    python bench/gui_window.py --draws    # 1,000 drones, layers on: ms a frame per draw batch
    python bench/gui_window.py --panel    # ms of one panel refresh (5 Hz) with 1,000 agents

`--draws` times each draw batch of the layers-on frame with a `glFinish` after it (the driver's
vertex work and the rasterisation of that batch alone; the sum exceeds a frame's time, which
overlaps them): where llvmpipe's time goes (docs/performance.md, Window).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

COUNTS = (100, 1000)
FRAMES = 60
SIZE = (1280, 720)
TARGET_FPS = 30.0


def swarm(n: int, rng: np.random.Generator):  # noqa: ANN201 - Frame, imported late
    from skyswarm.gui.scene import Frame

    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    pos = np.c_[(i % side) * 3.0, (i // side) * 3.0, 10.0 + rng.uniform(-1, 1, n)]
    q = rng.normal(size=(n, 4)) * [0.05, 0.05, 1.0, 1.0]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return Frame(0.0, i + 1, ["uav"], np.zeros(n, np.intp), pos, q, np.ones(n, bool))


LINKS_PER_DRONE = 4
SPEED_M_S = 2.0  # of the synthetic flight
TURN_RAD_S = 0.3  # each drone's path an arc turning at a rate uniform in +-TURN_RAD_S


class Arcs:
    """Each drone of `frame` flying level at SPEED_M_S on an arc of a random heading and turn
    rate (up to TURN_RAD_S: 12 s of trail bend by up to 206 deg, as a flock's do), through its
    position in `frame` at `at_s` s (the first frame timed: the swarm on its grid, 3 m apart)."""

    def __init__(self, frame, rng: np.random.Generator, at_s: float) -> None:  # noqa: ANN001
        n = len(frame.ids)
        self.frame, self.grid, self.at_s = frame, frame.positions.copy(), at_s
        self.heading = rng.uniform(0.0, 2 * np.pi, n)
        turn = rng.uniform(-TURN_RAD_S, TURN_RAD_S, n)
        self.turn = np.where(np.abs(turn) < 1e-6, 1e-6, turn)

    def move(self, t: float) -> None:
        """The frame's time and positions at `t` s of flight."""
        now, then = self.heading + self.turn * t, self.heading + self.turn * self.at_s
        r = SPEED_M_S / self.turn
        self.frame.time_s = t
        self.frame.positions[:, 0] = self.grid[:, 0] + r * (np.sin(now) - np.sin(then))
        self.frame.positions[:, 1] = self.grid[:, 1] - r * (np.cos(now) - np.cos(then))


def bench(n: int, layers: bool = False, proximity: bool = False) -> dict[str, float]:
    from skyswarm.core.comms.fates import DELIVERED, LOST
    from skyswarm.core.comms.links import RadioLinks
    from skyswarm.gui import views
    from skyswarm.gui.links import link_lines
    from skyswarm.gui.panel import AgentRow
    from skyswarm.gui.scene import Scenery
    from skyswarm.gui.trails import DEFAULT_TRAIL_S, TRAIL_EVERY_S, TrailBuffer
    from skyswarm.gui.views import ViewerBase, ViewOptions

    rng = np.random.default_rng(n)
    frame = swarm(n, rng)
    steps = round(DEFAULT_TRAIL_S / TRAIL_EVERY_S)
    flown = steps * TRAIL_EVERY_S  # the trails full before the first frame
    arcs = Arcs(frame, rng, flown)
    trail = TrailBuffer(DEFAULT_TRAIL_S)
    for k in range(steps + 1):
        arcs.move(k * TRAIL_EVERY_S)
        trail.record(frame)
    # Radio range: a neighbour up to 2 grid steps along the row or diagonally (6 or 8.5 m), the
    # grid's edges clipped (before 2026-11-29 the row index wrapped: 225 of the 4,000 links
    # spanned the swarm, ~93 m, half the links' length on screen)
    i = np.repeat(np.arange(n), LINKS_PER_DRONE)
    sender = frame.ids[i]
    side = int(np.ceil(np.sqrt(n)))
    step, diagonal = rng.integers(-2, 3, len(i)), rng.integers(0, 2, len(i))
    col = np.clip(i % side + step, 0, side - 1)
    near = np.clip(i // side + step * diagonal, 0, side - 1) * side + col
    receiver = frame.ids[np.where(near < n, near, near - side)]  # the last row is short
    fate = np.where(rng.random(len(sender)) < 0.1, LOST, DELIVERED)
    zero = np.zeros(len(sender), dtype=np.int64)
    links = RadioLinks(sender, receiver, zero, fate, zero)

    class Synthetic(ViewerBase):
        source = type("S", (), {"scenery": Scenery()})()

        def frame(self):  # noqa: ANN202
            return frame

        def rows(self) -> list[AgentRow]:
            return [
                AgentRow(int(i), "uav", "position", float(p[2]), 1.0, True)
                for i, p in zip(frame.ids, frame.positions)
            ]

        def hud_lines(self) -> list[str]:
            return [f"t = {frame.time_s:8.2f} s", f"alive {n}/{n}"]

        def trail_points(self, shown):  # noqa: ANN001, ANN202
            # the live viewer's (gui/app.py): a TrailRing where the tree has one
            return trail.view(shown) if hasattr(trail, "view") else trail.points(shown)

        def extra_lines(self):  # noqa: ANN202
            return super().extra_lines() + (link_lines(frame, links) if layers else [])

    trails_s = DEFAULT_TRAIL_S if layers else None
    app = Synthetic("bench", SIZE, ViewOptions(trails_s=trails_s, proximity=proximity))
    win = app.main
    win.on_draw()
    win.flip()  # warm-up: shaders, buffers
    # The panel's text is redrawn at 5 Hz of wall time (gui/views.py PANEL_REFRESH_S): on a
    # loaded machine, where a frame takes 100 ms, that is every frame, and the frame slower
    # still. Its clock here advances 1 / TARGET_FPS a frame: every sixth frame, as at 30 fps.
    clock = [time.monotonic()]
    views.time = SimpleNamespace(monotonic=lambda: clock[0])  # type: ignore[attr-defined]
    start, cpu = time.perf_counter(), cpu_split()
    try:
        for k in range(FRAMES):
            arcs.move(flown + k / TARGET_FPS)  # the simulation's step, as gui/app.py update()
            trail.record(frame)
            clock[0] += 1 / TARGET_FPS
            win.camera.azimuth_deg += 0.5  # type: ignore[attr-defined]
            win.dispatch_events()
            win.on_draw()
            win.flip()
        win.ctx.finish()
    finally:
        views.time = time  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - start
    main_s, raster_s, x_s = (b - a for a, b in zip(cpu, cpu_split()))
    app.shutdown()
    return {
        "drones": n, "layers": layers, "proximity": proximity, "fps": FRAMES / elapsed,
        "ms_per_frame": 1000 * elapsed / FRAMES,
        "cpu_ms_per_frame": 1000 * (main_s + raster_s) / FRAMES,
        "main_ms_per_frame": 1000 * main_s / FRAMES,
        "raster_ms_per_frame": 1000 * raster_s / FRAMES,
        "xserver_ms_per_frame": 1000 * x_s / FRAMES,
        "quiet_fps_estimate": FRAMES / (main_s + raster_s / (os.cpu_count() or 1)),
    }  # fmt: skip


def cpu_split() -> tuple[float, float, float]:
    """CPU seconds so far of this process's main thread, of its other threads (llvmpipe's
    rasteriser threads), and of the X server of DISPLAY (its pid from /tmp/.X<n>-lock; 0 when
    unknown). On a loaded machine wall time says little; on an idle one a frame takes about
    the main thread's time plus the rasterisers' spread over the cores (the main thread waits
    for them in `flip`): `quiet_fps_estimate`, reported next to the measured fps (the X
    server's copy of each frame, on another core, left out)."""
    tick = os.sysconf("SC_CLK_TCK")

    def ticks(stat: Path) -> float:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

    me = threading.get_native_id()
    tasks = Path("/proc/self/task")
    main = ticks(tasks / str(me) / "stat")
    others = sum(ticks(t / "stat") for t in tasks.iterdir() if t.name != str(me))
    display = os.environ.get("DISPLAY", "").lstrip(":").split(".")[0]
    try:
        pid = Path(f"/tmp/.X{display}-lock").read_text().strip()
        x = ticks(Path(f"/proc/{pid}/stat"))
    except (OSError, ValueError):
        x = 0.0
    return main, others, x


PACED_UAVS = 1000
PACED_FRAMES = 40


def paced(budget: str) -> dict[str, float]:
    """Frames per second and real-time factor of `ViewerApp` on PACED_UAVS hovering Bullet UAVs:
    budget "frame" (the viewer's) or "fixed" (MAX_STEP_WALL_S every frame)."""
    from skyswarm.core.config import SimulationConfig, WorldConfig
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.app import ViewerApp
    from skyswarm.gui.session import MAX_STEP_WALL_S, SimSession
    from skyswarm.uav.config import load_uav_config
    from skyswarm.uav.swarm import Swarm

    n = PACED_UAVS
    sim = Simulator(SimulationConfig(physics="bullet", duration_s=3600.0), WorldConfig())
    side = int(np.ceil(np.sqrt(n)))
    i = np.arange(n)
    pos = np.c_[(i % side) * 3.0, (i // side) * 3.0, np.full(n, 10.0)]
    Swarm(sim, load_uav_config(), range(1, n + 1), pos, np.zeros(n), hovering=True)
    app = ViewerApp(sim, size=SIZE)
    if budget == "fixed":
        app.session.frame_budget = lambda draw_s: MAX_STEP_WALL_S  # type: ignore[method-assign]
    win = app.main
    last = time.perf_counter()
    for _ in range(3):  # warm-up
        win.dispatch_events()
        win.on_draw()
        win.flip()
    start, t0 = time.perf_counter(), sim.time_s
    for _ in range(PACED_FRAMES):
        now = time.perf_counter()
        app.update(now - last)
        last = now
        win.dispatch_events()
        win.on_draw()
        win.flip()
    elapsed = time.perf_counter() - start
    rtf = (sim.time_s - t0) / elapsed
    app.shutdown()
    sim.close()
    assert isinstance(app.session, SimSession)
    return {"budget": budget, "uavs": n, "fps": PACED_FRAMES / elapsed, "real_time_factor": rtf}


def draw_costs(frames: int = 40) -> dict[str, tuple[float, float]]:
    """(wall, CPU) ms per frame of each draw batch (FlatBatches name, "trails", "shadows",
    "meshes", "clear" and "2d images") of the 1,000-drone layers-on window, each timed from a
    glFinish before it to one after it; what is drawn between them (the sky and the ground)
    and the Python in between are "other". CPU: of the process (the main thread and
    llvmpipe's), which the other jobs of a loaded machine change less than the wall time."""
    from collections import defaultdict

    from skyswarm.gui import drones, instancing, renderer, trails

    spent: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(2))
    mark = np.zeros(2)  # when the last timed batch ended: wall, CPU s

    def now() -> np.ndarray:
        return np.array([time.perf_counter(), time.process_time()])

    def timed(name_of, fn):  # noqa: ANN001, ANN202
        def wrapper(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
            self.ctx.finish()
            start = now()
            label = name_of(args)
            if label != "clear":  # a view's first batch: before it, the last frame's flip
                spent["other (sky, ground, Python)"] += start - mark
            out = fn(self, *args, **kwargs)
            self.ctx.finish()
            mark[:] = now()
            spent[label] += mark - start
            return out

        return wrapper

    patches = [
        (instancing.FlatBatches, "draw", lambda a: a[0]),
        (instancing.InstancedMesh, "draw", lambda a: "meshes"),
        (drones.ShadowDiscs, "draw", lambda a: "shadows"),
        (renderer.Renderer, "_begin", lambda a: "clear"),
        (renderer.Renderer, "draw_image", lambda a: "2d images"),
    ]
    if hasattr(trails, "TrailPass"):  # not in a tree from before it
        patches.append((trails.TrailPass, "draw", lambda a: "trails"))
    kept = [(cls, name, getattr(cls, name)) for cls, name, _ in patches]
    for cls, name, label in patches:
        setattr(cls, name, timed(label, getattr(cls, name)))
    global FRAMES
    try:
        FRAMES = 3
        bench(COUNTS[-1], layers=True)  # warm-up
        spent.clear()
        FRAMES = frames
        bench(COUNTS[-1], layers=True)
    finally:
        FRAMES = 60
        for cls, name, fn in kept:
            setattr(cls, name, fn)
    out = sorted(spent.items(), key=lambda kv: -kv[1][1])
    return {k: (1000 * v[0] / frames, 1000 * v[1] / frames) for k, v in out if v[1] > 5e-5 * frames}


def panel_refresh(refreshes: int = 40) -> list[float]:
    """ms of each refresh of the live panel's image (gui/panel.py) listing 1,000 agents whose
    altitudes and speeds change every refresh (as a flight's do), one selected."""
    from skyswarm.gui.app import ACTIONS
    from skyswarm.gui.panel import AgentRow, Button, Panel

    buttons = [Button(a.button, a.method) for a in ACTIONS if a.button]
    labels = [b.label for b in buttons]
    rng = np.random.default_rng(0)
    z, v = rng.uniform(2, 12, 1000), rng.uniform(0, 5, 1000)
    modes = ("Position", "GroundSpeedAltitudeAndHeading", "GroundSpeedAltitudeAndHeading")
    panel, out = Panel(buttons), []
    for k in range(refreshes):
        z += rng.normal(0, 0.02, 1000)
        v = np.abs(v + rng.normal(0, 0.05, 1000))
        rows = [
            AgentRow(i + 1, "uav", modes[i % 3], float(z[i]), float(v[i]), i % 9 != 4)
            for i in range(1000)
        ]
        start = time.perf_counter()
        panel.render(720, [f"t = {k * 0.2:8.2f} s"], rows, 3 + k % 5, [], "", False, 1000, labels)
        out.append(1000 * (time.perf_counter() - start))
    return out


def main() -> None:
    import sys

    if "--panel" in sys.argv[1:]:
        ms = panel_refresh()[5:]  # after the first refreshes (fonts loaded, words drawn)
        print(
            f"panel refresh, 1,000 agents: median {np.median(ms):.1f} ms "
            f"(quartiles {np.percentile(ms, 25):.1f}-{np.percentile(ms, 75):.1f})"
        )
        return

    load = os.getloadavg()  # 1, 5, 15 min: the machine is shared
    xvfb = None
    if not os.environ.get("DISPLAY"):
        binary = shutil.which("Xvfb")
        if binary is None:
            raise SystemExit("no DISPLAY and no Xvfb: apt-get install -y xvfb")
        xvfb = subprocess.Popen([binary, ":97", "-screen", "0", "1920x1080x24"])
        os.environ["DISPLAY"] = ":97"
        time.sleep(1.0)
    try:
        if "--draws" in sys.argv[1:]:
            print(f"{'batch':<30}{'wall ms':>9}{'CPU ms':>9}  a frame")
            for name, (wall, cpu) in draw_costs().items():
                print(f"{name:<30}{wall:9.1f}{cpu:9.1f}")
            print(f"(1,000 drones, trails + links on; load average {load[0]:.1f} at the start)")
            return
        rows = [bench(n) for n in COUNTS] + [bench(COUNTS[-1], layers=True)]
        rows.append(bench(COUNTS[-1], layers=True, proximity=True))
        paced_rows = [] if "--window" in sys.argv[1:] else [paced("frame"), paced("fixed")]
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()
    head = f"{'drones':>8}{'trails+links':>14}{'proximity':>11}{'fps':>8}{'ms/frame':>10}"
    head += f"{'CPU ms':>8}{'main':>7}{'raster':>8}{'quiet fps':>11}"
    print(f"{head}   window {SIZE[0]}x{SIZE[1]}, llvmpipe, load {load[0]:.1f}")
    for r in rows:
        on, prox = ("on" if r["layers"] else "off"), ("on" if r["proximity"] else "off")
        line = f"{r['drones']:>8}{on:>14}{prox:>11}{r['fps']:>8.1f}{r['ms_per_frame']:>10.1f}"
        line += f"{r['cpu_ms_per_frame']:>8.1f}{r['main_ms_per_frame']:>7.1f}"
        print(line + f"{r['raster_ms_per_frame']:>8.1f}{r['quiet_fps_estimate']:>11.1f}")
    if paced_rows:
        print(f"\n{'stepping budget':<28}{'fps':>8}{'real-time factor':>18}   {PACED_UAVS} UAVs")
    for r in paced_rows:
        label = "rest of a 30 fps frame" if r["budget"] == "frame" else "fixed 50 ms (before)"
        print(f"{label:<28}{r['fps']:>8.1f}{r['real_time_factor']:>18.3f}")
    out = Path(__file__).parent / "results" / "gui_window.json"
    out.parent.mkdir(exist_ok=True)
    result = {
        "size": SIZE, "target_fps": TARGET_FPS, "rows": rows, "paced": paced_rows,
        "machine": platform.platform(), "load_average_at_start": load,
    }  # fmt: skip
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
