"""Headings and the geographic origin: conventions, exact round trips, known distances, export."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from skyswarm.app.cli import main
from skyswarm.core.geo import enu_to_wgs84, heading_to_yaw, wgs84_to_enu, yaw_to_heading

CATANIA = (37.5254, 15.0727, 30.0)


@pytest.mark.parametrize(
    "heading,yaw", [(0, np.pi / 2), (90, 0.0), (180, -np.pi / 2), (270, np.pi), (60, np.pi / 6)]
)
def test_compass_heading_to_enu_yaw(heading, yaw):
    assert heading_to_yaw(heading) == pytest.approx(yaw, abs=1e-12)
    assert yaw_to_heading(yaw) == pytest.approx(heading % 360, abs=1e-9)


def test_enu_wgs84_round_trip_and_known_distances():
    enu = np.array([[0.0, 0.0, 0.0], [0.0, 1000.0, 0.0], [1000.0, 0.0, 0.0], [50.0, -20.0, 12.0]])
    geo = enu_to_wgs84(enu, CATANIA)
    assert geo[0] == pytest.approx(CATANIA)
    # 1 km north at 37.5 deg: the meridian radius of curvature there is 6,358.6 km.
    assert geo[1, 0] - CATANIA[0] == pytest.approx(np.degrees(1000.0 / 6_358_600.0), rel=1e-3)
    # 1 km east: the parallel's radius is N cos(lat), N = 6,386.0 km.
    east = np.degrees(1000.0 / (6_386_000.0 * np.cos(np.radians(CATANIA[0]))))
    assert geo[2, 1] - CATANIA[1] == pytest.approx(east, rel=1e-3)
    assert np.allclose(wgs84_to_enu(geo, CATANIA), enu, atol=1e-6)


def test_bad_origin_is_a_config_error(repo_root, capsys):
    cfg = str(repo_root / "configs/drop_test.toml")
    assert main(["validate", cfg, "--set", "geo.origin=[95.0, 10.0, 0.0]"]) == 2
    assert "geo.origin = [95.0, 10.0, 0.0]: expected [latitude -90..90" in capsys.readouterr().err


def test_export_csv_and_kml(repo_root, tmp_path):
    out = tmp_path / "run"
    args = ["run", str(repo_root / "configs/drop_test.toml"), "--out", str(out), "--quiet"]
    assert main([*args, "--set", "geo.origin=[37.5254, 15.0727, 30.0]"]) == 0
    assert (
        main(
            ["export", str(out), "--csv", str(tmp_path / "t.csv"), "--kml", str(tmp_path / "t.kml")]
        )
        == 0
    )
    with open(tmp_path / "t.csv") as f:
        rows = list(csv.DictReader(f))
    first = rows[0]
    assert first["time_s"] == "0.0" and first["agent_id"] == "1"
    # Box 1 starts at ENU (0, 0, 10): 10 m above the origin's altitude.
    assert float(first["lat_deg"]) == pytest.approx(37.5254, abs=1e-9)
    assert float(first["alt_m"]) == pytest.approx(40.0, abs=1e-3)
    kml = ET.parse(tmp_path / "t.kml").getroot()
    ns = {"k": "http://www.opengis.net/kml/2.2"}
    tracks = kml.findall(".//k:LineString/k:coordinates", ns)
    assert len(tracks) == 9
    lon, lat, alt = map(float, tracks[0].text.split()[0].split(","))
    assert (lat, lon, alt) == pytest.approx((37.5254, 15.0727, 40.0), abs=1e-6)


def test_kml_needs_an_origin(repo_root, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["run", str(repo_root / "configs/drop_test.toml"), "--out", str(out), "--quiet"]) == 0
    )
    assert main(["export", str(out), "--kml", str(tmp_path / "t.kml")]) == 2
    assert "geo.origin = []: expected a geographic origin" in capsys.readouterr().err
