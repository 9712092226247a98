"""Wildfire: a fire environment on a cell grid, a thermal camera, and the `fire_tracking` mission.

The environment (`fire.FireGrid`, installed and stepped by `environment.FireEnvironment`) and the
camera (`thermal.ThermalCamera`) depend only on numpy and core; any mission that declares the
`[fire]` section may install the environment and point cameras at its grid.
`tracking.FireTracking` is the mission that does.
"""
