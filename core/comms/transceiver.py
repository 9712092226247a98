"""The agent's side of comms: its `MessageTransceiver` (send, broadcast, bounded receive queues)
and the `BaseStation` logical agent. The dispatcher that carries messages is in dispatcher.py.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from skyswarm.core.agent import Agent
from skyswarm.core.comms.fates import Message

if TYPE_CHECKING:
    from skyswarm.core.comms.dispatcher import MessageDispatcher
    from skyswarm.core.simulator import Simulator


class MessageTransceiver:
    """An agent's radio: send, broadcast, and one bounded receive queue per channel.

    With `on_message` set, delivered messages go to that callback (at phase 1, in send order)
    instead of the queue; an exception in it is a software fault of the agent.
    """

    def __init__(
        self, dispatcher: MessageDispatcher, agent: Agent, index: int, default_channel: str
    ) -> None:
        self.dispatcher = dispatcher
        self.agent = agent
        self.index = index  # row of this agent in the dispatcher's arrays
        self.default_channel = default_channel
        self.queues: list[deque[Message]] = [deque() for _ in dispatcher.channels]
        self.on_message: Callable[[Message], Any] | None = None

    def send(
        self,
        to: Agent | int,
        payload: Any,
        channel: str | None = None,
        size_bytes: int | None = None,
    ) -> int | None:
        """Unicast to an agent (or id); returns the message's seq, None if this agent is dead."""
        receiver = to.id if isinstance(to, Agent) else int(to)
        return self.dispatcher.submit(self, receiver, payload, channel, size_bytes)

    def broadcast(
        self, payload: Any, channel: str | None = None, size_bytes: int | None = None
    ) -> int | None:
        """To every alive agent within the channel's range (not to self)."""
        return self.dispatcher.submit(self, None, payload, channel, size_bytes)

    def receive(self, channel: str | None = None) -> list[Message]:
        """Drain the queue of one channel, or of all (ordered by delivery tick, then seq)."""
        if channel is not None:
            q = self.queues[self.dispatcher.channel_index(channel)]
            out = list(q)
            q.clear()
            return out
        full = [q for q in self.queues if q]
        out = [m for q in full for m in q]
        for q in full:
            q.clear()
        if len(full) > 1:
            out.sort(key=lambda m: (m.delivery_tick, m.seq))
        return out

    def __len__(self) -> int:
        return sum(len(q) for q in self.queues)


class BaseStation(Agent):
    """A logical agent (no body) at a fixed position; its default channel is `long_range`."""

    role = "base_station"

    def __init__(
        self, sim: Simulator, agent_id: int, position: Sequence[float], name: str | None = None
    ) -> None:
        p = np.zeros(3)
        p[: len(position)] = position
        p.flags.writeable = False
        self._position = p
        super().__init__(sim, agent_id, name)

    @property
    def position(self) -> np.ndarray:
        """(3,) m, world ENU, fixed."""
        return self._position
