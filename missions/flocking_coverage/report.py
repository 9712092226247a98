"""What the flocking-coverage mission measures and shows: metrics, samples, maps, HUD, overlays.

All of it reads the true state (positions from the world, every member's own maps) and is never
fed back to the agents. `FlockReport` is mixed into the mission (missions/flocking_coverage/),
whose state it reads: the areas, the members, the base stations' knowledge, the event log.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skyswarm.missions.coverage import Area, footprint_half_m
from skyswarm.missions.flocking_coverage.flock import (
    CameraConfig,
    FlockConfig,
    FlockContext,
    FlockUav,
)


class FlockReport:
    """Instrumentation of the flocking-coverage mission (a mixin: see the module doc)."""

    areas: list[Area]
    uavs: list[FlockUav]
    flock: FlockConfig
    camera: CameraConfig
    base_known: list[np.ndarray]
    true_seen: list[np.ndarray]
    owner: list[np.ndarray]
    slot_m: float
    ctx: FlockContext

    def _measure(self) -> None:
        alive = [u for u in self.uavs if u.alive]
        for k, grid in enumerate(self.true_seen):
            for u in self.uavs:
                grid |= u.seen[k]
        leaders = [u for u in alive if u.leader is not None]
        who = tuple(u.id for u in leaders)
        if not self.leader_sets or self.leader_sets[-1][1] != who:
            self.leader_sets.append((self.sim.time_s, who))
            self.max_leaders = max(self.max_leaders, len(who))
        leader = min(leaders, key=lambda u: u.id) if leaders else None
        lid = leader.id if leader is not None else None
        if lid != self.acting_leader and lid is not None:
            self.leader_changes.append((self.sim.time_s, lid))
        self.acting_leader = lid
        if leader is not None:
            self._record_assignment(leader)
        state = self.sim.world.state
        pos = state.position[[u.slot for u in alive]] if alive else np.zeros((0, 3))
        if len(pos) > 1:
            d = np.linalg.norm(pos[:, None] - pos[None], axis=2)
            d[np.diag_indices(len(pos))] = np.inf
            self.min_sep_now = float(d.min())
            self.min_sep = min(self.min_sep, self.min_sep_now)
        self.form_err_now = self._formation_error(alive)
        done = bool(leaders) and all(u.leader.plan.stage == "done" for u in leaders)
        self.check_delivery(self.sim.time_s, done)

    def _formation_error(self, alive: list[FlockUav]) -> float:
        """Mean horizontal distance (m) of sweeping followers from their true slots."""
        by_id = {u.id: u for u in alive}
        errors = []
        for u in alive:
            if u.formation is None or u.formation[3] != "sweep":
                continue
            lead = by_id.get(u.formation[0])
            if lead is None:
                continue
            slot = lead.position[:2] + u.formation[1] * self.areas[u.formation[2]].uhat
            errors.append(float(np.hypot(*(u.position[:2] - slot))))
        if not errors:
            return float("nan")
        err = float(np.mean(errors))
        self._form_sum, self._form_n = self._form_sum + err, self._form_n + 1
        self.form_err_max = max(self.form_err_max, max(errors))
        return err

    def _record_assignment(self, leader: FlockUav) -> None:
        """Responsibility map: the member whose slot strip covers each cell of a swept lane."""
        plan = leader.leader.plan if leader.leader is not None else None
        if plan is None or plan.stage != "sweep":
            return
        lane = plan.lanes[plan.lane]
        key = (lane, plan.offsets)
        if key in self._assigned:
            return
        self._assigned.add(key)
        area = self.areas[lane.area]
        half = footprint_half_m(self.flock.altitude_m, self.camera.fov_deg)
        v_lo, v_hi = min(lane.v0, lane.v1) - half, max(lane.v0, lane.v1) + half
        for member, off in plan.offsets:
            u = lane.u + off
            mask = area.strip_mask(u - self.slot_m / 2, u + self.slot_m / 2, v_lo, v_hi)
            self.owner[lane.area][mask] = member

    def sample(self) -> dict[str, float]:
        row: dict[str, float] = {"coverage": self.coverage}
        for area, known in zip(self.areas, self.base_known):
            row[f"coverage_area_{area.id}"] = float(known.mean())
        row["true_coverage"] = sum(int(g.sum()) for g in self.true_seen) / self.total_cells
        row["alive_uavs"] = int(self.swarm.alive.sum())
        row["leader_id"] = -1 if self.acting_leader is None else self.acting_leader
        row["min_separation_m"] = self.min_sep_now
        row["formation_error_m"] = self.form_err_now
        return row

    def uncovered_owned_by_dead(self) -> tuple[int, float]:
        """Cells the base station does not know as seen, and the fraction of them whose
        responsible member (the last slot strip assigned over them) is dead."""
        missing = np.concatenate([(~k).ravel() for k in self.base_known])
        owners = np.concatenate([o.ravel() for o in self.owner])[missing]
        n = int(missing.sum())
        return n, float(np.isin(owners, self.lost).mean()) if n else 0.0

    def metrics(self) -> dict[str, Any]:
        totals = self.sim.dispatcher.totals()
        lost_fates = ("lost_on_air", "out_of_range", "queue_overflow", "receiver_dead")
        uncovered, by_dead = self.uncovered_owned_by_dead()
        return {
            "coverage": self.coverage,
            "time_to_99_s": self.time_to[0.99],
            "time_to_95_s": self.time_to[0.95],
            "coverage_by_area": {
                str(a.id): float(k.mean()) for a, k in zip(self.areas, self.base_known)
            },
            "true_coverage": sum(int(g.sum()) for g in self.true_seen) / self.total_cells,
            "time_to_50_s": self.time_to[0.5],
            "time_to_90_s": self.time_to[0.9],
            "agents_lost": len(self.lost),
            "lost_ids": list(self.lost),
            "leader_changes": [[round(t, 3), i] for t, i in self.leader_changes],
            "leaders_over_time": [[round(t, 3), list(ids)] for t, ids in self.leader_sets],
            "max_simultaneous_leaders": self.max_leaders,
            "areas_short": self.areas_short(),
            "sweep_done_s": self.sweep_done_s,
            "rescout": self.flock.rescout,
            "mule": self.flock.mule,  # on when set, or detected (base station out of reach)
            "uncovered_cells": uncovered,
            "uncovered_owned_by_dead": by_dead,
            "messages_sent": sum(c["sent"] for c in totals.values()),
            "messages_delivered": sum(c["delivered"] for c in totals.values()),
            "messages_lost": sum(c[f] for c in totals.values() for f in lost_fates),
            "min_separation_m": self.min_sep if np.isfinite(self.min_sep) else None,
            "formation_error_mean_m": self._form_sum / self._form_n if self._form_n else None,
            "formation_error_max_m": self.form_err_max if self._form_n else None,
            "slot_spacing_m": self.slot_m,
            "avoidance": None if self.swarm.avoidance is None else self.swarm.avoidance.summary(),
        }

    def teardown(self) -> None:
        if self.sim.recorder is None:
            return
        np.savez_compressed(self.sim.recorder.dir / "coverage.npz", **self.map_layer())

    def map_layer(self) -> dict[str, np.ndarray]:
        """The `coverage.npz` arrays read by core/plot.py (see its module doc)."""
        return {
            "areas": np.stack([a.corners() for a in self.areas]),
            "area_ids": np.array([a.id for a in self.areas]),
            "cell_polygons": np.concatenate([a.cell_polygons() for a in self.areas]),
            "cell_values": np.concatenate([k.ravel() for k in self.base_known]).astype(float),
            "cell_seen": np.concatenate([g.ravel() for g in self.true_seen]),
            "cell_owner": np.concatenate([o.ravel() for o in self.owner]),
            "cell_area": np.concatenate([np.full(a.cells, a.id) for a in self.areas]),
        }

    def hud(self) -> list[str]:
        """The views' headline: coverage known at the base station, the acting leader, state."""
        target = self.cov.target
        leader = "none" if self.acting_leader is None else str(self.acting_leader)
        state = "done" if self.done else ("sweep done" if self.sweep_done_s else "sweeping")
        return [
            f"coverage {100 * self.coverage:5.1f} % (target {100 * target:.0f} %)",
            f"leader {leader}   alive UAVs {int(self.swarm.alive.sum())}   {state}",
        ]

    def overlays(self) -> list[dict[str, Any]]:
        """Area outlines and the cells the base station knows as seen, as plain data for
        `Mission.overlays` (core.hooks.Overlay): `segments` (M, 2, 3) / `corners` (M, 4, 3), m."""
        # what is known, and where the areas are (a `move_area` event bumps a version)
        known = (sum(int(k.sum()) for k in self.base_known), tuple(self.ctx.versions))
        if getattr(self, "_overlay_key", None) != known:
            outlines = []
            for a in self.areas:
                c = np.c_[a.corners(), np.full(4, 0.03)]
                outlines.append(np.stack([c, np.roll(c, -1, axis=0)], axis=1))
            polys = [a.run_polygons(k) for a, k in zip(self.areas, self.base_known)]
            cells = np.concatenate(polys)
            quads = np.concatenate([cells, np.full((*cells.shape[:2], 1), 0.02)], axis=2)
            self._overlays = [
                {"segments": np.concatenate(outlines), "color": (1.0, 0.85, 0.2, 1.0)},
                {"corners": quads, "color": (0.2, 0.8, 0.3, 0.35)},
            ]
            self._overlay_key = known
        return self._overlays
