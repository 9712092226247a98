"""Missions that fail on purpose, for the batch tests (referenced as 'batch_missions:Class')."""

from __future__ import annotations

import os
from dataclasses import dataclass

from skyswarm.core.schema import param
from skyswarm.core.world import World
from skyswarm.missions.drop_test import DropTest


@dataclass(frozen=True)
class FragileConfig:
    break_above_m: float = param(1e9, "a drop from higher raises RuntimeError mid-run, m")
    crash_above_m: float = param(1e9, "a drop from higher kills the worker process, m")


class FragileDropTest(DropTest):
    """The drop test, plus a software error or a process crash above configured heights."""

    sections = {**DropTest.sections, "fragile": FragileConfig}

    def setup(self) -> None:
        super().setup()
        if self.cfg.height_m > self.config.section("fragile").crash_above_m:
            os._exit(13)  # as a segfaulting extension would: no exception, no cleanup

    def post_tick(self, world: World) -> None:
        super().post_tick(world)
        limit = self.config.section("fragile").break_above_m
        if world.tick == 20 and self.cfg.height_m > limit:
            raise RuntimeError(f"box shattered: dropped from {self.cfg.height_m} m > {limit} m")
