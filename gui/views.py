"""What the live viewer and the replay player share: the main window with the mission panel, the
top and subjective views, the selection, the help overlay and the `Action` table behind them.

Every command is an `Action` (key, button, method): a subclass lists its own actions followed by
VIEW_ACTIONS, and the keyboard, the panel buttons and the help overlay are generated from that one
table. A subclass sets `self.source` (anything with `.scenery`) before calling `__init__`, and
implements `frame()`, `rows()` and `hud_lines()`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.gui.camera import (  # noqa: I001
    ChaseCamera,
    FirstPersonCamera,
    Glide,
    OrbitCamera,
    TopCamera,
)
from skyswarm.gui.director import CameraSpec, Director, inset_camera
from skyswarm.gui.framing import SwarmFollower, default_camera, scene_extent, shown_points
from skyswarm.gui.groups import group_lines
from skyswarm.gui.layout import Layout, gl_rect
from skyswarm.gui.panel import PANEL_W, AgentRow, Button, Panel, filter_rows
from skyswarm.gui.proximity import ProximityLimits, proximity_lines
from skyswarm.gui.renderer import Renderer, legend_entries
from skyswarm.gui.scene import Frame
from skyswarm.gui.trails import DEFAULT_TRAIL_S, TrailRing

if TYPE_CHECKING:
    from skyswarm.core.agent import Agent
from skyswarm.gui.text import legend_image, text_image
from skyswarm.gui.windows import ViewWindow, key  # first: sets pyglet options


@dataclass(frozen=True)
class Action:
    key: int
    key_label: str
    button: str | None  # panel button label, None: keyboard only
    method: str  # method of the app called
    help: str


VIEW_ACTIONS = (
    Action(key.T, "T", "Top", "open_top_view", "open the 2D top view"),
    Action(key.V, "V", "Subj", "open_subjective_view", "open the subjective view"),
    Action(key.C, "C", "Chase", "toggle_subjective_mode", "subjective: chase / first person"),
    Action(key.TAB, "Tab", "Next", "select_next", "select the next alive agent"),
    Action(key.F, "F", "Follow", "toggle_follow", "3D and top views follow the selected agent"),
    Action(key.G, "G", "Frame", "frame_swarm", "frame the alive swarm (smoothly)"),
    Action(key.SLASH, "/", None, "edit_filter", "filter the agent list: id, role, mode, dead"),
    Action(key.L, "L", None, "toggle_trails", "show / hide trails (--trails S)"),
    Action(key.I, "I", None, "toggle_inset", "show / hide the inset map (--no-inset)"),
    Action(key.M, "M", None, "toggle_markers", "far drones as markers / meshes (--no-markers)"),
    Action(key.X, "X", None, "toggle_proximity", "rings by nearest neighbour (--proximity)"),
    Action(key.D, "D", None, "toggle_dead", "dead UAVs where they fell / hidden (--no-dead)"),
    Action(
        key.U, "U", None, "toggle_leader", "the leader in its colour / its role's (--no-leader)"
    ),
    Action(
        key.A, "A", None, "toggle_groups", "lines from members to their group's leader (--groups)"
    ),
    Action(key.P, "P", "Shot", "save_screenshot", "save a PNG of the 3D view (results dir)"),
)
HELP_ACTION = Action(key.H, "H", "Help", "toggle_help", "show / hide this help")
RESET_ACTION = Action(
    key.R, "R", None, "reset_camera", "back to the --camera view (follows the swarm again)"
)
PANEL_REFRESH_S = 0.2  # s of wall time: the panel's text is redrawn at 5 Hz, or at once on input
MOUSE_HELP = (
    "left drag: orbit (top view: pan)   right / shift drag: pan",
    "wheel: zoom to the cursor   click a drone or a list row: select   Esc: close window",
)
FILTER_KEYS_DONE = (key.ENTER, key.RETURN, key.ESCAPE)


@dataclass(frozen=True)
class ViewOptions:
    """A viewer's camera and layers as the command line sets them (app/gui_commands.py).

    ViewOptions(CameraSpec("chase", target=3), trails_s=20.0)
    """

    camera: CameraSpec = field(default_factory=CameraSpec)
    inset: bool = True  # the inset map of the whole area, top right of the 3D view
    markers: bool = True  # far drones as screen-space markers (gui/drones.py)
    trails_s: float | None = None  # trail length, s; None: off (L shows DEFAULT_TRAIL_S)
    links: bool = False  # radio links of the last gui/links.py LINK_WINDOW_S (live view only)
    proximity: bool = False  # rings coloured by the nearest neighbour's distance (gui/proximity.py)
    dead: bool = True  # dead agents where they fell, with a cross on the ground
    leader: bool = True  # the mission's leader in the LEADER colour
    sensor_camera: bool = False  # a UAV's camera as a picture-in-picture (live view only)
    lidar: bool = False  # the UAVs' lidar beams (live view only)
    groups: bool = False  # a line from each member to its group's leader (gui/groups.py)


class ViewerBase:
    """Owns the windows and the selection; the windows call back into it (windows.Host)."""

    actions: tuple[Action, ...] = (*VIEW_ACTIONS, HELP_ACTION, RESET_ACTION)
    source: Any  # set by the subclass: has `.scenery`

    def __init__(
        self, name: str, size: tuple[int, int], options: ViewOptions | None = None
    ) -> None:
        self.name = name  # window titles: "NAME - 3D view", "NAME - top view", ...
        self.options = opts = options or ViewOptions()
        self.show_trails = opts.trails_s is not None
        self.trail_s = opts.trails_s if opts.trails_s is not None else DEFAULT_TRAIL_S
        self.show_inset, self.markers = opts.inset, opts.markers
        self.show_proximity = opts.proximity
        self.show_groups = opts.groups
        self.show_dead, self.show_leader = opts.dead, opts.leader
        self.note = ""  # the last screenshot written (or why not), under the HUD
        self.selected: int | None = None
        self.show_help = False
        self.following = False  # the 3D and top cameras follow the selected agent
        self.filter_text = ""
        self.typing = False  # the filter is being edited: keys go to it (Esc included)
        self._skip_slash = False
        first = self.frame()
        shown = shown_points(first)
        self.center, self.half_extent = scene_extent(shown)
        self._renderers: dict[int, Renderer] = {}
        self.panel = Panel([Button(a.button, a.method) for a in self.actions if a.button])
        scene = (max(1, size[0] - PANEL_W), size[1])
        self.director = Director(opts.camera, scene, self.layout(first, scene).keep_out(), first)
        self.director.update(first)
        self.main = ViewWindow(
            self, self.director.camera, f"{name} - 3D view", size,
            side_px=PANEL_W, overlay=self._draw_main_overlay, side_input=self._panel_input,
            covered=self._covered,
        )  # fmt: skip
        self.windows: list[ViewWindow] = [self.main]
        self.top: ViewWindow | None = None
        self.subjective: ViewWindow | None = None
        self._panel_cache: tuple[float, int, np.ndarray] | None = None  # (wall s, height, image)
        self._legend: tuple[list[Any], np.ndarray] | None = None  # (entries, image)

    # -- to implement ---------------------------------------------------------------------
    def frame(self) -> Frame:
        raise NotImplementedError

    def rows(self) -> list[AgentRow]:
        raise NotImplementedError

    def hud_lines(self) -> list[str]:
        raise NotImplementedError

    def pip_image(self) -> np.ndarray | None:
        """(h, w, 4) uint8 drawn bottom right of the 3D view (the live viewer: a UAV's
        camera), or None."""
        return None

    def inspector_lines(self) -> list[str]:
        """Lines about the selected agent under the HUD (the live viewer's inspector)."""
        return []

    def trail_points(self, frame: Frame) -> TrailRing | np.ndarray | None:
        """The last `trail_s` seconds of each agent of `frame`: a TrailRing (the live
        viewer's TrailBuffer, kept on the GPU between frames), or (N, T, 3) m points, oldest
        first; None when there are none."""
        raise NotImplementedError

    def screenshot_dir(self) -> Path:
        """Where the screenshot key writes (the results directory)."""
        raise NotImplementedError

    # -- layout and camera ----------------------------------------------------------------
    def layout(self, frame: Frame, scene: tuple[int, int]) -> Layout:
        """The 2D parts over the 3D view's `scene` (w, h) pixels: the legend (bottom left) and
        the inset map (top right); the HUD is in the panel."""
        shown = frame.shown(self.show_dead, self.show_leader)  # the legend's rows
        return replace(Layout.of(shown, scene, hud=True, inset=self.show_inset), hud=None)

    # -- Host protocol --------------------------------------------------------------------
    def renderer_for(self, window: ViewWindow) -> Renderer:
        r = self._renderers.get(id(window))
        if r is None:
            r = self._renderers[id(window)] = Renderer(
                window.ctx, self.source.scenery, self.center, self.half_extent
            )
        r.markers, r.dead, r.leader = self.markers, self.show_dead, self.show_leader
        return r

    def prepare(self, window: ViewWindow) -> None:
        """The 3D view's camera moves with the frame (gui/director.py) until the user moves it
        (a camera put in the window by hand is left alone)."""
        if window is not self.main or window.camera is not self.director.camera:
            return
        frame = self.frame()
        _, _, w, h = window.scene_viewport
        self.director.resize((w, h), self.layout(frame, (w, h)).keep_out())
        self.director.update(frame)

    def camera_moved(self, window: ViewWindow) -> None:
        if window is self.main:
            self.director.hold()

    def extra_lines(self) -> list[np.ndarray]:
        """The proximity rings (gui/proximity.py) and the group lines (gui/groups.py) when
        shown; the live viewer adds the radio links."""
        frame = self.frame()
        out = group_lines(frame.shown(self.show_dead)) if self.show_groups else []
        if not self.show_proximity:
            return out
        limits = ProximityLimits.of(self.source.scenery)
        return out + proximity_lines(frame, limits, self.avoiding(frame))

    def avoiding(self, frame: Frame) -> np.ndarray | None:
        """(N,) bool: the agents whose avoidance steers them now (the live viewer), or None."""
        return None

    def trail_ring(self) -> TrailRing | None:
        """The trails the windows draw (gui/trails.py), of the live agents only when the dead
        are hidden; None when hidden or empty."""
        if not self.show_trails:
            return None
        frame = self.frame()
        got = self.trail_points(frame)
        if isinstance(got, np.ndarray):
            got = TrailRing.of_points(got) if got.shape[1] else None
        return got if got is None or self.show_dead else got.only(frame.alive)

    def trails(self) -> np.ndarray:
        """(M, T, 3) m: the trail points `trail_ring` draws, oldest first ((N, 0, 3): none)."""
        ring = self.trail_ring()
        return np.zeros((len(self.frame().ids), 0, 3)) if ring is None else ring.points()

    def on_key(self, symbol: int, modifiers: int) -> bool:
        self.invalidate_panel()
        if self.typing:
            if symbol == key.BACKSPACE:
                self.filter_text = self.filter_text[:-1]
            elif symbol in FILTER_KEYS_DONE:
                self.typing = False
                if symbol == key.ESCAPE:
                    self.filter_text = ""
                self.panel.scroll = 0
            return True  # every other key is text (on_text)
        for action in self.actions:
            if action.key == symbol:
                getattr(self, action.method)()
                return True
        return False

    def on_text(self, text: str) -> None:
        if not self.typing:
            return
        if self._skip_slash and text == "/":  # the key that opened the filter
            self._skip_slash = False
            return
        self._skip_slash = False
        self.filter_text += "".join(c for c in text if c.isprintable())
        self.panel.scroll = 0
        self.invalidate_panel()

    def select(self, agent_id: int | None) -> None:
        self.invalidate_panel()
        self.selected = agent_id
        ids = [r.agent_id for r in self.shown_rows()]
        if agent_id in ids:
            self.panel.ensure_visible(ids.index(agent_id))

    def shown_rows(self) -> list[AgentRow]:
        """The agent list after the filter."""
        return filter_rows(self.rows(), self.filter_text)

    def animate_cameras(self, dt_s: float) -> None:
        """Glides and following of every window's camera, `dt_s` wall seconds on."""
        for w in self.windows:
            w.camera.animate(dt_s)

    def window_closed(self, window: ViewWindow) -> None:
        self._renderers.pop(id(window), None)
        if window in self.windows:
            self.windows.remove(window)
        if window is self.top:
            self.top = None
        if window is self.subjective:
            self.subjective = None
        if window is self.main:
            self.shutdown()

    def shutdown(self) -> None:
        """Close every window this app opened; pyglet's loop ends with the last one."""
        for w in list(self.windows):
            w._closing = True  # noqa: SLF001 - closing on the host's behalf, no callback
            w.close()
        self.windows.clear()
        self.top = self.subjective = None

    # -- view actions ---------------------------------------------------------------------
    def toggle_help(self) -> None:
        self.show_help = not self.show_help

    def reset_camera(self) -> None:
        """Back to the `--camera` view: the framing follows the swarm again, from the spec's
        direction; a free camera glides back to the initial framing of the whole scene."""
        cam = self.main.camera
        self.following = False
        if isinstance(cam, OrbitCamera | TopCamera):
            cam.follow = cam.glide = None
        if self.director.framing is not None:
            fresh = Director(self.options.camera, self.director.size, self.director.keep_out)
            if isinstance(cam, OrbitCamera) and isinstance(fresh.camera, OrbitCamera):
                cam.azimuth_deg = fresh.camera.azimuth_deg
                cam.elevation_deg = fresh.camera.elevation_deg
            self.director.resume()
            return
        home = default_camera("orbit", shown_points(self.frame()))
        if isinstance(cam, OrbitCamera) and isinstance(home, OrbitCamera):
            names = ("target", "distance", "azimuth_deg", "elevation_deg")
            cam.glide = Glide(cam, {n: getattr(home, n) for n in names})

    def toggle_trails(self) -> None:
        self.show_trails = not self.show_trails

    def toggle_inset(self) -> None:
        self.show_inset = not self.show_inset

    def toggle_markers(self) -> None:
        self.markers = not self.markers

    def toggle_proximity(self) -> None:
        self.show_proximity = not self.show_proximity

    def toggle_groups(self) -> None:
        self.show_groups = not self.show_groups

    def toggle_dead(self) -> None:
        self.show_dead = not self.show_dead

    def toggle_leader(self) -> None:
        self.show_leader = not self.show_leader

    def save_screenshot(self) -> Path | None:
        """Write the 3D view (scene, inset, legend and panel, as shown) to a PNG in the
        results directory: screenshot_T.png (T the simulated time, s), -2, -3 ... if taken."""
        from PIL import Image

        image = self.main.screenshot()
        folder = self.screenshot_dir()
        stem = f"screenshot_{self.frame().time_s:08.2f}s"
        path, k = folder / f"{stem}.png", 1
        while path.exists():
            k += 1
            path = folder / f"{stem}-{k}.png"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            Image.fromarray(image).save(path)
        except OSError as exc:
            self.note = f"screenshot failed: {exc.strerror or exc}"
            return None
        self.note = f"wrote {path.name}"  # the panel's line; the whole path on stdout
        print(f"wrote {path}", flush=True)
        return path

    def edit_filter(self) -> None:
        self.typing, self._skip_slash = True, True

    def _follow_point(self) -> np.ndarray | None:
        frame = self.frame()
        i = frame.index_of(self.selected)
        if i is None or not frame.alive[i]:
            return None
        return frame.positions[i]

    def toggle_follow(self) -> None:
        """Follow the selected agent (selecting the next alive one if none) in the 3D and top
        views, or stop following. The selection can change while following."""
        # A pan lets go of the agent (the camera drops `follow`): F then follows again.
        self.following = getattr(self.main.camera, "follow", None) is None
        if self.following and self.selected is None:
            self.select_next()
        if self.following:
            self.director.hold()
        else:
            self.director.resume()
        for w in (self.main, self.top):
            cam = w.camera if w is not None else None
            if isinstance(cam, OrbitCamera | TopCamera):
                cam.follow = self._follow_point if self.following else None

    def frame_swarm(self) -> None:
        """Glide the 3D (and top) camera to show every alive mobile agent, keeping its direction;
        stops following."""
        frame = self.frame()
        ok = frame.alive & frame.mobile & np.all(np.isfinite(frame.positions), axis=1)
        pts = frame.positions[ok] if ok.any() else shown_points(frame)
        if len(pts) == 0:
            return
        self.following = False
        self.director.hold()
        for w in (self.main, self.top):
            if w is None:
                continue
            cam = w.camera
            if isinstance(cam, OrbitCamera | TopCamera):
                cam.follow = None
            _, _, vw, vh = w.scene_viewport
            centre = (pts.min(axis=0) + pts.max(axis=0)) / 2
            if isinstance(cam, TopCamera):
                probe_top = TopCamera(tuple(centre[:2]), cam.half_height)
                need = SwarmFollower(probe_top, vw / vh).top_half_height(pts)
                cam.glide_to(centre, need)
            elif isinstance(cam, OrbitCamera):
                probe = OrbitCamera(
                    tuple(centre), cam.distance, cam.azimuth_deg, cam.elevation_deg, cam.fov_y_deg
                )
                cam.glide_to(centre, SwarmFollower(probe, vw / vh).orbit_distance(pts))

    def select_next(self) -> None:
        frame = self.frame()
        alive = frame.ids[frame.alive]
        if len(alive) == 0:
            return
        after = alive[alive > self.selected] if self.selected is not None else alive
        self.select(int(after[0] if len(after) else alive[0]))

    def open_top_view(self) -> ViewWindow:
        if self.top is None:
            cam = default_camera("top", shown_points(self.frame()))
            if self.following:
                cam.follow = self._follow_point  # type: ignore[attr-defined]
            self.top = ViewWindow(self, cam, f"{self.name} - top view", (720, 720))
            self.windows.append(self.top)
        return self.top

    def open_subjective_view(self) -> ViewWindow:
        if self.selected is None:
            self.select_next()
        if self.subjective is None:
            cam = ChaseCamera(lambda: self.frame().pose_of(self.selected))
            title = f"{self.name} - subjective view"
            self.subjective = ViewWindow(self, cam, title, (640, 480))
            self.windows.append(self.subjective)
        return self.subjective

    def toggle_subjective_mode(self) -> None:
        if self.subjective is None:
            return
        pose = self.subjective.camera.pose  # type: ignore[attr-defined]
        chase = isinstance(self.subjective.camera, ChaseCamera)
        self.subjective.camera = FirstPersonCamera(pose) if chase else ChaseCamera(pose)

    # -- panel ----------------------------------------------------------------------------
    def invalidate_panel(self) -> None:
        """Redraw the panel at the next frame (after input), not at the next 5 Hz refresh."""
        self._panel_cache = None

    def _panel_input(self, kind: str, x: float, y: float, amount: float) -> None:
        self.invalidate_panel()
        if kind == "scroll":
            self.panel.scroll -= int(amount * 3)
            return
        if kind != "click":
            return
        hit = self.panel.hit(x, y, self.shown_rows())
        if hit is None:
            return
        what, value = hit
        if what == "button":
            getattr(self, str(value))()
        else:
            self.select(int(value))  # type: ignore[arg-type]

    def panel_image(self, height: int) -> np.ndarray:
        """(height, PANEL_W, 4) uint8: buttons, HUD and the agent list."""
        rows = self.rows()
        shown = filter_rows(rows, self.filter_text)
        labels = [self.button_label(b.action, b.label) for b in self.panel.buttons]
        hud = self.hud_lines() + ([self.note] if self.note else [])
        return self.panel.render(
            height, hud, shown, self.selected, self.inspector_lines(),
            self.filter_text, self.typing, len(rows), labels,
        )  # fmt: skip

    def button_label(self, method: str, label: str) -> str:
        """A panel button's label in the current state (subclasses add theirs)."""
        if method == "toggle_follow" and self.following:
            return "Unfollow"
        return label

    def _covered(self, window: ViewWindow) -> list[tuple[int, int, int, int]]:
        """The inset map's rect in GL pixels, which `_draw_main_overlay` covers (the 3D view
        skips its ground there: Renderer.render(covered=))."""
        inset = self.layout(self.frame(), window.scene_viewport[2:]).inset
        return [gl_rect(inset, window.fb_size[1])] if inset is not None else []

    def _draw_main_overlay(self, window: ViewWindow, renderer: Renderer) -> None:
        w, h = window.fb_size
        now = time.monotonic()
        cache = self._panel_cache
        if cache is None or cache[1] != h or now - cache[0] >= PANEL_REFRESH_S:
            # Text rendering and the texture upload cost more than the 3D scene under llvmpipe:
            # the same image object is not uploaded again (Renderer.draw_image).
            cache = self._panel_cache = (now, h, self.panel_image(h))
        frame = self.frame()
        inset = self.layout(frame, window.scene_viewport[2:]).inset
        if inset is not None:
            renderer.render_inset(frame, inset_camera(frame), inset, (w, h))
        renderer.draw_image(cache[2], w - PANEL_W, 0, (w, h))
        pip = self.pip_image()
        if pip is not None:
            scene_w = window.scene_viewport[2]
            renderer.draw_image(pip, scene_w - pip.shape[1] - 8, h - pip.shape[0] - 8, (w, h))
        legend = legend_entries(frame.shown(self.show_dead, self.show_leader))
        if self._legend is None or self._legend[0] != legend:
            self._legend = (legend, legend_image(legend))
        renderer.draw_image(self._legend[1], 8, h - self._legend[1].shape[0] - 8, (w, h))
        if self.show_help:
            renderer.draw_image(text_image(self.help_lines()), 20, 20, (w, h))

    def help_lines(self) -> list[str]:
        """The help overlay: one line per action, then the mouse."""
        return [f"{a.key_label:>6}   {a.help}" for a in self.actions] + ["", *MOUSE_HELP]


def mode_label(agent: Agent) -> str:
    """The control mode's name of an agent (`Agent.mode_name()`); "-" if the agent has no mode
    (base stations, drop-test bodies)."""
    return agent.mode_name()


def selected_line(frame: Frame, selected: int | None) -> str:
    """HUD line of the selected agent's position, m."""
    i = frame.index_of(selected)
    if i is None:
        return "selected: none (click a drone or a row)"
    x, y, z = frame.positions[i]
    return f"selected {selected}: ({x:.1f}, {y:.1f}, {z:.1f}) m"
