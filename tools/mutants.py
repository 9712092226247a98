"""A hand-made mutation pass: one-line bugs the behavioural tests must catch (issue 33).

Each mutant is (file, original line, mutated line, what it breaks, the tests that should
catch it). The package is copied once into a temporary folder; each mutant is applied to that
copy, its tests run there (PYTHONPATH = the copy, numba's cache in the temporary folder too),
and the line is put back. The working tree is never edited. A mutant is killed when any of its
tests fails (pytest -x: the first failure is enough), survived when they all pass.

    python tools/mutants.py                 # every mutant: a killed/survived table, the score
    python tools/mutants.py -k beacon,drag  # those whose file or description contains either
    python tools/mutants.py --list          # the mutants, without running anything

A kill counts only if the same tests pass on the unmutated copy (each selection run once,
cached; --no-baseline skips that); a selection that times out is "timeout", not a kill. The
copy's kernels are compiled first (`skyswarm warmup`; --no-warmup skips it). Run time: ~15
minutes on two quiet cores without the baseline (kernel mutants recompile their numba module
once each), about twice that with it; on a loaded machine (load ~18) 21 mutants took 40 min.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository root is the package `skyswarm`


@dataclass(frozen=True)
class Mutant:
    file: str  # path inside the package
    original: str  # one whole line of it, exactly (indentation included)
    mutated: str  # the line that replaces it
    breaks: str  # the bug it stands for
    tests: tuple[str, ...]  # pytest arguments: test files, node ids, -k expressions


T_BACKENDS = "tests/core/test_backends.py"
T_KNOWN = "tests/uav/test_known_answers.py"
T_SENSORS = "tests/uav/test_sensors.py"
T_COMMS = "tests/core/test_comms.py"
T_BEACONS = "tests/core/test_beacons.py"
T_AVOID = "tests/uav/test_avoidance.py"
T_REC = "tests/core/test_recorder.py"
T_BATCH = "tests/core/test_batch.py"
T_SWEEP = "tests/core/test_batch_sweep.py"
FK, UK = "core/backends/fast_kernel.py", "uav/kernel.py"
NOISE, CH = "uav/sensors/noise.py", "core/comms/channels.py"
NT, T_NEAREST = "core/comms/nearest_table.py", "tests/core/test_beacons_nearest.py"

MUTANTS: tuple[Mutant, ...] = (
    # -- the fast engine's kernel ------------------------------------------------------------
    Mutant(
        FK,
        "        jt = min(vt / kt, FRICTION * jn)",
        "        jt = vt / kt",
        "no Coulomb cap on ground friction (issue 33 survivor)",
        (T_BACKENDS, "-k", "coulomb"),
    ),
    Mutant(
        "core/backends/fast_block.py",
        "        t[V2 + j] = (t[V2 + j] + ((f2 + t[FW2 + j]) * m) * dt) - g * dt",
        "        t[V2 + j] = (t[V2 + j] + ((f2 + t[FW2 + j]) * m) * dt) - 0.5 * g * dt",
        "half gravity in the integrator's blocks (bodies clear of the ground)",
        (T_BACKENDS, "-k", "free_fall"),
    ),
    Mutant(
        FK,
        "    v2 = (vel[s, 2] + ((f2 + fw[s, 2]) * m) * dt) - g * dt",
        "    v2 = (vel[s, 2] + ((f2 + fw[s, 2]) * m) * dt) - 0.5 * g * dt",
        "half gravity in the integrator body by body (near the ground, among boxes)",
        (T_BACKENDS, "tests/core/test_fast_block.py"),
    ),
    Mutant(
        FK,
        "    new = max(acc[0] - vn / kn, 0.0)",
        "    new = acc[0] - vn / kn",
        "terrain contact may pull a body down (normal impulse not clamped)",
        ("tests/core/test_backends_terrain.py", "-k", "box"),
    ),
    Mutant(
        FK,
        "    cap = mu * acc[0]",
        "    cap = 2.0 * mu * acc[0]",
        "twice the terrain friction",
        ("tests/core/test_backends_terrain.py", "-k", "box"),
    ),
    # -- the UAV flight kernel -----------------------------------------------------------------
    Mutant(
        UK,
        "        force[0] = c.drag_quad[0] * rho * abs(u0) * u0",
        "        force[0] = c.drag_quad[0] * rho * u0 * u0",
        "quadratic drag along x without its sign",
        (T_KNOWN, "-k", "t6 or thins_with"),
    ),
    Mutant(
        UK,
        "            w += alpha * (math.sqrt(cmd / c.k_f) - w)",
        "            w = math.sqrt(cmd / c.k_f)",
        "no rotor-speed lag",
        (T_KNOWN, "-k", "63_2"),
    ),
    Mutant(
        UK,
        "        rho = c.isa[0] * (1.0 - c.isa[1] * h) ** c.isa[2]",
        "        rho = c.isa[0]",
        "sea-level air density at every altitude",
        (T_KNOWN, "-k", "isa or thins_with"),
    ),
    Mutant(
        UK,
        "        zr = max_of(m.z, 0.5 * c.rotor_radius)",
        "        zr = max_of(m.z, 0.05 * c.rotor_radius)",
        "ground-effect clamp ten times lower, agent by agent (thrust blows up near the ground)",
        ("tests/uav/test_uav_reference.py",),  # mixed modes: every block agent by agent
    ),
    Mutant(
        "uav/kernel_block.py",
        "        ratio = radius / (4.0 * max_of(t[Z + j], 0.5 * radius))",
        "        ratio = radius / (4.0 * max_of(t[Z + j], 0.05 * radius))",
        "ground-effect clamp ten times lower on the lanes (thrust blows up near the ground)",
        (T_KNOWN, "tests/uav/test_kernel_block.py", "-k", "ground_effect or t7 or reference"),
    ),
    Mutant(
        "uav/kernel_block.py",
        "    trial = min_of(max_of(kept + ki_dt * error, -i_lim), i_lim)",
        "    trial = kept + ki_dt * error",
        "PID integral without its anti-windup limit (the one PID axis both flight paths call)",
        ("tests/uav/test_uav_flight.py",),
    ),
    Mutant(
        UK,
        "    shrink = min_of(c.f_max / max_of(hi - lo, 1e-12), 1.0)",
        "    shrink = 1.0",
        "motor mixer never shrinks a command wider than the motors' range, agent by agent",
        ("tests/uav/test_uav_reference.py",),
    ),
    Mutant(
        "uav/kernel_block.py",
        "        shrink = min_of(fm / max_of(hi - lo, 1e-12), 1.0)",
        "        shrink = 1.0",
        "motor mixer never shrinks a command wider than the motors' range, on the lanes",
        (T_KNOWN, "tests/uav/test_kernel_block.py", "-k", "shrunk or reference"),
    ),
    # -- sensors -------------------------------------------------------------------------------
    Mutant(
        NOISE,
        "        self.q = float(sigma * np.sqrt(1.0 - self.a**2))",
        "        self.q = float(sigma * np.sqrt(dt_s / tau_s))",
        "Euler Gauss-Markov step: variance wrong at short tau (issue 33 survivor)",
        (T_SENSORS, "-k", "gauss_markov"),
    ),
    Mutant(
        NOISE,
        "        self.x = sigma * rng.standard_normal(shape)  # the stationary law from the start",
        "        self.x = np.zeros(shape)  # the stationary law from the start",
        "Gauss-Markov processes start at zero, not stationary",
        (T_SENSORS, "-k", "gauss_markov"),
    ),
    Mutant(
        NOISE,
        "        self.q = float(density * np.sqrt(dt_s))",
        "        self.q = float(density * dt_s)",
        "random walk scaled by dt instead of sqrt(dt)",
        (T_SENSORS, "-k", "random_walk"),
    ),
    Mutant(
        "uav/sensors/baro.py",
        "        self.altitude = truth.position[:, 2] + bias + sigma * self.rng.standard_normal(n)",
        "        self.altitude = truth.position[:, 2] + sigma * self.rng.standard_normal(n)",
        "barometer without its bias",
        (T_SENSORS,),
    ),
    Mutant(
        "uav/sensors/gps.py",
        "        self.pseudorange = GaussMarkov("
        "(s,), cfg.pr_sigma_m, cfg.pr_tau_s, cfg.period_s, rng)",
        "        self.pseudorange = GaussMarkov((s,), cfg.pr_sigma_m, cfg.pr_tau_s, 1.0, rng)",
        "GPS pseudorange errors stepped with a 1 s period whatever the receiver's",
        (T_SENSORS, "-k", "gps"),
    ),
    # -- comms ---------------------------------------------------------------------------------
    Mutant(
        "core/comms/beacons.py",
        "        oldest = now - self.timeout_ticks",
        "        oldest = now - self.timeout_ticks - 1",
        "a beacon kept one tick past its timeout (issue 33 survivor)",
        (T_BEACONS, "-k", "timeout"),
    ),
    Mutant(
        "core/comms/beacon_kernels.py",
        "            use_a = tick_a[i] > send_tick",
        "            use_a = tick_a[i] >= send_tick",
        "neighbour table keeps the older of two beacons sent on the same tick (equivalent: a "
        "sender sends one beacon a tick, so a tie is the same beacon, the same record)",
        (T_BEACONS, "tests/core/test_beacon_kernels.py"),
    ),
    Mutant(
        NT,
        "                    ib = -1 if vb < 1.0 else (nx - 1 if vb >= nx else int(vb) - 1)",
        "                    ib = -1 if vb < 1.0 else (nx - 1 if vb >= nx else int(vb))",
        "the K-nearest table counts the cell the range's edge crosses as wholly in range (by "
        "population, where some of its points lie beyond the range)",
        (T_NEAREST,),
    ),
    Mutant(
        NT,
        "        eps = 1e-9 * (range_m + 3.0 * far + 2.0 * cell)",
        "        eps = -1e-9 * (range_m + 3.0 * far + 2.0 * cell)",
        "the K-nearest table's margin turned inwards: cells on the range's edge taken as wholly "
        "in or out of it",
        (T_NEAREST,),
    ),
    Mutant(
        NT,
        "            if near >= k:",
        "            if near >= k - 1:",
        "the K-nearest gather stops one sender short of k sure ones (a nearer sender outside "
        "its block can be missed)",
        (T_NEAREST,),
    ),
    Mutant(
        CH,
        "        return np.maximum(1, self.latency_ticks + jitter)",
        "        return self.latency_ticks + jitter",
        "zero-tick delivery (a message seen the tick it is sent; messages are due no earlier "
        "than their dispatch, so only beacons show it: never delivered)",
        (T_COMMS, T_BEACONS, "-k", "latency or jitter or every_copy or timeout"),
    ),
    Mutant(
        CH,
        "        jitter = rng.integers(0, self.jitter_ticks + 1, size=count)",
        "        jitter = rng.integers(0, self.jitter_ticks, size=count)",
        "jitter never reaches its maximum",
        (T_COMMS, "-k", "jitter"),
    ),
    Mutant(
        CH,
        "        return 1.0 - (1.0 - c.loss) * np.exp(-math.log(2.0) * x)",
        "        return 1.0 - (1.0 - c.loss) * np.exp(-x)",
        "Rayleigh loss without ln 2: half loss not at the half-loss distance",
        (T_COMMS, "-k", "rayleigh"),
    ),
    Mutant(
        CH,
        "        fits = cs - before <= self.tokens[s] + 1e-9",
        "        fits = cs <= self.tokens[s] + 1e-9",
        "bandwidth: one sender's bytes charged the bytes of senders before it",
        (T_COMMS, "-k", "bandwidth or bucket"),
    ),
    Mutant(
        CH,
        "        self.tokens = np.minimum(self.bucket_bytes, self.tokens + refill)",
        "        self.tokens = self.tokens + refill",
        "token bucket without its one-second cap",
        (T_COMMS, "-k", "bandwidth or bucket"),
    ),
    # -- avoidance -----------------------------------------------------------------------------
    Mutant(
        "uav/avoidance_reference.py",
        "        closing = valid & (b < 0.0) & (disc > 0.0) & (c > 0.0) & (a > 1e-9)",
        "        closing = valid & (disc > 0.0) & (c > 0.0) & (a > 1e-9)",
        "receding neighbours are avoided too (equivalent: their tau = c / max(-b + sq, 1e-12) "
        "is ~1e13 s, so their push is exp(-tau / horizon) = 0)",
        (T_AVOID, "-k", "receding or head_on"),
    ),
    Mutant(
        "uav/avoidance_reference.py",
        "        near = valid & (dist < cfg.separation_m) & (dist > 1e-6)",
        "        near = valid & (dist < 0.5 * cfg.separation_m) & (dist > 1e-6)",
        "separation push only inside half the separation distance",
        (T_AVOID, "-k", "separation"),
    ),
    Mutant(
        "uav/avoidance_reference.py",
        "            cr, sr = math.cos(RIGHT_TURN), math.sin(RIGHT_TURN)",
        "            cr, sr = math.cos(-RIGHT_TURN), math.sin(-RIGHT_TURN)",
        "head-on pairs turn left",
        (T_AVOID, "-k", "head_on"),
    ),
    Mutant(
        "uav/avoidance_reference.py",
        "        total *= np.minimum(1.0, cfg.max_push_m_s / np.maximum(size, 1e-12))[:, None]",
        "        total *= 1.0",
        "avoidance push not capped at max_push_m_s",
        (T_AVOID, "-k", "separation or head_on"),
    ),
    # -- the recorder and its readers ----------------------------------------------------------
    Mutant(
        "core/recorder.py",
        '        x, y, z = position if position is not None else ("", "", "")',
        '        y, x, z = position if position is not None else ("", "", "")',
        "events.csv death x and y swapped (issue 33 survivor)",
        (T_REC, "-k", "death_position"),
    ),
    Mutant(
        "app/plot.py",
        '                    out.append((_num(row["time_s"]), int(row["agent_id"]), x, y))',
        '                    out.append((_num(row["time_s"]), int(row["agent_id"]), y, x))',
        "the map plot draws deaths at (y, x)",
        (T_REC, "-k", "death_position"),
    ),
    Mutant(
        "core/recorder.py",
        "        self.traj_every = max(1, world.ticks_for_until(1.0 / res.trajectory_hz))",
        "        self.traj_every = max(1, world.ticks_for_until(2.0 / res.trajectory_hz))",
        "trajectory recorded at half its configured rate",
        (T_REC, "-k", "contents"),
    ),
    Mutant(
        "core/recorder.py",
        '            "alive": len(self.sim.agents) - len(self.sim.deaths),  # an agent dies once',
        '            "alive": len(self.sim.agents),  # an agent dies once',
        "timeseries.csv alive column counts the dead",
        (T_REC,),
    ),
    # -- batch ---------------------------------------------------------------------------------
    Mutant(
        "app/batch.py",
        '            if outcome["status"] != "ok" and attempt <= retries:',
        '            if outcome["status"] != "ok" and attempt < retries:',
        "one retry fewer than configured",
        (T_BATCH, "-k", "failing_run"),
    ),
    Mutant(
        "app/batch.py",
        "            attempts = max(attempt, executions(spec.run_dir, session))",
        "            attempts = attempt",
        "re-executions by the executor not counted (issue 33 survivor)",
        (T_BATCH, "-k", "rerun_counted"),
    ),
    Mutant(
        "app/batch_worker.py",
        '        if info.get("config_hash") != spec.config_hash:',
        "        if False:",
        "--resume keeps a run whose config changed",
        (T_BATCH, "-k", "resume"),
    ),
    Mutant(
        "app/sweep_report.py",
        "    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))",
        "    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / n)",
        "population instead of sample standard deviation",
        (T_SWEEP, "-k", "stats"),
    ),
    Mutant(
        "app/sweep_report.py",
        "    half = float(st.t.ppf(0.975, n - 1)) * std / math.sqrt(n)",
        "    half = 1.96 * std / math.sqrt(n)",
        "normal instead of Student-t interval",
        (T_SWEEP, "-k", "stats"),
    ),
    Mutant(
        "app/sweep.py",
        "    return ((hi << 32) | lo) & (2**63 - 1)",
        "    return (hi << 32) & (2**63 - 1)",
        "run seeds lose their low 32 bits",
        (T_SWEEP, "-k", "seed"),
    ),
    Mutant(
        "core/collisions.py",
        "            land = (speed[k] < cfg.landing_speed_mps) & (tilt[k] < cfg.landing_tilt_deg)",
        "            land = speed[k] < cfg.landing_speed_mps",
        "a tilted touchdown counts as a landing",
        ("tests/core/test_backends_uav.py", "-k", "landing or impact"),
    ),
)


def copy_package(dest: Path) -> Path:
    """The package tree (no .git, results or caches) as dest/skyswarm; returns that folder."""
    ignore = shutil.ignore_patterns(".git", "results", "__pycache__", "*.pyc", "site", ".ruff*")
    target = dest / "skyswarm"
    shutil.copytree(ROOT, target, ignore=ignore)
    return target


def check(mutant: Mutant, text: str) -> None:
    count = text.splitlines().count(mutant.original)
    if count != 1:
        raise SystemExit(f"{mutant.file}: {count} lines equal {mutant.original.strip()!r}")


def run_tests(tests: tuple[str, ...], pkg: Path, env: dict[str, str], timeout_s: float) -> str:
    """Run one test selection in the copy: "passed", "failed", "timeout" or "error <rc>"."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-o", "addopts="]
    try:
        proc = subprocess.run(
            [*cmd, *tests], cwd=pkg, env=env, capture_output=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return {0: "passed", 1: "failed"}.get(proc.returncode, f"error {proc.returncode}")


def run_one(mutant: Mutant, pkg: Path, env: dict[str, str], timeout_s: float) -> tuple[str, float]:
    """Apply the mutant in the copy, run its tests, put the line back: (verdict, seconds)."""
    path = pkg / mutant.file
    text = path.read_text(encoding="utf-8")
    check(mutant, text)
    lines = text.split("\n")
    lines[lines.index(mutant.original)] = mutant.mutated
    path.write_text("\n".join(lines), encoding="utf-8")
    start = time.monotonic()
    try:
        result = run_tests(mutant.tests, pkg, env, timeout_s)
    finally:
        path.write_text(text, encoding="utf-8")
    verdict = {"passed": "survived", "failed": "killed"}  # a timeout is not a kill
    return verdict.get(result, result), time.monotonic() - start


class Baseline:
    """Each test selection run once on the unmutated copy (cached): a mutant counts as killed
    only if its tests pass without it, otherwise the verdict is "baseline fails"."""

    def __init__(self, pkg: Path, env: dict[str, str], timeout_s: float) -> None:
        self.pkg, self.env, self.timeout_s = pkg, env, timeout_s
        self.results: dict[tuple[str, ...], str] = {}

    def passes(self, tests: tuple[str, ...]) -> bool:
        if tests not in self.results:
            self.results[tests] = run_tests(tests, self.pkg, self.env, self.timeout_s)
        return self.results[tests] == "passed"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-k", default="", help="only mutants whose file or description contains one")
    p.add_argument("--list", action="store_true", help="list the mutants and exit")
    p.add_argument("--timeout", type=float, default=600.0, help="s per mutant's tests")
    p.add_argument(
        "--no-warmup",
        action="store_true",
        help="do not compile the copy's kernels first (`skyswarm warmup`): without it the first "
        "test that flies pays the compilation inside its timeout",
    )
    p.add_argument(
        "--no-baseline",
        action="store_true",
        help="do not re-run a killing selection unmutated (by default a kill counts only if "
        "the same tests pass without the mutant)",
    )
    args = p.parse_args(argv)
    words = args.k.split(",")
    chosen = [m for m in MUTANTS if any(w in m.file or w in m.breaks for w in words)]
    for m in chosen:
        check(m, (ROOT / m.file).read_text(encoding="utf-8"))
    if args.list:
        for m in chosen:
            print(f"{m.file:32} {m.breaks}")
        return 0
    with tempfile.TemporaryDirectory(prefix="skyswarm-mutants-") as tmp:
        pkg = copy_package(Path(tmp))
        env = {**os.environ, "PYTHONPATH": tmp, "NUMBA_CACHE_DIR": str(Path(tmp, "numba"))}
        env.pop("PYTEST_ADDOPTS", None)
        if not args.no_warmup:  # the copy's numba cache filled once, not by the first test
            cli = [sys.executable, "-m", "skyswarm.app.cli", "warmup", "--jobs", "1"]
            subprocess.run(cli, cwd=pkg, env=env, capture_output=True, timeout=1800)
        killed = 0
        baseline = Baseline(pkg, env, args.timeout)
        print(f"{'verdict':17} {'s':>5}  {'file':32} what it breaks")
        for m in chosen:
            verdict, took = run_one(m, pkg, env, args.timeout)
            if (
                verdict.startswith("killed")
                and not args.no_baseline
                and not baseline.passes(m.tests)
            ):
                verdict = "baseline fails"
            killed += verdict.startswith("killed")
            print(f"{verdict:17} {took:5.0f}  {m.file:32} {m.breaks}", flush=True)
    print(f"score: {killed}/{len(chosen)} killed")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
