"""`skyswarm run --mavlink [--mavlink-bind ADDRESS] --realtime [FACTOR]`: the run's MAVLink
vehicles (skyswarm.mavlink, docs/mavlink.md) and wall-clock pacing, started after the
simulation is built and reported (and written to mavlink.json / realtime.json) at its end."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import skyswarm.mavlink.config  # noqa: F401  registers [mavlink] for every scenario (no pymavlink)


def add_args(p: argparse.ArgumentParser) -> None:
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

    def finish(self, out: Path | None) -> None:
        for name, part in (("mavlink", self.service), ("realtime", self.pacer)):
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
    factor = getattr(args, "realtime", None)
    if factor is not None and not (math.isfinite(factor) and factor > 0):
        raise ConfigError("", "--realtime", factor, "a factor > 0 (1.0: real time)")
    from skyswarm.mavlink import configured

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


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
