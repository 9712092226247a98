"""Missions that fail on purpose, for the batch tests (referenced as 'batch_missions:Class')."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

from skyswarm.core.backends import World
from skyswarm.core.schema import param
from skyswarm.missions.drop_test import DropTest


@dataclass(frozen=True)
class FragileConfig:
    break_above_m: float = param(1e9, "a drop from higher raises RuntimeError mid-run, m")
    crash_above_m: float = param(1e9, "a drop from higher kills the worker process, m")
    die_once_above_m: float = param(
        1e9, "a drop from higher SIGKILLs its worker on its first execution only, m"
    )


class FragileDropTest(DropTest):
    """The drop test, plus a software error or a process crash above configured heights."""

    sections = {**DropTest.sections, "fragile": FragileConfig}

    def setup(self) -> None:
        super().setup()
        fragile = self.config.section("fragile")
        if self.cfg.height_m > fragile.crash_above_m:
            os._exit(13)  # as a segfaulting extension would: no exception, no cleanup

    def post_tick(self, world: World) -> None:
        super().post_tick(world)
        fragile = self.config.section("fragile")
        if world.tick == 20 and self.cfg.height_m > fragile.die_once_above_m:
            marker = self.sim.recorder.dir / "died_once"  # in the run's own results folder
            if not marker.exists():
                marker.touch()
                os.kill(os.getpid(), signal.SIGKILL)  # mid-run, as the OOM killer would
        limit = fragile.break_above_m
        if world.tick == 20 and self.cfg.height_m > limit:
            raise RuntimeError(f"box shattered: dropped from {self.cfg.height_m} m > {limit} m")


class CtrlCInExec(DropTest):
    """Ctrl-C lands in code run by exec() of a string, as it does when it hits the dataclasses
    module building an __init__ while a mission imports."""

    def setup(self) -> None:
        super().setup()
        exec("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nfor _ in range(10**8): pass")


class CtrlCInCallback(DropTest):
    """Ctrl-C lands in Python called back from C (ctypes), as it does while numba's LLVM
    compiles a kernel: ctypes swallows the KeyboardInterrupt as 'unraisable'."""

    def setup(self) -> None:
        super().setup()
        import ctypes
        import signal

        def callback() -> None:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**8):  # the handler runs here, inside the callback
                pass

        ctypes.CFUNCTYPE(None)(callback)()


class CtrlCInTick(DropTest):
    """Ctrl-C lands in the middle of a tick (as in the video's queue hand-over), then the tick
    finishes its work: it writes `after_ctrl_c` into the results folder once the handler has
    had every chance to run."""

    def post_tick(self, world: World) -> None:
        super().post_tick(world)
        if world.tick == 200:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):  # the handler runs here
                pass
            (self.sim.recorder.dir / "after_ctrl_c").touch()
