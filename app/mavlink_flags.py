"""`skyswarm run --mavlink [--mavlink-bind ADDRESS] --realtime [FACTOR]`: the run's MAVLink
vehicles (skyswarm.mavlink, docs/mavlink.md) and wall-clock pacing, started after the
simulation is built and reported (and written to mavlink.json / realtime.json) at its end.
`skyswarm view --mavlink` attaches the same vehicles to every run of the window (the window
paces itself: `--speed`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import skyswarm.mavlink.config  # noqa: F401  registers [mavlink] for every scenario (no pymavlink)


def add_args(p: argparse.ArgumentParser, realtime: bool = True) -> None:
    """--mavlink and --mavlink-bind; with `realtime`, --realtime [FACTOR] too."""
    p.add_argument(
        "--mavlink",
        action="store_true",
        help="every UAV a MAVLink 2 vehicle on UDP 127.0.0.1 (ports: docs/mavlink.md)",
    )
    p.add_argument(
        "--mavlink-bind",
        metavar="ADDRESS",
        help="listen on this IPv4 address instead of 127.0.0.1 (explicit: exposes the vehicles)",
    )
    p.add_argument(
        "--flightgear",
        type=int,
        metavar="ID",
        help="stream UAV ID to FlightGear (native FDM, UDP 127.0.0.1:5500; docs/mavlink.md)",
    )
    if not realtime:
        return
    p.add_argument(
        "--realtime",
        nargs="?",
        const=1.0,
        type=float,
        metavar="FACTOR",
        help="pace simulated time to the wall clock (x FACTOR, default 1.0) and report how well",
    )


class Started:
    """What `start` attached to a simulation; `finish` reports and detaches it."""

    def __init__(self) -> None:
        self.service: Any = None
        self.pacer: Any = None
        self.fdm: Any = None

    def finish(self, out: Path | None) -> None:
        parts = (("mavlink", self.service), ("realtime", self.pacer), ("flightgear", self.fdm))
        for name, part in parts:
            if part is None:
                continue
            report = part.report()
            part.close()
            shown = ", ".join(f"{k} {_fmt(v)}" for k, v in report.items() if k != "received")
            print(f"{name}: {shown}")
            if name == "mavlink":
                print(f"mavlink received: {report['received']}")
            if out is not None and out.is_dir():
                (out / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")


def start(args: argparse.Namespace, sim: Any) -> Started:
    """Attach the MAVLink service (--mavlink or `[mavlink] enabled`) and the pacer."""
    from skyswarm.core.schema import ConfigError

    started = Started()
    factor = getattr(args, "realtime", None)  # `view` has none: its window paces itself
    if factor is not None and not (math.isfinite(factor) and factor > 0):
        raise ConfigError("", "--realtime", factor, "a factor > 0 (1.0: real time)")
    from skyswarm.mavlink import configured

    started.fdm = _flightgear(args, sim)  # first: a bad [flightgear] binds nothing
    config = configured(sim)
    if args.mavlink or config.enabled or args.mavlink_bind:
        from skyswarm.mavlink import attach

        if args.mavlink_bind:
            config = dataclasses.replace(config, bind_address=args.mavlink_bind)
            config.validate("mavlink", "--mavlink-bind")
        started.service = attach(sim, dataclasses.replace(config, enabled=True))
        v = started.service.vehicles
        if v:
            c = config
            print(
                f"mavlink: {len(v)} vehicles, system ids {v[0].sysid}..{v[-1].sysid}, "
                f"udp {c.bind_address}:{c.vehicle_port}+i -> {c.client_address}:{c.client_port}+i"
                + (f", gcs {c.gcs_vehicle_port}+i -> {c.gcs_port}" if c.gcs else "")
            )
    if factor is not None:
        from skyswarm.mavlink.realtime import Pacer

        started.pacer = Pacer(sim, factor)
    return started


def _flightgear(args: argparse.Namespace, sim: Any) -> Any:
    """The FlightGear stream (--flightgear ID or `[flightgear] enabled`), or None."""
    from skyswarm.mavlink.config import FlightGearConfig

    scenario = sim.scenario
    config = FlightGearConfig()
    if scenario is not None and "flightgear" in scenario.sections:
        config = scenario.section("flightgear")
    agent = getattr(args, "flightgear", None)
    if agent is None and not config.enabled:
        return None
    from skyswarm.mavlink.flightgear import FdmStream

    if agent is not None:
        config = dataclasses.replace(config, enabled=True, agent=agent)
    stream = FdmStream(sim, config)
    print(f"flightgear: agent {config.agent} -> udp {config.address}:{config.port}")
    return stream


def view_attach(args: argparse.Namespace) -> Callable[[Any, Path | None], Callable[[], None]]:
    """The gui/session.py SimAttach of `skyswarm view`: the MAVLink vehicles (when asked for)
    attached to each run the window builds, reported at its end like `run`'s."""

    def attach(sim: Any, out: Path | None) -> Callable[[], None]:
        started = start(args, sim)
        return lambda: started.finish(out)

    return attach


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
