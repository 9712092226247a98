"""`skyswarm export RESULTDIR`: a run's tracks as CSV (ENU, plus WGS84 when the scenario has a
geographic origin) or as KML for Google Earth (one track per agent, death sites as points, and
for a flight-plan run the legs each UAV was given).

An export is never written onto a file of a run directory, nor onto an existing file without
`--overwrite`; it is written to a temporary file and renamed (app/results_dir.py)."""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import numpy as np

from skyswarm.app.results_dir import atomic_path, check_export_target
from skyswarm.core.geo import enu_to_wgs84
from skyswarm.core.limits import loads_json
from skyswarm.core.recorder import read_header, read_trajectory
from skyswarm.core.schema import ConfigError


def add_export_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="export a run's tracks as CSV or KML (Google Earth)")
    p.add_argument("results", type=Path, help="results directory of a run")
    p.add_argument("--csv", type=Path, metavar="OUT.csv", help="one row per agent and sample")
    p.add_argument("--kml", type=Path, metavar="OUT.kml", help="tracks and deaths (needs geo)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing export file")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    if args.csv is None and args.kml is None:
        raise ConfigError("", "export", None, "--csv OUT.csv and/or --kml OUT.kml")
    read_header(args.results)  # not a run directory: say that, not where the export may go
    _check_targets(args)
    header, traj = _load(args.results)
    origin = tuple(header.get("geo_origin") or ())
    if args.csv is not None:
        write_csv(args.csv, traj, header["tick_s"], origin)
        print(f"wrote {args.csv}")
    if args.kml is not None:
        if not origin:
            raise ConfigError(
                str(args.results / "config.toml"),
                "geo.origin",
                [],
                "a geographic origin [lat, lon, alt] to place the run on the Earth",
            )
        plans = _flight_plans(args.results)
        write_kml(args.kml, traj, _deaths(args.results), origin, args.results.name, plans)
        print(f"wrote {args.kml}")
    return 0


def _check_targets(args: argparse.Namespace) -> None:
    """Before anything is read or written: never a file of a run directory, never an existing
    file without --overwrite, never the same file for both exports."""
    for flag, target in (("--csv", args.csv), ("--kml", args.kml)):
        if target is not None:
            check_export_target(target, args.results, args.overwrite, flag)
    if args.csv is not None and args.kml is not None:
        if os.path.realpath(args.csv) == os.path.realpath(args.kml):
            raise ConfigError("", "--kml", str(args.kml), "a file other than --csv's")


def _load(results: Path) -> tuple[dict, np.ndarray]:
    """Header and complete records; a run with none is a one-line error (no file written)."""
    header = read_header(results)
    traj = read_trajectory(results)
    if len(traj) == 0:
        raise ConfigError(
            str(results), "(results)", str(results), "a run with at least one trajectory record"
        )
    return header, traj


def write_csv(out: Path, traj: np.ndarray, tick_s: float, origin: tuple[float, ...]) -> None:
    """time_s, agent_id, x, y, z (m, ENU) and, with an origin, lat, lon (deg), alt (m)."""
    cols = ["time_s", "agent_id", "x_m", "y_m", "z_m"] + (
        ["lat_deg", "lon_deg", "alt_m"] if origin else []
    )
    geo = enu_to_wgs84(traj["position"], origin) if origin else None
    with atomic_path(out) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i, rec in enumerate(traj):
            row = [repr(float(rec["tick"] * tick_s)), int(rec["agent_id"])]
            row += [repr(float(v)) for v in rec["position"]]
            if geo is not None:
                row += [f"{geo[i, 0]:.9f}", f"{geo[i, 1]:.9f}", f"{geo[i, 2]:.3f}"]
            w.writerow(row)


def _deaths(results: Path) -> list[dict[str, str]]:
    path = results / "events.csv"
    if not path.is_file():
        return []
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            try:  # a torn last line (run cut short) is skipped
                float(row["x"]), float(row["y"]), float(row["z"]), float(row["time_s"])
            except (TypeError, ValueError, KeyError):
                continue
            if row.get("kind") == "death":
                out.append(row)
    return out


def _flight_plans(results: Path) -> dict[str, list[dict]]:
    """The legs a flight_plan run flew (missions/flight_plan writes them), {} for other runs."""
    from skyswarm.missions.flight_plan.mission import PLAN_FILE

    path = results / PLAN_FILE
    if not path.is_file():
        return {}
    try:
        data = loads_json(path.read_text(encoding="utf-8"), str(path))
    except ConfigError:  # nested too deep: already one line naming the file
        raise
    except (OSError, ValueError) as exc:
        raise ConfigError(str(path), "(file)", path.name, f"readable JSON ({exc})") from None
    return data if isinstance(data, dict) else {}


def write_kml(
    out: Path,
    traj: np.ndarray,
    deaths: list[dict[str, str]],
    origin: tuple[float, ...],
    name: str,
    plans: dict[str, list[dict]] | None = None,
) -> None:
    """KML 2.2: a LineString per agent (absolute altitude), a Placemark per death and, for a
    flight-plan run, a LineString per planned leg (style `plan`) (`plans`: agent id -> legs with
    `id`, `kind` and `points` (M, 3) m ENU)."""
    from xml.sax.saxutils import escape  # here: it imports urllib.request, http, ssl (~30 ms)

    parts = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<kml xmlns="http://www.opengis.net/kml/2.2"><Document>',
        f"<name>{escape(name)}</name>",
        '<Style id="plan"><LineStyle><color>ffffff00</color><width>1</width></LineStyle></Style>',
    ]
    for agent_id, legs in sorted((plans or {}).items()):
        for leg in legs:
            pts = np.asarray(leg.get("points", []), dtype=float).reshape(-1, 3)
            if len(pts) < 2:
                continue
            geo = enu_to_wgs84(pts, origin)
            coords = " ".join(f"{lon:.8f},{lat:.8f},{alt:.2f}" for lat, lon, alt in geo)
            label = f"plan agent {escape(str(agent_id))}: {escape(leg.get('kind', ''))}"
            label += f" {escape(leg['id'])}" if leg.get("id") else ""
            parts.append(
                f"<Placemark><name>{label}</name><styleUrl>#plan</styleUrl><LineString>"
                f"<altitudeMode>absolute</altitudeMode><coordinates>{coords}</coordinates>"
                "</LineString></Placemark>"
            )
    for agent_id in np.unique(traj["agent_id"]):
        track = traj[traj["agent_id"] == agent_id]
        geo = enu_to_wgs84(track["position"], origin)
        coords = " ".join(f"{lon:.8f},{lat:.8f},{alt:.2f}" for lat, lon, alt in geo)
        parts.append(
            f"<Placemark><name>agent {int(agent_id)}</name><LineString>"
            f"<altitudeMode>absolute</altitudeMode><coordinates>{coords}</coordinates>"
            "</LineString></Placemark>"
        )
    for d in deaths:
        ((lat, lon, alt),) = enu_to_wgs84(
            np.array([[float(d["x"]), float(d["y"]), float(d["z"])]]), origin
        )
        parts.append(
            f"<Placemark><name>agent {escape(d['agent_id'])} died at {float(d['time_s']):.2f} s"
            f"</name><description>{escape(d['cause'])}</description><Point>"
            f"<altitudeMode>absolute</altitudeMode><coordinates>{lon:.8f},{lat:.8f},{alt:.2f}"
            "</coordinates></Point></Placemark>"
        )
    parts.append("</Document></kml>")
    with atomic_path(out) as tmp:
        tmp.write_text("\n".join(parts), encoding="utf-8")
