"""Headings and the geographic origin: conventions, exact round trips, known distances, the flat
world (altitude = origin altitude + z at any distance), export."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pymap3d
import pytest

from skyswarm.app.cli import main
from skyswarm.app.export import write_csv, write_kml
from skyswarm.core.geo import enu_to_wgs84, heading_to_yaw, wgs84_to_enu, yaw_to_heading
from skyswarm.core.recorder import TRAJECTORY_DTYPE

CATANIA = (37.5254, 15.0727, 30.0)
ZURICH = (47.397742, 8.545594, 488.0)  # PX4 SITL's home
# The edges: at the antimeridian (Taveuni, Fiji: 179.99 E), 1.1 km from the north pole, on it.
ORIGINS = [CATANIA, ZURICH, (-16.8, 179.99, 5.0), (89.99, 30.0, 100.0), (90.0, 0.0, 0.0)]


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


def _points(n: int, seed: int) -> np.ndarray:
    """(n, 3) ENU m: the origin, 10 km and 20 km on each axis, then uniform in a 20 km disc at
    heights -100..5000 m."""
    rng = np.random.default_rng(seed)
    edges = [[0.0, 0.0, 0.0], [10_000.0, 0.0, 10.0], [0.0, -10_000.0, 10.0]]
    edges += [[20_000.0, 0.0, 5000.0], [0.0, 20_000.0, -100.0], [-14_142.1, -14_142.1, 0.0]]
    r, a = 20_000.0 * np.sqrt(rng.random(n)), rng.uniform(0.0, 2 * np.pi, n)
    disc = np.column_stack([r * np.cos(a), r * np.sin(a), rng.uniform(-100.0, 5000.0, n)])
    return np.vstack([edges, disc])


@pytest.mark.parametrize("origin", ORIGINS)
def test_the_world_is_flat_altitude_is_origin_altitude_plus_z_at_any_distance(origin):
    # Before: pymap3d's enu2geodetic(e, n, z), a point of the tangent plane: z = 10 m at 10 km
    # read 7.85 m higher (d^2 / 2R, R = 6,371 km), and 31 m higher at 20 km.
    enu = _points(2000, seed=1)
    geo = enu_to_wgs84(enu, origin)
    assert np.array_equal(geo[:, 2], origin[2] + enu[:, 2])  # exactly, 0 m to 20 km
    assert geo[1, 2] == origin[2] + 10.0 and geo[2, 2] == origin[2] + 10.0
    # horizontally the tangent plane's point (e, n, 0), as before
    lat, lon, _ = pymap3d.enu2geodetic(enu[:, 0], enu[:, 1], 0.0 * enu[:, 0], *origin)
    assert np.allclose(geo[:, 0], lat, rtol=0, atol=1e-12)
    assert np.allclose(geo[:, 1], lon, rtol=0, atol=1e-12)
    assert np.all(np.abs(geo[:, 0]) <= 90.0) and np.all(np.abs(geo[:, 1]) <= 180.0)


@pytest.mark.parametrize("origin", ORIGINS)
def test_enu_wgs84_enu_round_trip_within_a_micrometre_to_20_km(origin):
    # -100..5000 m high: before, the altitude and the horizontal position were both of the
    # tangent plane's 3-D point; now the inverse must undo the flat mapping instead.
    enu = _points(5000, seed=2)
    back = wgs84_to_enu(enu_to_wgs84(enu, origin), origin)
    assert np.abs(back - enu).max() < 1e-6
    assert np.abs(back[0]).max() < 1e-9  # the origin itself


def test_across_the_antimeridian_and_over_the_pole():
    # 2 km east of 179.99 E at 16.8 S: 1.07 km of longitude is 0.01 deg, so past 180 by ~0.0088
    fiji = ORIGINS[2]
    ((lat, lon, alt),) = enu_to_wgs84(np.array([[2000.0, 0.0, 10.0]]), fiji)
    assert -179.992 < lon < -179.990 and lat == pytest.approx(-16.8, abs=1e-3)
    assert alt == 15.0
    # 2 km north of 89.99 N on meridian 30 E: the pole is 0.01 deg x 111.69 km/deg = 1.117 km
    # on (the meridian's radius there, a^2 / b, is 6,399.6 km); over it, down meridian 150 W
    # by 0.883 km = 0.0079 deg, to 89.9921 N
    north = ORIGINS[3]
    ((lat, lon, alt),) = enu_to_wgs84(np.array([[0.0, 2000.0, 10.0]]), north)
    assert lon == pytest.approx(-150.0, abs=1e-6) and lat == pytest.approx(89.9921, abs=2e-5)
    assert alt == 110.0
    for origin, p in ((fiji, [2000.0, 0.0, 10.0]), (north, [0.0, 2000.0, 10.0])):
        back = wgs84_to_enu(enu_to_wgs84(np.array([p]), origin), origin)[0]
        assert np.abs(back - p).max() < 1e-6


def test_a_place_90_degrees_or_more_from_the_origin_is_off_the_world():
    # The tangent plane maps onto less than a hemisphere: the far side has no world point.
    # Zurich's mirror across the equator (normals 94.8 deg apart), its antipode; the equator
    # below it (47.4 deg) is still on the plane, 6,000-odd km out.
    lat0, lon0 = ZURICH[:2]
    far = np.array([[-lat0, lon0, 0.0], [-lat0, lon0 - 180.0, 0.0], [0.0, lon0, 0.0]])
    enu = wgs84_to_enu(far, ZURICH)
    assert np.isnan(enu[:2, :2]).all() and np.isfinite(enu[2]).all()
    assert enu[:, 2] == pytest.approx([-488.0] * 3)


def _track(points: np.ndarray) -> np.ndarray:
    traj = np.zeros(len(points), dtype=TRAJECTORY_DTYPE)
    traj["tick"], traj["agent_id"], traj["position"] = np.arange(len(points)), 1, points
    return traj


def test_export_altitudes_are_origin_altitude_plus_z_10_km_out(tmp_path):
    # An agent at 10 m over flat ground 10 km east, then 10 km north: CSV and KML say
    # 488 + 10 m (before: 505.85, the tangent plane 7.85 m above the ground there).
    pts = np.array([[0.0, 0.0, 10.0], [10_000.0, 0.0, 10.0], [0.0, 10_000.0, 10.0]])
    write_csv(tmp_path / "t.csv", _track(pts), 0.1, ZURICH)
    with open(tmp_path / "t.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["alt_m"] for r in rows] == ["498.000"] * 3
    geo = np.array([[float(r["lat_deg"]), float(r["lon_deg"]), float(r["alt_m"])] for r in rows])
    assert np.abs(wgs84_to_enu(geo, ZURICH) - pts).max() < 1e-3  # 9 decimals of a degree
    write_kml(tmp_path / "t.kml", _track(pts), [], ZURICH, "far")
    coords = ET.parse(tmp_path / "t.kml").getroot().find(".//{*}coordinates").text.split()
    assert [c.split(",")[2] for c in coords] == ["498.00"] * 3


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
