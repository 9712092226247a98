"""One vehicle's UDP endpoint: a non-blocking socket, pymavlink's wire format, counters.

Reading is bounded: `receive(max_datagrams)` takes at most that many datagrams (the rest wait in
the kernel's socket buffer, which drops what overflows) and each datagram is framed here, packet
by packet (at most `MAX_PACKETS` per datagram), then decoded by pymavlink's `MAVLink.decode`
(CRC, CRC-extra, length and, with a key, the MAVLink 2 signature). Nothing a peer sends can
raise out of `receive`: every reject is counted in `LinkCounters`.

    link = Link(sysid=1, bind=("127.0.0.1", 14580), remote=("127.0.0.1", 14540))
    for msg in link.receive(64):
        ...
    link.send(link.mav.heartbeat_encode(...))
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass, fields

from pymavlink.dialects.v20 import common as mavlink2

MAX_PACKETS = 16  # packets framed per datagram at most; a MAVLink 2 packet is <= 280 bytes
MAX_DATAGRAM = 2048  # bytes read per datagram (a longer one is truncated, then counted)
V1, V2 = 0xFE, 0xFD
SIGNED = 0x01  # MAVLink 2 incompat flag: a 13-byte signature follows the checksum
# 10 ms units since 1 January 2015 (MAVLink 2 signing's timestamp epoch)
SIGNING_EPOCH_S = 1420070400


@dataclass
class LinkCounters:
    """What one link received, by fate (packets unless named)."""

    datagrams: int = 0  # datagrams read
    accepted: int = 0  # decoded, addressed to this vehicle (or broadcast)
    garbage: int = 0  # bytes that frame no packet (bad start byte, truncated, too long)
    bad_crc: int = 0  # framed packets whose checksum (or CRC-extra) is wrong
    unsigned: int = 0  # refused for a missing or bad signature (signing on)
    wrong_target: int = 0  # addressed to another system id
    unknown: int = 0  # valid packets of a message id this dialect does not know
    dropped_tx: int = 0  # sends the socket refused (buffer full, no route)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class Link:
    """A UDP endpoint of vehicle `sysid` (component 1, the autopilot)."""

    def __init__(
        self,
        sysid: int,
        bind: tuple[str, int],
        remote: tuple[str, int],
        signing_key: bytes | None = None,
    ) -> None:
        self.sysid = sysid
        self.remote = remote  # where telemetry goes; the last valid sender once one talks
        self.counters = LinkCounters()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.setblocking(False)
            self.sock.bind(bind)
        except OSError:
            self.sock.close()
            raise
        self.mav = mavlink2.MAVLink(self, srcSystem=sysid, srcComponent=1)
        if signing_key is not None:
            s = self.mav.signing
            s.secret_key = signing_key
            s.link_id = 0
            s.sign_outgoing = True
            s.timestamp = int((time.time() - SIGNING_EPOCH_S) * 1e5)
            s.allow_unsigned_callback = None  # unsigned or badly signed: MAVError, counted

    # -- sending --------------------------------------------------------------------------
    def write(self, buf: bytes) -> None:
        """pymavlink's `file.write`: one datagram per packet to `remote`, never blocking."""
        try:
            self.sock.sendto(buf, self.remote)
        except OSError:  # BlockingIOError (buffer full), ECONNREFUSED echoes, no route
            self.counters.dropped_tx += 1

    def send(self, msg: mavlink2.MAVLink_message) -> None:
        self.mav.send(msg)

    # -- receiving ------------------------------------------------------------------------
    def receive(self, max_datagrams: int) -> list[mavlink2.MAVLink_message]:
        """Valid messages for this vehicle from at most `max_datagrams` waiting datagrams."""
        out: list[mavlink2.MAVLink_message] = []
        c = self.counters
        for _ in range(max_datagrams):
            try:
                data, addr = self.sock.recvfrom(MAX_DATAGRAM)
            except BlockingIOError:
                break
            except OSError:  # e.g. ECONNREFUSED reported for an earlier send: nothing to read
                continue
            c.datagrams += 1
            before = c.accepted
            for msg in self._packets(data):
                target = _target_system(msg)
                if target not in (0, self.sysid):
                    c.wrong_target += 1
                    continue
                c.accepted += 1
                out.append(msg)
            if c.accepted > before:
                self.remote = addr  # answer the client that talks to us
        return out

    def _packets(self, data: bytes) -> list[mavlink2.MAVLink_message]:
        """Frame `data` packet by packet and decode each; count every reject."""
        c, out, i, n = self.counters, [], 0, len(data)
        for _ in range(MAX_PACKETS):
            if i >= n:
                break
            start = data.find(bytes((V2,)), i), data.find(bytes((V1,)), i)
            start = min((s for s in start if s >= 0), default=-1)
            if start != i:  # bytes that start no packet
                c.garbage += 1
                if start < 0:
                    break
                i = start
            size = _packet_size(data, i)
            if size is None or i + size > n:
                c.garbage += 1  # truncated header or payload
                break
            msg = self._decode(data[i : i + size])
            i += size
            if msg is not None:
                out.append(msg)
        return out

    def _decode(self, packet: bytes) -> mavlink2.MAVLink_message | None:
        c = self.counters
        try:
            msg = self.mav.decode(bytearray(packet))
        except mavlink2.MAVError as exc:
            text = str(exc)
            if "CRC" in text:
                c.bad_crc += 1
            elif "signature" in text:
                c.unsigned += 1
            else:
                c.garbage += 1
            return None
        except Exception:  # noqa: BLE001  anything else a hostile packet provokes
            c.garbage += 1
            return None
        if isinstance(msg, mavlink2.MAVLink_unknown):
            c.unknown += 1
            return None
        return msg

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _packet_size(data: bytes, i: int) -> int | None:
    """Length in bytes of the packet starting at data[i] (from its header), or None."""
    if data[i] == V2:
        if i + 3 > len(data):
            return None
        signed = 13 if data[i + 2] & SIGNED else 0
        return 10 + data[i + 1] + 2 + signed
    if i + 2 > len(data):
        return None
    return 6 + data[i + 1] + 2


def _target_system(msg: mavlink2.MAVLink_message) -> int:
    """The system a message is addressed to (0: broadcast or not addressed)."""
    return int(getattr(msg, "target_system", 0))
