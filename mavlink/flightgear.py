"""A FlightGear native-FDM stream of one UAV: FlightGear draws it in its 3-D world.

`[flightgear]` (or `skyswarm run/view --flightgear ID`) sends, `rate_hz` times per simulated
second, one UDP datagram to `address:port`: FlightGear's `FGNetFDM` struct, version 24
(FlightGear's src/Network/net_fdm.hxx), 408 bytes, every field big-endian (network order).
FlightGear, started with its own flight model off, puts its aircraft where the UAV is:

    fgfs --fdm=null --native-fdm=socket,in,30,,5500,udp

(`socket,in,HZ,HOST,PORT,udp`: HZ at least `rate_hz`, HOST empty = every local address,
PORT = `[flightgear] port`.) The fields are the UAV's true state (what the GUI draws):
longitude, latitude (rad) and altitude (m AMSL: the origin's + z) from the ENU position and
the scenario's `[geo] origin` (else `[mavlink] home_origin`) by core/geo.py; `agl` the height
above the ground plane z = 0 (m);
`phi`, `theta`, `psi` roll, pitch and true heading (rad, NED/FRD); `phidot`, `thetadot`,
`psidot` the body rates p, q, r (rad/s); `v_north`, `v_east`, `v_down` and `climb_rate` in ft/s;
`v_body_u/v/w` the velocity in the body frame (ft/s); `vcas` the speed (kt); `cur_time` the run's
wall-clock start plus simulated time (unix s). Engines, tanks, wheels and control surfaces: 0.
A dead UAV's stream stops.

    from skyswarm.mavlink.flightgear import FdmStream, FlightGearConfig
    stream = FdmStream(sim, FlightGearConfig(enabled=True, agent=0))   # a post-tick listener
    sim.run()
    stream.close()
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.geo import enu_to_wgs84
from skyswarm.core.schema import ConfigError
from skyswarm.mavlink.config import FlightGearConfig, MavlinkConfig
from skyswarm.mavlink.frames import enu_to_ned, euler_ned, rotation_ned

if TYPE_CHECKING:
    from skyswarm.core.backends import World
    from skyswarm.core.simulator import Simulator

VERSION = 24  # FG_NET_FDM_VERSION
FT_PER_M = 1.0 / 0.3048
KT_PER_M_S = 3600.0 / 1852.0
VISIBILITY_M = 20000.0
# FGNetFDM v24 in order: version, padding; longitude, latitude, altitude (double); agl, phi,
# theta, psi, alpha, beta, phidot, thetadot, psidot, vcas, climb_rate, v_north, v_east, v_down,
# v_body_u, v_body_v, v_body_w, A_X/Y/Z_pilot, stall_warning, slip_deg (22 float);
# num_engines, eng_state[4]; rpm, fuel_flow, fuel_px, egt, cht, mp_osi, tit, oil_temp,
# oil_px [4] each (36 float); num_tanks, fuel_quantity[4]; num_wheels, wow[3], gear_pos,
# gear_steer, gear_compression [3] each; cur_time, warp (int32), visibility; 10 control
# surface floats (elevator .. spoilers).
NET_FDM = struct.Struct(">II ddd 22f I4I 36f I4f I3I 9f Iif 10f")
assert NET_FDM.size == 408


def pack(
    geo: np.ndarray, agl: float, euler: np.ndarray, rates: np.ndarray, v_ned: np.ndarray,
    v_body: np.ndarray, unix_s: float,
) -> bytes:  # fmt: skip
    """One FGNetFDM v24 datagram. `geo` lat deg, lon deg, alt m AMSL; `euler` roll, pitch,
    yaw rad (NED/FRD, yaw from north); `rates` (3,) rad/s FRD; `v_ned`, `v_body` (3,) m/s."""
    lat, lon, alt = (float(x) for x in geo)
    v_ned_ft = np.asarray(v_ned, dtype=float) * FT_PER_M
    floats = [
        agl, *euler[:2], float(euler[2]) % (2 * np.pi), 0.0, 0.0,  # agl, attitude, alpha, beta
        *rates, float(np.linalg.norm(v_ned)) * KT_PER_M_S, -v_ned_ft[2],  # rates, vcas, climb
        *v_ned_ft, *(np.asarray(v_body, dtype=float) * FT_PER_M), 0.0, 0.0, 0.0, 0.0, 0.0,
    ]  # fmt: skip
    return NET_FDM.pack(
        VERSION, 0, np.radians(lon), np.radians(lat), alt, *floats,
        0, *([0] * 4), *([0.0] * 36), 0, *([0.0] * 4), 0, *([0] * 3), *([0.0] * 9),
        int(unix_s) & 0xFFFFFFFF, 0, VISIBILITY_M, *([0.0] * 10),
    )  # fmt: skip


class FdmStream:
    """Streams agent `config.agent` of `sim` to FlightGear (a post-tick listener)."""

    def __init__(self, sim: Simulator, config: FlightGearConfig) -> None:
        file = sim.scenario.file if sim.scenario is not None else ""
        agent = sim.agents.get(config.agent)
        if not isinstance(agent, PhysicalAgent):
            ids = sorted(a.id for a in sim.physical_agents)
            raise ConfigError(file, "flightgear.agent", config.agent, f"a flying agent's id {ids}")
        try:
            self.every = max(1, sim.world.ticks_for(1.0 / config.rate_hz, "stream period"))
        except ValueError as exc:
            raise ConfigError(file, "flightgear.rate_hz", config.rate_hz, str(exc)) from None
        self.sim, self.agent, self.slot = sim, agent, int(agent.slot)
        self.remote = (config.address, config.port)
        geo = sim.scenario.geo.origin if sim.scenario is not None else ()
        self.origin = tuple(geo) if geo else tuple(MavlinkConfig().home_origin)
        self.start_unix = time.time()
        self.sent = self.dropped = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.post_tick(sim.world)  # the start, as the recorder's first sample
        sim.add_post_tick(self.post_tick)

    def post_tick(self, world: World) -> None:
        if world.tick % self.every or not self.agent.alive:
            return
        st, i = world.state, self.slot
        pos = np.array(st.position[i], dtype=float)
        r = rotation_ned(np.array(st.orientation[i : i + 1], dtype=float))
        w_ned = enu_to_ned(np.array(st.angular_velocity[i : i + 1], dtype=float))
        w_frd = np.einsum("nji,nj->ni", r, w_ned)  # R_ned_frd^T w: body rates p, q, r
        v_ned = enu_to_ned(np.array(st.linear_velocity[i : i + 1], dtype=float))
        v_body = np.einsum("nji,nj->ni", r, v_ned)[0]  # R_ned_frd^T v_ned
        datagram = pack(
            enu_to_wgs84(pos[None, :], self.origin)[0], float(pos[2]), euler_ned(r)[0],
            w_frd[0], v_ned[0], v_body, self.start_unix + world.time_s,
        )  # fmt: skip
        try:
            self.sock.sendto(datagram, self.remote)
            self.sent += 1
        except OSError:  # nobody listening (ECONNREFUSED echoes), buffer full
            self.dropped += 1

    def report(self) -> dict[str, Any]:
        return {"agent": self.agent.id, "to": f"{self.remote[0]}:{self.remote[1]}",
                "sent": self.sent, "dropped": self.dropped}  # fmt: skip

    def close(self) -> None:
        if self.post_tick in self.sim.post_tick_listeners:
            self.sim.remove_post_tick(self.post_tick)
        with contextlib.suppress(OSError):
            self.sock.close()
