"""trajectory.bin's bytes: plain records, or zstd frames of prediction residuals (codec 2).

Plain: the records as their stored dtype (float64 or float32 floats), appended sample by sample.

zstd (codec 2): each sample of each recording stream (an agent group of `[[results.groups]]`,
stream 0 the agents at `results.trajectory_hz`) is one zstd frame after an 8-byte little-endian
head `length << 16 | stream << 2 | order`. Its records are coded field by field as residuals
against a prediction from the same stream's previous `order` samples (0, 1 or 2; a sample with a
different number of records than the one before starts again at order 0):
- `tick`, `agent_id`: minus the previous sample's;
- `velocity`, `orientation`: minus 2 x previous - the one before (order 2) or previous (order 1);
- `position`: minus previous + (previous velocity + this velocity) / 2 x the stream's period.
Floats are predicted in float64, rounded to the stored float, and the residual is the difference
of their bit patterns as integers (wrapping): exact, whatever the prediction. Quantised records
(`results.trajectory_precision = "quantised"`) are integers, multiples of `QUANTUM`, predicted
the same way. Residuals are zigzag coded (small magnitudes -> small unsigned integers) and
byte-shuffled (byte k of every record, then byte k + 1, ...) before zstd. A killed run's file
decodes up to its last whole frame. Codec 1 (runs before per-group streams: each frame the
32-bit words minus the last frame's, head `length << 1 | delta`) is still read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: grid steps of `trajectory_precision = "quantised"`: position m, velocity m/s, orientation
#: (quaternion components): a value is stored as the nearest multiple, error <= step / 2.
QUANTUM = {"position": 2.0**-10, "velocity": 2.0**-10, "orientation": 2.0**-16}
CODEC = 2
_LIMIT = 2.0**62  # a quantised value saturates at +-_LIMIT steps; the codes lie beyond
NAN_CODE = -(2**63)  # quantised NaN, +inf and -inf (never a multiple: beyond _LIMIT)
POS_INF_CODE = 2**63 - 1
NEG_INF_CODE = -(2**63) + 1
LEVEL = 3  # zstd level: 9 is 1 % smaller and 3x slower, 19 is 3 % and 40x (bench/recording.py)
_ORDER_FIELDS = ("tick", "agent_id", "velocity", "orientation", "position")  # velocity first


def quantised_dtype(base: np.dtype) -> np.dtype:
    """`base` (TRAJECTORY_DTYPE) with every float field as int64 multiples of QUANTUM."""
    kind = {n: "<i8" if base[n].base.kind == "f" else base[n].base.str for n in base.names}
    return np.dtype([(n, kind[n], base[n].shape) for n in base.names])


class BinaryTrajectory:
    """Writes trajectory.bin; flushed to the OS every sample.

    `dtype` the stored records, `zstd` codec 2 frames, `periods_s` each stream's sample period
    (s; the position prediction's step), `quantised` floats as int64 multiples of QUANTUM:

        out = BinaryTrajectory(open("trajectory.bin", "wb"), dtype, True, (0.05, 0.5))
        out.write(records, stream=1)  # records of group 1 at one sample tick
    """

    def __init__(
        self,
        file: Any,
        dtype: np.dtype,
        zstd: bool = False,
        periods_s: tuple[float, ...] = (),
        quantised: bool = False,
    ) -> None:
        self._file = file
        self._dtype = dtype
        self._quantised = quantised
        self._periods = periods_s
        self._history: dict[int, list[np.ndarray]] = {}  # stream -> its last two samples
        self._zc = None
        if zstd:
            import zstandard

            self._zc = zstandard.ZstdCompressor(level=LEVEL)

    def write(self, records: np.ndarray, stream: int = 0) -> None:
        """Append one sample's `records` (TRAJECTORY_DTYPE) of `stream`."""
        if self._quantised:
            rec = quantise(records, self._dtype)
        else:
            rec = records if records.dtype == self._dtype else records.astype(self._dtype)
        if self._zc is None:
            self._file.write(rec.tobytes())
        else:
            hist = [h for h in self._history.get(stream, []) if len(h) == len(rec)]
            hist = hist if hist and len(self._history[stream][-1]) == len(rec) else []
            res = residuals(rec, hist, self._periods[stream])
            frame = self._zc.compress(shuffle(res))
            self._file.write((len(frame) << 16 | stream << 2 | len(hist)).to_bytes(8, "little"))
            self._file.write(frame)
            self._history[stream] = [*hist, rec][-2:]
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def quantise(records: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Records as `quantised_dtype`: each float the nearest multiple of its QUANTUM, within
    +-2^62 steps (beyond, the multiple saturates there: 4.5e15 m at the position's step); NaN,
    +inf and -inf stored as the codes `NAN_CODE`, `POS_INF_CODE`, `NEG_INF_CODE`."""
    out = np.empty(len(records), dtype=dtype)
    for name in dtype.names:
        q = QUANTUM.get(name)
        if q is None:
            out[name] = records[name]
            continue
        steps = np.rint(records[name] / q)
        if -_LIMIT <= steps.min() and steps.max() <= _LIMIT:  # False with a NaN: min, max are NaN
            out[name] = steps
            continue
        finite = np.isfinite(steps)
        ints = np.where(finite, np.rint(np.clip(np.nan_to_num(steps), -_LIMIT, _LIMIT)), 0.0)
        ints = ints.astype(np.int64)
        ints[np.isnan(steps)] = NAN_CODE
        ints[steps == np.inf] = POS_INF_CODE
        ints[steps == -np.inf] = NEG_INF_CODE
        out[name] = ints
    return out


def dequantise(records: np.ndarray, target: np.dtype) -> np.ndarray:
    """Quantised records back as `target` (TRAJECTORY_DTYPE) floats, value = integer x QUANTUM
    (the codes of NaN and of the infinities back as those)."""
    out = np.empty(len(records), dtype=target)
    for name in target.names:
        q = QUANTUM.get(name)
        if q is None:
            out[name] = records[name]
            continue
        ints = records[name]
        values = ints * q
        odd = np.abs(ints) > _LIMIT  # only the codes lie beyond the saturated multiples
        if odd.any():
            values[ints == NAN_CODE] = np.nan
            values[ints == POS_INF_CODE] = np.inf
            values[ints == NEG_INF_CODE] = -np.inf
        out[name] = values
    return out


def _uint(dtype: np.dtype) -> np.dtype:
    """The record layout with every field as the unsigned integer of its width."""
    return np.dtype([(n, f"<u{dtype[n].base.itemsize}", dtype[n].shape) for n in dtype.names])


def _prediction(name: str, hist: list[np.ndarray], cur: np.ndarray, period_s: float) -> Any:
    """The prediction of field `name` from the stream's previous samples `hist` (oldest first)
    and the fields of `cur` already known (velocity, for position)."""
    one = hist[-1][name]
    kind = one.dtype.kind
    if name in ("tick", "agent_id"):
        return one
    if name == "position":
        v = hist[-1]["velocity"].astype(np.float64) + cur["velocity"]
        step = period_s * 0.5 / (QUANTUM["position"] / QUANTUM["velocity"] if kind == "i" else 1)
        pred = one + v * step
    elif len(hist) == 2:
        pred = 2.0 * one.astype(np.float64) - hist[0][name]
    else:
        return one
    if kind == "i":
        return np.rint(np.clip(np.nan_to_num(pred), -(2.0**62), 2.0**62)).astype(one.dtype)
    pred = np.where(np.isfinite(pred), pred, 0.0)  # never a platform's own NaN bits
    return pred.astype(one.dtype)


def residuals(
    rec: np.ndarray, hist: list[np.ndarray], period_s: float, stored: np.dtype | None = None
) -> Any:
    """Encode (`stored` None): the zigzag residuals of `rec` (stored records) as `_uint` records.
    Decode: `rec` residuals -> the `stored` records, field by field in _ORDER_FIELDS."""
    encode = stored is None
    out = np.empty(len(rec), dtype=_uint(rec.dtype) if stored is None else stored)
    cur = rec if encode else out
    for name in _ORDER_FIELDS:
        width = out.dtype[name].base.itemsize * 8
        signed = np.dtype(f"<i{width // 8}")
        if encode:
            base = np.zeros_like(rec[name]) if not hist else _prediction(name, hist, cur, period_s)
            d = rec[name].view(signed) - base.view(signed)  # wraps: undone exactly
            out[name] = ((d << 1) ^ (d >> (width - 1))).view(out.dtype[name].base)
        else:
            u = rec[name]
            d = (u >> 1).view(signed) ^ -(u & 1).view(signed)
            base = np.zeros_like(d) if not hist else _prediction(name, hist, cur, period_s)
            out[name] = (d + base.view(signed)).view(out.dtype[name].base)
    return out


def shuffle(res: np.ndarray) -> bytes:
    return res.view(np.uint8).reshape(len(res), -1).T.tobytes()


def decode(raw: bytes, stored: np.dtype, periods_s: tuple[float, ...]) -> list[np.ndarray]:
    """The samples of a codec 2 trajectory.bin as `stored` records, up to its last whole frame."""
    import zstandard

    dz = zstandard.ZstdDecompressor()
    out: list[np.ndarray] = []
    history: dict[int, list[np.ndarray]] = {}
    at, size = 0, stored.itemsize
    while at + 8 <= len(raw):
        head = int.from_bytes(raw[at : at + 8], "little")
        length, stream, order = head >> 16, (head >> 2) & 0x3FFF, head & 3
        if at + 8 + length > len(raw):
            break  # a torn last sample: what came before it stands
        block = np.frombuffer(dz.decompress(raw[at + 8 : at + 8 + length]), dtype=np.uint8)
        res = np.ascontiguousarray(block.reshape(size, -1).T).view(_uint(stored)).ravel()
        hist = history.get(stream, [])[-order:] if order else []
        rec = residuals(res, hist, periods_s[stream], stored)
        history[stream] = [*hist, rec][-2:]
        out.append(rec)
        at += 8 + length
    return out


def decode_v1(raw: bytes, itemsize: int) -> bytes:
    """The records of a codec 1 zstd trajectory.bin, up to its last whole sample."""
    import zstandard

    dz = zstandard.ZstdDecompressor()
    out, at, prev = [], 0, np.zeros((0, 0), dtype=np.uint32)
    while at + 8 <= len(raw):
        head = int.from_bytes(raw[at : at + 8], "little")
        size, delta = head >> 1, head & 1
        if at + 8 + size > len(raw):
            break
        block = np.frombuffer(dz.decompress(raw[at + 8 : at + 8 + size]), dtype=np.uint8)
        words = np.ascontiguousarray(block.reshape(itemsize, -1).T).view(np.uint32)
        prev = words + prev if delta else words  # modulo 2^32, as written
        out.append(prev.tobytes())
        at += 8 + size
    return b"".join(out)
