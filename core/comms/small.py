"""The fate decision of a small batch of sends, copy by copy in plain Python.

`fates.resolve` is vectorised: whatever the batch, it costs about a hundred numpy calls (a few
hundred microseconds), while a swarm of 10-30 UAVs sends one or two frames per tick. For such a
batch (`is_small`: sends x members <= SMALL_PAIRS) `resolve_small` decides the same fates in
plain Python, about 2x cheaper at 10-30 UAVs, and bit for bit the same:

- the same random draws: the same calls on the comms stream with the same sizes, in the same
  order (one `Channel.delays` call per channel with sends, then one `rng.random(candidates)`);
- the same floating-point operations in the same order: squared distances summed
  (dx*dx + dy*dy) + dz*dz as numpy sums a row of three, the brute-force range test of
  `neighbours_within` (a small batch never reaches its KD-tree), distances as `np.linalg.norm`
  computes them (the square root of that sum), loss probabilities from the loss model's own
  vectorised `probability` on the same distances (constant loss: the configured value);
- the same counters, messages, schedule (copies by due tick, in (seq, receiver) order) and
  link records.

tests/core/test_comms_small.py runs both paths on the same random batches (dead and cut-off
agents, agents without a position, unicasts, unlimited and base-station channels, bandwidth caps,
distance-dependent loss, a disabled channel) and checks every counter, copy and draw is equal.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from skyswarm.core.comms.channels import ConstantLoss
from skyswarm.core.comms.fates import (
    ADDRESSED,
    FATES,
    LOST,
    OUT_OF_RANGE,
    OVER_BW,
    RX_DEAD,
    Copies,
    FateSink,
    Message,
)

# sends x members at or below which a tick's batch is decided in plain Python. Its cost grows
# with the copies (all pairs in range, the worst case, ~3x numpy's cost per copy), numpy's has a
# large fixed part. Measured with `python bench/comms_dispatch.py --crossover` (CPU time, machine
# at load 4-6; small-batch / vectorised): every pair in range, 32 members: 0.56 at 1 send, 0.53
# at 4 (128 pairs), 1.12 at 8 (256); 100 members: 0.92 at 1, 1.28 at 2. Few neighbours (1 km
# square): 0.26 at 100 pairs, 0.47 at 800, 0.93 at 1,600. 128 keeps the worst case below 1.
SMALL_PAIRS = 128


def is_small(sends: int, members: int) -> bool:
    """True if a batch of `sends` among `members` agents is decided by `resolve_small`."""
    return sends * members <= SMALL_PAIRS


def resolve_small(d: FateSink, batch: list[tuple], now: int, pos: np.ndarray) -> None:
    """`fates.resolve` for a small batch (module docstring): same arguments, same effects."""
    chans = d.channels
    n, nf = len(d.ids), len(FATES)  # members: the counters' rows
    tx: dict[int, int] = {}  # flat counter index -> copies to add, by sender
    rx: dict[int, int] = {}  # by receiver
    capped = [c for c in chans if c.bucket_bytes > 0]
    if capped:
        ok = [True] * len(batch)
        for c in capped:
            ks = [k for k, b in enumerate(batch) if b[4] == c.index]
            if not ks:
                continue
            snd = np.array([batch[k][1] for k in ks], dtype=np.int64)
            size = np.array([batch[k][5] for k in ks], dtype=np.int64)
            for k, fits in zip(ks, c.bandwidth_ok(now, snd, size).tolist()):
                if not fits:
                    ok[k] = False
                    _add(tx, (c.index * n + batch[k][1]) * nf + OVER_BW)
        batch = [b for b, keep in zip(batch, ok) if keep]
        if not batch:
            d.add_counts(tx, rx)
            return
    # one delay per transmitted send: by channel, then send order
    due = [0] * len(batch)
    for c in chans:
        ks = [k for k, b in enumerate(batch) if b[4] == c.index]
        if ks:
            for k, delay in zip(ks, c.delay_ticks(d.rng, len(ks))):
                t = batch[k][6] + delay
                due[k] = t if t > now else now
    ids = d.ids.tolist()
    names = [c.name for c in chans]
    messages = []
    for (q, s, r, p, c, z, t), u in zip(batch, due):
        rid = -1 if r < 0 else ids[r]
        messages.append(Message(q, ids[s], None if rid < 0 else rid, names[c], p, t, u, z))
    # receiver copies in canonical order, by message then receiver (`_fan_out`), each decided
    # as it is made: receiver dead, out of range, or a candidate for the loss draw. Every copy
    # is addressed; a broadcast's copies to the agents it could address but does not reach are
    # counted in bulk (`_count_unreached`), by sender here and by receiver below
    alive, base = d.alive.tolist(), d.is_base.tolist()
    xyz = pos.tolist()
    alive_rows = [a for a in range(n) if alive[a]]
    located: list[int] | None = None  # alive with a finite position, when first needed
    n_base = -1  # alive base stations, when first needed
    heard: dict[int, list[int]] = {}  # channel -> broadcasts heard, by receiver row
    constant = [type(c.loss_model) is ConstantLoss for c in chans]
    loss = [float(c.cfg.loss) for c in chans]
    txk: list[int] = []  # flat counter index of each copy (one more), by sender
    rxk: list[int] = []  # by receiver
    cmsg: list[int] = []  # per copy: message row, receiver row, fate (-1: undecided)
    crcv: list[int] = []
    fate: list[int] = []
    cand: list[int] = []  # per loss candidate: copy, loss probability (None: model's)
    p_loss: list[float | None] = []
    dist: list[float] = []  # per candidate, distance m (as np.linalg.norm computes it)
    for k, (_, s, r, _, c, _, _) in enumerate(batch):
        chan = chans[c]
        range_m = chan.range_m
        base_link = chan.cfg.link == "base_station"
        if r >= 0:
            cmsg.append(k)
            crcv.append(r)
            txk.append((c * n + s) * nf + ADDRESSED)
            rxk.append((c * n + r) * nf + ADDRESSED)
            if not alive[r]:
                fate.append(RX_DEAD)
                continue
            ps, pa = xyz[s], xyz[r]
            dx, dy, dz = ps[0] - pa[0], ps[1] - pa[1], ps[2] - pa[2]
            dd = math.sqrt(dx * dx + dy * dy + dz * dz)
            if dd != dd and math.isinf(range_m):
                dd = 0.0  # no position: unlimited range only
            if not (dd <= range_m) or (base_link and not (base[s] or base[r])):
                fate.append(OUT_OF_RANGE)
                continue
            cand.append(len(fate))
            fate.append(-1)
            p_loss.append(loss[c] if constant[c] else None)
            dist.append(dd)
            continue
        if c not in heard:
            heard[c] = [0] * n
        got = heard[c]
        reached = 0
        if math.isinf(range_m):  # every other alive agent: always in range
            ps = xyz[s]
            for a in alive_rows:
                if a != s and (not base_link or base[a] or base[s]):
                    cmsg.append(k)
                    crcv.append(a)
                    got[a] += 1
                    reached += 1
                    cand.append(len(fate))
                    fate.append(-1)
                    if constant[c]:
                        p_loss.append(loss[c])
                        dist.append(0.0)  # not read
                        continue
                    pa = xyz[a]
                    dx, dy, dz = ps[0] - pa[0], ps[1] - pa[1], ps[2] - pa[2]
                    dd = math.sqrt(dx * dx + dy * dy + dz * dz)
                    p_loss.append(None)
                    dist.append(0.0 if dd != dd else dd)
        else:
            ox, oy, oz = xyz[s]
            if math.isfinite(ox) and math.isfinite(oy) and math.isfinite(oz):
                if located is None:
                    located = (
                        alive_rows
                        if np.isfinite(pos).all()
                        else [a for a in alive_rows if all(map(math.isfinite, xyz[a]))]
                    )
                r2 = range_m * range_m
                p = loss[c] if constant[c] else None
                for a in located:  # the brute-force test of `neighbours_within`
                    pa = xyz[a]
                    dx, dy, dz = ox - pa[0], oy - pa[1], oz - pa[2]
                    d2 = dx * dx + dy * dy + dz * dz
                    if d2 <= r2 and a != s and (not base_link or base[a] or base[s]):
                        cmsg.append(k)
                        crcv.append(a)
                        got[a] += 1
                        reached += 1
                        dd = math.sqrt(d2)  # sender - receiver: `resolve`'s distance
                        if dd <= range_m:
                            cand.append(len(fate))
                            fate.append(-1)
                            p_loss.append(p)
                            dist.append(dd)
                        else:
                            fate.append(OUT_OF_RANGE)
            # else no position: reaches nobody
        potential = len(alive_rows) - alive[s]
        if base_link and not base[s]:
            if n_base < 0:
                n_base = sum(1 for a in alive_rows if base[a])
            potential = n_base
        row = (c * n + s) * nf
        _add(tx, row + ADDRESSED, potential)
        if potential != reached:
            _add(tx, row + OUT_OF_RANGE, potential - reached)
    for c, got in heard.items():  # by receiver: the broadcasts each alive agent could hear
        b = [x[1] for x in batch if x[2] < 0 and x[4] == c]
        own = [0] * n
        for x in b:
            own[x] += 1
        nb = len(b)
        if chans[c].cfg.link == "base_station":
            nbs = sum(1 for x in b if base[x])  # a non-base agent hears base stations only
            could = [(nb - o if bs else nbs) if al else 0 for o, bs, al in zip(own, base, alive)]
        else:
            could = [nb - o if al else 0 for o, al in zip(own, alive)]
        d.count_all(c, ADDRESSED, could, receiver=True)  # those heard were copies: `got`
        d.count_all(c, OUT_OF_RANGE, [k - g for k, g in zip(could, got)], receiver=True)
    if None in p_loss:  # a loss model's own probabilities, channel by channel
        for chan in chans:
            m = [i for i, j in enumerate(cand) if batch[cmsg[j]][4] == chan.index]
            if m and not constant[chan.index]:
                arr = np.empty(len(m))
                arr[:] = chan.loss_model.probability(np.array([dist[i] for i in m]))
                for i, v in zip(m, arr.tolist()):
                    p_loss[i] = v
    for j, u, p in zip(cand, d.rng.random(len(cand)).tolist(), p_loss):
        if u < p:  # type: ignore[operator]  # every None was filled above
            fate[j] = LOST
    done = [j for j, f in enumerate(fate) if f >= 0]
    for j in done:
        k, f = cmsg[j], fate[j]
        c = batch[k][4]
        txk.append((c * n + batch[k][1]) * nf + f)
        rxk.append((c * n + crcv[j]) * nf + f)
    for keys, deltas in ((txk, tx), (rxk, rx)):
        for key, k in Counter(keys).items():
            deltas[key] = deltas.get(key, 0) + k
    d.add_counts(tx, rx)
    if done and d.links_watched():
        arr = np.array([[batch[cmsg[j]][4], batch[cmsg[j]][1], crcv[j], fate[j]] for j in done])
        d.keep_links(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])
    # the rest is scheduled, one batch per due tick (earliest first), in copy order
    going = [j for j, f in enumerate(fate) if f < 0]
    if not going:
        return
    frames = np.empty(len(batch), dtype=object)
    frames[:] = messages
    sends = np.array([(b[0], b[1], b[4]) for b in batch], dtype=np.int64)  # seq, sender, ch
    ticks = sorted({due[cmsg[j]] for j in going})
    for t in ticks:
        g = going if len(ticks) == 1 else [j for j in going if due[cmsg[j]] == t]
        rows = np.array([cmsg[j] for j in g], dtype=np.intp)
        at = sends[rows]
        receiver = np.array([crcv[j] for j in g], dtype=np.int64)
        d.schedule(Copies(frames[rows], at[:, 0], at[:, 1], receiver, at[:, 2]), t)


def _add(deltas: dict[int, int], key: int, k: int = 1) -> None:
    """`k` more copies at flat counter index `key`."""
    deltas[key] = deltas.get(key, 0) + k
