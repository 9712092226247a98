"""Manual control of one agent from a device (real or virtual), recorded and replayable.

`ManualControl` is a pre-tick listener (phase 2, after the behaviour tasks). Every
`1 / sample_hz` s of simulated time (ticks on a fixed grid, whatever tick it was created at) it
samples its input into an `InputFrame` - controlled agent, four shaped stick channels, held button
actions, stick mode, device connected - and acts on it; every tick it re-writes the current
command, so a mission task cannot fly the agent away between samples. Frames come either from
a live `DeviceState` (written by gui/ event handlers) or from a recorded `inputs.csv`; both go
through the same `_apply`, which is why a replay reproduces the run bit for bit.

Takeover pauses the agent's own tasks and remembers its mode and setpoints; release resumes the
tasks on their phase grid and restores that command (an agent that was flown externally, in
Manual or Attitude, holds position instead). A device lost while flying for `failsafe_after_s`
switches the agent to position hold. Takeover, release, failsafe and reconnection are events.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skyswarm.core.schema import ConfigError, build, to_plain
from skyswarm.uav import control as ctl
from skyswarm.uav.agents import UavAgent
from skyswarm.uav.joystick import STICK_MODES, JoystickProfile, Limits, StickMode, load_profile

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator

INPUT_COLUMNS = (
    "tick", "agent", "throttle", "yaw", "pitch", "roll", "buttons", "mode", "connected",
)  # fmt: skip
Sticks = tuple[float, float, float, float]
_SAVED = ("position", "altitude", "yaw", "velocity", "attitude", "thrust", "manual")


@dataclass
class DeviceState:
    """What the active device reports now: axes by name (-1..1), held buttons by name."""

    name: str = "no device"
    connected: bool = False
    axes: dict[str, float] = field(default_factory=dict)
    buttons: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class InputFrame:
    """One input sample; a row of inputs.csv when it differs from the previous one."""

    agent: int | None
    sticks: Sticks
    buttons: tuple[str, ...]  # held actions of the profile, sorted
    mode: str
    connected: bool


@dataclass(frozen=True)
class ControlEvent:
    tick: int
    kind: str  # manual_takeover | manual_release | manual_failsafe | manual_reconnect
    agent_id: int
    cause: str


class ManualControl:
    """Flies at most one agent from `device` (live) or `replay` (recorded frames)."""

    def __init__(
        self,
        sim: Simulator,
        profile: JoystickProfile | None = None,
        device: DeviceState | None = None,
        replay: dict[int, InputFrame] | None = None,
    ) -> None:
        self.sim = sim
        self.profile = profile = profile or load_profile()
        world = sim.world
        self.period = world.ticks_for(1.0 / profile.sample_hz, "joystick sample period")
        self.failsafe_ticks = world.ticks_for_until(profile.failsafe_after_s)
        self.device = device or DeviceState()
        self.replay = replay
        self.target: int | None = None  # the agent the toggle button takes (GUI selection)
        self.agent: UavAgent | None = None
        self.mode: StickMode | None = None
        self.failsafe = False
        self.events: list[ControlEvent] = []
        self._requests: list[int | None] = []
        self._frame = InputFrame(None, (0.0, 0.0, 0.0, 0.0), (), profile.modes[0], False)
        self._held: frozenset[str] = frozenset()
        self._lost_tick: int | None = None
        self._saved: tuple[ctl.ControlMode, list[Any]] | None = None
        self.limits: Limits | None = None
        self.log = InputLog(sim.recorder.dir, profile, self.period) if sim.recorder else None
        sim.add_pre_tick(self.pre_tick)

    # -- requests (GUI, tests) --------------------------------------------------------------
    def take_control(self, agent_id: int) -> None:
        """Fly `agent_id` from the next input sample on."""
        agent = self.sim.agents.get(agent_id)
        if not isinstance(agent, UavAgent):
            raise ValueError(f"agent {agent_id!r} is not a UAV of this run")
        self._requests.append(int(agent_id))

    def release(self) -> None:
        """Give the agent back to its behaviour at the next input sample."""
        self._requests.append(None)

    @property
    def requested(self) -> bool:
        """A take-control request waits for the next input sample."""
        return bool(self._requests) and self._requests[-1] is not None

    @property
    def mode_name(self) -> str:
        return self._frame.mode

    # -- the tick ---------------------------------------------------------------------------
    def pre_tick(self, world: World) -> None:
        tick = world.tick
        if tick % self.period == 0:
            frame = self._recorded(tick) if self.replay is not None else self._live()
            if frame != self._frame and self.log is not None:
                self.log.write(tick, frame)
            self._frame = frame
            self._apply(frame, tick)
        if self.agent is not None and self.mode is not None and not self.failsafe:
            self.mode.apply(self.agent)

    def _recorded(self, tick: int) -> InputFrame:
        assert self.replay is not None
        return self.replay.get(tick, self._frame)

    def _live(self) -> InputFrame:
        agent_id = self.agent.id if self.agent is not None else None
        for request in self._requests:
            agent_id = request
        self._requests.clear()
        dev, prev = self.device, self._frame
        actions = self.profile.buttons.actions(dev.buttons) if dev.connected else frozenset()
        pressed, self._held = actions - self._held, actions
        mode = self.profile.next_mode(prev.mode) if "cycle_mode" in pressed else prev.mode
        if "toggle_control" in pressed:
            agent_id = self.target if agent_id is None else None
        sticks = self.profile.sticks(dev.axes) if dev.connected else prev.sticks
        return InputFrame(agent_id, sticks, tuple(sorted(actions)), mode, dev.connected)

    def _apply(self, frame: InputFrame, tick: int) -> None:
        if self.agent is not None and not self.agent.alive:
            self._release(tick, "agent died")
        current = self.agent.id if self.agent is not None else None
        if frame.agent != current:
            if self.agent is not None:
                self._release(tick, "released")
            if frame.agent is not None:
                self._take(frame.agent, tick)
        agent = self.agent
        if agent is None:
            return
        if not frame.connected:
            if self._lost_tick is None:
                self._lost_tick = tick
            if not self.failsafe and tick - self._lost_tick >= self.failsafe_ticks:
                self._engage_failsafe(agent, tick)
            return
        self._lost_tick = None
        if self.failsafe:
            self.failsafe, self.mode = False, None
            self._event("manual_reconnect", agent, tick, f"device back: {self.device.name}")
        if self.mode is None or self.mode.name != frame.mode:
            self.mode = STICK_MODES[frame.mode]()
            self.mode.enter(agent)
        assert self.limits is not None
        self.mode.update(frame.sticks, self.limits, self.period * self.sim.world.tick_s)

    # -- takeover, release, failsafe --------------------------------------------------------
    def _take(self, agent_id: int, tick: int) -> None:
        agent = self.sim.agents.get(agent_id)
        if not isinstance(agent, UavAgent) or not agent.alive:
            return
        sp, i = agent.swarm.setpoints, agent.index
        self._saved = (agent.mode, [getattr(sp, name)[i].copy() for name in _SAVED])
        self.sim.tasks.pause_owned_by(agent)
        self.agent, self.limits, self.mode = agent, Limits.of(agent), None
        self.failsafe, self._lost_tick = False, None
        self._event("manual_takeover", agent, tick, f"{self.device.name}, mode {self._frame.mode}")

    def _release(self, tick: int, cause: str) -> None:
        agent, self.agent, self.mode = self.agent, None, None
        assert agent is not None
        self.sim.tasks.resume_owned_by(agent, tick + 1)  # this tick's tasks have run
        if agent.alive and self._saved is not None:
            mode, values = self._saved
            if mode in (ctl.MANUAL, ctl.ATTITUDE):  # nothing autonomous to go back to
                agent.set_mode(ctl.POSITION)
            else:
                agent.set_mode(mode)
                sp = agent.swarm.setpoints
                for name, value in zip(_SAVED, values):
                    getattr(sp, name)[agent.index] = value
        self._saved = None
        self._event("manual_release", agent, tick, cause)

    def _engage_failsafe(self, agent: UavAgent, tick: int) -> None:
        """Position hold, entered bumplessly: the target is where the agent comes to rest."""
        self.failsafe, self.mode = True, None
        agent.set_mode(ctl.POSITION)
        self._event("manual_failsafe", agent, tick, f"device lost: {self.device.name}")

    def _event(self, kind: str, agent: UavAgent, tick: int, cause: str) -> None:
        self.events.append(ControlEvent(tick, kind, int(agent.id), cause))
        if self.sim.recorder is not None:
            self.sim.recorder.event(kind, int(agent.id), cause, agent.position)


# -- recording and replay -------------------------------------------------------------------
class InputLog:
    """inputs.csv (one row per changed sample, floats in round-trip text) and inputs.json
    (the profile and sample period, so a replay samples exactly as the run did)."""

    def __init__(self, out_dir: Path, profile: JoystickProfile, period_ticks: int) -> None:
        meta = {
            "format": "skyswarm inputs v1",
            "sample_every_ticks": period_ticks,
            "profile": to_plain(profile),
        }
        (out_dir / "inputs.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        self._file = open(out_dir / "inputs.csv", "w", newline="", encoding="utf-8")
        self._csv = csv.writer(self._file)
        self._csv.writerow(INPUT_COLUMNS)
        self._file.flush()

    def write(self, tick: int, f: InputFrame) -> None:
        agent = "" if f.agent is None else f.agent
        sticks = [repr(float(v)) for v in f.sticks]
        self._csv.writerow([tick, agent, *sticks, " ".join(f.buttons), f.mode, int(f.connected)])
        self._file.flush()  # a crash loses at most the row being written

    def close(self) -> None:
        self._file.close()


def read_inputs(path: str | Path) -> tuple[JoystickProfile, dict[int, InputFrame]]:
    """The profile (from inputs.json beside the file, else the default) and frames by tick."""
    path = Path(path)
    file = str(path)
    meta_path = path.with_suffix(".json")
    profile = load_profile()
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        profile = build(JoystickProfile, meta.get("profile", {}), "profile", str(meta_path))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(file, "(file)", file, f"a readable inputs.csv ({exc})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or tuple(rows[0]) != INPUT_COLUMNS:
        shown = f"{len(rows[0])} columns" if rows else "(empty)"  # never echo another file's line
        raise ConfigError(file, "(header)", shown, ",".join(INPUT_COLUMNS))
    frames: dict[int, InputFrame] = {}
    for n, row in enumerate(rows[1:], start=2):
        r = dict(zip(INPUT_COLUMNS, row))
        try:
            tick = int(r["tick"])
            agent = int(r["agent"]) if r["agent"] else None
            t, yaw, pitch, roll = (float(r[c]) for c in ("throttle", "yaw", "pitch", "roll"))
            connected = r["connected"] == "1"
        except (KeyError, ValueError):
            shown = f"{len(row)} fields"
            raise ConfigError(file, f"line {n}", shown, "a valid inputs row") from None
        if r["mode"] not in STICK_MODES:
            raise ConfigError(file, f"line {n}.mode", r["mode"], "a manual mode name")
        buttons = tuple(b for b in r["buttons"].split(" ") if b)
        frames[tick] = InputFrame(agent, (t, yaw, pitch, roll), buttons, r["mode"], connected)
    return profile, frames


def replay_inputs(sim: Simulator, path: str | Path) -> ManualControl:
    """Feed a recorded inputs.csv to `sim` at its ticks (install before the first step)."""
    profile, frames = read_inputs(path)
    return ManualControl(sim, profile, replay=frames)
