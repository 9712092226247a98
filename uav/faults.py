"""Quadrotor faults: the random fault processes of a UAV and their rates.

The kernel's fault injector (core/faults.py) draws when faults strike from the rates each agent
reports (`UavAgent.fault_rates`); the UAV says which part fails (`fault_detail`: a propeller
failure picks one of the motors) and plays the fault out in the physical mode (`apply_fault`:
the motor stops; a software failure or an empty battery cuts every motor). Rates are set per
scenario in the `[uav.fault_rates]` table; the battery is `[uav.battery]` (uav/battery.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from skyswarm.core.schema import param

PROPELLER = "propeller failure"  # one motor stops for good ("motor K")
SOFTWARE = "software failure"  # the flight controller crashes: every motor stops


@dataclass(frozen=True)
class FaultRates:
    """Rates of a UAV's random fault processes, per flight hour (exponential times)."""

    propeller_failure: float = param(0.0, "propeller breaks, per UAV and flight hour", ge=0.0)
    software_failure: float = param(0.0, "flight software crashes, per UAV and flight hour", ge=0.0)

    def by_kind(self) -> dict[str, float]:
        """Fault kind -> rate per hour, in the order the injector draws them."""
        return {PROPELLER: self.propeller_failure, SOFTWARE: self.software_failure}
