"""Sensor models of a swarm (QRSim's), vectorised over agents, and their registry.

Each model is one module registering one `Sensor` (base.py); the built-ins register on import,
in this order (the order of the config reference and of the start-state draws): gps, baro,
imu, attitude, compass, proximity, lidar, rangefinder, camera. `SensorsConfig` (config.py) is the
[uav.sensors] table.
"""

from skyswarm.uav.sensors.base import (
    FEEDS,
    Sensor,
    Setting,
    Truth,
    register_sensor,
    registered_sensors,
    sampling_order,
    ticks_of,
    unregister_sensor,
)

# The built-ins register as they are imported: this order is the registry's (and the order of
# their start-state draws), so it is kept out of import sorting.
# isort: off
from skyswarm.uav.sensors.gps import GpsConfig, GpsModel
from skyswarm.uav.sensors.baro import BaroConfig
from skyswarm.uav.sensors.imu import ImuConfig
from skyswarm.uav.sensors.attitude import AttitudeConfig
from skyswarm.uav.sensors.compass import CompassConfig
from skyswarm.uav.sensors.proximity import ProximityConfig, Scan, scan
from skyswarm.uav.sensors.lidar import LidarConfig
from skyswarm.uav.sensors.camera import CameraConfig

# isort: on
from skyswarm.uav.sensors.config import SensorsConfig
from skyswarm.uav.sensors.noise import GaussMarkov, RandomWalk

__all__ = [
    "FEEDS",
    "AttitudeConfig",
    "BaroConfig",
    "CameraConfig",
    "CompassConfig",
    "GaussMarkov",
    "GpsConfig",
    "GpsModel",
    "ImuConfig",
    "LidarConfig",
    "ProximityConfig",
    "RandomWalk",
    "Scan",
    "Sensor",
    "SensorsConfig",
    "Setting",
    "Truth",
    "register_sensor",
    "registered_sensors",
    "sampling_order",
    "scan",
    "ticks_of",
    "unregister_sensor",
]
