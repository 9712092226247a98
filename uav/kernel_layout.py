"""The flight kernel's table layout: the indices by which its compiled code (uav/kernel.py, agent
by agent, and uav/kernel_block.py, block by block) reads the constants' tables and the
per-agent motor parameters, and by which uav/flight_kernel.py fills them. Plain integers, no
compiled code: numba freezes them into the kernels as constants.
"""

from __future__ import annotations

# The constants' gain table `gains` (4, 5, 4): loop, then parameter, then axis (unused axes 0).
OUTER, SPEED, ATTITUDE, RATE = 0, 1, 2, 3
KP, KI_DT, KD, I_LIMIT, OUT_LIMIT = range(5)
# Columns of the constants' mode table `uses` (modes, 8): 1 where the mode uses the stage.
STAGE_COLUMNS = (
    "position",
    "altitude",
    "heading",
    "velocity",
    "attitude",
    "rates",
    "motors",
    "world",
)
POS, ALT, HDG, VEL, ATT, RATES, MOT, WORLD = range(len(STAGE_COLUMNS))

# Columns of the per-agent motor parameters `motor` (N, 2) (uav.model.Motors.params).
LAG, GAIN = 0, 1  # lag per tick 1 - exp(-dt / tau); thrust scale (actual k_f / nominal k_f)
