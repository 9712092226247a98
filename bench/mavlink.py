"""100 MAVLink vehicles, each its own UDP endpoint, held at 1.0x real time while one client
process commands all of them: pace error and CPU shares.

The simulation (configs/mavlink.toml with N UAVs, default telemetry rates, fast physics) runs
in this process, paced by `--realtime 1.0`'s Pacer; a second process (pymavlink, one socket per
vehicle) waits for every heartbeat, arms all vehicles, takes them off to 5 m, then streams
offboard position setpoints (a slow circle) to every vehicle at 10 Hz, switches them to
OFFBOARD and keeps reading all telemetry. Prints a table and writes bench/results/mavlink.json.

    python bench/mavlink.py [N] [SIM_SECONDS]
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import random
import selectors
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "mavlink.json"


def client(n: int, client_port: int, stop, out) -> None:
    """One process commanding `n` vehicles (system ids 1..n); reports what it received."""
    from pymavlink import mavutil

    cons = [
        mavutil.mavlink_connection(f"udpin:127.0.0.1:{client_port + i}", source_system=255)
        for i in range(n)
    ]
    sel = selectors.DefaultSelector()
    for i, c in enumerate(cons):
        sel.register(c.port, selectors.EVENT_READ, i)
    received, heard, acks = 0, set(), 0
    t0 = time.perf_counter()
    stage, cpu0 = "connect", time.process_time()

    def drain(timeout: float) -> None:
        nonlocal received, acks
        for key, _ in sel.select(timeout):
            c = cons[key.data]
            while (m := c.recv_match(blocking=False)) is not None:
                received += 1
                heard.add(key.data)
                acks += m.get_type() == "COMMAND_ACK"

    next_sp = 0.0
    while not stop.is_set():
        now = time.perf_counter() - t0
        drain(0.01)
        if stage == "connect" and len(heard) == n:
            for i, c in enumerate(cons):  # arm, take off to 5 m (AMSL 488.09 + 5)
                c.mav.command_long_send(i + 1, 1, 400, 0, 1, 0, 0, 0, 0, 0, 0)
                c.mav.command_long_send(i + 1, 1, 22, 0, 0, 0, 0, 0, math.nan, math.nan, 493.09)
            stage, t_takeoff = "takeoff", now
        elif stage in ("takeoff", "offboard") and now - t_takeoff > 8.0 and now >= next_sp:
            next_sp = now + 0.1  # 10 Hz setpoints to every vehicle
            a = 0.2 * (now - t_takeoff)
            for i, c in enumerate(cons):  # 3 m circle around home at 5 m
                c.mav.set_position_target_local_ned_send(
                    0,
                    i + 1,
                    1,
                    1,
                    0b0000_1101_1111_1000,
                    3 * math.cos(a),
                    3 * math.sin(a),
                    -5.0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                )
            if stage == "takeoff":
                for i, c in enumerate(cons):
                    c.mav.command_long_send(i + 1, 1, 176, 0, 1, 6, 0, 0, 0, 0, 0)
                stage = "offboard"
    out.put(
        {
            "received": received,
            "acks": acks,
            "heard": len(heard),
            "stage": stage,
            "client_cpu_share": (time.process_time() - cpu0) / (time.perf_counter() - t0),
        }
    )


def main(n: int = 100, sim_seconds: float = 40.0) -> dict:
    sys.path.insert(0, str(ROOT.parent))
    from skyswarm.core.config import load_scenario
    from skyswarm.core.simulator import Simulator
    from skyswarm.mavlink import attach, modes
    from skyswarm.mavlink.realtime import Pacer

    base = random.Random(os.getpid()).randrange(30000, 50000)
    scenario = load_scenario(
        ROOT / "configs/mavlink.toml",
        [
            f"agents.count={n}",
            f"mavlink.client_port={base}",
            f"mavlink.vehicle_port={base + n + 10}",
            f"simulation.duration_s={sim_seconds}",
        ],
    )
    sim = Simulator.from_scenario(scenario)
    service = attach(sim)
    for _ in range(8):  # compile (numba cache) and warm up before the clock starts
        sim.step()
    ctx = mp.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=client, args=(n, base, stop, queue))
    proc.start()
    time.sleep(2.0)  # the client's sockets open before the first heartbeat
    pacer = Pacer(sim, 1.0)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    pace = pacer.report()
    in_offboard = sum(v.mode is modes.OFFBOARD for v in service.vehicles)
    stop.set()
    got = queue.get(timeout=30)
    proc.join()
    report = service.report()
    row = {
        "vehicles": n,
        "sim_s": sim.time_s,
        "wall_s": wall,
        "achieved_factor": pace["achieved_factor"],
        "pace_error": pace["pace_error"],
        "lag_ms_p99": pace["lag_ms_p99"],
        "lag_ms_max": pace["lag_ms_max"],
        "late_share": pace["late_share"],
        "sim_cpu_share": cpu / wall,  # of one core
        "client_cpu_share": got["client_cpu_share"],
        "mavlink_poll_ms_mean": report["poll_ms_mean"],
        "telemetry_sent": report["sent"],
        "commands_accepted": report["received"]["accepted"],
        "client_received": got["received"],
        "offboard_at_end": in_offboard,
        "load_average_1min": os.getloadavg()[0],  # other work on the machine during the run
        "cores": os.cpu_count(),
    }
    service.close()
    sim.close()
    print(
        f"{'vehicles':>8} {'factor':>7} {'pace err':>9} {'lag p99 ms':>10} {'late':>6} "
        f"{'sim CPU':>8} {'client CPU':>10} {'offboard':>8}"
    )
    print(
        f"{n:8d} {row['achieved_factor']:7.3f} {row['pace_error']:9.4f} "
        f"{row['lag_ms_p99']:10.2f} {row['late_share']:6.3f} {row['sim_cpu_share']:8.2f} "
        f"{row['client_cpu_share']:10.2f} {row['offboard_at_end']:8d}"
    )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(row, indent=1), encoding="utf-8")
    return row


if __name__ == "__main__":
    args = sys.argv[1:]
    main(int(args[0]) if args else 100, float(args[1]) if len(args) > 1 else 40.0)
