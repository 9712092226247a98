"""Wireless messages: Message, MessageTransceiver, MessageDispatcher and the BaseStation agent.

Life of a message (docs/architecture.md, The tick and Communication):
1. Behaviour code calls `agent.transceiver.send(to, payload)` or `.broadcast(payload)` during a
   tick. The dispatcher only records the request (a dead agent sends nothing).
2. At the start of the next tick (phase 1) the dispatcher decides the fate of everything sent
   since, vectorised over the whole batch: bandwidth cap, delay (latency + jitter), the
   receivers of each broadcast (alive agents within range, found with a spatial index, never
   the sender), out of range, lost on air. Positions are those at the end of the sending tick.
3. At phase 1 of the delivery tick each surviving copy goes to its receiver if it is still
   alive: into the bounded queue of that channel (or to the `on_message` callback); a full queue
   drops and counts the copy.

Agents without a position (logical agents other than base stations) are reachable only on
channels of unlimited range, where their distance counts as 0.

Payloads are delivered as the same object, not a copy: zero-cost for large payloads (images,
maps), but receivers must treat payloads as read-only. All receivers of a broadcast share one
(frozen) `Message`. Every random draw comes from `sim.rng.comms`, in an order fixed by send order
and agent index, so the same seed gives the same fates.

Counted fates (per channel, per agent as sender `tx` and as receiver `rx`): see `FATES`. For every
channel: addressed = delivered + lost_on_air + out_of_range + receiver_dead + queue_overflow +
in_flight, and sent = over_bandwidth + transmitted.
"""

from __future__ import annotations

from collections import Counter
from itertools import islice
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.agent import Agent, PhysicalAgent
from skyswarm.core.comms.channels import Channel, ChannelConfig, CommsConfig, resolve_channels
from skyswarm.core.comms.fates import (
    ADDRESSED,
    DELIVERED,
    FATES,
    OVERFLOW,
    RX_DEAD,
    SENT,
    TX_DEAD,
    Copies,
    Message,
    resolve,
)
from skyswarm.core.comms.links import LinkWindow, RadioLinks
from skyswarm.core.comms.small import is_small, resolve_small
from skyswarm.core.comms.transceiver import BaseStation, MessageTransceiver
from skyswarm.core.faults import software_fault
from skyswarm.core.schema import ConfigError

__all__ = ["FATES", "BaseStation", "Message", "MessageDispatcher", "MessageTransceiver"]
__all__ += ["attach_comms", "comms_from_scenario"]

if TYPE_CHECKING:
    from skyswarm.core.config import ScenarioConfig
    from skyswarm.core.simulator import Simulator


class MessageDispatcher:
    """Collects a tick's sends, decides their fates, delivers them at phase 1 (`deliver`).

    One per Simulator (`sim.dispatcher`, made by `attach_comms`); every agent of `sim.agents`
    joins it (gets a transceiver) when it is added, or at the latest at the next `deliver()`.
    """

    def __init__(self, sim: Simulator, config: CommsConfig | None = None, file: str = "") -> None:
        cfg = config or CommsConfig()
        table = cfg.channels
        if not all(isinstance(c, ChannelConfig) for c in table.values()):
            table = resolve_channels(table, "comms", file)
        tick_s = sim.world.tick_s
        self.sim = sim
        self.config = cfg
        self.channels = [Channel(n, i, c, tick_s, file) for i, (n, c) in enumerate(table.items())]
        self._channel_ix = {c.name: c.index for c in self.channels}
        self.default_channel = "radio" if "radio" in self._channel_ix else self.channels[0].name
        self.rng = sim.rng.comms
        self.agents: list[Agent] = []
        self.transceivers: list[MessageTransceiver] = []
        self.index_of: dict[int, int] = {}
        nch = len(self.channels)
        self.alive = np.zeros(0, dtype=bool)
        self.is_base = np.zeros(0, dtype=bool)
        self.ids = np.zeros(0, dtype=np.int64)  # agent id of each row
        self._fixed = np.zeros((0, 3))  # positions of fixed agents (NaN for others)
        self._phys_idx: list[int] = []
        self._phys_slots: list[int] = []
        self._phys_rows = self._phys_slot_rows = np.zeros(0, dtype=np.intp)
        self._other_idx: list[int] = []  # agents whose `position` property is read each time
        self._unplaced: list[int] = []  # members whose position source is not sorted out yet
        self._deaths_seen = -1
        self._tx = np.zeros((nch, 0, len(FATES)), dtype=np.int64)  # by sender
        self._rx = np.zeros((nch, 0, len(FATES)), dtype=np.int64)  # by receiver
        self._in_flight = np.zeros(nch, dtype=np.int64)
        self._pending: list[tuple[int, int, int, Any, int, int, int]] = []
        self._seq = 0
        self._due: dict[int, list[Copies]] = {}
        self._log: list[np.ndarray] | None = [] if cfg.log_deliveries else None
        self.base_stations: list[BaseStation] = []
        self.down: set[int] = set()  # rows of agents cut off the air (core/events.py), alive
        self.beacon_nets: list[Any] = []  # core.beacons.BeaconNet, delivered in phase 1 too
        self._links: LinkWindow | None = None  # watch_links(): the copies of the last ticks

    # -- membership -------------------------------------------------------------------------
    def channel_index(self, name: str) -> int:
        try:
            return self._channel_ix[name]
        except KeyError:
            known = ", ".join(self._channel_ix)
            raise ValueError(f"no channel {name!r}; configured channels: {known}") from None

    def sync(self) -> None:
        """Let every agent of the simulation that has not joined yet join (see `join`)."""
        if len(self.sim.agents) != len(self.agents):
            for agent in islice(self.sim.agents.values(), len(self.agents), None):
                self.join(agent)

    def join(self, agent: Agent) -> MessageTransceiver:
        """Give an agent its transceiver. `Simulator.add_agent` syncs the dispatcher, so an
        agent has one as soon as it exists; where its position comes from is worked out on first
        use (a subclass may set its state slot after `Agent.__init__`)."""
        i = len(self.agents)
        base = isinstance(agent, BaseStation)
        default = "long_range" if base and "long_range" in self._channel_ix else None
        tx = MessageTransceiver(self, agent, i, default or self.default_channel)
        agent.transceiver = tx
        self.agents.append(agent)
        self.transceivers.append(tx)
        self.index_of[int(agent.id)] = i
        self._unplaced.append(i)
        return tx

    def _grow(self) -> None:
        """Extend the per-agent arrays to the members that joined since (amortised: once per
        batch of new agents, not once per agent)."""
        n0, n = len(self.ids), len(self.agents)
        if n0 == n:
            return
        new = self.agents[n0:]
        self.is_base = np.r_[self.is_base, [isinstance(a, BaseStation) for a in new]]
        self.ids = np.r_[self.ids, np.array([a.id for a in new], dtype=np.int64)]
        grow = ((0, 0), (0, n - n0), (0, 0))
        self._tx, self._rx = np.pad(self._tx, grow), np.pad(self._rx, grow)
        for c in self.channels:
            c.add_senders(n - n0)
        self._deaths_seen = -1

    def _place(self) -> None:
        """Sort new members by position source: fixed, world state row, or their property."""
        fixed = np.full((len(self.agents), 3), np.nan)
        fixed[: len(self._fixed)] = self._fixed
        for i in self._unplaced:
            agent = self.agents[i]
            if isinstance(agent, BaseStation):
                fixed[i] = agent.position
            elif isinstance(agent, PhysicalAgent) and _reads_state(agent):
                self._phys_idx.append(i)
                self._phys_slots.append(agent.slot)
            else:
                self._other_idx.append(i)
        self._fixed = fixed
        self._unplaced = []
        self._phys_rows = np.array(self._phys_idx, dtype=np.intp)  # gathered in one go
        self._phys_slot_rows = np.array(self._phys_slots, dtype=np.intp)

    def _refresh_alive(self) -> None:
        if self._deaths_seen != len(self.sim.deaths) or len(self.alive) != len(self.agents):
            self.alive = np.fromiter((a.alive for a in self.agents), bool, len(self.agents))
            self._deaths_seen = len(self.sim.deaths)
            for i in self.down:  # cut off: counted as a dead receiver while down
                self.alive[i] = False

    def on_air(self) -> np.ndarray:
        """(N,) bool by member row: alive and not cut off now. Brings the per-member arrays
        (counters, token buckets) up to every agent that joined first. The array is the
        dispatcher's own: read it, do not write it (beacon nets call this before their fates)."""
        self._grow()
        self._refresh_alive()
        return self.alive

    def set_down(self, agent_id: int, down: bool) -> None:
        """Cut an agent off the air (it neither sends nor receives; its sends count as from a
        dead sender, copies to it as to a dead receiver), or bring it back."""
        i = self.index_of[int(agent_id)]
        (self.down.add if down else self.down.discard)(i)
        self._deaths_seen = -1  # re-read `alive` at the next fate decision

    def set_channel_enabled(self, name: str, on: bool) -> None:
        """Switch channel `name` off (it carries nothing: every copy sent on it while off is
        out of range) or back on; ValueError for a channel not configured.

        Example (core/events.py, `channel_cut`): `sim.dispatcher.set_channel_enabled("radio",
        False)`."""
        self.channels[self.channel_index(name)].set_enabled(on)

    def positions(self) -> np.ndarray:
        """(N, 3) m, every member's current position (NaN for agents without one)."""
        if self._unplaced:
            self._place()
        pos = self._fixed.copy()
        if len(self._phys_rows):
            pos[self._phys_rows] = self.sim.world.state.position[self._phys_slot_rows]
        for i in self._other_idx:
            p = self.agents[i].position
            if p is not None:
                pos[i] = p
        return pos

    # -- sending ----------------------------------------------------------------------------
    def submit(
        self,
        tx: MessageTransceiver,
        receiver: int | None,
        payload: Any,
        channel: str | None,
        size_bytes: int | None,
    ) -> int | None:
        """Record one send for the next fate decision; returns its seq (None: sender dead)."""
        ch = self.channel_index(channel or tx.default_channel)
        self._grow()
        if not tx.agent.alive or tx.index in self.down:
            self._tx[ch, tx.index, TX_DEAD] += 1
            return None
        ridx = -1
        if receiver is not None:
            if receiver not in self.index_of:
                self.sync()
            if receiver not in self.index_of:
                raise ValueError(f"agent {tx.agent.id} sent to unknown agent id {receiver}")
            ridx = self.index_of[receiver]
        size = self.channels[ch].cfg.message_size_bytes if size_bytes is None else int(size_bytes)
        seq = self._seq
        self._seq += 1
        self._pending.append((seq, tx.index, ridx, payload, ch, size, self.sim.world.tick))
        self._tx[ch, tx.index, SENT] += 1
        return seq

    # -- phase 1 ----------------------------------------------------------------------------
    def deliver(self, tick: int) -> None:
        """Phase 1: decide the fates of everything sent since the last call, then deliver the
        copies due at `tick` to receivers still alive."""
        self.sync()
        self._grow()
        if self._pending:
            batch, self._pending = self._pending, []  # sends made while delivering go next
            self._refresh_alive()
            small = is_small(len(batch), len(self.agents))  # plain Python, same fates
            (resolve_small if small else resolve)(self, batch, tick, self.positions())
        due = self._due.pop(tick, None)
        if due:  # one hand-over per tick: one Python step per receiver, however many batches
            copies = due[0] if len(due) == 1 else Copies.concatenate(due)
            if len(copies.seq) <= SMALL_HAND_OVER:
                self._hand_over_small(copies)
            else:
                self._hand_over(copies)
        for net in self.beacon_nets:
            net.deliver(tick)

    def schedule(self, copies: Copies, tick: int) -> None:
        self._due.setdefault(tick, []).append(copies)
        self._in_flight += np.bincount(copies.channel, minlength=len(self.channels))

    def count(
        self,
        channel: np.ndarray,
        sender: np.ndarray,
        receiver: np.ndarray | None,
        fate: np.ndarray | int,
    ) -> None:
        """Add one to each (channel, agent, fate) triple, by sender and (if given) receiver."""
        n, nf = self._tx.shape[1], len(FATES)
        _add_ones(self._tx.reshape(-1), (channel * n + sender) * nf + fate)  # views: contiguous
        if receiver is not None:
            _add_ones(self._rx.reshape(-1), (channel * n + receiver) * nf + fate)
            self._keep_links(channel, sender, receiver, fate)

    def count_rows(
        self, channel: int, sender: np.ndarray, receiver: np.ndarray | None, fate: int
    ) -> None:
        """One copy of `fate` on `channel` per entry of `sender` (member rows, repeats allowed)
        and, if given, of `receiver`: one bincount per call, for whole beacon rounds."""
        n = self._tx.shape[1]
        self._tx[channel, :, fate] += np.bincount(sender, minlength=n)
        if receiver is not None:
            self._rx[channel, :, fate] += np.bincount(receiver, minlength=n)
            self._keep_links(channel, sender, receiver, fate)

    def count_per_row(self, channel: int, fate: int, tx: np.ndarray, rx: np.ndarray) -> None:
        """Add `tx[i]` copies of `fate` on `channel` to member row i as sender and `rx[i]` as
        receiver, (N,) int each (N = `row_count()`): `count_rows` of copies counted by row
        already (no links kept: only while `links_watched()` is False)."""
        self._tx[channel, :, fate] += tx
        self._rx[channel, :, fate] += rx

    def row_count(self) -> int:
        """N, the member rows of the per-row counters."""
        return self._tx.shape[1]

    def count_all(self, channel: int, fate: int, k: list[int], *, receiver: bool = False) -> None:
        """Add `k[i]` copies of `fate` on `channel` to member row `i`, every row, as sender (or
        as receiver with `receiver=True`)."""
        (self._rx if receiver else self._tx)[channel, :, fate] += np.array(k, dtype=np.int64)

    def add_counts(self, tx: dict[int, int], rx: dict[int, int]) -> None:
        """Add copies to the counters by flat index ((channel * N + agent) * len(FATES) + fate,
        into `_tx` by sender and `_rx` by receiver): the small-batch path's one update."""
        for counts, deltas in ((self._tx, tx), (self._rx, rx)):
            if deltas:  # keys are unique: a fancy-indexed += adds each once
                at = np.fromiter(deltas, np.intp, len(deltas))
                counts.reshape(-1)[at] += np.fromiter(deltas.values(), np.int64, len(deltas))

    def links_watched(self) -> bool:
        """True after `watch_links`: copies decided with their receiver are kept."""
        return self._links is not None

    def keep_links(
        self, channel: np.ndarray, sender: np.ndarray, receiver: np.ndarray, fate: np.ndarray
    ) -> None:
        """Keep decided copies (member rows) for `recent_links`, if watched (`count` does it
        for its copies)."""
        self._keep_links(channel, sender, receiver, fate)

    def watch_links(self, ticks: int) -> None:
        """From now on keep every copy decided with its receiver known for `ticks` ticks, for
        `recent_links` (core/comms/links.py; off until called: a run pays nothing)."""
        self._links = LinkWindow(ticks)

    def recent_links(self) -> RadioLinks:
        """The copies of the watched window up to this tick (empty unless `watch_links`)."""
        if self._links is None:
            return RadioLinks.empty()
        return self._links.recent(self.sim.world.tick)

    def _keep_links(
        self, channel: Any, sender: np.ndarray, receiver: np.ndarray, fate: Any
    ) -> None:
        if self._links is None or (np.ndim(fate) == 0 and int(fate) == ADDRESSED):
            return
        keep = slice(None) if np.ndim(fate) == 0 else np.asarray(fate) != ADDRESSED
        ch = channel if np.ndim(channel) == 0 else np.asarray(channel)[keep]
        f = fate if np.ndim(fate) == 0 else np.asarray(fate)[keep]
        ids = self.ids
        self._links.add(self.sim.world.tick, ids[sender[keep]], ids[receiver[keep]], ch, f)

    def add_in_flight(self, channel: int, copies: int) -> None:
        """`copies` more (negative: fewer) copies on the air on `channel`, for `summary()`; a
        beacon net adds its copies when it schedules them and takes them off at delivery."""
        self._in_flight[channel] += copies

    def count_n(
        self, channel: int, rows: np.ndarray, k: np.ndarray, fate: int, *, receiver: bool = False
    ) -> None:
        """Add `k[i]` copies of `fate` on `channel` to agent row `rows[i]`, as sender (or as
        receiver with `receiver=True`)."""
        np.add.at((self._rx if receiver else self._tx)[channel, :, fate], rows, k)

    def _hand_over(self, c: Copies) -> None:
        self._refresh_alive()
        self._in_flight -= np.bincount(c.channel, minlength=len(self.channels))
        fate = np.where(self.alive[c.receiver], DELIVERED, RX_DEAD)
        live = np.flatnonzero(fate == DELIVERED)
        key = c.receiver[live] * len(self.channels) + c.channel[live]
        by_key = np.argsort(key, kind="stable")
        order = live[by_key]  # by receiver, then seq
        if len(order):
            keys = key[by_key]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            ends = np.r_[starts[1:], len(order)]
            messages = c.messages[order].tolist()
            firsts = order[starts]
            receivers, channels = c.receiver[firsts].tolist(), c.channel[firsts].tolist()
            groups = zip(starts.tolist(), ends.tolist(), receivers, channels)
            caps = [ch.cfg.queue_capacity for ch in self.channels]
            txs = self.transceivers
            for s, e, r, ch in groups:  # one Python step per (receiver, channel), not per copy
                taken = self._hand_group(txs[r], ch, messages[s:e], caps[ch])
                if taken < e - s:
                    fate[order[s + taken : e]] = OVERFLOW
        self.count(c.channel, c.sender, c.receiver, fate)
        if self._log is not None:
            ok = fate == DELIVERED
            tick = np.full(int(ok.sum()), self.sim.world.tick, dtype=np.int64)
            self._log.append(np.column_stack([tick, c.seq[ok], self.ids[c.receiver[ok]]]))

    def _hand_over_small(self, c: Copies) -> None:
        """`_hand_over` copy by copy in plain Python for a few copies (a small swarm's tick):
        the same queues, callbacks (by receiver, then channel, then seq), counters and log."""
        self._refresh_alive()
        alive = self.alive.tolist()
        rcv, chl, snd = c.receiver.tolist(), c.channel.tolist(), c.sender.tolist()
        nch = len(self.channels)
        for ch, k in Counter(chl).items():
            self._in_flight[ch] -= k
        fate = [DELIVERED if alive[r] else RX_DEAD for r in rcv]
        keys = [r * nch + ch for r, ch in zip(rcv, chl)]
        order = [i for i, r in enumerate(rcv) if alive[r]]
        order.sort(key=keys.__getitem__)  # stable: by receiver, channel, then seq
        if order:
            msgs = c.messages.tolist()
            messages = [msgs[i] for i in order]
            caps = [ch.cfg.queue_capacity for ch in self.channels]
            txs = self.transceivers
            if len({keys[i] for i in order}) == len(order):  # one copy per receiver queue
                for s, i in enumerate(order):  # `_hand_over`'s steps for groups of one
                    tx = txs[rcv[i]]
                    if tx.on_message is not None:
                        self._call_back(tx, messages[s : s + 1])
                        continue
                    ch = chl[i]
                    q = tx.queues[ch]
                    room = caps[ch] - len(q)
                    if room >= 1:
                        q.append(messages[s])
                    else:
                        q.extend(messages[s : s + room])
                        for j in order[s + room : s + 1]:
                            fate[j] = OVERFLOW
            else:
                self._hand_groups(order, keys, rcv, chl, messages, fate)
        n, nf = self._tx.shape[1], len(FATES)  # after the callbacks: they may add agents
        tx_n = Counter([(ch * n + a) * nf + f for ch, a, f in zip(chl, snd, fate)])
        rx_n = Counter([(ch * n + b) * nf + f for ch, b, f in zip(chl, rcv, fate)])
        self.add_counts(tx_n, rx_n)
        if self._links is not None or self._log is not None:
            fates = np.array(fate, dtype=np.int64)
            self._keep_links(c.channel, c.sender, c.receiver, fates)
            if self._log is not None:
                ok = fates == DELIVERED
                tick = np.full(int(ok.sum()), self.sim.world.tick, dtype=np.int64)
                self._log.append(np.column_stack([tick, c.seq[ok], self.ids[c.receiver[ok]]]))

    def _hand_groups(
        self,
        order: list[int],
        keys: list[int],
        rcv: list[int],
        chl: list[int],
        messages: list[Message],
        fate: list[int],
    ) -> None:
        """`_hand_over_small`'s queues and callbacks, one group per (receiver, channel)."""
        caps = [ch.cfg.queue_capacity for ch in self.channels]
        txs = self.transceivers
        s, end = 0, len(order)
        while s < end:  # one group per (receiver, channel), as `_hand_over`
            first = order[s]
            r, ch, key = rcv[first], chl[first], keys[first]
            e = s + 1
            while e < end and keys[order[e]] == key:
                e += 1
            taken = self._hand_group(txs[r], ch, messages[s:e], caps[ch])
            for i in order[s + taken : e]:
                fate[i] = OVERFLOW
            s = e

    def _hand_group(
        self, tx: MessageTransceiver, channel: int, messages: list[Message], capacity: int
    ) -> int:
        """One receiver's copies on one channel (seq order): to its callback, else into its
        queue as far as the capacity allows. Returns how many were taken (the rest overflow)."""
        if tx.on_message is not None:
            self._call_back(tx, messages)
            return len(messages)
        q = tx.queues[channel]
        taken = min(len(messages), max(0, capacity - len(q)))
        q.extend(messages[:taken])
        return taken

    def _call_back(self, tx: MessageTransceiver, messages: list[Message]) -> None:
        """Hand messages (in seq order) to an on-message callback; a raise is a software fault."""
        for m in messages:
            try:
                tx.on_message(m)  # type: ignore[misc]
            except Exception as exc:
                if self.sim.settings.strict:
                    raise
                software_fault(self.sim, tx.agent, exc)

    # -- results ----------------------------------------------------------------------------
    def totals(self) -> dict[str, dict[str, int]]:
        """Per channel: every fate's count, plus copies in flight."""
        self._grow()
        out = {}
        for c in self.channels:
            row = self._tx[c.index].sum(axis=0)
            out[c.name] = {f: int(v) for f, v in zip(FATES, row)}
            out[c.name]["in_flight"] = int(self._in_flight[c.index])
        return out

    def agent_counts(self, agent: Agent | int) -> dict[str, dict[str, dict[str, int]]]:
        """One agent's counts: channel -> {"tx": fate -> n (as sender), "rx": (as receiver)}."""
        self._grow()
        i = self.index_of[agent.id if isinstance(agent, Agent) else int(agent)]
        return {
            c.name: {
                "tx": {f: int(v) for f, v in zip(FATES, self._tx[c.index, i])},
                "rx": {f: int(v) for f, v in zip(FATES, self._rx[c.index, i]) if f != "sent"},
            }
            for c in self.channels
        }

    def summary(self) -> dict[str, Any]:
        """For summary.json: totals per channel and the non-zero counts of every agent."""
        self._grow()  # agents added since the last tick have no counter rows yet
        per_agent: dict[str, Any] = {}
        for i, a in enumerate(self.agents):
            if self._tx[:, i].any() or self._rx[:, i].any():
                counts = self.agent_counts(a)
                per_agent[str(a.id)] = {
                    ch: {side: {f: n for f, n in d.items() if n} for side, d in sides.items()}
                    for ch, sides in counts.items()
                }
        return {"channels": self.totals(), "per_agent": per_agent}

    def sample(self) -> dict[str, int]:
        """For each time-series row: `comms.CHANNEL.FATE` running totals (constant keys)."""
        return {
            f"comms.{ch}.{fate}": n for ch, row in self.totals().items() for fate, n in row.items()
        }

    def delivery_log(self) -> np.ndarray:
        """(K, 3) int64 rows (delivery tick, seq, receiver id); needs `log_deliveries`."""
        if self._log is None:
            raise RuntimeError("delivery log is off: set comms.log_deliveries = true")
        return np.concatenate(self._log) if self._log else np.zeros((0, 3), dtype=np.int64)


def attach_comms(
    sim: Simulator, config: CommsConfig | None = None, file: str = ""
) -> MessageDispatcher:
    """Give `sim` a dispatcher (and the configured base stations); also for sims built by hand."""
    dispatcher = MessageDispatcher(sim, config, file)
    sim.dispatcher = dispatcher  # Simulator.add_agent calls dispatcher.sync() from now on
    for spec in dispatcher.config.base_stations:
        bs = BaseStation(sim, spec.id, spec.position, spec.name or None)
        dispatcher.base_stations.append(bs)
    dispatcher.sync()
    return dispatcher


def comms_from_scenario(sim: Simulator, scenario: ScenarioConfig) -> MessageDispatcher:
    """`attach_comms` for `Simulator.from_scenario`: base-station ids must not clash."""
    cfg = scenario.comms
    taken = {s.id for s in scenario.agents.resolved()}
    for i, bs in enumerate(cfg.base_stations):
        if bs.id in taken:
            raise ConfigError(
                scenario.file, f"comms.base_stations[{i}].id", bs.id, "an id no agent uses"
            )
    return attach_comms(sim, cfg, scenario.file)


# copies due at one tick at or below which `deliver` hands them over in plain Python
# (`_hand_over_small`): its cost grows with the copies, `_hand_over`'s is mostly fixed
# (bench/comms_dispatch.py --crossover: at about 250 copies a tick the two cost the same).
SMALL_HAND_OVER = 128


def _reads_state(agent: PhysicalAgent) -> bool:
    """True if the agent's position is the world state row (gathered for all in one go)."""
    return type(agent).position is PhysicalAgent.position


def _add_ones(flat: np.ndarray, index: np.ndarray) -> None:
    """`flat[i] += 1` for every entry of `index` (repeats add up): one bincount over the whole
    array when the entries are many for its size (a small swarm's tick), else np.add.at (a
    large swarm's few copies, where a full-size bincount would cost more than the copies)."""
    if 8 * np.size(index) >= flat.size:
        flat += np.bincount(index, minlength=flat.size)
    else:
        np.add.at(flat, index, 1)
