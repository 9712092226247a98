"""The `[mavlink]` section: which UAVs are MAVLink vehicles, their ids, ports and links.

Importing this module (no pymavlink needed) makes `[mavlink]` and `[flightgear]` sections every
scenario may hold (core.config.register_section); `skyswarm run/view --mavlink` (--flightgear ID)
switches them on for any scenario.

Port rule (PX4 SITL's multi-vehicle convention, docs/mavlink.md): the i-th selected UAV
(i = 0, 1, ... in agent-id order) has system id `system_id + i`; it listens on
`bind_address:vehicle_port + i` and sends to `client_address:client_port + i` until a client
talks to it (then to that client). With `gcs = true` it has a second link, as PX4 SITL does for
QGroundControl: it listens on `gcs_vehicle_port + i` and sends to `client_address:gcs_port`.

    [mavlink]
    enabled = true
    agents = []            # agent ids; [] = every UAV
    vehicle_port = 14580   # vehicle i listens on 14580 + i ...
    client_port = 14540    # ... and talks to 14540 + i (MAVSDK: udpin://127.0.0.1:14540)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from skyswarm.core.config import register_section
from skyswarm.core.geo import on_globe
from skyswarm.core.schema import ConfigError, param

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class MavlinkConfig:
    enabled: bool = param(False, "every selected UAV is a MAVLink 2 vehicle (or --mavlink)")
    agents: tuple[int, ...] = param((), "agent ids of the vehicles; [] for every UAV")
    system_id: int = param(
        1, "MAVLink system id of the first vehicle (+i for the i-th)", ge=1, le=255
    )
    bind_address: str = param(LOOPBACK, "address the vehicles listen on (others: explicit only)")
    client_address: str = param(LOOPBACK, "where telemetry goes until a client talks")
    vehicle_port: int = param(14580, "UDP port vehicle i listens on: vehicle_port + i", ge=1)
    client_port: int = param(14540, "UDP port vehicle i sends to: client_port + i", ge=1)
    gcs: bool = param(False, "a second link per vehicle for a ground station (QGroundControl)")
    gcs_vehicle_port: int = param(18570, "UDP port vehicle i's GCS link listens on: + i", ge=1)
    gcs_port: int = param(14550, "UDP port the GCS link sends to (QGroundControl's)", ge=1)
    poll_hz: float = param(50.0, "rate of socket polling and vehicle logic, Hz", gt=0, rate=True)
    max_datagrams: int = param(
        64, "datagrams read per link per poll at most (the rest wait: bounded work)", ge=1
    )
    max_datagrams_poll: int = param(
        128, "datagrams read per poll over all links at most (each link a fair share first)", ge=1
    )
    signing_key_file: str = param(
        "", "file holding a 32-byte MAVLink 2 signing key (raw or 64 hex digits); '' = unsigned"
    )
    channel: str = param(
        "", "a [comms.channels] channel (e.g. radio) every link crosses: loss, latency; '' = none"
    )
    ground_station_m: tuple[float, ...] = param(
        (), "x, y, z m ENU of the ground station for the channel's distance; [] = each home"
    )
    home_origin: tuple[float, float, float] = param(
        (47.397742, 8.545594, 488.0),
        "lat deg, lon deg, alt m of the ENU origin when [geo] has none (PX4 SITL's default)",
        length=3,
    )

    def validate(self, path: str, file: str) -> None:
        for key in ("bind_address", "client_address"):
            value = getattr(self, key)
            try:
                ipaddress.IPv4Address(value)
            except ValueError:
                raise ConfigError(file, f"{path}.{key}", value, "an IPv4 address") from None
        for key in ("vehicle_port", "client_port", "gcs_vehicle_port", "gcs_port"):
            if getattr(self, key) > 65535:
                raise ConfigError(file, f"{path}.{key}", getattr(self, key), "a port <= 65535")
        if len(self.ground_station_m) not in (0, 3):
            raise ConfigError(
                file, f"{path}.ground_station_m", list(self.ground_station_m), "[] or [x, y, z] m"
            )
        if len(set(self.agents)) != len(self.agents):
            raise ConfigError(file, f"{path}.agents", list(self.agents), "distinct agent ids")
        lat, lon, _ = self.home_origin  # as [geo] origin checks its own
        if not on_globe(lat, lon):
            raise ConfigError(
                file,
                f"{path}.home_origin",
                list(self.home_origin),
                "[latitude -90..90, longitude -180..180, altitude m]",
            )


register_section("mavlink", MavlinkConfig)


@dataclass(frozen=True)
class FlightGearConfig:
    """`[flightgear]`: a native-FDM stream of one UAV to FlightGear (mavlink/flightgear.py)."""

    enabled: bool = param(False, "stream one UAV to FlightGear (native FDM over UDP)")
    agent: int = param(0, "agent id of the UAV streamed", ge=0)
    address: str = param(LOOPBACK, "IPv4 address FlightGear listens on")
    port: int = param(5500, "UDP port of fgfs --native-fdm=socket,in,HZ,,PORT,udp", ge=1, le=65535)
    rate_hz: float = param(30.0, "datagrams per simulated second", gt=0, rate=True)

    def validate(self, path: str, file: str) -> None:
        try:
            ipaddress.IPv4Address(self.address)
        except ValueError:
            raise ConfigError(file, f"{path}.address", self.address, "an IPv4 address") from None


register_section("flightgear", FlightGearConfig)
