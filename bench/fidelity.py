"""Fidelity: every known answer of the models, expected against measured, as docs/fidelity.md.

Runs the measurements the tests assert on (SimUAV T2, T3, T6, T7; hover thrust and rotor speed
at several g; Dryden spectra against MIL-F-8785C; sensor noise with chi-square intervals; GPS
RMS; radio latency, jitter and loss) through the tests' own helper functions (tests/uav,
tests/core: one code path, no copy), and writes the page docs/fidelity.md and
bench/results/fidelity.json. About 3 minutes on one core (the Dryden spectra take most).

    python bench/fidelity.py            # writes docs/fidelity.md
    python bench/fidelity.py --out -    # prints the page instead
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "uav"), str(ROOT / "tests" / "core")]

import test_comms as comms  # noqa: E402
import test_gravity as gravity  # noqa: E402
import test_known_answers as known  # noqa: E402
import test_sensors as sensors  # noqa: E402
import test_wind as wind  # noqa: E402
import test_world as world  # noqa: E402
from uav_helpers import CONFIG, run  # noqa: E402

from skyswarm.uav.sensors import GaussMarkov  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "fidelity.json"
PAGE = ROOT / "docs" / "fidelity.md"
T2_TEST = "test_constant_force_gives_one_metre_per_second_after_one_second"
ROTOR_TEST = "test_hover_rotor_speed_is_sqrt_m_g_over_4_k_f"


@dataclass
class Row:
    """One known answer: what, expected, measured, the tolerance, and how to reproduce it."""

    group: str
    check: str
    expected: str
    measured: str
    tolerance: str
    ok: bool
    test: str  # the pytest node that asserts it

    def __post_init__(self) -> None:
        self.ok = bool(self.ok)  # numpy's bool is no JSON


def node(path: str, name: str) -> str:
    return f"`pytest {path}::{name}`"


def physics_rows() -> list[Row]:
    ka = "tests/uav/test_known_answers.py"
    v, x = world.t2_force()
    rows = [
        Row(
            "SimUAV",
            "T2: 1 N on 1 kg for 1 s, velocity",
            "1 m/s",
            f"{v:.6f} m/s",
            "1e-3",
            abs(v - 1.0) < 1e-3,
            node(
                "tests/core/test_world.py",
                T2_TEST,
            ),
        )
    ]
    for physics in ("bullet", "fast"):
        omega, _ = known.t3_torque(physics)
        rows.append(
            Row(
                "SimUAV",
                f"T3: 0.005 N m on I = 1 for 1 s, rate ({physics})",
                "0.005 rad/s",
                f"{omega[0]:.9f} rad/s",
                "1e-9",
                abs(omega[0] - 0.005) < 1e-9,
                node(ka, f"test_t3_torque_gives_an_angular_rate_slope_of_0_005[{physics}]"),
            )
        )
    for throttle, airspeed in ((1.0, 4.04), (0.5, 2.857)):
        _, ground, _ = known.t6_drag(throttle)
        rows.append(
            Row(
                "SimUAV",
                f"T6: quadratic drag, {throttle:.0%} thrust, 0.5 m/s tailwind: airspeed",
                f"{airspeed} m/s",
                f"{ground - 0.5:.4f} m/s",
                "1 %",
                abs(ground - 0.5 - airspeed) <= 0.01 * airspeed,
                node(
                    ka, f"test_t6_drag_balances_thrust_at_the_seed_airspeed[{throttle}-{airspeed}]"
                ),
            )
        )
    z, _ = known.t7_drop()
    rest = 2.0 - 9.7471 / 20.0
    rows.append(
        Row(
            "SimUAV",
            "T7: landing gear k 5 N/m, g 9.7471: resting height",
            f"{rest:.4f} m",
            f"{z[-1]:.5f} m",
            "1e-4 m",
            abs(z[-1] - rest) < 1e-4,
            node(ka, "test_t7_landing_gear_rests_the_centre_of_mass_at_1_513_m"),
        )
    )
    return rows


def hover_rows() -> list[Row]:
    af = CONFIG.airframe
    rows = []
    for g in (1.62, 3.71, 9.81):
        sim, swarm = gravity.hovering(g)
        z = run(sim, 4.0, lambda swarm=swarm: swarm.agents[0].position[2])
        thrust = swarm.motors.thrust[0].sum()
        omega = swarm.motors.rotor_speed[0].mean()
        w = math.sqrt(af.mass_kg * g / (4 * af.thrust_coefficient_n_s2))
        rows += [
            Row(
                "hover",
                f"quad_x at 10 m, g = {g} m/s^2: thrust m g",
                f"{af.mass_kg * g:.4f} N",
                f"{thrust:.4f} N (altitude error {abs(z[-1] - 10.0) * 1000:.1f} mm)",
                "0.1 %",
                abs(thrust / (af.mass_kg * g) - 1) < 1e-3,
                node("tests/uav/test_gravity.py", "test_hover_thrust_is_m_g_of_the_world"),
            ),
            Row(
                "hover",
                f"g = {g} m/s^2: rotor speed sqrt(m g / 4 k_f)",
                f"{w:.2f} rad/s",
                f"{omega:.2f} rad/s",
                "0.1 %",
                abs(omega / w - 1) < 1e-3,
                node("tests/uav/test_known_answers.py", ROTOR_TEST),
            ),
        ]
    return rows


def dryden_rows() -> list[Row]:
    test = node(
        "tests/uav/test_wind.py", "test_second_order_dryden_psd_matches_mil_f_8785c_from_0_1_to_30"
    )
    rows = []
    for order in (2, 1):
        ratios = wind.psd_band_ratios(order)
        for axis, name in enumerate("uvw"):
            r = ratios[axis]
            matches = order == 2 or axis == 0  # order 1's v, w have u's first-order shape
            within = bool(np.abs(r - 1).max() <= 0.10)
            rows.append(
                Row(
                    "Dryden",
                    f"order {order}{' (default)' if order == 2 else ' (QRSim)'}: {name} PSD "
                    "/ MIL-F-8785C, 12 bands of L Omega 0.1-30",
                    "1" if matches else "> 1.7 lowest band, < 0.72 highest (first order)",
                    f"{r.min():.3f}-{r.max():.3f}",
                    "+-0.10" if matches else "the test's bounds",
                    within if matches else bool(r[0] > 1.7 and r[-1] < 0.72),
                    test,
                )
            )
    return rows


def chi2_row(name: str, x: np.ndarray, sigma: float, unit: str, test: str) -> Row:
    """A standard deviation against its 99 % chi-square interval."""
    n = x.size
    lo, hi = np.sqrt(stats.chi2.ppf([0.005, 0.995], n - 1) / (n - 1)) * sigma
    s = float(np.std(x, ddof=1))
    return Row(
        "sensors",
        f"{name} (n = {n})",
        f"{sigma:g} {unit}",
        f"{s:.5g} {unit}",
        f"99 % chi-square [{lo:.5g}, {hi:.5g}]",
        bool(lo <= s <= hi),
        test,
    )


def sensor_rows() -> list[Row]:
    path = "tests/uav/test_sensors.py"
    white = node(path, "test_the_sensor_layer_adds_exactly_its_configured_white_noise")
    q = sensors.QRSIM
    noise = sensors.sensor_white_noise()
    rows = [
        chi2_row("gyro white noise", noise["gyro"], q["imu"].gyro_sigma_rad_s, "rad/s", white),
        chi2_row(
            "accelerometer white noise", noise["accel"], q["imu"].accel_sigma_m_s2, "m/s^2", white
        ),
        chi2_row("barometer white noise", noise["baro"], q["baro"].noise_sigma_m, "m", white),
        chi2_row("compass white noise", noise["compass"], q["compass"].sigma_rad, "rad", white),
    ]
    gm = node(path, "test_gauss_markov_variance_is_stationary_at_the_configured_sigma")
    baro = q["baro"]
    for tau, label in ((baro.bias_tau_s, "barometer bias"), (0.005, "short tau 5 ms, dt 20 ms")):
        chains = GaussMarkov((20000,), baro.bias_sigma_m, tau, 0.02, np.random.default_rng(1))
        for _ in range(50):
            chains.step()
        rows.append(chi2_row(f"Gauss-Markov {label}", chains.x, baro.bias_sigma_m, "m", gm))
    derived, rms = sensors.gps_horizontal_rms()
    rows.append(
        Row(
            "sensors",
            "GPS horizontal RMS (13 satellites, 20000 fixes)",
            f"{derived:.4f} m (s HDOP)",
            f"{rms:.4f} m",
            "3 %",
            abs(rms / derived - 1) <= 0.03,
            node(path, "test_gps_horizontal_rms_matches_its_derivation"),
        )
    )
    return rows


def radio_rows() -> list[Row]:
    path = "tests/core/test_comms.py"
    n = 20_000
    delays, _ = comms.jitter_delays(n)
    se = math.sqrt((2 / 3) / n)
    rows = [
        Row(
            "radio",
            "latency 10 ms + jitter 5 ms at 2.5 ms ticks: mean delay",
            "5 ticks",
            f"{delays.mean():.4f} ticks (range {delays.min()}-{delays.max()})",
            f"4 standard errors ({4 * se:.4f})",
            abs(delays.mean() - 5.0) < 4 * se,
            node(path, "test_jitter_stays_in_bounds_and_mean_matches"),
        )
    ]
    cases = (
        (
            "constant loss 0.2 at 50 m: delivered",
            {"loss": 0.2},
            50.0,
            0.8,
            "test_constant_loss_fraction[0.2]",
        ),
        (
            "Rayleigh loss 0.1, half-loss 40 m, at 40 m: delivered",
            {"loss": 0.1, "loss_model": "rayleigh", "half_loss_distance_m": 40.0, "range_m": 100.0},
            40.0,
            0.45,
            "test_rayleigh_loss_at_half_distance_delivers_half_of_the_survivors",
        ),
    )
    for label, channel, distance, p, test in cases:
        got, _ = comms.delivered(channel, distance, n)
        lo, hi = stats.binom.interval(0.999, n, p)
        rows.append(
            Row(
                "radio",
                label,
                f"{p:.2f} of {n}",
                f"{got / n:.4f}",
                f"99.9 % binomial [{lo / n:.4f}, {hi / n:.4f}]",
                bool(lo <= got <= hi),
                node(path, test),
            )
        )
    return rows


GROUPS: tuple[Callable[[], list[Row]], ...] = (
    physics_rows,
    hover_rows,
    dryden_rows,
    sensor_rows,
    radio_rows,
)

HEADER = """# Fidelity: known answers

Each row is a closed form or a published check (SimUAV's T2, T3, T6, T7; MIL-F-8785C's Dryden
spectra; QRSim's sensor noise; the radio's latency and loss laws) measured on the shipped
defaults — `quad_x` with rotor speeds, rotor and quadratic drag, ground effect and landing gear,
second-order Dryden turbulence. Generated by `python bench/fidelity.py` (about 3 minutes);
each row's test asserts the same number in the test suite. `ok` is the measured value inside
its tolerance; the first-order (QRSim) v and w spectra are listed to show why they are not the
default.

| group | check | expected | measured | tolerance | ok | reproduce |
|---|---|---|---|---|---|---|
"""


def page(rows: list[Row]) -> str:
    lines = [
        f"| {r.group} | {r.check} | {r.expected} | {r.measured} | {r.tolerance} | "
        f"{'yes' if r.ok else '**no**'} | {r.test} |"
        for r in rows
    ]
    return HEADER + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(PAGE), help="the page to write ('-': print it)")
    args = parser.parse_args()
    rows = []
    for group in GROUPS:
        rows += group()
        print(f"{group.__name__}: {sum(r.ok for r in rows)}/{len(rows)} ok so far", flush=True)
    text = page(rows)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text, encoding="utf-8")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps([asdict(r) for r in rows], indent=1), encoding="utf-8")
    if not all(r.ok for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
