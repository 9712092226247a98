"""The flight kernel as a swarm holds it: what the compiled code is handed, built in Python.

uav/kernel.py is the compiled flight stack and reads only its arguments and its own names (its
docstring says why). This module builds what it reads:
- CONSTANTS, the layout of the one record of every gain, limit and airframe constant, its
  tables indexed by the kernel's names (uav/kernel_layout.py: OUTER.., KP.., STAGE_COLUMNS);
- `pack_constants`, which copies those values once from the objects that own them (Cascade,
  Mixer, Motors, WrenchModel) and refuses a layout it did not fill;
- `FlightKernel`, one swarm's constants and state rows, stepped each tick by `kernel.fly`, or
  by `kernel.fly_parallel` (bit-identical) for a large swarm; or, with the fast world's
  integration, several ticks in one call (`step_ticks`, kernel.fly_ticks).
The layout may live here because it reaches the compiled code as the type of an argument, part
of numba's cache key: a changed layout recompiles. The setpoint and memory records (SETPOINT,
MEMORY) are uav/control.py's, next to the objects that write them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numba
import numpy as np

from skyswarm.core.backends import fast_kernel, threaded
from skyswarm.core.jit import ahead, njit
from skyswarm.uav.control import MEMORY, MODES, SETPOINT
from skyswarm.uav.kernel import (
    SAVED,
    SAVED_COLUMNS,
    fly,
    fly_parallel,
    fly_ticks,
    fly_ticks_parallel,
)
from skyswarm.uav.kernel_layout import STAGE_COLUMNS
from skyswarm.uav.model import ISA_EXPONENT, ISA_LAPSE, ISA_RHO0

if TYPE_CHECKING:
    from skyswarm.uav.control import Cascade, Setpoints
    from skyswarm.uav.mixer import Mixer
    from skyswarm.uav.model import Motors, WrenchModel
    from skyswarm.uav.pid import Pid

CONSTANTS = np.dtype(
    [
        ("uses", "u1", (len(MODES), len(STAGE_COLUMNS))),  # by mode index, see kernel.POS..
        ("gains", "f8", (4, 5, 4)),  # see kernel_layout.OUTER.. and kernel_layout.KP..
        ("outer_lo", "f8", (4,)),  # limits of the outer loops' outputs: vx, vy, vz m/s,
        ("outer_hi", "f8", (4,)),  # yaw rate rad/s
        ("max_speed", "f8"),  # m/s, horizontal speed the position loop may command
        ("dt", "f8"),  # s, one tick
        ("g", "f8"),  # m/s^2
        ("mass", "f8"),  # kg
        ("inertia", "f8", (3,)),  # kg m^2, principal, body x, y, z
        ("tan_tilt", "f8"),  # tan of the tilt the speed loops may command
        ("min_up", "f8"),  # cos of the airframe's largest tilt
        ("manual_scale", "f8", (4,)),  # sticks -> collective N, torque x, y, z N m
        ("f_max", "f8"),  # N, one motor
        ("per_collective", "f8"),  # mixer: N per motor per N of collective
        ("attitude_map", "f8", (2, 4)),  # mixer: N per motor per N m of roll, pitch torque
        ("yaw_map", "f8", (4,)),  # mixer: N per motor per N m of yaw torque
        ("yaw_abs", "f8", (4,)),  # |yaw_map|, at least 1e-12
        ("torque_map", "f8", (4, 3)),  # motor thrust N -> body torque N m
        ("drag", "f8", (3,)),  # -drag coefficients, N s/m, body x, y, z (linear drag)
        ("quadratic", "u1"),  # 1: quadratic body drag, drag_quad rho |u| u
        ("drag_quad", "f8", (3,)),  # -C_d A / 2, m^2, body x, y, z
        ("isa", "f8", (3,)),  # ISA troposphere: rho0 kg/m^3, lapse 1/m, exponent
        ("speed_state", "u1"),  # 1: rotor_speed model (omega lags, thrust k_f omega^2)
        ("k_f", "f8"),  # N s^2/rad^2
        ("rotor_drag", "f8"),  # k_d, 0: no rotor drag
        ("rotor_radius", "f8"),  # m, 0: no ground effect
        ("arms", "f8", (4, 3)),  # motor points, body frame, m
    ]
)


def _gain_table(*pids: Pid) -> np.ndarray:
    """(loops, 5, 4) gains of `pids` in the order KP..OUT_LIMIT, unused axes 0."""
    table = np.zeros((len(pids), 5, 4))
    for k, pid in enumerate(pids):
        axes = len(pid.kp)
        for j, values in enumerate((pid.kp, pid.ki_dt, pid.kd, pid.i_limit, pid.out_limit)):
            table[k, j, :axes] = values
    return table


def pack_constants(
    cascade: Cascade, mixer: Mixer, motors: Motors, wrench: WrenchModel
) -> np.ndarray:
    """The (1,) CONSTANTS record of one swarm, copied from the objects that own the values."""
    if motors.f_max != mixer.f_max:
        raise ValueError(
            f"the mixer ({mixer.f_max} N) and the motors ({motors.f_max} N) disagree on the "
            "maximum thrust"
        )
    c = np.zeros(1, CONSTANTS)
    uses = [[mode.uses(stage) for stage in STAGE_COLUMNS] for mode in MODES]
    values = {
        "uses": np.array(uses, dtype=np.uint8),
        "gains": _gain_table(cascade.outer, cascade.speed, cascade.attitude, cascade.rate),
        "outer_lo": cascade.outer_lo,
        "outer_hi": cascade.outer_hi,
        "max_speed": cascade.cfg.max_speed_m_s,
        "dt": cascade.dt,
        "g": cascade.g,
        "mass": cascade.mass,
        "inertia": cascade.inertia,
        "tan_tilt": cascade.tan_tilt,
        "min_up": cascade.min_up,
        "manual_scale": cascade.manual_scale,
        "f_max": mixer.f_max,
        "per_collective": mixer.per_collective,
        "attitude_map": mixer.attitude_map,
        "yaw_map": mixer.yaw_map,
        "yaw_abs": mixer.yaw_abs,
        "torque_map": wrench.torque_map,
        "drag": wrench.drag,
        "quadratic": wrench.quadratic,
        "drag_quad": wrench.drag_quad,
        "isa": (ISA_RHO0, ISA_LAPSE, ISA_EXPONENT),
        "speed_state": motors.speed_state,
        "k_f": motors.k_f,
        "rotor_drag": wrench.rotor_drag,
        "rotor_radius": wrench.rotor_radius,
        "arms": wrench.arms,
    }
    if set(values) != set(CONSTANTS.names):
        raise ValueError(f"constants {sorted(set(CONSTANTS.names) ^ set(values))} not packed")
    for name, value in values.items():
        c[0][name] = value
    return c


class FlightKernel:
    """The compiled controller of one swarm: the agents' state rows and its constants."""

    def __init__(
        self,
        cascade: Cascade,
        mixer: Mixer,
        motors: Motors,
        wrench: WrenchModel,
        slots: np.ndarray,
    ) -> None:
        """`slots` (N,) int: the agents' rows in the world's state arrays."""
        self.slots = np.ascontiguousarray(slots, dtype=np.int64)
        self.constants = pack_constants(cascade, mixer, motors, wrench)
        self._live_checked: np.ndarray | None = None  # the world's live slots, found = slots
        self._saved: tuple[np.ndarray, np.ndarray] | None = None  # step_ticks' saved rows

    def step(
        self,
        state: Any,  # core.state.BodyState
        sp: Setpoints,
        cascade: Cascade,
        alive: np.ndarray,
        motor_ok: np.ndarray,
        motor: np.ndarray,
        thrust: np.ndarray,
        force: np.ndarray,
        torque: np.ndarray,
        wind: np.ndarray,
    ) -> None:
        """One tick for every agent; writes `thrust`, `force`, `torque` and the controller
        memory in place (see kernel.fly). `motor` (N, 2): each agent's motor lag and thrust
        scale (Motors.params). `wind`: (N, 3) m/s, world frame (zeros: calm air).
        Large swarms run kernel.fly_parallel (bit-identical to `fly`, see
        core.backends.threaded)."""
        (fly_parallel if threaded(len(self.slots)) else fly)(
            self.slots,
            state.position,
            state.orientation,
            state.linear_velocity,
            state.angular_velocity,
            self.constants,
            sp.records,
            cascade.memory,
            thrust,
            alive,
            motor_ok,
            motor,
            wind,
            force,
            torque,
        )

    def step_ticks(
        self,
        world: Any,  # core.backends.fast.FastWorld
        sp: Setpoints,
        cascade: Cascade,
        alive: np.ndarray,
        motor_ok: np.ndarray,
        motor: np.ndarray,
        thrust: np.ndarray,
        force: np.ndarray,
        torque: np.ndarray,
        wind: np.ndarray,
        ticks: int,
    ) -> int:
        """`ticks` ticks of `step` followed each by the world's physics, in one compiled call
        (kernel.fly_ticks), when the agents are all of the fast world's live bodies, in
        consecutive rows, and the world allows it (FastWorld.window: nothing held, no two
        bodies within reach). The caller vouches that nothing else acts between the ticks
        (no other controller, listener, environment force, task or radio; wind held). Returns
        the ticks done: `ticks`, or 0 with every row as it was (a body went far enough to
        have reached another; or the world does not allow it): then tick one by one."""
        n, slots = len(self.slots), self.slots
        live, memory = world.tracked_slots, cascade.memory
        if live is not self._live_checked:  # the world's live set changed (a new array)
            if not (
                len(live) == n
                and np.array_equal(live, slots)
                and (n == 0 or slots[-1] - slots[0] == n - 1)
            ):
                return 0
            self._live_checked = live
        if not (n and memory.flags.c_contiguous):
            return 0
        args = world.window()
        if args is None:
            return 0
        if self._saved is None:
            self._saved = np.empty((n, SAVED)), np.empty((n, MEMORY.itemsize), dtype=np.uint8)
        saved, saved_memory = self._saved
        memory_bytes = memory.view(np.uint8).reshape(n, MEMORY.itemsize)
        parallel = threaded(n)
        # threaded: the chunks handed out one at a time to whichever thread is free (numba's
        # chunk size 1; 0, its default, splits them evenly up front), so a thread that the
        # system holds up for a while (another job on its core) leaves its share to the other
        # instead of the whole step waiting for it: the results are the same either way
        chunksize = numba.set_parallel_chunksize(1) if parallel else 0
        try:
            touching, far = (fly_ticks_parallel if parallel else fly_ticks)(
                ticks, slots, *args[:4], self.constants, sp.records, memory, thrust, alive,
                motor_ok, motor, wind, force, torque, *args[4:], saved, saved_memory,
                memory_bytes,
            )  # fmt: skip
        finally:
            if parallel:
                numba.set_parallel_chunksize(chunksize)
        if far:  # every row back as it was: the caller ticks one by one
            rows = slice(int(slots[0]), int(slots[0]) + n)
            for k, a in enumerate((*args[:4], *args[9:12])):  # state, fb, tw, fw
                a[rows] = saved[:, SAVED_COLUMNS[k] : SAVED_COLUMNS[k + 1]]
            thrust[:] = saved[:, SAVED_COLUMNS[-2] : SAVED_COLUMNS[-1]]
            memory_bytes[:] = saved_memory
            return 0
        world.advance(ticks, touching)
        return ticks

    def lowest(self, state: Any) -> float:
        """The lowest agent's z (m) in the state arrays (NaN if one is NaN): one compiled pass
        over the rows, a third of numpy's gather and `min` for a few agents."""
        return lowest(state.position, self.slots)


@njit(nogil=True)
def lowest(position: np.ndarray, slots: np.ndarray) -> float:  # pragma: no cover - compiled
    """The smallest z (m) of rows `slots` of `position` (capacity, 3), NaN if one is NaN
    (numpy's `min`); +inf for no rows."""
    low = np.inf
    for s in slots:
        z = position[s, 2]
        if z != z:
            return z
        if z < low:
            low = z
    return low


def _records(dtype: np.dtype) -> Any:
    """The numba type of a (N,) array of `dtype` records (as `FlightKernel.step` passes them)."""
    import numba

    return numba.typeof(np.zeros(1, dtype))


# The types FlightKernel.step calls the kernel with (compiled before the clock: core/jit.py).
_FLY = (
    *"i8[1] f8[2] f8[2] f8[2] f8[2]".split(),
    *(_records(d) for d in (CONSTANTS, SETPOINT, MEMORY)),
    # thrust, alive, motor_ok, motor (lag, thrust scale), wind, force, torque
    *"f8[2] ?[1] f8[2] f8[2] f8[2] f8[2] f8[2]".split(),
)
ahead(fly, _FLY)
ahead(fly_parallel, _FLY)
# fly_ticks: the ticks, fly's arguments, then the fast world's (FastWorld.window), the saved rows
_FLY_TICKS = (
    "i8",
    *_FLY,
    *"f8[1] f8[2] f8[2] f8[2] f8[1] f8[2] f8[2] f8[2]".split(),
    _records(fast_kernel.CONSTANTS),
    *"f8[2] f8[2] f8[2] i8[1] f8[2] i8[1] i8[1] f8[1] f8[2] f8[2] f8 f8[2] u1[2] u1[2]".split(),
)
ahead(fly_ticks, _FLY_TICKS)
ahead(fly_ticks_parallel, _FLY_TICKS)
ahead(lowest, "f8[2] i8[1]")
