"""Wildfire: a fire environment on a cell grid, a thermal camera, and the `fire_tracking` mission.

The environment (`fire.FireGrid`) and the camera (`thermal.ThermalCamera`) depend only on numpy
and core; any mission may own a grid, step it with `sim.every(cfg.step_s, ...)` from a child of
`sim.rng.environment`, and point cameras at it. `tracking.FireTracking` is the mission that does.
"""
