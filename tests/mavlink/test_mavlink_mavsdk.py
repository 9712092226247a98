"""MAVSDK-Python (the classic asyncio API, `mavsdk` 3.17.4, whose wheel ships mavsdk_server)
flies a skyswarm vehicle unchanged: arm, take off, land; a mission upload and start; offboard
velocity. The simulation runs in a thread paced at 4x real time (MAVSDK's timeouts are wall
clock); everything is on 127.0.0.1."""

from __future__ import annotations

import asyncio
import importlib
import math
import random
import socket
import threading
import warnings

import pytest

from skyswarm.core.config import load_scenario
from skyswarm.core.simulator import Simulator
from skyswarm.mavlink import attach
from skyswarm.mavlink.realtime import Pacer
from tests.mavlink.harness import free_base


def _mavsdk():
    """The `mavsdk` module, imported by the test that uses it (~1.6 s: not at every worker's
    collection); skipped without it."""
    with warnings.catch_warnings():  # the 3.x wheel warns that the name moves to mavsdk-grpc
        warnings.simplefilter("ignore")
        mavsdk = pytest.importorskip("mavsdk")
        importlib.import_module("mavsdk.mission")
        importlib.import_module("mavsdk.offboard")
    return mavsdk


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PacedRun:
    def __init__(self, root) -> None:
        base = free_base(8, random.Random())
        self.client_port = base
        scenario = load_scenario(
            root / "configs/mavlink.toml",
            ["agents.count=1", f"mavlink.client_port={base}", f"mavlink.vehicle_port={base + 4}"],
        )
        self.sim = Simulator.from_scenario(scenario)
        self.service = attach(self.sim)
        self.pacer = Pacer(self.sim, 4.0)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            self.sim.step()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.service.close()
        self.sim.close()


async def _first(aiter, test=lambda x: True):
    async for x in aiter:
        if test(x):
            return x


async def _fly(run: PacedRun, mavsdk) -> dict:
    MissionItem, MissionPlan = mavsdk.mission.MissionItem, mavsdk.mission.MissionPlan
    VelocityNedYaw = mavsdk.offboard.VelocityNedYaw
    drone = mavsdk.System(port=_free_tcp_port())
    await drone.connect(system_address=f"udpin://127.0.0.1:{run.client_port}")
    await _first(drone.core.connection_state(), lambda s: s.is_connected)
    await _first(drone.telemetry.health(), lambda h: h.is_global_position_ok and h.is_armable)
    out: dict = {}
    # arm, take off to 5 m, land
    await drone.action.set_takeoff_altitude(5.0)
    await drone.action.arm()
    await drone.action.takeoff()
    await _first(drone.telemetry.flight_mode(), lambda m: m == mavsdk.telemetry.FlightMode.HOLD)
    out["takeoff_alt"] = (await _first(drone.telemetry.position())).relative_altitude_m
    # offboard: 1.5 m/s north
    await drone.offboard.set_velocity_ned(VelocityNedYaw(1.5, 0.0, 0.0, 0.0))
    await drone.offboard.start()
    await asyncio.sleep(1.5)  # 6 s of simulated time at 4x
    out["offboard_vn"] = (await _first(drone.telemetry.velocity_ned())).north_m_s
    await drone.offboard.stop()
    # a mission from here: two waypoints 10 m east and back, at 5 m
    home = await _first(drone.telemetry.home())
    east = 10.0 / (111_320.0 * math.cos(math.radians(home.latitude_deg)))

    def wp(lat, lon):
        return MissionItem(
            lat,
            lon,
            5.0,
            3.0,
            False,
            math.nan,
            math.nan,
            MissionItem.CameraAction.NONE,
            math.nan,
            math.nan,
            1.0,
            math.nan,
            math.nan,
            MissionItem.VehicleAction.NONE,
        )

    plan = MissionPlan(
        [
            wp(home.latitude_deg, home.longitude_deg + east),
            wp(home.latitude_deg, home.longitude_deg),
        ]
    )
    await drone.mission.upload_mission(plan)
    await drone.mission.start_mission()
    progress = await _first(drone.mission.mission_progress(), lambda p: p.current == p.total)
    out["mission"] = (progress.current, progress.total)
    await drone.action.land()
    await _first(drone.telemetry.in_air(), lambda a: not a)
    out["landed"] = (await _first(drone.telemetry.landed_state())).name
    return out


def test_mavsdk_flies_takeoff_offboard_mission_and_land(repo_root):
    mavsdk = _mavsdk()
    run = PacedRun(repo_root)
    try:
        out = asyncio.run(asyncio.wait_for(_fly(run, mavsdk), 120))
    finally:
        run.close()
    assert abs(out["takeoff_alt"] - 5.0) < 0.3
    assert abs(out["offboard_vn"] - 1.5) < 0.15
    assert out["mission"] == (2, 2)
    assert out["landed"] == "ON_GROUND"
