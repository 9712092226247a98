"""Codec 2 of zstd trajectories (core/trajectory_codec.py): bit-identical round trips for float64
and float32 records whatever they hold (NaN, inf, deaths, several streams), the quantised mode
within half a step of every value, and codec 1 files still read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from skyswarm.core.recorder import TRAJECTORY_DTYPE, read_trajectory, stored_dtype
from skyswarm.core.trajectory_codec import QUANTUM, BinaryTrajectory, decode, dequantise


class _Kept(io.BytesIO):
    def close(self) -> None:  # the bytes stay readable after the writer closes
        pass


def _samples(rng: np.random.Generator, n: int, count: int) -> list[np.ndarray]:
    """`count` samples of `n` agents flying smooth curves, every third losing its last agent."""
    out = []
    for k in range(count):
        m = n - k // 3
        rec = np.zeros(m, dtype=TRAJECTORY_DTYPE)
        rec["tick"] = 20 * k
        rec["agent_id"] = np.arange(1, m + 1)
        t = 0.05 * k
        phase = np.arange(m)[:, None] * 0.1
        rec["position"] = 100.0 * np.sin(0.2 * t + phase + [0.0, 1.0, 2.0])
        rec["velocity"] = 20.0 * np.cos(0.2 * t + phase + [0.0, 1.0, 2.0])
        rec["orientation"] = rng.normal(size=(m, 4))
        out.append(rec)
    return out


def _write(samples: list[tuple[int, np.ndarray]], dtype: np.dtype, quantised: bool) -> bytes:
    f = _Kept()
    out = BinaryTrajectory(f, dtype, True, (0.05, 0.25), quantised)
    for stream, rec in samples:
        out.write(rec, stream)
    out.close()
    return f.getvalue()


@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_round_trip_is_bit_identical(precision: str) -> None:
    rng = np.random.default_rng(3)
    a, b = _samples(rng, 50, 12), _samples(rng, 7, 12)
    a[4]["position"][0] = [np.nan, np.inf, -np.inf]  # odd values still round-trip exactly
    a[5]["velocity"][1] = [1e38, -0.0, 5e-324]
    stored = stored_dtype(precision)
    written = [(0, r) for r in a[:4]] + [(s, r) for p in zip(a[4:], b) for s, r in enumerate(p)]
    raw = _write(written, stored, False)
    got = decode(raw, stored, (0.05, 0.25))
    assert len(got) == len(written)
    for g, (_, rec) in zip(got, written):
        assert g.tobytes() == rec.astype(stored).tobytes()  # bit for bit, NaN payloads too
    cut = decode(raw[: len(raw) - 5], stored, (0.05, 0.25))  # a killed run's torn last frame
    assert len(cut) == len(written) - 1


def test_prediction_makes_smooth_flight_small() -> None:
    """Smooth float32 flight: the residuals compress to well under half the raw records (a
    prediction from the previous samples, not their raw bits)."""
    rng = np.random.default_rng(4)
    samples = _samples(rng, 400, 30)
    for rec in samples:
        rec["orientation"] = [0.0, 0.0, 0.0, 1.0]
    stored = stored_dtype("float32")
    raw = _write([(0, r) for r in samples], stored, False)
    records = sum(len(r) for r in samples)
    assert len(raw) < 0.4 * records * stored.itemsize, len(raw) / (records * stored.itemsize)


def test_quantised_values_are_within_half_a_step() -> None:
    """Each float is the nearest multiple of its step: at q/2 - 2^-30 q the error is just
    under q/2, on a multiple it is zero, and never more than q/2."""
    rng = np.random.default_rng(5)
    samples = _samples(rng, 30, 6)
    for rec in samples:
        for name, q in QUANTUM.items():
            rec[name][:3] = np.arange(3)[:, None] * q  # exact multiples
            rec[name][3:6] = (np.arange(3)[:, None] + 0.5 - 2.0**-30) * q  # the edge, below
    stored = stored_dtype("quantised")
    raw = _write([(0, r) for r in samples], stored, True)
    got = [dequantise(g, TRAJECTORY_DTYPE) for g in decode(raw, stored, (0.05,))]
    for g, rec in zip(got, samples):
        assert (g["tick"] == rec["tick"]).all() and (g["agent_id"] == rec["agent_id"]).all()
        for name, q in QUANTUM.items():
            err = np.abs(g[name] - rec[name])
            assert (err <= q / 2).all(), name
            assert (err[:3] == 0.0).all()
            np.testing.assert_allclose(err[3:6], q / 2 - 2.0**-30 * q, rtol=1e-6)


def test_quantised_keeps_nan_and_infinities_and_saturates_far_values() -> None:
    """NaN and +-inf come back as themselves (they used to come back as -9.0e15: an integer
    cast of NaN), a value beyond 2^62 steps as the last multiple of its sign, through the
    whole coding (prediction from samples holding the codes included)."""
    samples = _samples(np.random.default_rng(7), 10, 5)
    samples[1]["position"][0] = [np.nan, np.inf, -np.inf]
    samples[2]["position"][0] = [np.nan, np.inf, -np.inf]  # predicted from the codes
    samples[2]["velocity"][3] = [1e300, -1e300, 2.0**52]
    samples[3]["orientation"][2] = [np.inf, np.nan, -np.inf, 0.5]
    stored = stored_dtype("quantised")
    raw = _write([(0, r) for r in samples], stored, True)
    got = [dequantise(g, TRAJECTORY_DTYPE) for g in decode(raw, stored, (0.05,))]
    for k in (1, 2):
        p = got[k]["position"][0]
        assert np.isnan(p[0]) and p[1] == np.inf and p[2] == -np.inf
    q = QUANTUM["velocity"]
    assert got[2]["velocity"][3].tolist() == [2.0**62 * q, -(2.0**62) * q, 2.0**52]
    o = got[3]["orientation"][2]
    assert o[0] == np.inf and np.isnan(o[1]) and o[2] == -np.inf and o[3] == 0.5
    for g, rec in zip(got, samples):  # every other value within half a step, as before
        for name, q in QUANTUM.items():
            ok = np.isfinite(rec[name]) & (np.abs(rec[name]) < 2.0**61 * q)
            assert (np.abs(g[name][ok] - rec[name][ok]) <= q / 2).all(), name


def _v1_file(records: list[np.ndarray]) -> bytes:
    """A codec 1 trajectory.bin (runs before codec 2), written as its docstring says."""
    import zstandard

    zc, out, prev = zstandard.ZstdCompressor(), b"", None
    for rec in records:
        words = np.ascontiguousarray(rec).view(np.uint32).reshape(len(rec), -1)
        delta = prev is not None and prev.shape == words.shape
        data = words - prev if delta else words
        frame = zc.compress(data.view(np.uint8).reshape(len(rec), -1).T.tobytes())
        out += (len(frame) << 1 | delta).to_bytes(8, "little") + frame
        prev = words
    return out


def test_codec_1_files_still_read(tmp_path: Path) -> None:
    samples = _samples(np.random.default_rng(6), 20, 5)
    stored = stored_dtype("float32")
    (tmp_path / "trajectory.bin").write_bytes(_v1_file([r.astype(stored) for r in samples]))
    header = {
        "dtype": [[n, stored[n].base.str, list(stored[n].shape)] for n in stored.names],
        "compression": "zstd",
        "tick_s": 0.0025,
        "sample_every_ticks": 20,
        "agents": [],
    }
    (tmp_path / "trajectory.json").write_text(json.dumps(header), encoding="utf-8")
    got = read_trajectory(tmp_path)
    want = np.concatenate(samples).astype(stored).astype(TRAJECTORY_DTYPE)
    assert got.tobytes() == want.tobytes()
