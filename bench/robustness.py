"""The robustness matrix of issue 29: the reference flocking-coverage scenario varied over radio
range, radio loss, swarm size, seeds and sensors, plus a base station out of reach and two
leaders killed, run as batch sweeps (app/batch.py) with the shipped defaults.

    python bench/robustness.py                      # the hardest rows and the extras, 1 seed
    python bench/robustness.py --rows matrix --workers 2   # the whole matrix: hours
    python bench/robustness.py --rows matrix --ranges 20 25 --uavs 10 --sensors ideal
    python bench/robustness.py --rows matrix --uavs 30 --replicates 1 2   # two more seeds
    python bench/robustness.py --from-json a/robustness.json b/robustness.json --doc

`--doc` writes the table, with the command, into docs/safety.md (between its markers);
`--from-json` joins the tables of earlier runs (e.g. a matrix and the extras) without running
(a point found again in a later file is merged with the earlier row when their replicates
differ, more seeds of it, and replaces it when they share one, flown again; a folder stands
for its *.json files in name order);
`--from-sweep` reads the sweep folders of `--out` (what has finished of a matrix stopped early).

It writes a sweep file per base scenario into `--out` (sweep.csv, aggregate.csv, runs/), then
`robustness.json` there and in bench/results/ (one row per point: the aggregate over its
seeds) and prints the table docs/safety.md shows: UAV-UAV collisions (sum over seeds), the
least separation between two live UAVs (min), the true coverage and what the base station
knows (min over seeds), and the time to 99 % (max over seeds; "-" when not reached). The CI
subset (shortened to 60 s) is tests/missions/test_robustness.py.

Swarm sizes beyond 10 sweep a larger area (side x sqrt(n / 10)), so that each size has several
lanes to fly; the time limit grows with the area.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from skyswarm.core.resources import shipped

RANGES_M = (15.0, 20.0, 25.0, 40.0, 100.0)
LOSSES = (0.0, 0.2, 0.4)
UAVS = (4, 10, 30, 50)
SENSORS = ("ideal", "qrsim")
# the hardest rows (issue 29's failures and the matrix's corners), for CI: short radio, lossy,
# many UAVs, estimate-based control
HARDEST: tuple[dict[str, Any], ...] = (
    {"range_m": 20.0, "loss": 0.2, "uavs": 10, "sensors": "ideal"},
    {"range_m": 25.0, "loss": 0.0, "uavs": 10, "sensors": "qrsim"},
    {"range_m": 15.0, "loss": 0.4, "uavs": 10, "sensors": "ideal"},
)
AREA = (80.0, 100.0)  # m, the reference's area (width across the lanes, length)


def scenario_params(
    range_m: float, loss: float, uavs: int, sensors: str, duration_s: float | None = None
) -> dict[str, Any]:
    """The sweep parameters (scenario key path -> value) of one matrix point."""
    scale = _scale(uavs)
    return {
        "comms.channels.radio.range_m": range_m,
        "comms.channels.radio.loss": loss,
        "agents.count": uavs,
        "uav.sensors.preset": sensors,
        "simulation.duration_s": duration_s or round(400.0 * scale * scale),
    }


def _scale(uavs: int) -> float:
    return max(1.0, math.sqrt(uavs / 10.0))


def base_scenario(out: Path, case: str, uavs: int) -> Path:
    """The reference scenario (configs/flocking_coverage.toml) with the area grown for `uavs`
    and the `case`'s change ("base far": station at (-70, -70) and a 60 m long-range link;
    "two leaders": the leader killed at 30 s and again at 60 s; "area far": a 40 m x 50 m area
    at (300, 300) and a 100 m long-range link; "turned": the area at (40, 60), lanes at
    compass 135), written into `out`."""
    import tomli_w

    from skyswarm.core.config import read_toml

    data = read_toml(shipped()["flocking_coverage"])
    scale = _scale(uavs)
    if scale > 1.0:
        w, length = AREA[0] * scale, AREA[1] * scale
        data["areas"] = [
            {
                "id": 1,
                "center": [w / 2 + 10, length / 2 + 10],
                "size": [w, length],
                "heading_deg": 60,
            }
        ]
    if case == "base far":
        data["comms"]["base_stations"] = [{"id": 0, "position": [-70.0, -70.0, 2.0]}]
        data["comms"]["channels"]["long_range"]["range_m"] = 60.0
    elif case == "two leaders":
        data["events"] = [{"at_s": t, "action": "kill", "target": "leader"} for t in (30.0, 60.0)]
    elif case == "area far":  # the mule's flight home starts 400-460 m from the base station
        data["areas"] = [
            {"id": 1, "center": [300.0, 300.0], "size": [40.0, 50.0], "heading_deg": 60}
        ]
        data["comms"]["channels"]["long_range"]["range_m"] = 100.0
    elif case == "turned":  # lanes at compass 135, the area elsewhere
        data["areas"] = [
            {"id": 1, "center": [40.0, 60.0], "size": [80.0, 100.0], "heading_deg": 135}
        ]
    path = out / "scenarios" / f"{case.replace(' ', '_') or 'reference'}-x{scale:.2f}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(data))
    return path


def matrix(
    ranges: Iterable[float], losses: Iterable[float], uavs: Iterable[int], sensors: Iterable[str]
) -> list[dict[str, Any]]:
    """Every combination, as (name, params) points."""
    return [
        {"range_m": r, "loss": lo, "uavs": n, "sensors": s}
        for s in sensors
        for n in uavs
        for r in ranges
        for lo in losses
    ]


def extras() -> list[dict[str, Any]]:
    """The special rows: the base station beyond the long-range link; two leaders killed; an
    area 300 m out with the base station at home (the mule's long flight back); the lanes
    turned to compass 135 with a 35 m lossy radio (a geometry the matrix does not fly)."""
    return [
        {"range_m": 100.0, "loss": 0.01, "uavs": 10, "sensors": "ideal", "case": "base far"},
        {"range_m": 100.0, "loss": 0.01, "uavs": 10, "sensors": "ideal", "case": "two leaders"},
        {"range_m": 100.0, "loss": 0.01, "uavs": 10, "sensors": "ideal", "case": "area far"},
        {"range_m": 35.0, "loss": 0.2, "uavs": 10, "sensors": "ideal", "case": "turned"},
    ]


def _point_toml(row: dict[str, Any], duration_s: float | None) -> str:
    params = scenario_params(row["range_m"], row["loss"], row["uavs"], row["sensors"], duration_s)
    return "\n".join(["[[points]]", *(f'"{k}" = {json.dumps(v)}' for k, v in params.items())])


def write_sweep(
    rows: Sequence[dict[str, Any]],
    seeds: int | Sequence[int],
    out: Path,
    scenario: Path,
    duration_s: float | None = None,
) -> Path:
    """The sweep file of `rows` x `seeds` (seed 29 at the root) over `scenario`, in `out`;
    `seeds` a count (replicates 0 .. seeds - 1) or the replicate numbers."""
    out.mkdir(parents=True, exist_ok=True)
    head = [
        "[sweep]",
        f"scenario = {json.dumps(str(scenario.resolve()))}",
        "seed = 29",
        f"seeds = {json.dumps(seeds if isinstance(seeds, int) else [int(k) for k in seeds])}",
        "retries = 0",
        f"out = {json.dumps(str(out.resolve()))}",
        "",
        "[fixed]",
        '"results.trajectory_hz" = 1.0',
        '"results.timeseries_hz" = 1.0',
        '"uav.sensors.record_hz" = 0.0',
        "",
    ]
    body = [_point_toml(r, duration_s) for r in rows]
    path = out / "robustness.toml"
    path.write_text("\n".join(head) + "\n" + "\n\n".join(body) + "\n")
    return path


def groups(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, float], list[int]]:
    """Row indices by base scenario (case, area scale): one sweep each."""
    out: dict[tuple[str, float], list[int]] = {}
    for k, r in enumerate(rows):
        out.setdefault((r.get("case", ""), _scale(r["uavs"])), []).append(k)
    return out


def run(
    rows: Sequence[dict[str, Any]], seeds: int | Sequence[int], out: Path, workers: int, **kw
) -> list[dict]:
    """Run the matrix with the batch coordinator (one sweep per base scenario, each in its own
    folder of `out`); one aggregate row per point, in the order of `rows`."""
    from skyswarm.app.batch import run_batch
    from skyswarm.app.batch_executors import LocalPool
    from skyswarm.app.sweep import load_sweep

    table: list[dict[str, Any]] = [{} for _ in rows]
    pool = LocalPool(workers)
    try:
        for (case, scale), idx in groups(rows).items():
            part = [rows[k] for k in idx]
            folder = out / f"{case.replace(' ', '_') or 'matrix'}-x{scale:.2f}"
            scenario = base_scenario(folder, case, part[0]["uavs"])
            sweep = load_sweep(write_sweep(part, seeds, folder, scenario, kw.get("duration_s")))
            result = run_batch(sweep, folder, pool, quiet=kw.get("quiet", False), plots=False)
            for k, row in zip(idx, summarise(part, result.rows)):
                table[k] = row
    finally:
        pool.close()
    (out / "robustness.json").write_text(json.dumps(table, indent=1))
    return table


def summarise(rows: Sequence[dict[str, Any]], runs: Sequence[dict[str, Any]]) -> list[dict]:
    """Per point (the order of `rows`): collisions summed, separation and coverage at their
    least, the time to 99 % at its largest over the seeds."""
    out = []
    for k, row in enumerate(rows):
        mine = [r for r in runs if r.get("point") == k]
        ok = [r for r in mine if r.get("status") == "ok"]
        seps = [
            float(r[key])
            for r in ok
            for key in ("metrics.avoidance.min_separation_m", "metrics.min_separation_m")
            if _number(r.get(key))
        ]
        t99 = [
            float(t) if _number(t) else None for t in (r.get("metrics.time_to_99_s") for r in ok)
        ]
        out.append(
            {
                **row,
                "runs": len(mine),
                "replicates": sorted(
                    int(r["replicate"]) for r in mine if _number(r.get("replicate"))
                ),
                "failed": len(mine) - len(ok),
                "collisions": sum(int(r.get("deaths_by_cause.collision") or 0) for r in ok),
                "min_separation_m": min(seps) if seps else None,
                "coverage": min((float(r["metrics.true_coverage"]) for r in ok), default=None),
                "base_knows": min((float(r["metrics.coverage"]) for r in ok), default=None),
                "time_to_99_s": max(t99) if t99 and None not in t99 else None,
                "outcomes": sorted({str(r.get("outcome")) for r in ok}),
            }
        )
    return out


def _check_rows(table: Any) -> None:
    """Raise ValueError unless `table` is a list of rows with a point's keys."""
    if not isinstance(table, list):
        raise ValueError(f"a list of rows expected, not {type(table).__name__}")
    for k, row in enumerate(table):
        missing = [key for key in ("range_m", "loss", "uavs", "sensors") if key not in row]
        if missing:
            raise ValueError(f"row {k} has no {', '.join(missing)}")


def join(tables: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The rows of `tables` as one table. A point (case, radio, loss, UAVs, sensors) found
    again in a later table is merged with the earlier row when their replicates are disjoint
    (more seeds of it: collisions and runs summed, the least separation, coverage and base
    knowledge, the largest time to 99 %), and replaces it when they share one (flown again).
    A row without `replicates` (tables written before they were kept) holds 0 .. runs - 1.
    The matrix's points in `matrix`'s order (sensors, UAVs, radio, loss), then the special
    cases in the order first seen."""
    rows: dict[tuple, dict[str, Any]] = {}
    for table in tables:
        for row in table:
            key = (row.get("case", ""), row["range_m"], row["loss"], row["uavs"], row["sensors"])
            before = rows.pop(key, None)
            if before is not None and not set(_replicates(before)) & set(_replicates(row)):
                row = _merged(before, row)
            rows[key] = row
    first = {k: i for i, k in enumerate(rows)}

    def order(key: tuple) -> tuple:
        case, range_m, loss, uavs, sensors = key
        if case:
            return (1, first[key])
        rank = SENSORS.index(sensors) if sensors in SENSORS else len(SENSORS)
        return (0, rank, uavs, range_m, loss)

    return [rows[k] for k in sorted(rows, key=order)]


def _replicates(row: dict[str, Any]) -> list[int]:
    return list(row.get("replicates", range(int(row.get("runs", 1)))))


def _merged(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two rows of disjoint runs as one (as `summarise` aggregates a point's runs): a point's
    rows of other replicates, or the cells of a plane."""

    def least(key: str) -> float | None:
        values = [r[key] for r in (a, b)]
        return None if None in values else min(values)

    t99 = [a["time_to_99_s"], b["time_to_99_s"]]
    return {
        **a,
        "runs": a["runs"] + b["runs"],
        "replicates": sorted(_replicates(a) + _replicates(b)),
        "failed": a["failed"] + b["failed"],
        "collisions": a["collisions"] + b["collisions"],
        "min_separation_m": least("min_separation_m"),
        "coverage": least("coverage"),
        "base_knows": least("base_knows"),
        "time_to_99_s": None if None in t99 else max(t99),
        "outcomes": sorted(set(a["outcomes"]) | set(b["outcomes"])),
    }


def _number(value: Any) -> bool:
    try:
        return value is not None and value != "" and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def table_text(table: Sequence[dict[str, Any]]) -> str:
    """The aggregate as a Markdown table."""
    head = (
        "| case | radio m | loss | UAVs | sensors | runs | collisions | min sep m | coverage "
        "| base knows | t99 s | outcomes |"
    )
    lines = [head, "|" + "---|" * 12]
    for r in table:

        def f(v: Any, fmt: str) -> str:
            return "-" if v is None else format(v, fmt)

        lines.append(
            f"| {r.get('case', '')} | {r['range_m']:g} | {r['loss']:.0%} | {r['uavs']} | "
            f"{r['sensors']} | {r['runs'] - r['failed']}/{r['runs']} | {r['collisions']} | "
            f"{f(r['min_separation_m'], '.2f')} | {f(r['coverage'], '.1%')} | "
            f"{f(r['base_knows'], '.1%')} | {f(r['time_to_99_s'], '.1f')} | "
            f"{', '.join(r['outcomes'])} |"
        )
    return "\n".join(lines)


def planes_text(table: Sequence[dict[str, Any]]) -> str:
    """The aggregate by plane (swarm size x sensors; each special case its own row): cells,
    runs, collisions summed, the least separation, coverage and base knowledge, the largest
    time to 99 %, and the cells that missed the bar (1.0 m, 99 %, 99 %)."""
    planes: dict[tuple, list[dict[str, Any]]] = {}
    for r in table:
        planes.setdefault((r.get("case", ""), r["uavs"], r["sensors"]), []).append(r)
    lines = [
        "| plane | UAVs | sensors | radio m | cells | runs | collisions | min sep m "
        "| least coverage | least base knows | largest t99 s | cells missing the bar |",
        "|" + "---|" * 12,
    ]

    for (case, uavs, sensors), rows in planes.items():
        whole = functools.reduce(_merged, rows)  # the plane's cells as one point
        seps, t99 = whole["min_separation_m"], whole["time_to_99_s"]
        radios = ", ".join(f"{v:g}" for v in sorted({r["range_m"] for r in rows}))
        lines.append(
            f"| {case or 'matrix'} | {uavs} | {sensors} | {radios} | {len(rows)} | "
            f"{whole['runs'] - whole['failed']}/{whole['runs']} | {whole['collisions']} | "
            f"{'-' if seps is None else format(seps, '.2f')} | "
            f"{_floor_pct(whole['coverage'])} | {_floor_pct(whole['base_knows'])} | "
            f"{'-' if t99 is None else format(t99, '.1f')} | {sum(map(_misses, rows))} |"
        )
    return "\n".join(lines)


def _floor_pct(value: float | None) -> str:
    """A fraction as a percentage rounded down to 0.1 (98.96 % is not shown as 99.0 %)."""
    return "-" if value is None else f"{math.floor(value * 1000.0) / 10.0:.1f}%"


def _misses(row: dict[str, Any]) -> bool:
    """True when a point misses issue 29's bar: a collision, a pass under 1.0 m, coverage or
    the base station's knowledge under 99 %, a failed run, or no number to tell."""
    values = (row["min_separation_m"], row["coverage"], row["base_knows"])
    if row["failed"] or row["collisions"] or None in values:
        return True
    return values[0] < 1.0 or values[1] < 0.99 or values[2] < 0.99


DOC = Path(__file__).resolve().parents[1] / "docs" / "safety.md"
BEGIN, END = "<!-- robustness table: begin -->", "<!-- robustness table: end -->"


def write_doc(table: Sequence[dict[str, Any]], command: str, doc: Path = DOC) -> None:
    """Replace the table between BEGIN and END in `doc` (docs/safety.md) with `table` and the
    `command` that produced it."""
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = (
        f"Produced by `{command}`.\n\nBy plane:\n\n{planes_text(table)}\n\n"
        f"By cell:\n\n{table_text(table)}\n"
    )
    doc.write_text(f"{head}{BEGIN}\n{body}{END}{tail}", encoding="utf-8")


def from_sweep(folder: Path) -> list[dict[str, Any]]:
    """The table of one sweep folder written by `run` (its sweep.csv, so far: runs still
    under way or never started are left out), e.g. of a matrix stopped before its end."""
    import csv

    with (folder / "sweep.csv").open(newline="") as f:
        runs = list(csv.DictReader(f))
    case = folder.name.split("-x")[0].replace("_", " ")
    points: dict[int, dict[str, Any]] = {}
    for r in runs:
        r["point"] = int(r["point"])
        points.setdefault(
            r["point"],
            {
                "range_m": float(r["comms.channels.radio.range_m"]),
                "loss": float(r["comms.channels.radio.loss"]),
                "uavs": int(r["agents.count"]),
                "sensors": r["uav.sensors.preset"],
                **({"case": case} if case != "matrix" else {}),
            },
        )
    order = sorted(points)
    return summarise(
        [points[k] for k in order], [{**r, "point": order.index(r["point"])} for r in runs]
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("results/robustness"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="replicates 0 .. SEEDS - 1 of each point")
    ap.add_argument(
        "--replicates",
        type=int,
        nargs="+",
        help="these replicate numbers instead (e.g. 1 2: two more seeds of a plane flown on 0)",
    )
    ap.add_argument("--rows", choices=("matrix", "hardest", "extras"), default="hardest")
    ap.add_argument("--ranges", type=float, nargs="+", default=RANGES_M)
    ap.add_argument("--losses", type=float, nargs="+", default=LOSSES)
    ap.add_argument("--uavs", type=int, nargs="+", default=UAVS)
    ap.add_argument("--sensors", nargs="+", default=SENSORS, choices=SENSORS)
    ap.add_argument("--no-extras", action="store_true", help="leave out base far / two leaders")
    ap.add_argument("--duration", type=float, default=None, help="time limit of every run, s")
    ap.add_argument("--doc", action="store_true", help="write the table into docs/safety.md")
    ap.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        help="tables of earlier runs (files, or folders read in name order), joined: run nothing",
    )
    ap.add_argument(
        "--from-sweep", type=Path, nargs="+", help="sweep folders of earlier runs: run nothing"
    )
    args = ap.parse_args(argv)
    if args.from_json or args.from_sweep:
        for f in [*(args.from_json or ()), *(args.from_sweep or ())]:
            if not f.exists():
                print(
                    f"robustness: {f}: no such file or folder (a results path expected)",
                    file=sys.stderr,
                )
                return 2
        files = [
            g
            for f in args.from_json or ()
            for g in (sorted(f.glob("*.json")) if f.is_dir() else [f])
        ]
        tables = []
        for f in files:
            try:
                tables.append(json.loads(f.read_text(encoding="utf-8")))
                _check_rows(tables[-1])
            except (ValueError, KeyError, TypeError) as err:
                print(f"robustness: {f}: {err} (a robustness.json table expected)", file=sys.stderr)
                return 2
        table = join(tables + [from_sweep(d) for d in args.from_sweep or ()])
        if args.doc:
            write_doc(table, "python bench/robustness.py " + " ".join(argv or sys.argv[1:]))
        print(planes_text(table), table_text(table), sep="\n\n")
        return 0
    if args.rows == "hardest":
        rows = list(HARDEST) + extras()
    elif args.rows == "extras":
        rows = extras()
    else:
        rows = matrix(args.ranges, args.losses, args.uavs, args.sensors)
        rows += [] if args.no_extras else extras()
    seeds = args.replicates if args.replicates else args.seeds
    table = run(rows, seeds, args.out, args.workers, duration_s=args.duration)
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "robustness.json").write_text(json.dumps(table, indent=1))
    if args.doc:
        write_doc(table, "python bench/robustness.py " + " ".join(argv or sys.argv[1:]))
    print(planes_text(table), table_text(table), sep="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
