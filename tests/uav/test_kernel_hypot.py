"""The flight kernel's inlined hypot (uav/kernel_math.py `hypot`) gives math.hypot's bits: its
common case is glibc's (2.35 on) written out, the rest calls the library. Checked on millions
of pairs spanning both branches of the correction, every scale from subnormal to huge, zeros,
signed zeros, infinities and NaNs, against numba's math.hypot: the C library's call, which the
kernel made before. (Not against Python's math.hypot, CPython's own algorithm since 3.10, which
differs from glibc's in the last bit now and then.)"""

from __future__ import annotations

import math
import platform

import numba
import numpy as np
import pytest

from skyswarm.uav.kernel_math import hypot as _hypot


def _glibc_at_least(major: int, minor: int) -> bool:
    name, version = platform.libc_ver()
    if name != "glibc" or not version:
        return False
    got = tuple(int(p) for p in version.split(".")[:2])
    return got >= (major, minor)


pytestmark = pytest.mark.skipif(
    not (_glibc_at_least(2, 35) and platform.machine() == "x86_64"),
    reason="_hypot writes out glibc 2.35's hypot (x86-64); other libraries round otherwise",
)


@numba.njit(error_model="numpy", nogil=True)
def _inlined(a, b, out):  # pragma: no cover - compiled
    for i in range(a.size):
        out[i] = _hypot(a[i], b[i])


@numba.njit(error_model="numpy", nogil=True)
def _library(a, b, out):  # pragma: no cover - compiled
    for i in range(a.size):
        out[i] = math.hypot(a[i], b[i])


def _pairs(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    if kind == "normal":  # both branches: h <= 2 ay and h > 2 ay
        return rng.normal(size=n), rng.normal(size=n)
    if kind == "close":  # ax ~ ay: the h <= 2 ay branch
        a = rng.normal(size=n)
        return a, a * (1.0 + rng.normal(size=n) * 1e-3)
    if kind == "half":  # ay ~ ax / 2: around the branch test
        a = rng.normal(size=n)
        return a, a * 0.5 * (1.0 + rng.normal(size=n) * 1e-9)
    if kind == "scales":  # every exponent, subnormal to huge: the library's scaled cases too
        e = rng.integers(-1074, 1024, (2, n))
        return np.ldexp(rng.uniform(1, 2, n), e[0]), np.ldexp(rng.uniform(1, 2, n), e[1])
    if kind == "kernel":  # the ranges the kernel feeds it: m/s, m/s^2, one apart by 1e-12
        a = rng.normal(size=n) * 10.0 ** rng.uniform(-12, 3, n)
        return a, rng.normal(size=n) * 10.0 ** rng.uniform(-12, 3, n)
    a, b = rng.normal(size=n), rng.normal(size=n)  # "special"
    a[::7], b[::11], a[::13], b[::17], a[::19], b[::23] = 0.0, np.inf, np.nan, -0.0, -np.inf, 0.0
    return a, b


@pytest.mark.parametrize("kind", ["normal", "close", "half", "scales", "kernel", "special"])
def test_inlined_hypot_is_the_library_s_to_the_bit(kind):
    rng = np.random.default_rng(31)
    a, b = _pairs(kind, 1_000_000, rng)
    got, ref = np.empty(len(a)), np.empty(len(a))
    _inlined(a, b, got)
    _library(a, b, ref)
    same = (got.view(np.int64) == ref.view(np.int64)) | (np.isnan(got) & np.isnan(ref))
    assert same.all(), (a[~same][:5], b[~same][:5], got[~same][:5], ref[~same][:5])


def test_hand_computed_values():
    """3-4-5 and friends, exact in binary: what any hypot must give."""
    out = np.empty(4)
    _inlined(np.array([3.0, -5.0, 0.0, 1e-300]), np.array([4.0, 12.0, -2.5, 0.0]), out)
    assert out.tolist() == [5.0, 13.0, 2.5, 1e-300]
