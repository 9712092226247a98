"""USAL flight plans: the plan format (plan.py, loader.py), its geometry (geometry.py), the
sequencer (program.py), the per-UAV executor (executor.py) and the `flight_plan` mission
(mission.py)."""

from skyswarm.missions.flight_plan.mission import FlightPlan

MISSION = FlightPlan
__all__ = ["FlightPlan"]
