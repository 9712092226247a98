"""Frames, heading conventions and the geographic origin.

Inside skyswarm: world frame ENU (x east, y north, z up), yaw counter-clockwise from east in
radians. Configs and the GUI speak compass headings in degrees (0 = north, 90 = east, clockwise).
`heading_to_yaw` / `yaw_to_heading` are the only place that conversion is written; `tilt_deg`
and `yaw_of` read tilt and yaw off (x, y, z, w) quaternions.

A scenario may anchor the local frame on the Earth with `[geo] origin = [lat, lon, alt]`
(degrees, degrees, metres above the WGS84 ellipsoid). The world stays flat, as PX4's local
frame (its local z is altitude: alt = ref_alt - z_ned): a world point (e, n, z) is at the
latitude and longitude of the point (e, n, 0) of the tangent plane at the origin (pymap3d's
`enu2geodetic(e, n, 0)`; horizontally PX4 has its own projection, MapProjection) and at the
altitude `origin alt + z` exactly. Mapping it as a 3-D point of that plane instead
(`enu2geodetic(e, n, z)`) would put z = 10 m at 7.5 km from the origin 14.4 m above it, as the
Earth curves away from the plane by d^2 / 2R: a MAVLink target "10 m above home" there would
be flown 4.4 m low. `wgs84_to_enu` is the exact inverse (a round trip within 1e-7 m at 20 km);
pymap3d does the geodesy (none is hand-written here).
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
    """(N, 3) ENU positions (m) -> (N, 3) latitude (deg), longitude (deg), altitude (m).

    The flat world's mapping (module docstring): latitude and longitude of the tangent-plane
    point (e, n, 0), altitude `origin[2] + z` exactly."""
    import pymap3d  # deferred: only runs that convert positions need it

    p = np.asarray(points, dtype=float).reshape(-1, 3)
    lat, lon, _ = pymap3d.enu2geodetic(p[:, 0], p[:, 1], np.zeros(len(p)), *origin)
    return np.column_stack([lat, lon, origin[2] + p[:, 2]])


def wgs84_to_enu(points: np.ndarray, origin: tuple[float, ...]) -> np.ndarray:
    """(N, 3) latitude (deg), longitude (deg), altitude (m) -> (N, 3) ENU positions (m): the
    exact inverse of `enu_to_wgs84`. A place 90 degrees or more of arc from the origin, which
    no point of the plane maps to, gives NaN.

    (e, n) is where the ellipsoid normal through (lat, lon) crosses the tangent plane u = 0.
    ECEF, hence ENU, is affine in the height along that normal, so geodetic2enu at two heights
    gives the crossing exactly (no iteration)."""
    import pymap3d

    g = np.asarray(points, dtype=float).reshape(-1, 3)
    h0 = np.full(len(g), float(origin[2]))
    e0, n0, u0 = pymap3d.geodetic2enu(g[:, 0], g[:, 1], h0, *origin)
    e1, n1, u1 = pymap3d.geodetic2enu(g[:, 0], g[:, 1], h0 + 1.0, *origin)
    rise = np.asarray(u1 - u0)  # cosine of the angle between the normal and the plane's up
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(rise > 0.0, -np.asarray(u0) / rise, np.nan)  # m along the normal to u = 0
    return np.column_stack([e0 + s * (e1 - e0), n0 + s * (n1 - n0), g[:, 2] - origin[2]])


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
