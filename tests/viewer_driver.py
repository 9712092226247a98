"""Drive a gui.session.SimSession as a viewer window would, headless."""

from __future__ import annotations

from typing import Any

import numpy as np


def drive_like_a_viewer(session: Any, seed: int = 0) -> None:
    """Advance `session` to its end by frames of random wall time (1-50 ms), pausing and
    resuming at random (one frame in ten toggles), as a window's frames and key presses do."""
    rng = np.random.default_rng(seed)
    while not session.finished:
        session.advance(float(rng.uniform(0.001, 0.05)), budget_s=10.0)
        if rng.random() < 0.1:
            session.start_or_pause()
