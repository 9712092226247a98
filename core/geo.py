"""Frames, heading conventions and the geographic origin.

Inside skyswarm: world frame ENU (x east, y north, z up), yaw counter-clockwise from east in
radians. Configs and the GUI speak compass headings in degrees (0 = north, 90 = east, clockwise).
`heading_to_yaw` / `yaw_to_heading` are the only place that conversion is written; `tilt_deg`
and `yaw_of` read tilt and yaw off (x, y, z, w) quaternions.

A scenario may anchor the local frame on the Earth with `[geo] origin = [lat, lon, alt]`
(degrees, degrees, metres above the WGS84 ellipsoid): positions then convert to WGS84 with
pymap3d's exact ENU <-> geodetic transforms (no hand-written geodesy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skyswarm.core.schema import ConfigError, param


@dataclass(frozen=True)
class GeoConfig:
    origin: tuple[float, ...] = param(
        (), "WGS84 latitude (deg), longitude (deg), altitude (m) of the ENU origin; [] for none"
    )

    def validate(self, path: str, file: str) -> None:
        if not self.origin:
            return
        lat, lon, _ = self.origin if len(self.origin) == 3 else (None, None, None)
        if lat is None or not on_globe(lat, lon):
            raise ConfigError(
                file,
                f"{path}.origin",
                list(self.origin),
                "[latitude -90..90, longitude -180..180, altitude m] or []",
            )


def on_globe(lat: float, lon: float) -> bool:
    """Whether (lat, lon) degrees is a place on the Earth: -90..90, -180..180 (NaN: no)."""
    return -90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0


def enu_to_wgs84(points: np.ndarray, origin: tuple[float, ...]) -> np.ndarray:
    """(N, 3) ENU positions (m) -> (N, 3) latitude (deg), longitude (deg), altitude (m)."""
    import pymap3d  # deferred: only runs that convert positions need it

    p = np.asarray(points, dtype=float).reshape(-1, 3)
    lat, lon, alt = pymap3d.enu2geodetic(p[:, 0], p[:, 1], p[:, 2], *origin)
    return np.column_stack([lat, lon, alt])


def wgs84_to_enu(points: np.ndarray, origin: tuple[float, ...]) -> np.ndarray:
    """(N, 3) latitude (deg), longitude (deg), altitude (m) -> (N, 3) ENU positions (m)."""
    import pymap3d

    g = np.asarray(points, dtype=float).reshape(-1, 3)
    e, n, u = pymap3d.geodetic2enu(g[:, 0], g[:, 1], g[:, 2], *origin)
    return np.column_stack([e, n, u])


def heading_to_yaw(heading_deg: float | np.ndarray) -> float | np.ndarray:
    """Compass heading (deg, clockwise from north) -> ENU yaw (rad, counter-clockwise from east),
    wrapped to (-pi, pi]."""
    if isinstance(heading_deg, float | int):
        # one Python number: the same IEEE operations as below (radians multiplies by the
        # same pi / 180, % is the same floored remainder), without building 0-d arrays
        yaw_s = math.radians(90.0 - heading_deg)
        return -((-yaw_s + math.pi) % (2 * math.pi) - math.pi)
    yaw = np.radians(90.0 - np.asarray(heading_deg, dtype=float))
    wrapped = -((-yaw + math.pi) % (2 * math.pi) - math.pi)
    return float(wrapped) if np.ndim(wrapped) == 0 else wrapped


def yaw_to_heading(yaw_rad: float | np.ndarray) -> float | np.ndarray:
    """ENU yaw (rad) -> compass heading (deg) in [0, 360)."""
    heading = (90.0 - np.degrees(np.asarray(yaw_rad, dtype=float))) % 360.0
    return float(heading) if np.ndim(heading) == 0 else heading


def wrap_angle(a: float | np.ndarray) -> float | np.ndarray:
    """Angle(s) in rad wrapped to [-pi, pi)."""
    return (np.asarray(a) + math.pi) % (2 * math.pi) - math.pi


def tilt_deg(quaternion: np.ndarray) -> np.ndarray:
    """Angle between body z and world z, degrees, of (..., 4) quaternions (x, y, z, w)."""
    x, y = quaternion[..., 0], quaternion[..., 1]
    cos_tilt = 1.0 - 2.0 * (x * x + y * y)  # world-z component of the body z axis
    return np.degrees(np.arccos(np.clip(cos_tilt, -1.0, 1.0)))


def yaw_of(quaternion: np.ndarray) -> float | np.ndarray:
    """ENU yaw (rad, in [-pi, pi], counter-clockwise from east) of the body x axis: a float for
    one (4,) quaternion (x, y, z, w), an (...,) array for (..., 4) quaternions."""
    if type(quaternion) is np.ndarray and quaternion.ndim == 1:
        x, y, z, w = quaternion.tolist()  # Python floats: the same products, no scalar boxing
        return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    if np.ndim(quaternion) == 1:
        x, y, z, w = quaternion
        return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    q = np.asarray(quaternion)
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
