"""`skyswarm view --mavlink`: the window's run is a set of MAVLink vehicles paced to the wall
clock. A real pymavlink client, in this process, talks to `skyswarm view` running under Xvfb
(`xvfb-run -a`): it hears heartbeats, arms vehicle 0 and takes it off to 3 m."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pymavlink import mavutil

from tests.mavlink.harness import free_base

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from skyswarm.app.cli import main; sys.exit(main(sys.argv[1:]))"
ARM, TAKEOFF = 400, 22  # MAV_CMD_COMPONENT_ARM_DISARM, MAV_CMD_NAV_TAKEOFF
ARMED = 128  # MAV_MODE_FLAG_SAFETY_ARMED
HOME_AMSL_M = 488.0  # configs/mavlink.toml [geo] origin altitude; the UAVs rest at ground level


def _recv(client, kind: str, wall_s: float, test=lambda m: True):
    """The first `kind` message (passing `test`) within `wall_s` wall seconds, else None."""
    end = time.monotonic() + wall_s
    while time.monotonic() < end:
        m = client.recv_match(type=kind, blocking=True, timeout=0.2)
        if m is not None and test(m):
            return m
    return None


def _end(proc: subprocess.Popen) -> tuple[str, str]:
    """Ctrl-C to the viewer (xvfb-run's child running the CLI: xvfb-run then stops its Xvfb),
    then its output; SIGKILL to the process group if it has not ended within 60 s."""
    if proc.poll() is None:
        found = subprocess.run(
            ["pgrep", "-P", str(proc.pid), "-f", "skyswarm.app.cli"], capture_output=True, text=True
        )
        for pid in found.stdout.split():
            os.kill(int(pid), signal.SIGINT)
    try:
        return proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate(timeout=10)


def test_view_mavlink_vehicle_heartbeats_arms_and_takes_off(tmp_path: Path) -> None:
    xvfb_run = shutil.which("xvfb-run")
    if xvfb_run is None:
        pytest.skip("xvfb-run is not installed (apt-get install -y xvfb)")
    base = free_base(8, random.Random())
    client_port, vehicle_port = base, base + 4
    out = tmp_path / "view"
    # -n 150: displays from :150 up, away from tests/gui's fixed :99 (xdist runs both at once)
    cmd = [
        xvfb_run, "-a", "-n", "150", sys.executable, "-c", CLI, "view", "mavlink", "--mavlink",
        "--set", "agents.count=2", "--set", f"mavlink.client_port={client_port}",
        "--set", f"mavlink.vehicle_port={vehicle_port}", "--size", "320x240", "--out", str(out),
    ]  # fmt: skip
    client = mavutil.mavlink_connection(
        f"udpin:127.0.0.1:{client_port}", source_system=255, source_component=190
    )
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # xvfb-run's Xvfb and the viewer: one process group to signal
    )  # fmt: skip
    try:
        first = _recv(client, "HEARTBEAT", 90.0, lambda m: m.get_srcSystem() == 1)
        assert first is not None, "no heartbeat from the viewed run within 90 s"
        assert first.autopilot == mavutil.mavlink.MAV_AUTOPILOT_PX4
        assert not first.base_mode & ARMED  # the mavlink scenario: landed and disarmed
        t0 = _recv(client, "SYSTEM_TIME", 5.0)
        wall0 = time.monotonic()
        client.mav.command_long_send(1, 1, ARM, 0, 1, 0, 0, 0, 0, 0, 0)
        ack = _recv(client, "COMMAND_ACK", 10.0, lambda m: m.command == ARM)
        assert ack is not None and ack.result == mavutil.mavlink.MAV_RESULT_ACCEPTED
        climb = (0, 0, 0, 0, math.nan, math.nan, HOME_AMSL_M + 3.0)  # param 7: AMSL altitude
        client.mav.command_long_send(1, 1, TAKEOFF, 0, *climb)
        ack = _recv(client, "COMMAND_ACK", 10.0, lambda m: m.command == TAKEOFF)
        assert ack is not None and ack.result == mavutil.mavlink.MAV_RESULT_ACCEPTED
        up = _recv(client, "LOCAL_POSITION_NED", 60.0, lambda m: m.z < -2.7)
        assert up is not None, "vehicle 0 did not climb to 2.7 m within 60 s"
        beat = _recv(client, "HEARTBEAT", 5.0, lambda m: m.get_srcSystem() == 1)
        assert beat is not None and beat.base_mode & ARMED
        t1 = _recv(client, "SYSTEM_TIME", 5.0)
        wall1 = time.monotonic()
    finally:
        stdout, stderr = _end(proc)
        client.close()
    # Paced to the wall clock: simulated time never runs ahead of it (a flat-out run of two
    # UAVs would be tens of times faster); it may fall behind on a loaded machine, not by half.
    # SYSTEM_TIME carries simulated ms since boot in time_boot_ms.
    sim_s = (t1.time_boot_ms - t0.time_boot_ms) / 1000.0
    wall_s = wall1 - wall0
    assert wall_s > 2.0
    assert 0.5 < sim_s / wall_s < 1.1, (sim_s, wall_s)
    assert "mavlink: 2 vehicles, system ids 1..2" in stdout, stdout + stderr
    assert proc.returncode == 130, stderr  # Ctrl-C: the CLI's interrupt exit code
    report = json.loads((out / "mavlink.json").read_text())  # reported like `run --mavlink`'s
    assert report["vehicles"] == 2
    assert report["received"]["accepted"] >= 2  # the arm and takeoff commands at least
    assert (out / "summary.json").is_file()
