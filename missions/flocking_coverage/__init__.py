"""Flocking area coverage, the reference case study: a leader-followers flock of camera UAVs
sweeps one or more areas and reports what it saw to a base station.

The package holds the mission (`mission.py`), the members' behaviour (`flock.py`), the leader's
plan (`leader.py`), split-flock partitioning (`partition.py`), the messages on the air
(`messages.py`) and metrics and views (`report.py`); the area geometry is shared with other
missions in `skyswarm.missions.coverage`.
"""

from skyswarm.missions.flocking_coverage.mission import FlockingCoverage

__all__ = ["FlockingCoverage"]
