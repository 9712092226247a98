"""Benchmark: trajectory recording for big swarms (issue 31) — bytes and recorder CPU per sample.

Each case is a fast-engine run of configs/hover.toml or configs/boids.toml (30 m radio, 5 m grid)
with N UAVs recorded at 20 Hz for `--seconds` (float64, uncompressed: the exact records). Its
samples are then written again by the recorder's writer (core/trajectory_codec.py) in every
mode, one sample at a time as a run writes them, into memory:
- float64, float32: plain records (96, 56 bytes);
- +zstd: codec 2 (prediction residuals, zigzag, byte shuffle, zstd level 3); lossless;
- quantised+zstd: position, velocity to 2^-10 m (m/s), quaternions to 2^-16;
- +decim: `[[results.groups]]` with 90 % of the UAVs at 5 Hz, the first 10 % at 20 Hz.
Reported per mode: bytes per record, MB per 10,000-UAV-second (10,000 UAVs x 20 samples),
the projection to the reference run (10,000 UAVs, 133 s) and the writer's CPU time per sample
(process time of `write`, ms per 1,000 UAVs). Every coded stream is decoded and compared with
what was written (bit for bit; quantised: within half a step).

    python bench/recording.py [--cases hover:1000 boids:10000:2 ...] [--seconds S]

A case is KIND:N or KIND:N:SECONDS (default `--seconds`).

Prints a table and writes bench/results/recording.json. Not a test: numbers depend on the host
(CPU) and on the flight (bytes: the first seconds are take-off).
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from skyswarm.core.config import load_scenario
from skyswarm.core.recorder import TRAJECTORY_DTYPE, read_trajectory, stored_dtype
from skyswarm.core.simulator import Simulator
from skyswarm.core.trajectory_codec import QUANTUM, BinaryTrajectory, decode, dequantise, quantise

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "recording.json"
HZ, TICK_S, EVERY = 20.0, 0.0025, 20  # the recorded rate and the scenarios' tick
SLOW_EVERY = 80  # +decim: 5 Hz
MODES = {  # name: (precision, zstd, decimated)
    "float64": ("float64", False, False),
    "float32": ("float32", False, False),
    "float64+zstd": ("float64", True, False),
    "float32+zstd": ("float32", True, False),
    "quantised+zstd": ("quantised", True, False),
    "float32+zstd+decim": ("float32", True, True),
    "quantised+zstd+decim": ("quantised", True, True),
}


class _Kept(io.BytesIO):
    def close(self) -> None:
        pass


def capture(kind: str, n: int, seconds: float, tmp: Path) -> tuple[list[np.ndarray], float]:
    """(samples of the exact records, wall s of the run) of a fast-engine run."""
    over = [f"agents.count={n}", "agents.spacing_m=5.0", 'simulation.physics="fast"']
    if kind == "boids":
        over.append("comms.channels.radio.range_m=30.0")
    sc = load_scenario(ROOT / "configs" / f"{kind}.toml", over)
    t0 = time.perf_counter()
    sim = Simulator.from_scenario(sc, results_dir=tmp / f"{kind}{n}")
    sim.run(until_s=seconds)
    sim.finish()
    wall = time.perf_counter() - t0
    rec = read_trajectory(tmp / f"{kind}{n}")
    cuts = np.flatnonzero(np.diff(rec["tick"])) + 1
    return np.split(rec, cuts), wall


def encode(samples: list[np.ndarray], mode: str) -> dict:
    """Bytes and writer CPU of one mode over `samples`, checked by decoding them again."""
    precision, zstd, decim = MODES[mode]
    stored = stored_dtype(precision)
    f = _Kept()
    out = BinaryTrajectory(
        f, stored, zstd, (EVERY * TICK_S, SLOW_EVERY * TICK_S), precision == "quantised"
    )
    written, cpu = [], 0.0
    for rec in samples:
        parts = [(0, rec)]
        if decim:
            fast = rec["agent_id"] < rec["agent_id"].min() + len(rec) // 10
            parts = [(0, rec[fast])]
            if rec["tick"][0] % SLOW_EVERY == 0:
                parts.append((1, rec[~fast]))
        for stream, part in parts:
            t0 = time.process_time()
            out.write(part, stream)
            cpu += time.process_time() - t0
            written.append(part)
    raw = f.getvalue()
    _check(raw, written, stored, precision, zstd)
    records = sum(len(w) for w in written)
    per_full = len(raw) / (len(samples) * len(samples[0]))  # bytes per UAV per 20 Hz sample
    return {
        "bytes": len(raw),
        "records": records,
        "bytes_per_record": len(raw) / records,
        "mb_per_10k_uav_s": per_full * HZ * 10_000 / 1e6,
        "projected_10k_133s_mb": per_full * HZ * 10_000 * 133 / 1e6,
        "cpu_ms_per_sample_per_1k_uav": cpu / len(samples) * 1e3 * 1000 / len(samples[0]),
    }


def _check(raw: bytes, written: list, stored: np.dtype, precision: str, zstd: bool) -> None:
    want = np.concatenate(written)
    if zstd:
        got = np.concatenate(decode(raw, stored, (EVERY * TICK_S, SLOW_EVERY * TICK_S)))
    else:
        got = np.frombuffer(raw, dtype=stored)
    if precision == "quantised":
        back = dequantise(got, TRAJECTORY_DTYPE)
        assert got.tobytes() == quantise(want, stored).tobytes()
        for name, q in QUANTUM.items():
            assert np.abs(back[name] - want[name]).max() <= q / 2
    else:
        assert got.tobytes() == want.astype(stored).tobytes()  # lossless: bit for bit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["hover:1000", "boids:1000"])
    ap.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per case")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases:
            kind, n, *sec = case.split(":")
            seconds = float(sec[0]) if sec else args.seconds
            samples, wall = capture(kind, int(n), seconds, Path(tmp))
            row = {"case": kind, "n": int(n), "seconds": seconds, "run_wall_s": wall}
            row["modes"] = {m: encode(samples, m) for m in MODES}
            results.append(row)
            print_row(row)
    out = {"host": platform.node(), "python": platform.python_version(), "results": results}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


def print_row(row: dict) -> None:
    print(
        f"\n{row['case']} {row['n']:,} UAVs, {row['seconds']:g} s at 20 Hz "
        f"(run {row['run_wall_s']:.0f} s wall)"
    )
    print(
        f"{'mode':<22}{'B/record':>10}{'MB/10k-UAV-s':>14}{'10k x 133 s MB':>16}"
        f"{'CPU ms/sample/1k':>18}"
    )
    for mode, m in row["modes"].items():
        print(
            f"{mode:<22}{m['bytes_per_record']:>10.2f}{m['mb_per_10k_uav_s']:>14.2f}"
            f"{m['projected_10k_133s_mb']:>16,.0f}{m['cpu_ms_per_sample_per_1k_uav']:>18.2f}"
        )


if __name__ == "__main__":
    main()
