"""The FlightGear native-FDM stream: the datagrams of `skyswarm run --flightgear ID`, decoded
here by a decoder written from FlightGear's net_fdm.hxx (v24, big-endian), match the run's own
recorded trajectory sample by sample (position, attitude, velocity)."""

from __future__ import annotations

import math
import random
import socket
import struct
from pathlib import Path

import numpy as np
import pytest

from skyswarm.app.cli import main
from skyswarm.app.exits import EXIT_TIME_LIMIT
from skyswarm.core.geo import wgs84_to_enu
from skyswarm.core.recorder import read_trajectory
from skyswarm.mavlink.frames import enu_to_ned, euler_ned, rotation_ned

# FGNetFDM v24 field by field (net_fdm.hxx), network byte order.
FIELDS = (
    [("version", "I"), ("padding", "I"), ("longitude", "d"), ("latitude", "d"), ("altitude", "d")]
    + [(n, "f") for n in ("agl", "phi", "theta", "psi", "alpha", "beta", "phidot", "thetadot")]
    + [(n, "f") for n in ("psidot", "vcas", "climb_rate", "v_north", "v_east", "v_down")]
    + [(n, "f") for n in ("v_body_u", "v_body_v", "v_body_w", "A_X", "A_Y", "A_Z")]
    + [("stall_warning", "f"), ("slip_deg", "f"), ("num_engines", "I")]
    + [(f"eng_state{i}", "I") for i in range(4)]
    + [(f"engine{i}", "f") for i in range(36)]
    + [("num_tanks", "I")]
    + [(f"fuel{i}", "f") for i in range(4)]
    + [("num_wheels", "I")]
    + [(f"wow{i}", "I") for i in range(3)]
    + [(f"gear{i}", "f") for i in range(9)]
    + [("cur_time", "I"), ("warp", "i"), ("visibility", "f")]
    + [(f"surface{i}", "f") for i in range(10)]
)
FORMAT = ">" + "".join(t for _, t in FIELDS)
FT = 0.3048  # m per ft


def decode(datagram: bytes) -> dict[str, float]:
    assert struct.calcsize(FORMAT) == 408 == len(datagram)
    return dict(zip([n for n, _ in FIELDS], struct.unpack(FORMAT, datagram)))


def test_fdm_stream_matches_the_runs_trajectory(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(50):  # a free port (xdist-safe)
        port = random.randrange(20000, 60000)
        try:
            sock.bind(("127.0.0.1", port))
            break
        except OSError:
            continue
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.setblocking(False)
    out = tmp_path / "run"
    # waypoints: three UAVs flying a route; stream agent 1 at the trajectory's 10 Hz
    args = ["run", "waypoints", "--out", str(out), "--quiet", "--duration", "12",
            "--flightgear", "1", "--set", f"flightgear.port={port}",
            "--set", "flightgear.rate_hz=10.0", "--set", "results.trajectory_hz=10.0"]  # fmt: skip
    try:
        assert main(args) == EXIT_TIME_LIMIT  # cut at 12 s, short of the route's end
        packets = []
        while True:
            try:
                packets.append(decode(sock.recv(4096)))
            except BlockingIOError:
                break
    finally:
        sock.close()
    rec = read_trajectory(out)
    rec = rec[rec["agent_id"] == 1]
    assert len(packets) == len(rec) >= 115  # one datagram per sample of the 12 s run
    origin = (47.397742, 8.545594, 488.0)  # configs/waypoints.toml has no [geo]: PX4's home
    lat = np.degrees([p["latitude"] for p in packets])
    lon = np.degrees([p["longitude"] for p in packets])
    alt = np.array([p["altitude"] for p in packets])
    enu = wgs84_to_enu(np.column_stack([lat, lon, alt]), origin)
    assert {p["version"] for p in packets} == {24}
    np.testing.assert_allclose(enu, rec["position"], atol=1e-3)  # m
    assert np.ptp(rec["position"][:, 0]) > 5.0  # the UAV flew: the comparison can fail
    agl = np.array([p["agl"] for p in packets])
    np.testing.assert_allclose(agl, rec["position"][:, 2], atol=1e-4)
    euler = euler_ned(rotation_ned(rec["orientation"].astype(float)))
    got = np.array([[p["phi"], p["theta"], p["psi"]] for p in packets])
    np.testing.assert_allclose(got[:, :2], euler[:, :2], atol=1e-5)  # float32 rad
    heading = np.angle(np.exp(1j * (got[:, 2] - euler[:, 2])))
    np.testing.assert_allclose(heading, 0.0, atol=1e-5)
    assert np.all((got[:, 2] >= 0) & (got[:, 2] < 2 * math.pi + 1e-6))  # true heading 0..2 pi
    v_ned = enu_to_ned(rec["velocity"].astype(float))
    v_got = np.array([[p["v_north"], p["v_east"], p["v_down"]] for p in packets]) * FT
    np.testing.assert_allclose(v_got, v_ned, atol=1e-4)  # ft/s on the wire
    v_body = np.array([[p["v_body_u"], p["v_body_v"], p["v_body_w"]] for p in packets]) * FT
    np.testing.assert_allclose(
        np.linalg.norm(v_body, axis=1), np.linalg.norm(v_ned, axis=1), atol=1e-4
    )
    climb = np.array([p["climb_rate"] for p in packets]) * FT
    np.testing.assert_allclose(climb, -v_ned[:, 2], atol=1e-4)
    speed_kt = np.linalg.norm(v_ned, axis=1) * 3600 / 1852
    np.testing.assert_allclose([p["vcas"] for p in packets], speed_kt, atol=1e-3)


def test_a_missing_agent_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    code = main(["run", "waypoints", "--out", str(tmp_path / "r"), "--flightgear", "99"])
    assert code == 2
    err = capsys.readouterr().err
    assert "flightgear.agent" in err and "99" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("key", "value"), [("flightgear.address", "'here'"), ("flightgear.rate_hz", "0.0")]
)
def test_bad_flightgear_settings_are_one_line_errors(tmp_path: Path, capsys, key, value) -> None:
    code = main(["run", "waypoints", "--out", str(tmp_path / "r"), "--set", f"{key}={value}"])
    assert code == 2
    assert key in capsys.readouterr().err
