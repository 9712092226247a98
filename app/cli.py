"""The `skyswarm` command line: the parser, `main`, and the small commands.

`run` is app/run_command.py, `batch` app/batch.py, the GUI commands app/gui_commands.py, the
scenario commands app/scenarios.py, `export` app/export.py. Exit codes (app/exits.py): 0 success
(a run: its outcome is "target reached"), 1 I/O error, 2 bad input (one line on stderr, no
traceback), 130 interrupted; a run that finished short of what it was asked exits with its
outcome's code: 4 plan exhausted, 5 time limit, 6 all agents lost (`OUTCOME_EXIT`; the outcome
is also in summary.json). Ctrl-C is app/interrupts.py's.
"""

from __future__ import annotations

import os
import signal
import sys

from skyswarm.app.interrupts import interrupted_early  # standard library only: cheap

# The `skyswarm` process itself (not an embedding program or a test calling main()): from here
# to its exit, Ctrl-C is always one line and exit 130.
_CLI_PROCESS = __name__ == "__main__" or os.path.basename(sys.argv[0]) == "skyswarm"
if _CLI_PROCESS:
    try:
        signal.signal(signal.SIGINT, interrupted_early)
    except ValueError:  # not the main thread: leave signals alone
        _CLI_PROCESS = False

import argparse  # noqa: E402
import math  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from skyswarm.app import gui_commands  # noqa: E402
from skyswarm.app.exits import (  # noqa: E402
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_IO_ERROR,
    error,
    os_message,
)
from skyswarm.app.interrupts import (  # noqa: E402
    Interrupt,
    forget_unhandled_interrupt,
    quiet_unraisable,
)
from skyswarm.app.run_command import cmd_run, print_plots  # noqa: E402
from skyswarm.app.scenarios import add_scenario_parsers, load_args, scenario_args  # noqa: E402
from skyswarm.core.schema import ConfigError  # noqa: E402

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 1 I/O error (full disk, permissions), 2 bad input, 130 interrupted,
    and for `run` the outcome's code (`OUTCOME_EXIT`: 4 plan exhausted, 5 time limit, 6 all
    agents lost); every failure is one line on stderr, never a traceback."""
    if signal.getsignal(signal.SIGINT) is interrupted_early:
        Interrupt.pending = False
        signal.signal(signal.SIGINT, Interrupt.handler)
        sys.unraisablehook = quiet_unraisable(sys.unraisablehook)
    try:
        return _main(argv)
    finally:
        if _CLI_PROCESS:  # a Ctrl-C during interpreter shutdown: the exit code stands
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            forget_unhandled_interrupt()


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        _check_common(args)
        return args.func(args)
    except (ConfigError, UsageError) as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        error("interrupted", prefix="skyswarm: ")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `skyswarm run ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # full disk, permissions, vanished directory: one line, exit 1
        error(os_message(exc))
        return EXIT_IO_ERROR
    except Exception:
        if Interrupt.pending:  # Ctrl-C landed where C code turned it into another error: in
            # an extension module's import (numba, imported by the config's checks: "ImportError:
            # numba._devicearray failed to import") the KeyboardInterrupt never comes out
            error("interrupted", prefix="skyswarm: ")
            return EXIT_INTERRUPTED
        raise


class UsageError(Exception):
    """A bad command line (argparse's complaint), reported like any bad input."""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (exit 2), like every other bad input."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _check_common(args: argparse.Namespace) -> None:
    fps = getattr(args, "fps", None)
    if fps is not None and not (math.isfinite(fps) and 0 < fps <= 1000):
        raise ConfigError("", "--fps", fps, "a frame rate > 0 and <= 1000 per simulated second")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="skyswarm", description="Quadrotor swarm simulator.")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a scenario headless and write a results directory")
    scenario_args(run)
    run.add_argument("--out", type=Path, help="results directory (default: results/<name>-<time>)")
    run.add_argument(
        "--overwrite",
        action="store_true",
        help="empty a non-empty --out directory skyswarm wrote first; replace an existing "
        "--video, rewrite the PNGs of --frames",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--no-plots",
        dest="plots",
        action="store_false",
        help="skip the PNG plots the mission asks for (`skyswarm plot` draws them later)",
    )
    run.add_argument(
        "--inputs", type=Path, metavar="INPUTS.csv", help="replay recorded manual inputs"
    )
    from skyswarm.app import mavlink_flags

    mavlink_flags.add_args(run)  # --mavlink, --mavlink-bind, --realtime (docs/mavlink.md)
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

    from skyswarm.app.migrate import add_migrate_parser  # skyswarm migrate (issue 28)

    add_migrate_parser(sub)

    from skyswarm.app.warmup import add_warmup_parser  # skyswarm warmup (issue 31)

    add_warmup_parser(sub)

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


def cmd_plot(args: argparse.Namespace) -> int:
    try:
        print_plots(args.results)
    except FileNotFoundError as exc:
        print(f"skyswarm: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    import tomli_w

    from skyswarm.core.checks import agent_count

    scenario = load_args(args)
    print(
        f"# {scenario.file}: valid; mission {scenario.mission_class.__module__}."
        f"{scenario.mission_class.__name__}, {agent_count(scenario.agents)} agents"
    )
    for line in model_lines(scenario):
        print(f"# model: {line}")
    print(tomli_w.dumps(scenario.as_dict()))
    return 0


def model_lines(scenario: ScenarioConfig) -> list[str]:
    """The physical models a scenario runs with, one per line (TOML comments in `validate`'s
    output): the airframe's rotor, drag, ground-effect and landing-gear models, the wind's."""
    from skyswarm.uav.config import UavSection

    uav = scenario.sections.get("uav")
    if isinstance(uav, UavSection):
        lines = uav.model_lines(scenario.base_dir)
    else:
        lines = ["airframe none (this mission flies no UAVs)"]
    return [*lines, f"wind {scenario.wind.model_summary()}"]


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
