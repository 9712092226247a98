"""Frames and heading conventions.

Inside skyswarm: world frame ENU (x east, y north, z up), yaw counter-clockwise from east in
radians. Configs and the GUI speak compass headings in degrees (0 = north, 90 = east, clockwise).
These two functions are the only place the conversion is written.
"""

from __future__ import annotations

import math

import numpy as np


def heading_to_yaw(heading_deg: float | np.ndarray) -> float | np.ndarray:
    """Compass heading (deg, clockwise from north) -> ENU yaw (rad, counter-clockwise from east),
    wrapped to (-pi, pi]."""
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
