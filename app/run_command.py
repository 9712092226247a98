"""`skyswarm run`: one scenario headless into a results directory, and what the terminal shows.

The results directory is checked before anything is written (`prepare_out`), and bad input
found while building the simulation leaves none behind. The run shows its progress on a tqdm
bar; Ctrl-C (app/interrupts.py) stops it with its results kept: the summary is still written
(Ctrl-C waits for it) and printed, and the exit code is 130. Otherwise the exit code is the
outcome's (app/exits.py, `OUTCOME_EXIT`).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import sys
from pathlib import Path

from skyswarm.app import gui_commands
from skyswarm.app.exits import EXIT_INTERRUPTED, EXIT_TIME_LIMIT, OUTCOME_EXIT, error
from skyswarm.app.interrupts import Interrupt, deferred_sigint, polled_sigint
from skyswarm.app.results_dir import HeldDir, check_room, claim
from skyswarm.app.scenarios import load_args
from skyswarm.core.schema import ConfigError


def default_results_dir(scenario) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = Path(scenario.file).stem or "run"
    return Path(scenario.results.dir) / f"{name}-seed{scenario.simulation.seed}-{stamp}"


def prepare_out(out: Path, overwrite: bool, scenario_file: str = "") -> HeldDir:
    """Check, lock and mark `out` before anything is written (app/results_dir.py `claim`): a new
    or empty directory, or with `overwrite` one skyswarm wrote, which is emptied; the caller
    `release()`s it when the run is written (or `discard()`s it on bad input)."""
    return claim(out, overwrite, scenario_file)


def _read_inputs(path: Path):
    """The replayed inputs, checked before a results directory exists."""
    from skyswarm.uav.manual import read_inputs

    try:
        return read_inputs(path)
    except ConfigError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
        raise ConfigError(
            str(path),
            "--inputs",
            str(path),
            f"a valid inputs.csv + inputs.json ({type(exc).__name__})",
        ) from None


def cmd_run(args: argparse.Namespace) -> int:
    scenario = load_args(args)
    gui_commands.check_capture(args)
    out = args.out or default_results_dir(scenario)
    inputs = _read_inputs(args.inputs) if args.inputs is not None else None
    held = prepare_out(out, args.overwrite, scenario.file)
    try:
        return _run_held(args, scenario, out, inputs, held)
    finally:
        held.release()


def _run_held(args: argparse.Namespace, scenario, out: Path, inputs, held: HeldDir) -> int:
    from skyswarm.core.simulator import Simulator

    try:
        sim = Simulator.from_scenario(scenario, out)
        if inputs is not None:
            from skyswarm.uav.manual import ManualControl

            try:
                ManualControl(sim, inputs[0], replay=inputs[1])
            except ValueError as exc:
                if isinstance(exc, ConfigError):
                    raise
                raise ConfigError(
                    str(args.inputs), "--inputs", str(args.inputs), str(exc)
                ) from None
    except ConfigError:  # bad input found while building: leave no results directory behind
        with contextlib.suppress(NameError, Exception):
            sim.close()
        held.discard()
        raise
    if sim.recorder is not None:  # what the trajectory will weigh, before the run starts
        duration_s = scenario.simulation.duration_s
        print(sim.recorder.size_estimate(duration_s)[1])
        try:  # a disk that cannot hold it: refused now, not by a full disk hours in
            check_room(out, sim.recorder.disk_estimate(duration_s))
        except ConfigError:
            sim.close()
            held.discard()
            raise
    from skyswarm.app import mavlink_flags

    try:  # --mavlink / [mavlink] enabled, --realtime
        extras = mavlink_flags.start(args, sim)
    except ConfigError:  # a taken port ...: no results directory left behind
        sim.close()
        held.discard()
        raise
    capture = gui_commands.start_capture(args, sim)  # None unless --video/--frames
    bar = None if args.quiet else _ProgressBar(scenario.simulation.duration_s)

    def progress(sim: Simulator) -> None:
        Interrupt.check()
        if bar:
            bar.update(sim)

    interrupted = False
    try:
        Interrupt.check()
        with polled_sigint():  # Ctrl-C stops the loop between ticks
            sim.run(progress=progress)
        Interrupt.check()  # a Ctrl-C in the last ticks, after the loop's last check
    except KeyboardInterrupt:
        interrupted = True
        sim.stop_reason = "interrupted"
    except BaseException as exc:
        if isinstance(exc, OSError):  # full disk ...: close what was written (readable, torn
            with contextlib.suppress(Exception):  # last record at most)
                sim.close()
        if capture is not None:  # its render processes and shared memory, and the video so far
            with contextlib.suppress(Exception):
                capture.close()
        raise
    finally:
        if bar:
            bar.update(sim)
            bar.close()
    with deferred_sigint():
        if capture is not None:
            if interrupted:  # the queued frames take a while to draw: say so at once
                error("interrupted; finishing the video's queued frames", prefix="skyswarm: ")
            capture.end()  # the render process draws what is queued while results are written
        summary = sim.finish()
        sim.close()
    _print_summary(summary, out)
    extras.finish(out)
    try:
        if not interrupted and args.plots and scenario.mission_class.plot_results:
            print_plots(out)  # the mission asks for plots
    finally:
        if capture is not None:
            with deferred_sigint():
                capture.close()
    if interrupted:
        error("interrupted; results kept", prefix="skyswarm: ")
        return EXIT_INTERRUPTED
    return OUTCOME_EXIT.get(summary.get("outcome", ""), EXIT_TIME_LIMIT)


def print_plots(results: Path) -> None:
    from skyswarm.app.plot import plot_results

    for path in plot_results(results):
        print(f"plot: {path}")


class _ProgressBar:
    """tqdm over simulated seconds, with real-time factor and alive agents."""

    def __init__(self, duration_s: float) -> None:
        from tqdm import tqdm

        self.bar = tqdm(
            total=round(duration_s, 3),
            unit="sim s",
            file=sys.stderr,
            bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} sim s [{elapsed}<{remaining}{postfix}]",
        )
        self.shown = 0.0

    def update(self, sim) -> None:
        t = round(sim.time_s, 3)
        self.bar.update(t - self.shown)
        self.shown = t
        rtf = sim.time_s / sim.wall_s if sim.wall_s > 0 else 0.0
        alive = sum(a.alive for a in sim.agents.values())
        self.bar.set_postfix_str(f"RTF {rtf:.1f}x, alive {alive}/{len(sim.agents)}")

    def close(self) -> None:
        self.bar.close()


def _print_summary(summary: dict, out: Path) -> None:
    rtf = summary.get("real_time_factor")
    shown = f", real-time factor {rtf:.1f}x" if rtf else ""
    if summary.get("compile_s"):  # set-up: kernels compiled or loaded, not in the wall time
        shown += f"; compile {summary['compile_s']:.2f} s before the clock"
    tuned = (summary.get("threads") or {}).get("ticks")
    if tuned:  # threads = "auto" measured: how much of the run each count flew
        flown = sum(tuned.values()) or 1
        shares = ", ".join(f"{c} on {n / flown:.0%}" for c, n in tuned.items())
        shown += f"; threads auto: {shares} of the ticks"
    print(f"outcome: {summary.get('outcome')}")
    print(
        f"stopped: {summary['stop_reason']} at t = {summary['sim_time_s']:.2f} s "
        f"({summary['ticks']} ticks, wall {summary['wall_time_s']:.2f} s{shown})"
    )
    print(
        f"agents: {summary['alive']}/{summary['agents']} alive"
        + (f", deaths {summary['deaths_by_cause']}" if summary["deaths_by_cause"] else "")
    )
    for key, value in summary["metrics"].items():
        shown = f"{value:.6g}" if isinstance(value, float) else value
        print(f"  {key}: {shown}")
    for name, c in ((summary.get("comms") or {}).get("channels") or {}).items():
        print(  # what each radio channel carried (the fates of every copy are in summary.json)
            f"comms {name}: sent {c['sent']:,}, copies addressed {c['addressed']:,}, "
            f"delivered {c['delivered']:,}, lost on air {c['lost_on_air']:,}, "
            f"out of range {c['out_of_range']:,}"
        )
    print(f"results: {out}")
