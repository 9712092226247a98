"""The extension points of the kernel: one Protocol per kind of hook, and the ordered registry
that holds the hooks of one tick phase (docs/architecture.md, The tick).

Hooks are registered on the Simulator, never on the World:

| phase | registered with | called as |
|---|---|---|
| 2. behaviour (after the due tasks) | `sim.add_pre_tick(listener)` | `listener(world)` |
| 3. control | `sim.add_controller(controller)` | `controller(sim)` |
| 4. environment (before the physics step) | `sim.add_environment(force)` | `force(sim)` |
| 6. monitors | `sim.add_post_tick(listener)` | `listener(world)` |
| on every death | `sim.add_death_listener(listener)` | `listener(event)` |

Each registry calls its hooks in registration order; `sim.remove_…` takes one out again. An
object whose hook is a method registers the bound method (`sim.add_post_tick(self.post_tick)`).
Agents that random faults strike implement `FaultCapable`; the fault injector finds them by it.

What the views and the timeline read of the floors above core is declared here too:
`EstimateSource` (a group of agents flying on a state estimate, e.g. a UAV swarm with sensors)
and `ViewSource` (what a mission shows: HUD lines, overlays, the highlighted role, the groups
and their leaders, the viewer's commands; the `Mission` base implements it with do-nothing
defaults). Core reads nothing else of those objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from skyswarm.core.overlays import Lines, Quads

if TYPE_CHECKING:
    import numpy as np

    from skyswarm.core.backends import World
    from skyswarm.core.faults import DeathEvent
    from skyswarm.core.simulator import Simulator


class TickListener(Protocol):
    """Runs once a tick with the world: as a pre-tick listener in phase 2 (after the due tasks,
    before control; `world.tick` is the tick being computed) or as a post-tick listener in
    phase 6 (after the state read; `world.tick` is the tick just done).

    Example, the highest body each tick::

        class Ceiling:
            def __init__(self) -> None:
                self.z_max_m: list[float] = []

            def post_tick(self, world: World) -> None:
                self.z_max_m.append(float(world.state.position[world.tracked_slots, 2].max()))

        ceiling = Ceiling()
        sim.add_post_tick(ceiling.post_tick)
    """

    def __call__(self, world: World) -> None: ...


class Controller(Protocol):
    """Phase 3: turns setpoints into forces and torques on bodies (vectorised over its agents).

    Example, a constant 1 N push east on `box` (a PhysicalAgent)::

        def push(sim: Simulator) -> None:
            sim.world.apply_forces([box.slot], [(1.0, 0.0, 0.0)])

        sim.add_controller(push)

    `uav.swarm.Swarm` is the quadrotor controller: one compiled call for every alive UAV.
    """

    def __call__(self, sim: Simulator) -> None: ...


class EnvironmentForce(Protocol):
    """Phase 4: forces of the environment (wind, drag, ...) applied just before the physics step,
    or environment state advanced for the next tick.

    Example, a steady 0.5 N force north on every live body::

        def breeze(sim: Simulator) -> None:
            for agent in sim.physical_agents:
                if agent.alive:
                    sim.world.apply_forces([agent.slot], [(0.0, 0.5, 0.0)])

        sim.add_environment(breeze)
    """

    def __call__(self, sim: Simulator) -> None: ...


class DeathListener(Protocol):
    """Told of every death, once, right after the agent is killed and recorded.

    Example, keep the crashes::

        crashes: list[DeathEvent] = []

        def on_death(event: DeathEvent) -> None:
            if event.kind == "crash":
                crashes.append(event)

        sim.add_death_listener(on_death)
    """

    def __call__(self, event: DeathEvent) -> None: ...


@runtime_checkable
class FaultCapable(Protocol):
    """An agent that random faults strike. The fault injector (core.faults) watches every agent
    that implements this when faults are installed, and asks it, for each fault, which part
    fails and whether it can play the fault out (`faults.mode = "physical"`).

    Example, a ground robot whose wheels break::

        class Rover(PhysicalAgent):
            def fault_rates(self) -> Mapping[str, float]:
                return {"wheel failure": 0.5, "software failure": 0.1}  # per hour

            def fault_detail(self, kind: str, rng: np.random.Generator) -> str:
                return f"wheel {int(rng.integers(0, 6))}" if kind == "wheel failure" else ""

            def apply_fault(self, kind: str, detail: str) -> bool:
                if kind != "wheel failure":
                    return False  # not modelled: the injector kills the rover
                self.broken_wheels.append(int(detail.split()[-1]))
                return True
    """

    def fault_rates(self) -> Mapping[str, float]:
        """Fault kind (e.g. "propeller failure") -> rate per hour of operation, >= 0; each kind
        is an exponential process. Called once, when the injector starts watching the agent."""
        ...

    def fault_detail(self, kind: str, rng: np.random.Generator) -> str:
        """Which part a fault of `kind` strikes (e.g. "motor 2"), drawn from `rng` (the faults
        stream); "" when there is no choice to make."""
        ...

    def apply_fault(self, kind: str, detail: str) -> bool:
        """Play the fault out physically; False if this kind is not modelled (the agent dies)."""
        ...


@runtime_checkable
class EstimateSource(Protocol):
    """A group of agents that fly on an estimate of their state instead of the truth (a UAV
    swarm with sensors on, `uav.swarm.Swarm`). Arrays are indexed by the member's row in the
    group, which the agent names with `Agent.estimate_row()`. core/timeline.py records them
    beside the truth and the views draw them; neither reads anything else of the group.

    Example, a group whose estimate lags the truth by one tick::

        class Laggy:
            def __init__(self, n: int) -> None:
                self.previous = np.zeros((n, 3))

            def estimated_positions(self) -> np.ndarray | None:
                return self.previous

            def gps_errors(self) -> np.ndarray | None:
                return None  # no GPS model
    """

    def estimated_positions(self) -> np.ndarray | None:
        """(n, 3) m, world ENU: each member row's estimated position (read it before the next
        tick: it may be a live view); None when the group acts on the truth (no estimate)."""
        ...

    def gps_errors(self) -> np.ndarray | None:
        """(n, 3) m: each member row's current GPS fix minus its true position; None when the
        group has no GPS model."""
        ...


@runtime_checkable
class ModeSource(Protocol):
    """A group of agents whose control modes are held in one array of codes (a UAV swarm,
    `uav.swarm.Swarm`), indexed by the member's row in the group, which the agent names with
    `Agent.mode_row()`. core/timeline.py looks at the modes at the trajectory rate: with a
    source it compares the array with the last look's and asks the agents for
    `Agent.mode_name()` only when a code changed, so a member's name must follow from its
    code.

    Example, a group of rovers that drive or park::

        class Fleet:
            def __init__(self, n: int) -> None:
                self.codes = np.zeros(n, dtype=np.int8)  # 0 parked, 1 driving

            def mode_codes(self) -> np.ndarray:
                return self.codes
    """

    def mode_codes(self) -> np.ndarray:
        """(n,) integers: each member row's mode code (read it before the next tick: it may
        be a live view)."""
        ...


Overlay = Mapping[str, Any] | Lines | Quads
"""One overlay item a mission draws: a mapping with `segments` (M, 2, 3) line endpoints or
`corners` (M, 4, 3) filled quads, m world ENU, and an optional linear RGBA `color` (4 floats in
[0, 1]), or a `core.overlays.Lines` / `Quads`. Nothing else: core reads no attribute of any
other object (`core.overlays.as_overlay` refuses it by type)."""


@runtime_checkable
class ViewSource(Protocol):
    """What the views (live, gui/scene.py) and the timeline (replay, core/timeline.py) ask of a
    mission. `core.mission.Mission` implements every member with a do-nothing default, so a
    mission overrides only what it shows.

    Example, a mission drawing its search box and naming its scouts::

        class Survey(Mission):
            highlight_role = "scout"  # drawn in the views' highlight colour

            def hud(self) -> list[str]:
                return [f"found {self.found}"]

            def overlays(self) -> list[Overlay]:
                return [{"corners": self.box[None], "color": (0.2, 0.6, 1.0, 0.35)}]

            def role_members(self, role: str) -> list[int]:
                return [u.id for u in self.scouts if u.alive] if role == "scout" else []

            def group_leaders(self) -> dict[int, int]:
                return {u.id: u.team_lead for u in self.scouts if u.alive}  # lead -> lead
    """

    highlight_role: str | None  # role whose holders the views colour; None: no highlight

    def hud(self) -> list[str]:
        """Text lines for the HUD (state, headline metric)."""
        ...

    def overlays(self) -> Sequence[Overlay]:
        """World-space primitives to draw now (see `Overlay`); plain data, no GUI import."""
        ...

    def role_members(self, role: str) -> list[int]:
        """Ids of the agents holding `role` now; [] when nobody does."""
        ...

    def group_leaders(self) -> Mapping[int, int]:
        """The groups of agents now, as {agent id: id of its group's leader}; a leader maps to
        itself (a flock split into parts: one group per part). Only agents in a group are
        keys; {} when the mission has no groups. The views draw a line from each member to its
        leader; the timeline records it beside `leaders`."""
        ...

    def gui_commands(self) -> Sequence[tuple[str, Callable[[int | None], Any]]]:
        """The live viewer's mission commands, keys 1-9 in order: (label, function of the
        selected agent's id, or None); [] for none."""
        ...


H = TypeVar("H", bound=Callable[..., Any])


class Registry(Generic[H]):
    """The hooks of one phase, called in registration order. `what` names the phase in errors."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._hooks: tuple[H, ...] = ()  # replaced, never mutated: a hook may remove itself

    def add(self, hook: H) -> None:
        """Append `hook`: it runs after every hook registered before it."""
        if not callable(hook):
            raise TypeError(
                f"{self.what} {hook!r} is not callable (register a function or a bound method)"
            )
        self._hooks = (*self._hooks, hook)

    def remove(self, hook: H) -> None:
        """Take `hook` out (the first registration equal to it); ValueError if absent."""
        hooks = list(self._hooks)
        try:
            hooks.remove(hook)
        except ValueError:
            raise ValueError(f"{hook!r} is not a registered {self.what}") from None
        self._hooks = tuple(hooks)

    def fire(self, arg: Any) -> None:
        """Call every hook with `arg` (the world or the simulator)."""
        for hook in self._hooks:
            hook(arg)

    @property
    def hooks(self) -> tuple[H, ...]:
        """The registered hooks, in call order."""
        return self._hooks
