"""What the autopilot logic asks of each vehicle, as arrays, written to the swarm in one call
per command level (uav/commands.py: `CommandInterface`).

The per-vehicle logic (modes, offboard, manual control) runs at the poll rate and writes one
row here (`set_*`); `apply` then groups the rows by level and hands each group to the swarm's
command interface as arrays: at most one call per level, whatever the number of vehicles.

    t = Targets(swarm, index=np.array([0, 1]))
    t.set_position(0, [0, 0, 5], yaw=0.0)
    t.apply(every=False)      # only rows changed since the last apply
"""

from __future__ import annotations

import numpy as np

from skyswarm.uav.swarm import Swarm

LEVELS = ("mission", "off", "position", "velocity", "velocity_yaw", "attitude", "rates")
MISSION, OFF, POSITION, VELOCITY, VELOCITY_YAW, ATTITUDE, RATES = range(len(LEVELS))


class Targets:
    """Targets of the vehicles of one swarm: row k is swarm agent `index[k]`. Units SI, world
    frame ENU, body FLU, angles rad, thrust N (collective)."""

    def __init__(self, swarm: Swarm, index: np.ndarray) -> None:
        n = len(index)
        self.swarm, self.index = swarm, np.asarray(index, dtype=np.intp)
        self.level = np.full(n, MISSION, dtype=np.intp)  # MISSION: the scenario's mission flies
        self.xyz = np.zeros((n, 3))  # m, position target
        self.yaw = np.zeros(n)  # rad ENU (position, velocity_yaw, attitude with yaw_hold)
        self.velocity = np.zeros((n, 3))  # m/s ENU
        self.yaw_rate = np.zeros(n)  # rad/s (velocity, attitude without yaw_hold, rates: r)
        self.roll_pitch = np.zeros((n, 2))  # rad, FLU
        self.yaw_hold = np.zeros(n, dtype=bool)  # attitude: hold `yaw` instead of a yaw rate
        self.rates = np.zeros((n, 3))  # rad/s body FLU
        self.thrust = np.zeros(n)  # N
        self.dirty = np.zeros(n, dtype=bool)

    def set_position(self, k: int, xyz, yaw: float) -> None:
        self.level[k], self.xyz[k], self.yaw[k], self.dirty[k] = POSITION, xyz, yaw, True

    def set_velocity(self, k: int, v, yaw_rate: float = 0.0) -> None:
        self.level[k], self.velocity[k], self.yaw_rate[k] = VELOCITY, v, yaw_rate
        self.dirty[k] = True

    def set_velocity_yaw(self, k: int, v, yaw: float) -> None:
        self.level[k], self.velocity[k], self.yaw[k] = VELOCITY_YAW, v, yaw
        self.dirty[k] = True

    def set_attitude(
        self, k: int, roll: float, pitch: float, thrust: float, yaw: float | None, rate: float
    ) -> None:
        self.level[k], self.roll_pitch[k], self.thrust[k] = ATTITUDE, (roll, pitch), thrust
        self.yaw_hold[k] = yaw is not None
        self.yaw[k] = 0.0 if yaw is None else yaw
        self.yaw_rate[k] = rate
        self.dirty[k] = True

    def set_rates(self, k: int, rates, thrust: float) -> None:
        self.level[k], self.rates[k], self.thrust[k] = RATES, rates, thrust
        self.dirty[k] = True

    def set_off(self, k: int) -> None:
        if self.level[k] != OFF:
            self.level[k], self.dirty[k] = OFF, True

    def release(self, k: int) -> None:
        """Row k's UAV goes back to the scenario's mission (nothing written for it)."""
        self.level[k] = MISSION

    def apply(self, every: bool) -> None:
        """Write the targets of changed rows (`every`: of every row not left to the mission)
        of live agents to the swarm: one command call per level."""
        rows = self.level != MISSION
        if not every:
            rows &= self.dirty
        rows &= self.swarm.alive[self.index]
        if not rows.any():
            return
        cmd = self.swarm.command
        for level in np.unique(self.level[rows]):
            k = np.flatnonzero(rows & (self.level == level))
            idx = self.index[k]
            if level == OFF:
                cmd.motors(idx, np.zeros((len(k), 4)))
            elif level == POSITION:
                cmd.position(idx, self.xyz[k], yaw=self.yaw[k])
            elif level == VELOCITY:
                cmd.velocity(idx, self.velocity[k], yaw_rate=self.yaw_rate[k])
            elif level == VELOCITY_YAW:
                cmd.velocity(idx, self.velocity[k], yaw=self.yaw[k])
            elif level == RATES:
                cmd.body_rates(idx, self.rates[k], self.thrust[k])
            else:
                self._attitude(k)
        self.dirty[:] = False

    def _attitude(self, k: np.ndarray) -> None:
        cmd = self.swarm.command
        hold = self.yaw_hold[k]
        for sel, yaw in ((hold, True), (~hold, False)):
            if sel.any():
                r = k[sel]
                cmd.attitude(
                    self.index[r],
                    self.roll_pitch[r, 0],
                    self.roll_pitch[r, 1],
                    self.thrust[r],
                    yaw_rate=None if yaw else self.yaw_rate[r],
                    yaw=self.yaw[r] if yaw else None,
                )
