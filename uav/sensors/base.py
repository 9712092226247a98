"""The sensor extension point: a `Sensor` base class, the registry of sensor models by name, and
the estimator inputs a sensor may feed.

A sensor model is one class: its config dataclass (`[uav.sensors.NAME]`), its values under the
`qrsim` preset, the model (`sample`, vectorised over the swarm's N agents) and what it records
(`columns`). `register_sensor` makes it configurable in every scenario: config validation, the
presets, the config reference and the `SensorSuite` of uav/estimation.py all read the registry.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from skyswarm.core.schema import ConfigError, ticks_exact

if TYPE_CHECKING:
    from pathlib import Path

    from skyswarm.core.backends import World
    from skyswarm.core.config import WorldConfig


@dataclass(frozen=True)
class Truth:
    """The true state of a swarm's N agents after physics, one tick: what sensors measure.

    position (N, 3) m, velocity (N, 3) m/s, accel (N, 3) m/s^2 (velocity difference over the
    tick), euler (N, 3) rad roll, pitch, ENU yaw, body_rate (N, 3) rad/s body frame, rotation
    (N, 3, 3) body-to-world, alive (N,) bool. A sensor reads it in `sample`:

        def sample(self, tick: int, truth: Truth) -> None:
            self.height = truth.position[:, 2] + self.cfg.sigma_m * self.rng.standard_normal(self.n)
    """

    position: np.ndarray
    velocity: np.ndarray
    accel: np.ndarray
    euler: np.ndarray
    body_rate: np.ndarray
    rotation: np.ndarray
    alive: np.ndarray


@dataclass(frozen=True)
class Setting:
    """What a sensor is built with: N agents, the tick dt_s (s), the world's gravity (m/s^2),
    the scenario's static boxes (B, 6: centre, half size) and the run's `sensors` stream; the
    physics `world` and the agents' (N,) state `slots` in it, for sensors that cast rays
    through the World seam (`World.cast_rays`; None where a sensor is built without one); the
    agents' (N,) `ids`, the boxes' (B,) `box_yaw_rad`, and the scenario's `scenery` (its
    WorldConfig: terrain and mesh obstacles) with `base_dir`, the folder its paths are relative
    to (for sensors that draw the scene). A sensor's `__init__` sizes its state from it:

        def __init__(self, cfg, setting: Setting, truth: Truth) -> None:
            super().__init__(cfg, setting, truth)
            self.bias = setting.rng.normal(0.0, cfg.bias_sigma_m, setting.n)  # (N,) m
    """

    n: int
    dt_s: float
    gravity_m_s2: float
    boxes: np.ndarray
    rng: np.random.Generator
    world: World | None = None
    slots: np.ndarray | None = None
    ids: np.ndarray | None = None
    box_yaw_rad: np.ndarray | None = None
    scenery: WorldConfig | None = None
    base_dir: Path | None = None


def ticks_of(seconds: float, tick_s: float, key: str, allow_zero: bool = False) -> int:
    """`seconds` as whole ticks (>= 1, or >= 0 with `allow_zero`), else a one-line ConfigError
    naming `uav.sensors.KEY`."""
    n = ticks_exact(seconds, tick_s)
    if n is None or n < (0 if allow_zero else 1):
        raise ConfigError("", f"uav.sensors.{key}", seconds, f"a whole number of {tick_s} s ticks")
    return n


class Sensor:
    """Base of every sensor model: subclass it, declare the class attributes, write `__init__`
    (start state; draw from `setting.rng` only) and `sample`, and decorate with
    `register_sensor`. Then `[uav.sensors.NAME]` is a valid scenario table.

    Class attributes:
    - `name`: the table name, `[uav.sensors.NAME]`;
    - `Config`: a frozen dataclass of `param()` fields, each `X | None = param(None, ...)` (unset
      keys take `defaults`); it must have `enabled`, and may have `period_s` (sample period,
      a whole number of ticks; without it the sensor samples every tick), and `record_every`
      (write `arrays()` to the results directory's array log NAME every k-th sample, 0: never;
      core/array_log.py, read back with `skyswarm.load_arrays`);
    - `defaults`: a `Config` with every field set, the sensor's values under the `qrsim` preset
      (under `ideal` every sensor is off); `enabled=False` keeps it off unless a file turns it on;
    - `feeds`: the estimator input it feeds (a key of `FEEDS`, and it then implements that
      Protocol), or None for a sensor that is only observed (read by behaviours, recorded);
    - `columns`: the per-agent columns `record()` adds to sensors.csv.

    Instances hold `cfg` (the resolved Config: read its typed fields), `n`, `rng`, `every` (ticks
    between samples), `fresh` (True on a tick it sampled), `sampled_tick` (the last sample's
    tick, -1 before the first) and `arrays_every` (samples between array-log records, 0: none).
    Sensors sample in a fixed order: by `FEEDS` order of what they feed, observers last, then
    by registration order.

    Example, a downward sonar that measures height above z = 0 with white noise:

        @dataclass(frozen=True)
        class SonarConfig:
            '''[uav.sensors.sonar]: height above ground = truth + white noise.'''

            enabled: bool | None = param(None, "measure height by sonar")
            period_s: float | None = param(None, "sample period, s (whole ticks)", gt=0.0)
            sigma_m: float | None = param(None, "white noise, m", ge=0.0)


        @register_sensor
        class Sonar(Sensor):
            name = "sonar"
            Config = SonarConfig
            defaults = SonarConfig(enabled=False, period_s=0.05, sigma_m=0.01)
            columns = ("sonar_m",)

            def __init__(self, cfg, setting, truth):
                super().__init__(cfg, setting, truth)
                self.height = truth.position[:, 2].copy()  # (N,) m

            def sample(self, tick, truth):
                noise = self.cfg.sigma_m * self.rng.standard_normal(self.n)
                self.height = truth.position[:, 2] + noise

            def record(self):
                return self.height[:, None]

    and in a scenario: `[uav.sensors.sonar]` `enabled = true`. Giving it `feeds = "altitude"`
    and an `altitude` attribute instead makes the estimator fuse it (with the barometer off).
    """

    name: ClassVar[str]
    Config: ClassVar[type]
    defaults: ClassVar[Any]
    feeds: ClassVar[str | None] = None
    columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cfg: Any, setting: Setting, truth: Truth) -> None:
        self.cfg, self.n, self.rng = cfg, setting.n, setting.rng
        periodic = "period_s" in {f.name for f in dataclasses.fields(cfg)}
        self.every = (
            ticks_of(cfg.period_s, setting.dt_s, f"{self.name}.period_s") if periodic else 1
        )
        self.fresh = False
        self.arrays_every = cfg.record_every if "record_every" in cfg.__dataclass_fields__ else 0
        self.sampled_tick = -1  # the tick of the last sample (-1: none yet)

    def step(self, tick: int, truth: Truth) -> None:
        """Phase 6, every tick: `sample` when one is due (every `every` ticks)."""
        self.fresh = tick % self.every == 0
        if self.fresh:
            self.sample(tick, truth)
            self.sampled_tick = tick

    def sample(self, tick: int, truth: Truth) -> None:
        """Take one sample of all N agents from `truth` (draw from `self.rng` only)."""
        raise NotImplementedError

    def record(self) -> np.ndarray:
        """(N, len(columns)) values for sensors.csv (the last sample)."""
        return np.empty((self.n, 0))

    def reading(self, rows: np.ndarray) -> object | None:
        """What a user controller sees of the last sample for the swarm indices `rows` (n,),
        in `SwarmState.readings[name]` (uav/commands.py): a frozen record of (n, ...) arrays,
        or None (the default) for a sensor that only feeds the estimate or the files."""
        return None

    def arrays(self) -> dict[str, np.ndarray]:
        """The last sample's arrays for the array log (name -> array of a fixed shape and
        dtype), written every `arrays_every` samples; none by default."""
        return {}

    def array_constants(self) -> dict[str, np.ndarray]:
        """Small arrays fixed for the run, written once in the array log's header (e.g. beam
        directions); none by default."""
        return {}


# -- what the estimator reads from the sensor that feeds each input ---------------------------
class InertialInput(Protocol):
    """feeds = "inertial": the IMU's last gyro (N, 3) rad/s and specific force (N, 3) m/s^2,
    body frame."""

    gyro: np.ndarray
    specific_force: np.ndarray


class AttitudeInput(Protocol):
    """feeds = "attitude": an AHRS reading every tick, euler (N, 3) rad (roll, pitch, yaw)."""

    euler: np.ndarray


class HeadingInput(Protocol):
    """feeds = "heading": the last heading reading yaw (N,) rad ENU (the truth before the
    first sample); `fresh` on a tick with a new one, `every` ticks apart."""

    yaw: np.ndarray
    fresh: bool
    every: int


class PositionInput(Protocol):
    """feeds = "position": position fixes (N, 3) m that arrive `latency` ticks after they are
    taken, `every` ticks apart; `error` (N, 3) m is the last fix minus the truth (the start
    view before the first fix)."""

    error: np.ndarray
    latency: int
    every: int

    def arrivals(self, tick: int) -> Iterator[np.ndarray]: ...


class AltitudeInput(Protocol):
    """feeds = "altitude": the last altitude sample (N,) m (the start view before the first);
    `fresh` on a tick with a new one, `every` ticks apart."""

    altitude: np.ndarray
    fresh: bool
    every: int


# The estimator's inputs, in the order the sensors feeding them sample each tick.
FEEDS: dict[str, type] = {
    "inertial": InertialInput,
    "attitude": AttitudeInput,
    "heading": HeadingInput,
    "position": PositionInput,
    "altitude": AltitudeInput,
}
_REGISTRY: dict[str, type[Sensor]] = {}


def register_sensor(cls: type[Sensor]) -> type[Sensor]:
    """Class decorator: make `cls` the sensor `[uav.sensors.<cls.name>]`. Checks the declaration
    (a new name, a frozen Config with `enabled`, full `defaults`, a known `feeds`). Register
    before the scenario is loaded. The smallest sensor, the true height above z = 0 (the
    `Sensor` docstring has one with noise, a sample period and a recorded column):

        from dataclasses import dataclass

        from skyswarm import Simulator, load_scenario
        from skyswarm.extend import Sensor, param, register_sensor, swarms_of


        @dataclass(frozen=True)
        class HeightConfig:
            enabled: bool | None = param(None, "measure the height above z = 0")


        @register_sensor
        class Height(Sensor):
            name = "height"  # [uav.sensors.height]
            Config = HeightConfig
            defaults = HeightConfig(enabled=False)

            def sample(self, tick, truth):
                self.value = truth.position[:, 2].copy()  # (N,) m


        overrides = ["agents.count=2", "uav.sensors.height.enabled=true"]
        sim = Simulator.from_scenario(load_scenario("hover", overrides))
        (swarm,) = swarms_of(sim)
        sim.step()
        print(swarm.sensors.sensor("height").value)  # [10. 10.]
        sim.close()
    """
    name = cls.name
    if name in _REGISTRY:
        raise ValueError(f"sensor {name!r} is registered already ({_REGISTRY[name].__name__})")
    if not dataclasses.is_dataclass(cls.Config) or "enabled" not in cls.Config.__dataclass_fields__:
        raise TypeError(f"sensor {name!r}: Config must be a dataclass with an 'enabled' field")
    if not isinstance(cls.defaults, cls.Config):
        raise TypeError(f"sensor {name!r}: defaults must be a {cls.Config.__name__}")
    defaults = dataclasses.asdict(cls.defaults)
    unset = [key for key, value in defaults.items() if value is None]
    if unset:
        raise TypeError(f"sensor {name!r}: defaults leave {', '.join(unset)} unset")
    if cls.feeds is not None and cls.feeds not in FEEDS:
        raise ValueError(f"sensor {name!r}: feeds {cls.feeds!r} is none of {', '.join(FEEDS)}")
    _REGISTRY[name] = cls
    return cls


def unregister_sensor(name: str) -> None:
    """Remove sensor `name` from the registry (for tests and plug-ins that register their own)."""
    del _REGISTRY[name]


def registered_sensors() -> dict[str, type[Sensor]]:
    """name -> Sensor class, in registration order (the built-ins first: uav/sensors/)."""
    return dict(_REGISTRY)


def sampling_order(names: list[str]) -> list[str]:
    """`names` (registered sensors) in the order they sample each tick: by `FEEDS` order of the
    input they feed, sensors that feed none last, ties in registration order."""
    rank = {feed: i for i, feed in enumerate(FEEDS)}
    position = {name: i for i, name in enumerate(_REGISTRY)}
    feeds = {name: _REGISTRY[name].feeds for name in names}
    return sorted(
        names, key=lambda s: (rank.get(feeds[s], len(rank)) if feeds[s] else len(rank), position[s])
    )
