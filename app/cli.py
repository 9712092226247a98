"""The `skyswarm` command line.

Exit codes: 0 success (a run: its outcome is "target reached"), 1 I/O error, 2 bad input (one
line on stderr, no traceback), 130 interrupted; a run that finished short of what it was asked
exits with its outcome's code: 4 plan exhausted, 5 time limit, 6 all agents lost
(`OUTCOME_EXIT`; the outcome is also in summary.json).
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_IO_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_PLAN_EXHAUSTED = 4  # the mission ran out of plan short of its target
EXIT_TIME_LIMIT = 5  # the run hit simulation.duration_s short of its target
EXIT_ALL_LOST = 6  # every agent died
OUTCOME_EXIT = {
    "target reached": 0,
    "plan exhausted": EXIT_PLAN_EXHAUSTED,
    "time limit": EXIT_TIME_LIMIT,
    "all agents lost": EXIT_ALL_LOST,
    "stopped": EXIT_INTERRUPTED,
}


def _interrupted_early(signum, frame) -> None:  # Ctrl-C while the heavy modules import
    os.write(2, b"skyswarm: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


# The `skyswarm` process itself (not an embedding program or a test calling main()): from here
# to its exit, Ctrl-C is always one line and exit 130.
_CLI_PROCESS = __name__ == "__main__" or os.path.basename(sys.argv[0]) == "skyswarm"
if _CLI_PROCESS:
    try:
        signal.signal(signal.SIGINT, _interrupted_early)
    except ValueError:  # not the main thread: leave signals alone
        _CLI_PROCESS = False

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime as dt  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Iterator, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

from skyswarm.app import gui_commands  # noqa: E402
from skyswarm.app.scenarios import add_scenario_parsers, load_args, scenario_args  # noqa: E402
from skyswarm.core.schema import ConfigError  # noqa: E402


class _Interrupt:
    """Ctrl-C as the CLI sees it. The handler raises KeyboardInterrupt and remembers that it
    did: a KeyboardInterrupt raised inside a C callback (numba's LLVM calls back into Python
    while it compiles) is swallowed by ctypes as "unraisable", so the run would go on as if
    Ctrl-C had never been pressed. The remembered flag is checked again once set-up is over and
    at every progress report of the run (`check`)."""

    pending = False

    @classmethod
    def handler(cls, signum, frame) -> None:
        cls.pending = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.pending:
            raise KeyboardInterrupt


def _quiet_unraisable(hook):
    def quiet(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _Interrupt.pending:
            return  # a Ctrl-C swallowed by a C callback: acted on at the next `check`
        hook(unraisable)

    return quiet


def _forget_unhandled_interrupt() -> None:
    """CPython marks a KeyboardInterrupt that escapes code run by exec() of a string (the
    dataclasses module builds __init__ and __hash__ that way while our modules import) as
    unhandled, and at exit the interpreter then kills itself with SIGINT (exit -2) although the
    exception was caught and 130 returned. Any exec() of a string clears that mark."""
    exec("")


def main(argv: Sequence[str] | None = None) -> int:
    """Exit codes: 0 done, 1 I/O error (full disk, permissions), 2 bad input, 130 interrupted,
    and for `run` the outcome's code (`OUTCOME_EXIT`: 4 plan exhausted, 5 time limit, 6 all
    agents lost); every failure is one line on stderr, never a traceback."""
    if signal.getsignal(signal.SIGINT) is _interrupted_early:
        _Interrupt.pending = False
        signal.signal(signal.SIGINT, _Interrupt.handler)
        sys.unraisablehook = _quiet_unraisable(sys.unraisablehook)
    try:
        return _main(argv)
    finally:
        if _CLI_PROCESS:  # a Ctrl-C during interpreter shutdown: the exit code stands
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            _forget_unhandled_interrupt()


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        _check_common(args)
        return args.func(args)
    except (ConfigError, UsageError) as exc:
        _error(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _error("interrupted", prefix="skyswarm: ")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `skyswarm run ... | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # full disk, permissions, vanished directory: one line, exit 1
        _error(_os_message(exc))
        return EXIT_IO_ERROR


def _error(text: str, prefix: str = "skyswarm: error: ") -> None:
    line = " ".join(text.split())  # exactly one line, whatever the message held
    with contextlib.suppress(OSError):
        print(f"{prefix}{line}", file=sys.stderr, flush=True)


def _os_message(exc: OSError) -> str:
    where = f": {exc.filename}" if getattr(exc, "filename", None) else ""
    return f"{exc.strerror or type(exc).__name__}{where}"


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
        "--overwrite", action="store_true", help="empty a non-empty --out directory first"
    )
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


def prepare_out(out: Path, overwrite: bool) -> bool:
    """Check `out` before anything is written: a new or empty directory (or `overwrite`, which
    empties it) whose nearest existing ancestor is writable. True if it exists already."""
    if out.exists() and not out.is_dir():
        raise ConfigError("", "--out", str(out), "a directory (this is a file)")
    if out.is_dir():
        if any(out.iterdir()):
            if not overwrite:
                raise ConfigError(
                    "", "--out", str(out), "an empty or new directory (or --overwrite)"
                )
            for child in out.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
        if not os.access(out, os.W_OK | os.X_OK):
            raise ConfigError("", "--out", str(out), "a writable directory")
        return True
    parent = out.absolute().parent
    while not parent.exists():
        parent = parent.parent
    try:  # the only sure test of "can be created": create (and remove) a probe
        if not parent.is_dir():
            raise NotADirectoryError(str(parent))
        os.rmdir(tempfile.mkdtemp(prefix=".skyswarm-probe-", dir=parent))
    except OSError as exc:
        raise ConfigError(
            "", "--out", str(out), f"a path under a writable directory ({_os_message(exc)})"
        ) from None
    return False


@contextlib.contextmanager
def deferred_sigint() -> Iterator[None]:
    """Ctrl-C waits until the block (writing the summary) is done, then interrupts."""
    hit: list[int] = []
    try:
        old = signal.signal(signal.SIGINT, lambda signum, frame: hit.append(signum))
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if hit:
        raise KeyboardInterrupt


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
    from skyswarm.core.simulator import Simulator

    scenario = load_args(args)
    out = args.out or default_results_dir(scenario)
    inputs = _read_inputs(args.inputs) if args.inputs is not None else None
    existed = prepare_out(out, args.overwrite)
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
        if out.is_dir():
            if existed:
                for child in out.iterdir():
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
            else:
                shutil.rmtree(out, ignore_errors=True)
        raise
    capture = gui_commands.start_capture(args, sim)  # None unless --video/--frames
    bar = None if args.quiet else _ProgressBar(scenario.simulation.duration_s)

    def progress(sim: Simulator) -> None:
        _Interrupt.check()
        if bar:
            bar.update(sim)

    interrupted = False
    try:
        _Interrupt.check()
        sim.run(progress=progress)
    except KeyboardInterrupt:
        interrupted = True
        sim.stop_reason = "interrupted"
    except OSError:  # full disk ...: close what was written (readable, torn last record at most)
        with contextlib.suppress(Exception):
            sim.close()
        raise
    finally:
        if bar:
            bar.update(sim)
            bar.close()
    with deferred_sigint():
        if capture is not None:
            capture.close()
        summary = sim.finish()
        sim.close()
    _print_summary(summary, out)
    if interrupted:
        _error("interrupted; results kept", prefix="skyswarm: ")
        return EXIT_INTERRUPTED
    if getattr(scenario.mission_class, "plot_results", False):  # the mission asks for plots
        _print_plots(out)
    return OUTCOME_EXIT.get(summary.get("outcome", ""), EXIT_TIME_LIMIT)


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
    print(f"results: {out}")


def cmd_validate(args: argparse.Namespace) -> int:
    import tomli_w

    from skyswarm.core.checks import agent_count

    scenario = load_args(args)
    print(
        f"# {scenario.file}: valid; mission {scenario.mission_class.__module__}."
        f"{scenario.mission_class.__name__}, {agent_count(scenario.agents)} agents"
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
