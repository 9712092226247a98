"""`skyswarm view`: the live viewer — main 3D window with the mission panel, top and subjective
views, keyboard shortcuts and a help overlay.

Every command is an `Action` (key, button, method): the keyboard, the panel buttons and the help
overlay are all generated from the one ACTIONS table. The windows, the panel and the selection are
shared with the replay player (gui/views.py `ViewerBase`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.gui.links import LINK_WINDOW_S, link_lines
from skyswarm.gui.panel import AgentRow, estimate_lines
from skyswarm.gui.proximity import avoiding_flags
from skyswarm.gui.scene import Frame, LiveSource
from skyswarm.gui.sensor_views import SensorViews
from skyswarm.gui.session import SimAttach, SimSession
from skyswarm.gui.trails import TrailBuffer, TrailRing
from skyswarm.gui.views import (
    HELP_ACTION,
    RESET_ACTION,
    VIEW_ACTIONS,
    Action,
    ViewerBase,
    ViewOptions,
    mode_label,
    selected_line,
)
from skyswarm.gui.windows import key, run_event_loop

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator
    from skyswarm.gui.joystick import JoystickHub

HEARD_WITHIN_S = 1.0  # s: the inspector counts the neighbours heard this recently
COMMAND_KEYS = (key._1, key._2, key._3, key._4, key._5, key._6, key._7, key._8, key._9)

ACTIONS = (
    Action(key.SPACE, "Space", "Start", "start_or_pause", "start / pause / resume"),
    Action(key.N, "N", "Step", "step_once", "advance one tick"),
    Action(key.BRACKETLEFT, "[", "x1/2", "slower", "speed x 1/2"),
    Action(key.BRACKETRIGHT, "]", "x2", "faster", "speed x 2"),
    Action(key.END, "End", "Stop", "stop_run", "end the run (summary: stopped by operator)"),
    Action(key.HOME, "Home", "Reset", "reset_run", "restart the scenario from t = 0"),
    Action(key.K, "K", "Kill", "kill_selected", "kill the selected agent"),
    *VIEW_ACTIONS,
    Action(key.J, "J", "Joy", "toggle_joystick", "fly the selected agent by joystick / release"),
    Action(key.O, "O", None, "toggle_links", "show / hide radio links, losses red (--links)"),
    Action(key.E, "E", None, "toggle_sensor_camera", "a UAV's camera, rgb | depth (--camera-pip)"),
    Action(key.B, "B", None, "toggle_lidar", "lidar beams; of the selected UAV if any (--lidar)"),
    HELP_ACTION,
    RESET_ACTION,
)


class ViewerApp(ViewerBase):
    """The live viewer: a SimSession stepped by the GUI loop, shown in the shared views."""

    actions = ACTIONS

    def __init__(
        self,
        sim: Simulator,
        speed: float | None = None,
        size: tuple[int, int] = (1280, 720),
        results_dir: Path | None = None,
        options: ViewOptions | None = None,
        attach: SimAttach | None = None,
    ) -> None:
        self.session = SimSession(sim, speed)
        self.attach = attach  # e.g. the MAVLink vehicles: on every run, the first and each Reset's
        self.detach = attach(sim, results_dir) if attach is not None else None
        self.source = LiveSource(sim)
        self.results_dir = results_dir  # where the first run records; resets record next to it
        self.resets = 0
        self.command_note = ""  # the last mission command run, or its error
        self._drawn_at: float | None = None  # perf_counter when the last update() ended
        self.joystick: JoystickHub | None = None  # created at the first J
        self._frame: Frame | None = None
        self._frame_key: tuple[int, int] = (-1, -1)
        super().__init__("skyswarm", size, options)
        self._trail = TrailBuffer(self.trail_s)
        self._trail.record(self.frame())
        self.show_links = False
        self.show_sensor_camera, self.show_lidar = self.options.sensor_camera, self.options.lidar
        if self.options.links:
            self.toggle_links()

    # -- Host protocol --------------------------------------------------------------------
    def frame(self) -> Frame:
        sim = self.session.sim
        k = (sim.world.tick, len(sim.deaths))
        if self._frame is None or k != self._frame_key:
            self._frame, self._frame_key = self.source.frame(), k
        return self._frame

    def shutdown(self) -> None:
        if self.joystick is not None:
            self.joystick.close()
        super().shutdown()

    def extra_lines(self) -> list[np.ndarray]:
        """The proximity rings (ViewerBase) and the radio links of the last LINK_WINDOW_S
        (gui/links.py) when shown."""
        disp = self.session.sim.dispatcher
        rings = super().extra_lines()
        if self.show_lidar:
            rings += SensorViews(self.source.agents).lidar_lines(self.selected)
        if not self.show_links or disp is None:
            return rings
        return rings + link_lines(self.frame(), disp.recent_links())

    def avoiding(self, frame: Frame) -> np.ndarray | None:
        """The UAVs whose avoidance layer corrects their command now (gui/proximity.py)."""
        return avoiding_flags(frame, self.source.agents)

    def pip_image(self) -> np.ndarray | None:
        """The camera of the selected UAV, else of `--target`, else of the first with one."""
        if not self.show_sensor_camera:
            return None
        views = SensorViews(self.source.agents)
        for agent_id in (self.selected, self.options.camera.target, views.first_with("camera")):
            image = views.camera_image(agent_id) if agent_id is not None else None
            if image is not None:
                return image
        return None

    def toggle_sensor_camera(self) -> None:
        self.show_sensor_camera = not self.show_sensor_camera

    def toggle_lidar(self) -> None:
        self.show_lidar = not self.show_lidar

    def toggle_links(self) -> None:
        """Show / hide the radio links; the dispatcher keeps them from the first time on."""
        self.show_links = not self.show_links
        sim = self.session.sim
        if self.show_links and sim.dispatcher is not None:
            sim.dispatcher.watch_links(max(1, round(LINK_WINDOW_S / sim.world.tick_s)))

    def trail_points(self, frame: Frame) -> TrailRing | None:
        return self._trail.view(frame)

    def screenshot_dir(self) -> Path:
        """The recorded run's directory (`--out`), else results/screenshots."""
        sim_out = self.results_dir
        if sim_out is not None and self.resets:
            sim_out = sim_out.with_name(f"{sim_out.name}-reset-{self.resets}")
        return sim_out if sim_out is not None else Path("results") / "screenshots"

    # -- loop -----------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        """One GUI frame: input, the simulation for what is left of the frame (the time since the
        last update went to drawing), camera glides; the windows then draw the latest state."""
        start = time.perf_counter()
        draw_s = 0.0 if self._drawn_at is None else start - self._drawn_at
        if self.joystick is not None:
            self.joystick.poll()
        self.session.advance(dt, self.session.frame_budget(draw_s))
        self.animate_cameras(dt)
        self._trail.record(self.frame())  # also while hidden: L shows the trail at once
        self._drawn_at = time.perf_counter()

    # -- actions --------------------------------------------------------------------------
    def start_or_pause(self) -> None:
        self.session.start_or_pause()

    def step_once(self) -> None:
        self.session.step_once()

    def slower(self) -> None:
        self.session.slower()

    def faster(self) -> None:
        self.session.faster()

    def kill_selected(self) -> None:
        self.session.kill(self.selected)

    def stop_run(self) -> None:
        self.session.stop()

    def reset_run(self) -> None:
        """Restart the scenario from t = 0 with the same seed and speed. The run so far ends
        (its summary written, stop reason "reset"); a recorded view records the new run in
        RESULTS-reset-K next to the first one."""
        from skyswarm.core.simulator import Simulator

        old = self.session
        if old.sim.scenario is None:
            return
        if self.joystick is not None:
            self.joystick.close()
            self.joystick = None
        if not old.finished:
            old.sim.stop_reason = "reset"
        old.sim.finish()
        old.sim.close()
        self.end_attached()
        self.resets += 1
        out = None
        if self.results_dir is not None:
            out = self.results_dir.with_name(f"{self.results_dir.name}-reset-{self.resets}")
        sim = Simulator.from_scenario(old.sim.scenario, out)
        if self.attach is not None:
            self.detach = self.attach(sim, out)
        self.session = SimSession(sim, old.speed)
        self.session.started = True
        self.source = LiveSource(sim)
        self._frame, self._frame_key = None, (-1, -1)
        self._trail.clear()
        self._trail.record(self.frame())
        if self.show_links:
            self.show_links = False
            self.toggle_links()  # the new run's dispatcher

    def end_attached(self) -> None:
        """Detach (and report) what `attach` added to the current run, once."""
        if self.detach is not None:
            detach, self.detach = self.detach, None
            detach()

    # -- mission commands (keys 1..9) -----------------------------------------------------
    def mission_commands(self) -> list[tuple[str, Callable[[int | None], None]]]:
        """The mission's `gui_commands()` (label, function of the selected id; declared by
        `core.hooks.ViewSource`, [] on the Mission base), at most nine."""
        mission = self.session.sim.mission
        if mission is None:
            return []
        try:
            commands = list(mission.gui_commands())[: len(COMMAND_KEYS)]
            return [(str(label), call) for label, call in commands]
        except Exception as exc:  # noqa: BLE001 - a mission bug must not close the viewer
            self.command_note = f"gui_commands failed: {type(exc).__name__}: {exc}"
            return []

    def run_command(self, number: int) -> bool:
        """Run mission command `number` (1..9) on the selected agent; False if there is none."""
        commands = self.mission_commands()
        if not 1 <= number <= len(commands):
            return False
        label, call = commands[number - 1]
        try:
            call(self.selected)
            self.command_note = f"ran {number}: {label}"
        except Exception as exc:  # noqa: BLE001 - reported in the panel, the run goes on
            self.command_note = f"{number}: {label} failed: {type(exc).__name__}: {exc}"
        return True

    def on_key(self, symbol: int, modifiers: int) -> bool:
        if not self.typing and symbol in COMMAND_KEYS:
            self.invalidate_panel()
            return self.run_command(COMMAND_KEYS.index(symbol) + 1)
        return super().on_key(symbol, modifiers)

    def help_lines(self) -> list[str]:
        lines = super().help_lines()
        commands = self.mission_commands()
        if commands:
            lines += ["", "mission commands (on the selected agent):"]
            lines += [f"{k:>6}   {label}" for k, (label, _) in enumerate(commands, 1)]
        return lines

    def toggle_joystick(self) -> None:
        from skyswarm.gui.joystick import JoystickHub

        if self.joystick is None:
            self.joystick = JoystickHub(self.session.sim, keyboard_window=self.main)
        if self.selected is None:
            self.select_next()
        self.joystick.toggle(self.selected)

    # -- panel ----------------------------------------------------------------------------
    def rows(self) -> list[AgentRow]:
        """One row per drawn agent, in frame order (base stations last)."""
        out = []
        for a in self.source.agents:
            p = np.asarray(a.position, dtype=float)
            v = np.asarray(getattr(a, "velocity", np.zeros(3)), dtype=float)
            speed = float(np.linalg.norm(v)) if a.alive else 0.0
            out.append(AgentRow(int(a.id), a.role, mode_label(a), float(p[2]), speed, a.alive))
        return out

    def hud_lines(self) -> list[str]:
        s, sim = self.session, self.session.sim
        alive = sum(a.alive for a in sim.agents.values())
        lines = [
            f"t = {sim.time_s:8.2f} s   {s.state}",
            f"speed x{s.speed:g}   real-time factor {s.real_time_factor:5.2f}",
            f"alive {alive}/{len(sim.agents)}   {comms_text(sim)}",
            *self.frame().hud,
            selected_line(self.frame(), self.selected),
        ]
        if self.joystick is not None:
            lines.append(self.joystick.status())
        commands = self.mission_commands()
        if commands:
            keys = "  ".join(f"{k} {label}" for k, (label, _) in enumerate(commands, 1))
            lines.append(f"mission: {keys}")
        if self.command_note:
            lines.append(self.command_note)
        return lines

    def button_label(self, method: str, label: str) -> str:
        if method == "start_or_pause":
            s = self.session
            if s.finished:
                return "Ended"
            return "Start" if not s.started else ("Resume" if s.paused else "Pause")
        return super().button_label(method, label)

    def inspector_lines(self) -> list[str]:
        agent = self.session.sim.agents.get(self.selected) if self.selected is not None else None
        return inspect(self.session.sim, agent, self.frame()) if agent is not None else []


LOST_FATES = ("over_bandwidth", "out_of_range", "lost_on_air", "receiver_dead", "queue_overflow")


def comms_text(sim: Simulator) -> str:
    """Messages delivered / lost, from the comms dispatcher's `comms.CHANNEL.FATE` totals."""
    disp = sim.dispatcher
    if disp is None or not hasattr(disp, "sample"):
        return "msgs: no comms"
    try:
        totals = disp.sample()
    except Exception:  # the HUD must not take the viewer down with a comms bug
        return "msgs: n/a"
    fate = {k: v for k, v in totals.items() if isinstance(v, int)}
    delivered = sum(v for k, v in fate.items() if k.endswith(".delivered"))
    lost = sum(v for k, v in fate.items() if k.rsplit(".", 1)[-1] in LOST_FATES)
    return f"msgs {delivered} ok / {lost} lost"


def view_scenario(
    scenario: ScenarioConfig,
    speed: float | None = None,
    size: tuple[int, int] = (1280, 720),
    results_dir: Path | None = None,
    options: ViewOptions | None = None,
    attach: SimAttach | None = None,
) -> int:
    """Open the viewer on a scenario and run until its main window is closed (Esc or the close
    button: returns 0) or Ctrl-C (returns 130); either way the summary is written. `attach`
    (e.g. `skyswarm view --mavlink`'s vehicles) is called on every run the viewer builds."""
    from skyswarm.core.simulator import Simulator

    sim = Simulator.from_scenario(scenario, results_dir)
    try:
        app = ViewerApp(sim, speed, size, results_dir, options, attach)
    except BaseException:  # a bad [mavlink] port ...: no window, the run closed
        sim.close()
        raise
    interrupted = False
    try:
        interrupted = run_event_loop(app.update)
    finally:
        app.shutdown()
        sim = app.session.sim  # the last run, after any Reset
        if not app.session.finished:
            sim.stop_reason = "interrupted" if interrupted else "window closed"
        sim.finish()
        sim.close()
        app.end_attached()
    return 130 if interrupted else 0


def inspect(sim: Simulator, agent: Any, frame: Frame) -> list[str]:
    """The inspector lines of one agent: id, role (and the mission's leader role), state; control
    mode and setpoints; battery; neighbours heard and messages in/out; estimate vs truth and the
    GPS error when its swarm has sensors. Read with getattr: any agent kind works."""
    i = frame.index_of(agent.id)
    leader = i is not None and bool(frame.leaders[i])
    mark = f"  {(frame.highlight or 'leader').upper()}" if leader else ""
    out = [f"agent {agent.id}  {agent.role}{mark}  " + ("alive" if agent.alive else "dead")]
    mode = getattr(agent, "mode", None)
    swarm, index = getattr(agent, "swarm", None), getattr(agent, "index", None)
    line = f"mode {mode_label(agent)}"
    battery = getattr(swarm, "battery", None)
    if battery is not None and index is not None:
        charge = float(battery.charge[index])
        line += f"   battery {100 * charge:3.0f} %  {float(battery.voltage[index]):.1f} V"
    out.append(line)
    if mode is not None and swarm is not None and index is not None:
        out.append(setpoint_text(mode, swarm.setpoints, index))
    comms = ""
    disp = sim.dispatcher
    if disp is not None and hasattr(disp, "agent_counts"):
        try:
            counts = disp.agent_counts(agent)
            tx = sum(n for ch in counts.values() for n in ch["tx"].values())
            rx = sum(ch["rx"].get("delivered", 0) for ch in counts.values())
            comms = f"msgs in {rx} / out {tx}"
        except Exception:  # noqa: BLE001 - an agent the dispatcher does not know
            comms = ""
    last = agent.heard_from()  # {id: time heard, s}, e.g. a flock member (core Agent method)
    if last is not None:
        recent = sum(1 for t in last.values() if sim.time_s - float(t) <= HEARD_WITHIN_S)
        comms = f"heard {recent} neighbours in {HEARD_WITHIN_S:g} s   {comms}"
    if comms:
        out.append(comms.strip())
    if i is not None and frame.estimates is not None:
        gps = frame.gps_fixes[i] if frame.gps_fixes is not None else None
        out += estimate_lines(frame.positions[i], frame.estimates[i], gps)
    return out


def setpoint_text(mode: Any, setpoints: Any, i: int) -> str:
    """The setpoints the agent's control mode reads, in user units (m, m/s, compass deg)."""
    uses = getattr(mode, "uses", lambda stage: False)
    parts = []
    if uses("position"):
        x, y = setpoints.position[i]
        parts.append(f"pos ({x:.1f}, {y:.1f})")
    elif uses("velocity"):
        vx, vy, vz = setpoints.velocity[i]
        parts.append(f"vel ({vx:.1f}, {vy:.1f}, {vz:.1f})")
    if uses("altitude"):
        parts.append(f"alt {float(setpoints.altitude[i]):.1f}")
    if uses("heading"):
        parts.append(f"hdg {(90.0 - math.degrees(float(setpoints.yaw[i]))) % 360:.0f}")
    if not parts and uses("attitude"):
        r, p, _ = setpoints.attitude[i]
        thrust = float(setpoints.thrust[i])
        parts.append(f"roll {math.degrees(r):.0f} pitch {math.degrees(p):.0f} deg  {thrust:.1f} N")
    if not parts:
        t, r, p, y = setpoints.manual[i]
        parts.append(f"sticks thr {t:.2f} r {r:+.2f} p {p:+.2f} y {y:+.2f}")
    return "set " + "  ".join(parts)
