"""Array logs: fixed-shape numpy arrays appended sample by sample to a results directory, for what
does not fit a CSV row (a lidar scan, camera images).

A log NAME is two files in `<results>/arrays/`: NAME.json, the header (format version, the
fields' dtypes and shapes, the constants, e.g. the beam directions or the camera matrix), and
NAME.bin, the records back to back, each the bytes of one numpy structured record: `tick`
(int64), `time_s` (float64), then every field (little-endian). A record is written whole at
each append (the file is opened, written and closed), so a run cut short leaves every sample
appended before the cut; a half-written tail is ignored when read.

    log = ArrayLog(results_dir / "arrays", "lidar", {"ranges": np.zeros((6, 32), np.float32)},
                   constants={"ids": np.arange(6)})
    log.append(400, 1.0, {"ranges": scan})           # (6, 32) float32
    data = read_array_log(results_dir, "lidar")       # {"tick": (K,), "time_s": (K,),
                                                     #  "ranges": (K, 6, 32), "ids": (6,)}
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from skyswarm.core.limits import loads_json
from skyswarm.core.schema import ConfigError

FORMAT = 1  # the header's "format": bump when the layout changes
FOLDER = "arrays"  # inside a results directory


def _record_dtype(fields: dict[str, tuple[str, tuple[int, ...]]]) -> np.dtype:
    """The structured dtype of one record: tick, time_s, then `fields` (name -> dtype, shape)."""
    spec = [("tick", "<i8"), ("time_s", "<f8")]
    spec += [
        (name, np.dtype(dt).newbyteorder("<"), tuple(shape)) for name, (dt, shape) in fields.items()
    ]
    return np.dtype(spec)


class ArrayLog:
    """An append-only log of named fixed-shape arrays (see the module docstring). `fields` gives
    each field's dtype and shape by example (an array of the right dtype and shape); every
    `append` must pass arrays that cast to them. `constants` (small arrays) go in the header."""

    def __init__(
        self,
        folder: Path,
        name: str,
        fields: dict[str, np.ndarray],
        constants: dict[str, np.ndarray] | None = None,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{name}.bin"
        spec = {k: (np.asarray(v).dtype.str, np.asarray(v).shape) for k, v in fields.items()}
        self.dtype = _record_dtype(spec)
        header = {
            "format": FORMAT,
            "fields": {k: [dt, list(shape)] for k, (dt, shape) in spec.items()},
            "constants": {k: np.asarray(v).tolist() for k, v in (constants or {}).items()},
        }
        (folder / f"{name}.json").write_text(json.dumps(header), encoding="utf-8")
        self.path.write_bytes(b"")
        self._record = np.zeros(1, self.dtype)

    def append(self, tick: int, time_s: float, arrays: dict[str, np.ndarray]) -> None:
        """Write one record: `arrays` holds every field (name -> array of its shape)."""
        rec = self._record
        rec["tick"], rec["time_s"] = tick, time_s
        for name in self.dtype.names[2:]:
            rec[name][0] = arrays[name]
        with open(self.path, "ab") as f:
            f.write(rec.tobytes())


def array_log_names(results_dir: str | Path) -> list[str]:
    """The array logs of a results directory, sorted (none: [])."""
    folder = Path(results_dir) / FOLDER
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def read_array_log(results_dir: str | Path, name: str) -> dict[str, np.ndarray]:
    """Log `name` of a results directory: "tick" (K,) int64, "time_s" (K,) float64, each field
    (K, *shape) in its dtype, and each constant as an array; K the records written whole.

        scans = read_array_log("results/obstacle_field", "lidar")
        nearest = np.nanmin(scans["ranges"], axis=2)  # (K, N) m

    A missing log or a header of another format is a `ConfigError` naming the file."""
    folder = Path(results_dir) / FOLDER
    head = folder / f"{name}.json"
    if not head.is_file():
        have = ", ".join(array_log_names(results_dir)) or "none"
        raise ConfigError(str(head), "arrays", name, f"a recorded array log (this run has: {have})")
    header = loads_json(head.read_text(encoding="utf-8"), str(head))
    if header.get("format") != FORMAT:
        raise ConfigError(str(head), "format", header.get("format"), f"array log format {FORMAT}")
    dtype = _record_dtype({k: (dt, tuple(shape)) for k, (dt, shape) in header["fields"].items()})
    raw = (folder / f"{name}.bin").read_bytes()
    whole = len(raw) // dtype.itemsize
    records = np.frombuffer(raw, dtype=dtype, count=whole)
    out = {field: np.array(records[field]) for field in dtype.names}
    out.update({k: np.asarray(v) for k, v in header["constants"].items()})
    return out
