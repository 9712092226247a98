"""The sensor noise processes and the GPS model against their closed forms (uav/sensors/).

Statistical bounds are 99 % intervals (chi-square for variances) or several standard errors wide,
with fixed seeds, so each test fails only if the model is wrong, not by chance on a rerun.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from uav_helpers import CONFIG

from skyswarm.core.config import SimulationConfig, WorldConfig
from skyswarm.core.geo import wrap_angle
from skyswarm.core.schema import ConfigError, build
from skyswarm.core.simulator import Simulator
from skyswarm.uav.sensors import (
    GaussMarkov,
    GpsConfig,
    GpsModel,
    ProximityConfig,
    RandomWalk,
    SensorsConfig,
    registered_sensors,
    scan,
)
from skyswarm.uav.sensors.gps import sky
from skyswarm.uav.swarm import Swarm

TICK = 0.0025
QRSIM = {name: sensor.defaults for name, sensor in registered_sensors().items()}  # typed configs


def chi2_ok(samples: np.ndarray, sigma: float) -> bool:
    """Sample variance of independent samples within its 99 % chi-square interval of sigma^2."""
    from scipy import stats

    n = samples.size
    s2 = float(np.var(samples, ddof=1))
    lo, hi = stats.chi2.ppf([0.005, 0.995], n - 1) * sigma**2 / (n - 1)
    return bool(lo <= s2 <= hi)


# -- Gauss–Markov / Ornstein–Uhlenbeck ------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "sigma", "tau", "dt"),
    [
        ("baro bias", QRSIM["baro"].bias_sigma_m, QRSIM["baro"].bias_tau_s, 0.02),
        ("attitude OU", QRSIM["attitude"].sigma_rad, QRSIM["attitude"].tau_s, TICK),
        ("pseudorange", QRSIM["gps"].pr_sigma_m, QRSIM["gps"].pr_tau_s, 0.2),
    ],
)
def test_gauss_markov_variance_is_stationary_at_the_configured_sigma(name, sigma, tau, dt) -> None:
    # 20000 independent chains started from the stationary law: after any number of exact
    # steps each is N(0, sigma^2), so the across-chain variance passes the chi-square test.
    gm = GaussMarkov((20000,), sigma, tau, dt, np.random.default_rng(1))
    assert chi2_ok(gm.x, sigma), name
    for _ in range(50):
        gm.step()
    assert chi2_ok(gm.x, sigma), name


@pytest.mark.parametrize("tau_steps", [10, 100])
def test_gauss_markov_autocorrelation_at_lag_tau_is_one_over_e(tau_steps: int) -> None:
    # corr(x_t, x_t+lag) = exp(-lag / tau); over 4000 chains x 8 tau the estimate of the lag-tau
    # correlation has a standard error ~0.006, so +-0.02 is over three of them.
    dt = 0.01
    gm = GaussMarkov((4000,), 2.0, tau_steps * dt, dt, np.random.default_rng(2))
    lags = (tau_steps // 2, tau_steps, 2 * tau_steps)
    ring = np.empty((2 * tau_steps + 1, 4000))  # the last 2 tau + 1 states, not the whole run
    sums = {lag: np.zeros(3) for lag in lags}  # sum a b, sum a a, sum b b
    ring[0] = gm.x
    for k in range(1, 8 * tau_steps + 1):
        x = gm.step()
        ring[k % len(ring)] = x
        for lag in lags:
            if k >= lag:
                a = ring[(k - lag) % len(ring)]
                sums[lag] += (a @ x, a @ a, x @ x)
    for lag in lags:
        ab, aa, bb = sums[lag]
        rho = ab / np.sqrt(aa * bb)
        assert abs(rho - np.exp(-lag / tau_steps)) < 0.02, (lag, rho)


@pytest.mark.parametrize("tau_over_dt", [0.25, 1.0, 2.0])
def test_gauss_markov_at_time_constants_comparable_to_the_period(tau_over_dt: float) -> None:
    # tau = dt / 4, dt and 2 dt (a = exp(-dt / tau) = 0.018, 0.37, 0.61): the exact step keeps
    # Var x = sigma^2 (an Euler step sigma sqrt(2 dt / tau) would give 8.0, 2.3 and 1.6 sigma^2;
    # sigma sqrt(dt / tau): 4.0, 1.16, 0.79; sigma sqrt(1 - a): 0.98, 0.73, 0.62) and
    # corr(x_t, x_t+dt) = exp(-dt / tau).
    from scipy import stats

    dt, sigma, chains = 0.02, 0.3, 20000
    gm = GaussMarkov((chains,), sigma, tau_over_dt * dt, dt, np.random.default_rng(5))
    steps = 40  # 10 tau at the longest: any wrong stationary variance has taken over
    xs = np.empty((steps + 1, chains))
    xs[0] = gm.x
    for k in range(1, steps + 1):
        xs[k] = gm.step()
    assert chi2_ok(xs[-1], sigma)  # independent chains: the 99 % chi-square interval
    # all steps pooled (Var sigma^2 each): the mean square within its chi-square interval too,
    # with the chains' correlation in time spending at most a factor (1 + a) / (1 - a) of the
    # degrees of freedom; a = 0.61 at the longest: 4.1, so 1/5 of the samples' count is kept
    a = np.exp(-1.0 / tau_over_dt)
    n_eff = xs.size // 5
    lo, hi = stats.chi2.ppf([0.005, 0.995], n_eff) / n_eff
    assert lo <= float(np.mean(xs**2)) / sigma**2 <= hi
    # the lag-dt correlation over every pair of successive steps (standard error < 0.002)
    rho = float(np.sum(xs[:-1] * xs[1:]) / np.sqrt(np.sum(xs[:-1] ** 2) * np.sum(xs[1:] ** 2)))
    assert rho == pytest.approx(a, abs=0.01)


def test_random_walk_variance_grows_linearly() -> None:
    # b(t) = q sqrt(T) sum of n steps: Var = q^2 t; the gyro bias walk of the qrsim preset.
    q = QRSIM["imu"].gyro_bias_walk
    rw = RandomWalk((20000,), q, TICK, np.random.default_rng(3))
    for _ in range(400):  # 1 s
        rw.step()
    assert chi2_ok(rw.x, q * np.sqrt(400 * TICK))


def psd_flat(x: np.ndarray, sigma: float, fs: float) -> np.ndarray:
    """(T, M) series of white noise at `fs` Hz -> the Welch PSD averaged over the M series in
    8 bands, over its two-sided level sigma^2 / fs (one-sided: 2 sigma^2 / fs)."""
    from scipy import signal

    _, p = signal.welch(x, fs=fs, nperseg=256, axis=0)
    p = p[1:-1].mean(axis=1)  # DC and Nyquist bins carry half the degrees of freedom
    return np.array([band.mean() for band in np.array_split(p, 8)]) / (2 * sigma**2 / fs)


def test_the_sensor_layer_adds_exactly_its_configured_white_noise() -> None:
    # 16 UAVs hover for 2048 ticks with the qrsim sensors only observing (control_on "truth"):
    # each reading minus the truth minus the current bias is the white noise the layer drew.
    # Gyro (0.005 rad/s) and accelerometer (0.05 m/s^2) at 400 Hz: 98304 samples each, variance
    # in its 99 % chi-square interval, PSD flat within 10 % in 8 bands (Welch over 48 series;
    # measured 0.97-1.02); barometer (0.05 m) and compass (0.02 rad) at 50 Hz: 4096 samples each.
    noise = sensor_white_noise()
    cfg = QRSIM["imu"]
    for name, sigma in (("gyro", cfg.gyro_sigma_rad_s), ("accel", cfg.accel_sigma_m_s2)):
        x = noise[name]  # (T, 16, 3)
        assert chi2_ok(x, sigma), name
        ratios = psd_flat(x.reshape(len(x), -1), sigma, 1 / TICK)
        assert np.abs(ratios - 1).max() < 0.10, (name, ratios)
    assert chi2_ok(noise["baro"], QRSIM["baro"].noise_sigma_m)
    assert chi2_ok(noise["compass"], QRSIM["compass"].sigma_rad)


def sensor_white_noise() -> dict[str, np.ndarray]:
    """The white noise the qrsim sensor layer drew while 16 UAVs hovered for 2048 ticks
    (reading - truth - bias): 'gyro' rad/s and 'accel' m/s^2 (2048, 16, 3) at 400 Hz, 'baro' m
    and 'compass' rad (256, 16) at 50 Hz (bench/fidelity.py reports them)."""
    sim = Simulator(SimulationConfig(seed=9), WorldConfig())
    config = dataclasses.replace(CONFIG, sensors=SensorsConfig(preset="qrsim", control_on="truth"))
    start = np.array([(5.0 * (i % 4), 5.0 * (i // 4), 10.0) for i in range(16)])
    swarm = Swarm(sim, config, range(1, 17), start, np.zeros(16), hovering=True)
    s, g = swarm.sensors, np.array([0.0, 0.0, 9.81])
    imu, barometer, magnetometer = s.sensor("imu"), s.sensor("baro"), s.sensor("compass")
    v_before = s._truth().velocity
    gyro, accel, baro, compass = [], [], [], []
    for k in range(1, 2049):
        sim.step()
        t = s._truth()
        pos, vel, euler, rate, rot = t.position, t.velocity, t.euler, t.body_rate, t.rotation
        a = (vel - v_before) / TICK
        v_before = vel
        gyro.append(imu.gyro - rate - imu.gyro_bias.x)
        accel.append(imu.specific_force - np.einsum("nji,nj->ni", rot, a + g) - imu.accel_bias.x)
        if k % 8 == 0:
            baro.append(barometer.altitude - pos[:, 2] - barometer.bias.x)
            compass.append(wrap_angle(magnetometer.yaw - euler[:, 2]))
    sim.close()
    series = {"gyro": gyro, "accel": accel, "baro": baro, "compass": compass}
    return {name: np.asarray(x) for name, x in series.items()}


def test_proximity_range_and_bearing_noise_have_their_sigma() -> None:
    # 30 agents on a 3 m ring all see each other (360 deg, 20 m): 870 detections per scan,
    # 20 scans; range - true distance and bearing - true bearing are the configured white
    # noise (0.05 m, 0.02 rad: qrsim), each variance in its 99 % chi-square interval.
    cfg = dataclasses.replace(QRSIM["proximity"], range_m=20.0, max_targets=29)
    angle = np.linspace(0, 2 * np.pi, 30, endpoint=False)
    pos = np.stack([3 * np.cos(angle), 3 * np.sin(angle), np.full(30, 5.0)], axis=1)
    yaws, alive, boxes = np.zeros(30), np.ones(30, bool), np.zeros((0, 6))
    exact = scan(pos, yaws, alive, boxes,
                 dataclasses.replace(cfg, range_sigma_m=0.0, bearing_sigma_rad=0.0),
                 np.random.default_rng(0))  # fmt: skip
    assert exact.detected.sum() == 30 * 29
    rng = np.random.default_rng(10)
    dr, db = [], []
    for _ in range(20):
        noisy = scan(pos, yaws, alive, boxes, cfg, rng)
        assert np.array_equal(noisy.detected, exact.detected)
        dr.append((noisy.range_m - exact.range_m)[exact.detected])
        db.append(wrap_angle(noisy.bearing_rad - exact.bearing_rad)[exact.detected])
    assert chi2_ok(np.concatenate(dr), cfg.range_sigma_m)
    assert chi2_ok(np.concatenate(db), cfg.bearing_sigma_rad)


# -- GPS --------------------------------------------------------------------------------------
def gps_cfg(**kw) -> GpsConfig:
    return dataclasses.replace(QRSIM["gps"], **kw)


def test_gps_horizontal_rms_matches_its_derivation() -> None:
    # Derivation: the position error is P e with e ~ N(0, s^2 I), s^2 = pr^2 + rx^2, P the
    # position rows of (G^T G)^-1 G^T, so E|e_h|^2 = s^2 (Q_xx + Q_yy) = (s HDOP)^2 with
    # Q = (G^T G)^-1. Here Q is computed independently of the model; the process is made
    # memoryless (tau << fix period) so 20000 fixes are independent samples of the qrsim error.
    derived, rms = gps_horizontal_rms()
    model = GpsModel(gps_cfg(), 1, np.random.default_rng(5))
    assert model.expected_horizontal_rms() == pytest.approx(derived, rel=1e-9)
    assert derived == pytest.approx(0.228, abs=0.001)  # 0.1756 m x HDOP 1.30 (13 satellites)
    assert rms == pytest.approx(derived, rel=0.10)
    assert rms == pytest.approx(derived, rel=0.03)  # actual precision: ~1 % for 40000 dof


def gps_horizontal_rms(fixes: int = 20000) -> tuple[float, float]:
    """The qrsim GPS's horizontal RMS error, m: derived from the satellite geometry (s HDOP,
    computed here independently of the model) and measured over `fixes` memoryless fixes."""
    cfg = gps_cfg()
    los = sky(cfg.satellites)
    g = np.hstack([-los, np.ones((len(los), 1))])
    q = np.linalg.inv(g.T @ g)
    derived = np.hypot(cfg.pr_sigma_m, cfg.receiver_sigma_m) * np.sqrt(q[0, 0] + q[1, 1])
    fast = GpsModel(gps_cfg(pr_tau_s=1e-6), 1, np.random.default_rng(6))
    errs = np.array([fast.step()[0] for _ in range(fixes)])
    return float(derived), float(np.sqrt(np.mean(np.sum(errs[:, :2] ** 2, axis=1))))


@pytest.mark.parametrize("period_s", [0.2, 1.0])
def test_gps_error_drifts_per_fix_as_its_period_and_time_constant_say(period_s: float) -> None:
    # The shared pseudorange errors are Gauss-Markov with tau 2000 s stepped once per fix:
    # between fixes T apart each changes by a variance 2 pr^2 (1 - exp(-T / tau)), so with no
    # receiver noise the horizontal position error moves by an RMS of pr sqrt(2 (1 - e^(-T /
    # tau))) HDOP from one fix to the next: 3.2 mm at 5 Hz, 7.2 mm at 1 Hz (sqrt 5 times
    # more). 20000 fixes: 40,000 dof, within 3 % (chi-square 99 %: 1.3 %). Kills errors
    # stepped with any period but the receiver's (mutation pass, tools/mutants.py).
    cfg = gps_cfg(period_s=period_s, receiver_sigma_m=0.0)
    model = GpsModel(cfg, 1, np.random.default_rng(9))
    errs = np.array([model.step()[0].copy() for _ in range(20000)])
    step_rms = np.sqrt(np.mean(np.sum(np.diff(errs[:, :2], axis=0) ** 2, axis=1)))
    los = sky(cfg.satellites)
    g = np.hstack([-los, np.ones((len(los), 1))])
    q = np.linalg.inv(g.T @ g)
    hdop = np.sqrt(q[0, 0] + q[1, 1])
    derived = cfg.pr_sigma_m * np.sqrt(2 * (1 - np.exp(-period_s / cfg.pr_tau_s))) * hdop
    assert derived == pytest.approx({0.2: 0.00321, 1.0: 0.00718}[period_s], rel=0.01)
    assert step_rms == pytest.approx(derived, rel=0.03)


def test_co_located_receivers_share_their_error() -> None:
    # Two receivers, same satellites: the shared pseudorange errors dominate (0.1746 m vs
    # 0.02 m receiver noise), so corr = 0.1746^2 / (0.1746^2 + 0.02^2) = 0.987 per axis and the
    # difference is sqrt(2) 0.02 / 0.176 = 16 % of each error.
    fast = GpsModel(gps_cfg(pr_tau_s=1e-6), 2, np.random.default_rng(7))
    errs = np.array([fast.step().copy() for _ in range(5000)])  # (T, 2, 3)
    for axis in (0, 1):
        rho = np.corrcoef(errs[:, 0, axis], errs[:, 1, axis])[0, 1]
        assert rho > 0.8
        assert rho == pytest.approx(0.1746**2 / (0.1746**2 + 0.02**2), abs=0.01)
    diff = np.std(errs[:, 0, :2] - errs[:, 1, :2])
    assert diff < 0.25 * np.std(errs[:, 0, :2])


def test_receivers_with_different_satellites_correlate_less() -> None:
    # min_satellites 6 of 13: each receiver solves with its own subset, the shared errors map
    # through different geometries, and the correlation falls below the same-sky 0.987.
    model = GpsModel(gps_cfg(pr_tau_s=1e-6, min_satellites=6), 8, np.random.default_rng(8))
    assert not (model.seen == model.seen[0]).all()
    errs = np.array([model.step().copy() for _ in range(3000)])
    rho = np.corrcoef(errs[:, :, 0].T)
    assert np.min(rho) < 0.95


def test_gps_min_satellites_is_validated() -> None:
    with pytest.raises(ConfigError, match="min_satellites"):
        GpsModel(gps_cfg(min_satellites=20), 1, np.random.default_rng(0))


# -- config -----------------------------------------------------------------------------------
def test_ideal_preset_switches_every_sensor_off() -> None:
    assert not SensorsConfig().active
    assert SensorsConfig(preset="qrsim").active


def test_a_sensor_override_replaces_only_its_keys() -> None:
    cfg = build(
        SensorsConfig, {"preset": "qrsim", "gps": {"pr_sigma_m": 3.0}}, "uav.sensors", "f.toml"
    )
    gps = cfg.resolved("gps")
    assert gps.pr_sigma_m == 3.0 and gps.period_s == 0.2 and gps.enabled
    # ideal plus one sensor switched on: only that sensor, with the qrsim parameters
    one = build(SensorsConfig, {"baro": {"enabled": True}}, "uav.sensors", "f.toml")
    assert one.active and one.resolved("baro").bias_tau_s == 300.0
    assert not one.resolved("gps").enabled


def test_bad_sensor_keys_are_one_line_errors() -> None:
    with pytest.raises(ConfigError, match="uav.sensors.preset"):
        build(SensorsConfig, {"preset": "perfect"}, "uav.sensors", "f.toml")
    with pytest.raises(ConfigError, match="uav.sensors.gps.pr_sigma_m"):
        build(SensorsConfig, {"gps": {"pr_sigma_m": -1.0}}, "uav.sensors", "f.toml")


# -- proximity --------------------------------------------------------------------------------
def test_proximity_sees_what_is_in_range_and_field_of_view() -> None:
    # Agent 0 at the origin facing east (yaw 0) with a 90 deg FOV and 10 m range: agent 1 5 m
    # east (seen, bearing 0), agent 2 5 m north (outside the FOV), agent 3 20 m east (out of
    # range); a box whose west face is 3 m east of agent 0 is seen at 3 m (slots in order of
    # target index: UAV 1, then the box, index 4 = N + 0).
    pos = np.array([[0, 0, 5], [5, 0, 5], [0, 5, 5], [20, 0, 5]], dtype=float)
    boxes = np.array([[4.0, 0.0, 5.0, 1.0, 1.0, 1.0]])
    cfg = ProximityConfig(
        enabled=True, period_s=0.1, range_m=10.0, fov_deg=90.0, range_sigma_m=0.0,
        bearing_sigma_rad=0.0, max_targets=3,
    )  # fmt: skip
    s = scan(pos, np.zeros(4), np.ones(4, bool), boxes, cfg, np.random.default_rng(0))
    assert s.target[0].tolist() == [1, 4, -1]
    assert s.range_m[0, :2].tolist() == [5.0, 3.0] and s.bearing_rad[0, 0] == 0.0
    d = s.dense(5)  # the same detections by target index
    assert d.detected[0].tolist() == [False, True, False, False, True]
    assert d.range_m[0, 1] == pytest.approx(5.0) and d.bearing_rad[0, 1] == pytest.approx(0.0)
    assert d.range_m[0, 4] == pytest.approx(3.0)
    # agent 1 looks east too: agent 0 is behind it; a dead agent is never seen
    alive = np.array([True, True, True, False])
    wide = dataclasses.replace(cfg, fov_deg=360.0)
    d = scan(pos, np.zeros(4), alive, boxes, wide, np.random.default_rng(0)).dense(5)
    assert d.detected[1, 0] and abs(d.bearing_rad[1, 0]) == pytest.approx(np.pi)
    assert not d.detected[:, 3].any() and not d.detected[3].any()


def every_pair(pos, yaws, alive, boxes, cfg) -> tuple[np.ndarray, ...]:
    """The reference model, dense over every (agent, target) pair without noise (the scan of
    skyswarm before its grid): (N, N + B) detected, range, bearing, elevation."""
    n = len(pos)
    c, h = boxes[:, None, :3], boxes[:, None, 3:6]
    d_box = np.clip(pos[None, :, :], c - h, c + h) - pos[None, :, :]  # (B, N, 3)
    rel = np.concatenate([pos[None, :, :] - pos[:, None, :], d_box.transpose(1, 0, 2)], axis=1)
    dist = np.linalg.norm(rel, axis=2)
    bearing = np.arctan2(rel[..., 1], rel[..., 0]) - yaws[:, None]
    bearing = (bearing + np.pi) % (2 * np.pi) - np.pi
    ok = (dist <= cfg.range_m) & (np.abs(bearing) <= np.radians(cfg.fov_deg) / 2 + 1e-12)
    ok[:, :n] &= alive[None, :]
    ok[np.arange(n), np.arange(n)] = False
    ok &= alive[:, None]
    elevation = np.arctan2(rel[..., 2], np.hypot(rel[..., 0], rel[..., 1]))
    return ok, dist, bearing, elevation


@pytest.mark.parametrize("seed", range(6))
def test_the_grid_scan_finds_exactly_the_pairs_of_every_pair(seed: int) -> None:
    # Random swarms of 2-80 UAVs in a 40 m box (0-6 m up), headings, 15 % dead, 0-3 boxes,
    # range 3-20 m, FOV 90/200/360 deg: with a slot for every target the grid scan's
    # detections, ranges, bearings and elevations are the dense reference's, bit for bit, and
    # so is the noise (drawn per pair, (N, M) for the range then the bearing, while every
    # target fits); with K = 3 slots each agent keeps the 3 nearest of the reference's
    # detections, in order of target index.
    rng = np.random.default_rng(seed)
    n, nb = int(rng.integers(2, 80)), int(rng.integers(0, 4))
    pos = np.c_[rng.uniform(-20, 20, (n, 2)), rng.uniform(0, 6, n)]
    yaws, alive = rng.uniform(-4, 4, n), rng.random(n) > 0.15
    boxes = np.c_[rng.uniform(-10, 10, (nb, 3)), rng.uniform(0.5, 3, (nb, 3))]
    cfg = ProximityConfig(
        enabled=True, period_s=0.1, range_m=float(rng.uniform(3, 20)),
        fov_deg=float(rng.choice([90.0, 200.0, 360.0])), range_sigma_m=0.0,
        bearing_sigma_rad=0.0, max_targets=n + nb,
    )  # fmt: skip
    ok, dist, bearing, elevation = every_pair(pos, yaws, alive, boxes, cfg)
    got = scan(pos, yaws, alive, boxes, cfg, np.random.default_rng(0)).dense(n + nb)
    assert ok.sum() > 0 and np.array_equal(got.detected, ok)
    for mine, ref in ((got.range_m, dist), (got.bearing_rad, bearing)):
        assert np.array_equal(mine[ok], ref[ok])
    assert np.array_equal(got.elevation_rad[ok], elevation[ok])
    noisy = dataclasses.replace(cfg, range_sigma_m=0.05, bearing_sigma_rad=0.02)
    z = np.random.default_rng(seed).standard_normal((2, n, n + nb))
    got = scan(pos, yaws, alive, boxes, noisy, np.random.default_rng(seed)).dense(n + nb)
    assert np.array_equal(got.range_m[ok], (dist + 0.05 * z[0])[ok])
    assert np.array_equal(got.bearing_rad[ok], (bearing + 0.02 * z[1])[ok])
    few = scan(pos, yaws, alive, boxes, dataclasses.replace(cfg, max_targets=3), rng)
    for i in range(n):
        seen = np.flatnonzero(ok[i])
        best = np.sort(seen[np.lexsort((seen, dist[i, seen]))][:3])
        assert few.target[i, : len(best)].tolist() == best.tolist()
        assert (few.target[i, len(best) :] == -1).all()
