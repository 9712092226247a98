"""KML export of a flight-plan run: the flown track and the geometry of every planned leg."""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from test_flight_plan_flying import fly, legs_plan

from skyswarm.app.export import cmd_export
from skyswarm.core.geo import enu_to_wgs84

KML = "{http://www.opengis.net/kml/2.2}"
ORIGIN = (41.2757, 1.9876, 5.0)


def test_kml_has_the_track_and_each_planned_leg_on_the_earth(tmp_path: Path) -> None:
    plan = legs_plan(
        '{kind = "TF", id = "a", to = [20.0, 0.0]},\n{kind = "TF", id = "b", to = [20.0, 15.0]},'
    )
    f = fly(tmp_path, plan, 14.0, extra=f"[geo]\norigin = {list(ORIGIN)}")
    legs = json.loads((f.dir / "flight_plan.json").read_text())["1"]
    assert [leg["id"] for leg in legs] == ["a", "b"]  # the takeoff has no path geometry
    out = tmp_path / "run.kml"
    assert cmd_export(argparse.Namespace(results=f.dir, csv=None, kml=out, overwrite=False)) == 0
    doc = ET.parse(out).getroot()
    marks = {
        p.find(f"{KML}name").text: p.find(f".//{KML}coordinates").text
        for p in doc.iter(f"{KML}Placemark")
    }
    assert {"agent 1", "plan agent 1: TF a", "plan agent 1: TF b"} <= set(marks)
    lon, lat, alt = map(float, marks["plan agent 1: TF b"].split()[-1].split(","))
    ((lat_b, lon_b, alt_b),) = enu_to_wgs84(np.array([[20.0, 15.0, 5.0]]), ORIGIN)
    assert abs(lat - lat_b) < 1e-7 and abs(lon - lon_b) < 1e-7 and abs(alt - alt_b) < 0.01
    track = [tuple(map(float, c.split(","))) for c in marks["agent 1"].split()]
    assert len(track) == len(f.track()[0])  # one coordinate per recorded sample


def test_geographic_fixes_are_placed_in_the_local_frame(tmp_path: Path) -> None:
    from skyswarm.core.config import load_scenario
    from skyswarm.missions.flight_plan.loader import load_plans

    geo = enu_to_wgs84(np.array([[20.0, 10.0, 12.0], [0.0, 30.0, 0.0]]), ORIGIN)
    (lat, lon, alt), (clat, clon, _) = geo.tolist()
    plan = legs_plan(
        f'{{kind = "TF", id = "g", to = [{lat!r}, {lon!r}, {alt!r}]}},\n'
        f'{{kind = "RF", id = "r", to = [{lat!r}, {lon!r}], center = [{clat!r}, {clon!r}]}},',
        head="geo = true\nspeed_m_s = 5.0\naltitude_m = 5.0\n",
    )
    (tmp_path / "plan.toml").write_text(plan)
    text = (
        '[mission]\ntype = "missions.flight_plan"\n[agents]\ncount = 2\n'
        f'[geo]\norigin = {list(ORIGIN)}\n[flight_plan]\nplan = "plan.toml"\n'
    )
    (tmp_path / "s.toml").write_text(text)
    plans = load_plans(load_scenario(tmp_path / "s.toml"), 2)
    assert len(plans) == 2 and plans[0][0] is plans[1][0]  # one plan for every agent
    legs = plans[0][0].stages[1].legs
    assert np.allclose(legs[0].to, (20.0, 10.0, 12.0), atol=1e-6)  # with altitude: z too
    assert np.allclose(legs[1].to, (20.0, 10.0), atol=1e-6)
    assert np.allclose(legs[1].center, (0.0, 30.0), atol=1e-6)


def test_replay_timeline_holds_the_plan_overlay(tmp_path: Path) -> None:
    """The replay draws what the live view drew: the timeline's overlay samples (at each
    trajectory tick where they changed) hold each UAV's planned path, here TF a from the
    takeoff point via (20, 0) to (20, 15)."""
    from skyswarm.core.timeline import read_timeline

    plan = legs_plan(
        '{kind = "TF", id = "a", to = [20.0, 0.0]},\n{kind = "TF", id = "b", to = [20.0, 15.0]},'
    )
    f = fly(tmp_path, plan, 6.0)
    samples = read_timeline(f.dir)
    assert len(samples) >= 3  # the start, then takeoff and the legs change the HUD
    later = [s for s in samples if s["overlays"]]
    (ov,) = later[-1]["overlays"]  # one UAV, one path
    assert ov["kind"] == "segments" and ov["data"].shape[1:] == (2, 3)
    pts = ov["data"].reshape(-1, 3)
    assert np.min(np.hypot(pts[:, 0] - 20.0, pts[:, 1] - 15.0)) < 1e-3  # reaches b's fix
    assert np.allclose(ov["color"], (0.2, 0.9, 1.0, 0.9), atol=1e-6)  # not an emergency
