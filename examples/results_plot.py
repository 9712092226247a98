"""A run's results into pandas and a plot: four UAVs hold their spots in wind (hover_wind);
`load_results` gives the trajectory as a DataFrame and matplotlib (Agg: files only, no window)
draws each UAV's height over time to hover_heights.png.

    python examples/results_plot.py [SECONDS]   # or SKYSWARM_EXAMPLE_SECONDS
"""

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import skyswarm  # noqa: E402

SECONDS = float(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SKYSWARM_EXAMPLE_SECONDS", 5))


def main() -> None:
    skyswarm.run_scenario(
        "hover_wind", results_dir="wind_run", overrides=[f"simulation.duration_s={SECONDS}"]
    )
    results = skyswarm.load_results("wind_run")
    traj = results.trajectory
    print(traj.groupby("agent_id")[["x_m", "y_m", "z_m"]].agg(["mean", "std"]).round(3))
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for agent_id, track in traj.groupby("agent_id"):
        ax.plot(track["time_s"], track["z_m"], label=f"UAV {agent_id}")
    ax.set(
        xlabel="time (s)", ylabel="height (m)", title=f"hover_wind: {results.summary['outcome']}"
    )
    ax.legend()
    fig.savefig("hover_heights.png")
    print("wrote hover_heights.png")


if __name__ == "__main__":
    main()
