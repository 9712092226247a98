"""The application layer: command line, batch sweeps, plots, export, the benchmark runner.

It sits above everything else and may import all layers; nothing imports it but the facade.
"""
