"""UAV agents: thin handles (an index into a `Swarm`) that read and write its arrays.

`UavAgent` is flown by external commands (Manual and Attitude modes, e.g. a joystick);
`AutonomousUavAgent` by ground speed, vertical speed or altitude, heading and position, with
take-off, landing and position hold. A command in a new mode switches bumplessly; the values it
passes then replace the setpoints the switch initialised.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from skyswarm.core.agent import PhysicalAgent
from skyswarm.core.geo import heading_to_yaw, tilt_deg, yaw_of, yaw_to_heading
from skyswarm.uav import control as ctl
from skyswarm.uav.battery import EXHAUSTED
from skyswarm.uav.faults import PROPELLER, SOFTWARE

if TYPE_CHECKING:
    from skyswarm.core.simulator import Simulator
    from skyswarm.uav.swarm import Swarm


class UavAgent(PhysicalAgent):
    """A quadrotor commanded by stick (Manual) or by attitude (Attitude). Fault-capable
    (core.hooks.FaultCapable): random faults strike it at its swarm's `fault_rates`.

    A swarm builds one per UAV, of the class it is given (`Swarm.from_scenario(sim, scenario,
    MyUav)`, as a mission's `setup()` does). Here one UAV of two leans 10 degrees nose-down at
    the thrust that holds its height, and flies forward (east: it faces east), while the other
    holds its spot:

        import numpy as np

        from skyswarm import Simulator, Swarm, UavAgent, load_scenario


        class Leaner(UavAgent):
            def lean(self, pitch_deg: float) -> None:
                pitch = np.radians(pitch_deg)
                weight = self.swarm.config.airframe.mass_kg * self.swarm.g  # N
                self.command_attitude(0.0, pitch, self.euler[2], weight / np.cos(pitch))


        scenario = load_scenario("hover", ["agents.count=2", "agents.heading_deg=90"])
        sim = Simulator(scenario.simulation, scenario.world, scenario.base_dir)  # no mission
        swarm = Swarm.from_scenario(sim, scenario, Leaner, hovering=True, altitude_m=5.0)
        swarm.agents[0].lean(10.0)
        sim.run(until_s=1.0)
        print([uav.mode_name() for uav in swarm.agents])  # ['Attitude', 'Position']
        print(swarm.agents[0].velocity.round(1))  # [1.4 0.  0. ] m/s: east
        print(round(swarm.agents[0].altitude, 1))  # 5.0 m
        sim.close()
    """

    role = "uav"
    crashable = True  # collisions and hard ground contact kill it (core.collisions)

    def __init__(self, sim: Simulator, agent_id: int, slot: int, swarm: Swarm, index: int) -> None:
        self.swarm, self.index = swarm, int(index)
        super().__init__(sim, agent_id, slot)

    # -- state ----------------------------------------------------------------------------
    @property
    def mode(self) -> ctl.ControlMode:
        return self.swarm.mode_of(self.index)

    def mode_name(self) -> str:
        return self.mode.name

    def mode_row(self) -> tuple[Swarm, int]:
        """Its swarm (a `core.hooks.ModeSource`) and its row there."""
        return self.swarm, self.index

    def estimate_row(self) -> tuple[Swarm, int]:
        """Its swarm (a `core.hooks.EstimateSource`) and its row there."""
        return self.swarm, self.index

    @property
    def euler(self) -> np.ndarray:
        """(3,) roll, pitch, yaw in rad (yaw ENU)."""
        m, _ = self.swarm.measure()
        return m.euler[self.index]

    @property
    def tilt_deg(self) -> float:
        """Angle between body z and world z, degrees."""
        return float(tilt_deg(self.orientation))

    @property
    def heading_deg(self) -> float:
        """Compass heading, degrees (0 = north, 90 = east)."""
        return float(yaw_to_heading(self.euler[2]))

    @property
    def altitude(self) -> float:
        """Height of the centre of mass above z = 0, m."""
        return float(self.position[2])

    # -- what the UAV knows of itself: its estimate ([uav.sensors]), the truth without sensors
    def _estimate(self) -> object | None:
        s = self.swarm.sensors
        return s if s is not None and s.drives_control else None

    @property
    def sensed_position(self) -> np.ndarray:
        """(3,) m: the estimated position (the true one with `ideal` sensors)."""
        s = self._estimate()
        return self.position if s is None else s.position[self.index]

    @property
    def sensed_velocity(self) -> np.ndarray:
        """(3,) m/s, world frame: the estimated velocity (the truth with `ideal` sensors)."""
        s = self._estimate()
        return self.velocity if s is None else s.velocity[self.index]

    @property
    def sensed_yaw(self) -> float:
        """ENU yaw, rad: the estimated heading (the truth with `ideal` sensors)."""
        s = self._estimate()
        return yaw_of(self.orientation) if s is None else float(s.euler[self.index, 2])

    def sensed_state(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(`sensed_position`, `sensed_velocity`, `sensed_yaw`) at once: the estimate looked up
        once (a behaviour reading all three every round pays one lookup, not three)."""
        s = self._estimate()
        if s is None:
            return self.position, self.velocity, yaw_of(self.orientation)
        i = self.index
        return s.position[i], s.velocity[i], float(s.euler[i, 2])

    @property
    def motor_thrust(self) -> np.ndarray:
        """(4,) current motor thrusts, N."""
        return self.swarm.motors.thrust[self.index]

    def set_mode(self, mode: ctl.ControlMode) -> None:
        """Switch mode keeping the current commands (bumpless)."""
        self.swarm.set_mode(self.index, mode)

    def _enter(self, mode: ctl.ControlMode) -> None:
        if self.mode is not mode:
            self.swarm.set_mode(self.index, mode)

    # -- commands -------------------------------------------------------------------------
    def command_manual(self, throttle: float, roll: float, pitch: float, yaw: float) -> None:
        """Manual: throttle in [0, 1], roll/pitch/yaw stick in [-1, 1] straight to the mixer."""
        self._enter(ctl.MANUAL)
        self.swarm.setpoints.manual[self.index] = (
            min(max(throttle, 0.0), 1.0),
            *(min(max(v, -1.0), 1.0) for v in (roll, pitch, yaw)),
        )

    def command_attitude(
        self,
        roll_rad: float,
        pitch_rad: float,
        yaw_rad: float,
        thrust_n: float,
        *,
        yaw_rate: bool = False,
    ) -> None:
        """Attitude: roll, pitch and yaw angles (rad, yaw ENU: the heading loop holds it) and
        collective thrust (N); with `yaw_rate=True` the third value is a yaw rate (rad/s)."""
        self._enter(ctl.ATTITUDE)
        sp = self.swarm.setpoints
        i = self.index
        if yaw_rate:
            sp.attitude[i] = (roll_rad, pitch_rad, yaw_rad)
            sp.yaw_hold[i] = 0
        else:
            sp.attitude[i] = (roll_rad, pitch_rad, 0.0)
            sp.yaw[i] = yaw_rad
            sp.yaw_hold[i] = 1
        sp.thrust[i] = thrust_n

    def on_killed(self, cause: str) -> None:
        self.swarm.kill(self.index)

    # -- faults (core.hooks.FaultCapable) ------------------------------------------------------
    def fault_rates(self) -> Mapping[str, float]:
        """Propeller and software failures per flight hour ([uav.fault_rates])."""
        return self.swarm.config.fault_rates.by_kind()

    def fault_detail(self, kind: str, rng: np.random.Generator) -> str:
        """A propeller failure strikes one motor, drawn uniformly ("motor K"); else no detail."""
        if kind == PROPELLER:
            return f"motor {int(rng.integers(0, self.swarm.motor_ok.shape[1]))}"
        return ""

    def apply_fault(self, kind: str, detail: str = "") -> bool:
        """Play a fault out physically (faults.mode = "physical"); False if not modelled.

        A broken propeller ("motor K") stops motor K at once; an empty battery or a crashed
        flight controller cuts every motor. The collision monitor kills the UAV when it lands
        hard.
        """
        if kind == PROPELLER:
            motor = int(detail.split()[-1]) if detail.startswith("motor ") else 0
            self.swarm.fail_motors(self.index, [motor])
            return True
        if kind in (EXHAUSTED, SOFTWARE):
            self.swarm.fail_motors(self.index, range(self.swarm.motor_ok.shape[1]))
            return True
        return False


class AutonomousUavAgent(UavAgent):
    """A quadrotor commanded by speeds, altitude, heading or position. Subclass it and add
    behaviour with `self.every(period_s, fn)`; a mission hands the class to its swarm
    (`Swarm.from_scenario(self.sim, self.config, MyUav)`). A scout that flies forward at 2 m/s
    and holds (Position mode) once 1 m out, checking at 20 Hz:

        from skyswarm import AutonomousUavAgent, Simulator, Swarm, load_scenario


        class Scout(AutonomousUavAgent):
            def start(self) -> None:
                self.x0 = float(self.sensed_position[0])
                self.out = False
                self.fly(2.0, 0.0, self.altitude)  # forward, in the heading frame
                self.every(0.05, self.check, name="scout")

            def check(self) -> None:
                if not self.out and self.sensed_position[0] - self.x0 >= 1.0:
                    self.out = True
                    self.hold()  # brakes, and settles back on this spot


        scenario = load_scenario("hover", ["agents.count=2", "agents.heading_deg=90"])
        sim = Simulator(scenario.simulation, scenario.world, scenario.base_dir)  # no mission
        swarm = Swarm.from_scenario(sim, scenario, Scout, hovering=True, altitude_m=3.0)
        for uav in swarm.agents:
            uav.start()
        sim.run(until_s=1.5)
        scout = swarm.agents[0]
        print([uav.mode_name() for uav in swarm.agents])  # ['Position', 'Position']
        print(round(scout.position[0] - scout.x0, 1))  # 1.7 m out: braking overshot the spot
        print(round(scout.target_distance, 1))  # 0.7 m from it: Position mode flies it back
        sim.close()
    """

    def fly_velocity(self, vx: float, vy: float, vz: float, yaw_rate_rad_s: float = 0.0) -> None:
        """GroundSpeedAndVertSpeed: vx, vy in the heading frame and vz (m/s), yaw rate."""
        self._enter(ctl.GROUND_SPEED_AND_VERT_SPEED)
        sp = self.swarm.setpoints
        sp.velocity[self.index] = (vx, vy, vz)
        sp.attitude[self.index, 2] = yaw_rate_rad_s

    def fly_altitude(self, vx: float, vy: float, altitude_m: float, yaw_rate: float = 0.0) -> None:
        """GroundSpeedAndAltitude: vx, vy (m/s, heading frame), altitude (m), yaw rate (rad/s)."""
        self._enter(ctl.GROUND_SPEED_AND_ALTITUDE)
        sp = self.swarm.setpoints
        sp.velocity[self.index, :2] = (vx, vy)
        sp.altitude[self.index] = altitude_m
        sp.attitude[self.index, 2] = yaw_rate

    def fly(
        self, vx: float, vy: float, altitude_m: float, heading_deg: float | None = None
    ) -> None:
        """GroundSpeedAltitudeAndHeading: vx, vy (m/s, heading frame), altitude (m), compass
        heading (deg; None keeps the current target)."""
        self._enter(ctl.GROUND_SPEED_ALTITUDE_AND_HEADING)
        sp = self.swarm.setpoints
        sp.velocity[self.index, :2] = (vx, vy)
        sp.altitude[self.index] = altitude_m
        if heading_deg is not None:
            sp.yaw[self.index] = heading_to_yaw(heading_deg)

    def goto(self, x: float, y: float, altitude_m: float, heading_deg: float | None = None) -> None:
        """Position: fly to (x, y) m at `altitude_m` and hold there; compass heading in deg."""
        self._enter(ctl.POSITION)
        sp = self.swarm.setpoints
        sp.position[self.index] = (x, y)
        sp.altitude[self.index] = altitude_m
        if heading_deg is not None:
            sp.yaw[self.index] = heading_to_yaw(heading_deg)

    @property
    def target_distance(self) -> float:
        """Distance of the estimated position from the Position-mode target, m."""
        sp = self.swarm.setpoints
        target = (*sp.position[self.index], sp.altitude[self.index])
        return float(np.linalg.norm(self.sensed_position - np.asarray(target)))

    def hold(self) -> None:
        """Hold the current position, altitude and heading (Position mode)."""
        p = self.sensed_position
        self.goto(float(p[0]), float(p[1]), float(p[2]), self.heading_deg)

    def take_off(self, altitude_m: float) -> None:
        """Climb vertically to `altitude_m` above z = 0 and hold position there."""
        p = self.sensed_position
        self.goto(float(p[0]), float(p[1]), altitude_m, self.heading_deg)

    def land(self, check_period_s: float = 0.1) -> None:
        """Descend at the airframe's land speed; once on the ground, motors off (Manual)."""
        self.fly_velocity(0.0, 0.0, -self.swarm.config.control.land_speed_m_s)
        self.landed = False
        still, descending = [0], [False]
        speed = self.swarm.config.control.land_speed_m_s

        def check() -> None:
            if self.mode is not ctl.GROUND_SPEED_AND_VERT_SPEED:
                task.cancel()  # another command took over
                return
            vz = float(self.sensed_velocity[2])
            descending[0] = descending[0] or vz < -0.5 * speed
            still[0] = still[0] + 1 if descending[0] and abs(vz) < 0.05 else 0
            if still[0] >= 5:  # stopped for 0.5 s while commanded down: on the ground
                self.command_manual(0.0, 0.0, 0.0, 0.0)
                self.landed = True
                task.cancel()

        task = self.every(check_period_s, check, name="land")
