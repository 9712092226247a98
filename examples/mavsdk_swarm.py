"""Fly a skyswarm swarm from a MAVSDK-Python script: one `System` per vehicle, all at once.

Start the vehicles first (4 UAVs landed and disarmed, PX4's ports), then this script:

    skyswarm run mavlink --realtime
    python examples/mavsdk_swarm.py            # 4 vehicles: udpin 14540 .. 14543

Each vehicle is armed and takes off to its own height (5, 6, 7 ... m), flies 1 m/s north in
OFFBOARD for 5 s, stops and lands; the script prints each vehicle's height after the takeoff,
its north speed in offboard and its landed state. Needs `pip install mavsdk==3.17.4` (the
classic asyncio API whose wheel ships mavsdk_server; each System starts its own server, on
its own gRPC port). Options: `--vehicles N --client-port P --grpc-port G`.
"""

from __future__ import annotations

import argparse
import asyncio
import warnings

with warnings.catch_warnings():  # the 3.x wheel warns that the name moves to mavsdk-grpc
    warnings.simplefilter("ignore")
    from mavsdk import System
    from mavsdk.offboard import VelocityNedYaw
    from mavsdk.telemetry import FlightMode


async def first(stream, test=lambda x: True):
    """The first item of a MAVSDK telemetry stream that passes `test`."""
    async for x in stream:
        if test(x):
            return x


async def fly(i: int, client_port: int, grpc_port: int) -> str:
    """Vehicle i (system id 1 + i, udpin client_port + i): take off, offboard, land."""
    drone = System(port=grpc_port + i)  # one mavsdk_server per vehicle
    await drone.connect(system_address=f"udpin://127.0.0.1:{client_port + i}")
    await first(drone.core.connection_state(), lambda s: s.is_connected)
    await first(drone.telemetry.health(), lambda h: h.is_global_position_ok and h.is_armable)
    await drone.action.set_takeoff_altitude(5.0 + i)
    await drone.action.arm()
    await drone.action.takeoff()
    await first(drone.telemetry.flight_mode(), lambda m: m == FlightMode.HOLD)  # took off
    height = (await first(drone.telemetry.position())).relative_altitude_m
    await drone.offboard.set_velocity_ned(VelocityNedYaw(1.0, 0.0, 0.0, 0.0))
    await drone.offboard.start()  # 1 m/s north
    await asyncio.sleep(5.0)
    north = (await first(drone.telemetry.velocity_ned())).north_m_s
    await drone.offboard.stop()  # back to HOLD
    await drone.action.land()
    await first(drone.telemetry.in_air(), lambda a: not a)
    landed = (await first(drone.telemetry.landed_state())).name
    return f"vehicle {i}: took off to {height:.2f} m, offboard north {north:.2f} m/s, {landed}"


async def main(vehicles: int, client_port: int, grpc_port: int) -> None:
    flights = [fly(i, client_port, grpc_port) for i in range(vehicles)]
    for line in await asyncio.gather(*flights):
        print(line)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vehicles", type=int, default=4, help="vehicles to fly (4)")
    p.add_argument("--client-port", type=int, default=14540, help="[mavlink] client_port")
    p.add_argument("--grpc-port", type=int, default=50051, help="first mavsdk_server port")
    a = p.parse_args()
    asyncio.run(asyncio.wait_for(main(a.vehicles, a.client_port, a.grpc_port), 300))
