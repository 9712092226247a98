"""The `skyswarm` command line.

Exit codes: 0 success, 2 bad input (one line on stderr, no traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from skyswarm.app import gui_commands
from skyswarm.app.scenarios import add_scenario_parsers, load_args, scenario_args
from skyswarm.core.schema import ConfigError

EXIT_BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as exc:
        print(f"skyswarm: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # e.g. `skyswarm run ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="skyswarm", description="Quadrotor swarm simulator.")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a scenario headless and write a results directory")
    scenario_args(run)
    run.add_argument("--out", type=Path, help="results directory (default: results/<name>-<time>)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--inputs", type=Path, metavar="INPUTS.csv", help="replay recorded manual inputs"
    )
    run.set_defaults(func=cmd_run)
    gui_commands.add_gui_parsers(sub, run, scenario_args)
    add_scenario_parsers(sub)

    val = sub.add_parser("validate", help="check a scenario file and print the resolved config")
    scenario_args(val)
    val.set_defaults(func=cmd_validate)
    from skyswarm.app.batch import (
        add_batch_parser,  # argparse only; executors load when a sweep runs
    )

    add_batch_parser(sub)

    from skyswarm.app.export import add_export_parser

    add_export_parser(sub)

    plot = sub.add_parser("plot", help="write the PNG plots of a results directory")
    plot.add_argument("results", type=Path, help="results directory of a run")
    plot.set_defaults(func=cmd_plot)

    bench = sub.add_parser("bench", help="run the benchmarks of bench/ (source checkout)")
    bench.add_argument("names", nargs="*", help="benchmarks to run (default: all); see --list")
    bench.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    bench.set_defaults(func=cmd_bench)

    mis = sub.add_parser("missions", help="list installed mission plug-ins")
    mis.set_defaults(func=cmd_missions)
    return p


def default_results_dir(scenario) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = Path(scenario.file).stem or "run"
    return Path(scenario.results.dir) / f"{name}-seed{scenario.simulation.seed}-{stamp}"


def cmd_run(args: argparse.Namespace) -> int:
    from skyswarm.core.simulator import Simulator

    scenario = load_args(args)
    out = args.out or default_results_dir(scenario)
    sim = Simulator.from_scenario(scenario, out)
    if args.inputs is not None:
        from skyswarm.uav.manual import replay_inputs

        replay_inputs(sim, args.inputs)
    capture = gui_commands.start_capture(args, sim)  # None unless --video/--frames
    bar = None if args.quiet else _ProgressBar(scenario.simulation.duration_s)
    interrupted = False
    try:
        sim.run(progress=bar.update if bar else None)
    except KeyboardInterrupt:
        interrupted = True
        sim.stop_reason = "interrupted"
    finally:
        if bar:
            bar.update(sim)
            bar.close()
    if capture is not None:
        capture.close()
    summary = sim.finish()
    sim.close()
    _print_summary(summary, out)
    if getattr(scenario.mission_class, "plot_results", False):  # the mission asks for plots
        _print_plots(out)
    return 130 if interrupted else 0


def cmd_plot(args: argparse.Namespace) -> int:
    try:
        _print_plots(args.results)
    except FileNotFoundError as exc:
        print(f"skyswarm: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def _print_plots(results: Path) -> None:
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
    print(f"results: {out}")


def cmd_validate(args: argparse.Namespace) -> int:
    import tomli_w

    scenario = load_args(args)
    print(
        f"# {scenario.file}: valid; mission {scenario.mission_class.__module__}."
        f"{scenario.mission_class.__name__}, {len(scenario.agents.resolved())} agents"
    )
    print(tomli_w.dumps(scenario.as_dict()))
    return 0


BENCH_DIR = Path(__file__).resolve().parent.parent / "bench"


def cmd_bench(args: argparse.Namespace) -> int:
    """Each benchmark prints its table and writes bench/results/<name>.json."""
    import runpy

    found = {p.stem: p for p in sorted(BENCH_DIR.glob("*.py"))}
    if not found:
        raise ConfigError(
            str(BENCH_DIR), "(bench)", str(BENCH_DIR), "a source checkout with bench/"
        )
    if args.list:
        for name, path in found.items():
            print(f"{name:20s} {_first_doc_line(path)}")
        return 0
    for name in args.names:
        if name not in found:
            raise ConfigError("", "bench", name, f"one of {', '.join(found)}")
    for name in args.names or list(found):
        print(f"== {name}", flush=True)
        saved = sys.argv
        sys.argv = [str(found[name])]
        try:
            runpy.run_path(str(found[name]), run_name="__main__")
        finally:
            sys.argv = saved
    return 0


def _first_doc_line(path: Path) -> str:
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.splitlines()[0] if doc else ""


def cmd_missions(args: argparse.Namespace) -> int:
    from skyswarm.core.mission import available_missions, resolve_mission

    for name, origin in sorted(available_missions().items()):
        try:
            doc = resolve_mission(name).description
        except (ConfigError, ImportError) as exc:
            doc = f"(cannot load: {exc})"
        print(f"{name:20s} {doc}  ({origin})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
